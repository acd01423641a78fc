"""Tensor methods and functions PyTorch programs use around the math: ``Tensor.type()``
and ``tapegrad.equal``. Bound to Tensor here (plain methods, not graph ops)."""

from __future__ import annotations

import numpy as np

from . import _dtypes
from .tensor import Tensor

__all__ = ["equal"]

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

Tensor.type = type
Tensor.equal = equal
