"""Tensor methods and functions PyTorch programs use around the math: ``type_as``, the
memory queries (``stride``, ``element_size``, ``nelement``, ``get_device``,
``pin_memory``), and ``tapegrad.numel``/``is_floating_point``. Bound to Tensor
here (plain methods, not graph ops; ``type_as`` casts through ``to``). ``Tensor.type``,
``new``/``new_*`` and ``is_cuda`` live with the legacy tensor types in ``legacy.py``;
``equal`` is a registered op (ops/misc_math.py)."""

from __future__ import annotations

from .tensor import Tensor

__all__ = ["numel", "is_floating_point"]


def type_as(self, other):
    """``self.to(other.dtype)``."""
    return self.to(other.dtype)


def numel(input) -> int:
    """The number of elements of ``input``."""
    return input.numel()


def is_floating_point(input) -> bool:
    """True for a floating point tensor (the dtypes that can require grad)."""
    return input.is_floating_point()


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
    """Returns self (worker processes get tensors through the DataLoader's queues); a meta
    tensor has no memory to share (torch's RuntimeError)."""
    if self.device == "meta":
        raise RuntimeError("_share_fd_: only available on CPU")
    return self


for _fn in (type_as, stride, element_size, nelement, get_device, pin_memory, is_pinned,
            share_memory_):  # fmt: skip
    setattr(Tensor, _fn.__name__, _fn)
del _fn
