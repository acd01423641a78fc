"""Python ints next to integer tensors, and fill values, as PyTorch converts them.

Note [Numbers beyond an integer dtype]
NumPy refuses a Python int outside an integer array's range (``uint8 + (-1)``,
``int8 + 200``: OverflowError) and compares it exactly (``uint8 == 256`` is False).
PyTorch casts the number to the tensor's dtype as C does, modulo 2**bits (torch 2.13:
``uint8 + (-1)`` is 255, ``int8 + 200`` is -56, ``uint8 == 256`` is ``uint8 == 0``),
for arithmetic, remainders, floor division, comparisons and bitwise ops, in place too.
Numbers beyond uint64/int64 stay an OverflowError, as in torch. Arithmetic catches
NumPy's OverflowError and retries with :func:`wrap_int` (nothing on the hot path);
comparisons wrap before they compare (NumPy raises nothing there).

A *fill* value (``masked_fill``, ``fill_``) is checked instead, as torch's
``c10::overflows``: outside the dtype's range it is torch's RuntimeError "value cannot
be converted to type uint8_t without overflow"; unsigned dtypes take negatives down to
``-max`` (two's complement, ``fill_(-1)`` is 255).
"""

from __future__ import annotations

import numpy as np

from ._dtype_errors import _SCALAR  # torch's scalar-type names (Float, Long, ...)

__all__ = ["check_fill_value", "fill_number", "scalar_type_name", "wrap_int", "wrap_ints"]

_C_NAMES = {
    "uint8": "uint8_t",
    "int8": "int8_t",
    "int16": "int16_t",
    "int32": "int",
    "int64": "int64_t",
    "uint16": "uint16_t",
    "uint32": "uint32_t",
    "uint64": "uint64_t",
    "float16": "c10::Half",
    "bfloat16": "c10::BFloat16",
    "float32": "float",
    "float64": "double",
}


def wrap_int(value, data):
    """``value`` cast to ``data``'s integer dtype modulo 2**bits when it is a Python int
    (not bool) in [-2**63, 2**64) and ``data`` an integer array; else ``value`` unchanged."""
    if value.__class__ is not int:
        return value
    dtype = getattr(data, "dtype", None)
    if dtype is None or dtype.kind not in "iu" or not -(1 << 63) <= value < (1 << 64):
        return value
    bits = dtype.itemsize * 8
    v = value & ((1 << bits) - 1)
    if dtype.kind == "i" and v >> (bits - 1):
        v -= 1 << bits
    return v


def wrap_ints(da, db):
    """Both operands of a binary op, a Python int among them wrapped to the other's dtype."""
    return wrap_int(da, db), wrap_int(db, da)


def check_fill_value(value, dtype):
    """Raise torch's RuntimeError when the number ``value`` does not fit ``dtype``."""
    if value.__class__ not in (int, float) or dtype.kind not in "iufV":
        return
    if dtype.kind in "iu":
        info = np.iinfo(dtype)
        lo = -int(info.max) if dtype.kind == "u" else int(info.min)
        bad = value != value or not lo <= value <= int(info.max)
    else:
        if value != value or value in (float("inf"), float("-inf")):
            return
        top = float(np.finfo(dtype).max) if dtype.kind == "f" else 3.3895313892515355e38
        bad = not -top <= value <= top
    if bad:
        name = _C_NAMES.get(dtype.name, dtype.name)
        raise RuntimeError(f"value cannot be converted to type {name} without overflow")


def fill_number(value, data):
    """A number bound for ``data`` (a fill value, a clamp bound): checked as torch does
    when ``data`` is an integer or 16-bit float array, then wrapped (``-1`` for uint8 is
    255); float32/float64 arrays and non-numbers pass unchanged."""
    if value.__class__ is not int and value.__class__ is not float:
        return value
    dtype = getattr(data, "dtype", None)
    if dtype is None or (dtype.kind in "fc" and dtype.itemsize > 2) or dtype.kind == "b":
        return value
    check_fill_value(value, dtype)
    return wrap_int(value, data)


def scalar_type_name(dtype) -> str:
    """torch's ScalarType name of a dtype (``Float``, ``Long``...), as its messages say."""
    return _SCALAR.get(np.dtype(dtype).name, str(dtype))
