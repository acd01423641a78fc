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

Note [Two cores for small kernels]
One small GEMM on two OpenBLAS threads loses (above), but two *independent* pieces of
work, each on one BLAS thread, can run side by side: the two halves of a batch in a
convolution, or its input and weight gradients. :func:`pair` runs one piece in the
caller and the other on a helper thread that sleeps on a lock between jobs (no
spinning: on a loaded machine the pair costs a wake-up, not a core). NumPy drops the
GIL inside its loops and GEMMs, so the pieces overlap wherever they spend their time
in NumPy. It runs the pieces one after the other when :func:`two_cores` says no: fewer
than two CPUs for this process, BLAS limited to one thread (``threadpool_limits(1)``,
which users take as "one core"), no OpenBLAS found, more runnable threads on the
machine than CPUs (:func:`busy`: a second core is not free, and waking a helper onto a
busy core cost ~20% more CPU per step and saved no time, measured at load 10 on 2
cores), or the helper already busy (a nested or concurrent pair).
"""

from __future__ import annotations

import ctypes
import os
import threading
import time

from . import _trace

__all__ = ["one_thread", "SMALL_MNK", "pair", "two_cores", "busy"]

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
        return self

    def __exit__(self, *exc):
        if self.on:
            if self.log:
                _call(_leave)
            else:
                _leave()
        return False


class _Helper:
    """One daemon thread that runs the jobs :func:`pair` hands it, one at a time."""

    def __init__(self):
        self.busy = threading.Lock()  # held by the pair using the helper
        self.go = threading.Lock()
        self.done = threading.Lock()
        self.go.acquire()
        self.done.acquire()
        self.job = self.result = self.error = None
        threading.Thread(target=self._loop, name="tapegrad-pair", daemon=True).start()

    def _loop(self):
        while True:
            self.go.acquire()
            try:
                self.result = self.job()
            except BaseException as e:  # noqa: BLE001 - re-raised in the caller
                self.error = e
            self.job = None
            self.done.release()


_HELPER = [None]


def _reset_after_fork():
    _HELPER[0] = None  # the child has no helper thread; a new one starts on first use


if hasattr(os, "register_at_fork"):
    os.register_at_fork(after_in_child=_reset_after_fork)


def _cpus():
    try:
        return len(os.sched_getaffinity(0))
    except AttributeError:  # not Linux
        return os.cpu_count() or 1


_CPUS = [None]


_BUSY = {"at": -1.0, "busy": False}
_BUSY_EVERY = 0.05  # seconds between two reads of the run queue


def _runnable():
    """Threads running or ready to run on the whole machine now (Linux), or None."""
    try:
        with open("/proc/loadavg") as f:  # "0.56 1.74 2.02 3/456 12345": 3 runnable now
            return int(f.read().split()[3].split("/")[0])
    except (OSError, ValueError, IndexError):
        return None


def busy():
    """Whether more threads are runnable than this process has CPUs (read at most every
    50 ms; the 1-minute load average would lag behind a benchmark by a minute)."""
    now = time.monotonic()
    if now - _BUSY["at"] > _BUSY_EVERY:
        n = _runnable()
        _BUSY["busy"] = n is not None and n > (_CPUS[0] or _cpus())
        _BUSY["at"] = now
    return _BUSY["busy"]


def two_cores():
    """Whether :func:`pair` may use a second core (Note [Two cores for small kernels])."""
    if _CPUS[0] is None:
        _CPUS[0] = _cpus()
    handles = _handles()
    if _CPUS[0] < 2 or not handles:
        return False
    with _LOCK:
        if _STATE["depth"]:  # inside one_thread: the count it saved is the user's
            threads = _STATE["saved"][0]
        else:
            threads = handles[0][0]()
    return threads > 1 and not busy()


def pair(first, second, parallel=True):
    """``(first(), second())``, ``second`` on the helper thread when ``parallel`` and
    :func:`two_cores` allow (Note [Two cores for small kernels]). Both must be plain
    array work that is safe to run concurrently (disjoint outputs)."""
    if not (parallel and two_cores()):
        return first(), second()
    helper = _HELPER[0]
    if helper is None:
        with _LOCK:
            helper = _HELPER[0]
            if helper is None:
                helper = _HELPER[0] = _Helper()
    if not helper.busy.acquire(blocking=False):
        return first(), second()
    try:
        helper.job, helper.error = second, None
        helper.go.release()
        try:
            a = first()
        finally:
            helper.done.acquire()
        b, err = helper.result, helper.error
        helper.result = helper.error = None
        if err is not None:
            raise err
        return a, b
    finally:
        helper.busy.release()
