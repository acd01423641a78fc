"""Running sums and products along a dim: cumsum, cumprod, and the product prod.

cumsum:  d/dx = the reversed running sum of g.
cumprod: d/dx_k = Σ_{i>=k} g_i·out_i / x_k when no x is 0; PyTorch's rule handles zeros
         (positions before the first zero as above, the first zero through the running
         product that skips it, positions after it get 0).
prod:    d/dx_k = g·Π_{j≠k} x_j, computed as out/x_k without zeros and as the product of
         the exclusive running products from both ends otherwise (no division by zero).

Two small private ops make those rules differentiable again: ``_flip`` (reverse
along a dim) and ``_shift`` (move one step along a dim, filling the gap).
"""

from __future__ import annotations

import numpy as np

from .. import _dtypes, _trace
from .._layout import c_order
from ..autograd.graph import make_result
from ..grad_mode import STATE
from ..tensor import _check_dim
from ._mathutil import const, unreduce
from ._registry import register
from .elementwise import where

__all__ = ["cumsum", "cumprod", "prod"]


def _flip(t, d):
    """``t`` reversed along dim ``d`` (a private op; its gradient is g reversed)."""
    if d >= 0:  # counted from the right, so that the backward works batched
        d -= t._data.ndim
    out = np.flip(t._data, d)
    return make_result(out, (t,), lambda g: (_flip(g, d),), "FlipBackward")


def _shift(t, d, fill, forward=True):
    """Move ``t`` one step along ``d``: forward ``out[k] = t[k-1]`` with ``out[0] = fill``,
    backward ``out[k] = t[k+1]`` with ``out[-1] = fill``. The adjoint of each is the other
    direction with fill 0."""
    data = t._data
    if d >= 0:  # counted from the right, so that the backward works batched
        d -= data.ndim
    n = data.shape[d]
    out = np.full_like(data, fill)
    src = [slice(None)] * data.ndim
    dst = [slice(None)] * data.ndim
    if n > 1:
        src[d] = slice(0, n - 1) if forward else slice(1, n)
        dst[d] = slice(1, n) if forward else slice(0, n - 1)
        out[tuple(dst)] = data[tuple(src)]

    def backward(g):
        return (_shift(g, d, 0, not forward),)

    return make_result(out, (t,), backward, "ShiftBackward")


def _reverse_cumsum(t, d):
    """Σ_{i>=k} t_i along ``d``."""
    return _flip(_flip(t, d).cumsum(d), d)


def _scan_setup(input, dim, dtype, op):
    data = input._data
    d = _check_dim(dim, data.ndim, op)
    if dtype is not None:
        data = data.astype(_dtypes.to_dtype(dtype), copy=False)
    elif data.dtype.kind in "biu":
        data = data.astype(_dtypes.int64)  # PyTorch accumulates integers in int64
    return data, d


@register("cumsum")
def cumsum(input, dim, *, dtype=None):
    """Running sum along ``dim``.  d/dx_k = Σ_{i>=k} g_i."""
    data, d = _scan_setup(input, dim, dtype, "cumsum")
    nd = data.ndim
    if data.dtype.kind == "V":  # bfloat16: float32 sums, rounded (Note [bfloat16 sums])
        out = np.cumsum(data, axis=d, dtype=np.float32).astype(data.dtype) if nd else data.copy()
    else:
        out = (
            c_order(np.cumsum(data, axis=d)) if nd else data.copy()
        )  # Note [Torch's result layouts]
    src = input._data.dtype
    dr = d - nd  # counted from the right: g may carry a batch prefix (Note [Batched gradients])

    def backward(g):
        gx = _reverse_cumsum(g, dr) if nd else g
        return (gx if gx._data.dtype == src else gx._cast(src),)

    return make_result(out, (input,), backward, "CumsumBackward")


@register("cumprod")
def cumprod(input, dim, *, dtype=None):
    """Running product along ``dim``; the gradient is exact when inputs contain zeros."""
    data, d = _scan_setup(input, dim, dtype, "cumprod")
    src = input._data.dtype
    if data.ndim == 0:
        return make_result(data.copy(), (input,), lambda g: (g._cast(src),), "CumprodBackward")
    out = c_order(np.cumprod(data, axis=d))  # Note [Torch's result layouts]
    dr = d - data.ndim  # counted from the right (Note [Batched gradients])

    def backward(g, out):
        gx = _cumprod_backward(
            g, input if input._data.dtype == g._data.dtype else input._cast(g.dtype), out, dr
        )
        return (gx if gx._data.dtype == src else gx._cast(src),)

    return make_result(out, (input,), backward, "CumprodBackward", saved=(input,), save_output=True)


def _cumprod_backward(g, x, out, d):
    """``d`` is negative, so that ``g`` may carry a batch prefix."""
    zero = x._data == 0
    # A recorded step takes the zero-safe rule, right for any values (no value branch).
    if not _trace.recording() and not zero.any():
        return _reverse_cumsum(g * out, d) / x
    if STATE.enabled:
        return _cumprod_backward_differentiable(g, x, d)
    # Before the first zero of a slice: the division rule holds (out_i = 0 after it).
    before = np.cumsum(zero, axis=d) == 0
    first_zero = zero & (np.cumsum(zero, axis=d) == 1)
    grad = where(before, _reverse_cumsum(g * out, d) / where(before, x, 1.0), 0.0)
    # At the first zero: Σ_{i>=z} g_i·Π_{j<=i, j≠z} x_j, the running product without x_z.
    skipped = where(first_zero, 1.0, x).cumprod(d)
    return grad + where(first_zero, _reverse_cumsum(g * skipped, d), 0.0)


def _cumprod_backward_differentiable(g, x, d):
    """d/dx_k = Σ_{i>=k} g_i·Π_{j<=i, j≠k} x_j, one running product per k: O(n²), but exact
    to every order with zeros (the O(n) rule above treats entries after a zero as constant).
    Used only when the backward itself is recorded (create_graph=True)."""
    n = x._data.shape[d]
    pos = np.arange(n).reshape((-1,) + (1,) * (-d - 1))
    total = None
    for k in range(n):
        skipped = where(pos == k, 1.0, x).cumprod(d)
        gk = (g * skipped * const(pos >= k)).sum(dim=d, keepdim=True) * const(pos == k)
        total = gk if total is None else total + gk
    return total


@register("prod")
def prod(input, dim=None, keepdim=False, *, dtype=None, axis=None, keepdims=None):
    """Product over ``dim`` (an int; all elements when None).

    d/dx_k = g·Π_{j≠k} x_j, exact when some x are zero (no division by zero).
    """
    if axis is not None:  # NumPy-style aliases, which PyTorch accepts too
        dim = axis
    if keepdims is not None:
        keepdim = keepdims
    data = input._data
    if dim is None:  # keepdim kept, as sum and np.prod(keepdims=True) do (torch: TypeError)
        dims = tuple(range(data.ndim))
    else:
        dims = (_check_dim(dim, data.ndim, "prod"),) if data.ndim else ()
    if dtype is not None:
        data = data.astype(_dtypes.to_dtype(dtype), copy=False)
    elif data.dtype.kind in "biu":
        data = data.astype(_dtypes.int64)
    out = np.asanyarray(np.prod(data, axis=dims, keepdims=keepdim))
    shape = input._data.shape
    src = input._data.dtype

    def backward(g, out):
        x = input if src == g._data.dtype else input._cast(g.dtype)
        gk = unreduce(g, shape, dims, keepdim)
        if not _trace.recording() and not (x._data == 0).any():  # as in _cumprod_backward
            gx = gk * unreduce(out, shape, dims, keepdim) / x
        else:
            gx = gk * _prod_of_others(x, dims)
        return (gx if gx._data.dtype == src else gx._cast(src),)

    return make_result(out, (input,), backward, "ProdBackward", saved=(input,), save_output=True)


def _prod_of_others(x, dims):
    """Π_{j≠k} x_j over the reduced dims, for every k, with no division."""
    shape = x._data.shape
    if len(dims) != 1:  # all dims (or a 0-d tensor): work on the flattened tensor
        return _prod_of_others(x.reshape(-1), (0,)).reshape(shape)
    d = dims[0]
    left = _shift(x.cumprod(d), d, 1)
    right = _flip(_shift(_flip(x, d).cumprod(d), d, 1), d)
    return left * right
