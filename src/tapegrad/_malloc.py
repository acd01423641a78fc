"""Keep freed array memory in the process: glibc's malloc tuned once, at import.

Note [Array memory and page faults]
An eager training step allocates and frees many arrays of a few hundred KiB to a few MiB
(activations, their gradients, kernel temporaries). glibc's malloc hands out blocks above
its mmap threshold with ``mmap`` and, for the rest, trims the top of its heap back to the
kernel once more than ``M_TRIM_THRESHOLD`` of it is free. Both thresholds adapt to the
largest block freed so far (1 MiB arrays: threshold 1 MiB, trim at 2 MiB), so a step whose
live memory rises and falls by more than a few MiB gives its pages back at the end and
faults them in again, zero-filled, on the next step: 2,761 page faults and 6 ms of kernel
time in every eager step of the benchmarks' small GPT (``benchmarks/gpt_step.py``,
``getrusage``), a fifth of the step. PyTorch's own steps and ``tapegrad.jit`` replays
(which reuse their buffers) fault next to never.

:func:`tune` sets ``M_MMAP_THRESHOLD`` to :data:`MMAP_THRESHOLD` (32 MiB, glibc's own
ceiling for the adaptive threshold; larger arrays still get fresh pages, which NumPy backs
with huge pages. It was 16 MiB at first, and then the (64, 256, 256) float32 per-sample
weight gradients of ``benchmarks/func_transforms.py``, exactly 16 MiB, were mapped and
faulted in afresh on every call: ``vmap(grad)`` took 5-7 ms instead of 2.6-2.9) and
``M_TRIM_THRESHOLD`` to :data:`TRIM_THRESHOLD` (64 MiB), so a step's arrays come back from
the heap without faults. The cost: up to 64 MiB of freed memory stays in the process
instead of returning to the kernel. It changes nothing else (results are the same), and is
skipped

* outside glibc (macOS, musl, Windows) and where ``mallopt`` cannot be found,
* when the user tuned malloc already (any ``MALLOC_*_`` tunable in the environment, or
  ``glibc.malloc`` in ``GLIBC_TUNABLES``), and
* when ``TAPEGRAD_MALLOC_TUNING=0``.
"""

from __future__ import annotations

import ctypes
import os
import sys

__all__ = ["tune", "MMAP_THRESHOLD", "TRIM_THRESHOLD"]

MMAP_THRESHOLD = 32 << 20
TRIM_THRESHOLD = 64 << 20

# glibc's malloc.h
_M_TRIM_THRESHOLD = -1
_M_MMAP_THRESHOLD = -3

_USER_TUNABLES = (
    "MALLOC_MMAP_THRESHOLD_",
    "MALLOC_TRIM_THRESHOLD_",
    "MALLOC_TOP_PAD_",
    "MALLOC_MMAP_MAX_",
    "MALLOC_ARENA_MAX",
)

#: Whether :func:`tune` changed malloc's settings in this process.
TUNED = [False]


def tune(environ=os.environ) -> bool:
    """Set glibc's mmap and trim thresholds (Note [Array memory and page faults]).

    Returns:
        True when the thresholds were set; False where it was skipped.
    """
    if environ.get("TAPEGRAD_MALLOC_TUNING", "1").strip() == "0":
        return False
    if any(k in environ for k in _USER_TUNABLES) or "glibc.malloc" in environ.get(
        "GLIBC_TUNABLES", ""
    ):
        return False
    if not sys.platform.startswith("linux"):
        return False
    try:
        libc = ctypes.CDLL(None)
        mallopt = libc.mallopt
        libc.gnu_get_libc_version  # noqa: B018 - only glibc has it (musl has mallopt, a no-op)
    except (OSError, AttributeError):
        return False
    mallopt.argtypes = (ctypes.c_int, ctypes.c_int)
    mallopt.restype = ctypes.c_int
    ok = mallopt(_M_MMAP_THRESHOLD, MMAP_THRESHOLD) == 1
    ok = mallopt(_M_TRIM_THRESHOLD, TRIM_THRESHOLD) == 1 and ok
    TUNED[0] = ok
    return ok
