"""Run small BLAS calls on one thread: ``with one_thread(m * n * k):``.

Note [Small GEMMs on one thread]
OpenBLAS hands a GEMM to all of its threads once m·n·k passes 262,144 (a GEMV once
m·n passes 9,216). For the products of a small convolution (the digits CNN's
1024 x 144 x 32 im2col GEMM: ~0.1 ms on one core) the hand-off costs more than the
second thread saves, and on a busy machine it is a disaster: a woken BLAS thread
waits for a core while the caller spins, and the same GEMM took 10 ms of wall time
on two threads against 0.6 ms on one (2-core machine at load 15). ``one_thread``
drops NumPy's OpenBLAS to one thread for the ``with`` block when the product is below
:data:`SMALL_MNK` and restores the previous count after it; larger products keep all
threads. It acts through OpenBLAS's own ``openblas_set_num_threads`` (found among the
loaded libraries, with the ``scipy_`` prefix and ``64_`` suffix of NumPy's wheels), so
it costs ~2 us per block and needs no package; where NumPy uses another BLAS (MKL,
Accelerate) or the library cannot be found, it does nothing.

The thread count is process-wide: a BLAS call that another Python thread starts
inside the block also runs on one thread (slower, never wrong). Nested and
concurrent blocks count their depth, so the count is restored once, by the last
block to leave. While ``tapegrad.jit`` records, entering and leaving are logged as
calls of the program (``tapegrad._trace.HOOK``), so replays run their GEMMs on one
thread too.

Two *independent* pieces of work, each on one BLAS thread, can run side by side on two
cores instead: Note [Intra-op parallelism] in _parallel.py.
"""

from __future__ import annotations

import ctypes
import os
import threading

from . import _trace

__all__ = [
    "one_thread",
    "SMALL_MNK",
    "user_threads",
    "hold",
    "release",
    "HOLD",
    "held_serial",
    "release_hold",
]

# Products with m·n·k below this run on one thread (~0.15 ms of float32 GEMM on one core).
SMALL_MNK = 1 << 23

_LOCK = threading.Lock()
_STATE = {"handles": None, "depth": 0, "saved": ()}


def _openblas_handles():
    """``[(get_num_threads, set_num_threads)]`` of every OpenBLAS loaded in this process."""
    try:
        with open("/proc/self/maps") as f:  # Linux; elsewhere nothing is limited
            fields = [line.split(None, 5) for line in f if "openblas" in line.lower()]
    except OSError:
        return []
    paths = {parts[5].strip() for parts in fields if len(parts) == 6}
    handles = []
    for path in sorted(paths):
        try:
            lib = ctypes.CDLL(path, mode=getattr(os, "RTLD_NOLOAD", 0))
        except OSError:
            continue
        for prefix in ("scipy_", ""):
            for suffix in ("64_", "", "_64"):
                get = getattr(lib, f"{prefix}openblas_get_num_threads{suffix}", None)
                put = getattr(lib, f"{prefix}openblas_set_num_threads{suffix}", None)
                if get is not None and put is not None:
                    get.restype = ctypes.c_int
                    get.argtypes = ()
                    put.restype = None
                    put.argtypes = (ctypes.c_int,)
                    handles.append((get, put))
                    break
            else:
                continue
            break
    return handles


def _handles():
    handles = _STATE["handles"]
    if handles is None:
        handles = _STATE["handles"] = _openblas_handles()
    return handles


def _enter():
    with _LOCK:
        if _STATE["depth"] == 0:
            saved = []
            for get, put in _STATE["handles"]:
                n = get()
                saved.append(n)
                if n != 1:
                    put(1)
            _STATE["saved"] = saved
        _STATE["depth"] += 1


def _leave():
    with _LOCK:
        if _STATE["depth"] == 0:  # unpaired (never expected): nothing to restore
            return
        _STATE["depth"] -= 1
        if _STATE["depth"] == 0:
            for (_, put), n in zip(_STATE["handles"], _STATE["saved"], strict=True):
                if n != 1:
                    put(n)


def hold() -> bool:
    """BLAS on one thread until :func:`release` (nested and concurrent holds count, as
    ``one_thread`` blocks do); False, and nothing to release, without OpenBLAS. A
    ``tg.jit.cache`` replay holds it for the whole call under ``TAPEGRAD_INTRA_OP=step``
    (Note [One pool per step] in _parallel.py)."""
    if not _handles():
        return False
    _enter()
    return True


def release() -> None:
    """Undo one :func:`hold` that returned True."""
    _leave()


def _call(fn):
    hook = _trace.HOOK[0]
    if hook is not None:
        hook(fn, ())  # logged into the recording, so replays limit their GEMMs too
    else:
        fn()


class one_thread:  # noqa: N801 - used like a function: ``with one_thread(mnk):``
    """Context manager: BLAS on one thread inside the block when ``mnk < SMALL_MNK``
    (Note [Small GEMMs on one thread]); ``mnk`` is the largest m·n·k in the block.

    ``log=False`` inside a kernel called through ``tapegrad._trace.opaque``: the replay
    calls that kernel, which limits its own threads (Note [Opaque kernels])."""

    __slots__ = ("on", "log")

    def __init__(self, mnk, log=True):
        self.on = mnk < SMALL_MNK and bool(_handles())
        self.log = log

    def __enter__(self):
        if self.on:
            if self.log:
                _call(_enter)
            else:
                _enter()
        elif HOLD.held:  # all threads for a large product (Note [One BLAS block per call])
            release_hold(keep_open=True)
        return self

    def __exit__(self, *exc):
        if self.on:
            if self.log:
                _call(_leave)
            else:
                _leave()
        return False


def user_threads() -> int:
    """NumPy's OpenBLAS thread count as the user set it: inside a :class:`one_thread` block,
    the count the outermost block saved; 1 without OpenBLAS."""
    handles = _handles()
    if not handles:
        return 1
    with _LOCK:
        if _STATE["depth"]:
            return _STATE["saved"][0]
        return handles[0][0]()


# Note [One BLAS block per call]
# Each ``one_thread`` block sets and restores the thread count of both loaded OpenBLAS
# libraries: six ctypes calls and a lock, ~4.5 us idle, three times per
# ``vmap(grad(loss))`` call of the benchmarks' MLP. While a call that opens the hold runs
# on this thread (``HOLD.open``: tg.func.vmap's outermost call), the first GEMM that
# asks :func:`held_serial` enters the one-thread state and keeps it until the call
# returns (:func:`release_hold`); later GEMMs find it entered, and ``one_thread`` blocks
# of other ops inside the call nest in it (no ctypes calls). A block for a product too
# large for one thread leaves it first, so every GEMM still gets the threads the policy
# gives it. While tapegrad.jit records (``_trace.HOOK``) the per-GEMM blocks are used
# (they are logged into the recording). As for any block, a BLAS call that another
# Python thread makes meanwhile also runs on one thread (slower, never wrong).
class _Hold(threading.local):
    open = False  # a holding call runs on this thread
    held = False  # ... and this thread entered the one-thread state for it


HOLD = _Hold()


def held_serial(mnk) -> bool:
    """Whether a GEMM of size ``mnk`` may run now without a block of its own, the held
    one-thread state standing for it (Note [One BLAS block per call])."""
    hold = HOLD
    if not hold.open or mnk >= SMALL_MNK or _trace.HOOK[0] is not None:
        return False
    if not hold.held:
        if not _handles():
            return False
        _enter()
        hold.held = True
    return True


def release_hold(keep_open=False) -> None:
    """Leave the held one-thread state (the holding call returned, or a large product
    wants every thread); ``keep_open``: later GEMMs of the call may enter it again."""
    hold = HOLD
    hold.open = keep_open and hold.open
    if hold.held:
        hold.held = False
        _leave()
