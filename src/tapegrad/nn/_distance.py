"""Distances of ``nn.functional``: normalize, cosine_similarity, pairwise_distance, pdist.

Composed from differentiable ops (vector norms, sums, indexing), so every
order of derivative works. Where PyTorch clamps a norm in place under
``no_grad`` (normalize's denominator is an exception: it clamps with grad),
the value is clamped and the gradient flows as if it were not (``_floor_value``).
"""

from __future__ import annotations

import numpy as np

from ..ops import norm as _norm  # noqa: F401 - registers vector_norm
from ..ops._registry import OPS, exported
from ..tensor import Tensor

__all__ = ["normalize", "cosine_similarity", "pairwise_distance", "pdist"]

# The exported form of vector_norm (ops/norm.py): under vmap a batched input reaches its
# batching rule instead of the whole-function loop (Note [vmap levels]).
vector_norm = exported(OPS["vector_norm"])  # _norm imported: registered


def _floor_value(t, eps):
    """``t`` with values below ``eps`` raised to ``eps``; the gradient is t's (identity)."""
    bump = np.maximum(t._data, eps) - t._data
    return t + Tensor._wrap(bump.astype(t._data.dtype, copy=False))


def normalize(input, p=2.0, dim=1, eps=1e-12, out=None):
    """``input / max(‖input‖_p, eps)`` along ``dim``.

    >>> import tapegrad as tg
    >>> tg.nn.functional.normalize(tg.tensor([[3.0, 4.0]]))
    tensor([[0.6000, 0.8000]])
    """
    if out is not None:
        raise NotImplementedError("normalize: out= is not supported")
    denom = vector_norm(input, p, dim, keepdim=True).clamp(min=eps)
    return input / denom


def cosine_similarity(x1, x2, dim=1, eps=1e-8):
    """``Σ (x1/‖x1‖)·(x2/‖x2‖)`` along ``dim`` (inputs broadcast; norms floored at ``eps``).

    Raises:
        RuntimeError: the inputs do not broadcast.
    """
    try:
        shape = np.broadcast_shapes(tuple(x1.shape), tuple(x2.shape))
    except ValueError:
        raise RuntimeError(
            f"cosine_similarity: shapes {list(x1.shape)} and {list(x2.shape)} do not broadcast"
        ) from None
    if tuple(x1.shape) != shape:
        x1 = x1.expand(*shape)
    if tuple(x2.shape) != shape:
        x2 = x2.expand(*shape)
    n1 = _floor_value(vector_norm(x1, 2, dim, keepdim=True), eps)
    n2 = _floor_value(vector_norm(x2, 2, dim, keepdim=True), eps)
    return ((x1 / n1) * (x2 / n2)).sum(dim=dim)


def pairwise_distance(x1, x2, p=2.0, eps=1e-6, keepdim=False):
    """``‖x1 − x2 + eps‖_p`` over the last dim (inputs broadcast)."""
    ndim = max(x1.ndim, x2.ndim)
    try:
        np.broadcast_shapes(x1.shape, x2.shape)
    except ValueError:
        raise RuntimeError(
            f"pairwise_distance: shapes {list(x1.shape)} and {list(x2.shape)} cannot be "
            "broadcast together"
        ) from None
    if ndim == 0:
        return ((x1 - x2) + eps).abs()
    return vector_norm(x1 - x2 + eps, p, ndim - 1, keepdim=keepdim)


def pdist(input, p=2.0):
    """The p-norm distances between the rows of ``input`` (N, M): a vector of the
    N·(N − 1)/2 pairs i < j, in row-major order.

    Raises:
        RuntimeError: input is not 2-D, or p < 0.
    """
    if input.ndim != 2:
        raise RuntimeError(f"pdist only supports 2D tensors, got: {input.ndim}D")
    if p < 0:
        raise RuntimeError("pdist only supports non-negative p values")
    i, j = np.triu_indices(input.shape[0], 1)
    if i.size == 0:
        return Tensor._wrap(np.zeros(0, dtype=input._data.dtype)) * input.sum()
    return vector_norm(input[i] - input[j], p, 1)
