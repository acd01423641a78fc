"""A Python number next to a float16/bfloat16 array, computed as PyTorch does.

Note [Half tensors and numbers]
PyTorch computes float16/bfloat16 arithmetic in float32 ("opmath") and rounds the result
once; how it converts a Python number first depends on the op (pinned against torch 2.13
on every finite float16 and bfloat16 value, tests/test_half_numbers.py):

* ``x + s``, ``x - s``, ``s - x``: ``s`` is rounded to x's dtype first. NumPy's weak-scalar
  rule does the same, so these ufuncs run unchanged (overflow is a silent inf, as in torch).
* ``x * s``, ``x / s``: ``s`` is rounded to float32, the product (quotient) is computed
  in float32 and rounded once. NumPy's rule rounds ``s`` to float16 first: ``x * 70000.0``
  was ``0 * inf = NaN`` (torch: 0) and ``x * 0.1`` was off by an ulp for a third of all
  values.
* ``s / x``: torch computes ``reciprocal(x)`` (rounded to x's dtype) times ``s`` in
  float32.

``_weak`` in ops/arithmetic.py hands a half array's number to the ufunc as an
:class:`OpmathNumber`, a ``float`` whose ``__array_ufunc__`` computes so. The float32 and
float64 paths never build one (their numbers hit the 0-d array cache first, Note [Scalar
operands as 0-d arrays]); tensor-tensor half arithmetic is NumPy's own (it computes in
float32 and rounds once, as torch). Backward rules multiply by the same number, so they
follow the same rule.
"""

from __future__ import annotations

import numpy as np

from .. import _fpquiet

__all__ = ["OpmathNumber", "is_half", "opmath_number"]

_F32 = np.dtype(np.float32)
_F16 = np.dtype(np.float16)


def is_half(dtype) -> bool:
    """float16 or bfloat16 (checked by name: ml_dtypes is imported lazily)."""
    return dtype is _F16 or dtype == _F16 or dtype.name == "bfloat16"


class OpmathNumber(float):
    """A Python number beside a float16/bfloat16 array (Note [Half tensors and numbers])."""

    __slots__ = ()

    def __array_ufunc__(self, ufunc, method, *inputs, out=None, **kwargs):
        if method != "__call__" or len(inputs) != 2 or kwargs:
            return NotImplemented
        a, b = inputs
        first = a is self
        arr = b if first else a
        if not isinstance(arr, (np.ndarray, np.generic)):  # a 0-d gradient may be a scalar
            return NotImplemented
        s = float(self)
        token = _fpquiet.enter()  # overflow to inf is silent, as in torch
        try:
            if ufunc is np.multiply:
                res = (np.multiply(arr.astype(_F32), np.float32(s))).astype(arr.dtype)
            elif ufunc is np.true_divide and not first:
                res = (np.true_divide(arr.astype(_F32), np.float32(s))).astype(arr.dtype)
            elif ufunc is np.true_divide:  # s / x = reciprocal(x) * s
                rec = (np.true_divide(np.float32(1), arr.astype(_F32))).astype(arr.dtype)
                res = (np.multiply(rec.astype(_F32), np.float32(s))).astype(arr.dtype)
            else:  # add, subtract, ...: NumPy's weak-scalar rule is torch's
                res = ufunc(s, arr) if first else ufunc(arr, s)
        finally:
            _fpquiet.leave(token)
        if out is None:
            return res
        (target,) = out
        np.copyto(target, res, casting="same_kind")
        return target


def opmath_number(value, data):
    """``value`` as an :class:`OpmathNumber` when ``data`` is a float16/bfloat16 array and
    ``value`` a Python float or int; else ``value`` unchanged."""
    cls = value.__class__
    if (cls is float or cls is int) and isinstance(data, np.ndarray) and is_half(data.dtype):
        return OpmathNumber(value)
    return value
