"""Spread and soft maximum of a tensor: var, std, logsumexp.

var:  d/dx = g · 2(x − mean)/(N − correction)
std:  d/dx = g/(2·std) · d var/dx, and 0 where std = 0 (PyTorch's choice)
logsumexp:  d/dx = g · e^(x − out), i.e. g times the softmax of x
"""

from __future__ import annotations

import numpy as np

from .. import _dtypes, _trace
from ..autograd.graph import make_result
from ._mathutil import const, kept_shape, unreduce
from ._registry import register
from ._util import float_data, normalize_dims
from .elementwise import where

__all__ = ["var", "std", "logsumexp"]


def _correction(op, unbiased, correction):
    if unbiased is not None and correction is not None:
        raise ValueError(f"{op}: pass either unbiased= or correction=, not both")
    if correction is not None:
        return correction
    return 1 if unbiased is None or unbiased else 0


def _moments(input, dim, unbiased, keepdim, correction, op):
    """Shared forward of var/std: (variance array, dims, N − correction)."""
    if isinstance(dim, bool):  # var(x, False): the second positional argument is unbiased
        unbiased, dim = dim, None
    data = input._data
    if data.dtype.kind == "V":  # bfloat16: in float32, rounded once (Note [bfloat16 opmath])
        data = _dtypes.opmath(data)
    elif data.dtype.kind != "f":
        raise RuntimeError(
            f"{op}: expected a floating point input, got dtype {data.dtype}; convert with .float()"
        )
    dims = normalize_dims(dim, data.ndim, op)
    count = 1
    for d in dims:
        count *= data.shape[d]
    denom = count - _correction(op, unbiased, correction)
    with np.errstate(invalid="ignore", divide="ignore"):
        # (np.mean of an empty slice warns; every slice is empty then, so any mean will do)
        mean = np.mean(data, axis=dims, keepdims=True) if count else 0.0
        diff = np.asanyarray(data - mean)  # an array even for 0-d input, for the out= below
        np.multiply(diff, diff, out=diff)
        out = np.sum(diff, axis=dims, keepdims=keepdim)
        out = np.true_divide(out, max(denom, 0), out=np.asanyarray(out))
        out = out.astype(data.dtype, copy=False)
    return np.asanyarray(out), dims, denom


def _var_input_grad(gv, input, dims, denom, keepdim):
    """d var/dx applied to ``gv`` (the gradient arriving at the variance)."""
    centered = input - input.mean(dim=dims, keepdim=True)
    scale = 2.0 / denom if denom > 0 else float("nan")
    return unreduce(gv, input._data.shape, dims, keepdim) * centered * scale


@register("var")
def var(
    input, dim=None, unbiased=None, keepdim=False, *, correction=None, axis=None, keepdims=None
):
    """Variance over ``dim`` (all dims when None) with Bessel's ``correction`` (default 1).

    ``unbiased=False`` is ``correction=0``. NaN when N − correction <= 0, as PyTorch.
    """
    if axis is not None:  # NumPy-style aliases, which PyTorch accepts too
        dim = axis
    if keepdims is not None:
        keepdim = keepdims
    out, dims, denom = _moments(input, dim, unbiased, keepdim, correction, "var")

    def backward(g):
        return (_var_input_grad(g, input, dims, denom, keepdim),)

    return make_result(out, (input,), backward, "VarBackward", saved=(input,))


@register("std")
def std(
    input, dim=None, unbiased=None, keepdim=False, *, correction=None, axis=None, keepdims=None
):
    """Standard deviation: the square root of :func:`var` (same arguments).

    d/dx = g/(2·std) · d var/dx; the gradient is 0 where std = 0 (a constant slice).
    """
    if axis is not None:  # NumPy-style aliases, which PyTorch accepts too
        dim = axis
    if keepdims is not None:
        keepdim = keepdims
    out, dims, denom = _moments(input, dim, unbiased, keepdim, correction, "std")
    out = np.sqrt(out, out=out)

    def backward(g, out):
        zero = out._data == 0
        gv = g / (where(zero, 1.0, out) * 2.0)
        if _trace.recording() or zero.any():  # (a replay cannot branch on values)
            gv = gv * const(~zero)
        return (_var_input_grad(gv, input, dims, denom, keepdim),)

    return make_result(out, (input,), backward, "StdBackward", saved=(input,), save_output=True)


@register("logsumexp")
def logsumexp(input, dim=None, keepdim=False, *, axis=None, keepdims=None):
    """log Σ e^x over ``dim`` (an int or tuple), computed stably by factoring out the maximum.

    An empty reduction gives −inf. Integer inputs compute in the default float dtype.
    """
    if axis is not None:  # NumPy-style aliases, which PyTorch accepts too
        dim = axis
    if keepdims is not None:
        keepdim = keepdims
    x = float_data(input)
    dims = normalize_dims(dim, x.ndim, "logsumexp")
    if x.size == 0:
        m = np.zeros(kept_shape(x.shape, dims), x.dtype)
    else:
        m = np.max(x, axis=dims, keepdims=True)
        m = np.where(np.isfinite(m), m, 0)  # m's dtype: a Python 0 is weak (NEP 50)
    with np.errstate(divide="ignore"):
        out = np.log(np.asanyarray(np.sum(np.exp(x - m), axis=dims, keepdims=True)))
    out += m
    if not keepdim:
        out = out.reshape(tuple(n for i, n in enumerate(x.shape) if i not in dims))
    shape = x.shape

    def backward(g, out):
        return (
            unreduce(g, shape, dims, keepdim) * (input - unreduce(out, shape, dims, keepdim)).exp(),
        )

    return make_result(
        out, (input,), backward, "LogsumexpBackward", saved=(input,), save_output=True
    )
