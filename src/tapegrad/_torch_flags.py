"""torch's build flags (``torch.has_lapack``, ``is_vulkan_available()``...), its device
error classes (``torch.OutOfMemoryError``, ``AcceleratorError``, which ``except`` clauses
name), ``torch.layout`` and the deprecated ``torch.set_default_tensor_type``, which older
programs call first."""

from __future__ import annotations

from . import _dtypes, legacy
from ._warn import warn
from .sparse.layout import Layout as layout

__all__ = [
    "has_lapack",
    "has_spectral",
    "has_mkl",
    "has_openmp",
    "is_vulkan_available",
    "compiled_with_cxx11_abi",
    "OutOfMemoryError",
    "AcceleratorError",
    "layout",
    "set_default_tensor_type",
]

has_lapack = True  # SciPy's LAPACK: linalg works
has_spectral = True  # NumPy's FFTs: tg.fft works
has_mkl = False  # NumPy/SciPy's own BLAS, not MKL
has_openmp = False  # tapegrad's pool is Python threads


def is_vulkan_available() -> bool:
    return False


def compiled_with_cxx11_abi() -> bool:
    """True, as every torch build since 2.7 answers (tapegrad has no C++ ABI of its own)."""
    return True


class OutOfMemoryError(RuntimeError):
    """torch's error for a device allocation that failed (also ``torch.cuda``'s); tapegrad's
    NumPy allocations raise Python's MemoryError instead."""


class AcceleratorError(RuntimeError):
    """Exception raised while executing on device"""


_FLOATS = {name: dtype for name, dtype in legacy._TYPES if dtype.kind == "f"}


def set_default_tensor_type(t) -> None:
    """``torch.set_default_tensor_type``: sets the default dtype from a legacy type
    (``torch.DoubleTensor``) or its name (``"torch.DoubleTensor"``), with torch's
    deprecation warning.

    Raises:
        TypeError: an integer, bool or complex type, or anything that is not a type (as
            torch: "only floating-point types are supported as the default type"); a
            float16 type (tapegrad's default dtype is float32 or float64).
        ModuleNotFoundError: a name without its module (``"DoubleTensor"``), as torch.
        RuntimeError: a ``torch.cuda.*`` type: tapegrad has no GPU default.
    """
    warn(
        "torch.set_default_tensor_type() is deprecated as of PyTorch 2.1, please use "
        "torch.set_default_dtype() and torch.set_default_device() as alternatives.",
        UserWarning,
    )
    if isinstance(t, str):
        if t.startswith("torch.cuda."):
            raise RuntimeError(
                f"set_default_tensor_type({t!r}): tapegrad computes on the CPU; use "
                f"{t.replace('.cuda', '')!r} (or torch.set_default_dtype)"
            )
        if "." not in t:  # torch imports the part before the last dot
            raise ModuleNotFoundError(f"No module named {t!r}")
        name = t.removeprefix("torch.")
        if name in _FLOATS:
            _dtypes.set_default_dtype(_FLOATS[name])
            return
        if name in legacy.__all__:
            raise TypeError("only floating-point types are supported as the default type")
        raise TypeError(
            "invalid type object: only floating-point types are supported as the default type"
        )
    name = getattr(t, "__name__", None)
    if isinstance(t, type) and getattr(legacy, name or "", None) is t and name in _FLOATS:
        _dtypes.set_default_dtype(_FLOATS[name])
        return
    if isinstance(t, type):
        raise TypeError("only floating-point types are supported as the default type")
    raise TypeError(
        "invalid type object: only floating-point types are supported as the default type"
    )
