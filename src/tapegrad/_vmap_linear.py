"""``linear`` under vmap with a batched weight: per-sample gradients in one Node.

Note [Per-sample linear]
Under ``vmap(grad(loss))`` every parameter is a leaf batched at the vmap level, its
physical value the unbatched weight expanded along the batch (a stride-0 view, Note
[grad under vmap]). Composed from the generic rules, ``linear`` would record a
transpose, a batched matmul and a broadcast add (three Nodes, each dispatched and
wrapped), and the matmul's backward would form the weight gradient as a batch of
k = 1 matrix products. Here it is one Node on the physical values:

* forward: one GEMM over all rows when the weight is the same for every element
  (stride 0 along the batch), else a batched matmul; the bias added in place;
* backward with nothing recorded (create_graph=False, Note [First-order fast paths]):
  the input gradient as one GEMM (or a batched matmul), the per-sample weight gradient
  as ``einsum('no,ni->noi')`` (a batch of outer products written once, contiguous in
  the weight's layout, in cache-sized chunks: Note [Outer products in chunks]), the
  bias gradient as the rows of g;
* backward recording a graph (create_graph=True, or a batch prefix of Note [Batched
  gradients]): the same products in tapegrad ops, so higher orders and forward mode
  (the JVP derived from the backward) work as for the composed ops.
"""

from __future__ import annotations

import math
import os
import threading

import numpy as np

from . import _big_buffers, _parallel, _trace
from ._batched import BatchedTensor, wrap
from ._blas_threads import held_serial, one_thread, user_threads
from ._trace import opaque
from .autograd.graph import ANOMALY, batched_shape, fresh_grad, make_result, sum_to
from .grad_mode import STATE
from .ops.linalg import matmul_array
from .tensor import RETRACE, Tensor

__all__ = ["per_sample_linear", "rule", "outer_products"]

# OpenBLAS keeps a GEMM (not a GEMV: more than one row) of m·n·k <= 2^18 on one thread by
# itself (Note [Small GEMMs on one thread]; ops/linalg.py's _gemm_rows): no block needed.
_SERIAL_MNK = 1 << 18


def _gemm(a, b):
    """``a @ b`` for 2-D arrays, on one BLAS thread where Note [Small GEMMs on one thread]
    wants it (a block only where OpenBLAS would not keep it on one thread by itself)."""
    mnk = a.shape[0] * a.shape[1] * b.shape[1]
    if a.shape[0] > 1 and mnk <= _SERIAL_MNK or held_serial(mnk):
        return matmul_array(a, b)
    with one_thread(mnk):
        return matmul_array(a, b)


def _bmm(a, b, mnk):
    """``np.matmul(a, b)`` of a batch, on one BLAS thread where the policy wants it."""
    if held_serial(mnk):
        return np.matmul(a, b)
    with one_thread(mnk):
        return np.matmul(a, b)


def per_sample_linear(x, w, b):
    """``x @ wᵀ + b`` per batch element, on physical (unbatched) Tensors.

    Args:
        x: (N, *m, in), the batch first.
        w: (N, out, in), the batch first (often a stride-0 expansion of one weight).
        b: None, (N, out) (batched) or (out,) (shared).

    Returns:
        The (N, *m, out) result, or None where this kernel does not apply (mixed or
        non-float dtypes): the caller then composes the op from the generic rules.
    """
    xd, wd = x._data, w._data
    dt = xd.dtype
    if dt.kind != "f" or wd.dtype != dt:
        return None
    if b is None:
        bd = None
        need_b = b_batched = False
    else:
        bd = b._data
        if bd.dtype != dt or bd.ndim not in (1, 2):
            return None
        need_b = b._rg
        b_batched = bd.ndim == 2
    n, n_out, n_in = wd.shape
    x_shape = xd.shape
    m = math.prod(x_shape[1:-1])
    if not (n and m and n_in and n_out):
        return None
    shared = wd.strides[0] == 0  # one weight for every element: one GEMM
    if shared:
        out = _gemm(xd.reshape(n * m, n_in), wd[0].T).reshape(n, m, n_out)
    else:
        out = _bmm(xd.reshape(n, m, n_in), wd.transpose(0, 2, 1), n * m * n_in * n_out)
    if bd is not None:
        if not b_batched:
            out += bd
        elif bd.strides[0] == 0:  # one bias for every element (a lifted parameter)
            out += bd[0]
        else:
            out += bd[:, None, :]
    out = out.reshape(x_shape[:-1] + (n_out,))
    need_x, need_w = x._rg, w._rg
    out_shape = out.shape

    def backward(g):
        if not STATE.enabled and g._data.shape == out_shape:  # Note [First-order fast paths]
            # Note [Deferred outer products]
            defer = DEFER.nodes is not None and me[0] in DEFER.nodes
            return _backward_arrays(
                g._data, x, w, need_x, need_w, need_b, b_batched, m, shared, defer
            )
        # Dims from the right: Note [Batched gradients].
        g3 = g.reshape(batched_shape((n, m, n_out)))
        gx = gw = gb = None
        if need_x:
            gx = (g3 @ w).reshape(batched_shape(x_shape))
        if need_w:
            gw = g3.mT @ x.reshape(n, m, n_in)
        if need_b:
            gb = g3.sum(dim=-2) if b_batched else sum_to(g3, (n_out,))
        return gx, gw, gb

    if need_x:
        saved = (w, x) if need_w else (w,)
    else:
        saved = (x,) if need_w else ()
    me = [None]  # the Node, for Note [Deferred outer products]
    result = make_result(out, (x, w, b), backward, "PerSampleLinearBackward", saved=saved)
    me[0] = result.grad_fn
    return result


# Note [Outer products in chunks]
# ``einsum('no,ni->noi')`` zero-fills its output and then accumulates the products into
# it: two passes over the per-sample weight gradients (16 MiB for the benchmarks' 256 x
# 256 layer at batch 64, float32), each going out to L3 or memory when the whole output
# is written at once. Written in chunks of whole samples of at most CHUNK_BYTES, each
# chunk is zero-filled and accumulated while it sits in the core's L2 cache, so the
# output goes out to memory once; and the Python work after the kernel finds less of
# its own data evicted. Each product is one multiplication (plus zero), so chunking is
# bit-identical to one einsum (tests/test_vmap_outer_chunks.py). Measured in the whole
# ``vmap(grad(loss))`` call of benchmarks/func_transforms.py, chunked and whole calls
# paired in alternating order: 0.11-0.28 ms less per call (medians of 160 pairs, three
# predecessors, thread CPU time, load 15-17; chunks of 1-4 MiB alike, 256 KiB less). A
# sample larger than a chunk is written in blocks of its rows. The chunks call einsum's
# C function (``np.einsum`` without ``optimize`` hands its arguments to it unchanged)
# straight: np.einsum's dispatcher and Python wrapper cost ~2 us a call, 40 us of the
# benchmark's 21 calls.
CHUNK_BYTES = 1 << 20

try:
    from numpy._core.multiarray import c_einsum as _einsum
except ImportError:  # NumPy 1.x names its core ``numpy.core``; np.einsum is the same kernel
    _einsum = np.einsum


def outer_products(g, x):
    """``einsum('no,ni->noi', g, x)`` for 2-D ``g`` (n, o) and ``x`` (n, i) of one dtype,
    written in cache-sized chunks (Note [Outer products in chunks]); a new C-contiguous
    array. One call of a ``tapegrad.jit`` recording (Note [Opaque kernels]): its
    ``out=`` chunks of a fresh array would otherwise be recorded as writes into a
    constant."""
    return opaque(_outer_products, g, x)


def _outer_products(g, x):
    n, o = g.shape
    i = x.shape[1]
    if n * o * i * g.itemsize <= CHUNK_BYTES:
        return _einsum("no,ni->noi", g, x)
    return _outer_into(g, x, _big_buffers.empty((n, o, i), g.dtype))  # Note [Reused big buffers]


def _outer_into(g, x, out):
    """The outer products of ``g`` and ``x`` written into ``out`` in chunks."""
    n, o = g.shape
    row = x.shape[1] * g.itemsize
    per = o * row
    if per <= CHUNK_BYTES:
        step = CHUNK_BYTES // per
        for s in range(0, n, step):
            e = s + step
            _einsum("no,ni->noi", g[s:e], x[s:e], out=out[s:e])
        return out
    step = max(1, CHUNK_BYTES // row)  # rows of one sample at a time
    for s in range(n):
        gs, xs, os_ = g[s], x[s], out[s]
        for r in range(0, o, step):
            _einsum("o,i->oi", gs[r : r + step], xs, out=os_[r : r + step])
    return out


def _backward_arrays(gd, x, w, need_x, need_w, need_b, b_batched, m, shared, defer=False):
    """The first-order rule on arrays: each gradient a new array (Note [Fresh gradients]);
    ``defer``: the Node may leave its weight gradient's outer products to the end of the
    pass (Note [Deferred outer products])."""
    wd = w._data
    n, n_out, n_in = wd.shape
    g3 = gd.reshape(n, m, n_out)
    gx = gw = gb = None
    if need_x:
        if shared:
            gxd = _gemm(g3.reshape(n * m, n_out), wd[0])
        else:
            gxd = _bmm(g3, wd, n * m * n_in * n_out)
        gx = fresh_grad(gxd.reshape(x._data.shape))
    if need_w:
        x3 = x._data.reshape(n, m, n_in)
        if m == 1:  # a batch of outer products, written once in the weight's layout
            if defer and _deferrable(w):
                gw = fresh_grad(_defer(g3[:, 0], x3[:, 0]))
            else:
                gw = fresh_grad(outer_products(g3[:, 0], x3[:, 0]))
        else:
            gw = fresh_grad(_bmm(g3.transpose(0, 2, 1), x3, n * m * n_in * n_out))
    if need_b:
        if b_batched:
            gb = fresh_grad(g3[:, 0].copy() if m == 1 else g3.sum(axis=1))
        else:
            gb = fresh_grad(g3.reshape(-1, n_out).sum(axis=0))
    return gx, gw, gb


def rule(x, w, b, level):
    """The batching rule's fast case (``_batch_rules_linalg``): ``x`` and ``w`` batched at
    ``level`` over plain physical values, ``b`` None, batched likewise or a plain Tensor.
    Returns the BatchedTensor result, or None to compose the op from the generic rules."""
    if type(x) is not BatchedTensor or type(w) is not BatchedTensor:
        return None
    if x._blevel != level or w._blevel != level:
        return None
    xv, wv = x._bval, w._bval
    if type(xv) is BatchedTensor or type(wv) is BatchedTensor:
        return None
    if wv._data.ndim != 3 or xv._data.ndim < 2:
        return None
    if b is None:
        bv = None
    elif type(b) is BatchedTensor:
        bv = b._bval
        if b._blevel != level or type(bv) is BatchedTensor or bv._data.ndim != 2:
            return None
    elif isinstance(b, Tensor) and b.ndim == 1:
        bv = b
    else:
        return None
    out = per_sample_linear(xv, wv, bv)
    return None if out is None else wrap(out, level)


# Note [Deferred outer products]
# The per-sample weight gradients (21.6 MB for the benchmarks' MLP at batch 64) stream
# through the caches and evict the Python working set: the rest of the backward pass
# (the Nodes below the largest layer, the engine's captures) and the transforms' own
# work after it then run on cold caches. When nothing can read a weight gradient before
# the pass ends, its outer products are written after the pass instead: ``grad`` under
# vmap (func.py, first order) walks the graph before the pass
# (:func:`_vmap_grad.plan_backward`) and opens a deferral when no Node or leaf in it has
# a hook; a per-sample linear Node of that graph (``DEFER.nodes``) then defers when its
# weight is one of grad's own lifted leaves whose AccumulateGrad has that Node's edge as
# its only incoming edge (``DEFER.targets``): the engine only captures such a gradient,
# never sums or shows it. It hands the engine the (not yet written) output array and
# queues the products; grad writes them (:func:`close_deferral`) once the engine has
# returned and grad has wrapped the gradients (which reads no values), before anything
# else runs. The Node's other gradients are computed as before, and the
# arrays a queued product reads (the Node's incoming gradient, its saved input) are
# written by nothing after the Node ran. A nested backward (a checkpoint's recompute)
# builds Nodes outside ``DEFER.nodes``; anomaly mode and tapegrad.jit recordings
# (``_trace.HOOK``, ``RETRACE``) do not defer. Bit-identical: the same kernel on the
# same arrays, later. Measured (benchmarks/func_transforms.py's MLP, thread CPU time,
# a 24 MB sweep before each call): 0.14-0.25 ms less per call. Where a second core is
# free the queued products are written on two (Note [Deferred outer products on two cores]).
class _Defer(threading.local):
    nodes = None  # the graph's Nodes while a deferral is open, else None
    targets = frozenset()  # AccumulateGrad Nodes a deferred gradient may go to
    jobs = None  # [(g, x, out)]


DEFER = _Defer()


def may_defer() -> bool:
    """No anomaly mode, no tapegrad.jit recording (Note [Deferred outer products])."""
    return not ANOMALY["enabled"] and RETRACE[0] is None and _trace.HOOK[0] is None


def open_deferral(nodes, targets) -> None:
    DEFER.nodes, DEFER.targets, DEFER.jobs = nodes, targets, []


def close_deferral(flush_jobs: bool) -> None:
    """Write the queued outer products (``flush_jobs``) and close the deferral."""
    jobs = DEFER.jobs
    DEFER.nodes, DEFER.targets, DEFER.jobs = None, frozenset(), None
    if flush_jobs and jobs:
        if _split_now(sum(out.nbytes for _, _, out in jobs)):
            _write_split(jobs)
        else:
            _write(jobs)


def _deferrable(w) -> bool:
    """``w`` is a leaf whose AccumulateGrad takes only this Node's gradient."""
    if w.grad_fn is not None:
        return False
    ref = w._accumulator
    return ref is not None and ref() in DEFER.targets


def _defer(g, x):
    n, o = g.shape
    out = _big_buffers.empty((n, o, x.shape[1]), g.dtype)  # Note [Reused big buffers]
    DEFER.jobs.append((g, x, out))
    return out


# Note [Deferred outer products on two cores]
# The deferred outer products (Note [Deferred outer products]) are plain einsum calls,
# which release the GIL, on arrays nothing else touches; and while a vmap call holds
# OpenBLAS at one thread (Note [One BLAS block per call]) no OpenBLAS worker spins on
# the second core, the cost that made the generic splits lose (Note [Intra-op
# parallelism] in _parallel.py). So they are written in two halves, each job cut at its
# middle sample (or, for a single sample, its middle output row: each half's writes stay
# contiguous), the caller writing the first halves while a worker of ``_parallel.pair``
# writes the second. Each element is one product, so the halves are bit-identical to the
# serial kernel (tests/test_vmap_outer_split.py). When: ``SPLIT[0]`` is "auto" and this
# process may use two CPUs, NumPy's OpenBLAS allows more than one
# thread as the user set it (``threadpool_limits(1)`` or ``torch.set_num_threads(1)``
# keep it serial), the machine is not busy (``_parallel.busy()``), and the products
# total at least :data:`SPLIT_BYTES`; "force" splits whenever there are two jobs' worth
# of rows (tests, and benchmarks on a loaded machine, where the figures mean little);
# "0" never. ``TAPEGRAD_VMAP_SPLIT=0|auto|force`` sets it at import, and
# ``TAPEGRAD_INTRA_OP=0`` (nothing splits) turns it off too. The pool serves one split
# at a time: a flush on a worker or during another split writes serially.
# Off ("0") by default: on the idle 2-core machine at the end of the eighth session
# (``benchmarks/func_transforms.py --repeat 201``, two runs, the split's row and the
# serial row interleaved in one process) the split did not pay: serial / split 0.97x and
# 0.91x (per-round medians 1.01x and 0.96x); the ~0.6 ms of products it moves to the
# second core is eaten by the hand-off and by the two halves sharing one memory bus.
SPLIT_BYTES = 1 << 22  # ~0.3 ms of einsum on one core


def split_mode(environ) -> str:
    """``SPLIT[0]``'s value for an environment (Note [Deferred outer products on two cores])."""
    mode = environ.get("TAPEGRAD_VMAP_SPLIT", "").strip().lower() or "0"
    if mode not in ("0", "auto", "force"):
        raise ValueError(f"TAPEGRAD_VMAP_SPLIT must be 0, auto or force, not {mode!r}")
    return "0" if environ.get("TAPEGRAD_INTRA_OP", "").strip() == "0" else mode


#: ``SPLIT[0]``: "auto", "force" or "0" (Note [Deferred outer products on two cores]).
SPLIT = [split_mode(os.environ)]

_CPUS = [None]


def _split_now(nbytes) -> bool:
    """Whether the deferred products of ``nbytes`` go to two cores now."""
    mode = SPLIT[0]
    if mode == "force":
        return True
    if mode != "auto" or nbytes < SPLIT_BYTES:
        return False
    if _CPUS[0] is None:
        try:
            _CPUS[0] = len(os.sched_getaffinity(0))
        except AttributeError:  # not Linux
            _CPUS[0] = os.cpu_count() or 1
    return _CPUS[0] > 1 and user_threads() > 1 and not _parallel.busy()


def _write(jobs):
    for g, x, out in jobs:
        _outer_into(g, x, out)


def _halves(jobs):
    """Each job cut in two at its middle sample (a single sample: at its middle row)."""
    first, second = [], []
    for g, x, out in jobs:
        n, o = g.shape
        if n > 1:
            h = n // 2
            first.append((g[:h], x[:h], out[:h]))
            second.append((g[h:], x[h:], out[h:]))
        elif o > 1:
            h = o // 2
            first.append((g[:, :h], x, out[:, :h]))
            second.append((g[:, h:], x, out[:, h:]))
        else:
            first.append((g, x, out))
    return first, second


def _write_split(jobs):
    first, second = _halves(jobs)
    with one_thread(0, log=False):  # no OpenBLAS thread spins meanwhile (nested: free)
        _parallel.pair(lambda: _write(first), lambda: _write(second), parallel=True)
