"""Tensors from other objects, sharing memory where torch does: ``asarray``, ``frombuffer``,
``from_dlpack``/``to_dlpack``, and the deprecated inclusive ``range``.

Note [asarray shares]
``tg.asarray(obj)`` returns a tensor that shares ``obj``'s memory whenever nothing forces a
copy, as torch's: a Tensor comes back *itself* (with ``requires_grad=`` applied to it in
place, as torch does), a NumPy array is wrapped (``from_numpy``), a buffer-protocol object
(bytes, bytearray, memoryview) is read as raw bytes of ``dtype`` (the default dtype when
not given, not the buffer's own format: torch's rule). A dtype change or ``copy=True``
copies; ``copy=False`` where a copy is needed is torch's ValueError. Sequences and scalars
always copy (``tg.tensor``), NumPy scalars keep their dtype.
"""

from __future__ import annotations

import math

import numpy as np

from . import _dtypes, _warn
from .creation import from_numpy, tensor
from .ops._dtype_errors import scalar as _scalar_name
from .tensor import Tensor

__all__ = ["asarray", "frombuffer", "from_dlpack", "to_dlpack", "range"]

_BUFFERS = (bytes, bytearray, memoryview)


def asarray(obj, *, dtype=None, device=None, copy=None, requires_grad=None):
    """``obj`` as a tensor, sharing memory when it can (Note [asarray shares]).

    >>> import numpy as np, tapegrad as tg
    >>> a = np.zeros(2)
    >>> t = tg.asarray(a)
    >>> a[0] = 5.0
    >>> t
    tensor([5., 0.], dtype=tapegrad.float64)

    Raises:
        ValueError: ``copy=False`` where a copy is needed (a dtype change, a sequence).
        RuntimeError: ``requires_grad=True`` for an integer or bool result.
    """
    dtype = _dtypes.to_dtype(dtype)
    if isinstance(obj, Tensor):
        return _from_tensor(obj, dtype, device, copy, requires_grad)
    if isinstance(obj, np.ndarray):
        out = _convert(from_numpy(obj), obj.dtype, dtype, copy, "numpy array")
        if copy and out.numpy() is obj:
            out = from_numpy(obj.copy())
        return _finish(out, device, requires_grad)
    if isinstance(obj, _BUFFERS):
        out = frombuffer(obj, dtype=dtype or _dtypes.get_default_dtype())
        return _finish(out.clone() if copy else out, device, requires_grad)
    if isinstance(obj, np.generic):
        if copy is False:
            raise RuntimeError(
                "can't alias NumPy scalars. Either remove copy=False or transform it in a ndarray. "
            )
        dtype = obj.dtype if dtype is None else dtype
    if copy is False:
        raise ValueError("can't alias arbitrary sequence into a tensor.")
    return _finish(tensor(obj, dtype=dtype), device, requires_grad)


def _from_tensor(obj, dtype, device, copy, requires_grad):
    if requires_grad is None and obj.requires_grad:
        _warn.warn(
            "torch.asarray: unspecified requires_grad now defaults to obj.requires_grad "
            "instead of False. Pass requires_grad=False explicitly to get the old behavior "
            "and silence this warning."
        )
    source = obj if requires_grad is not False else obj.detach()
    if dtype is not None and dtype != obj.dtype:  # a conversion, in the graph as torch's
        _convert(obj, obj.dtype, dtype, copy, "tensor")  # copy=False: torch's ValueError
        out = source.to(dtype)
    elif copy:  # a clone, in the graph as torch's
        out = source.clone()
    else:  # shared: requires_grad= applies to obj itself, as torch
        out = obj
    if requires_grad is not None and out.is_leaf:
        out.requires_grad_(requires_grad)
    return _to(out, device)


def _convert(t, have, want, copy, what):
    if want is None or want == have:
        return t
    if copy is False:
        raise ValueError(
            f"can't alias {what} with dtype '{_scalar_name(have)}' into dtype "
            f"'{_scalar_name(want)}'."
        )
    return Tensor._wrap(t._data.astype(want))  # a conversion is not in the graph (torch)


def _to(t, device):
    return t if device is None else t.to(device)


def _finish(t, device, requires_grad):
    t = _to(t, device)
    if requires_grad:
        t.requires_grad_(True)
    return t


def frombuffer(buffer, *, dtype, count=-1, offset=0, requires_grad=False):
    """A 1-D tensor over the bytes of a buffer-protocol object, sharing its memory.

    Raises:
        ValueError: torch's messages for an empty buffer or ``count=0``, an ``offset`` past
            the end, a length that is not a multiple of the element size, or a ``count``
            longer than the buffer.
    """
    dtype = _dtypes.to_dtype(dtype)
    view = memoryview(buffer)
    nbytes, size = view.nbytes, dtype.itemsize
    if nbytes == 0 or count == 0:
        raise ValueError(f"both buffer length ({nbytes}) and count ({count}) must not be 0")
    if not 0 <= offset < nbytes:
        raise ValueError(
            f"offset ({offset} bytes) must be non-negative and no greater than buffer length "
            f"({nbytes} bytes) minus 1"
        )
    if count < 0:
        if (nbytes - offset) % size:
            raise ValueError(
                f"buffer length ({nbytes - offset} bytes) after offset ({offset} bytes) must be "
                f"a multiple of element size ({size})"
            )
        count = (nbytes - offset) // size
    elif offset + count * size > nbytes:
        raise ValueError(
            f"requested buffer length ({count} * {size} bytes) after offset ({offset} bytes) "
            f"must not be greater than actual buffer length ({nbytes} bytes)"
        )
    if view.readonly:
        _warn.warn(
            "The given buffer is not writable, and PyTorch does not support non-writable "
            "tensors. This means you can write to the underlying (supposedly non-writable) "
            "buffer using the tensor. You may want to copy the buffer to protect its data or "
            "make it writable before converting it to a tensor."
        )
    array = np.frombuffer(view.cast("B") if view.ndim != 1 or view.format != "B" else view,
                          dtype=dtype, count=count, offset=offset)  # fmt: skip
    out = from_numpy(array)
    return out.requires_grad_(True) if requires_grad else out


class _Capsule:
    """A DLPack capsule (``to_dlpack``'s result) dressed as a producer, for NumPy's
    ``from_dlpack``, which takes producers only."""

    def __init__(self, capsule):
        self.capsule = capsule

    def __dlpack__(self, **kwargs):
        return self.capsule

    def __dlpack_device__(self):
        return (1, 0)  # kDLCPU, device 0


def from_dlpack(ext_tensor):
    """A tensor sharing the memory of a DLPack producer (an object with ``__dlpack__``: a
    NumPy array, a torch tensor on the CPU, ...) or of a capsule from :func:`to_dlpack`."""
    if isinstance(ext_tensor, Tensor):
        return ext_tensor
    if type(ext_tensor).__name__ == "PyCapsule":
        ext_tensor = _Capsule(ext_tensor)
    array = np.from_dlpack(ext_tensor)
    if not array.flags.writeable:  # NumPy marks unversioned DLPack imports read-only; torch's
        array = _writable(array)  # tensors over the same memory are writable
    return from_numpy(array)


class _Interface:
    """Holds a producer's array alive and exposes its memory as writable."""

    def __init__(self, array):
        self.array = array
        self.__array_interface__ = dict(array.__array_interface__)
        self.__array_interface__["data"] = (self.__array_interface__["data"][0], False)


def _writable(array):
    return np.asarray(_Interface(array))


def to_dlpack(tensor):
    """A DLPack capsule over ``tensor``'s memory (``tensor.__dlpack__()``)."""
    return tensor._data.__dlpack__()


def range(start=0, end=None, step=1, *, dtype=None, device=None, requires_grad=False):  # noqa: A001
    """``start, start + step, ..., end`` with ``end`` included; the default float dtype
    unless ``dtype`` is given. Deprecated in torch (use ``arange``), with its warning.

    Raises:
        TypeError: no ``end``.
        RuntimeError: ``step`` is 0 or points away from ``end``.
    """
    if end is None:
        raise TypeError('range() missing 1 required positional arguments: "end"')
    _warn.warn(
        "torch.range is deprecated and will be removed in a future release because its "
        "behavior is inconsistent with Python's range builtin. Instead, use torch.arange, "
        "which produces values in [start, end)."
    )
    if step == 0:
        raise RuntimeError("step must be nonzero")
    if (end - start) * step < 0:
        raise RuntimeError("upper bound and lower bound inconsistent with step sign")
    n = math.floor((end - start) / step) + 1
    values = start + np.arange(n, dtype=np.float64) * step
    dtype = _dtypes.to_dtype(dtype) or _dtypes.get_default_dtype()
    out = tensor(values.astype(dtype), device=device or "cpu")
    return out.requires_grad_(True) if requires_grad else out
