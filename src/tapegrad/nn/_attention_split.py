"""Attention's array kernels split over the leading batch axis (Note [Intra-op parallelism]).

Every (batch, head) slice of attention is independent: its two GEMMs, its softmax and
the five GEMMs of its gradient touch no other slice, and each is too small for OpenBLAS
to use a second thread (64 x 64 x 32 for a small GPT). :func:`forward` and
:func:`backward` run the very formulas of ``_attention_ops`` (Note [Attention backward])
on blocks of the leading axis, one block per thread, for the common case: no dropout, a
bias that is None or shared by every slice (≤ 2-d: the causal mask), and q, k, v with
the same batch dims. They return None where that does not hold, and the caller takes its
usual path.
"""

from __future__ import annotations

import numpy as np

from .._parallel import MIN_ELEMENTS, STEP, map_rows, num_threads

__all__ = ["forward", "backward"]


def _splittable(q, k, v, n_scores) -> bool:
    return (
        q.ndim >= 3
        and q.shape[0] >= 2
        and q.shape[:-2] == k.shape[:-2] == v.shape[:-2]
        and q.dtype == k.dtype == v.dtype
        and q.dtype.kind == "f"
        and n_scores >= 2 * MIN_ELEMENTS
        and (STEP[0] or num_threads() > 1)  # STEP: map_rows decides as it runs
    )


def forward(q, k, v, bias, scale, dropout_mask):
    """``(out, p, dead)`` as ``_attention_ops.attention`` computes them, or None."""
    L, S = q.shape[-2], k.shape[-2]
    n_scores = q.size // q.shape[-1] * S
    if dropout_mask is not None or (bias is not None and bias.ndim > 2):
        return None
    if not _splittable(q, k, v, n_scores):
        return None
    batch = q.shape[:-2]
    # empty_like(q): made from an input, so that tapegrad.jit records the allocations
    out = np.empty_like(q, shape=batch + (L, v.shape[-1]), order="C")
    p = np.empty_like(q, shape=batch + (L, S), order="C")
    dead = np.empty_like(q, dtype=bool, shape=batch + (L, 1), order="C")
    map_rows(_forward_kernel, (out, p, dead), (q, k, v), (bias, scale))
    return out, p, dead


def _forward_kernel(outs, ins, bias, scale):
    from ._attention_ops import _probabilities, _scaled_t  # noqa: PLC0415 - a cycle at import

    (out, p, dead), (q, k, v) = outs, ins
    s = np.matmul(q, _scaled_t(k, scale), out=p)
    if bias is not None:
        np.add(s, bias, out=s)
    _, d = _probabilities(s)
    dead[...] = d
    np.matmul(p, v, out=out)


def backward(gd, p, q, k, v, scale):
    """``(gq, gk, gv)`` of ``_attention_ops._backward_arrays`` (no dropout, no bias
    gradient, all three inputs needing one), or None."""
    if not _splittable(q, k, v, p.size) or gd.shape[:-2] != q.shape[:-2]:
        return None
    if gd.dtype != q.dtype:
        return None
    gq, gk, gv = np.empty_like(q), np.empty_like(k), np.empty_like(v)
    map_rows(_backward_kernel, (gq, gk, gv), (gd, p, q, k, v), (scale,))
    return gq, gk, gv


def _backward_kernel(outs, ins, scale):
    from ._attention_ops import _row_sums, _t, _tv  # noqa: PLC0415 - a cycle at import

    (gq, gk, gv), (gd, p, q, k, v) = outs, ins
    np.matmul(_tv(p), gd, out=gv)
    ds = np.matmul(gd, _t(v))
    ds -= _row_sums(ds * p)
    ds *= p
    np.matmul(ds, k, out=gq)  # as the one-thread path, bit for bit
    gq *= gq.dtype.type(scale)
    np.matmul(_tv(ds), q, out=gk)
    gk *= gk.dtype.type(scale)
