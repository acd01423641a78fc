"""Reductions: sum and mean over ``dim`` with ``keepdim``.

sum: d/dx = g broadcast back over the reduced axes.  mean: the same divided by n.
"""

from __future__ import annotations

import numpy as np

from .. import _dtypes, _fpquiet
from .._layout import c_order  # Note [Torch's result layouts]: reductions are C-ordered
from .._trace import opaque
from ..autograd.graph import arrays_of, batched_shape, fresh_array, fresh_grad, make_result
from ..grad_mode import STATE
from ..tensor import Tensor
from . import _spatial_mean
from ._registry import register
from ._util import normalize_dims

__all__ = ["sum", "mean"]


def _kept_shape(shape, dims):
    return tuple(1 if i in dims else n for i, n in enumerate(shape))


def _expand_back(g, in_shape, dims, keepdim):
    """Broadcast a reduced gradient back to ``in_shape`` (Note [Batched gradients])."""
    if not keepdim and dims:
        g = g.reshape(batched_shape(_kept_shape(in_shape, dims)))
    return g.expand(batched_shape(in_shape))


@register("sum")
def sum(input, dim=None, keepdim=False, *, dtype=None, axis=None, keepdims=None):
    """Sum over ``dim`` (all dimensions when None).

    Integer and bool inputs are summed as int64, as PyTorch does.
    """
    if axis is not None:  # NumPy-style aliases, which PyTorch accepts too
        dim = axis
    if keepdims is not None:
        keepdim = keepdims
    data = input._data
    dims = normalize_dims(dim, data.ndim, "sum")
    wide = False  # a bfloat16 input summed in float32 (Note [bfloat16 sums])
    if dtype is not None:
        dtype = _dtypes.to_dtype(dtype)
    elif (kind := data.dtype.kind) in "biu":
        dtype = _dtypes.int64
    elif kind == "V" or data.dtype.itemsize == 1:
        _float8_check("sum", data.dtype)  # Note [float8 as torch] in _float8.py
        dtype, wide = np.dtype(np.float32), True
    token = _fpquiet.enter()  # inf + -inf = NaN silently (Note [No floating-point warnings])
    try:
        out = np.sum(data, axis=dims, keepdims=keepdim, dtype=dtype)
    finally:
        _fpquiet.leave(token)
    if data.ndim - len(dims) > 1:  # a result of 1 or 0 dims is C-ordered already
        out = c_order(out)  # Note [Torch's result layouts]
    if wide:
        # Note [bfloat16 sums]
        # ml_dtypes adds bfloat16 in bfloat16 (8 bits of mantissa): a sum of 1000 values
        # near 1.5 stops at 1024. torch accumulates in float32 and rounds once.
        out = np.asarray(out).astype(data.dtype)
    in_shape = data.shape
    in_dtype = data.dtype

    def backward(g):
        g = _expand_back(g, in_shape, dims, keepdim)
        # sum(dtype=float64) of a float32 input: the gradient goes back as float32.
        return (g if g._data.dtype == in_dtype else g._cast(in_dtype),)

    def array_backward(g):  # Note [Array backward] in autograd/engine.py
        if g.dtype != in_dtype:
            return arrays_of(backward(Tensor._wrap(g)))
        if not keepdim and dims:
            g = g.reshape(_kept_shape(in_shape, dims))
        return (g if g.shape == in_shape else np.broadcast_to(g, in_shape),)

    return make_result(out, (input,), backward, "SumBackward", array_backward=array_backward)


_FLOAT_MEAN = frozenset((np.dtype(np.float32), np.dtype(np.float64)))


def _float_mean(data, dims, keepdim, count):
    """``np.mean`` of a float32/float64 array without its Python layers: NumPy's own steps
    (numpy/_core/_methods.py ``_mean``): the sum, then a division by the intp count
    (computed in float64 and cast back), in place for an array, as a scalar of the
    dtype for a full reduction. Bit-identical to np.mean."""
    ret = np.add.reduce(data, axis=dims, keepdims=keepdim)
    count = np.intp(count)
    if isinstance(ret, np.ndarray):
        return np.true_divide(ret, count, out=ret, casting="unsafe", subok=False)
    return ret.dtype.type(ret / count)


def _float8_check(op, dt):
    if dt.kind in "fV" and dt.itemsize == 1:
        from .._float8 import not_implemented  # noqa: PLC0415

        not_implemented(op, dt)


@register("mean")
def mean(input, dim=None, keepdim=False, *, dtype=None, axis=None, keepdims=None):
    """Mean over ``dim`` (all dimensions when None); NaN for an empty reduction."""
    if axis is not None:  # NumPy-style aliases, which PyTorch accepts too
        dim = axis
    if keepdims is not None:
        keepdim = keepdims
    data = input._data
    if data.dtype.kind not in "fc" and dtype is None and not _dtypes.is_floating(data.dtype):
        raise RuntimeError(
            f"mean: expected a floating point input, got dtype {data.dtype}; "
            "pass dtype= or convert with .float()"
        )
    if data.dtype.itemsize == 1:
        _float8_check("mean", data.dtype)  # torch: "sum_cpu" not implemented for float8
    dims = normalize_dims(dim, data.ndim, "mean")
    in_shape = data.shape
    count = 1
    for d in dims:
        count *= in_shape[d]
    spatial = dtype is None and _spatial_mean.applies(data, dims)
    if spatial:  # Note [Spatial mean of channels-last]
        out = opaque(_spatial_mean.spatial_mean_kernel, data, keepdim)
    elif count:
        with np.errstate(invalid="ignore"):
            if dtype is None and type(data) is np.ndarray and data.dtype in _FLOAT_MEAN:
                out = _float_mean(data, dims, keepdim, count)
            else:
                acc = _dtypes.to_dtype(dtype) if dtype is not None else None
                if acc is None and data.dtype.kind == "V":  # Note [bfloat16 sums] in sum
                    acc = np.dtype(np.float32)
                out = np.mean(data, axis=dims, keepdims=keepdim, dtype=acc)
    else:  # NaN, as PyTorch, without NumPy's "Mean of empty slice" warning
        out = np.full(np.sum(data, axis=dims, keepdims=keepdim).shape, np.nan)
    out = np.asanyarray(out).astype(dtype or data.dtype, copy=False)
    if data.ndim - len(dims) > 1:  # Note [Torch's result layouts]
        out = c_order(out)

    in_dtype = data.dtype
    out_shape = out.shape

    def first_order(gd):
        """The gradient array, new (Note [Fresh gradients]), where the first-order paths
        apply (Note [First-order fast paths] in arithmetic.py); else None."""
        if gd.shape != out_shape or gd.dtype != in_dtype:
            return None
        if spatial:  # first order: straight into the channels-last layout
            return opaque(_spatial_mean.spatial_grad_kernel, gd, in_shape)
        if in_dtype.kind == "f" and in_dtype.itemsize >= 4:
            # the ops below on the arrays (a Python float divisor is weak: cast to g's
            # dtype, as div casts it)
            if not keepdim and dims:
                gd = gd.reshape(_kept_shape(in_shape, dims))
            return np.broadcast_to(gd, in_shape) / float(max(count, 1))
        return None

    def array_backward(gd):  # Note [Array backward] in autograd/engine.py
        fast = first_order(gd)
        if fast is None:
            return arrays_of(backward(Tensor._wrap(gd)))
        return (fresh_array(fast),)

    def backward(g):
        if not STATE.enabled:
            fast = first_order(g._data)
            if fast is not None:
                return (fresh_grad(fast),)
        g = _expand_back(g, in_shape, dims, keepdim)
        if g._data.dtype.itemsize < 4:  # float16: 1/n is representable where n (> 65504) is not
            g = g * (1.0 / max(count, 1))
        else:
            g = g / float(max(count, 1))
        return (g if g._data.dtype == in_dtype else g._cast(in_dtype),)

    return make_result(out, (input,), backward, "MeanBackward", array_backward=array_backward)
