"""Dtypes: the default float dtype, promotion rules, and which dtypes may require grad.

tapegrad uses NumPy dtypes directly (``tg.float32 is numpy.dtype('float32')``).
Promotion follows NumPy 2 (NEP 50: Python scalars are weak, so a float32 tensor
times ``2.0`` stays float32), with one PyTorch rule on top: an operation on
integer or bool tensors whose result is a float gets the default float dtype
(float32) rather than NumPy's float64.
"""

from __future__ import annotations

import numpy as np

float16 = np.dtype("float16")
float32 = np.dtype("float32")
float64 = np.dtype("float64")
int8 = np.dtype("int8")
int16 = np.dtype("int16")
int32 = np.dtype("int32")
int64 = np.dtype("int64")
uint8 = np.dtype("uint8")
uint16 = np.dtype("uint16")  # torch's uint16/32/64 are "limited support" dtypes, as here
uint32 = np.dtype("uint32")
uint64 = np.dtype("uint64")
bool_ = np.dtype("bool")
complex64 = np.dtype("complex64")
complex128 = np.dtype("complex128")

_default_float = float32


def get_default_dtype() -> np.dtype:
    """The float dtype of tensors made from Python floats (float32 unless changed)."""
    return _default_float


def set_default_dtype(dtype) -> None:
    """Set the default float dtype; only float32 and float64 are accepted."""
    global _default_float
    dtype = np.dtype(dtype)
    if dtype not in (float32, float64):
        raise TypeError(f"default dtype must be float32 or float64, got {dtype}")
    _default_float = dtype


def get_default_complex_dtype() -> np.dtype:
    """The complex dtype of tensors made from Python complex numbers: complex64 when the
    default float dtype is float32, complex128 when it is float64 (as PyTorch)."""
    return complex64 if _default_float == float32 else complex128


def is_complex(dtype) -> bool:
    """True for complex64 and complex128."""
    return dtype.kind == "c"


_NO_COMPLEX32 = frozenset(("complex32", "chalf", "torch.complex32", "torch.chalf"))


def to_dtype(dtype) -> np.dtype | None:
    """Normalise a user dtype (``tg.float32``, ``'float64'``, ``numpy.int64``, a torch-like
    name, or None) to a NumPy dtype."""
    if dtype is None:
        return None
    if dtype is float:
        return _default_float
    if dtype is int:
        return int64
    if dtype is bool:
        return bool_
    if dtype is complex:
        return get_default_complex_dtype()
    if isinstance(dtype, str) and dtype in _NO_COMPLEX32:
        raise TypeError(
            f"{dtype}: tapegrad has no complex32 (chalf) dtype: NumPy has no half-precision "
            "complex type; use complex64 (tg.cfloat)"
        )
    try:
        return np.dtype(dtype)
    except TypeError:
        name = dtype.rsplit(".", 1)[-1] if isinstance(dtype, str) else None
        if name == "bfloat16":
            return _bfloat16()
        if name in _LAZY_FLOAT8:  # Note [float8 as torch] in _float8.py
            return _float8_dtype(name)
        raise TypeError(f"not a dtype: {dtype!r}") from None


def is_floating(dtype) -> bool:
    """True for dtypes that can carry gradients (floating point)."""
    return dtype.kind == "f" or (
        dtype.kind == "V" and (dtype.name == "bfloat16" or dtype.name in _LAZY_FLOAT8)
    )


# Note [Lazy bfloat16]
# ``bfloat16`` is ``ml_dtypes.bfloat16``, which costs about 0.6 s of CPU to import (ml_dtypes
# 0.7: 1.9 s on a 2-core AMD EPYC); it is imported on first use of ``tapegrad.bfloat16`` (or
# the string "bfloat16"), not with tapegrad. Nothing may read ``_dtypes.bfloat16`` at import
# time (``conversions.py`` did, unnoticed for six sessions): tests/test_import_cost.py.
def _bfloat16() -> np.dtype:
    import ml_dtypes  # noqa: PLC0415 - see Note [Lazy bfloat16]

    return np.dtype(ml_dtypes.bfloat16)


# Note [bfloat16 opmath]
# NumPy has no bfloat16 arithmetic of its own: ml_dtypes rounds after every ufunc, and
# promotes bfloat16 to float32 in matmul and most of NumPy/SciPy. torch computes a bfloat16
# op in float32 ("opmath") and rounds its result to bfloat16 once. tapegrad does the same
# without a line per op: ``float_data`` (ops/_util.py) hands a bfloat16 input's values to the
# op's kernel as an :class:`Opmath` array, a float32 ndarray subclass that NumPy's ufuncs,
# reductions and matmul carry through to the result; ``Tensor._wrap`` (every op result, in
# make_result and make_results too) rounds a float32 Opmath to bfloat16 once and drops the
# subclass from any other (an index, a mask). The result is bfloat16 and so is its Node's
# output: the backward then runs in bfloat16 tensor ops (each rounding once, as torch's
# bfloat16 kernels do) or in float32 where it reads the Opmath values, and the engine rounds
# each gradient to its input's bfloat16 (Note [bfloat16 gradients]). The float32/float64
# path pays nothing: float_data's ``kind in "fc"`` return comes first, and _wrap tests the
# subclass only in its branch for arrays that are not plain ndarrays.
class Opmath(np.ndarray):
    """float32 values computed from bfloat16 inputs (Note [bfloat16 opmath])."""


def from_opmath(array: np.ndarray) -> np.ndarray:
    """An :class:`Opmath` result as the op's result: float32 rounded to bfloat16 once;
    other dtypes (indices, masks, an explicit float64) as plain arrays."""
    plain = array.view(np.ndarray)
    return plain.astype(_bfloat16()) if plain.dtype == float32 else plain


def opmath(array: np.ndarray) -> np.ndarray:
    """A bfloat16 array's values as float32 :class:`Opmath` (Note [bfloat16 opmath])."""
    return array.astype(float32).view(Opmath)


# torch's float8 dtypes: ml_dtypes' too, as lazy (Note [float8 as torch] in _float8.py)
_LAZY_FLOAT8 = frozenset(
    ("float8_e4m3fn", "float8_e5m2", "float8_e4m3fnuz", "float8_e5m2fnuz", "float8_e8m0fnu")
)


def _float8_dtype(name) -> np.dtype:
    from . import _float8  # noqa: PLC0415

    return _float8.dtype(name)


def __getattr__(name):
    if name == "bfloat16":
        return _bfloat16()
    if name in _LAZY_FLOAT8:
        return _float8_dtype(name)
    raise AttributeError(f"module {__name__!r} has no attribute {name!r}")


def fix_float_result(array, *operand_dtypes):
    """Apply PyTorch's rule for float results of integer/bool operands.

    NumPy computes ``int64 / int64`` and ``int64 * 0.5`` in float64; PyTorch
    returns the default dtype.  If ``array`` is float64 but no operand was
    float64, cast it to the default float dtype.
    """
    # NOTE: ``np.dtype(...) == None`` is True for float64, so skip absent dtypes explicitly.
    if array.dtype == float64 and not any(d is not None and d == float64 for d in operand_dtypes):
        # an integer tensor with one float16 or bfloat16 tensor: that half dtype, as torch
        halves = {d for d in operand_dtypes if d is not None and d.kind in "fV" and d.itemsize == 2}
        return array.astype(halves.pop() if len(halves) == 1 else _default_float)
    return array
