"""``as_strided`` and ``as_strided_scatter``: views and writes by (size, stride, offset) over
a tensor's storage, as PyTorch defines them.

Note [Storage of a tensor]
tapegrad keeps no storage object: a tensor's array is a NumPy array, and a view's array is
a NumPy view whose ``.base`` chain ends at the array that owns the memory. That owner is
the storage: its elements, in memory order, are what PyTorch's ``storage()`` holds, and
a tensor's ``storage_offset()`` and ``stride()`` are its array's pointer and strides
measured in elements from the owner's start. ``as_strided`` therefore reads what torch
reads: ``x[5:15].as_strided((2,), (1,), 0)`` is the first two elements of the base.
"""

from __future__ import annotations

import numpy as np

from ..tensor import Tensor
from ._registry import register
from ._util import as_tensor, shape_arg
from .indexing import index_grad, scatter_back
from .shape import view_result
from .view_scatter import scatter_positions

__all__ = ["as_strided", "as_strided_scatter", "storage_of", "positions"]


def storage_of(array):
    """``(flat, offset)``: the 1-D array of the storage that ``array`` views (in memory order,
    of ``array``'s dtype) and ``array``'s first element's index in it (Note [Storage of a
    tensor]). An array over memory NumPy cannot lay flat is its own storage (a copy)."""
    root = array
    while True:
        base = root.base
        if not isinstance(base, np.ndarray):  # as_strided's results hold a DummyArray
            base = getattr(base, "base", None) if hasattr(base, "__array_interface__") else None
        if not isinstance(base, np.ndarray):
            break
        root = base
    item = array.dtype.itemsize
    if not (root.flags.c_contiguous or root.flags.f_contiguous) or root.nbytes % item:
        flat = np.ascontiguousarray(array).reshape(-1)
        return flat, 0
    flat = root.reshape(-1, order="A")
    if flat.dtype != array.dtype:
        flat = flat.view(np.uint8).view(array.dtype)
    start = flat.__array_interface__["data"][0]
    offset = (array.__array_interface__["data"][0] - start) // item if array.size else 0
    return flat, offset


def _strides(array) -> tuple:
    item = array.dtype.itemsize
    return tuple(s // item for s in array.strides)


def positions(shape, strides, offset) -> np.ndarray:
    """The storage index of every element of a (shape, strides, offset) geometry (int64)."""
    pos = np.full(shape, offset, dtype=np.int64)
    for d, (n, s) in enumerate(zip(shape, strides)):
        pos += (np.arange(n, dtype=np.int64) * s).reshape((n,) + (1,) * (len(shape) - d - 1))
    return pos


def _check_geometry(op, size, stride, offset, n, itemsize):
    if len(size) != len(stride):
        raise RuntimeError(
            f"{op}: mismatch in length of strides and shape: size {list(size)} has "
            f"{len(size)} dims, stride {list(stride)} has {len(stride)}"
        )
    if any(s < 0 for s in stride):
        raise RuntimeError(f"{op}: negative strides are not supported, got {list(stride)}")
    if any(s < 0 for s in size):
        raise RuntimeError(f"{op}: negative sizes are not supported, got {list(size)}")
    if offset < 0:
        raise RuntimeError(f"{op}: negative storage offset {offset} is not supported")
    need = 0 if 0 in size else offset + 1 + sum((k - 1) * s for k, s in zip(size, stride))
    if need > n:
        raise RuntimeError(
            f"{op}: sizes {list(size)}, strides {list(stride)}, storage offset {offset}, and "
            f"itemsize {itemsize} requiring a storage size of {need * itemsize} are out of "
            f"bounds for storage of size {n * itemsize}"
        )


@register("as_strided")
def as_strided(input, size, stride, storage_offset=None):
    """A view of ``input``'s storage with the given sizes, strides (in elements) and storage
    offset (default: ``input``'s own), as ``torch.as_strided``.

    The gradient scatters ``g`` into a zero storage (positions written twice add up) and
    reads ``input``'s elements back from it; where ``input``'s own elements overlap in
    memory, each gets the storage value divided by how many elements share it (as
    PyTorch's ``as_strided_backward``). As in PyTorch, storage elements outside ``input``
    (a view reaching back into its base) get no gradient through ``input``.

    Raises:
        RuntimeError: when the view reaches outside the storage, or for negative strides.
    """
    size, stride = shape_arg((size,), "as_strided"), shape_arg((stride,), "as_strided")
    data = input._data
    flat, own = storage_of(data)
    offset = own if storage_offset is None else int(storage_offset)
    _check_geometry("as_strided", size, stride, offset, flat.size, data.dtype.itemsize)
    item = data.dtype.itemsize
    out = np.lib.stride_tricks.as_strided(
        flat[offset:] if offset < flat.size else flat[:0],
        size,
        tuple(s * item for s in stride),
        writeable=flat.flags.writeable,
    )
    n = flat.size
    out_pos = positions(size, stride, offset)
    in_pos = positions(data.shape, _strides(data), own)
    count = np.bincount(in_pos.reshape(-1), minlength=n) if in_pos.size else None
    overlap = count is not None and count.max() > 1

    def backward(g):  # batch-aware through the indexing adjoints (Note [Batched gradients])
        storage = scatter_back(g, (n,), (out_pos,), True)
        if overlap:
            storage = storage / Tensor._wrap(np.maximum(count, 1).astype(g._data.dtype))
        return (index_grad(storage, (in_pos,), True, "AsStridedBackwardBackward"),)

    return view_result(out, input, backward, "AsStridedBackward")


@register("as_strided_scatter")
def as_strided_scatter(input, src, size, stride, storage_offset=None):
    """A copy of ``input`` (laid out as ``input``) with ``src`` written into the view
    ``as_strided(size, stride, storage_offset)`` of that copy, as torch's.

    d/dinput: ``g`` where ``src`` did not land, zero where it did; d/dsrc: ``g`` read at the
    positions ``src`` was written to.
    """
    size, stride = shape_arg((size,), "as_strided_scatter"), shape_arg((stride,), "")
    src = as_tensor(src, "as_strided_scatter")
    data = input._data
    clone = np.copy(data, order="K")  # torch's clone keeps a dense layout's strides
    n = clone.size
    offset = 0 if storage_offset is None else int(storage_offset)
    _check_geometry("as_strided_scatter", size, stride, offset, n, data.dtype.itemsize)
    in_pos = positions(clone.shape, _strides(clone), 0).reshape(-1)
    element = np.empty(n, dtype=np.int64)  # storage index -> C-order element of input
    element[in_pos] = np.arange(n, dtype=np.int64)
    index = element[positions(size, stride, offset)]
    return scatter_positions(input, src, index, "as_strided_scatter", "AsStridedScatterBackward")
