"""``tapegrad.accelerator``, as ``torch.accelerator``: only CuPy's GPU, when installed."""

from __future__ import annotations

from . import cuda
from ._device import device

__all__ = ["is_available", "current_accelerator", "device_count", "synchronize"]


def is_available() -> bool:
    """True when a CUDA device can be used through CuPy (``tapegrad.cuda.is_available()``)."""
    return cuda.is_available()


def current_accelerator(check_available: bool = False):
    """``device(type='cuda')`` when one is available, else None (as torch on a CPU machine)."""
    return device("cuda") if cuda.is_available() else None


def device_count() -> int:
    return cuda.device_count()


def synchronize(device=None) -> None:
    """Nothing to wait for."""
