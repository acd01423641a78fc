"""Triangles and diagonals: tril, triu, tril_indices, triu_indices, diagonal, diag_embed,
diag, diagflat, trace.

All are composed of differentiable ops: tril/triu multiply by a constant 0/1 mask,
diagonal picks with an index (gradient scattered back), diag_embed multiplies by a
constant selection matrix, so second derivatives come for free.
"""

from __future__ import annotations

import numpy as np

from .. import _dtypes
from ..tensor import Tensor, _check_dim
from ._mathutil import const
from ._registry import register
from .elementwise import where

__all__ = [
    "tril",
    "triu",
    "tril_indices",
    "triu_indices",
    "diagonal",
    "diag_embed",
    "diag",
    "diagflat",
    "trace",
]


def _matrix(input, op):
    if input._data.ndim < 2:
        raise RuntimeError(
            f"{op}: input tensor must have at least 2 dimensions, got shape "
            f"{list(input._data.shape)}"
        )


def _triangle(input, diagonal, lower, op):
    _matrix(input, op)
    rows, cols = input._data.shape[-2:]
    keep = np.tri(rows, cols, int(diagonal), dtype=bool)
    if not lower:
        keep = ~np.tri(rows, cols, int(diagonal) - 1, dtype=bool)
    zero = np.zeros((), input._data.dtype)
    return where(const(keep), input, const(zero))


@register("tril")
def tril(input, diagonal=0):
    """The lower triangle of the last two dims (entries with col − row <= ``diagonal``)."""
    return _triangle(input, diagonal, True, "tril")


@register("triu")
def triu(input, diagonal=0):
    """The upper triangle of the last two dims (entries with col − row >= ``diagonal``)."""
    return _triangle(input, diagonal, False, "triu")


def _tri_indices(row, col, offset, lower, dtype):
    mask = (
        np.tri(row, col, offset, dtype=bool) if lower else ~np.tri(row, col, offset - 1, dtype=bool)
    )
    r, c = np.nonzero(mask)
    return Tensor._wrap(np.stack([r, c]).astype(_dtypes.to_dtype(dtype) or np.int64))


def tril_indices(row, col, offset=0, *, dtype=None, device="cpu", **_):
    """The 2×N coordinates of the lower triangle of a ``row``×``col`` matrix."""
    return _tri_indices(row, col, offset, True, dtype)


def triu_indices(row, col, offset=0, *, dtype=None, device="cpu", **_):
    """The 2×N coordinates of the upper triangle of a ``row``×``col`` matrix."""
    return _tri_indices(row, col, offset, False, dtype)


def _diag_positions(rows, cols, offset):
    """Row and column indices of diagonal ``offset`` of a rows×cols matrix."""
    if offset >= 0:
        n = max(min(rows, cols - offset), 0)
        return np.arange(n), np.arange(n) + offset
    n = max(min(rows + offset, cols), 0)
    return np.arange(n) - offset, np.arange(n)


@register("diagonal")
def diagonal(input, offset=0, dim1=0, dim2=1):
    """The diagonal ``offset`` of the matrices spanned by ``dim1`` and ``dim2``, as a new
    last dim (the other dims keep their order)."""
    nd = input._data.ndim
    _matrix(input, "diagonal")
    d1 = _check_dim(dim1, nd, "diagonal")
    d2 = _check_dim(dim2, nd, "diagonal")
    if d1 == d2:
        raise RuntimeError(f"diagonal: dim1 and dim2 cannot be identical, got {dim1} and {dim2}")
    moved = input.movedim((d1, d2), (-2, -1))
    r, c = _diag_positions(*moved._data.shape[-2:], int(offset))
    return moved[..., r, c]


@register("diag_embed")
def diag_embed(input, offset=0, dim1=-2, dim2=-1):
    """Matrices (in dims ``dim1``, ``dim2`` of the result) with the last dim of ``input`` on
    diagonal ``offset``; zeros elsewhere."""
    if input._data.ndim == 0:
        raise RuntimeError("diag_embed: input must have at least 1 dimension")
    k = input._data.shape[-1]
    offset = int(offset)
    n = k + abs(offset)
    select = np.zeros(
        (k, n * n), input._data.dtype if input._data.dtype.kind == "f" else np.float64
    )
    r, c = _diag_positions(n, n, offset)
    select[np.arange(k), r * n + c] = 1
    x = input if input._data.dtype.kind == "f" else input._cast(select.dtype)
    out = (x @ const(select)).unflatten(-1, (n, n))
    if x is not input:
        out = out._cast(input._data.dtype)
    nd = out._data.ndim
    d1 = _check_dim(dim1, nd, "diag_embed")
    d2 = _check_dim(dim2, nd, "diag_embed")
    if d1 == d2:
        raise RuntimeError(f"diag_embed: dim1 and dim2 cannot be identical, got {dim1} and {dim2}")
    return out.movedim((nd - 2, nd - 1), (d1, d2))


@register("diag")
def diag(input, diagonal=0):
    """A 1-D input becomes a matrix with it on diagonal ``diagonal``; a matrix gives that
    diagonal as a 1-D tensor."""
    nd = input._data.ndim
    if nd == 1:
        return diag_embed(input, diagonal, 0, 1)
    if nd == 2:
        return globals()["diagonal"](input, diagonal)
    raise RuntimeError(f"diag: expected a 1-D or 2-D tensor, got shape {list(input._data.shape)}")


@register("diagflat")
def diagflat(input, offset=0):
    """The flattened input on diagonal ``offset`` of a square matrix."""
    return diag_embed(input.reshape(-1), offset, 0, 1)


@register("trace")
def trace(input):
    """The sum of the main diagonal of a 2-D tensor."""
    if input._data.ndim != 2:
        raise RuntimeError(f"trace: expected a matrix, got shape {list(input._data.shape)}")
    d = diagonal(input)
    return d.sum()
