"""Helpers shared by the math op families (elementwise, reductions, linalg)."""

from __future__ import annotations

import numpy as np

from ..tensor import Tensor

__all__ = ["const", "kept_shape", "unreduce"]


def const(array) -> Tensor:
    """Wrap a constant array (a mask, a sign pattern) as a Tensor without copying it.

    Backward rules multiply such constants into ``g``; wrapping them here avoids the
    defensive copy that ``Tensor(array)`` makes.
    """
    return Tensor._wrap(np.asanyarray(array))


def kept_shape(shape: tuple, dims: tuple) -> tuple:
    """``shape`` with each axis in ``dims`` set to 1 (the keepdim shape of a reduction)."""
    return tuple(1 if i in dims else n for i, n in enumerate(shape))


def unreduce(g: Tensor, shape: tuple, dims: tuple, keepdim: bool) -> Tensor:
    """Reshape a reduction's gradient to its keepdim shape so it broadcasts against ``shape``.

    Axes of ``g`` in front of the reduced shape (the batch prefix of a batched backward,
    Note [Batched gradients]) are kept; a saved output without them works the same.
    """
    if not keepdim and dims:
        gshape = g._data.shape
        lead = len(gshape) - (len(shape) - len(dims))
        g = g.reshape(gshape[:lead] + kept_shape(shape, dims))
    return g
