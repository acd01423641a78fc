"""Tensor conversion and construction methods that PyTorch programs call: ``type``,
``half``, ``short``, ``byte``, ``char``, ``type_as``, ``new_zeros``/``new_ones``/
``new_full``/``new_empty``/``new_tensor``, ``element_size``, ``nelement``.

Casts go through ``Tensor.to``, so a float-to-float change stays differentiable.
"""

from __future__ import annotations

import numpy as np

from . import _dtypes
from .tensor import Tensor

__all__ = []

# torch.<Name>Tensor type strings and the dtypes they stand for.
_TYPE_NAMES = {
    "torch.FloatTensor": _dtypes.float32,
    "torch.DoubleTensor": _dtypes.float64,
    "torch.HalfTensor": _dtypes.float16,
    "torch.LongTensor": _dtypes.int64,
    "torch.IntTensor": _dtypes.int32,
    "torch.ShortTensor": _dtypes.int16,
    "torch.CharTensor": _dtypes.int8,
    "torch.ByteTensor": _dtypes.uint8,
    "torch.BoolTensor": _dtypes.bool_,
}
_NAME_OF = {v: k for k, v in _TYPE_NAMES.items()}


def _type(self, dtype=None, non_blocking=False, **_):
    """With no argument, the type string (``'torch.FloatTensor'``); otherwise a cast to
    ``dtype`` (a dtype or a type string such as ``'torch.DoubleTensor'``)."""
    if dtype is None:
        return _NAME_OF.get(self._data.dtype, f"torch.{self._data.dtype.name}")
    if isinstance(dtype, str) and dtype in _TYPE_NAMES:
        dtype = _TYPE_NAMES[dtype]
    return self.to(dtype)


def _new(self, data, dtype, requires_grad):
    t = Tensor._wrap(data)
    if requires_grad:
        t.requires_grad_(True)
    return t


def _shape(size):
    if len(size) == 1 and isinstance(size[0], (tuple, list)):
        return tuple(size[0])
    return tuple(size)


def _dtype_or(self, dtype):
    return _dtypes.to_dtype(dtype) or self._data.dtype


def new_zeros(self, *size, dtype=None, device=None, requires_grad=False, **_):
    """Zeros of ``size`` with this tensor's dtype (unless ``dtype``)."""
    return _new(self, np.zeros(_shape(size), _dtype_or(self, dtype)), dtype, requires_grad)


def new_ones(self, *size, dtype=None, device=None, requires_grad=False, **_):
    """Ones of ``size`` with this tensor's dtype (unless ``dtype``)."""
    return _new(self, np.ones(_shape(size), _dtype_or(self, dtype)), dtype, requires_grad)


def new_empty(self, *size, dtype=None, device=None, requires_grad=False, **_):
    """An uninitialised tensor of ``size`` with this tensor's dtype (unless ``dtype``)."""
    return _new(self, np.empty(_shape(size), _dtype_or(self, dtype)), dtype, requires_grad)


def new_full(self, size, fill_value, *, dtype=None, device=None, requires_grad=False, **_):
    """``fill_value`` in a tensor of ``size`` with this tensor's dtype (unless ``dtype``)."""
    data = np.full(_shape((size,)), fill_value, _dtype_or(self, dtype))
    return _new(self, data, dtype, requires_grad)


def new_tensor(self, data, *, dtype=None, device=None, requires_grad=False, **_):
    """A copy of ``data`` with this tensor's dtype (unless ``dtype``)."""
    array = np.array(data._data if isinstance(data, Tensor) else data, dtype=_dtype_or(self, dtype))
    return _new(self, array, dtype, requires_grad)


Tensor.type = _type
Tensor.half = lambda self, memory_format=None: self.to(_dtypes.float16)
Tensor.short = lambda self, memory_format=None: self.to(_dtypes.int16)
Tensor.byte = lambda self, memory_format=None: self.to(_dtypes.uint8)
Tensor.char = lambda self, memory_format=None: self.to(_dtypes.int8)
Tensor.type_as = lambda self, other: self.to(other._data.dtype)
Tensor.element_size = lambda self: self._data.dtype.itemsize
Tensor.nelement = lambda self: int(self._data.size)
Tensor.new_zeros = new_zeros
Tensor.new_ones = new_ones
Tensor.new_empty = new_empty
Tensor.new_full = new_full
Tensor.new_tensor = new_tensor
