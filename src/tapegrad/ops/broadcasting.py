"""Broadcast-shaped ops: ``broadcast_tensors``, ``broadcast_shapes``, ``sum_to_size``,
``fill`` (out of place), ``combinations`` and the ``H`` property (issue 10 V).
"""

from __future__ import annotations

import itertools

import numpy as np

from ..autograd.graph import make_result
from ..tensor import Tensor
from ._registry import register
from ._util import reduce_grad, shape_arg
from .shape import expand, transpose

__all__ = ["broadcast_tensors", "broadcast_shapes", "sum_to_size", "fill", "combinations"]


def broadcast_shapes(*shapes) -> tuple:
    """The shape that tensors of ``shapes`` broadcast to (ints count as 1-D shapes)."""
    shapes = [(s,) if isinstance(s, (int, np.integer)) else tuple(s) for s in shapes]
    try:
        return tuple(np.broadcast_shapes(*shapes))
    except ValueError:
        raise RuntimeError(
            f"broadcast_shapes: shapes {[list(s) for s in shapes]} cannot be broadcast together"
        ) from None


@register("broadcast_tensors", method=False)
def broadcast_tensors(*tensors):
    """Each tensor expanded (a view) to the common broadcast shape; returns a tuple."""
    if len(tensors) == 1 and isinstance(tensors[0], (list, tuple)):
        tensors = tuple(tensors[0])
    shape = broadcast_shapes(*(t._data.shape for t in tensors))
    return tuple(expand(t, shape) for t in tensors)


@register("sum_to_size")
def sum_to_size(input, *size):
    """``input`` summed over the dims along which ``size`` broadcasts to its shape."""
    size = shape_arg(size, "sum_to_size")
    shape = input._data.shape
    try:
        ok = np.broadcast_shapes(size, shape) == shape
    except ValueError:
        ok = False
    if not ok:
        raise RuntimeError(
            f"sum_to_size: size {list(size)} is not expandable to size {list(shape)}."
        )
    data = input._data
    lead = len(shape) - len(size)
    axes = tuple(range(lead)) + tuple(
        lead + i for i, n in enumerate(size) if n == 1 and shape[lead + i] != 1
    )
    out = data.sum(axis=axes, keepdims=True).reshape(size) if axes else data.reshape(size)

    def backward(g):  # g may carry a batch prefix (Note [Batched gradients])
        prefix = g.shape[: g.ndim - len(size)]
        return (g.reshape(prefix + (1,) * lead + size).expand(prefix + shape),)

    return make_result(out, (input,), backward, "SumToSizeBackward")


@register("fill", method=False)
def fill(input, value):
    """A tensor like ``input`` filled with ``value`` (a number or a 0-d tensor, whose
    gradient is the sum of ``g``); ``input`` gets no gradient."""
    if isinstance(value, Tensor):
        if value._data.ndim:
            raise RuntimeError(
                "fill_ only supports 0-dimension value tensor but got tensor with "
                f"{value._data.ndim} dimensions."
            )
        out = np.full(input._data.shape, value._data, dtype=input._data.dtype)

        def backward(g):  # input: zeros, as PyTorch's (not None)
            zeros = Tensor._wrap(np.zeros(g._data.shape, input._data.dtype))
            return (zeros, reduce_grad(g, value))

        return make_result(out, (input, value), backward, "FillBackward")
    return Tensor._wrap(np.full(input._data.shape, value, dtype=input._data.dtype))


@register("combinations", method=False)
def combinations(input, r=2, with_replacement=False):
    """The length-``r`` combinations of the elements of a 1-D ``input``, one per row
    (``itertools.combinations`` order), shape ``(count, r)``; ``r=0`` gives an empty 1-D."""
    if input._data.ndim != 1:
        raise RuntimeError(
            f"combinations: expect a 1D vector, but got shape {list(input._data.shape)}"
        )
    if r < 0:
        raise RuntimeError(f"combinations: expect a non-negative number, but got {r}")
    if r == 0:
        return input[:0]
    pick = itertools.combinations_with_replacement if with_replacement else itertools.combinations
    index = np.array(list(pick(range(input._data.shape[0]), r)), dtype=np.int64).reshape(-1, r)
    return input[Tensor._wrap(index)]


def _H(self):
    """The conjugate transpose of a matrix (the transpose: tapegrad is real-valued)."""
    nd = self._data.ndim
    if nd == 0:
        return self
    if nd != 2:
        hint = " For batches of matrices, consider using tensor.mH" if nd > 2 else ""
        raise RuntimeError(
            f"tensor.H is only supported on matrices (2-D tensors). Got {nd}-D tensor.{hint}"
        )
    return transpose(self, 0, 1)


Tensor.H = property(_H)
