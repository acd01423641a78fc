"""Householder QR in LAPACK's compact form: geqrf, linalg.householder_product (orgqr), ormqr.

``geqrf`` packs A = Q R as R on and above the diagonal and the reflectors' vectors v_i below it
(v_i has 1 at row i, implied), with Q = H_1 ⋯ H_k, H_i = I − τ_i v_i v_iᵀ. The products are
composed from matmuls of the reflectors, so their gradients (in A's strictly lower part, τ and
the other operand) and higher derivatives come from those ops; geqrf itself has no derivative,
as in PyTorch.
"""

from __future__ import annotations

from collections import namedtuple

import numpy as np

from ..autograd.graph import make_results
from ._mathutil import const
from ._registry import register
from ._util import as_tensor, float_data
from .linalg import matmul
from .tri import tril

__all__ = ["geqrf", "householder_product", "ormqr"]

GeqrfResult = namedtuple("geqrf", ["a", "tau"])


@register("geqrf", differentiable=False)
def geqrf(input, *, out=None):
    """(a, tau): LAPACK's geqrf of a (…, m, n) matrix (module docstring); its outputs
    require grad like the input, but, as in PyTorch, have no derivative."""
    import scipy.linalg.lapack  # noqa: PLC0415

    A = as_tensor(input, "geqrf")
    data = float_data(A)
    if data.ndim < 2:
        raise RuntimeError(
            f"geqrf: The input tensor A must have at least 2 dimensions, got {list(A.shape)}"
        )
    m, n = data.shape[-2:]
    k = min(m, n)
    qr = np.empty_like(data)
    tau = np.empty(data.shape[:-2] + (k,), data.dtype)
    if k:
        fn = scipy.linalg.lapack.get_lapack_funcs("geqrf", (data,))
        for i in np.ndindex(data.shape[:-2]):
            qr[i], tau[i] = fn(data[i])[:2]
    else:
        qr[...] = data

    def backward(ga, gtau):
        raise RuntimeError("the derivative for 'geqrf' is not implemented.")

    return GeqrfResult(*make_results((qr, tau), (A,), backward, "GeqrfBackward"))


def _householder_q(A, tau, op):
    """Q = H_1 ⋯ H_k (…, m, m) from the reflectors below A's diagonal and tau (…, k)."""
    m, n = A._data.shape[-2:]
    k = tau._data.shape[-1]
    dtype = np.result_type(A._data.dtype, tau._data.dtype)
    V = tril(A, -1) + const(np.eye(m, n, dtype=A._data.dtype))
    Q = const(np.broadcast_to(np.eye(m, dtype=dtype), A._data.shape[:-2] + (m, m)))
    if k == 0:  # Q = I, which depends on nothing: recorded (with zero gradients) as torch's
        Q = Q + V.sum(-1, keepdim=True) * 0.0 + tau.sum(-1, keepdim=True).unsqueeze(-1) * 0.0
    for i in range(k):
        v = V[..., :, i : i + 1]
        Q = Q - matmul(matmul(Q, v) * tau[..., i : i + 1].unsqueeze(-1), v.transpose(-2, -1))
    return Q


def _check(A, tau, op):
    A, tau = as_tensor(A, op), as_tensor(tau, op)
    if A._data.ndim < 2:
        raise RuntimeError(f"{op}: input must have at least 2 dimensions, got {list(A.shape)}")
    if tau._data.ndim != A._data.ndim - 1 or tau._data.shape[:-1] != A._data.shape[:-2]:
        raise RuntimeError(
            f"{op}: tau {list(tau.shape)} must have the batch shape of input {list(A.shape)} "
            f"and one more dimension"
        )
    if tau._data.shape[-1] > min(A._data.shape[-2:]):
        raise RuntimeError(
            f"{op}: input.shape[-1] must be greater than or equal to tau.shape[-1], got "
            f"input {list(A.shape)} and tau {list(tau.shape)}"
        )
    return A, tau


@register("orgqr")
def householder_product(input, tau, *, out=None):
    """``tg.linalg.householder_product`` (``orgqr``): the first n columns of H_1 ⋯ H_k for
    (…, m, n) ``input`` (m ≥ n) and (…, k) ``tau``; differentiable in both."""
    A, tau = _check(input, tau, "linalg.householder_product")
    m, n = A._data.shape[-2:]
    if m < n:
        raise RuntimeError(
            f"linalg.householder_product: input.shape[-2] must be greater than or equal to "
            f"input.shape[-1], got {list(A.shape)}"
        )
    return _householder_q(A, tau, "linalg.householder_product")[..., :, :n]


@register("ormqr")
def ormqr(input, input2, input3, left=True, transpose=False, *, out=None):
    """Q C, Qᵀ C, C Q or C Qᵀ (``left``, ``transpose``) for Q = H_1 ⋯ H_k of
    :func:`geqrf`'s ``input`` and ``input2`` (tau), and C = ``input3``; differentiable in all
    three."""
    A, tau = _check(input, input2, "ormqr")
    C = as_tensor(input3, "ormqr")
    m = A._data.shape[-2]
    if C._data.ndim < 2 or C._data.shape[-2 if left else -1] != m:
        raise RuntimeError(
            f"ormqr: other {list(C.shape)} must have {m} {'rows' if left else 'columns'} "
            f"to match input {list(A.shape)} (left={left})"
        )
    side = C._data.shape[-2 if left else -1]
    if tau._data.shape[-1] != min(side, A._data.shape[-1]):
        where = "other.shape[-2]" if left else "other.shape[-1]"
        raise RuntimeError(
            f"torch.ormqr: tau.shape[-1] must be equal to min({where}, input.shape[-1]), got "
            f"tau {list(tau.shape)}, input {list(A.shape)}, other {list(C.shape)}"
        )
    Q = _householder_q(A, tau, "ormqr")
    if transpose:
        Q = Q.transpose(-2, -1)
    return matmul(Q, C) if left else matmul(C, Q)
