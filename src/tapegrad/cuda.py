"""``tapegrad.cuda``, as ``torch.cuda``: what a training script asks before choosing a device.

tapegrad runs on the CPU with NumPy. ``is_available()`` is True only when CuPy is
installed and sees a GPU (then ``device="cuda"`` tensors are CuPy arrays). The seeding
functions are accepted and do nothing, as torch's do on a machine without CUDA: the
one tapegrad generator is seeded by ``tapegrad.manual_seed``.
"""

from __future__ import annotations

from . import _backend

__all__ = [
    "is_available",
    "device_count",
    "current_device",
    "get_device_name",
    "manual_seed",
    "manual_seed_all",
    "seed",
    "seed_all",
    "synchronize",
    "empty_cache",
    "memory_allocated",
    "max_memory_allocated",
    "reset_peak_memory_stats",
    "is_bf16_supported",
]


def device_count() -> int:
    """The number of GPUs CuPy sees (0 without CuPy)."""
    cupy = _backend._cupy
    if cupy is None:
        return 0
    try:  # pragma: no cover - needs a GPU
        return int(cupy.cuda.runtime.getDeviceCount())
    except Exception:  # noqa: BLE001 - CuPy without a driver
        return 0


def is_available() -> bool:
    """True when tensors can be put on ``"cuda"`` (CuPy installed and a GPU present)."""
    return device_count() > 0


def _no_cuda(what: str):
    raise RuntimeError(
        f"torch.cuda.{what}: no CUDA device is available to tapegrad (it computes with NumPy "
        "on the CPU; install CuPy on a GPU machine for device='cuda'). Guard the call with "
        "`if torch.cuda.is_available():` or use device='cpu'."
    )


def current_device() -> int:
    if not is_available():
        _no_cuda("current_device()")
    return 0  # pragma: no cover


def get_device_name(device=None) -> str:
    if not is_available():
        _no_cuda("get_device_name()")
    return "CuPy device"  # pragma: no cover


def manual_seed(seed) -> None:
    """Accepted and ignored (no CUDA generator); seed with ``tapegrad.manual_seed``."""


def manual_seed_all(seed) -> None:
    """Accepted and ignored (no CUDA generator); seed with ``tapegrad.manual_seed``."""


def seed() -> None:
    """Accepted and ignored (no CUDA generator)."""


def seed_all() -> None:
    """Accepted and ignored (no CUDA generator)."""


def synchronize(device=None) -> None:
    """Nothing to wait for: NumPy calls finish before they return."""


def empty_cache() -> None:
    """Nothing to free."""


def memory_allocated(device=None) -> int:
    return 0


def max_memory_allocated(device=None) -> int:
    return 0


def reset_peak_memory_stats(device=None) -> None:
    return None


def is_bf16_supported(including_emulation: bool = True) -> bool:
    return False
