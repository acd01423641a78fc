"""``tapegrad.masked``: the reductions and normalizations of ``torch.masked``.

Each op takes a boolean ``mask=`` broadcast to the input (a mask of more dimensions than the
input is an IndexError); masked-out elements are replaced by the reduction's identity (0 for
sum, 1 for prod, −inf for amax/logsumexp/softmax, +inf for amin/softmin, NaN for median) and
the plain op runs on the result, exactly as ``torch/masked/_ops.py`` does for strided tensors.
So the gradient of a masked-out element is 0 (the replacement is a ``where``), an all-masked
slice gives the identity (sum 0, amax −inf, softmax NaN), and mean/var/std of an all-masked
slice are NaN. ``mask=None`` means every element is in.

Every op is composed of differentiable tapegrad ops, so double backward works; each is
registered (``masked.<name>``, not bound as a method) so the op table lists it.

>>> import tapegrad as tg
>>> x = tg.tensor([[1.0, 2.0, 3.0], [4.0, 5.0, 6.0]])
>>> m = tg.tensor([[True, False, True], [False, False, False]])
>>> tg.masked.sum(x, 1, mask=m), tg.masked.amax(x, 1, mask=m)
(tensor([4., 0.]), tensor([3., -inf]))
"""

from __future__ import annotations

import functools

import numpy as np

from . import _dtypes
from .ops import clamp, elementwise, extrema, reduction, scan, sorting, statistics
from .ops import softmax as softmax_ops
from .ops._registry import OPS, register
from .ops.norm import vector_norm
from .tensor import Tensor

__all__ = [
    "sum",
    "prod",
    "cumsum",
    "cumprod",
    "amax",
    "amin",
    "argmax",
    "argmin",
    "mean",
    "median",
    "logsumexp",
    "logaddexp",
    "norm",
    "var",
    "std",
    "softmax",
    "log_softmax",
    "softmin",
    "normalize",
]

_IDENTITY_TEXT = {"zero": "0", "one": "1", "max": "−inf", "min": "+inf", "nan": "NaN"}
_SMALL_INTS = {np.dtype(t) for t in ("bool", "uint8", "int8", "int16", "int32")}


def _identity(kind, dtype, op):
    """The reduction identity of ``kind`` as a 0-d array of ``dtype`` (torch's
    ``_reduction_identity``): what a masked-out element is replaced by."""
    if kind in ("zero", "one"):
        return np.array(0 if kind == "zero" else 1, dtype)
    if kind == "nan":
        return np.array(np.nan, dtype)
    if dtype.kind in "fV":  # V: bfloat16
        return np.array(-np.inf if kind == "max" else np.inf, dtype)
    if dtype.kind in "iu":
        info = np.iinfo(dtype)
        return np.array(info.min if kind == "max" else info.max, dtype)
    raise NotImplementedError(f"masked.{op}: identity of {op} on {dtype} input")


def _input_mask(input, mask, op):
    """``mask`` broadcast to ``input``'s shape, as a bool array (torch's ``_input_mask``)."""
    m = mask._data if isinstance(mask, Tensor) else np.asarray(mask)
    if m.shape != input._data.shape:
        if m.ndim > input._data.ndim:
            raise IndexError(
                f"masked.{op}: expected a mask broadcastable to the input (got mask "
                f"dimensionality {m.ndim} higher than the input's {input._data.ndim})"
            )
        try:
            m = np.broadcast_to(m, input._data.shape)
        except ValueError:
            raise RuntimeError(
                f"masked.{op}: the mask of shape {list(m.shape)} cannot be broadcast to the "
                f"input's shape {list(input._data.shape)}"
            ) from None
    return m.astype(bool, copy=False)


def _fill(input, mask, kind, op):
    """``input`` with masked-out elements replaced by the identity of ``kind``."""
    if mask is None:
        return input
    m = _input_mask(input, mask, op)
    return elementwise.where(m, input, _identity(kind, input._data.dtype, op))


def _dims(dim, ndim, op):
    """torch.masked's ``_canonical_dim``: a sorted tuple; None and () mean every dim."""
    if dim is None or dim == ():
        return tuple(range(ndim))
    n = max(ndim, 1)
    out = []
    for d in (dim,) if isinstance(dim, (int, np.integer)) else dim:
        if d in out or (d % n if -n <= d < n else None) in out:
            raise RuntimeError(f"masked.{op}: dim={d} appears multiple times in the list of dims")
        if not -n <= d < n:
            raise IndexError(
                f"masked.{op}: Dimension out of range (expected to be in range of "
                f"[{-n}, {n - 1}], but got {d})"
            )
        out.append(int(d) % n)
    return tuple(sorted(out))


def _dtype(dtype, input):
    return input._data.dtype if dtype is None else _dtypes.to_dtype(dtype)


def _reg(name, differentiable=True):
    """Register ``masked.<name>``. The op runs with NumPy's divide/invalid warnings off: an
    all-masked slice is 0/0 = NaN by definition (torch is silent there too)."""

    def deco(fn):
        @functools.wraps(fn)
        def op(*args, **kwargs):
            with np.errstate(divide="ignore", invalid="ignore"):
                return fn(*args, **kwargs)

        return register(
            f"masked.{name}", method=False, function=False, differentiable=differentiable
        )(op)

    return deco


# -- reductions: f(input, dim=None, *, keepdim=False, dtype=None, mask=None) -------------------


def _sum_dtype(dtype, input):
    if dtype is None and input._data.dtype in _SMALL_INTS:
        return _dtypes.int64
    return _dtype(dtype, input)


def _sum(x, dims, keepdim, dtype):
    return reduction.sum(x, dims, keepdim, dtype=dtype)


def _prod(x, dims, keepdim, dtype):
    x = x.to(dtype)
    for d in reversed(dims):
        x = scan.prod(x, d, keepdim)
    return x


def _amax(x, dims, keepdim, dtype):
    return extrema.amax(x, dims, keepdim).to(dtype)


def _amin(x, dims, keepdim, dtype):
    return extrema.amin(x, dims, keepdim).to(dtype)


def _logsumexp(x, dims, keepdim, dtype):
    return statistics.logsumexp(x, dims, keepdim).to(dtype)


# name: (identity, kernel(masked_input, dims, keepdim, dtype), result dtype rule)
REDUCTIONS = {
    "sum": ("zero", _sum, _sum_dtype),
    "prod": ("one", _prod, _sum_dtype),
    "amax": ("max", _amax, _dtype),
    "amin": ("min", _amin, _dtype),
    "logsumexp": ("max", _logsumexp, _dtype),
}


def _make_reduction(name, kind, kernel, dtype_rule):
    def op(input, dim=None, *, keepdim=False, dtype=None, mask=None):
        dims = _dims(dim, input._data.ndim, name)
        out_dtype = dtype_rule(dtype, input)
        return kernel(_fill(input, mask, kind, name), dims, bool(keepdim), out_dtype)

    op.__name__ = op.__qualname__ = name
    op.__doc__ = (
        f"{name} over ``dim`` (every dim when None) of the elements where ``mask`` is True; "
        f"masked-out elements count as the identity of {name}."
    )
    return _reg(name)(op)


# -- normalizations and scans: f(input, dim, *, dtype=None, mask=None) ------------------------


def _cumsum(x, d, dtype):
    return scan.cumsum(x, d, dtype=dtype).to(dtype)


def _cumprod(x, d, dtype):
    return scan.cumprod(x, d, dtype=dtype).to(dtype)


def _softmax(x, d, dtype):
    return softmax_ops.softmax(x, d, dtype=dtype)


def _log_softmax(x, d, dtype):
    return softmax_ops.log_softmax(x, d, dtype=dtype)


def _softmin(x, d, dtype):
    return softmax_ops.softmax(-x.to(dtype), d)


NORMALIZATIONS = {
    "cumsum": ("zero", _cumsum),
    "cumprod": ("one", _cumprod),
    "softmax": ("max", _softmax),
    "log_softmax": ("max", _log_softmax),
    "softmin": ("min", _softmin),
}


def _make_normalization(name, kind, kernel):
    def op(input, dim, *, dtype=None, mask=None):
        d = _dims(dim, input._data.ndim, name)[0]
        return kernel(_fill(input, mask, kind, name), d, _dtype(dtype, input))

    op.__name__ = op.__qualname__ = name
    op.__doc__ = (
        f"{name} along ``dim`` with masked-out elements replaced by the identity "
        f"({_IDENTITY_TEXT[kind]}) first."
    )
    return _reg(name)(op)


sum, prod, amax, amin, logsumexp = (  # noqa: A001 - torch.masked's names
    _make_reduction(name, *REDUCTIONS[name]) for name in REDUCTIONS
)
cumsum, cumprod, softmax, log_softmax, softmin = (
    _make_normalization(name, *NORMALIZATIONS[name]) for name in NORMALIZATIONS
)


# -- the ops with their own signatures ---------------------------------------------------------


def _arg_extreme(name, kind, fn):
    def op(input, dim=None, *, keepdim=False, dtype=None, mask=None):
        out = fn(_fill(input, mask, kind, name), dim, bool(keepdim))
        return out.to(_dtype(dtype, input))  # torch.masked casts the index to input's dtype

    op.__name__ = op.__qualname__ = name
    op.__doc__ = f"{name} over ``dim`` of the masked-in elements, as ``input``'s dtype."
    return _reg(name, differentiable=False)(op)


argmax = _arg_extreme("argmax", "max", extrema.argmax)
argmin = _arg_extreme("argmin", "min", extrema.argmin)


@_reg("mean")
def mean(input, dim=None, *, keepdim=False, dtype=None, mask=None):
    """Mean of the masked-in elements over ``dim``; NaN where a slice is all masked out."""
    out_dtype = _dtype(dtype, input)
    if out_dtype.kind not in "fcV":  # V: bfloat16
        source = "Input" if dtype is None else "Optional"
        raise ValueError(
            f"mean(): Could not infer output dtype. {source} dtype must be either a floating "
            f"point or complex dtype. Got: {out_dtype}"
        )
    dims = _dims(dim, input._data.ndim, "mean")
    total = sum(input, dims, keepdim=keepdim, dtype=out_dtype, mask=mask)
    return (total / _count(input, mask, dims, keepdim, "mean")).to(out_dtype)  # as torch


def _count(input, mask, dims, keepdim, op):
    """How many elements are masked in per slice, an int64 tensor."""
    m = np.ones(input._data.shape, bool) if mask is None else _input_mask(input, mask, op)
    dims = dims if m.ndim else None  # a 0-d input: dim 0 is the whole tensor
    return Tensor._wrap(np.asanyarray(np.sum(m, axis=dims, keepdims=keepdim, dtype=np.int64)))


@_reg("median")
def median(input, dim=-1, *, keepdim=False, dtype=None, mask=None):
    """Median (the lower one) of the masked-in elements along ``dim``; NaN for a slice that
    is all masked out (a ValueError for integer input, which cannot hold NaN)."""
    out_dtype = _dtype(dtype, input)
    d = _dims(dim, input._data.ndim, "median")[0]
    is_float = input._data.dtype.kind == "f"
    if not is_float:
        input = input.to(_dtypes.float32)
    out = sorting.nanmedian(_fill(input, mask, "nan", "median"), d, keepdim).values
    if is_float:
        return out
    if np.isnan(out._data).any():
        raise ValueError(
            "masked median expects no fully masked out rows if dtype is not floating point"
        )
    return out.to(out_dtype)


@_reg("logaddexp")
def logaddexp(input, other, *, dtype=None, input_mask=None, other_mask=None):
    """log(e^input + e^other) with masked-out elements of either taken as −inf."""
    a = _fill(input, input_mask, "max", "logaddexp")
    b = _fill(other, other_mask, "max", "logaddexp")
    return OPS["logaddexp"].fn(a, b).to(_dtype(dtype, input))


@_reg("norm")
def norm(input, ord=2.0, dim=None, *, keepdim=False, dtype=None, mask=None):
    """The vector ``ord``-norm of the masked-in elements over ``dim`` (masked-out elements
    count as 0, or +inf for ``ord=-inf``)."""
    kind = "min" if ord == -np.inf else "zero"
    dims = _dims(dim, input._data.ndim, "norm")
    x = _fill(input, mask, kind, "norm")
    return vector_norm(x, ord, dims, bool(keepdim), dtype=_dtype(dtype, input))


def _std_var(input, dim, unbiased, correction, keepdim, dtype, mask, take_sqrt):
    """torch.masked's ``_std_var``, step for step (so NaN patterns and gradients match)."""
    if unbiased is not None and correction is not None:
        raise ValueError("masked var/std: pass only one of unbiased= and correction=")
    corr = 1.0
    if unbiased is not None:
        corr = 1.0 if unbiased else 0.0
    if correction is not None:
        corr = float(correction)
    op = "std" if take_sqrt else "var"
    if input._data.dtype.kind == "c":  # torch's masked formula squares x (not |x|²) there
        raise NotImplementedError(
            f"masked.{op}: complex input ({input._data.dtype}, shape {list(input.shape)}) is "
            "not supported; take .real/.imag or .abs() first"
        )
    out_dtype = _dtype(dtype, input)
    if out_dtype.kind not in "fV":  # V: bfloat16
        out_dtype = _dtypes.float32
    dims = _dims(dim, input._data.ndim, op)
    count = _count(input, mask, dims, True, op)
    sample_mean = sum(input, dims, keepdim=True, dtype=out_dtype, mask=mask) / count
    x = input - sample_mean
    total = sum(x * x, dims, keepdim=keepdim, dtype=out_dtype, mask=mask)
    if not keepdim:
        count = count.reshape(total.shape)
    if corr != 0:
        count = clamp.maximum(count.to(out_dtype) - corr, Tensor._wrap(np.zeros((), out_dtype)))
    out = (total / count).to(out_dtype)
    return elementwise.sqrt(out) if take_sqrt else out


@_reg("var")
def var(input, dim=None, unbiased=None, *, correction=None, keepdim=False, dtype=None, mask=None):
    """Variance of the masked-in elements over ``dim`` (Bessel's ``correction``, default 1);
    NaN for an all-masked slice."""
    return _std_var(input, dim, unbiased, correction, keepdim, dtype, mask, False)


@_reg("std")
def std(input, dim=None, unbiased=None, *, correction=None, keepdim=False, dtype=None, mask=None):
    """Standard deviation of the masked-in elements: the square root of :func:`var`."""
    return _std_var(input, dim, unbiased, correction, keepdim, dtype, mask, True)


@_reg("normalize")
def normalize(input, ord, dim, *, eps=1e-12, dtype=None, mask=None):
    """``input`` divided by the masked ``ord``-norm along ``dim`` (at least ``eps``);
    masked-out elements give 0."""
    out_dtype = _dtype(dtype, input)
    x = _fill(input, mask, "zero", "normalize")
    nrm = norm(input, ord, dim, keepdim=True, dtype=out_dtype, mask=mask)
    return x / clamp.maximum(nrm, Tensor._wrap(np.array(eps, nrm._data.dtype)))
