"""``tg.promote_types`` and ``tg.result_type``: PyTorch's type promotion, complex included.

Dtypes fall in four categories, bool < integer < floating < complex. Two dtypes of one
category promote as NumPy does (int8 + uint8 -> int16, float32 + float64 -> float64);
across categories the higher category wins, except that a complex dtype met with a wider
float widens to the complex of that float's width (float64 + complex64 -> complex128).

``result_type`` ranks its operands as PyTorch does: tensors with dimensions, then 0-d
tensors, then Python numbers (whose dtype is the default: int64, the default float, the
default complex). A lower rank only matters when its category is higher, and then keeps
the higher rank's float width (``float32 tensor + 1j`` is complex64).

>>> import tapegrad as tg
>>> tg.promote_types(tg.float64, tg.complex64), tg.result_type(tg.ones(2), 1j)
(dtype('complex128'), dtype('complex64'))
"""

from __future__ import annotations

import numpy as np

from . import _dtypes
from .tensor import Tensor

__all__ = ["promote_types", "result_type", "can_cast"]


def _category(dtype) -> int:
    kind = dtype.kind
    if kind == "b":
        return 0
    if kind in "iu":
        return 1
    if kind == "c":
        return 3
    return 2  # f, and bfloat16 (kind V)


def can_cast(from_, to) -> bool:
    """Whether torch's casting rules allow ``from_`` -> ``to``: never to a lower category
    (complex > floating > integral > bool), any width within one."""
    for pos, (arg, value) in enumerate((("from_", from_), ("to", to)), 1):
        if not isinstance(value, np.dtype):
            raise TypeError(
                f"can_cast(): argument '{arg}' (position {pos}) must be torch.dtype, "
                f"not {type(value).__name__}"
            )
    return _category(from_) <= _category(to)


def _to_complex(dtype):
    return _dtypes.complex128 if dtype == _dtypes.float64 else _dtypes.complex64


def promote_types(type1, type2):
    """The dtype both ``type1`` and ``type2`` convert to without losing category or width."""
    a, b = _dtypes.to_dtype(type1), _dtypes.to_dtype(type2)
    ca, cb = _category(a), _category(b)
    if a != b and (a.itemsize == 1 and a.kind in "fV" or b.itemsize == 1 and b.kind in "fV"):
        from ._float8 import torch_name  # noqa: PLC0415 - Note [float8 as torch]

        raise RuntimeError(
            "Promotion for Float8 Types is not supported, attempted to promote "
            f"{torch_name(a)} and {torch_name(b)}"
        )
    if ca == cb:
        if a == b:
            return a
        if ca == 2 and (a.kind == "V" or b.kind == "V"):  # bfloat16 with float16 -> float32
            other = b if a.kind == "V" else a
            return _dtypes.float32 if other == _dtypes.float16 else other
        return np.promote_types(a, b)
    hi, lo = (a, b) if ca > cb else (b, a)
    if hi.kind == "c" and lo == _dtypes.float64:
        return _dtypes.complex128
    return hi


def _combine(higher, lower):
    """PyTorch's combine_categories: ``higher`` ranks above ``lower`` (either may be None)."""
    if higher is None:
        return lower
    if lower is None:
        return higher
    if higher.kind == "c":
        return higher
    if lower.kind == "c":
        return _to_complex(higher) if _category(higher) == 2 else lower
    if _category(higher) == 2:
        return higher
    if higher.kind == "b" or _category(lower) == 2:
        return promote_types(higher, lower)
    return higher


def _scalar_dtype(x):
    if isinstance(x, bool):
        return _dtypes.bool_
    if isinstance(x, int):
        return _dtypes.int64
    if isinstance(x, float):
        return _dtypes.get_default_dtype()
    if isinstance(x, complex):
        return _dtypes.get_default_complex_dtype()
    raise TypeError(f"result_type(): expected a Tensor or a Python number, got {type(x).__name__}")


def result_type(tensor, other):
    """The dtype an arithmetic op of ``tensor`` and ``other`` (Tensors or Python numbers)
    returns, ranked as PyTorch ranks them (see the module docstring)."""
    return result_type_of(tensor, other)


def result_type_of(*operands):
    """:func:`result_type` of any number of operands (``clamp``'s input and bounds)."""
    groups = [None, None, None]  # dim tensors, 0-d tensors, Python numbers
    for x in operands:
        if isinstance(x, Tensor):
            rank, dt = (0 if x._data.ndim else 1), x._data.dtype
        else:
            rank, dt = 2, _scalar_dtype(x)
        groups[rank] = dt if groups[rank] is None else promote_types(groups[rank], dt)
    return _combine(groups[0], _combine(groups[1], groups[2]))
