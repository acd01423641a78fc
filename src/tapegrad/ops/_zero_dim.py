"""A 0-d tensor next to a tensor with dimensions, in binary arithmetic.

Note [0-d tensor operands]
PyTorch ranks a 0-d tensor below tensors with dimensions: it sets the result dtype only
when its category (bool < integer < float < complex) is higher. So ``float32 tensor *
tensor(0.5, dtype=float64)`` is float32, ``float16 tensor + tensor(0.5)`` is float16 and
``int8 tensor * tensor(300)`` is int8 (300 wraps, as a cast), where NumPy 2, for which a
0-d array is as strong as any, widened all three (torch 2.13; tests/test_half_numbers.py).
add/sub/mul/div cast such a 0-d operand to the other's dtype before the ufunc (the cast
torch makes); the check costs two ``ndim`` reads on the tensor-tensor path. Gradients
keep each operand's own dtype (the rules read it from the tensors).
"""

from __future__ import annotations

import numpy as np

from .. import _fpquiet
from ._half_number import OpmathNumber, is_half

__all__ = ["zero_dim_operands"]

_CATEGORY = {"b": 0, "i": 1, "u": 1, "f": 2, "V": 2, "c": 3}


def zero_dim_operands(da, db, true_div=False):
    """``(da, db)`` with the 0-d one cast to the other's dtype when its category is not
    higher (one of them is 0-d, the other has dimensions). True division of integers
    computes in float from the values as they are."""
    first = da.ndim == 0
    zero, other = (da, db) if first else (db, da)
    kind = other.dtype.kind
    if zero.dtype.kind == "c" and kind in "fV":  # the complex of the float's width, as torch
        want = np.complex128 if other.dtype == np.float64 else np.complex64
        if zero.dtype != want:
            zero = zero.astype(want)
            return (zero, db) if first else (da, zero)
    if zero.dtype == other.dtype or _CATEGORY.get(zero.dtype.kind, 3) > _CATEGORY.get(kind, 3):
        return da, db
    if kind == "c" or (true_div and kind in "biu"):  # complex: tapegrad's own rules
        return da, db
    if not first and zero.__class__ is np.ndarray and is_half(other.dtype):
        cast = OpmathNumber(zero.item())  # torch's float32 opmath (Note [Half tensors and numbers])
    else:  # (a 0-d first operand is cast to the half dtype, as torch)
        cast = _fpquiet.call(zero.astype, other.dtype)  # overflow to inf: silent, as torch
    return (cast, db) if first else (da, cast)
