"""PyTorch's legacy tensor types and constructors, still common in published code.

``tg.FloatTensor([1, 2])``, ``tg.LongTensor(3, 4)``, ``tg.Tensor(3, 4)`` (a size) and
``tg.Tensor([1, 2])`` (data), ``isinstance(x, tg.FloatTensor)``, ``x.type()`` (the
``'torch.FloatTensor'`` strings programs compare against), ``x.type(dtype_or_name)``,
``x.new(...)``, ``x.new_zeros/new_ones/new_empty/new_full/new_tensor``, ``x.is_cuda``,
``x.is_cpu`` and ``x.is_sparse``.

Each legacy type is a class whose metaclass makes ``isinstance`` test the dtype (as
``torch.tensortype`` does): calling one returns a plain :class:`Tensor`, and
``issubclass(tg.FloatTensor, tg.Tensor)`` is False, as in PyTorch.
"""

from __future__ import annotations

import numpy as np

from . import _backend, _dtypes
from .tensor import Tensor

__all__ = [
    "FloatTensor",
    "DoubleTensor",
    "HalfTensor",
    "ByteTensor",
    "CharTensor",
    "ShortTensor",
    "IntTensor",
    "LongTensor",
    "BoolTensor",
    "new_array",
    "type_name",
]

# (legacy name, dtype): the rows every legacy type is generated from.
_TYPES = (
    ("FloatTensor", _dtypes.float32),
    ("DoubleTensor", _dtypes.float64),
    ("HalfTensor", _dtypes.float16),
    ("ByteTensor", _dtypes.uint8),
    ("CharTensor", _dtypes.int8),
    ("ShortTensor", _dtypes.int16),
    ("IntTensor", _dtypes.int32),
    ("LongTensor", _dtypes.int64),
    ("BoolTensor", _dtypes.bool_),
    ("ComplexFloatTensor", np.dtype("complex64")),
    ("ComplexDoubleTensor", np.dtype("complex128")),
)
_NAME_OF = {dtype: name for name, dtype in _TYPES}


def _is_int(x) -> bool:
    return isinstance(x, (int, np.integer)) and not isinstance(x, (bool, np.bool_))


def new_array(args: tuple, dtype, device: str, op: str):
    """The array of the legacy constructor ``op(*args)`` (``torch.Tensor``, ``FloatTensor``,
    ``x.new``): no arguments give an empty 1-d tensor; integers are a size (filled with
    zeros, where PyTorch leaves the memory uninitialised); one sequence, array or Tensor
    is data, converted to ``dtype`` (None: a Tensor keeps its dtype, other data takes the
    default float dtype). A Tensor or NumPy array of that dtype is shared, not copied.

    Raises:
        TypeError: for a scalar, a mix of sizes and data, or a Tensor of another dtype.
        RuntimeError: for a negative size.
    """
    xp = _backend.namespace_for_device(device)
    if not args:
        return xp.empty((0,), dtype or _dtypes.get_default_dtype())
    if all(_is_int(a) for a in args):
        for n in args:
            if n < 0:
                raise RuntimeError(
                    f"{op}: trying to create tensor with negative dimension {int(n)}: "
                    f"{[int(a) for a in args]}"
                )
        return xp.zeros(tuple(int(a) for a in args), dtype or _dtypes.get_default_dtype())
    if len(args) > 1:
        got = ", ".join(type(a).__name__ for a in args)
        raise TypeError(
            f"{op}() received an invalid combination of arguments - got ({got}): pass either "
            "sizes (integers) or one sequence of data"
        )
    (data,) = args
    if isinstance(data, Tensor):
        if dtype is not None and data._data.dtype != dtype:
            raise TypeError(
                f"{op}: expected a tensor of dtype {dtype}, got one of dtype "
                f"{data._data.dtype}; convert it with .to({dtype})"
            )
        return data._data
    if isinstance(data, (bool, int, float, complex, np.generic)):
        raise TypeError(f"{op}(): data must be a sequence (got {type(data).__name__})")
    dtype = dtype or _dtypes.get_default_dtype()
    if isinstance(data, range):
        data = list(data)
    if isinstance(data, np.ndarray) and data.dtype == dtype and xp is np:
        return data
    try:
        array = np.array(data, dtype=dtype)
    except OverflowError:
        raise RuntimeError(
            f"{op}(): value cannot be converted to type {dtype} without overflow"
        ) from None
    except ValueError as e:
        raise ValueError(f"{op}(): cannot build a tensor from this data: {e}") from None
    return xp.asarray(array)


class _LegacyTensorType(type):
    """The metaclass of ``FloatTensor`` & co.: a call builds a Tensor of the type's dtype,
    ``isinstance`` checks a Tensor's dtype (as ``torch.tensortype``)."""

    def __call__(cls, *args, device=None):
        return Tensor._wrap(new_array(args, cls.dtype, str(device or "cpu"), cls.__name__))

    def __instancecheck__(cls, obj) -> bool:
        return (
            isinstance(obj, Tensor)
            and not getattr(obj, "is_sparse", False)
            and obj._data.dtype == cls.dtype
            and _backend.device_of(obj._data) == "cpu"
        )

    def __subclasscheck__(cls, sub) -> bool:
        return sub is cls

    def __repr__(cls) -> str:
        return f"<class 'tapegrad.{cls.__name__}'>"


def _make_type(name, dtype):
    return _LegacyTensorType(
        name, (), {"dtype": dtype, "is_cuda": False, "__module__": "tapegrad", "__doc__": name}
    )


_BY_NAME = {name: _make_type(name, dtype) for name, dtype in _TYPES}
FloatTensor = _BY_NAME["FloatTensor"]
DoubleTensor = _BY_NAME["DoubleTensor"]
HalfTensor = _BY_NAME["HalfTensor"]
ByteTensor = _BY_NAME["ByteTensor"]
CharTensor = _BY_NAME["CharTensor"]
ShortTensor = _BY_NAME["ShortTensor"]
IntTensor = _BY_NAME["IntTensor"]
LongTensor = _BY_NAME["LongTensor"]
BoolTensor = _BY_NAME["BoolTensor"]


def type_name(t: Tensor) -> str:
    """``'torch.FloatTensor'``-style name of a tensor's type (``torch.cuda.`` on a GPU)."""
    dtype = t._data.dtype
    name = _NAME_OF.get(dtype)
    if name is None:
        raise TypeError(f"type(): no legacy tensor type for dtype {dtype}")
    cuda = "cuda." if _backend.device_of(t._data) == "cuda" else ""
    return f"torch.{cuda}{name}"


def _tensor_type(self, dtype=None, non_blocking=False, **kwargs):
    """With no argument, the legacy type name (``'torch.FloatTensor'``); otherwise this tensor
    cast to ``dtype``: a dtype, a legacy type (``tg.LongTensor``) or its name
    (``'torch.LongTensor'``, ``'torch.cuda.FloatTensor'``). Returns self when nothing changes;
    the cast is differentiable.

    >>> import tapegrad as tg
    >>> tg.ones(2).type(), tg.ones(2).type('torch.LongTensor').dtype
    ('torch.FloatTensor', dtype('int64'))
    """
    if dtype is None:
        return type_name(self)
    device = None
    if isinstance(dtype, str):
        parts = dtype.split(".")
        if parts[0] in ("torch", "tapegrad") and len(parts) in (2, 3):
            if len(parts) == 3 and parts[1] == "cuda":
                device = "cuda"
            cls = _BY_NAME.get(parts[-1]) if len(parts) == 2 or device else None
        else:
            cls = None
        if cls is None:
            raise ValueError(f"invalid type: {dtype!r}")
        dtype = cls.dtype
    elif type(dtype) is _LegacyTensorType:
        dtype = dtype.dtype
    else:
        dtype = _dtypes.to_dtype(dtype)
    out = self.to(device) if device is not None else self
    return out.to(dtype)


def _new(self, *args, device=None):
    """``x.new(...)``: the legacy constructor with ``x``'s dtype (and device)."""
    device = str(device) if device is not None else self.device
    return Tensor._wrap(new_array(args, self._data.dtype, device, "new"))


def _new_filled(fill):
    def method(self, *args, size=None, dtype=None, device=None, requires_grad=False):
        if size is not None and args:
            raise TypeError(f"new_{fill}() got multiple values for argument 'size'")
        shape = size if size is not None else args
        if len(shape) == 1 and isinstance(shape[0], (tuple, list)):
            shape = shape[0]
        return _filled(
            self,
            tuple(shape),
            0 if fill == "empty" else int(fill == "ones"),
            dtype,
            device,
            requires_grad,
            f"new_{fill}",
        )

    method.__name__ = f"new_{fill}"
    method.__doc__ = f"A tensor of {fill} of the given size with this tensor's dtype (and device)."
    return method


def _filled(self, shape, value, dtype, device, requires_grad, op):
    for n in shape:
        if not _is_int(n) or n < 0:
            raise ValueError(f"{op}: sizes must be non-negative integers, got {list(shape)}")
    dtype = _dtypes.to_dtype(dtype) or self._data.dtype
    xp = _backend.namespace_for_device(str(device) if device is not None else self.device)
    t = Tensor._wrap(xp.full(tuple(int(n) for n in shape), value, dtype))
    return t.requires_grad_(True) if requires_grad else t


def _new_full(self, size, fill_value, *, dtype=None, device=None, requires_grad=False):
    """A tensor of ``size`` filled with ``fill_value``, with this tensor's dtype (and device)."""
    return _filled(self, tuple(size), fill_value, dtype, device, requires_grad, "new_full")


def _new_tensor(self, data, *, dtype=None, device=None, requires_grad=False):
    """A copy of ``data`` with this tensor's dtype (and device) unless ``dtype`` is given."""
    from .creation import tensor  # noqa: PLC0415

    dtype = _dtypes.to_dtype(dtype) or self._data.dtype
    device = str(device) if device is not None else self.device
    return tensor(data, dtype=dtype, requires_grad=requires_grad, device=device)


Tensor.type = _tensor_type
Tensor.new = _new
Tensor.new_zeros = _new_filled("zeros")
Tensor.new_ones = _new_filled("ones")
Tensor.new_empty = _new_filled("empty")
Tensor.new_full = _new_full
Tensor.new_tensor = _new_tensor
Tensor.is_cuda = property(lambda self: _backend.device_of(self._data) == "cuda")
Tensor.is_meta = property(lambda self: _backend.device_of(self._data) == "meta")
Tensor.is_cuda.__doc__ = "True when the tensor's memory is on a GPU."
Tensor.is_cpu = property(lambda self: _backend.device_of(self._data) == "cpu")
Tensor.is_cpu.__doc__ = "True when the tensor's memory is in host memory (NumPy)."
Tensor.is_sparse = False  # the sparse COO tensor (tapegrad.sparse) overrides it
