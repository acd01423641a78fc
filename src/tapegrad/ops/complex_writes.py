"""Writes between real and complex tensors, with PyTorch's rules (ops/inplace.py uses them).

Note [Writing through real and imag]
``z.real`` and ``z.imag`` of a complex ``z`` are writable views, as in PyTorch
(``z.real.mul_(2)``, ``z.imag[0] = 5``). A write through one that must be recorded goes
through ``z`` seen as pairs of reals, ``view_as_real(z)`` (shape S + (2,)): the view's
elements are located in that array by address, written there by index_put, and ``z``
becomes ``view_as_complex`` of the result, so gradients flow to both parts.

A complex value written into a real tensor (``real_value``): a complex number with an
imaginary part raises, a complex tensor is cast with torch's UserWarning (never NumPy's
ComplexWarning), an advanced-index write of one raises.
"""

from __future__ import annotations

import numpy as np

from .. import _warn
from ..tensor import Tensor
from ._dtype_errors import scalar as _scalar_name
from ._registry import OPS

__all__ = ["is_part", "as_pairs", "real_value"]


def is_part(base: Tensor, view: Tensor) -> bool:
    """Whether ``view`` is real numbers in a complex ``base``'s memory (``base.real``,
    ``base.imag`` and views of them): Note [Writing through real and imag]."""
    return base._data.dtype.kind == "c" and view._data.dtype == base._data.real.dtype


def as_pairs(base: Tensor):
    """(the Tensor ``view_as_real(base)``, an array of those pairs sharing base's memory)."""
    array = base._data[..., None].view(base._data.real.dtype)
    return OPS["view_as_real"].fn(base), array  # (ops/complex_ops.py imports after this)


_C_TYPE = {"float32": "float", "float64": "double", "float16": "c10::Half", "int64": "int64_t",
           "int32": "int", "int16": "short", "int8": "signed char", "uint8": "unsigned char",
           "bool": "bool", "bfloat16": "c10::BFloat16"}  # fmt: skip


def real_value(self, value, op, advanced=False):
    """``value`` to write into self; PyTorch's rules when it is complex and self is not:
    a complex number with an imaginary part raises; a complex tensor is cast with a
    UserWarning (NumPy's ComplexWarning never reaches the user), or refused by an
    advanced-index write."""
    dtype = self._data.dtype
    if dtype.kind == "c":
        return value
    if isinstance(value, (complex, np.complexfloating)):
        if value.imag != 0:
            raise RuntimeError(
                f"{op}: value cannot be converted to type {_C_TYPE.get(dtype.name, dtype.name)} "
                f"without overflow (got {value!r} for a tensor of dtype {dtype})"
            )
        return value.real
    array = value._data if isinstance(value, Tensor) else value
    if not (isinstance(array, np.ndarray) and array.dtype.kind == "c"):
        return value
    if advanced:
        raise RuntimeError(
            f"{op}: Index put requires the source and destination dtypes match, got "
            f"{_scalar_name(dtype)} for the destination and {_scalar_name(array.dtype)} for "
            "the source."
        )
    _warn.warn("Casting complex values to real discards the imaginary part")
    return value.real
