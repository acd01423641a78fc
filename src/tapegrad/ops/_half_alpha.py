"""``add(x, y, alpha=s)`` and ``sub`` of two float16/bfloat16 tensors, as torch computes them.

Note [Half tensors and alpha]
torch's CPU kernel for ``x + s*y`` on half tensors (pinned against torch 2.13 on random
float16 and bfloat16 inputs of 1 to 5000 elements, broadcast rows included,
tests/test_half_alpha.py) rounds ``s`` to the tensors' dtype, then

* in the vectorised blocks of 32 elements: computes ``x + s*y`` in float32 and rounds once;
* in the last ``n % 32`` elements (the scalar tail of the inner loop: of the whole tensor
  when both operands have its shape, of each row otherwise): rounds ``s*y`` to the dtype
  first, then adds in float32 and rounds again.

NumPy's ``x + y * s`` rounds the product to the dtype everywhere (the tail's rule), so about
a quarter of the elements of a large tensor were off by an ulp. Inputs above torch's grain
size (32768 elements) are split among threads, each chunk with its own tail; this follows
one thread's split.
"""

from __future__ import annotations

import numpy as np

from .. import _fpquiet
from ._half_number import is_half

__all__ = ["scaled_add"]

_F32 = np.dtype(np.float32)
_BLOCK = 32


def scaled_add(da, db, alpha):
    """``da + alpha * db`` for two arrays of one float16/bfloat16 dtype, as torch rounds it
    (Note [Half tensors and alpha]); None when that does not apply (other dtypes, shapes
    that do not broadcast: the caller's path reports them)."""
    dt = da.dtype
    if db.dtype != dt or not is_half(dt) or da.__class__ is not np.ndarray:
        return None
    # db is a Tensor's array (an ndarray) and alpha a Python int or float: both callers
    # check alpha with arithmetic._alpha first
    try:
        shape = np.broadcast_shapes(da.shape, db.shape)
    except ValueError:
        return None
    token = _fpquiet.enter()  # overflow to inf is silent, as in torch
    try:
        s = np.float32(np.array(alpha, dtype=_F32).astype(dt))
        a32, b32 = da.astype(_F32), db.astype(_F32)
        out = (a32 + s * b32).astype(dt)
        if da.shape == db.shape:  # one inner loop over the whole tensor
            n = out.size
            tail = n % _BLOCK
            if tail and out.ndim:
                flat = out.reshape(-1)
                t0 = n - tail
                at, bt = a32.reshape(-1)[t0:], b32.reshape(-1)[t0:]
                flat[t0:] = (at + (s * bt).astype(dt).astype(_F32)).astype(dt)
            elif tail:  # 0-d
                out = (a32 + (s * b32).astype(dt).astype(_F32)).astype(dt)
            return out
        m = shape[-1] if shape else 1
        tail = m % _BLOCK
        if tail:
            at = np.broadcast_to(a32, shape)[..., m - tail :]
            bt = np.broadcast_to(b32, shape)[..., m - tail :]
            out[..., m - tail :] = (at + (s * bt).astype(dt).astype(_F32)).astype(dt)
        return out
    finally:
        _fpquiet.leave(token)
