"""Array work split over a pool of worker threads, as torch's ``at::parallel_for``.

Note [Intra-op parallelism]
NumPy runs every ufunc on one thread, and OpenBLAS hands a GEMM to its other threads only
when it is large (Note [Small GEMMs on one thread]), so the small kernels that make up a
small model's step leave the second core idle: exact GELU's erf (some twenty ufunc calls
over a 16 x 64 x 256 activation, a tenth of a small GPT's step), the per-head GEMMs and
softmax of attention, a small convolution's GEMMs. NumPy releases the GIL inside its
ufunc loops and BLAS calls, so independent pieces of such work run at once on separate
Python threads. One pool of persistent daemon worker threads, sleeping on a queue between
jobs (no spinning: on a loaded machine a job costs a wake-up, not a core), runs them in
two shapes:

* :func:`map_rows` runs ``kernel(outs, ins, *shared)`` on blocks of rows (the first
  axis) of arrays, one block per thread, the caller taking the first; OpenBLAS is held
  at one thread meanwhile (the blocks already fill the cores). Rows are independent, so
  an elementwise kernel gives bitwise the one-thread result, and a kernel with GEMMs the
  products of one BLAS thread (the same bits for attention's small GEMMs,
  tests/test_parallel_kernels.py). Used by GELU (ops/gelu_kernels.py) and attention
  (nn/_attention_split.py). One thread below :data:`MIN_ELEMENTS` per extra thread.
* :func:`pair` is the two-job case: ``(first(), second())`` with ``second`` on a worker
  while the caller runs ``first``: the two halves of a batch in a convolution, or its
  input and weight gradients (nn/_conv_ops.py, nn/_conv_grid.py). Each piece chooses
  its own BLAS threads (``one_thread`` inside it), and it must be plain array work with
  outputs disjoint from the other's.

Off by default; ``TAPEGRAD_INTRA_OP=1`` (read at import; :data:`ENABLED` at run time)
turns it on. Measured on the idle 2-core development machine at the end of the fourth
session (default BLAS threads, ``benchmarks/gpt_step.py --rounds 5``, four alternating
pairs of runs), the split lost: GPT step eager 1.39-1.56x torch with it against
1.26-1.35x without, cached 1.15-1.32x against 0.99-1.19x; the digits CNN
(``benchmarks/cnn_cells.py``) showed no difference beyond the noise. OpenBLAS's own
threads spin-wait on the second core for a while after every GEMM, so a worker woken
there competes with them instead of finding a free core. Keep it off until a
measurement on a machine with free cores says otherwise.

Kernels with their own size rule (:data:`KERNELS`, :func:`may_split`): a convolution
whose GEMM has at least ``nn._conv_ops.PAIR_MNK`` multiply-adds (the digits CNN's second
convolution, 1024 x 144 x 32) splits its batch in two halves, or runs its input and
weight gradients side by side, when ``TAPEGRAD_INTRA_OP`` is ``1`` or ``kernels`` (these
alone). They are off by default too: on the idle 2-core machine at the end of the fifth
session (``benchmarks/cnn_cells.py --rounds 3 --env serial:TAPEGRAD_INTRA_OP=0``, two
runs) the digits CNN step with the split took 1.49-1.64x torch eager and 1.19-1.29x
cached, without it 1.07-1.15x and 0.76-0.80x. Every GEMM of such a step already runs on
one BLAS thread (Note
[Small GEMMs on one thread]), so no OpenBLAS thread spins on the second core, and the
pieces are a few large NumPy calls each (~100-200 us), long enough to pay for waking a
worker. Cost measured on the loaded
machine (fifth session, CPU time, one process): the conv2 forward 193 -> 266 us of CPU
when split, the backward 420 -> 650 us; the wall-clock gain on an idle machine is the
measurement above; under load :func:`busy` keeps every split off.

One set of rules, :func:`num_threads`, decides how many threads either may use: one (the
work runs on the caller alone) unless ``TAPEGRAD_INTRA_OP=1`` (or, for :func:`may_split`,
``TAPEGRAD_INTRA_OP=kernels``), with fewer than two CPUs for
this process, no OpenBLAS found, or more runnable threads on the machine than CPUs
(:func:`busy`: a second core is not free); otherwise NumPy's OpenBLAS thread count (found
as in Note [Small GEMMs on one thread]; inside a ``one_thread`` block the count it saved),
so ``torch.set_num_threads``/threadpoolctl limits and ``--threads 1`` hold here too
(``threadpool_limits(1)`` is how users say "one core"). Work started on a worker, or by the
caller while the pool runs another split (nested in the caller's own piece, or from a
concurrent Python thread), runs on its caller alone: the pool serves one split at a time
and never waits on itself. The busy check, measured on a 2-core machine: waking a helper
onto a busy core cost ~20% more CPU per conv step and saved no time (load 10), and so it
does for map_rows: the split GELU forward and backward of a 16 x 64 x 256 activation took
2.94 ms of wall time and 1.88 ms of CPU against 2.32 ms and 1.43 ms on one thread (load
16), causal attention's over 16 x 4 x 64 x 32 heads 5.4 ms and 3.5 ms against 4.5 ms and
3.0 ms (load 18).

While ``tapegrad.jit`` records, a :func:`map_rows` call is logged as one call of the
program (``tapegrad._trace.HOOK``), whose replays split it by these rules as they run;
:func:`pair` runs inside opaque kernels (Note [Opaque kernels] in _trace.py), one call each.

Note [One pool per step]
``TAPEGRAD_INTRA_OP=step`` (:data:`STEP`; off by default) is the cure tried for the
spinning above: one pool for the whole step instead of two pools fighting over the
second core. A ``tg.jit.cache`` replay holds OpenBLAS at one thread for the whole call
(``_blas_threads.hold``: its threads go to sleep and never spin), and the large work of
a transformer step runs on the pool: ``linear``'s forward GEMM as two row blocks (every
block above OpenBLAS's small-matrix bound, so a block gives the bits of the whole
product on one thread) and its dX and dW GEMMs side by side (:func:`pair`, one opaque
kernel; nn/_linear_split.py), layer norm's forward and its input gradient
(nn/_norm_split.py), GELU and attention (as with ``1``; attention then
leaves the decision to the replay as the others do). Eager steps split the same kernels
but do not hold BLAS. The convolutions' split (:func:`may_split`) stays off: it lost on
the idle machine with every GEMM already on one BLAS thread, so spinning was not its
problem.
:data:`IGNORE_LOAD` (``TAPEGRAD_INTRA_OP_IGNORE_LOAD=1``) makes :func:`busy` say no, for
benchmarks that must measure the splits on a loaded machine.

Measured on the loaded 2-core machine (eighth session, load 14-22; wall times mean
nothing there, so CPU times), the small GPT's cached step (``benchmarks/gpt_step.py
--splits``, ``benchmarks/gpt_profile.py``): the split kernels carry 81% of the step's
one-thread time (16.6 of 20.5 ms); on two threads the step makes 36 splits of ~450 us of
CPU each, the calling thread keeps ~13 ms of CPU and the workers take ~9 ms, 3-14% more
CPU in all than one thread. docs/benchmarks.md (eighth session) has the overhead and
the idle-machine estimate. The A/B run on the idle machine at the session's end
(``gpt_step.py --rounds 3 --runs 6 --splits --env step:TAPEGRAD_INTRA_OP=step``, six
interleaved processes per setting) says it loses, so it stays off: cached 1.24x torch
(runs 1.04-1.30x) against 0.98x (0.91-1.10x) without it, eager 1.55x against 1.19x; with
it a step took 15.4 ms of the calling thread's CPU plus 11.4 ms of the workers' against
14.0 ms on one thread. The pieces (~270 us each) do not run twice as fast side by side:
they share one memory bus and the GIL between NumPy calls, and each hand-off wakes a
sleeping thread.
"""

from __future__ import annotations

import os
import queue
import threading
import time

from . import _blas_threads, _trace

__all__ = [
    "map_rows",
    "gemm_cost",
    "pair",
    "num_threads",
    "two_cores",
    "may_split",
    "busy",
    "MIN_ELEMENTS",
    "ENABLED",
    "KERNELS",
    "STEP",
    "IGNORE_LOAD",
]

#: Elements per thread below which :func:`map_rows` runs a kernel on the calling thread alone.
MIN_ELEMENTS = 1 << 15

_MODE = os.environ.get("TAPEGRAD_INTRA_OP", "").strip()

#: ``ENABLED[0]``: whether any work may be split (off unless ``TAPEGRAD_INTRA_OP=1`` or
#: ``step``: Note [Intra-op parallelism] has the measurement).
ENABLED = [_MODE in ("1", "step")]

#: ``KERNELS[0]``: whether kernels with their own size rule (:func:`may_split`: the
#: convolutions) may split (``TAPEGRAD_INTRA_OP=1`` or ``kernels``; off by default, and off
#: under ``step``: the convolution split lost on its own, with no BLAS thread spinning).
KERNELS = [_MODE in ("1", "kernels")]

#: ``STEP[0]``: "one pool" (``TAPEGRAD_INTRA_OP=step``): a ``tg.jit.cache`` replay holds
#: OpenBLAS at one thread for the whole call, and the large GEMMs of ``linear`` and layer
#: norm's passes split over this pool too (Note [One pool per step]).
STEP = [_MODE == "step"]

#: ``IGNORE_LOAD[0]``: :func:`busy` always answers False (``TAPEGRAD_INTRA_OP_IGNORE_LOAD=1``).
#: For benchmarks only: it lets a split be measured on a loaded machine, where it is a loss.
IGNORE_LOAD = [os.environ.get("TAPEGRAD_INTRA_OP_IGNORE_LOAD", "").strip() == "1"]

# workers: job queues of the worker threads; grow: held while adding one; in_use: held by
# the split running on the pool
_POOL = {"workers": [], "grow": threading.Lock(), "in_use": threading.Lock()}
_LOCAL = threading.local()  # .worker: True on pool threads (no nested splitting)


def _reset_after_fork():
    """The child has no worker threads, and a split running in the parent at the fork will
    never release the pool there: a new pool starts on first use."""
    _POOL.update(workers=[], grow=threading.Lock(), in_use=threading.Lock())


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


def busy() -> bool:
    """Whether more threads are runnable than this process has CPUs (read at most every
    50 ms; the 1-minute load average would lag behind a benchmark by a minute)."""
    if IGNORE_LOAD[0]:
        return False
    now = time.monotonic()
    if now - _BUSY["at"] > _BUSY_EVERY:
        n = _runnable()
        _BUSY["busy"] = n is not None and n > (_CPUS[0] or _cpus())
        _BUSY["at"] = now
    return _BUSY["busy"]


def num_threads() -> int:
    """The threads a split may use now (Note [Intra-op parallelism]): NumPy's OpenBLAS
    thread count as the user set it, or 1 where a rule says no."""
    if not ENABLED[0]:
        return 1
    return _free_threads()


def _free_threads() -> int:
    if _CPUS[0] is None:
        _CPUS[0] = _cpus()
    if _CPUS[0] < 2:
        return 1
    if busy():  # first: a loaded machine answers without asking OpenBLAS
        return 1
    threads = _blas_threads.user_threads()  # 1 without OpenBLAS
    return max(threads, 1)


def two_cores() -> bool:
    """Whether a second core may be used now (Note [Intra-op parallelism])."""
    return num_threads() > 1


def may_split() -> bool:
    """Whether a kernel that chose to split by its own size rule may use a second core now:
    the rules of :func:`num_threads` without the global switch, unless
    ``TAPEGRAD_INTRA_OP=1`` or ``kernels`` turns kernels on (:data:`KERNELS`; not ``step``)."""
    return ((ENABLED[0] and not STEP[0]) or KERNELS[0]) and _free_threads() > 1


def _worker(jobs):
    _LOCAL.worker = True
    while True:
        fn, args, done = jobs.get()
        try:
            result = fn(*args)
        except BaseException as e:  # noqa: BLE001 - handed back to the caller, raised there
            done.put((None, e))
        else:
            done.put((result, None))


def _workers(n):
    """``n`` job queues of persistent daemon worker threads."""
    with _POOL["grow"]:
        workers = _POOL["workers"]
        while len(workers) < n:
            jobs = queue.SimpleQueue()
            threading.Thread(
                target=_worker, args=(jobs,), name=f"tapegrad-intraop-{len(workers)}", daemon=True
            ).start()
            workers.append(jobs)
        return workers[:n]


def _acquire():
    """The pool's lock, taken for one split; None on a worker or while another split runs."""
    if getattr(_LOCAL, "worker", False):
        return None
    lock = _POOL["in_use"]
    return lock if lock.acquire(blocking=False) else None


def _run(first, rest):
    """Run ``first = (fn, args)`` here and each of ``rest`` on its own worker, with the
    pool held (:func:`_acquire`); the results in order, or the first error once all are done."""
    done = queue.SimpleQueue()
    for q, (fn, args) in zip(_workers(len(rest)), rest, strict=True):
        q.put((fn, args, done))
    results, error = [None], None
    try:
        results[0] = first[0](*first[1])
    except BaseException as e:  # noqa: BLE001 - wait for the workers before raising
        error = e
    # The order the workers finish in does not matter: only the first error is raised.
    for _ in rest:
        result, e = done.get()
        results.append(result)
        if error is None and e is not None:
            error = e
    if error is not None:
        raise error
    return results


def pair(first, second, parallel=None):
    """``(first(), second())``, ``second`` on a worker thread when the rules allow (Note
    [Intra-op parallelism]); else one after the other. ``parallel``: None, the global
    rules (:func:`two_cores`) decide; True or False, the caller decided (a kernel's own
    size rule with :func:`may_split`). Both must be plain array work that is safe to run
    concurrently (disjoint outputs)."""
    if not (two_cores() if parallel is None else parallel):
        return first(), second()
    lock = _acquire()
    if lock is None:
        return first(), second()
    try:
        return tuple(_run((first, ()), [(second, ())]))
    finally:
        lock.release()


def map_rows(kernel, outs, ins, shared=(), cost=None) -> None:
    """Run ``kernel(outs, ins, *shared)`` over row blocks of the arrays, on several threads
    when they are large (Note [Intra-op parallelism]).

    Args:
        kernel: a module-level function ``kernel(outs, ins, *shared)`` that writes every
            row of each array in ``outs`` from the same rows of ``ins`` (and all of
            ``shared``): no row depends on another.
        outs: tuple of arrays to write (any strides: a block is a view).
        ins: tuple of arrays to read, with the same first dimension.
        shared: values (arrays too) every block reads whole.
        cost: the work in elements of one elementwise pass (the outputs' sizes when None);
            a GEMM of m·n·k multiply-adds counts about m·n·k / 8 (:func:`gemm_cost`).
    """
    hook = _trace.HOOK[0]
    if hook is not None:
        hook(_map_rows, (kernel, outs, ins, shared, cost))  # one call of the replay program
    else:
        _map_rows(kernel, outs, ins, shared, cost)


def gemm_cost(m, n, k) -> int:
    """A GEMM's work in :func:`map_rows`'s units (elements of one elementwise pass): one
    core does about 30 float32 multiply-adds in the time of one element of a NumPy ufunc
    pass over memory (60 GFLOP/s against ~1 ns per element), so m·n·k / 8 is cautious."""
    return m * n * k // 8


def _blocks(outs, ins, cost=None):
    """Row ranges, one per thread; a single one where splitting does not pay."""
    rows = outs[0].shape[0] if outs[0].ndim else 1
    size = sum(a.size for a in outs) if cost is None else cost
    if size // MIN_ELEMENTS < 2:  # before num_threads(): no system calls for small kernels
        return [(0, rows)]
    n = min(num_threads(), rows, size // MIN_ELEMENTS)
    if n <= 1 or not all(a.ndim and a.shape[0] == rows for a in outs + ins):
        return [(0, rows)]
    step = -(-rows // n)
    return [(i, min(i + step, rows)) for i in range(0, rows, step)]


def _map_rows(kernel, outs, ins, shared=(), cost=None):
    blocks = _blocks(outs, ins, cost)
    lock = _acquire() if len(blocks) > 1 else None
    if lock is None:
        kernel(outs, ins, *shared)
        return

    def job(a, b):
        return kernel, (tuple(o[a:b] for o in outs), tuple(x[a:b] for x in ins), *shared)

    # The blocks share the cores: a GEMM inside a kernel runs on one BLAS thread.
    _blas_threads._enter()
    try:
        _run(job(*blocks[0]), [job(a, b) for a, b in blocks[1:]])
    finally:
        _blas_threads._leave()
        lock.release()
