"""Tensor methods and functions PyTorch programs use around the math: ``Tensor.type()``,
``type_as``, ``new_zeros``/``new_ones``/``new_full``/``new_empty``/``new_tensor``, the
memory queries (``stride``, ``element_size``, ``nelement``, ``is_cuda``, ``get_device``,
``pin_memory``), and ``tapegrad.equal``/``numel``/``is_floating_point``. Bound to Tensor
here (plain methods, not graph ops; ``type``/``type_as`` cast through ``to``)."""

from __future__ import annotations

import numpy as np

from . import _dtypes
from .tensor import Tensor

__all__ = ["equal", "numel", "is_floating_point"]

# torch's legacy tensor type names <-> dtypes
_TYPE_NAMES = {
    "float32": "FloatTensor",
    "float64": "DoubleTensor",
    "float16": "HalfTensor",
    "bfloat16": "BFloat16Tensor",
    "int64": "LongTensor",
    "int32": "IntTensor",
    "int16": "ShortTensor",
    "int8": "CharTensor",
    "uint8": "ByteTensor",
    "bool": "BoolTensor",
}
_BY_NAME = {name: dtype for dtype, name in _TYPE_NAMES.items()}


def type(self, dtype=None, non_blocking=False, **kwargs):  # noqa: A001 - torch's name
    """``x.type()``: the legacy type name (``'torch.FloatTensor'``); ``x.type(dtype)`` (a dtype
    or such a name): ``x.to(dtype)``, differentiable as ``to``.

    >>> import tapegrad as tg
    >>> x = tg.ones(2)
    >>> x.type(), (x > 0).type(tg.float).dtype
    ('torch.FloatTensor', dtype('float32'))
    """
    if dtype is None:
        name = self._data.dtype.name
        return "torch." + _TYPE_NAMES.get(name, f"{name}Tensor")
    if isinstance(dtype, str) and dtype.rsplit(".", 1)[-1] in _BY_NAME:
        dtype = _dtypes.to_dtype(_BY_NAME[dtype.rsplit(".", 1)[-1]])
    return self.to(dtype)


def equal(input, other) -> bool:
    """True when both tensors have the same shape and elements (dtypes may differ).

    Raises:
        TypeError: if either argument is not a Tensor.
    """
    for name, t in (("input", input), ("other", other)):
        if not isinstance(t, Tensor):
            raise TypeError(
                f"equal(): argument '{name}' must be Tensor, not {builtins_type(t).__name__}"
            )
    return input.shape == other.shape and bool(np.array_equal(input._data, other._data))


builtins_type = __builtins__["type"] if isinstance(__builtins__, dict) else __builtins__.type


def type_as(self, other):
    """``self.to(other.dtype)``."""
    return self.to(other.dtype)


def numel(input) -> int:
    """The number of elements of ``input``."""
    return input.numel()


def is_floating_point(input) -> bool:
    """True for a floating point tensor (the dtypes that can require grad)."""
    return input.is_floating_point()


# -- new_* : tensors with self's dtype and device (as torch) ---------------------------------


def _new(self, maker, size, dtype, device, requires_grad):
    from . import creation  # noqa: PLC0415 - creation sits beside this module

    if len(size) == 1 and isinstance(size[0], (tuple, list)):
        size = tuple(size[0])
    dtype = self.dtype if dtype is None else dtype
    t = getattr(creation, maker)(*size, dtype=dtype, device=device or self.device)
    return t.requires_grad_(True) if requires_grad else t


def new_zeros(self, *size, dtype=None, device=None, requires_grad=False):
    """Zeros of ``size`` with this tensor's dtype and device (unless given).

    >>> import tapegrad as tg
    >>> tg.ones(2, dtype=tg.float64).new_zeros(3).dtype
    dtype('float64')
    """
    return _new(self, "zeros", size, dtype, device, requires_grad)


def new_ones(self, *size, dtype=None, device=None, requires_grad=False):
    """Ones of ``size`` with this tensor's dtype and device (unless given)."""
    return _new(self, "ones", size, dtype, device, requires_grad)


def new_empty(self, *size, dtype=None, device=None, requires_grad=False):
    """Uninitialised values of ``size`` with this tensor's dtype and device (unless given)."""
    return _new(self, "empty", size, dtype, device, requires_grad)


def new_full(self, size, fill_value, *, dtype=None, device=None, requires_grad=False):
    """``fill_value`` in a tensor of ``size`` with this tensor's dtype and device."""
    from .creation import full  # noqa: PLC0415

    t = full(size, fill_value, dtype=self.dtype if dtype is None else dtype,
             device=device or self.device)  # fmt: skip
    return t.requires_grad_(True) if requires_grad else t


def new_tensor(self, data, *, dtype=None, device=None, requires_grad=False):
    """A copy of ``data`` with this tensor's dtype (unless given), outside any graph."""
    return Tensor(data, dtype=self.dtype if dtype is None else dtype,
                  requires_grad=requires_grad, device=device or self.device)  # fmt: skip


# -- memory queries ------------------------------------------------------------------------


def stride(self, dim=None):
    """Strides in elements (not bytes), as torch: ``ones(2, 3).stride() == (3, 1)``."""
    item = self._data.itemsize
    strides = tuple(s // item for s in self._data.strides)
    if dim is None:
        return strides
    from .tensor import _check_dim  # noqa: PLC0415

    return strides[_check_dim(dim, self._data.ndim, "stride")]


def element_size(self) -> int:
    """Bytes per element."""
    return self._data.itemsize


def nelement(self) -> int:
    return self.numel()


def get_device(self) -> int:
    """-1 for a CPU tensor, else the CUDA ordinal (0)."""
    return -1 if self.device.type == "cpu" else 0


def pin_memory(self, device=None):
    """Returns self: there is no pinned host memory without CUDA."""
    return self


def is_pinned(self, device=None) -> bool:
    return False


def share_memory_(self):
    """Returns self (worker processes get tensors through the DataLoader's queues)."""
    return self


for _fn in (type, type_as, equal, new_zeros, new_ones, new_empty, new_full, new_tensor,
            stride, element_size, nelement, get_device, pin_memory, is_pinned,
            share_memory_):  # fmt: skip
    setattr(Tensor, _fn.__name__, _fn)
Tensor.is_cuda = property(lambda self: self.device.type == "cuda", doc="True on a GPU.")
del _fn
