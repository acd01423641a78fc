"""Broadcasting: broadcast_shapes, and the ops broadcast_tensors, sum_to_size, Tensor.H.

broadcast_tensors expands every input to the common shape (gradient: summed back);
sum_to_size sums a tensor down to a shape it broadcasts from (gradient: expanded back);
H is the conjugate transpose of a matrix, the transpose for tapegrad's real dtypes.
"""

from __future__ import annotations

import operator

import numpy as np

from .. import _warn
from ..autograd.graph import sum_to
from ..tensor import Tensor
from ._registry import register
from ._util import shape_arg

__all__ = ["broadcast_shapes", "broadcast_tensors"]


def broadcast_shapes(*shapes) -> tuple:
    """The shape that tensors of ``shapes`` broadcast to (ints count as 1-D shapes)."""
    shapes = [(s,) if isinstance(s, (int, np.integer)) else tuple(s) for s in shapes]
    return _broadcast_shape(shapes)


@register("broadcast_tensors", method=False)
def broadcast_tensors(*tensors):
    """Every tensor expanded to the shape they broadcast to together, in a tuple."""
    for i, t in enumerate(tensors):
        if not isinstance(t, Tensor):  # torch's TypeError, a list of tensors included
            raise TypeError(
                f"broadcast_tensors(): expected Tensor as element {i} in argument 0, "
                f"but got {type(t).__name__}"
            )
    shape = _broadcast_shape([t._data.shape for t in tensors])
    return tuple(t if t._data.shape == shape else t.expand(shape) for t in tensors)


def _broadcast_shape(shapes):
    """The shape ``shapes`` broadcast to, else torch's errors: a negative size is a ValueError,
    a mismatch names the first pair of sizes that disagree, counted from the right. In
    Python where NumPy refuses (torch takes shapes of more than NumPy's 64 dims)."""
    try:  # the common case at NumPy's speed (the Python loop below costs 5 us more)
        return np.broadcast_shapes(*shapes)
    except (ValueError, TypeError):
        pass
    shapes = [tuple(operator.index(n) for n in s) for s in shapes]  # a float size: TypeError
    if any(n < 0 for s in shapes for n in s):
        raise ValueError("Attempting to broadcast a dimension with negative length!")
    ndim = max((len(s) for s in shapes), default=0)
    padded = [(1,) * (ndim - len(s)) + s for s in shapes]
    for d in range(ndim - 1, -1, -1):
        sizes = [s[d] for s in padded if s[d] != 1]
        for n in sizes[1:]:
            if n != sizes[0]:
                raise RuntimeError(
                    f"The size of tensor a ({sizes[0]}) must match the size of tensor b ({n}) "
                    f"at non-singleton dimension {d}"
                )
    return tuple(next((n for n in sizes if n != 1), 1) for sizes in zip(*padded, strict=True))


@register("sum_to_size", function=False)
def sum_to_size(input, *size):
    """``input`` summed over the dims along which ``size`` broadcasts to its shape."""
    size = shape_arg(size, "sum_to_size")
    shape = input._data.shape
    ok = len(size) <= len(shape) and all(
        s in (1, n) for s, n in zip(size[::-1], shape[::-1], strict=False)
    )
    if not ok:
        raise RuntimeError(f"size {{{list(size)}}} is not expandable to size {{{list(shape)}}}.")
    return sum_to(input, size)


def _H(self):
    """The conjugate transpose of a matrix (the transpose for real dtypes)."""
    ndim = self._data.ndim
    if ndim == 0:
        _warn.warn("Tensor.H is deprecated on 0-D tensors. Consider using x.conj().")
        return self
    if ndim != 2:
        raise RuntimeError(
            f"tensor.H is only supported on matrices (2-D tensors). Got {ndim}-D tensor."
        )
    return self.transpose(0, 1)


Tensor.H = property(_H)
