"""More shape and view ops, each composed of the primitive ones (reshape, permute, index,
cat, stack, split): t, ravel, swapaxes/swapdims, select, narrow_copy, unbind, the stacks
(hstack, vstack, dstack, column_stack, row_stack), atleast_1d/2d/3d, the splits (hsplit,
vsplit, dsplit, tensor_split), rot90, fliplr, flipud, view_as, reshape_as, expand_as,
unfold, repeat_interleave, kron, cartesian_prod, block_diag, meshgrid.
"""

from __future__ import annotations

import operator

import numpy as np

from ..autograd.graph import make_result
from ..tensor import Tensor, _check_dim
from ._registry import register
from ._util import as_tensor
from .indexing import index_select
from .joining import _split_sizes, _tensor_list, cat, pad, stack
from .shape import flip, reshape, transpose

__all__ = [
    "t",
    "ravel",
    "swapaxes",
    "swapdims",
    "select",
    "narrow_copy",
    "unbind",
    "hstack",
    "vstack",
    "dstack",
    "column_stack",
    "row_stack",
    "atleast_1d",
    "atleast_2d",
    "atleast_3d",
    "hsplit",
    "vsplit",
    "dsplit",
    "tensor_split",
    "rot90",
    "fliplr",
    "flipud",
    "view_as",
    "reshape_as",
    "expand_as",
    "unfold",
    "repeat_interleave",
    "kron",
    "cartesian_prod",
    "block_diag",
    "meshgrid",
]


@register("t")
def t(input):
    """The transpose of a tensor of at most 2 dims (0-d and 1-D come back as they are)."""
    nd = input._data.ndim
    if nd > 2:
        raise RuntimeError(f"t() expects a tensor with <= 2 dimensions, but self is {nd}D")
    return transpose(input, 0, 1) if nd == 2 else reshape(input, input._data.shape)


@register("ravel")
def ravel(input):
    """The elements as a 1-D tensor."""
    return reshape(input, (-1,))


@register("swapaxes")
def swapaxes(input, axis0, axis1):
    """:func:`transpose` under NumPy's name."""
    for d in (axis0, axis1):
        _check_dim(d, max(input._data.ndim, 1), "swapaxes")
    return transpose(input, axis0, axis1)


@register("swapdims")
def swapdims(input, dim0, dim1):
    """:func:`transpose` under another PyTorch name."""
    for d in (dim0, dim1):
        _check_dim(d, max(input._data.ndim, 1), "swapdims")
    return transpose(input, dim0, dim1)


@register("select")
def select(input, dim, index):
    """The slice at ``index`` along ``dim`` (that dim removed), a view."""
    nd = input._data.ndim
    if nd == 0:
        raise IndexError("select() cannot be applied to a 0-dim tensor.")
    d = _check_dim(dim, nd, "select")
    n = input._data.shape[d]
    if not -n <= index < n:
        raise IndexError(
            f"select(): index {index} out of range for tensor of size "
            f"{list(input._data.shape)} at dimension {d}"
        )
    return input[(slice(None),) * d + (int(index),)]


@register("narrow_copy")
def narrow_copy(input, dim, start, length):
    """A copy of :func:`narrow`."""
    if input._data.ndim == 0:
        raise RuntimeError("narrow_copy() cannot be applied to a 0-dim tensor.")
    return input.narrow(dim, start, length).clone()


@register("unbind")
def unbind(input, dim=0):
    """The slices along ``dim``, as a tuple."""
    nd = input._data.ndim
    if nd == 0:
        raise IndexError("unbind: dimension specified as 0 but tensor has no dimensions")
    d = _check_dim(dim, nd, "unbind")
    n = input._data.shape[d]
    if n == 0:
        return ()
    return tuple(p.squeeze(d) for p in _split_sizes(input, [1] * n, d))


def _atleast(tensors, n, op):
    single = isinstance(tensors, Tensor)
    if not single and isinstance(tensors, (list, tuple)) and not tensors:
        return ()  # as torch: atleast_1d() and atleast_1d([]) give ()
    ts = [tensors] if single else _tensor_list(tensors, op)
    out = []
    for x in ts:
        shape = x._data.shape
        if len(shape) < n:
            if n == 3 and len(shape) == 2:
                shape = shape + (1,)
            elif n == 3 and len(shape) == 1:
                shape = (1,) + shape + (1,)
            else:
                shape = (1,) * (n - len(shape)) + shape
            x = reshape(x, shape)
        out.append(x)
    return out[0] if single else tuple(out)


def atleast_1d(*tensors):
    """Each tensor with at least 1 dim (0-d becomes shape (1,))."""
    return _atleast(tensors[0] if len(tensors) == 1 else tensors, 1, "atleast_1d")


def atleast_2d(*tensors):
    """Each tensor with at least 2 dims (leading 1s added)."""
    return _atleast(tensors[0] if len(tensors) == 1 else tensors, 2, "atleast_2d")


def atleast_3d(*tensors):
    """Each tensor with at least 3 dims, as NumPy: (n,) -> (1, n, 1), (m, n) -> (m, n, 1)."""
    return _atleast(tensors[0] if len(tensors) == 1 else tensors, 3, "atleast_3d")


register("atleast_1d", method=False)(atleast_1d)
register("atleast_2d", method=False)(atleast_2d)
register("atleast_3d", method=False)(atleast_3d)


@register("hstack", method=False)
def hstack(tensors):
    """Concatenate along dim 1 (dim 0 for 1-D tensors)."""
    ts = _atleast(tensors, 1, "hstack")
    return cat(ts, 0 if ts[0]._data.ndim == 1 else 1)


@register("vstack", method=False)
def vstack(tensors):
    """Concatenate along dim 0, after making each tensor at least 2-D."""
    return cat(_atleast(tensors, 2, "vstack"), 0)


@register("row_stack", method=False)
def row_stack(tensors):
    """Alias of :func:`vstack`."""
    return vstack(tensors)


@register("dstack", method=False)
def dstack(tensors):
    """Concatenate along dim 2, after making each tensor at least 3-D."""
    return cat(_atleast(tensors, 3, "dstack"), 2)


@register("column_stack", method=False)
def column_stack(tensors):
    """Stack 0-d/1-D tensors as columns (and concatenate 2-D ones along dim 1)."""
    ts = []
    for x in _tensor_list(tensors, "column_stack"):
        if x._data.ndim <= 1:
            x = reshape(x, (x._data.size, 1))
        ts.append(x)
    return cat(ts, 1)


def _sections(n, spec, op):
    """Piece sizes of ``tensor_split``: a count of near-equal pieces or a list of cut points."""
    if isinstance(spec, Tensor):
        spec = spec._data.tolist() if spec._data.ndim else int(spec._data)
    if isinstance(spec, (int, np.integer)):
        k = int(spec)
        if k <= 0:
            raise RuntimeError(f"{op}: number of sections must be larger than 0, got {k}")
        q, r = divmod(n, k)
        return [q + 1] * r + [q] * (k - r)
    cuts = [min(max(int(c) if c >= 0 else int(c) + n, 0), n) for c in spec]
    bounds = [0] + cuts + [n]
    return [max(b - a, 0) for a, b in zip(bounds[:-1], bounds[1:])], bounds


@register("tensor_split")
def tensor_split(input, indices_or_sections, dim=0):
    """Split into ``n`` near-equal pieces, or at the given indices, along ``dim`` (views)."""
    nd = input._data.ndim
    if nd == 0:
        raise RuntimeError(
            "tensor_split expected at least a 1-dimensional tensor, but got a tensor with 0 dims"
        )
    d = _check_dim(dim, nd, "tensor_split")
    n = input._data.shape[d]
    sizes = _sections(n, indices_or_sections, "tensor_split")
    if isinstance(sizes, tuple):  # cut points: pieces may overlap-free but clamp
        _, bounds = sizes
        key = (slice(None),) * d
        return tuple(input[key + (slice(a, max(a, b)),)] for a, b in zip(bounds[:-1], bounds[1:]))
    return tuple(_split_sizes(input, sizes, d))


def _hvd_split(input, spec, dim, op, min_dims):
    nd = input._data.ndim
    if nd < min_dims:
        raise RuntimeError(
            f"torch.{op} requires a tensor with at least {min_dims} dimension, but got a "
            f"tensor with {nd} dimensions!"
        )
    if isinstance(spec, (int, np.integer)) and input._data.shape[dim] % int(spec):
        raise RuntimeError(
            f"torch.{op} attempted to split along dimension {dim}, but the size of the "
            f"dimension {input._data.shape[dim]} is not divisible by the split_size {spec}!"
        )
    return tensor_split(input, spec, dim)


@register("hsplit")
def hsplit(input, indices_or_sections):
    """:func:`tensor_split` along dim 1 (dim 0 for 1-D); equal sections must divide evenly."""
    return _hvd_split(input, indices_or_sections, 1 if input._data.ndim > 1 else 0, "hsplit", 1)


@register("vsplit")
def vsplit(input, indices_or_sections):
    """:func:`tensor_split` along dim 0 of a tensor of at least 2 dims."""
    return _hvd_split(input, indices_or_sections, 0, "vsplit", 2)


@register("dsplit")
def dsplit(input, indices_or_sections):
    """:func:`tensor_split` along dim 2 of a tensor of at least 3 dims."""
    return _hvd_split(input, indices_or_sections, 2, "dsplit", 3)


@register("rot90")
def rot90(input, k=1, dims=(0, 1)):
    """Rotate by 90° ``k`` times in the plane ``dims`` (from the first toward the second)."""
    nd = input._data.ndim
    if len(dims) != 2:
        raise RuntimeError(f"rot90: expected total rotation dims == 2, but got dims = {len(dims)}")
    if nd < 2:
        raise RuntimeError(f"rot90: expected total dims >= 2, but got total dims = {nd}")
    d0, d1 = (_check_dim(d, nd, "rot90") for d in dims)
    if d0 == d1:
        raise RuntimeError(f"rot90: expected rotation dims to be different, got {d0} and {d1}")
    k = int(k) % 4
    if k == 1:
        return transpose(flip(input, (d1,)), d0, d1)
    if k == 2:
        return flip(input, (d0, d1))
    if k == 3:
        return flip(transpose(input, d0, d1), (d1,))
    return reshape(input, input._data.shape)


@register("fliplr")
def fliplr(input):
    """Reverse dim 1 (the columns)."""
    if input._data.ndim < 2:
        raise RuntimeError("fliplr: input must be >= 2-d.")
    return flip(input, (1,))


@register("flipud")
def flipud(input):
    """Reverse dim 0 (the rows)."""
    if input._data.ndim < 1:
        raise RuntimeError("flipud: input must be >= 1-d.")
    return flip(input, (0,))


@register("view_as", function=False)
def view_as(input, other):
    """``input.view(other.shape)``."""
    return input.view(other.shape)


@register("reshape_as", function=False)
def reshape_as(input, other):
    """``input.reshape(other.shape)``."""
    return reshape(input, other.shape)


@register("expand_as", function=False)
def expand_as(input, other):
    """``input.expand(other.shape)``."""
    return input.expand(other.shape)


@register("unfold", function=False)
def unfold(input, dimension, size, step):
    """Sliding windows of ``size`` every ``step`` along ``dimension``, as a new last dim:
    shape (..., (n − size) // step + 1, ..., size)."""
    nd = input._data.ndim
    d = _check_dim(dimension, max(nd, 1), "unfold")
    n = input._data.shape[d] if nd else 1
    if size < 0 or size > n:
        raise RuntimeError(
            f"unfold: maximum size for tensor at dimension {d} is {n} but size is {size}"
        )
    if step <= 0:
        raise RuntimeError(f"unfold: step is {step} but must be > 0")
    if nd == 0:
        return reshape(input, (1,))
    count = (n - size) // step + 1
    idx = (np.arange(count)[:, None] * step + np.arange(size)[None, :]).reshape(-1)
    shape = input._data.shape
    data = np.take(input._data, idx, axis=d).reshape(shape[:d] + (count, size) + shape[d + 1 :])
    data = np.moveaxis(data, d + 1, -1)
    dn = d - nd  # counted from the right (Note [Batched gradients])

    def backward(g):
        return (_unfold_backward(g, n, dn, size, step),)

    # Like PyTorch's UnfoldBackward, the rule keeps only sizes: no saved tensor.
    return make_result(data, (input,), backward, "UnfoldBackward")


def _unfold_backward(grad, n, dim, size, step):
    """The adjoint of ``unfold``: windows (last dim of ``grad``) summed back into a dim
    ``dim`` (negative, of the result) of size ``n``. Its rule is ``unfold``."""
    g = np.moveaxis(grad._data, -1, dim)  # (..., count, size, ...)
    ax = g.ndim + dim - 1
    count = g.shape[ax]
    g = g.reshape(g.shape[:ax] + (count * size,) + g.shape[ax + 2 :])
    idx = (np.arange(count)[:, None] * step + np.arange(size)[None, :]).reshape(-1)
    out = np.zeros(g.shape[:ax] + (n,) + g.shape[ax + 1 :], g.dtype)
    np.add.at(np.moveaxis(out, ax, 0), idx, np.moveaxis(g, ax, 0))

    def backward(gg):
        return (unfold(gg, dim, size, step),)

    return make_result(out, (grad,), backward, "UnfoldBackwardBackward")


@register("repeat_interleave")
def repeat_interleave(input, repeats=None, dim=None, *, output_size=None):
    """Repeat each element ``repeats`` times (an int or a tensor, one count per element)
    along ``dim`` (the flattened input when None). With only a tensor of counts, the
    indices ``i`` repeated ``counts[i]`` times."""
    if repeats is None:  # repeat_interleave(counts)
        counts = input._data
        return Tensor._wrap(np.repeat(np.arange(counts.shape[0]), counts).astype(np.int64))
    x = input.reshape(-1) if dim is None else input
    if x._data.ndim == 0:
        raise IndexError(f"repeat_interleave: dim {dim} given for a tensor with no dimensions")
    d = 0 if dim is None else _check_dim(dim, x._data.ndim, "repeat_interleave")
    n = x._data.shape[d]
    if not isinstance(repeats, Tensor):
        # torch takes an int or a tensor of counts: a list, a float or a bool is a TypeError
        try:
            if isinstance(repeats, bool):
                raise TypeError
            repeats = operator.index(repeats)
        except TypeError:
            raise TypeError(
                f"repeat_interleave(): repeats must be an int or a Tensor, "
                f"not {type(repeats).__name__}"
            ) from None
    reps = repeats._data if isinstance(repeats, Tensor) else np.asarray(repeats)
    if reps.ndim and reps.size != 1 and reps.shape[0] != n:
        raise RuntimeError(
            f"repeat_interleave: repeats must have the same size as input along dim, got "
            f"{reps.shape[0]} repeats for size {n}"
        )
    if np.any(reps < 0):
        raise RuntimeError("repeat_interleave: repeats can not be negative")
    if not isinstance(repeats, Tensor) and reps.size == 1:
        # An int count: a view and a copy, as in PyTorch (no index array is saved, so
        # a second backward runs through it).
        r = int(reps.reshape(-1)[0])
        shape = x._data.shape
        wide = x.unsqueeze(d + 1).expand(shape[: d + 1] + (r,) + shape[d + 1 :])
        return wide.reshape(shape[:d] + (n * r,) + shape[d + 1 :])
    idx = np.repeat(np.arange(n), reps.reshape(-1) if reps.size != 1 else int(reps.reshape(-1)[0]))
    return index_select(x, d, Tensor._wrap(idx.astype(np.int64)))


@register("kron")
def kron(input, other):
    """The Kronecker product: blocks ``input[i] * other`` (dims aligned from the right)."""
    a = as_tensor(input, "kron")
    b = as_tensor(other, "kron")
    nd = max(a._data.ndim, b._data.ndim)
    a = reshape(a, (1,) * (nd - a._data.ndim) + a._data.shape)
    b = reshape(b, (1,) * (nd - b._data.ndim) + b._data.shape)
    # (a0, 1, a1, 1, ...) * (1, b0, 1, b1, ...) -> (a0 b0, a1 b1, ...)
    sa = [s for n in a._data.shape for s in (n, 1)]
    sb = [s for n in b._data.shape for s in (1, n)]
    prod = reshape(a, tuple(sa)) * reshape(b, tuple(sb))
    return reshape(prod, tuple(x * y for x, y in zip(a._data.shape, b._data.shape)))


@register("meshgrid", method=False)
def meshgrid(*tensors, indexing="ij"):
    """Coordinate grids from 1-D tensors (``indexing='ij'`` (default) or ``'xy'``)."""
    ts = _tensor_list(
        tensors[0] if len(tensors) == 1 and not isinstance(tensors[0], Tensor) else tensors,
        "meshgrid",
    )
    if indexing not in ("ij", "xy"):
        raise RuntimeError(f"meshgrid: indexing must be one of 'xy' or 'ij', got {indexing!r}")
    for x in ts:
        if x._data.ndim > 1:
            raise RuntimeError(f"meshgrid: expected 0D or 1D tensors, got shape {list(x.shape)}")
    ts = [reshape(x, (-1,)) for x in ts]
    swap = indexing == "xy" and len(ts) >= 2
    if swap:
        ts[0], ts[1] = ts[1], ts[0]
    shape = tuple(x._data.shape[0] for x in ts)
    out = []
    for i, x in enumerate(ts):
        view = [1] * len(ts)
        view[i] = shape[i]
        out.append(reshape(x, tuple(view)).expand(shape))
    if swap:
        out[0], out[1] = out[1], out[0]
    return tuple(out)


@register("cartesian_prod", method=False)
def cartesian_prod(*tensors):
    """All combinations of the elements of 1-D tensors, as rows (a 1-D result for one)."""
    for x in tensors:
        if x._data.ndim != 1:
            raise RuntimeError(
                f"cartesian_prod: expects 1D tensors, but got shape {list(x._data.shape)}"
            )
    if len(tensors) == 1:
        return tensors[0] * 1
    grids = meshgrid(*tensors, indexing="ij")
    return stack([g.reshape(-1) for g in grids], 1)


@register("block_diag", method=False)
def block_diag(*tensors):
    """A block-diagonal matrix from 0-d, 1-D (one row) or 2-D blocks."""
    blocks = []
    for i, x in enumerate(tensors):
        x = as_tensor(x, "block_diag")
        if x._data.ndim > 2:
            raise RuntimeError(
                f"torch.block_diag: Input tensors must have 2 or fewer dimensions. "
                f"Input {i} has {x._data.ndim} dimensions"
            )
        blocks.append(reshape(x, (1, -1) if x._data.ndim < 2 else x._data.shape))
    if not blocks:
        return Tensor._wrap(np.zeros((1, 0), np.float32))
    cols = sum(b._data.shape[1] for b in blocks)
    rows, left = [], 0
    for b in blocks:
        r, c = b._data.shape
        rows.append(pad(b, (left, cols - left - c)))
        left += c
    return cat(rows, 0)
