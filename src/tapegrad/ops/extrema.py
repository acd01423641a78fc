"""Extreme values: max, min (with indices along a dim), amax, amin, argmax, argmin.

Gradients follow PyTorch: ``max(dim=d)`` sends ``g`` to the chosen index only;
``amax``/``amin`` and the full reductions ``max()``/``min()`` share ``g`` evenly
among tied extremes.
"""

from __future__ import annotations

from collections import namedtuple

import numpy as np

from .. import _trace
from .._layout import c_order
from ..autograd.graph import keeps_arrays, make_result
from ..tensor import Tensor, _check_dim
from ._mathutil import const, unreduce
from ._registry import register
from ._util import normalize_dims
from .clamp import maximum, minimum

__all__ = ["max", "min", "amax", "amin", "argmax", "argmin"]

# PyTorch returns ``torch.return_types.max(values=..., indices=...)``; so do we.
MaxResult = namedtuple("max", ["values", "indices"])
MinResult = namedtuple("min", ["values", "indices"])


def _tied_extreme(input, dims, keepdim, fn, op, node):
    """The extreme over ``dims``; backward shares ``g`` evenly among the tied extremes."""
    data = input._data
    for d in dims:
        if data.shape[d] == 0:
            raise IndexError(f"{op}(): Expected reduction dim {d} to have non-zero size.")
    out = c_order(np.asanyarray(fn(data, axis=dims, keepdims=keepdim)))  # torch's layout
    shape = data.shape

    def backward(g, out):
        # NaN is the extreme of a slice that contains one; it takes the gradient.
        x = input._data
        kept = unreduce(out, shape, dims, keepdim)._data
        mask = x == kept
        # (Recorded steps always add the NaN term: a replay cannot branch on values.)
        if _trace.recording() or np.isnan(kept).any():
            mask |= np.isnan(x) & np.isnan(kept)
        count = np.sum(mask, axis=dims, keepdims=True)
        weights = (mask / count).astype(g._data.dtype, copy=False)
        return (unreduce(g, shape, dims, keepdim) * const(weights),)

    return make_result(out, (input,), backward, node, saved=(input,), save_output=True)


def _reduce_all(input, fn, op, node):
    if input._data.size == 0:
        raise RuntimeError(
            f"{op}(): Expected reduction dim to be specified for input.numel() == 0. "
            "Specify the reduction dim with the 'dim' argument."
        )
    return _tied_extreme(input, tuple(range(input._data.ndim)), False, fn, op, node)


def _select_along(input, dim, keepdim, argfn, op, node, result):
    """Values and indices of the extreme along one dim; the gradient goes to that index."""
    data = input._data
    nd = data.ndim
    d = _check_dim(dim, nd, op)
    if nd == 0:
        idx = np.zeros((), np.int64)
        values = make_result(data.copy(), (input,), lambda g: (g,), node)
        return result(values, Tensor._wrap(idx))
    if data.shape[d] == 0:
        raise IndexError(f"{op}(): Expected reduction dim {d} to have non-zero size.")
    idx = argfn(data, axis=d, keepdims=True)
    values = np.take_along_axis(data, idx, axis=d)
    if not keepdim:
        values = values.squeeze(d)
        idx = idx.squeeze(d)
    shape = data.shape
    positions = np.arange(shape[d]).reshape((-1,) + (1,) * (nd - d - 1))

    def backward(g):
        chosen = idx if keepdim else np.expand_dims(idx, d)
        onehot = (positions == chosen).astype(g._data.dtype, copy=False)
        return (unreduce(g, shape, (d,), keepdim) * const(onehot),)

    values = keeps_arrays(make_result(values, (input,), backward, node))
    return result(values, Tensor._wrap(idx.astype(np.int64)))


@register("max")
def max(input, dim=None, keepdim=False, *, axis=None, keepdims=None):
    """The maximum; with ``dim``, a named tuple ``(values, indices)`` along that dim.

    ``max(a, b)`` with a tensor second argument is :func:`maximum`.
    Gradient: shared evenly among ties for the full reduction; to the returned
    index with ``dim``.
    """
    if axis is not None:  # NumPy-style aliases, which PyTorch accepts too
        dim = axis
    if keepdims is not None:
        keepdim = keepdims
    if isinstance(dim, Tensor):
        return maximum(input, dim)
    if dim is None:
        return _reduce_all(input, np.max, "max", "MaxBackward")
    return _select_along(input, dim, keepdim, np.argmax, "max", "MaxBackward", MaxResult)


@register("min")
def min(input, dim=None, keepdim=False, *, axis=None, keepdims=None):
    """The minimum; with ``dim``, a named tuple ``(values, indices)``. See :func:`max`."""
    if axis is not None:  # NumPy-style aliases, which PyTorch accepts too
        dim = axis
    if keepdims is not None:
        keepdim = keepdims
    if isinstance(dim, Tensor):
        return minimum(input, dim)
    if dim is None:
        return _reduce_all(input, np.min, "min", "MinBackward")
    return _select_along(input, dim, keepdim, np.argmin, "min", "MinBackward", MinResult)


def _nonempty(input, dim, op):
    """amax/amin refuse an empty reduction dim naming it as given (``-1``, not 1) and the
    first one in the order given, as torch."""
    shape = input._data.shape
    for d in (dim,) if isinstance(dim, (int, np.integer)) else (dim or ()):
        if shape and shape[int(d) % len(shape)] == 0:
            raise IndexError(f"{op}(): Expected reduction dim {d} to have non-zero size.")


def _all_if_empty(dim):
    """amax/amin reduce every dim when ``dim`` is an empty tuple or list (PyTorch's default)."""
    return None if isinstance(dim, (tuple, list)) and len(dim) == 0 else dim


@register("amax")
def amax(input, dim=(), keepdim=False, *, axis=None, keepdims=None):
    """The maximum over ``dim`` (an int or tuple; all dims when empty or None).

    d/dx = g / k at each of the k tied maxima of a slice, 0 elsewhere.
    """
    if axis is not None:  # NumPy-style aliases, which PyTorch accepts too
        dim = axis
    if keepdims is not None:
        keepdim = keepdims
    dims = normalize_dims(_all_if_empty(dim), input._data.ndim, "amax")
    _nonempty(input, dim, "amax")
    return _tied_extreme(input, dims, keepdim, np.max, "amax", "AmaxBackward")


@register("amin")
def amin(input, dim=(), keepdim=False, *, axis=None, keepdims=None):
    """The minimum over ``dim``; ties share the gradient evenly. See :func:`amax`."""
    if axis is not None:  # NumPy-style aliases, which PyTorch accepts too
        dim = axis
    if keepdims is not None:
        keepdim = keepdims
    dims = normalize_dims(_all_if_empty(dim), input._data.ndim, "amin")
    _nonempty(input, dim, "amin")
    return _tied_extreme(input, dims, keepdim, np.min, "amin", "AminBackward")


def _arg_extreme(input, dim, keepdim, fn, op):
    data = input._data
    if dim is None:
        if data.size == 0:
            raise IndexError(
                f"{op}(): Expected reduction dim to be specified for input.numel() == 0."
            )
        idx = np.asanyarray(fn(data), dtype=np.int64)
        return Tensor._wrap(idx.reshape((1,) * data.ndim) if keepdim else idx)
    d = _check_dim(dim, data.ndim, op)
    if data.ndim == 0:
        return Tensor._wrap(np.zeros((), np.int64))
    if data.shape[d] == 0:
        raise IndexError(f"{op}(): Expected reduction dim {d} to have non-zero size.")
    return Tensor._wrap(np.asanyarray(fn(data, axis=d, keepdims=keepdim), dtype=np.int64))


@register("argmax", differentiable=False)
def argmax(input, dim=None, keepdim=False, *, axis=None, keepdims=None):
    """Index of the (first) maximum, over the flattened tensor when ``dim`` is None."""
    if axis is not None:  # NumPy-style aliases, which PyTorch accepts too
        dim = axis
    if keepdims is not None:
        keepdim = keepdims
    return _arg_extreme(input, dim, keepdim, np.argmax, "argmax")


@register("argmin", differentiable=False)
def argmin(input, dim=None, keepdim=False, *, axis=None, keepdims=None):
    """Index of the (first) minimum, over the flattened tensor when ``dim`` is None."""
    if axis is not None:  # NumPy-style aliases, which PyTorch accepts too
        dim = axis
    if keepdims is not None:
        keepdim = keepdims
    return _arg_extreme(input, dim, keepdim, np.argmin, "argmin")
