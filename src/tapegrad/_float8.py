"""torch's float8 dtypes (``float8_e4m3fn``, ``float8_e5m2``, ``float8_e4m3fnuz``,
``float8_e5m2fnuz``): storage types, as on torch's CPU.

Note [float8 as torch]
The dtypes (and ``float8_e8m0fnu``, a power-of-two scale) are ml_dtypes' (imported on
first use, as bfloat16: Note [Lazy bfloat16]).
torch keeps float8 for storage: conversions, copies, views, cat, indexing and comparisons
work; arithmetic raises ``NotImplementedError: "<kernel>" not implemented for
'Float8_e4m3fn'`` and promotion with any other dtype raises RuntimeError. tapegrad raises
the same where an op reads its input through ``float_data`` (every float op) or promotes.
Conversions round as ml_dtypes' (round to nearest even, subnormals kept), with torch's
differences on top, found by comparing every bit pattern and a float32 sweep (tests/
test_float8.py): to float8_e4m3fn, a finite overflow or an infinity saturates to ±448
(ml_dtypes: NaN); NaN becomes torch's NaN pattern (sign kept: 0x7F/0xFF for e4m3fn and
e5m2, 0x80 for the fnuz types); back to float32, NaN carries torch's payload bits.
"""

from __future__ import annotations

import numpy as np

NAMES = ("float8_e4m3fn", "float8_e5m2", "float8_e4m3fnuz", "float8_e5m2fnuz", "float8_e8m0fnu")
# torch's ScalarType names, used in its messages
TORCH_NAMES = {
    "float8_e4m3fn": "Float8_e4m3fn", "float8_e5m2": "Float8_e5m2",
    "float8_e4m3fnuz": "Float8_e4m3fnuz", "float8_e5m2fnuz": "Float8_e5m2fnuz",
    "float8_e8m0fnu": "Float8_e8m0fnu",
    "float16": "Half", "float32": "Float", "float64": "Double", "bfloat16": "BFloat16",
    "int8": "Char", "int16": "Short", "int32": "Int", "int64": "Long", "uint8": "Byte",
    "uint16": "UInt16", "uint32": "UInt32", "uint64": "UInt64", "bool": "Bool",
    "complex64": "ComplexFloat", "complex128": "ComplexDouble",
}  # fmt: skip
_NAN = {
    "float8_e4m3fn": 0x7F,
    "float8_e5m2": 0x7F,
    "float8_e4m3fnuz": 0x80,
    "float8_e5m2fnuz": 0x80,
    "float8_e8m0fnu": 0xFF,
}
_SIGNED_NAN = ("float8_e4m3fn", "float8_e5m2")  # the fnuz types have one NaN, no -0
_TO_F32 = {}  # name -> the float32 bit pattern of each of the 256 float8 bytes


def dtype(name):
    import ml_dtypes  # noqa: PLC0415 - Note [Lazy bfloat16] in _dtypes.py

    return np.dtype(getattr(ml_dtypes, name))


def is_float8(d) -> bool:
    return d.itemsize == 1 and d.kind in "fV"


def torch_name(d) -> str:
    return TORCH_NAMES.get(d.name, d.name)


def not_implemented(op, d):
    raise NotImplementedError(f"\"{op}\" not implemented for '{torch_name(d)}'")


def to_float8(array, d):
    """``array`` (any real dtype) rounded to the float8 dtype ``d`` as torch rounds."""
    src = np.asarray(array)
    if src.dtype.kind == "c":
        src = src.real
    if src.dtype.kind not in "f" or src.dtype.itemsize > 4:  # ints, bool, float64: via float32
        src = src.astype(np.float64).astype(np.float32)
    elif src.dtype != np.float32:
        src = src.astype(np.float32)
    if d.name == "float8_e8m0fnu":
        return _to_e8m0(src, d)
    out = src.astype(d)
    bits = out.view(np.uint8)
    isnan_in = np.isnan(src)
    name = d.name
    if name == "float8_e4m3fn":  # overflow and inf saturate to ±448 (0x7E)
        over = np.isnan(out.astype(np.float32)) & ~isnan_in
        if over.any():
            bits[over] = np.where(np.signbit(src[over]), 0xFE, 0x7E)
    if isnan_in.any():
        nan = _NAN[name]
        if name in _SIGNED_NAN:
            bits[isnan_in] = np.where(np.signbit(src[isnan_in]), nan | 0x80, nan)
        else:
            bits[isnan_in] = nan
    return out


def _to_e8m0(src, d):
    """float8_e8m0fnu (a power of two, 2**-127 .. 2**127) as torch's: the float32 bits'
    exponent field, plus one when the mantissa is at least a half (more than a half for
    float32 subnormals), the sign ignored (0 reads as 2**-127); NaN, inf and overflow
    give NaN (0xFF). ml_dtypes rounds the value and gives NaN for 0 and negatives."""
    bits = src.view(np.uint32) & np.uint32(0x7FFFFFFF)
    exp, man = bits >> np.uint32(23), bits & np.uint32(0x7FFFFF)
    half = np.uint32(0x400000)
    up = (man > half) | ((man == half) & (exp > 0))  # a half rounds up, but not 2**-127
    byte = np.minimum(exp + up, np.uint32(255))
    byte[exp == 255] = 255
    return byte.astype(np.uint8).view(d)


def from_float8(array, target):
    """float8 ``array`` as ``target`` (float32 exactly as torch, NaN payloads included)."""
    name = array.dtype.name
    table = _TO_F32.get(name)
    if table is None:
        values = np.arange(256, dtype=np.uint8).view(array.dtype).astype(np.float32)
        table = values.view(np.uint32).copy()
        for byte in np.nonzero(np.isnan(values))[0]:
            table[byte] = _torch_nan_bits(name, int(byte))
        _TO_F32[name] = table
    f32 = table[np.asarray(array).view(np.uint8)].view(np.float32)
    return f32 if target == np.float32 else f32.astype(target)


def _torch_nan_bits(name, byte):
    """torch's float32 NaN for a float8 NaN byte: its mantissa bits moved up (e5m2 goes
    through float16, which sets the quiet bit); the fnuz NaN (0x80) reads 0x7F800001."""
    sign = 0x80000000 if byte & 0x80 and name in _SIGNED_NAN else 0
    if name == "float8_e4m3fn":
        return sign | 0x7F800000 | ((byte & 0x7) << 20)
    if name == "float8_e5m2":
        return sign | 0x7FC00000 | ((byte & 0x3) << 21)
    return 0x7F800001  # the fnuz NaN and float8_e8m0fnu's
