"""The signature of a call: what must match for a recorded program to be replayed.

A call's key holds, for each argument (walked through tuples, lists and dicts):
a tensor's shape, strides, dtype, device, requires_grad and whether its ``.grad``
is set; an array's shape, strides
and dtype (strides: a recorded view of a contiguous argument would be a copy of a
transposed one, so a layout change must record again);
any other value itself with its type (1, 1.0 and True are equal in Python but give
different programs) and, for a float, its sign (-0.0 == 0.0, yet x * -0.0 is -0);
it must be hashable: objects hash by identity, so another model object gives
another key. Grad mode and inference mode are part of the
key. Tensors and arrays are returned in order as the call's *leaves*, whose
arrays the replay binds.
"""

from __future__ import annotations

import math

import numpy as np

from ..grad_mode import STATE
from ..tensor import Tensor

__all__ = ["key_of", "substitute"]


def key_of(args, kwargs):
    """``(key, leaves)`` of a call; raises TypeError for an unhashable plain argument."""
    leaves = []
    parts = (
        _part(args, leaves),
        _part(kwargs, leaves) if kwargs else None,
        STATE.enabled,
        STATE.inference,
    )
    return parts, leaves


def _part(x, leaves):
    t = type(x)
    if t is Tensor or isinstance(x, Tensor):
        leaves.append(x)
        d = x._data
        # requires_grad, and for those that do, whether .grad is set: a replay binds a
        # fresh .grad to an argument that had none (Note [Gradients of arguments]).
        return ("T", d.shape, d.strides, d.dtype.str, type(d), x._rg and 1 + (x._grad is not None))
    if isinstance(x, np.ndarray):
        leaves.append(x)
        return ("A", x.shape, x.strides, x.dtype.str)
    if t is tuple or t is list:
        return (t, tuple(_part(v, leaves) for v in x))
    if t is dict:
        return (dict, tuple((k, _part(v, leaves)) for k, v in x.items()))
    try:
        hash(x)
    except TypeError:
        raise TypeError(
            f"tapegrad.jit.cache: argument of type {type(x).__name__} is not hashable; "
            "non-tensor arguments are part of the cache key"
        ) from None
    if t is float:
        return (t, x, math.copysign(1.0, x))
    return (t, x)


def substitute(x, arrays: dict):
    """``x`` with the plain arrays whose ids are in ``arrays`` replaced by their values."""
    t = type(x)
    if isinstance(x, np.ndarray) and not isinstance(x, Tensor):
        return arrays.get(id(x), x)
    if t is tuple or t is list:
        return t(substitute(v, arrays) for v in x)
    if t is dict:
        return {k: substitute(v, arrays) for k, v in x.items()}
    return x
