"""PyTorch's errors for products of tensors of different dtypes.

torch promotes mixed dtypes in elementwise ops but not in its BLAS-backed products:
``float32 @ float64`` raises, with a message that depends on the kernel the call
reaches (mm, addmv, dot, bmm). These helpers spell the dtypes the way torch's
messages do (C++ type names, ``float``/``double``, or ScalarType names,
``Float``/``Double``) and build each op's message, so a user sees torch's text.
"""

from __future__ import annotations

import numpy as np

_CPP = {
    "float32": "float",
    "float64": "double",
    "float16": "c10::Half",
    "bfloat16": "c10::BFloat16",
    "int64": "long int",
    "int32": "int",
    "int16": "short int",
    "int8": "signed char",
    "uint8": "unsigned char",
    "bool": "bool",
    "complex64": "c10::complex<float>",
    "complex128": "c10::complex<double>",
}
_SCALAR = {
    "float32": "Float",
    "float64": "Double",
    "float16": "Half",
    "bfloat16": "BFloat16",
    "int64": "Long",
    "int32": "Int",
    "int16": "Short",
    "int8": "Char",
    "uint8": "Byte",
    "bool": "Bool",
    "complex64": "ComplexFloat",
    "complex128": "ComplexDouble",
}


def cpp(dtype) -> str:
    """``float`` for float32: the C++ type name torch's messages print."""
    name = np.dtype(dtype).name
    return _CPP.get(name, name)


def scalar(dtype) -> str:
    """``Float`` for float32: torch's ScalarType name."""
    name = np.dtype(dtype).name
    return _SCALAR.get(name, name)


def mm_error(a, b) -> RuntimeError:
    return RuntimeError(f"expected m1 and m2 to have the same dtype, but got: {cpp(a)} != {cpp(b)}")


def scalar_type_error(expected, found) -> RuntimeError:
    return RuntimeError(f"expected scalar type {scalar(expected)} but found {scalar(found)}")


def dot_error(a, b) -> RuntimeError:
    return RuntimeError(
        f"dot : expected both vectors to have same dtype, but found {scalar(a)} and {scalar(b)}"
    )


def addmv_error(out, mat, vec) -> RuntimeError:
    return RuntimeError(
        "addmv input tensors must have the same dtype, but got "
        f"{scalar(out)}, {scalar(mat)}, and {scalar(vec)}"
    )


def matmul_error(a: np.ndarray, b: np.ndarray) -> RuntimeError:
    """torch's message for ``a @ b`` of different dtypes: the kernel matmul dispatches to
    (dot for two vectors, addmv for a vector on the right, mm for a matrix on the right,
    bmm otherwise) names the error."""
    if b.ndim == 1:
        return (
            dot_error(a.dtype, b.dtype) if a.ndim == 1 else addmv_error(b.dtype, a.dtype, b.dtype)
        )
    if b.ndim == 2:
        return mm_error(a.dtype, b.dtype)
    return scalar_type_error(a.dtype, b.dtype)


def addmm_check(input, mat1, mat2) -> None:
    """torch's addmm/addbmm check: self against mat2 first, then mat1 against mat2."""
    if input.dtype != mat2.dtype:
        raise RuntimeError(
            "self and mat2 must have the same dtype, but got "
            f"{scalar(input.dtype)} and {scalar(mat2.dtype)}"
        )
    if mat1.dtype != mat2.dtype:
        raise RuntimeError(
            "mat1 and mat2 must have the same dtype, but got "
            f"{scalar(mat1.dtype)} and {scalar(mat2.dtype)}"
        )


def conv_check(x, weight, bias, transposed=False) -> None:
    """torch's convolution checks: input against weight, then input against bias (a
    transposed convolution casts its bias instead, as torch's)."""
    if x.dtype != weight.dtype:
        raise scalar_type_error(x.dtype, weight.dtype)
    if bias is not None and bias.dtype != x.dtype and not transposed:
        raise RuntimeError(
            f"Input type ({cpp(x.dtype)}) and bias type ({cpp(bias.dtype)}) should be the same"
        )


def linear_check(input, weight, bias) -> None:
    """torch's linear: ``input @ weight.T`` (mm's message) or ``addmm(bias, input, weight.T)``."""
    if bias is None:
        if input.dtype != weight.dtype:
            raise mm_error(input.dtype, weight.dtype)
    else:
        addmm_check(bias, input, weight)
