"""``tapegrad.cuda``, as ``torch.cuda``: what a training script asks before choosing a device.

tapegrad runs on the CPU with NumPy. ``is_available()`` is True only when CuPy is
installed and sees a GPU (then ``device="cuda"`` tensors are CuPy arrays).

Note [torch.cuda without CUDA]
Without a GPU each function answers as a CPU-only build of torch 2.13 does, so a script
behaves the same under both: the queries that torch answers without CUDA return its values
(``device_count() == 0``, ``memory_allocated() == 0``, ``get_rng_state_all() == []``, the
seeding functions accept and ignore their seed), and the ones that need a device raise
torch's error type: ``AssertionError("Torch not compiled with CUDA enabled")`` (here an
error that is also a RuntimeError, with a line on what to do), or ``AttributeError`` where
torch's CPU build fails looking up its CUDA binding (``set_device``,
``reset_peak_memory_stats``). The table ``_WITHOUT_CUDA`` lists which is which.
"""

from __future__ import annotations

import collections
import warnings

from . import _backend

__all__ = [
    "is_available",
    "device_count",
    "current_device",
    "set_device",
    "get_device_name",
    "get_device_capability",
    "get_device_properties",
    "is_initialized",
    "init",
    "manual_seed",
    "manual_seed_all",
    "seed",
    "seed_all",
    "initial_seed",
    "get_rng_state",
    "get_rng_state_all",
    "set_rng_state",
    "set_rng_state_all",
    "synchronize",
    "empty_cache",
    "ipc_collect",
    "mem_get_info",
    "memory_allocated",
    "max_memory_allocated",
    "memory_reserved",
    "max_memory_reserved",
    "memory_cached",
    "max_memory_cached",
    "memory_stats",
    "reset_peak_memory_stats",
    "reset_max_memory_allocated",
    "reset_max_memory_cached",
    "reset_accumulated_memory_stats",
    "current_stream",
    "default_stream",
    "get_arch_list",
    "get_gencode_flags",
    "is_bf16_supported",
    "is_tf32_supported",
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


class CudaNotAvailableError(AssertionError, RuntimeError):
    """torch's ``AssertionError("Torch not compiled with CUDA enabled")``; also a
    RuntimeError, which tapegrad raised before (Note [torch.cuda without CUDA])."""


def _no_cuda(what: str):
    raise CudaNotAvailableError(
        f"Torch not compiled with CUDA enabled: torch.cuda.{what} needs a CUDA device, and "
        "tapegrad has none (it computes with NumPy on the CPU; install CuPy on a GPU machine "
        "for device='cuda'). Guard the call with `if torch.cuda.is_available():`."
    )


def _no_binding(what: str):
    raise AttributeError(
        f"torch.cuda.{what}: no CUDA binding in this build (tapegrad computes with NumPy on "
        "the CPU), as in a CPU-only build of torch. Guard the call with "
        "`if torch.cuda.is_available():`."
    )


def _device_index(device) -> int:
    if device is None:
        return 0
    if isinstance(device, int):
        return device
    text = str(device)
    if not text.startswith("cuda"):
        raise ValueError(f"Expected a cuda device, but got: {text}")
    return int(text.split(":")[1]) if ":" in text else 0


def _cupy_device(what: str):
    if not is_available():
        _no_cuda(what)
    return _backend._cupy.cuda  # pragma: no cover - needs a GPU


# -- devices ----------------------------------------------------------------------------------


def current_device() -> int:
    return int(_cupy_device("current_device()").Device().id)  # pragma: no cover


def set_device(device) -> None:
    """Select the current GPU; a negative index does nothing (as torch)."""
    index = _device_index(device)
    if index < 0:
        return
    if not is_available():
        _no_binding("set_device()")
    _backend._cupy.cuda.Device(index).use()  # pragma: no cover - needs a GPU


def get_device_name(device=None) -> str:
    cuda = _cupy_device("get_device_name()")
    props = cuda.runtime.getDeviceProperties(_device_index(device))  # pragma: no cover
    return props["name"].decode()  # pragma: no cover


def get_device_capability(device=None) -> tuple:
    cuda = _cupy_device("get_device_capability()")
    props = cuda.runtime.getDeviceProperties(_device_index(device))  # pragma: no cover
    return props["major"], props["minor"]  # pragma: no cover


def get_device_properties(device=None):
    cuda = _cupy_device("get_device_properties()")
    return cuda.runtime.getDeviceProperties(_device_index(device))  # pragma: no cover


def is_initialized() -> bool:
    """Whether a GPU is in use (CuPy present and a device seen)."""
    return is_available()


def init() -> None:
    _cupy_device("init()")


def current_stream(device=None):
    return _cupy_device("current_stream()").get_current_stream()  # pragma: no cover


def default_stream(device=None):
    return _cupy_device("default_stream()").Stream.null  # pragma: no cover


# -- random numbers ---------------------------------------------------------------------------


def manual_seed(seed) -> None:
    """Accepted and ignored (no CUDA generator); seed with ``tapegrad.manual_seed``."""


def manual_seed_all(seed) -> None:
    """Accepted and ignored (no CUDA generator); seed with ``tapegrad.manual_seed``."""


def seed() -> None:
    """Accepted and ignored (no CUDA generator)."""


def seed_all() -> None:
    """Accepted and ignored (no CUDA generator)."""


def initial_seed() -> int:
    _no_cuda("initial_seed()")


def get_rng_state(device="cuda"):
    _no_cuda("get_rng_state()")


def get_rng_state_all() -> list:
    """One state per GPU: none."""
    return []


def set_rng_state(new_state, device="cuda") -> None:
    """Accepted and ignored, as torch's (it queues the call until CUDA starts; it never does)."""


def set_rng_state_all(new_states) -> None:
    """Accepted and ignored (no CUDA generators)."""


# -- synchronisation and memory ------------------------------------------------------------


def synchronize(device=None) -> None:
    _cupy_device("synchronize()").Device().synchronize()  # pragma: no cover


def empty_cache() -> None:
    """Nothing to free (CuPy's pool is freed when there is one)."""
    if is_available():  # pragma: no cover - needs a GPU
        _backend._cupy.get_default_memory_pool().free_all_blocks()


def ipc_collect() -> None:
    _cupy_device("ipc_collect()")


def mem_get_info(device=None) -> tuple:
    return tuple(_cupy_device("mem_get_info()").runtime.memGetInfo())  # pragma: no cover


def memory_allocated(device=None) -> int:
    return 0


def max_memory_allocated(device=None) -> int:
    return 0


def memory_reserved(device=None) -> int:
    return 0


def max_memory_reserved(device=None) -> int:
    return 0


def memory_cached(device=None) -> int:
    warnings.warn(
        "`torch.cuda.memory_cached` has been renamed to `torch.cuda.memory_reserved`",
        FutureWarning,
        stacklevel=2,
    )
    return memory_reserved(device)


def max_memory_cached(device=None) -> int:
    warnings.warn(
        "`torch.cuda.max_memory_cached` has been renamed to `torch.cuda.max_memory_reserved`",
        FutureWarning,
        stacklevel=2,
    )
    return max_memory_reserved(device)


def memory_stats(device=None) -> collections.OrderedDict:
    """No allocator statistics without a GPU: an empty OrderedDict, as torch."""
    return collections.OrderedDict()


def reset_peak_memory_stats(device=None) -> None:
    if not is_available():
        _no_binding("reset_peak_memory_stats()")


def reset_accumulated_memory_stats(device=None) -> None:
    if not is_available():
        _no_binding("reset_accumulated_memory_stats()")


def _reset_max(name: str, device) -> None:
    warnings.warn(
        f"torch.cuda.{name} now calls torch.cuda.reset_peak_memory_stats, which resets /all/ "
        "peak memory stats.",
        FutureWarning,
        stacklevel=3,
    )
    reset_peak_memory_stats(device)


def reset_max_memory_allocated(device=None) -> None:
    _reset_max("reset_max_memory_allocated", device)


def reset_max_memory_cached(device=None) -> None:
    _reset_max("reset_max_memory_cached", device)


# -- what this build supports -----------------------------------------------------------------


def get_arch_list() -> list:
    return []


def get_gencode_flags() -> str:
    return ""


def is_bf16_supported(including_emulation: bool = True) -> bool:
    return False


def is_tf32_supported() -> bool:
    return False


# Note [torch.cuda without CUDA]: what each function does here without a GPU, torch 2.13's
# CPU build's behaviour (tests/test_cuda_namespace.py checks every row against torch).
_WITHOUT_CUDA = {
    "value": ["is_available", "device_count", "manual_seed", "manual_seed_all", "seed",
              "seed_all", "empty_cache", "get_rng_state_all", "set_rng_state",
              "set_rng_state_all", "memory_allocated", "max_memory_allocated",
              "memory_reserved", "max_memory_reserved", "memory_cached", "max_memory_cached",
              "memory_stats", "is_initialized", "get_arch_list", "get_gencode_flags",
              "is_bf16_supported", "is_tf32_supported"],
    "not_compiled": ["current_device", "get_device_name", "get_device_capability",
                     "get_device_properties", "init", "initial_seed", "get_rng_state",
                     "synchronize", "ipc_collect", "mem_get_info", "current_stream",
                     "default_stream"],
    "no_binding": ["set_device", "reset_peak_memory_stats", "reset_accumulated_memory_stats",
                   "reset_max_memory_allocated", "reset_max_memory_cached"],
}  # fmt: skip
