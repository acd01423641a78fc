"""Tensors of a given memory layout and in-place resizing: ``empty_strided``,
``Tensor.new_empty_strided``, ``empty_permuted``, ``Tensor.resize_``/``resize_as_``,
``Tensor.storage_offset`` (Note [Storage of a tensor] in ops/strided.py), and the memory
format constants (``contiguous_format``, ``channels_last``, ...) that ``memory_format=``
takes: accepted everywhere PyTorch takes them; tapegrad's copies are C-ordered whatever the
format (values, shapes and gradients do not depend on it).

Values of the ``empty`` forms are unspecified, as in PyTorch (here: zeros).
"""

from __future__ import annotations

import numpy as np

from .creation import _finish, _float_dtype, _size
from .ops.strided import storage_of
from .tensor import Tensor

__all__ = [
    "empty_strided",
    "empty_permuted",
    "resize_as_",
    "memory_format",
    "contiguous_format",
    "preserve_format",
    "channels_last",
    "channels_last_3d",
]


class memory_format:  # noqa: N801 - PyTorch's name
    """A memory layout name (``tg.contiguous_format`` ...), as ``torch.memory_format``."""

    __slots__ = ("name",)

    def __init__(self, name):
        self.name = name

    def __repr__(self):
        return f"tapegrad.{self.name}"


contiguous_format = memory_format("contiguous_format")
preserve_format = memory_format("preserve_format")
channels_last = memory_format("channels_last")
channels_last_3d = memory_format("channels_last_3d")


def empty_strided(
    size, stride, *, dtype=None, layout=None, device="cpu", requires_grad=False, pin_memory=False
) -> Tensor:
    """An uninitialised tensor of ``size`` whose ``stride()`` is ``stride`` (in elements).

    >>> import tapegrad as tg
    >>> tg.empty_strided((2, 3), (1, 2)).stride()
    (1, 2)
    """
    size, stride = _size((size,), "empty_strided"), tuple(int(s) for s in stride)
    if len(size) != len(stride):
        raise RuntimeError(
            f"empty_strided: mismatch in length of strides and shape: size {list(size)}, "
            f"stride {list(stride)}"
        )
    if any(s < 0 for s in stride):
        raise RuntimeError(f"empty_strided: negative strides are not supported: {list(stride)}")
    dtype = _float_dtype(dtype)
    n = 0 if 0 in size else 1 + sum((k - 1) * s for k, s in zip(size, stride))
    storage = np.zeros(n, dtype)
    array = np.lib.stride_tricks.as_strided(
        storage, size, tuple(s * storage.itemsize for s in stride)
    )
    return _finish(array, requires_grad)


def new_empty_strided(
    self, size, stride, *, dtype=None, layout=None, device=None, requires_grad=False, **kw
) -> Tensor:
    """:func:`empty_strided` with ``self``'s dtype unless ``dtype`` is given."""
    dtype = self._data.dtype if dtype is None else dtype
    return empty_strided(size, stride, dtype=dtype, requires_grad=requires_grad)


def empty_permuted(
    size, physical_layout, *, dtype=None, layout=None, device="cpu", requires_grad=False, **kw
) -> Tensor:
    """An uninitialised tensor of ``size`` laid out in memory in the dim order
    ``physical_layout`` (outermost first): ``empty_permuted((2, 3), (1, 0))`` is column-major.

    >>> import tapegrad as tg
    >>> tg.empty_permuted((1, 3, 5), (2, 0, 1)).stride()
    (3, 1, 3)
    """
    size = _size((size,), "empty_permuted")
    order = tuple(int(d) for d in physical_layout)
    if sorted(order) != list(range(len(size))):
        raise RuntimeError(
            f"empty_permuted: physical_layout {list(order)} is not a permutation of the "
            f"{len(size)} dims of size {list(size)}"
        )
    physical = np.zeros([size[d] for d in order], _float_dtype(dtype))
    return _finish(physical.transpose(np.argsort(order)), requires_grad)


def storage_offset(self) -> int:
    """The index of ``self``'s first element in the storage it views (0 for a tensor that
    owns its memory; ``x[2:].storage_offset() == 2``)."""
    return int(storage_of(self._data)[1])


def resize_(self, *sizes, memory_format=None) -> Tensor:
    """Give ``self`` a new (contiguous) shape, in place, keeping its storage: the elements
    are the storage's, read from ``self``'s storage offset; a larger size grows the storage
    (new elements unspecified, here zeros).

    Raises:
        RuntimeError: when ``self`` requires grad (as PyTorch: resizing is not differentiable).
    """
    if self._rg:
        raise RuntimeError("cannot resize variables that require grad")
    size = _size(sizes, "resize_")
    flat, offset = storage_of(self._data)
    n = int(np.prod(size))
    if offset + n > flat.size:
        grown = np.zeros(offset + n, flat.dtype)
        grown[: flat.size] = flat
        flat = grown
    self._data = flat[offset : offset + n].reshape(size)
    self._size = None  # Note [Size cache]
    self._vc.bump("resize_")
    return self


def resize_as_(input, the_template, *, memory_format=None) -> Tensor:
    """:func:`resize_` to ``the_template``'s shape."""
    return resize_(input, tuple(the_template.shape))


Tensor.new_empty_strided = new_empty_strided
Tensor.storage_offset = storage_offset
Tensor.resize_ = resize_
Tensor.resize_as_ = resize_as_
