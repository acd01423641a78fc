"""Row-independent array kernels split over threads, as torch's ``at::parallel_for``.

Note [Intra-op parallelism]
PyTorch runs an elementwise kernel over more than 32,768 elements on all of its intra-op
threads; NumPy runs every ufunc on one. For a fused kernel of many passes (exact GELU's
erf is some twenty ufunc calls over a 16 x 64 x 256 activation) that leaves the second
core idle while the kernel makes up a tenth of a small GPT's step; so do the per-head
GEMMs and softmax of attention, each too small for OpenBLAS to split. :func:`map_rows`
runs ``kernel(outs, ins, *shared)`` on blocks of rows (the first axis) of arrays, one
block per thread, on persistent worker threads (NumPy releases the GIL inside its ufunc
loops and BLAS calls, so the blocks run at once), with OpenBLAS on one thread meanwhile
(the blocks already fill the cores). Rows are independent, so an elementwise kernel gives
bitwise the one-thread result; a kernel with GEMMs gives the products of one BLAS thread
(the same bits for attention's small GEMMs, tests/test_parallel_kernels.py).

How many threads: as many as NumPy's OpenBLAS uses at the moment of the call
(``openblas_get_num_threads``, found as in Note [Small GEMMs on one thread]), so
``torch.set_num_threads``/threadpoolctl limits, ``--threads 1`` and ``one_thread`` blocks
all hold for these kernels too; one thread below :data:`MIN_ELEMENTS` per extra thread,
without OpenBLAS, when a kernel is called from a worker, or with the environment variable
``TAPEGRAD_INTRA_OP=0`` (read at import; :data:`ENABLED` at run time), which turns the
splitting off everywhere. While ``tapegrad.jit``
records, the whole call is logged as one call of the program (``tapegrad._trace.HOOK``), so
replays split it the same way.
"""

from __future__ import annotations

import os
import queue
import threading

from . import _blas_threads, _trace

__all__ = ["map_rows", "num_threads", "MIN_ELEMENTS", "ENABLED"]

#: Elements per thread below which a kernel runs on the calling thread alone.
MIN_ELEMENTS = 1 << 15

#: ``ENABLED[0]``: whether kernels may be split at all (``TAPEGRAD_INTRA_OP=0`` turns it off).
ENABLED = [os.environ.get("TAPEGRAD_INTRA_OP", "1").strip() != "0"]

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
        kernel, outs, ins, shared, done = job
        try:
            kernel(outs, ins, *shared)
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


def map_rows(kernel, outs, ins, shared=()) -> None:
    """Run ``kernel(outs, ins, *shared)`` over row blocks of the arrays, on several threads
    when they are large.

    Args:
        kernel: a module-level function ``kernel(outs, ins, *shared)`` that writes every
            row of each array in ``outs`` from the same rows of ``ins`` (and all of
            ``shared``): no row depends on another.
        outs: tuple of arrays to write (any strides: a block is a view).
        ins: tuple of arrays to read, with the same first dimension.
        shared: values (arrays too) every block reads whole.
    """
    hook = _trace.HOOK[0]
    if hook is not None:
        hook(_map_rows, (kernel, outs, ins, shared))  # one call of the replay program
    else:
        _map_rows(kernel, outs, ins, shared)


def _blocks(outs, ins):
    """Row ranges, one per thread; a single one where splitting does not pay."""
    rows = outs[0].shape[0] if outs[0].ndim else 1
    if not ENABLED[0] or getattr(_LOCAL, "worker", False):
        return [(0, rows)]
    size = sum(a.size for a in outs)
    n = min(num_threads(), rows, size // MIN_ELEMENTS)
    if n <= 1 or not all(a.ndim and a.shape[0] == rows for a in outs + ins):
        return [(0, rows)]
    step = -(-rows // n)
    return [(i, min(i + step, rows)) for i in range(0, rows, step)]


def _map_rows(kernel, outs, ins, shared=()):
    blocks = _blocks(outs, ins)
    if len(blocks) == 1:
        kernel(outs, ins, *shared)
        return
    done = queue.SimpleQueue()
    jobs = _workers(len(blocks) - 1)
    # The blocks share the cores: a GEMM inside a kernel runs on one BLAS thread.
    _blas_threads._enter()
    try:
        for q, (a, b) in zip(jobs, blocks[1:]):
            q.put((kernel, tuple(o[a:b] for o in outs), tuple(x[a:b] for x in ins), shared, done))
        a, b = blocks[0]
        error = None
        try:
            kernel(tuple(o[a:b] for o in outs), tuple(x[a:b] for x in ins), *shared)
        except BaseException as e:  # noqa: BLE001 - wait for the workers before raising
            error = e
        for _ in jobs:
            e = done.get()
            if error is None and e is not None:
                error = e
    finally:
        _blas_threads._leave()
    if error is not None:
        raise error
