"""``tapegrad.dtype``, ``tapegrad.finfo`` and ``tapegrad.iinfo``: torch's dtype type and its
numeric limits.

tapegrad's dtypes are NumPy dtypes (``tg.float32 is numpy.dtype('float32')``; bfloat16 is
``numpy.dtype(ml_dtypes.bfloat16)``), so ``tg.dtype`` is ``numpy.dtype`` and
``isinstance(x.dtype, tg.dtype)`` holds for every tensor. ``finfo``/``iinfo`` carry torch's
attributes with torch's values and types (Python ``float``/``int``; ``dtype`` the name
string), read from NumPy's (ml_dtypes' for bfloat16) limits.
"""

from __future__ import annotations

import math

import numpy as np

from . import _dtypes

__all__ = ["dtype", "finfo", "iinfo"]

dtype = np.dtype


def _as_dtype(op, type_):
    if not isinstance(type_, np.dtype):
        raise TypeError(
            f"{op}(): argument 'type' (position 1) must be torch.dtype, not {type(type_).__name__}"
        )
    return type_


class finfo:  # noqa: N801 - torch's name
    """Limits of a floating point dtype (of the default dtype with no argument); a complex
    dtype gives its real part's, as torch.

    >>> import tapegrad as tg
    >>> tg.finfo(tg.float16).max, tg.finfo().eps == tg.finfo(tg.float32).eps
    (65504.0, True)

    Raises:
        TypeError: ``type`` is not a dtype, or not a floating point or complex one.
    """

    __slots__ = ("bits", "eps", "max", "min", "tiny", "smallest_normal", "resolution", "dtype")

    def __init__(self, type=None):  # noqa: A002 - torch's keyword
        d = _dtypes.get_default_dtype() if type is None else _as_dtype("finfo", type)
        if d.kind == "c":
            d = np.dtype(f"float{d.itemsize * 4}")
        if not _dtypes.is_floating(d):
            raise TypeError(
                "torch.finfo() requires a floating point input type. Use torch.iinfo to "
                "handle 'torch.finfo'"
            )
        if d.name == "bfloat16" or d.itemsize == 1:  # bfloat16, float8
            import ml_dtypes  # noqa: PLC0415 - Note [Lazy bfloat16] in _dtypes.py

            info = ml_dtypes.finfo(d)
        else:
            info = np.finfo(d)
        self.bits = int(info.bits)
        # torch's eps of float8_e5m2fnuz is 2**-3 (ml_dtypes: 2**-2, its 2 mantissa bits)
        self.eps = 0.125 if d.name == "float8_e5m2fnuz" else float(info.eps)
        self.max = float(info.max)
        self.min = float(info.min)
        self.tiny = self.smallest_normal = float(info.smallest_normal)
        self.resolution = 10.0 ** -int(-math.log10(self.eps))  # NumPy's 10**-precision
        self.dtype = d.name

    def __eq__(self, other):
        return isinstance(other, finfo) and self.dtype == other.dtype

    __hash__ = None  # as torch's

    def __repr__(self):
        return (
            f"finfo(resolution={self.resolution:g}, min={self.min:g}, max={self.max:g}, "
            f"eps={self.eps:g}, smallest_normal={self.smallest_normal:g}, "
            f"tiny={self.tiny:g}, dtype={self.dtype})"
        )


class iinfo:  # noqa: N801 - torch's name
    """Limits of an integer dtype: ``bits``, ``min``, ``max`` (Python ints), ``dtype``.

    >>> import tapegrad as tg
    >>> tg.iinfo(tg.uint8).max, tg.iinfo(tg.int16).min
    (255, -32768)

    Raises:
        TypeError: ``type`` is not a dtype, or not an integer one (bool included).
    """

    __slots__ = ("bits", "max", "min", "dtype")

    def __init__(self, type):  # noqa: A002 - torch's keyword
        d = _as_dtype("iinfo", type)
        if d.kind == "b":
            raise TypeError("torch.bool is not supported by torch.iinfo")
        if d.kind not in "iu":
            raise TypeError(
                "torch.iinfo() requires an integer input type. Use torch.finfo to handle "
                "'torch.iinfo'"
            )
        info = np.iinfo(d)
        self.bits, self.min, self.max, self.dtype = (
            int(info.bits),
            int(info.min),
            int(info.max),
            d.name,
        )

    def __eq__(self, other):
        return isinstance(other, iinfo) and self.dtype == other.dtype

    __hash__ = None

    def __repr__(self):
        return f"iinfo(min={self.min:g}, max={self.max:g}, dtype={self.dtype})"
