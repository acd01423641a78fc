"""Sorting and order statistics: sort, argsort, msort, topk, kthvalue, median, nanmedian,
mode, quantile, nanquantile, cummax, cummin; and the index-only searchsorted, bucketize,
unique, unique_consecutive, histc, bincount.

Every op that returns values picks them with indices computed in NumPy, through
``take_along_dim``: the gradient goes to the picked positions (Note [Picked values]), so
no op here needs a backward rule of its own and all of them have second derivatives.
Ties are broken stably (the first of equal values in sort order); PyTorch's choice among
tied indices is unspecified, so only the values are guaranteed to match it there.
"""

from __future__ import annotations

from collections import namedtuple

import numpy as np

from .. import _dtypes
from ..tensor import Tensor, _check_dim
from ._registry import register
from ._util import as_tensor
from .indexing import take_along_dim

__all__ = [
    "sort",
    "argsort",
    "msort",
    "topk",
    "kthvalue",
    "median",
    "nanmedian",
    "mode",
    "quantile",
    "nanquantile",
    "cummax",
    "cummin",
    "searchsorted",
    "bucketize",
    "unique",
    "unique_consecutive",
    "histc",
    "bincount",
]

# PyTorch returns ``torch.return_types.<op>(values=..., indices=...)``; so do we.
SortResult = namedtuple("sort", ["values", "indices"])
TopkResult = namedtuple("topk", ["values", "indices"])
KthvalueResult = namedtuple("kthvalue", ["values", "indices"])
MedianResult = namedtuple("median", ["values", "indices"])
NanmedianResult = namedtuple("nanmedian", ["values", "indices"])
ModeResult = namedtuple("mode", ["values", "indices"])
CummaxResult = namedtuple("cummax", ["values", "indices"])
CumminResult = namedtuple("cummin", ["values", "indices"])


def _dim(input, dim, op):
    return _check_dim(dim, input._data.ndim, op) if input._data.ndim else 0


def _pick(input, idx, d, keepdim=True):
    """Note [Picked values]: ``input`` at ``idx`` along ``d`` (``take_along_dim``, so the
    gradient flows to the picked positions); ``keepdim=False`` drops ``d``."""
    if input._data.ndim == 0:
        return take_along_dim(input.reshape(1), Tensor._wrap(idx.reshape(1)), 0).reshape(())
    out = take_along_dim(input, Tensor._wrap(idx), d)
    return out if keepdim else out.squeeze(d)


def _index(idx, d, keepdim, ndim):
    idx = idx.astype(np.int64, copy=False)  # ndim > 0: kthvalue sorts a 0-d input
    return Tensor._wrap(idx if keepdim else idx.squeeze(d))


def _argsort(data, d, descending, stable=True):
    """Stable argsort along ``d``; NaN sorts as the largest value, as in PyTorch."""
    if not descending:
        return np.argsort(data, axis=d, kind="stable")
    # Reverse, sort ascending stably, reverse back: ties keep their original order.
    n = data.shape[d]
    flipped = np.flip(data, d)
    order = np.argsort(flipped, axis=d, kind="stable")
    return np.flip(n - 1 - order, d)


@register("sort")
def sort(input, dim=-1, descending=False, stable=False):
    """Sorted values along ``dim`` and the indices they came from: ``(values, indices)``.

    d/dx: each value's gradient goes back to the position it came from.
    """
    d = _dim(input, dim, "sort")
    data = input._data
    if data.ndim == 0:
        return SortResult(
            _pick(input, np.zeros((), np.int64), 0), Tensor._wrap(np.zeros((), np.int64))
        )
    idx = _argsort(data, d, descending)
    return SortResult(_pick(input, idx, d), Tensor._wrap(idx.astype(np.int64)))


@register("argsort", differentiable=False)
def argsort(input, dim=-1, descending=False, stable=False):
    """The indices that sort ``input`` along ``dim``."""
    d = _dim(input, dim, "argsort")
    if input._data.ndim == 0:
        return Tensor._wrap(np.zeros((), np.int64))
    return Tensor._wrap(_argsort(input._data, d, descending).astype(np.int64))


@register("msort")
def msort(input):
    """``input`` sorted along its first dimension."""
    return sort(input, 0).values


@register("topk")
def topk(input, k, dim=-1, largest=True, sorted=True):
    """The ``k`` largest (or smallest) values along ``dim`` and their indices."""
    d = _dim(input, dim, "topk")
    data = input._data
    size = data.shape[d] if data.ndim else 1
    if not 0 <= k <= size:
        raise RuntimeError(f"topk: k ({k}) is out of range for dimension {d} of size {size}")
    if data.ndim == 0:
        return TopkResult(*sort(input))
    idx = np.take(_argsort(data, d, largest), np.arange(k), axis=d)
    return TopkResult(_pick(input, idx, d), Tensor._wrap(idx.astype(np.int64)))


@register("kthvalue")
def kthvalue(input, k, dim=-1, keepdim=False):
    """The ``k``-th smallest value (1-based) along ``dim`` and its index."""
    d = _dim(input, dim, "kthvalue")
    data = input._data
    size = data.shape[d] if data.ndim else 1
    if size == 0:
        raise IndexError(f"kthvalue(): Expected reduction dim {d} to have non-zero size.")
    if not 1 <= k <= size:
        raise RuntimeError(
            f"kthvalue: k ({k}) is out of range for dimension {d} of size {size} "
            f"(expected 1 <= k <= {size})"
        )
    if data.ndim == 0:
        return KthvalueResult(*sort(input))
    idx = np.take(_argsort(data, d, False), [k - 1], axis=d)
    return KthvalueResult(_pick(input, idx, d, keepdim), _index(idx, d, keepdim, data.ndim))


def _median_index(data, d, ignore_nan):
    """Index (kept dim) of the lower median along ``d``; a slice with NaN gives a NaN's
    index (median) or the median of the rest (nanmedian, NaN when all are NaN)."""
    order = np.argsort(data, axis=d, kind="stable")  # NaN last
    n = data.shape[d]
    nans = np.isnan(data).sum(axis=d, keepdims=True) if data.dtype.kind in "fV" else 0
    if ignore_nan:
        pos = np.maximum(n - nans - 1, 0) // 2
    else:
        pos = np.where(nans > 0, n - nans, (n - 1) // 2)
    pos = np.broadcast_to(pos, order.shape[:d] + (1,) + order.shape[d + 1 :])
    return np.take_along_axis(order, pos.astype(np.intp), axis=d)


def _median(input, dim, keepdim, ignore_nan, op, result):
    data = input._data
    if dim is None:
        if data.size == 0:  # NaN, still in the graph (its gradient is empty)
            return input.sum() * np.nan
        flat = input.reshape(-1)
        idx = _median_index(flat._data, 0, ignore_nan)
        return _pick(flat, idx, 0, False).reshape(())
    d = _dim(input, dim, op)
    if data.ndim == 0:
        zero = np.zeros((), np.int64)
        return result(_pick(input, zero, 0), Tensor._wrap(zero))
    if data.shape[d] == 0:
        raise IndexError(f"{op}(): Expected reduction dim {d} to have non-zero size.")
    idx = _median_index(data, d, ignore_nan)
    return result(_pick(input, idx, d, keepdim), _index(idx, d, keepdim, data.ndim))


@register("median")
def median(input, dim=None, keepdim=False):
    """The lower median (of all elements, or ``(values, indices)`` along ``dim``); NaN
    where a slice holds a NaN."""
    return _median(input, dim, keepdim, False, "median", MedianResult)


@register("nanmedian")
def nanmedian(input, dim=None, keepdim=False):
    """The lower median ignoring NaN; see :func:`median`."""
    return _median(input, dim, keepdim, True, "nanmedian", NanmedianResult)


@register("mode")
def mode(input, dim=-1, keepdim=False):
    """The most frequent value along ``dim`` (the smallest among equally frequent ones)
    and an index where it occurs."""
    d = _dim(input, dim, "mode")
    data = input._data
    if data.ndim and data.shape[d] == 0:
        raise IndexError(f"mode(): Expected reduction dim {d} to have non-zero size.")
    if data.ndim == 0:
        zero = np.zeros((), np.int64)
        return ModeResult(_pick(input, zero, 0), Tensor._wrap(zero))
    moved = np.moveaxis(data, d, -1)
    rows = moved.reshape(-1, moved.shape[-1]) if moved.shape[-1] else moved.reshape(0, 0)
    best = np.zeros(rows.shape[0], np.int64)
    for r, row in enumerate(rows):
        values, first, counts = np.unique(row, return_index=True, return_counts=True)
        winner = values[np.argmax(counts)]
        best[r] = np.flatnonzero(row == winner)[-1]  # PyTorch reports the last occurrence
    idx = np.moveaxis(best.reshape(moved.shape[:-1] + (1,)), -1, d)
    return ModeResult(_pick(input, idx, d, keepdim), _index(idx, d, keepdim, data.ndim))


def _quantile(input, q, dim, keepdim, interpolation, ignore_nan, op):
    """Sort, then interpolate between the two neighbouring order statistics (composed of
    differentiable picks, so the gradient follows the interpolation weights)."""
    modes = ("linear", "lower", "higher", "midpoint", "nearest")
    if interpolation not in modes:
        raise RuntimeError(f"{op}: interpolation must be one of {modes}, got {interpolation!r}")
    scalar_q = not isinstance(q, Tensor) and np.ndim(q) == 0
    qs = np.atleast_1d(np.asarray(q._data if isinstance(q, Tensor) else q, dtype=np.float64))
    if qs.ndim > 1:
        raise RuntimeError(f"{op}: q must be a scalar or 1-D tensor, got shape {list(qs.shape)}")
    if qs.size and (qs.min() < 0 or qs.max() > 1):
        raise RuntimeError(f"{op}: q values must be in the range [0, 1]")
    if input._data.dtype.kind != "f":
        raise RuntimeError(
            f"{op}: input must be a float tensor (float32 or float64), got {input._data.dtype}"
        )
    if input._data.size == 0:
        raise RuntimeError(f"{op}() input tensor must be non-empty")
    x = input.reshape(-1) if dim is None else input
    d = 0 if dim is None else _dim(input, dim, op)
    if x._data.ndim == 0:
        x = x.reshape(1)
    sorted_x = sort(x, d).values
    data = sorted_x._data
    n = data.shape[d]
    shape_k = list(data.shape)
    shape_k[d] = 1
    nan_count = np.isnan(data).sum(axis=d, keepdims=True)
    valid = n - nan_count if ignore_nan else np.full(shape_k, n)
    outs = []
    for qv in qs:
        rank = qv * np.maximum(valid - 1, 0)
        if interpolation == "lower":
            rank = np.floor(rank)
        elif interpolation == "higher":
            rank = np.ceil(rank)
        elif interpolation == "nearest":
            rank = np.round(rank)  # round half to even, as PyTorch
        lo = np.floor(rank).astype(np.intp)
        hi = np.minimum(lo + 1, np.maximum(valid - 1, 0)).astype(np.intp)
        w = rank - lo if interpolation != "midpoint" else np.where(rank > lo, 0.5, 0.0)
        a = _pick(sorted_x, lo, d)
        b = _pick(sorted_x, hi, d)
        val = a + (b - a) * Tensor._wrap(w.astype(data.dtype))
        if not ignore_nan and data.dtype.kind == "f":  # any NaN makes the result NaN
            val = val + Tensor._wrap(np.where(nan_count > 0, np.nan, 0.0).astype(data.dtype))
        elif ignore_nan:
            val = val + Tensor._wrap(np.where(valid == 0, np.nan, 0.0).astype(data.dtype))
        if dim is None:
            val = val.reshape(())
            if keepdim:
                val = val.reshape((1,) * input._data.ndim)
        elif not input._data.ndim:
            val = val.reshape(())
        elif not keepdim:
            val = val.squeeze(d)
        outs.append(val)
    if scalar_q:
        return outs[0]
    from .joining import stack  # noqa: PLC0415 - joining imports nothing from here

    return stack(outs, 0)


@register("quantile")
def quantile(input, q, dim=None, keepdim=False, *, interpolation="linear"):
    """The ``q``-th quantile(s) (``q`` a float or 1-D tensor in [0, 1]) over ``dim`` (all
    elements when None); with a tensor ``q`` the quantiles stack along a new first dim."""
    return _quantile(input, q, dim, keepdim, interpolation, False, "quantile")


@register("nanquantile")
def nanquantile(input, q, dim=None, keepdim=False, *, interpolation="linear"):
    """:func:`quantile` ignoring NaN (NaN where a slice holds nothing else)."""
    return _quantile(input, q, dim, keepdim, interpolation, True, "nanquantile")


def _cum_extreme(input, dim, better, op, result):
    d = _dim(input, dim, op)
    data = input._data
    if data.ndim == 0:
        zero = np.zeros((), np.int64)
        return result(_pick(input, zero, 0), Tensor._wrap(zero))
    moved = np.moveaxis(data, d, 0)
    idx = np.zeros(moved.shape, np.int64)
    best = moved[0].copy() if moved.shape[0] else None
    for i in range(1, moved.shape[0]):
        row = moved[i]
        # Later equal values win (PyTorch's >= / <=); a NaN wins and then stays.
        take = better(row, best) | (row == best) | np.isnan(row)
        take &= ~np.isnan(best)
        best = np.where(take, row, best)
        idx[i] = np.where(take, i, idx[i - 1])
    idx = np.moveaxis(idx, 0, d)
    return result(_pick(input, idx, d), Tensor._wrap(idx))


@register("cummax")
def cummax(input, dim):
    """Running maximum along ``dim`` and the index of each running maximum."""
    return _cum_extreme(input, dim, np.greater, "cummax", CummaxResult)


@register("cummin")
def cummin(input, dim):
    """Running minimum along ``dim`` and the index of each running minimum."""
    return _cum_extreme(input, dim, np.less, "cummin", CumminResult)


# -- index-valued: no gradient -------------------------------------------------------------


@register("searchsorted", method=False, differentiable=False)
def searchsorted(sorted_sequence, input, *, out_int32=False, right=False, side=None, sorter=None):
    """Indices where ``input`` would be inserted into the innermost dim of
    ``sorted_sequence`` to keep it sorted (leftmost, or rightmost with ``right=True``)."""
    seq = as_tensor(sorted_sequence, "searchsorted")._data
    values = input._data if isinstance(input, Tensor) else np.asarray(input)
    if side is not None:
        right = side == "right"
    how = "right" if right else "left"
    if sorter is not None:
        sorter = sorter._data if isinstance(sorter, Tensor) else np.asarray(sorter)
        seq = np.take_along_axis(seq, sorter, axis=-1)
    dtype = np.int32 if out_int32 else np.int64
    if seq.ndim == 0:
        raise RuntimeError("searchsorted: boundaries tensor should have at least 1 dimension")
    if seq.ndim <= 1:
        return Tensor._wrap(np.asarray(np.searchsorted(seq, values, side=how), dtype=dtype))
    if seq.shape[:-1] != values.shape[:-1]:
        raise RuntimeError(
            f"searchsorted: boundaries tensor should be 1 dimension or the first N-1 dimensions "
            f"of boundaries tensor and input value tensor must match, but we got boundaries "
            f"tensor {list(seq.shape)} and input value tensor {list(values.shape)}"
        )
    rows = seq.reshape(-1, seq.shape[-1])
    vals = values.reshape(rows.shape[0], -1)
    out = np.stack([np.searchsorted(r, v, side=how) for r, v in zip(rows, vals)])
    return Tensor._wrap(out.reshape(values.shape).astype(dtype))


@register("bucketize", differentiable=False)
def bucketize(input, boundaries, *, out_int32=False, right=False):
    """The bucket of each element of ``input`` among the 1-D sorted ``boundaries``."""
    b = as_tensor(boundaries, "bucketize")._data
    if b.ndim != 1:
        raise RuntimeError(f"bucketize: boundaries must be 1-D, got shape {list(b.shape)}")
    values = input._data if isinstance(input, Tensor) else np.asarray(input)
    out = np.searchsorted(b, values, side="right" if right else "left")
    return Tensor._wrap(np.asarray(out, dtype=np.int32 if out_int32 else np.int64))


@register("unique", differentiable=False)
def unique(input, sorted=True, return_inverse=False, return_counts=False, dim=None):
    """The distinct values (sorted), with optional inverse indices and counts."""
    data = input._data
    if dim is not None:
        d = _check_dim(dim, data.ndim, "unique")
        vals, inv, counts = np.unique(data, return_inverse=True, return_counts=True, axis=d)
    else:
        vals, inv, counts = np.unique(data, return_inverse=True, return_counts=True)
        inv = inv.reshape(data.shape)
    out = [Tensor._wrap(vals)]
    if return_inverse:
        out.append(
            Tensor._wrap(
                inv.reshape(-1).astype(np.int64) if dim is not None else inv.astype(np.int64)
            )
        )
    if return_counts:
        out.append(Tensor._wrap(counts.astype(np.int64)))
    return out[0] if len(out) == 1 else tuple(out)


@register("unique_consecutive", differentiable=False)
def unique_consecutive(input, return_inverse=False, return_counts=False, dim=None):
    """Collapse runs of equal consecutive values (along ``dim``, or of the flattened tensor)."""
    data = input._data
    if dim is None:
        flat = data.reshape(-1)
        change = np.ones(flat.shape[0], bool)
        change[1:] = flat[1:] != flat[:-1]
        vals = flat[change]
        inv_shape = data.shape
    else:
        d = _check_dim(dim, data.ndim, "unique_consecutive")
        moved = np.moveaxis(data, d, 0)
        change = np.ones(moved.shape[0], bool)
        if moved.shape[0] > 1:
            change[1:] = (moved[1:] != moved[:-1]).reshape(moved.shape[0] - 1, -1).any(axis=1)
        vals = np.moveaxis(moved[change], 0, d)
        inv_shape = (moved.shape[0],)
    out = [Tensor._wrap(np.ascontiguousarray(vals))]
    if return_inverse:
        out.append(Tensor._wrap((np.cumsum(change) - 1).astype(np.int64).reshape(inv_shape)))
    if return_counts:
        starts = np.flatnonzero(change)
        out.append(Tensor._wrap(np.diff(np.append(starts, change.shape[0])).astype(np.int64)))
    return out[0] if len(out) == 1 else tuple(out)


@register("histc", differentiable=False)
def histc(input, bins=100, min=0, max=0):
    """A histogram of ``bins`` equal bins over [min, max] (the data's range when both are 0);
    elements outside are ignored."""
    data = input._data
    if data.dtype.kind != "f":
        raise NotImplementedError(f"histc: expected a floating point input, got dtype {data.dtype}")
    lo, hi = float(min), float(max)
    if lo == hi and data.size:
        lo, hi = float(data.min()), float(data.max())
    if lo == hi:
        lo, hi = lo - 1, hi + 1
    if lo > hi:
        raise RuntimeError(f"histc: max must be larger than min, got min={min} max={max}")
    if not (np.isfinite(lo) and np.isfinite(hi)):
        raise RuntimeError(f"histc: range of [{lo}, {hi}] is not finite")
    counts, _ = np.histogram(data, bins=bins, range=(lo, hi))
    return Tensor._wrap(counts.astype(data.dtype))


@register("bincount", differentiable=False)
def bincount(input, weights=None, minlength=0):
    """Counts of each value of the non-negative 1-D int ``input`` (weighted sums with
    ``weights``)."""
    data = input._data
    if data.ndim != 1 or data.dtype.kind not in "iu":
        raise RuntimeError(
            f"bincount: only 1-D non-negative integer inputs are supported, got shape "
            f"{list(data.shape)} and dtype {data.dtype}"
        )
    if data.size and data.min() < 0:
        raise RuntimeError("bincount: input must contain only non-negative values")
    w = None if weights is None else as_tensor(weights, "bincount")._data
    out = np.bincount(data, weights=w, minlength=minlength)
    if w is None:
        out = out.astype(np.int64)
    elif w.dtype == _dtypes.float32:  # float32 weights keep float32; others give float64
        out = out.astype(_dtypes.float32)
    return Tensor._wrap(out)
