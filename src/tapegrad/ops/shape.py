"""Shape ops: reshape/view, transpose/permute, expand/broadcast_to, squeeze/unsqueeze.

Each result is a NumPy view where NumPy can make one, sharing the input's
version counter, and each gradient is the inverse shape op applied to ``g``.
"""

from __future__ import annotations

import numpy as np

from ..autograd.graph import BATCH, batched_shape, make_result, sum_to
from ..tensor import Tensor, _check_dim
from ._registry import register
from ._util import shape_arg

__all__ = ["reshape", "view", "transpose", "permute", "expand", "broadcast_to", "squeeze", "unsqueeze"]


def _view_result(out, input, backward, name):
    view_of = input if np.may_share_memory(out, input.data) else None
    return make_result(out, (input,), backward, name, view_of=view_of)


@register("reshape")
def reshape(input, *shape):
    """The same elements in a new shape (one size may be -1)."""
    shape = shape_arg(shape, "reshape")
    in_shape = input.data.shape
    try:
        out = input.data.reshape(shape)
    except ValueError:
        raise RuntimeError(
            f"reshape: shape {list(shape)} is invalid for input of shape {list(in_shape)} "
            f"({input.data.size} elements)"
        ) from None

    def backward(g):
        return (g.reshape(batched_shape(in_shape)),)

    return _view_result(out, input, backward, "ReshapeBackward")


@register("view")
def view(input, *shape):
    """Same as :func:`reshape` (tapegrad's arrays may be viewed in any layout NumPy allows)."""
    return reshape(input, *shape)


@register("transpose")
def transpose(input, dim0, dim1):
    """Swap dimensions ``dim0`` and ``dim1``."""
    nd = input.data.ndim
    if nd == 0:
        return _view_result(input.data, input, lambda g: (g,), "TransposeBackward")
    d0 = _check_dim(dim0, nd, "transpose")
    d1 = _check_dim(dim1, nd, "transpose")
    out = np.swapaxes(input.data, d0, d1)

    def backward(g):
        # Dims counted from the right hold with or without a batch prefix.
        return (g.transpose(d0 - nd, d1 - nd),)

    return _view_result(out, input, backward, "TransposeBackward")


Tensor.swapaxes = transpose


@register("permute")
def permute(input, *dims):
    """Reorder dimensions: result dim i is input dim ``dims[i]``."""
    if len(dims) == 1 and isinstance(dims[0], (tuple, list)):
        dims = tuple(dims[0])
    nd = input.data.ndim
    if len(dims) != nd:
        raise RuntimeError(
            f"permute: got {len(dims)} dims {list(dims)} for a tensor with {nd} dims"
        )
    dims = tuple(_check_dim(d, nd, "permute") for d in dims)
    if len(set(dims)) != nd:
        raise RuntimeError(f"permute: repeated dim in {list(dims)}")
    out = np.transpose(input.data, dims)
    inverse = tuple(np.argsort(dims).tolist())

    def backward(g):
        lead = len(BATCH.prefix)  # Note [Batched gradients]
        if lead:
            return (g.permute(tuple(range(lead)) + tuple(lead + d for d in inverse)),)
        return (g.permute(inverse),)

    return _view_result(out, input, backward, "PermuteBackward")


def _T(self):
    """All dimensions reversed."""
    return self.permute(tuple(range(self.data.ndim - 1, -1, -1)))


def _mT(self):
    """The last two dimensions swapped (a batch of matrices transposed)."""
    if self.data.ndim < 2:
        raise RuntimeError(f"mT: needs at least 2 dims, got shape {list(self.shape)}")
    return self.transpose(-2, -1)


Tensor.T = property(_T)
Tensor.mT = property(_mT)


@register("expand")
def expand(input, *sizes):
    """Broadcast to ``sizes`` (-1 keeps a dimension) without copying.  d/dx = sum_to(g)."""
    sizes = shape_arg(sizes, "expand")
    in_shape = input.data.shape
    if len(sizes) < len(in_shape):
        raise RuntimeError(
            f"expand: the number of sizes ({len(sizes)}) must be at least the number of "
            f"dims ({len(in_shape)}) of a tensor of shape {list(in_shape)}"
        )
    lead = len(sizes) - len(in_shape)
    target = tuple(
        (in_shape[i - lead] if (s == -1 and i >= lead) else s) for i, s in enumerate(sizes)
    )
    if target == in_shape:
        return input if not input._rg else _identity_view(input)
    try:
        out = np.broadcast_to(input.data, target)
    except ValueError:
        raise RuntimeError(
            f"expand: cannot expand a tensor of shape {list(in_shape)} to {list(sizes)}"
        ) from None

    def backward(g):
        return (sum_to(g, in_shape),)

    return _view_result(out, input, backward, "ExpandBackward")


def _identity_view(input):
    return _view_result(input.data.view(), input, lambda g: (g,), "ExpandBackward")


@register("broadcast_to")
def broadcast_to(input, shape):
    """Same as :func:`expand` with a full shape."""
    return expand(input, shape)


Tensor.expand_as = lambda self, other: expand(self, other.shape)


@register("squeeze")
def squeeze(input, dim=None):
    """Drop dimensions of size 1 (only ``dim`` when given; a no-op if it isn't 1)."""
    in_shape = input.data.shape
    if dim is None:
        shape = tuple(n for n in in_shape if n != 1)
    else:
        dims = dim if isinstance(dim, (tuple, list)) else (dim,)
        dims = {_check_dim(d, len(in_shape), "squeeze") for d in dims}
        shape = tuple(n for i, n in enumerate(in_shape) if not (i in dims and n == 1))
    return reshape(input, shape)


@register("unsqueeze")
def unsqueeze(input, dim):
    """Insert a dimension of size 1 at ``dim`` (in ``[-ndim-1, ndim]``)."""
    nd = input.data.ndim
    d = _check_dim(dim, nd + 1, "unsqueeze")
    shape = input.data.shape[:d] + (1,) + input.data.shape[d:]
    return reshape(input, shape)
