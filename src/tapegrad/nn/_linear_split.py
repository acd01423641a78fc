"""``linear``'s three GEMMs over the pool, under ``TAPEGRAD_INTRA_OP=step``.

Note [One pool per step] in tapegrad/_parallel.py: with OpenBLAS held at one thread for
a whole replayed step, the GEMMs that OpenBLAS would have run on two threads run as two
pieces on tapegrad's pool instead (a row block of a GEMM on one BLAS thread gives the
same bits as the whole product on one thread, within :data:`BLOCK_MNK`'s rule, on
OpenBLAS's SkylakeX kernels; on its Haswell kernels any row split differs by about one ulp
in a few % of the elements: tests/test_one_pool.py compares within that rounding):

* forward ``y = x @ wᵀ + b``: blocks of the rows of ``x`` (the leading dims folded);
* ``dx = g @ w`` and ``dw = gᵀ @ x`` side by side (:func:`grads`): the two always have the
  same m·n·k, so the pair is balanced, each is the whole product (the same bits), and the
  two cost one hand-off. It runs as one opaque kernel (Note [Opaque kernels]), holding
  BLAS at one thread also when eager;
* where only one of them is needed: blocks of the rows of ``g`` (dx), or of ``dw`` (of
  ``gᵀ``, a view: no copy).

Each function returns None where the split does not apply (mode off, too small, mixed
or integer dtypes) and the caller runs its one GEMM. Whether a call really runs on two
threads is decided when it runs (:func:`tapegrad._parallel.map_rows`), so a replay
recorded on a busy machine still splits once the machine is free.
"""

from __future__ import annotations

import numpy as np

from .. import _blas_threads, _trace
from .._parallel import STEP, gemm_cost, map_rows, pair

__all__ = ["forward", "grads", "grad_input", "grad_weight", "BLOCK_MNK", "STEP"]

#: The least m·n·k of each row block. OpenBLAS takes small products (about 100^3
#: multiply-adds and below) through other kernels than its blocked GEMM, summing in
#: another order: a 231 x 65 x 130 product split into two row blocks of ~0.98M differed
#: from the whole in the last bits. Above the bound blocks and whole agree (the tests), and
#: a block is worth a hand-off (~70 us on one core; the small GPT's smallest product,
#: 1024 x 64 x 64, splits into two of 2^21).
BLOCK_MNK = 1 << 20

_DTYPES = (np.dtype(np.float32), np.dtype(np.float64))


def _gemm_kernel(outs, ins, b, bias):
    (out,), (a,) = outs, ins
    np.matmul(a, b, out=out)
    if bias is not None:
        np.add(out, bias, out=out)


def _ok(a, b, m, n, k) -> bool:
    return (
        STEP[0]
        and a.dtype == b.dtype
        and a.dtype in _DTYPES
        and m >= 2
        and m * n * k >= 2 * BLOCK_MNK
    )


def forward(xd, wd, bd):
    """``x @ wᵀ (+ b)`` as ``nn._fused.linear`` computes it, or None."""
    if not STEP[0] or xd.ndim < 2 or wd.ndim != 2 or not xd.flags.c_contiguous:
        return None
    n_out, n_in = wd.shape
    if xd.shape[-1] != n_in:  # the caller's GEMM raises the error
        return None
    rows = xd.size // n_in if n_in else 0
    if not _ok(xd, wd, rows, n_out, n_in) or (bd is not None and bd.dtype != xd.dtype):
        return None
    x2 = xd.reshape(rows, n_in)
    # empty_like(x): made from an input, so that tapegrad.jit records the allocation
    out = np.empty_like(xd, shape=(rows, n_out), order="C")
    map_rows(_gemm_kernel, (out,), (x2,), (wd.T, bd), gemm_cost(rows, n_out, n_in))
    return out.reshape(xd.shape[:-1] + (n_out,))


def grad_input(g2, wd):
    """``g2 @ w`` for the 2-d gradient ``g2`` (rows, out), or None."""
    rows, n_out = g2.shape
    n_in = wd.shape[1]
    if not _ok(g2, wd, rows, n_in, n_out):
        return None
    out = np.empty_like(g2, shape=(rows, n_in), order="C")
    map_rows(_gemm_kernel, (out,), (g2,), (wd, None), gemm_cost(rows, n_in, n_out))
    return out


def grad_weight(g2, x2):
    """``g2ᵀ @ x2`` (out, in), or None."""
    rows, n_out = g2.shape
    n_in = x2.shape[1]
    if not _ok(g2, x2, n_out, n_in, rows):
        return None
    out = np.empty_like(g2, shape=(n_out, n_in), order="C")
    map_rows(_gemm_kernel, (out,), (g2.T,), (x2, None), gemm_cost(n_out, n_in, rows))
    return out


def grads(g2, wd, x2):
    """``(g2 @ w, g2ᵀ @ x2)``, the two GEMMs side by side, or None."""
    if not STEP[0]:
        return None
    rows, n_out = g2.shape
    n_in = wd.shape[1]
    same = g2.dtype == wd.dtype == x2.dtype and g2.dtype in _DTYPES
    if not same or rows * n_out * n_in < BLOCK_MNK:
        return None
    return _trace.opaque(_grads_kernel, g2, wd, x2)


def _grads_kernel(g2, wd, x2):
    held = _blas_threads.hold()
    try:
        return pair(lambda: np.matmul(g2, wd), lambda: np.matmul(g2.T, x2))
    finally:
        if held:
            _blas_threads.release()
