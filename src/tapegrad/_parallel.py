"""Elementwise array kernels split over threads, as torch's ``at::parallel_for``.

Note [Intra-op parallelism]
PyTorch runs an elementwise kernel over more than 32,768 elements on all of its intra-op
threads; NumPy runs every ufunc on one. For a fused kernel of many passes (exact GELU's
erf is some twenty ufunc calls over a 16 x 64 x 256 activation) that leaves the second
core idle while the kernel makes up a tenth of a small GPT's step. :func:`map_rows` runs
``kernel(outs, ins)`` on consecutive parts of C-contiguous arrays of one shape, one part
per thread, on persistent worker threads (NumPy releases the GIL inside its ufunc loops,
so the parts run at once). The parts are disjoint and the kernel elementwise, so the
result is bitwise the one-thread result.

How many threads: as many as NumPy's OpenBLAS uses at the moment of the call
(``openblas_get_num_threads``, found as in Note [Small GEMMs on one thread]), so
``torch.set_num_threads``/threadpoolctl limits, ``--threads 1`` and ``one_thread`` blocks
all hold for these kernels too; one thread below :data:`MIN_ELEMENTS` per extra thread,
without OpenBLAS, or when a kernel is called from a worker. While ``tapegrad.jit``
records, the whole call is logged as one call of the program (``tapegrad._trace.HOOK``), so
replays split it the same way.
"""

from __future__ import annotations

import os
import queue
import threading

from . import _blas_threads, _trace

__all__ = ["map_rows", "num_threads", "MIN_ELEMENTS"]

#: Elements per thread below which a kernel runs on the calling thread alone.
MIN_ELEMENTS = 1 << 15

_LOCK = threading.Lock()
_POOL = {"pid": None, "workers": []}
_LOCAL = threading.local()  # .worker: True on pool threads (no nested splitting)


def num_threads() -> int:
    """The threads an elementwise kernel may use now: NumPy's OpenBLAS thread count."""
    handles = _blas_threads._handles()
    if not handles:
        return 1
    return max(1, handles[0][0]())


def _worker(jobs):
    _LOCAL.worker = True
    while True:
        job = jobs.get()
        if job is None:
            return
        kernel, outs, ins, done = job
        try:
            kernel(outs, ins)
        except BaseException as e:  # noqa: BLE001 - handed back to the caller, raised there
            done.put(e)
        else:
            done.put(None)


def _workers(n):
    """``n`` job queues of persistent daemon worker threads (rebuilt after a fork)."""
    with _LOCK:
        if _POOL["pid"] != os.getpid():
            _POOL["pid"], _POOL["workers"] = os.getpid(), []
        workers = _POOL["workers"]
        while len(workers) < n:
            jobs = queue.SimpleQueue()
            threading.Thread(
                target=_worker, args=(jobs,), name=f"tapegrad-intraop-{len(workers)}", daemon=True
            ).start()
            workers.append(jobs)
        return workers[:n]


def map_rows(kernel, outs, ins) -> None:
    """Run ``kernel(outs, ins)`` over parts of the arrays, on several threads when large.

    Args:
        kernel: a module-level function ``kernel(outs, ins)`` that writes every element of
            each array in ``outs`` from the elements at the same positions of ``ins``
            (elementwise: no element depends on another).
        outs: tuple of C-contiguous arrays to write, all of one shape.
        ins: tuple of C-contiguous arrays to read, of that same shape.
    """
    hook = _trace.HOOK[0]
    if hook is not None:
        hook(_map_rows, (kernel, outs, ins))  # one call of the replay program
    else:
        _map_rows(kernel, outs, ins)


def _map_rows(kernel, outs, ins):
    size = outs[0].size
    n = min(num_threads(), size // MIN_ELEMENTS) if not getattr(_LOCAL, "worker", False) else 1
    if n <= 1 or not all(a.flags.c_contiguous and a.size == size for a in outs + ins):
        kernel(outs, ins)
        return
    outs = [a.reshape(-1) for a in outs]
    ins = [a.reshape(-1) for a in ins]
    step = -(-size // n)
    step += -step % 16  # parts start on 64-byte boundaries (float32)
    bounds = [(i, min(i + step, size)) for i in range(0, size, step)]
    done = queue.SimpleQueue()
    jobs = _workers(len(bounds) - 1)
    for q, (a, b) in zip(jobs, bounds[1:]):
        q.put((kernel, tuple(o[a:b] for o in outs), tuple(x[a:b] for x in ins), done))
    a, b = bounds[0]
    error = None
    try:
        kernel(tuple(o[a:b] for o in outs), tuple(x[a:b] for x in ins))
    except BaseException as e:  # noqa: BLE001 - wait for the workers before raising
        error = e
    for _ in jobs:
        e = done.get()
        if error is None and e is not None:
            error = e
    if error is not None:
        raise error
