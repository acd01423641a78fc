"""Shape ops: reshape/view, flatten/unflatten, transpose/permute/movedim, expand/broadcast_to,
squeeze/unsqueeze, and the copying repeat/tile/flip/roll.

Each result is a NumPy view where NumPy can make one, sharing the input's
version counter, and each gradient is the inverse shape op applied to ``g``.
"""

from __future__ import annotations

import sys

import numpy as np

from .. import _warn
from .._layout import c_order, preserve_order
from ..autograd.graph import BATCH, batched_shape, make_result, mark_view, sum_to, sum_to_array
from ..tensor import Tensor, _check_dim
from ._registry import register
from ._util import shape_arg

__all__ = [
    "reshape",
    "view",
    "transpose",
    "permute",
    "expand",
    "broadcast_to",
    "squeeze",
    "unsqueeze",
    "flatten",
    "unflatten",
    "movedim",
    "repeat",
    "tile",
    "flip",
    "roll",
]


# Note [Views and in-place ops]
# A view shares its base's memory and version counter, holds its root base (the first
# tensor up the chain that is no view) in ``_base``, and its Node remembers the base's
# version (graph.mark_view). Two things follow, as in PyTorch:
# * Writing in place *through* a view (``y[1].mul_(3)``, or ``buf[0][1] = w`` where
#   only ``w`` requires grad) is recorded on the root base as ``index_put(base,
#   positions, new_values)`` and the view becomes that node's elements at
#   ``positions`` (ops/inplace.py, CopySlices).
# * A view taken *before* its base changed in place no longer matches its Node; when
#   it is next used (as an op input or a backward root) it is recorded again as the
#   root's elements it shares memory with (graph.edges_to / graph.VIEW_REFRESH).
# Views consumed before the change keep their Nodes: those need no values, so
# ``y[:, 0] = y[:, 1] * 3`` works. Positions are found by memory address, so any view
# (slices, transposes, reshapes, split) of any layout is handled.


def view_result(out, input, backward, name, array_backward=None):
    """``make_result`` for an op whose result may share ``input``'s memory."""
    if not np.may_share_memory(out, input._data):
        return make_result(out, (input,), backward, name, array_backward=array_backward)
    result = make_result(
        out, (input,), backward, name, view_of=input, array_backward=array_backward
    )
    if result.grad_fn is not None:
        mark_view(result.grad_fn, input)
    return result


@register("reshape")
def reshape(input, *shape):
    """The same elements in a new shape (one size may be -1)."""
    shape = shape_arg(shape, "reshape")
    in_shape = input._data.shape
    if shape and min(shape) < 0:
        _check_inferred(shape, input._data.size)
    try:
        out = input._data.reshape(shape)
    except ValueError:
        raise RuntimeError(
            f"reshape: shape {list(shape)} is invalid for input of shape {list(in_shape)} "
            f"({input._data.size} elements)"
        ) from None

    def backward(g):  # Tensor and array rule (Note [Array backward] in autograd/engine.py)
        return (g.reshape(batched_shape(in_shape)),)

    return view_result(out, input, backward, "ReshapeBackward", backward)


def _check_inferred(shape, size):
    """PyTorch's rules for negative sizes: only -1, once, and not when it is ambiguous."""
    for i, n in enumerate(shape):
        if n < -1:
            raise RuntimeError(
                f"reshape: invalid shape dimension {n} at index {i} of shape {list(shape)}"
            )
    if shape.count(-1) > 1:
        raise RuntimeError(f"reshape: only one dimension can be inferred (shape {list(shape)})")
    if size == 0 and 0 in shape:
        raise RuntimeError(
            f"reshape: cannot reshape tensor of 0 elements into shape {list(shape)} because the "
            "unspecified dimension size -1 can be any value and is ambiguous"
        )


# Note [View or raise]
# ``view`` must share memory: a write through it reaches the input (and back). NumPy's
# reshape silently copies when the strides do not allow a view. PyTorch raises then, and
# so does tapegrad when the input is a view (``x.t().view(-1)``, ``x[:, ::2].view(-1)``)
# of a C-ordered tensor: view ops give the strides torch's give, so torch raises too.
# Some ops lay out their results differently from torch (conv and pool outputs,
# softmax/cat/index_select/reductions of transposed inputs: tests/test_layouts.py lists
# them): torch's result is contiguous and viewable, tapegrad's is not. Such an input (an
# op's result, not a view, not a leaf that requires grad) is given torch's C order in
# place, once, and the view shares that memory, so writes reach it as in torch. A view
# of such a result (a view whose root is not C-ordered) cannot be moved without cutting
# it from its root: it keeps NumPy's copy, with a warning, unless the root is an op's
# private intermediate that nothing else holds (conv1d's output is a view of conv2d's).
_VIEW_ERROR = (
    "view size is not compatible with input tensor's size and stride (at least one dimension "
    "spans across two contiguous subspaces). Use .reshape(...) instead."
)


@register("view")
def view(input, *shape):
    """``input``'s elements in a new shape, sharing its memory (Note [View or raise])."""
    data = input._data
    result = reshape(input, *shape)
    if data.flags.c_contiguous or result._data.size == 0:
        return result
    if np.may_share_memory(result._data, data):
        return result
    root = input._base
    if root is not None and root._data.flags.c_contiguous:
        raise RuntimeError(_VIEW_ERROR)
    if root is not None and sys.getrefcount(root) <= 3:  # input._base, root, the argument
        input._base = None  # an op's private intermediate (conv1d's): nothing else sees it
        root = None
    if root is not None or (input._rg and input.grad_fn is None):
        _warn.warn(
            "view: the input's layout does not allow a view (tapegrad lays this result out "
            "differently from PyTorch); returning a copy, which writes do not reach. Use "
            ".reshape(...) or .contiguous().view(...)",
        )
        return result
    moved = np.ascontiguousarray(data)
    if moved.__class__ is not data.__class__:  # the meta device's array: NumPy's reshape
        return result
    input._data = moved  # torch's layout, once (Note [View or raise])
    return reshape(input, *shape)


@register("transpose")
def transpose(input, dim0, dim1):
    """Swap dimensions ``dim0`` and ``dim1``."""
    nd = input._data.ndim
    d0 = _check_dim(dim0, nd, "transpose")
    d1 = _check_dim(dim1, nd, "transpose")
    if nd == 0:
        return view_result(input._data, input, _passed, "TransposeBackward", _passed)
    out = np.swapaxes(input._data, d0, d1)

    def backward(g):
        # Dims counted from the right hold with or without a batch prefix.
        return (g.transpose(d0 - nd, d1 - nd),)

    def array_backward(g):  # Note [Array backward] in autograd/engine.py
        return (np.swapaxes(g, d0, d1),)

    return view_result(out, input, backward, "TransposeBackward", array_backward)


def _passed(g):
    """The gradient passed on unchanged: a Tensor rule and an array rule at once."""
    return (g,)


Tensor.swapaxes = transpose


@register("permute")
def permute(input, *dims):
    """Reorder dimensions: result dim i is input dim ``dims[i]``."""
    if len(dims) == 1 and isinstance(dims[0], (tuple, list)):
        dims = tuple(dims[0])
    nd = input._data.ndim
    if len(dims) != nd:
        raise RuntimeError(
            f"permute: got {len(dims)} dims {list(dims)} for a tensor with {nd} dims"
        )
    dims = tuple(_check_dim(d, nd, "permute") for d in dims)
    if len(set(dims)) != nd:
        raise RuntimeError(f"permute: repeated dim in {list(dims)}")
    out = np.transpose(input._data, dims)
    inverse = tuple(np.argsort(dims).tolist())

    def backward(g):
        lead = len(BATCH.prefix)  # Note [Batched gradients]
        if lead:
            return (g.permute(tuple(range(lead)) + tuple(lead + d for d in inverse)),)
        return (g.permute(inverse),)

    def array_backward(g):  # Note [Array backward] in autograd/engine.py
        return (np.transpose(g, inverse),)

    return view_result(out, input, backward, "PermuteBackward", array_backward)


def _T(self):
    """All dimensions reversed."""
    return self.permute(tuple(range(self._data.ndim - 1, -1, -1)))


def _mT(self):
    """The last two dimensions swapped (a batch of matrices transposed)."""
    if self._data.ndim < 2:
        raise RuntimeError(
            "tensor.mT is only supported on matrices or batches of matrices. Got "
            f"{self._data.ndim}-D tensor."
        )
    return self.transpose(-2, -1)


Tensor.T = property(_T)
Tensor.mT = property(_mT)
Tensor.mH = property(_mT)  # real dtypes only: the conjugate transpose is the transpose


@register("expand")
def expand(input, *sizes):
    """Broadcast to ``sizes`` (-1 keeps a dimension) without copying.  d/dx = sum_to(g)."""
    sizes = shape_arg(sizes, "expand")
    in_shape = input._data.shape
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
        out = np.broadcast_to(input._data, target)
    except ValueError:
        raise RuntimeError(
            f"expand: cannot expand a tensor of shape {list(in_shape)} to {list(sizes)}"
        ) from None

    def backward(g):
        return (sum_to(g, in_shape),)

    def array_backward(g):  # Note [Array backward] in autograd/engine.py
        return (sum_to_array(g, in_shape),)

    return view_result(out, input, backward, "ExpandBackward", array_backward)


def _identity_view(input):
    return view_result(input._data.view(), input, _passed, "ExpandBackward", _passed)


@register("broadcast_to")
def broadcast_to(input, shape):
    """Same as :func:`expand` with a full shape."""
    return expand(input, shape)


Tensor.expand_as = lambda self, other: expand(self, other.shape)


@register("squeeze")
def squeeze(input, dim=None):
    """Drop dimensions of size 1 (only ``dim`` when given; a no-op if it isn't 1)."""
    in_shape = input._data.shape
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
    nd = input._data.ndim
    try:
        d = _check_dim(dim, nd + 1, "unsqueeze")
    except IndexError:  # the range is of the result's dims: say the input's shape, not a count
        raise IndexError(
            f"unsqueeze: dimension {dim!r} out of range for a tensor of shape "
            f"{list(input._data.shape)} (expected to be in range of [{-nd - 1}, {nd}])"
        ) from None
    shape = input._data.shape[:d] + (1,) + input._data.shape[d:]
    return reshape(input, shape)


@register("flatten")
def flatten(input, start_dim=0, end_dim=-1):
    """Merge dimensions ``start_dim..end_dim`` into one (a 0-d input becomes shape (1,))."""
    shape = input._data.shape
    if not shape:
        return reshape(input, (1,))
    s = _check_dim(start_dim, len(shape), "flatten")
    e = _check_dim(end_dim, len(shape), "flatten")
    if s > e:
        raise RuntimeError(f"flatten: start_dim {start_dim} comes after end_dim {end_dim}")
    return reshape(input, shape[:s] + (int(np.prod(shape[s : e + 1])),) + shape[e + 1 :])


@register("unflatten")
def unflatten(input, dim, sizes):
    """Split dimension ``dim`` into ``sizes`` (one entry may be -1)."""
    shape = input._data.shape
    if not shape:
        raise RuntimeError("unflatten: cannot unflatten a 0-d tensor (it has no dimension)")
    d = _check_dim(dim, len(shape), "unflatten")
    sizes = shape_arg((sizes,), "unflatten")
    for i, n in enumerate(sizes):
        if n < -1:  # torch's check, before the product's
            raise RuntimeError(
                f"unflatten: invalid shape dimension {n} at index {i} of shape {list(sizes)}"
            )
    known = int(np.prod([n for n in sizes if n != -1]))
    if sizes.count(-1) > 1 or (
        -1 not in sizes and known != shape[d] or -1 in sizes and (known == 0 or shape[d] % known)
    ):
        raise RuntimeError(
            f"unflatten: sizes {list(sizes)} don't multiply up to the size {shape[d]} of "
            f"dim {d} of a tensor of shape {list(shape)}"
        )
    return reshape(input, shape[:d] + sizes + shape[d + 1 :])


@register("movedim")
def movedim(input, source, destination):
    """Move dimension(s) ``source`` to position(s) ``destination``; the others keep order."""
    nd = input._data.ndim
    src = source if isinstance(source, (tuple, list)) else (source,)
    dst = destination if isinstance(destination, (tuple, list)) else (destination,)
    if len(src) != len(dst):
        raise RuntimeError(
            f"movedim: source {list(src)} and destination {list(dst)} need the same length"
        )
    src = [_check_dim(d, nd, "movedim") for d in src]
    dst = [_check_dim(d, nd, "movedim") for d in dst]
    if len(set(src)) != len(src) or len(set(dst)) != len(dst):
        raise RuntimeError(f"movedim: repeated dim in {list(src)} or {list(dst)}")
    order = [n for n in range(nd) if n not in src]
    for d, s in sorted(zip(dst, src, strict=True)):
        order.insert(d, s)
    return permute(input, tuple(order)) if nd else input


Tensor.moveaxis = movedim


@register("repeat", function=False)
def repeat(input, *sizes):
    """Tile the tensor ``sizes[i]`` times along dim i (extra leading sizes add dims).

    d/dx: g viewed as (r0, n0, r1, n1, ...) and summed over the repeat axes.
    """
    sizes = shape_arg(sizes, "repeat")
    in_shape = input._data.shape
    if len(sizes) < len(in_shape):
        raise RuntimeError(
            f"repeat: got {len(sizes)} repeat counts for a tensor of shape {list(in_shape)}; "
            "give at least one per dimension"
        )
    if any(r < 0 for r in sizes):
        raise RuntimeError(f"repeat: repeat counts must be non-negative, got {list(sizes)}")
    padded = (1,) * (len(sizes) - len(in_shape)) + in_shape
    out = np.tile(input._data.reshape(padded), sizes)

    pairs = tuple(v for rn in zip(sizes, padded, strict=True) for v in rn)
    repeat_axes = tuple(range(-2 * len(sizes), 0, 2))  # from the right: g may carry a batch prefix

    def backward(g):
        summed = g.reshape(batched_shape(pairs)).sum(dim=repeat_axes)
        return (summed.reshape(batched_shape(in_shape)),)

    return make_result(out, (input,), backward, "RepeatBackward")


@register("tile")
def tile(input, *dims):
    """Like :func:`repeat`, but fewer ``dims`` than dimensions are padded with leading 1s."""
    dims = shape_arg(dims, "tile")
    dims = (1,) * (input._data.ndim - len(dims)) + dims
    return repeat(input, dims)


@register("flip")
def flip(input, *args, dims=None):
    """Reverse the order of elements along ``dims`` (a copy, as in PyTorch).  d/dx = flip(g).

    ``dims`` is a sequence or, as ``Tensor.flip(0, 1)`` takes them, several ints.
    """
    if args:
        dims = args[0] if len(args) == 1 else args
    if dims is None:
        raise TypeError("flip() missing 1 required argument: 'dims'")
    dims = dims if isinstance(dims, (tuple, list)) else (dims,)
    dims = tuple(_check_dim(d, input._data.ndim, "flip") for d in dims)
    data = input._data  # the copy keeps a dense input's strides (Note [Torch's result layouts])
    out = np.flip(data, dims).copy(order=preserve_order(data)) if data.ndim else data.copy()
    # from the right (g may carry a batch prefix); flipping a 0-d tensor is the identity
    back_dims = tuple(d - input._data.ndim for d in dims) if input._data.ndim else ()

    def backward(g):
        return (g.flip(back_dims),)

    return make_result(out, (input,), backward, "FlipBackward")


@register("roll")
def roll(input, shifts, dims=None):
    """Shift elements cyclically along ``dims`` (the flattened tensor when None).

    d/dx = roll(g, -shifts, dims).
    """
    if dims is None:
        if isinstance(shifts, (tuple, list)) and len(shifts) != 1:
            raise RuntimeError(f"roll: {len(shifts)} shifts need as many dims")
        out = c_order(np.roll(input._data, shifts))  # Note [Torch's result layouts]
        neg = [-s for s in shifts] if isinstance(shifts, (tuple, list)) else -shifts
        shape = input._data.shape

        def backward(g):
            if not BATCH.prefix:
                return (g.roll(neg),)
            # roll the flattened input positions, after the batch prefix
            flat = g.reshape(batched_shape((-1,))).roll(neg, -1)
            return (flat.reshape(batched_shape(shape)),)

        return make_result(out, (input,), backward, "RollBackward")
    one = not isinstance(shifts, (tuple, list))
    shift_t = (shifts,) if one else tuple(shifts)
    dims_t = (dims,) if not isinstance(dims, (tuple, list)) else tuple(dims)
    if input._data.ndim == 0:
        raise IndexError("roll: a 0-d tensor has no dimension to roll along; omit dims")
    if len(shift_t) != len(dims_t):
        raise RuntimeError(
            f"roll: shifts {list(shift_t)} and dims {list(dims_t)} need the same length"
        )
    dims = tuple(_check_dim(d, input._data.ndim, "roll") - input._data.ndim for d in dims_t)
    out = c_order(np.roll(input._data, shift_t, axis=dims))  # Note [Torch's result layouts]
    neg = tuple(-s for s in shift_t)

    def backward(g):  # dims count from the right: g may carry a batch prefix
        return (g.roll(neg, dims),)

    return make_result(out, (input,), backward, "RollBackward")


@register("contiguous", function=False)
def contiguous(input, memory_format=None):
    """``input`` itself when its memory is C-contiguous, else a C-contiguous copy (as
    PyTorch; the copy passes the gradient through unchanged)."""
    if input._data.flags.c_contiguous:
        return input
    out = np.ascontiguousarray(input._data)
    return make_result(out, (input,), _passed, "CloneBackward", array_backward=_passed)
