"""Counting, membership and enumeration: histogram, histogramdd, isin, nonzero_static,
hash_tensor, combinations.

All but ``combinations`` are non-differentiable (as in PyTorch); their NumPy kernels
(np.histogramdd, np.isin, np.argwhere) match torch's results once the bin edges are made
as torch makes them (``linspace`` in the input's dtype over [min, max], widened by ½ on each
side when min == max; [0, 1] for an empty input). ``combinations`` gathers the input at the
index tuples of itertools, so its gradient is the indexing op's scatter-add.
"""

from __future__ import annotations

import itertools
from collections import namedtuple

import numpy as np

from ..tensor import Tensor, _check_dim
from ._linspace import linspace_values
from ._registry import register
from ._util import as_tensor

__all__ = ["histogram", "histogramdd", "isin", "nonzero_static", "hash_tensor", "combinations"]

HistogramResult = namedtuple("histogram", ["hist", "bin_edges"])
HistogramddResult = namedtuple("histogramdd", ["hist", "bin_edges"])


def _outer_edges(column, lo_hi, d, op):
    """torch's (and NumPy's) outer bin edges of one dimension."""
    if lo_hi is not None:
        lo, hi = (float(v) for v in lo_hi)
    elif column.size == 0:
        lo, hi = 0.0, 1.0
    else:
        lo, hi = float(column.min()), float(column.max())
    if lo > hi:
        raise RuntimeError(
            f"torch.{op}: min should not exceed max, but got min {lo:g} max {hi:g} for "
            f"dimension {d}"
        )
    if not (np.isfinite(lo) and np.isfinite(hi)):
        raise RuntimeError(f"torch.{op}: dimension {d}'s range [{lo:g}, {hi:g}] is not finite")
    if lo == hi:
        lo, hi = lo - 0.5, hi + 0.5
    return lo, hi


def _histogram_nd(x, bins, range_, weight, density, op):
    """(hist array, list of edge arrays) of the (N, D) float array ``x``."""
    n_dims = x.shape[1]
    if isinstance(bins, (int, np.integer)):
        bins = [int(bins)] * n_dims
    bins = list(bins)
    if len(bins) != n_dims:
        raise RuntimeError(
            f"torch.{op}: expected {n_dims} sequences of bin edges for {n_dims}-dimensional "
            f"histogram but got {len(bins)}"
        )
    if range_ is not None and len(range_) != 2 * n_dims:
        raise RuntimeError(
            f"torch.{op}: for a {n_dims}-dimensional histogram range should have "
            f"{2 * n_dims} elements (a min and a max per dimension), but got {len(range_)}"
        )
    edges = []
    for d, b in enumerate(bins):
        if isinstance(b, Tensor):
            e = b._data
            if e.dtype != x.dtype:
                raise RuntimeError(
                    f"torch.{op}: input tensor and bins tensors should have the same dtype, "
                    f"but got input with dtype {x.dtype} and bins for dimension {d} with dtype "
                    f"{e.dtype}"
                )
            if e.ndim != 1 or e.size < 1:
                raise RuntimeError(
                    f"torch.{op}: bins tensor should have one dimension and at "
                    f"least 1 element, got shape {list(e.shape)}"
                )
            if e.size == 1:  # one edge: no bins, refused as torch
                raise RuntimeError(f"torch.{op}: bins must be > 0, but got 0 for dimension {d}")
            edges.append(e)
            continue
        if b <= 0:
            raise RuntimeError(f"torch.{op}: bins must be > 0, but got {b} for dimension {d}")
        lo_hi = None if range_ is None else range_[2 * d : 2 * d + 2]
        lo, hi = _outer_edges(x[:, d], lo_hi, d, op)
        edges.append(linspace_values(lo, hi, int(b) + 1, x.dtype))
    w = None
    if weight is not None:
        w = as_tensor(weight, op)._data
        if w.shape != x.shape[:1]:
            raise RuntimeError(
                f"torch.{op}: if weight tensor is provided it should have the same shape as "
                f"the input tensor excluding its innermost dimension, but got input with shape "
                f"{list(x.shape)} and weight with shape {list(w.shape)}"
            )
    hist = _bin_counts(x, edges, w)
    if density:
        total = hist.sum()
        with np.errstate(invalid="ignore", divide="ignore"):
            for wd in np.ix_(*[np.diff(e) for e in edges]):
                hist = hist / wd
            hist = hist / total
    return hist.astype(x.dtype, copy=False), edges


def _upper_bound(edges, values):
    """``std::upper_bound`` of each value in ``edges``, vectorized: the same probe sequence
    as torch's binary search, so even unsorted edges bin as torch bins them."""
    first = np.zeros(values.shape, np.int64)
    count = np.full(values.shape, edges.size, np.int64)
    while np.any(count > 0):
        step = count // 2
        probe = np.minimum(first + step, edges.size - 1)
        go = (count > 0) & ~(values < edges[probe])
        first = np.where(go, first + step + 1, first)
        count = np.where(go, count - step - 1, np.where(count > 0, step, 0))
    return first


def _bin_counts(x, edges, w):
    """torch's histogramdd kernel: a point is counted when every coordinate lies within its
    outer edges; its bin is upper_bound − 1, the last bin closed on the right."""
    hist = np.zeros([max(e.size - 1, 0) for e in edges], x.dtype)
    keep = np.ones(x.shape[0], bool)
    positions = []
    for d, e in enumerate(edges):
        col = x[:, d]
        keep &= (col >= e[0]) & (col <= e[-1])
        pos = _upper_bound(e, col) - 1
        positions.append(np.where(pos == e.size - 1, pos - 1, pos))
    if hist.size:
        index = tuple(p[keep] for p in positions)
        np.add.at(hist, index, 1 if w is None else w[keep].astype(x.dtype))
    return hist


def _float_input(input, op):
    if input._data.dtype.kind != "f":
        raise NotImplementedError(f'"{op}" not implemented for {input._data.dtype} input')
    return input._data


@register("histogram", differentiable=False)
def histogram(input, bins=100, *, range=None, weight=None, density=False):  # noqa: A002
    """Histogram of the elements of ``input``: ``(hist, bin_edges)``.

    ``bins`` is a count of equal bins over ``range`` (default [min, max] of the input) or a
    1-D tensor of increasing edges; the last bin includes its right edge. ``weight`` (the
    input's shape) weighs each element; ``density`` normalizes to unit integral.
    """
    x = _float_input(input, "histogram")
    if isinstance(bins, Tensor) and bins._data.ndim != 1:
        raise RuntimeError(
            f"torch.histogram: bins tensor should have one dimension, but got "
            f"{bins._data.ndim} dimensions in the bins tensor for dimension 0"
        )
    w = None if weight is None else as_tensor(weight, "histogram").reshape(-1)
    if w is not None and weight.shape != input.shape:
        raise RuntimeError(
            f"torch.histogram: if weight tensor is provided it should have the same shape as "
            f"the input tensor, got weight of shape {list(weight.shape)} for input of shape "
            f"{list(input.shape)}"
        )
    hist, edges = _histogram_nd(x.reshape(-1, 1), [bins], range, w, density, "histogram")
    return HistogramResult(Tensor._wrap(hist), Tensor._wrap(np.array(edges[0], x.dtype)))


@register("histogramdd", method=False, differentiable=False)
def histogramdd(input, bins=10, *, range=None, weight=None, density=False):  # noqa: A002
    """D-dimensional histogram of the points in the last dim of ``input`` (..., D):
    ``(hist, bin_edges)`` with one edge tensor per dimension.

    ``bins``: a count for every dim, a list of counts, or a list of edge tensors;
    ``range``: ``[min_0, max_0, min_1, max_1, ...]``.
    """
    data = _float_input(input, "histogramdd")
    if data.ndim < 2:
        raise RuntimeError(
            f"torch.histogramdd: input tensor should have at least 2 dimensions, but got "
            f"{data.ndim}"
        )
    if data.shape[-1] == 0:  # no dimensions to bin: torch's result is a 0-d zero, no edges
        return HistogramddResult(Tensor._wrap(np.zeros((), data.dtype)), ())
    x = data.reshape(-1, data.shape[-1])
    w = None if weight is None else as_tensor(weight, "histogramdd").reshape(-1)
    hist, edges = _histogram_nd(x, bins, range, w, density, "histogramdd")
    return HistogramddResult(
        Tensor._wrap(hist), tuple(Tensor._wrap(np.array(e, x.dtype)) for e in edges)
    )


def _values(x):
    return x._data if isinstance(x, Tensor) else np.asarray(x)


@register("isin", method=False, differentiable=False)
def isin(elements, test_elements, *, assume_unique=False, invert=False):
    """A bool tensor of ``elements``' shape: whether each is in ``test_elements`` (either may
    be a scalar); ``invert`` negates it. NaN is in nothing."""
    if not isinstance(elements, Tensor) and not isinstance(test_elements, Tensor):
        raise TypeError("isin(): expected elements or test_elements to be a Tensor")
    a, b = _values(elements), _values(test_elements)
    out = np.isin(a, b, assume_unique=assume_unique, invert=invert)
    return Tensor._wrap(np.asarray(out, dtype=bool))


@register("nonzero_static", differentiable=False)
def nonzero_static(input, *, size, fill_value=-1):
    """The indices of the non-zero elements, as ``nonzero``, but always ``size`` rows:
    truncated, or padded with ``fill_value``. Shape ``(size, input.ndim)``, int64."""
    if not isinstance(size, (int, np.integer)) or size < 0:
        raise RuntimeError(f"nonzero_static: 'size' must be an non-negative integer, got {size}")
    data = input._data
    idx = np.argwhere(data) if data.ndim else np.zeros((int(bool(data)), 0), np.int64)
    out = np.full((size, data.ndim), fill_value, np.int64)
    k = min(size, idx.shape[0])
    out[:k] = idx[:k]
    return Tensor._wrap(out)


@register("hash_tensor", differentiable=False)
def hash_tensor(input, dim=(), *, keepdim=False, mode=0):
    """XOR of the elements' 64-bit patterns over ``dim`` (every dim for ``()``/None), a
    uint64 tensor: floats are widened to float64 and integers (and bool) to int64 first."""
    if mode != 0:
        raise RuntimeError(f"hash_tensor: only mode=0 (xor reduction) is supported, got {mode}")
    data = input._data
    wide = data.astype(np.float64 if data.dtype.kind == "f" else np.int64).view(np.uint64)
    if dim is None or dim == () or dim == []:
        if data.size == 0:
            raise RuntimeError(
                "hash_tensor: Expected reduction dim to be specified for input.numel() == 0. "
                "Specify the reduction dim with the 'dim' argument."
            )
        dims = tuple(range(data.ndim))
    else:
        dims = tuple(
            _check_dim(d, data.ndim, "hash_tensor") for d in ((dim,) if np.ndim(dim) == 0 else dim)
        )
        for d in dims:
            if data.ndim and data.shape[d] == 0:
                raise IndexError(f"hash_tensor: Expected reduction dim {d} to have non-zero size.")
    if data.ndim == 0:
        return Tensor._wrap(wide.copy())
    out = np.bitwise_xor.reduce(wide, axis=dims, keepdims=keepdim)
    return Tensor._wrap(np.asarray(out, np.uint64))


@register("combinations", method=False)
def combinations(input, r=2, with_replacement=False):
    """The length-``r`` combinations of the elements of the 1-D ``input`` (itertools order),
    as rows of a ``(C, r)`` tensor; ``with_replacement`` allows repeats. ``r=0`` gives an
    empty 1-D tensor."""
    if input._data.ndim != 1:
        raise RuntimeError(
            f"combinations: Expect a 1D vector, but got shape {list(input._data.shape)}"
        )
    if r < 0:
        raise RuntimeError(f"Expect a non-negative number, but got {r}")
    if r == 0:
        return input[np.zeros(0, np.int64)]
    pick = itertools.combinations_with_replacement if with_replacement else itertools.combinations
    rows = list(pick(range(input._data.shape[0]), r))
    idx = np.array(rows, np.int64).reshape(len(rows), r)
    return input[Tensor._wrap(idx)]
