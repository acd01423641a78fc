"""More reductions: all, any, count_nonzero (no gradient), and nansum, nanmean, aminmax,
std_mean, var_mean, logcumsumexp, composed of differentiable ops.

nansum:  d/dx = g where x is not NaN, 0 at NaN.   nanmean: the same / the count of non-NaN.
logcumsumexp: m + log cumsum e^(x − m), m the (constant) maximum along the dim.
"""

from __future__ import annotations

from collections import namedtuple

import numpy as np

from .. import _dtypes
from ..tensor import Tensor, _check_dim
from ._registry import register
from ._util import normalize_dims
from .elementwise import where
from .extrema import amax, amin
from .reduction import mean, sum
from .statistics import std, var

__all__ = [
    "all",
    "any",
    "count_nonzero",
    "nansum",
    "nanmean",
    "aminmax",
    "std_mean",
    "var_mean",
    "logcumsumexp",
]

AminmaxResult = namedtuple("aminmax", ["min", "max"])


def _aliases(dim, keepdim, axis, keepdims):
    return (dim if axis is None else axis), (keepdim if keepdims is None else keepdims)


def _logical_reduce(input, dim, keepdim, fn, op):
    data = input._data
    dims = normalize_dims(dim, data.ndim, op)
    out = np.asanyarray(fn(data, axis=dims, keepdims=keepdim))
    # PyTorch keeps uint8 for uint8 inputs and gives bool otherwise.
    return Tensor._wrap(out.astype(np.uint8) if data.dtype == np.uint8 else out)


@register("all", differentiable=False)
def all(input, dim=None, keepdim=False, *, axis=None, keepdims=None):
    """True where every element over ``dim`` (all dims when None) is nonzero."""
    dim, keepdim = _aliases(dim, keepdim, axis, keepdims)
    return _logical_reduce(input, dim, keepdim, np.all, "all")


@register("any", differentiable=False)
def any(input, dim=None, keepdim=False, *, axis=None, keepdims=None):
    """True where some element over ``dim`` (all dims when None) is nonzero."""
    dim, keepdim = _aliases(dim, keepdim, axis, keepdims)
    return _logical_reduce(input, dim, keepdim, np.any, "any")


@register("count_nonzero", differentiable=False)
def count_nonzero(input, dim=None):
    """The number of nonzero elements over ``dim`` (all dims when None), as int64."""
    dims = normalize_dims(dim, input._data.ndim, "count_nonzero")
    out = np.count_nonzero(input._data, axis=dims)
    return Tensor._wrap(np.asarray(out, dtype=np.int64))


def _not_nan(input):
    return Tensor._wrap(~np.isnan(input._data))


@register("nansum")
def nansum(input, dim=None, keepdim=False, *, dtype=None, axis=None, keepdims=None):
    """Sum over ``dim`` treating NaN as zero."""
    dim, keepdim = _aliases(dim, keepdim, axis, keepdims)
    if input._data.dtype.kind not in "fV":  # V: bfloat16
        return sum(input, dim, keepdim, dtype=dtype)
    return sum(where(_not_nan(input), input, 0.0), dim, keepdim, dtype=dtype)


@register("nanmean")
def nanmean(input, dim=None, keepdim=False, *, dtype=None, axis=None, keepdims=None):
    """Mean over ``dim`` of the non-NaN elements (NaN where there are none)."""
    dim, keepdim = _aliases(dim, keepdim, axis, keepdims)
    if input._data.dtype.kind not in "fV":  # V: bfloat16
        raise RuntimeError(
            f"nanmean(): expected input to have floating point dtype but got {input._data.dtype}"
        )
    valid = ~np.isnan(input._data)
    dims = normalize_dims(dim, input._data.ndim, "nanmean")
    count = np.sum(valid, axis=dims, keepdims=keepdim).astype(input._data.dtype)
    total = nansum(input, dim, keepdim, dtype=dtype)
    with np.errstate(invalid="ignore", divide="ignore"):
        return total / Tensor._wrap(count.astype(total._data.dtype))


@register("aminmax")
def aminmax(input, *, dim=None, keepdim=False):
    """``(min, max)`` over ``dim`` (all elements when None), as a named tuple."""
    if input._data.size == 0 and dim is None:
        raise RuntimeError(
            "aminmax(): cannot compute aminmax over an empty dimension as the operation has "
            "no identity."
        )
    d = () if dim is None else dim
    if dim is not None and input._data.ndim:
        nd = _check_dim(dim, input._data.ndim, "aminmax")
        if input._data.shape[nd] == 0:  # torch names it normalized (1, not -1)
            raise IndexError(f"aminmax: Expected reduction dim {nd} to have non-zero size.")
    return AminmaxResult(amin(input, d, keepdim), amax(input, d, keepdim))


def _moment_mean(fn, input, dim, unbiased, keepdim, correction):
    if isinstance(dim, bool):  # var_mean(x, False): the old ``unbiased`` positional
        dim, unbiased = None, dim
    return (
        fn(input, dim, unbiased, keepdim, correction=correction),
        mean(input, dim, keepdim),
    )


@register("std_mean")
def std_mean(input, dim=None, unbiased=None, keepdim=False, *, correction=None):
    """``(std, mean)`` over ``dim``; arguments as :func:`std`."""
    return _moment_mean(std, input, dim, unbiased, keepdim, correction)


@register("var_mean")
def var_mean(input, dim=None, unbiased=None, keepdim=False, *, correction=None):
    """``(var, mean)`` over ``dim``; arguments as :func:`var`."""
    return _moment_mean(var, input, dim, unbiased, keepdim, correction)


@register("logcumsumexp")
def logcumsumexp(input, dim):
    """log Σ_{i<=k} e^(x_i) along ``dim``, stable for large values."""
    data = input._data
    if data.dtype.kind == "V":  # bfloat16: composed in float32, rounded once at the end
        return logcumsumexp(input._cast(_dtypes.float32), dim)._cast(data.dtype)
    if data.dtype.kind != "f":
        input = input._cast(_dtypes.get_default_dtype())
        data = input._data
    if data.ndim == 0:
        return input * 1.0
    d = _check_dim(dim, data.ndim, "logcumsumexp")
    if data.shape[d] == 0:
        return input * 1.0
    m = np.max(data, axis=d, keepdims=True)
    m = np.where(np.isfinite(m), m, 0)  # m's dtype: a Python 0 is weak (NEP 50)
    shift = Tensor._wrap(m)
    with np.errstate(divide="ignore"):
        return ((input - shift).exp().cumsum(d)).log() + shift
