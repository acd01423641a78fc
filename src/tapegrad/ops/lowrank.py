"""Randomized low-rank SVD and PCA: svd_lowrank, pca_lowrank (Halko, Martinsson & Tropp 2009,
Algorithms 4.4 and 5.1), step for step as PyTorch's ``torch._lowrank``.

The random test matrix is drawn from tapegrad's default generator (``tg.manual_seed`` makes it
reproducible; its values differ from PyTorch's stream). Everything else is matmul, QR and SVD,
so the results are differentiable through those ops. When q is at least the rank of A the
factorization is exact: U, S, V are then A's (up to the signs of the singular vectors).
"""

from __future__ import annotations

import numpy as np

from ..creation import randn
from ._registry import register
from ._util import as_tensor
from .decomp import qr, svd
from .linalg import matmul

__all__ = ["svd_lowrank", "pca_lowrank"]


def _approximate_basis(A, q, niter, M):
    """An orthonormal Q (…, m, q) whose range approximates A's (Algorithm 4.4)."""
    R = randn(A._data.shape[-1], q, dtype=A._data.dtype)
    X = matmul(A, R)
    if M is not None:
        X = X - matmul(M, R)
    Q = qr(X).Q
    for _ in range(niter):
        X = matmul(A.mT, Q)
        if M is not None:
            X = X - matmul(M.mT, Q)
        Q = qr(X).Q
        X = matmul(A, Q)
        if M is not None:
            X = X - matmul(M, Q)
        Q = qr(X).Q
    return Q


def _svd_lowrank(A, q, niter, M):
    m, n = A._data.shape[-2:]
    if M is not None:
        M = as_tensor(M, "svd_lowrank").broadcast_to(A._data.shape)
    if m < n:  # work on Aᵀ (Algorithm 5.1 wants a tall matrix)
        A = A.mT
        M = M.mT if M is not None else None
    Q = _approximate_basis(A, q, niter, M)
    B = matmul(Q.mT, A)
    if M is not None:
        B = B - matmul(Q.mT, M)
    U, S, Vh = svd(B, full_matrices=False)
    V, U = Vh.mT, matmul(Q, U)
    return (V, S, U) if m < n else (U, S, V)


def _float(A, op):
    A = as_tensor(A, op)
    dt = A._data.dtype
    if dt not in (np.float32, np.float64):  # torch's errors, not a cast to float32
        where = f"(input of dtype {dt}, shape {list(A.shape)})"
        if dt == np.float16:
            raise NotImplementedError(f"{op}: \"geqrf_cpu\" not implemented for 'Half' {where}")
        if dt.kind == "c":  # torch takes them; the algorithm here is written with .mT, not .mH
            raise RuntimeError(f"{op}: complex inputs are not supported {where}")
        raise RuntimeError(f"{op}: expected a float32 or float64 input {where}")
    if A._data.ndim < 2:
        raise RuntimeError(f"{op}: A must have at least 2 dimensions, got {list(A.shape)}")
    return A


@register("svd_lowrank", method=False)
def svd_lowrank(A, q=6, niter=2, M=None):
    """(U, S, V), A − M ≈ U diag(S) Vᵀ of rank ``q`` (default 6) for (…, m, n) A, with
    ``niter`` subspace iterations; U (…, m, q), S (…, q), V (…, n, q)."""
    A = _float(A, "svd_lowrank")
    return _svd_lowrank(A, 6 if q is None else q, 2 if niter is None else niter, M)


@register("pca_lowrank", method=False)
def pca_lowrank(A, q=None, center=True, niter=2):
    """(U, S, V) of :func:`svd_lowrank` of A with its column means subtracted (``center``);
    ``q`` defaults to min(6, m, n)."""
    A = _float(A, "pca_lowrank")
    m, n = A._data.shape[-2:]
    if q is None:
        q = min(6, m, n)
    elif not 0 <= q <= min(m, n):
        raise ValueError(
            f"q(={q}) must be non-negative integer and not greater than min(m, n)={min(m, n)}"
        )
    if niter < 0:
        raise ValueError(f"niter(={niter}) must be non-negative integer")
    if center:
        A = A - A.mean(dim=-2, keepdim=True)
    return _svd_lowrank(A, q, niter, None)
