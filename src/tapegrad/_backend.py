"""The array namespace behind tensors: NumPy on the CPU, CuPy on a GPU when installed.

Every module that needs an array function on data of unknown device asks
:func:`namespace` for it, so CuPy can stand in for NumPy in one place.
"""

from __future__ import annotations

import numpy as np

try:  # pragma: no cover - CuPy is optional and absent on CPU machines
    import cupy as _cupy
except Exception:  # noqa: BLE001 - any import failure means "no GPU backend"
    _cupy = None

__all__ = ["np", "namespace", "device_of", "namespace_for_device", "asarray", "MetaArray"]


class MetaArray(np.ndarray):
    """An array on the ``'meta'`` device, as torch's: a shape and a dtype without storage
    (a read-only broadcast of one zero, so ``Module.to("meta")`` frees the parameters).
    Ops on it run (on zeros) and give meta arrays; reading values out raises."""

    __slots__ = ()


def meta_array(shape, dtype) -> MetaArray:
    return np.broadcast_to(np.zeros((), dtype), tuple(shape)).view(MetaArray)


def namespace(array):
    """Return the array module (numpy or cupy) that owns ``array``."""
    if _cupy is not None and isinstance(array, _cupy.ndarray):
        return _cupy
    return np


def device_of(array) -> str:
    """Return ``"cuda"`` for a CuPy array, ``"meta"`` for a MetaArray, ``"cpu"`` otherwise."""
    if _cupy is not None and isinstance(array, _cupy.ndarray):
        return "cuda"
    if type(array) is MetaArray:
        return "meta"
    return "cpu"


def namespace_for_device(device: str):
    """Return the array module for a device name such as ``"cpu"`` or ``"cuda"``."""
    device = str(device)
    if device == "cpu" or device == "meta":  # (meta: _to_device drops the storage)
        return np
    if device.startswith("cuda"):
        if _cupy is None:
            raise RuntimeError(
                f"device {device!r} needs CuPy, which is not installed; use device='cpu'"
            )
        return _cupy
    raise ValueError(f"unknown device {device!r}; expected 'cpu', 'cuda' or 'meta'")


def asarray(data, dtype=None, device: str = "cpu"):
    """Convert ``data`` to an array of the given device, copying only when needed."""
    return namespace_for_device(device).asarray(data, dtype=dtype)
