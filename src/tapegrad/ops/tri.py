"""Triangles and diagonals: tril, triu, tril_indices, triu_indices, diagonal, diag_embed,
diag, diagflat, trace.

Each differentiable op records one Node whose rule saves no tensor, only shapes and
ints, as PyTorch's TrilBackward/DiagonalBackward/DiagEmbedBackward/TraceBackward do, so a
second backward runs without retain_graph (Note [Backward twice]). The rules are written
in these same ops (tril's is tril, diagonal's is an embedding of the gradient and vice
versa), so second derivatives come for free. Dims in the rules count from the right
(Note [Batched gradients]).
"""

from __future__ import annotations

import numpy as np

from .. import _dtypes
from ..autograd.graph import make_result
from ..tensor import Tensor, _check_dim
from ._registry import register
from .shape import view_result

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
    k = int(diagonal)
    data = np.tril(input._data, k) if lower else np.triu(input._data, k)

    def backward(g):
        return (_triangle(g, k, lower, op),)

    return make_result(data, (input,), backward, "TrilBackward" if lower else "TriuBackward")


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


def _embed(input, rows, cols, offset, d1, d2, name):
    """Matrices rows×cols (in dims ``d1``, ``d2`` of the result, both negative) holding the
    last dim of ``input`` on diagonal ``offset``; zeros elsewhere. The adjoint of
    :func:`diagonal`; its rule is ``diagonal`` and saves nothing."""
    x = input._data
    data = np.zeros(x.shape[:-1] + (rows, cols), x.dtype)
    r, c = _diag_positions(rows, cols, offset)
    data[..., r, c] = x
    data = np.moveaxis(data, (-2, -1), (d1, d2))

    def backward(g):
        return (diagonal(g, offset, d1, d2),)

    return make_result(data, (input,), backward, name)


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
    offset = int(offset)
    rows, cols = input._data.shape[d1], input._data.shape[d2]
    data = np.diagonal(input._data, offset, d1, d2)  # a view, as torch's (writes reach input)
    if input._data.flags.writeable:
        data.flags.writeable = True  # NumPy marks diagonals read-only; the memory is input's
    n1, n2 = d1 - nd, d2 - nd

    def backward(g):
        return (_embed(g, rows, cols, offset, n1, n2, "DiagonalBackwardBackward"),)

    return view_result(data, input, backward, "DiagonalBackward")


@register("diag_embed")
def diag_embed(input, offset=0, dim1=-2, dim2=-1):
    """Matrices (in dims ``dim1``, ``dim2`` of the result) with the last dim of ``input`` on
    diagonal ``offset``; zeros elsewhere."""
    if input._data.ndim == 0:
        raise RuntimeError("diag_embed: input must have at least 1 dimension")
    offset = int(offset)
    n = input._data.shape[-1] + abs(offset)
    nd = input._data.ndim + 1
    d1 = _check_dim(dim1, nd, "diag_embed")
    d2 = _check_dim(dim2, nd, "diag_embed")
    if d1 == d2:
        raise RuntimeError(f"diag_embed: dim1 and dim2 cannot be identical, got {dim1} and {dim2}")
    return _embed(input, n, n, offset, d1 - nd, d2 - nd, "DiagEmbedBackward")


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
    if not isinstance(input, Tensor):
        raise TypeError(
            f"diagflat(): argument 'input' (position 1) must be Tensor, not {type(input).__name__}"
        )
    return diag_embed(input.reshape(-1), offset, 0, 1)


@register("trace")
def trace(input):
    """The sum of the main diagonal of a 2-D tensor."""
    if input._data.ndim != 2:
        raise RuntimeError(f"trace: expected a matrix, got shape {list(input._data.shape)}")
    if input._data.dtype.kind not in "fc":
        if input._data.dtype == np.bool_:
            raise NotImplementedError("trace: \"trace\" not implemented for 'Bool'")  # torch's
        return diagonal(input).sum()
    rows, cols = input._data.shape
    k = min(rows, cols)
    data = np.asarray(np.trace(input._data), input._data.dtype)

    def backward(g):
        diag = g.unsqueeze(-1).expand(g._data.shape + (k,))
        return (_embed(diag, rows, cols, 0, -2, -1, "TraceBackwardBackward"),)

    return make_result(data, (input,), backward, "TraceBackward")
