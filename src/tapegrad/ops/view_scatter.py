"""The ``*_scatter`` ops: a copy of ``input`` with ``src`` written into one of its views
(``diagonal_scatter``, ``select_scatter``, ``slice_scatter``; ``as_strided_scatter`` in
strided.py), as PyTorch's functional forms of ``view.copy_(src)``.

All go through :func:`scatter_positions`: the view is named by the positions (in ``input``'s
C order) of its elements, found by taking the view of an ``arange``; the gradients are
``g`` masked where ``src`` landed (for ``input``) and ``g`` read at those positions (for
``src``), both in tapegrad ops, so second derivatives and batched gradients work.
"""

from __future__ import annotations

import numpy as np

from ..autograd.graph import batched_shape, make_result
from ..tensor import Tensor, _check_dim
from ._registry import register
from ._util import as_tensor

__all__ = ["diagonal_scatter", "select_scatter", "slice_scatter", "scatter_positions"]


def scatter_positions(input, src, index, op, name):
    """``input`` copied, with ``src`` written at the C-order positions ``index`` (an int
    array shaped as the view, and so as ``src``)."""
    src = as_tensor(src, op)
    if tuple(src._data.shape) != index.shape:
        raise RuntimeError(
            f"{op}: expected src to have a size equal to the slice of self. src size = "
            f"{list(src._data.shape)}, slice size = {list(index.shape)}"
        )
    data = input._data
    out = np.array(data, copy=True, order="C")
    out.reshape(-1)[index.reshape(-1)] = src._data.reshape(-1)
    keep = np.ones(data.size, dtype=bool)
    keep[index.reshape(-1)] = False
    keep = keep.reshape(data.shape)
    at = Tensor._wrap(index)
    size, src_dtype = data.size, src._data.dtype

    def backward(g):
        grad_src = g.reshape(batched_shape((size,)))[..., at]
        if grad_src._data.dtype != src_dtype:
            grad_src = grad_src._cast(src_dtype)
        return (g * Tensor._wrap(keep.astype(g._data.dtype)), grad_src)

    return make_result(out, (input, src), backward, name)


def _positions(shape, take):
    """The C-order positions of the elements ``take(arange)`` selects from a ``shape`` array."""
    return np.asarray(take(np.arange(int(np.prod(shape)), dtype=np.int64).reshape(shape)))


@register("diagonal_scatter")
def diagonal_scatter(input, src, offset=0, dim1=0, dim2=1):
    """``input`` with ``src`` written onto its diagonal ``offset`` over ``dim1``, ``dim2``
    (``src`` shaped as ``input.diagonal(offset, dim1, dim2)``)."""
    nd = input._data.ndim
    if nd < 2:
        raise RuntimeError(f"diagonal_scatter: input must have at least 2 dims, got {nd}")
    d1, d2 = _check_dim(dim1, nd, "diagonal_scatter"), _check_dim(dim2, nd, "diagonal_scatter")
    if d1 == d2:
        raise RuntimeError(f"diagonal_scatter: dim1 and dim2 cannot be identical, got {d1}")
    index = _positions(input._data.shape, lambda a: np.diagonal(a, int(offset), d1, d2))
    return scatter_positions(input, src, index, "diagonal_scatter", "DiagonalScatterBackward")


@register("select_scatter")
def select_scatter(input, src, dim, index):
    """``input`` with ``src`` written into ``input.select(dim, index)``."""
    shape = input._data.shape
    if not shape:
        raise IndexError("select_scatter() cannot be applied to a 0-dim tensor.")
    d = _check_dim(dim, len(shape), "select_scatter")
    if not -shape[d] <= index < shape[d]:
        raise IndexError(
            f"select_scatter(): index {index} out of range for tensor of size {list(shape)} "
            f"at dimension {d}"
        )
    pos = _positions(shape, lambda a: a[(slice(None),) * d + (int(index),)])
    return scatter_positions(input, src, pos, "select_scatter", "SelectScatterBackward")


@register("slice_scatter")
def slice_scatter(input, src, dim=0, start=None, end=None, step=1):
    """``input`` with ``src`` written into ``input[..., start:end:step, ...]`` (at ``dim``)."""
    shape = input._data.shape
    if not shape:
        raise IndexError("slice_scatter() cannot be applied to a 0-dim tensor.")
    d = _check_dim(dim, len(shape), "slice_scatter")
    if int(step) <= 0:
        raise RuntimeError(f"slice_scatter: slice step must be positive, got {step}")
    cut = (slice(None),) * d + (slice(start, end, int(step)),)
    pos = _positions(shape, lambda a: a[cut])
    return scatter_positions(input, src, pos, "slice_scatter", "SliceScatterBackward")
