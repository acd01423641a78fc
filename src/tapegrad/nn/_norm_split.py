"""Layer norm's passes split by rows over the pool, under ``TAPEGRAD_INTRA_OP=step``.

Note [One pool per step] in tapegrad/_parallel.py. Layer norm's statistics are taken
over the trailing axes, so every row (an index of the leading axes) is normalised on its
own: :func:`forward` runs the very passes of ``_norm_ops.normalize`` (the means as GEMVs
against a column of 1/n) and :func:`grad_input` the row-wise part of
``_norm_ops._backward_arrays_affine`` on blocks of the first axis, one per thread: the
same NumPy calls on views, so the same bits (tests/test_parallel_kernels.py). The weight
and bias gradients sum over the rows and stay with the caller. Each returns None where
the split does not apply (mode off, small, not float32/64, no weight or bias).
"""

from __future__ import annotations

import numpy as np

from .._parallel import MIN_ELEMENTS, STEP, map_rows

__all__ = ["forward", "grad_input", "STEP"]

_DTYPES = (np.dtype(np.float32), np.dtype(np.float64))


def _ok(x, k, *others) -> bool:
    return (
        STEP[0]
        and x.dtype in _DTYPES
        and x.ndim > k
        and x.shape[0] >= 2
        and x.size >= 2 * MIN_ELEMENTS
        and all(a.dtype == x.dtype for a in others)
    )


def _mean(a, col, k):
    """``_norm_ops._trailing_mean`` with its column of 1/n given."""
    lead = a.shape[: a.ndim - k]
    return np.matmul(a.reshape(lead + (col.shape[0],)), col).reshape(lead + (1,) * k)


def _forward_kernel(outs, ins, w, b, col, k, eps):
    (out, xhat, invstd, mean, var), (x,) = outs, ins
    mean[...] = _mean(x, col, k)
    xc = np.subtract(x, mean, out=xhat)
    var[...] = _mean(xc * xc, col, k)
    np.add(var, eps, out=invstd)  # 1 / sqrt(var + eps), as normalize computes it
    np.sqrt(invstd, out=invstd)
    np.divide(1.0, invstd, out=invstd)
    np.multiply(xc, invstd, out=xhat)
    np.multiply(xhat, w, out=out)
    np.add(out, b, out=out)


def forward(xd, w, b, col, k, eps):
    """``(out, xhat, invstd, mean, var)`` as ``_norm_ops.normalize`` computes them for
    layer norm with a weight and a bias (``w``, ``b`` in their broadcast view; ``col``
    the (n, 1) column of 1/n), or None."""
    if not _ok(xd, k, w, b) or not xd.flags.c_contiguous:
        return None
    keep = xd.shape[: xd.ndim - k] + (1,) * k
    out, xhat = np.empty_like(xd), np.empty_like(xd)
    mean, var, invstd = (np.empty_like(xd, shape=keep) for _ in range(3))
    outs = (out, xhat, invstd, mean, var)
    map_rows(_forward_kernel, outs, (xd,), (w, b, col, k, eps), 8 * xd.size)
    return outs


def _grad_kernel(outs, ins, w, wcol, k):
    (gx, gdx), (gd, xhat, invstd) = outs, ins
    np.multiply(gd, xhat, out=gdx)
    lead = gd.shape[: gd.ndim - k]
    keep = lead + (1,) * k
    n = wcol.shape[0]
    m1 = np.matmul(gd.reshape(lead + (n,)), wcol).reshape(keep)  # mean(ĝ)
    m2 = np.matmul(gdx.reshape(lead + (n,)), wcol).reshape(keep)  # mean(ĝ ⊙ x̂)
    np.multiply(gd, w, out=gx)
    gx -= m1
    gx -= np.multiply(xhat, m2)
    gx *= invstd


def grad_input(gd, xhat, invstd, w, wcol, k):
    """``(gx, gd ⊙ x̂)`` of ``_norm_ops._backward_arrays_affine``, or None."""
    if not _ok(gd, k, xhat, invstd, w) or gd.shape != xhat.shape:
        return None
    gx, gdx = np.empty_like(gd), np.empty_like(gd)
    map_rows(_grad_kernel, (gx, gdx), (gd, xhat, invstd), (w, wcol, k), 6 * gd.size)
    return gx, gdx
