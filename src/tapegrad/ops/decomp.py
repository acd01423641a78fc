"""Matrix decompositions with gradients: svd, svdvals, eigh, eigvalsh, qr; and what they
give: pinv, lstsq, matrix_rank, the spectral norms; plus cholesky_ex, inv_ex, tensorinv,
tensorsolve, vander (LU is in lu.py).

Rules (PyTorch's, real case; g·· the incoming gradients, E_ij = S_j² − S_i², 1 on the
diagonal, skew(X) = X − Xᵀ):
    svd:  gA = U [skew(Uᵀ gU)/E · S + S · skew(Vᵀ gV)/E + diag(gS)] Vᵀ
               + (I − UUᵀ) gU S⁻¹ Vᵀ   (tall A)   or   U S⁻¹ gVᵀ (I − VVᵀ)   (wide A)
    eigh: gA = V [diag(gL) + (Vᵀ gV)/F] Vᵀ,  F_ij = L_j − L_i (∞ on the diagonal)
    qr (m >= n): with M = R gRᵀ − gQᵀ Q,  gA = [gQ + Q copyltu(M)] R⁻ᵀ
Each rule re-runs the decomposition on the input inside backward (a no-op for the graph
unless create_graph=True), so the factors it uses are differentiable and second
derivatives come out right. Repeated singular values / eigenvalues make these gradients
infinite, as in PyTorch.
"""

from __future__ import annotations

from collections import namedtuple

import numpy as np

from .. import _dtypes
from ..autograd.graph import make_results
from ..grad_mode import STATE, no_grad
from ..tensor import Tensor
from . import _dtype_errors
from ._mathutil import const
from ._registry import register
from ._util import as_tensor, float_data
from .linalg import matmul
from .solve import (
    LinAlgError,
    _call,
    _cholesky_info,
    _not_positive_definite,
    _square,
    solve,
    solve_triangular,
)
from .tri import diag_embed, tril

__all__ = [
    "svd",
    "svdvals",
    "eigh",
    "eigvalsh",
    "qr",
    "pinv",
    "lstsq",
    "matrix_rank",
    "cholesky_ex",
    "inv_ex",
    "tensorinv",
    "tensorsolve",
    "vander",
]

SVDResult = namedtuple("svd", ["U", "S", "Vh"])
EighResult = namedtuple("eigh", ["eigenvalues", "eigenvectors"])
QRResult = namedtuple("qr", ["Q", "R"])
LstsqResult = namedtuple("lstsq", ["solution", "residuals", "rank", "singular_values"])
CholeskyExResult = namedtuple("cholesky_ex", ["L", "info"])
InvExResult = namedtuple("inv_ex", ["inverse", "info"])


def _matrix(A, op):
    t = as_tensor(A, op)
    if t._data.dtype.kind not in "fc":  # torch refuses integer and bool matrices
        raise RuntimeError(
            f"{op}: Expected a floating point or complex tensor as input. "
            f"Got {_dtype_errors.scalar(t._data.dtype)}"
        )
    data = float_data(t)
    if data.ndim < 2:
        raise RuntimeError(
            f"{op}: The input tensor A must have at least 2 dimensions, got shape "
            f"{list(data.shape)}"
        )
    return t, data  # data is t's own array: float or complex


def _mT(x):
    return x.transpose(-2, -1)


# -- SVD ----------------------------------------------------------------------------------


@register("linalg_svd", method=False, function=False)
def _svd_op(A):
    """The reduced SVD as one recorded op with the rule in the module docstring."""
    A, data = _matrix(A, "linalg.svd")
    u, s, vh = _call(np.linalg.svd, "linalg.svd", "the SVD did not converge", data, False)
    m, n = data.shape[-2:]

    def backward(gU, gS, gVh):
        U, S, Vh = _svd_op(A) if STATE.enabled else (const(u), const(s), const(vh))
        return (_svd_backward(U, S, Vh, gU, gS, gVh, m, n),)

    return make_results((u, s, vh), (A,), backward, "LinalgSvdBackward", saved=(A,))


def _svd_backward(U, S, Vh, gU, gS, gVh, m, n):
    k = min(m, n)
    if k == 0:
        return const(np.zeros(gS._data.shape[:-1] + (m, n), gS._data.dtype))
    S2 = S * S
    E = S2.unsqueeze(-2) - S2.unsqueeze(-1)
    E = E + const(np.eye(k, dtype=S._data.dtype))  # 1 on the diagonal (where E is 0)
    V = _mT(Vh)
    gV = _mT(gVh)
    UhgU = matmul(_mT(U), gU)
    VhgV = matmul(Vh, gV)
    inner = (UhgU - _mT(UhgU)) / E * S.unsqueeze(-2)
    inner = inner + S.unsqueeze(-1) * ((VhgV - _mT(VhgV)) / E)
    inner = inner + diag_embed(gS)
    if m > k:
        gUSinv = gU / S.unsqueeze(-2)
        ret = matmul(U, inner) + gUSinv - matmul(U, matmul(_mT(U), gUSinv))
        return matmul(ret, Vh)
    if n > k:
        SinvgVh = gVh / S.unsqueeze(-1)
        ret = matmul(inner, Vh) + SinvgVh - matmul(matmul(SinvgVh, V), Vh)
        return matmul(U, ret)
    return matmul(matmul(U, inner), Vh)


def svd(A, full_matrices=True, *, driver=None):
    """``tg.linalg.svd``: ``A = U diag(S) Vh`` for (..., m, n) A, S descending.

    With ``full_matrices=True`` and a non-square A, the extra columns of U (rows of Vh) are
    not determined by A: as in PyTorch, they carry no gradient (the gradient is the reduced
    SVD's).
    """
    A = as_tensor(A, "linalg.svd")
    m, n = A._data.shape[-2:] if A._data.ndim >= 2 else (0, 0)
    if full_matrices and m != n:
        _, data = _matrix(A, "linalg.svd")
        u, s, vh = _call(np.linalg.svd, "linalg.svd", "the SVD did not converge", data, True)
        if not (A._rg and STATE.enabled):
            return SVDResult(Tensor._wrap(u), Tensor._wrap(s), Tensor._wrap(vh))
        from .joining import cat  # noqa: PLC0415

        U, S, Vh = _svd_op(A)
        k = min(m, n)
        if m > n:  # the complement of U's range, from the full SVD
            return SVDResult(cat([U, const(u[..., k:])], -1), S, Vh)
        return SVDResult(U, S, cat([Vh, const(vh[..., k:, :])], -2))
    return SVDResult(*_svd_op(A))


def svdvals(A, *, driver=None):
    """``tg.linalg.svdvals``: the singular values (descending), with gradient U diag(g) Vh."""
    return _svd_op(A)[1]


LegacySVDResult = namedtuple("svd", ["U", "S", "V"])


def _svd_method(self, some=True, compute_uv=True):
    """``torch.svd`` (deprecated in PyTorch): returns V (not Vh), reduced by default; with
    ``compute_uv=False``, U and V are zero-filled square matrices, as in PyTorch."""
    if not compute_uv:
        S = svdvals(self)
        *batch, m, n = self._data.shape
        U = Tensor._wrap(np.zeros((*batch, m, m), self._data.dtype))
        return LegacySVDResult(U, S, Tensor._wrap(np.zeros((*batch, n, n), self._data.dtype)))
    U, S, Vh = svd(self, full_matrices=not some)
    return LegacySVDResult(U, S, _mT(Vh))


# -- symmetric eigendecomposition ------------------------------------------------------------


@register("linalg_eigh", method=False, function=False)
def _eigh_op(A, UPLO="L"):
    A, data = _square(A, "linalg.eigh")
    if A._data.dtype.kind != "f":
        A = A._cast(data.dtype)
    if UPLO not in ("L", "U"):
        raise RuntimeError(f"linalg.eigh: UPLO must be 'L' or 'U', got {UPLO!r}")
    w, v = _call(np.linalg.eigh, "linalg.eigh", "the eigensolver did not converge", data, UPLO)

    def backward(gL, gV):
        L, V = _eigh_op(A, UPLO) if STATE.enabled else (const(w), const(v))
        F = L.unsqueeze(-2) - L.unsqueeze(-1)
        n = w.shape[-1]
        F = F + const(np.where(np.eye(n, dtype=bool), np.inf, 0.0).astype(w.dtype))
        inner = matmul(_mT(V), gV) / F + diag_embed(gL)
        gA = matmul(matmul(V, inner), _mT(V))
        return ((gA + _mT(gA)) * 0.5,)  # symmetric, as PyTorch's (A is taken as symmetric)

    return make_results((w, v), (A,), backward, "LinalgEighBackward", saved=(A,))


def eigh(A, UPLO="L"):
    """``tg.linalg.eigh``: eigenvalues (ascending) and orthonormal eigenvectors of symmetric
    matrices, reading the ``UPLO`` triangle."""
    return EighResult(*_eigh_op(A, UPLO))


def eigvalsh(A, UPLO="L"):
    """``tg.linalg.eigvalsh``: the eigenvalues of :func:`eigh`."""
    return _eigh_op(A, UPLO)[0]


# -- QR ---------------------------------------------------------------------------------------


@register("linalg_qr", method=False, function=False)
def qr(A, mode="reduced"):
    """``A = Q R`` with orthonormal Q and upper-triangular R (``mode``: 'reduced',
    'complete' or 'r'). Gradient as PyTorch: not for 'r', nor for 'complete' of a tall A."""
    A, data = _matrix(A, "linalg.qr")
    if mode not in ("reduced", "complete", "r"):
        raise RuntimeError(f"qr received unrecognized mode '{mode}'")
    q, r = np.linalg.qr(data, mode="complete" if mode == "complete" else "reduced")
    m, n = data.shape[-2:]
    if mode == "r":
        q = np.zeros(data.shape[:-2] + (0,), data.dtype)

    def backward(gQ, gR):
        if mode == "r" or (mode == "complete" and m > n):
            raise RuntimeError(
                "The derivative of linalg.qr depends on Q, which is not computed when mode='r'"
                if mode == "r"
                else f"linalg.qr: the derivative is not implemented for mode='complete' with a "
                f"tall {m}x{n} matrix (Q is not determined by A there)"
            )
        Q, R = qr(A, mode) if STATE.enabled else (const(q), const(r))
        if m >= n:
            return (_qr_backward_tall(Q, R, gQ, gR),)
        # Wide A = [X | Y], R = [U | V] with X = Q U square (PyTorch's reduction):
        # gX = the square rule with gQ + Y gVᵀ, gY = Q gV.
        Y = A[..., :, m:]
        gU, gV = gR[..., :, :m], gR[..., :, m:]
        gX = _qr_backward_tall(Q, R[..., :, :m], gQ + matmul(Y, _mT(gV)), gU)
        from .joining import cat  # noqa: PLC0415

        return (cat([gX, matmul(Q, gV)], -1),)

    return QRResult(*make_results((q, r), (A,), backward, "LinalgQrBackward", saved=(A,)))


def _qr_backward_tall(Q, R, gQ, gR):
    """gA = [gQ + Q copyltu(M)] R⁻ᵀ with M = R gRᵀ − gQᵀ Q (A tall or square)."""
    M = matmul(R, _mT(gR)) - matmul(_mT(gQ), Q)
    low = tril(M, -1)
    copyltu = low + _mT(low) + diag_embed(M.diagonal(0, -2, -1))
    X = gQ + matmul(Q, copyltu)
    return _mT(solve_triangular(R, _mT(X), upper=True))


# -- built on the SVD --------------------------------------------------------------------------


def _default_rtol(data, S, rtol, atol):
    eps = np.finfo(data.dtype).eps
    m, n = data.shape[-2:]
    if rtol is None:
        rtol = 0.0 if (atol is not None and atol > 0) else eps * max(m, n)
    return rtol, (atol or 0.0)


def pinv(A, rcond=None, hermitian=False, *, atol=None, rtol=None):
    """``tg.linalg.pinv``: the Moore-Penrose pseudo-inverse, V diag(1/S) Uᵀ over the singular
    values above ``max(atol, rtol·S_max)``."""
    A, data = _matrix(A, "linalg.pinv")
    if rcond is not None:
        rtol = rcond._data if isinstance(rcond, Tensor) else rcond
    m, n = data.shape[-2:]
    if m == 0 or n == 0:
        return _mT(A) * 0.0
    with no_grad():
        if hermitian:  # the value reads the lower triangle only (through eigh, as PyTorch)
            P = _pinv_value(tril(A) + _mT(tril(A, -1)), rtol, atol, data)
        else:
            P = _pinv_value(A, rtol, atol, data)

    def backward(g):
        # PyTorch's pinv_backward, at the full input A (also for hermitian=True)
        Pt = pinv(A, None, hermitian, atol=atol, rtol=rtol) if STATE.enabled else P
        return (_pinv_backward(g, Pt, A),)

    return make_results((P._data,), (A,), backward, "LinalgPinvBackward", saved=(A,))[0]


def _pinv_value(A, rtol, atol, data):
    U, S, Vh = _svd_op(A)
    rtol, atol = _default_rtol(data, S, rtol, atol)
    s = S._data
    keep = s > np.maximum(atol, rtol * s.max(axis=-1, keepdims=True) if s.size else 0)
    safe = S + const(np.where(keep, 0.0, 1.0).astype(s.dtype))
    inv_s = const(keep.astype(s.dtype)) / safe
    return matmul(_mT(Vh) * inv_s.unsqueeze(-2), _mT(U))


def _pinv_backward(g, P, A):
    """PyTorch's pinv_backward (FunctionsManual.cpp), for P = pinv(A)."""
    m, n = A._data.shape[-2:]
    Ph, gh = _mT(P), _mT(g)
    if m <= n:
        K = matmul(gh, P)
        KPh = matmul(K, Ph)
        return (
            -_mT(matmul(P, K))
            + KPh
            - matmul(matmul(A, P), KPh)
            + matmul(matmul(Ph, P), gh - matmul(K, A))
        )
    K = matmul(P, gh)
    PhK = matmul(Ph, K)
    return (
        -_mT(matmul(K, P))
        + matmul(matmul(gh - matmul(A, K), P), Ph)
        + PhK
        - matmul(matmul(PhK, P), A)
    )


def _tolerance_array(t, dtype):
    return None if t is None else np.asarray(t._data if isinstance(t, Tensor) else t, dtype)


def matrix_rank(A, *, atol=None, rtol=None, hermitian=False, tol=None):
    """``tg.linalg.matrix_rank``: the number of singular values (|eigenvalues| of the lower
    triangle with ``hermitian``) above ``max(atol, rtol·σ_max)``; ``atol``/``rtol`` may be
    tensors over the batch, and rtol defaults to eps·max(m, n) (0 where atol > 0), as PyTorch.
    """
    A, data = _matrix(A, "linalg.matrix_rank")
    if tol is not None:
        atol, rtol = tol, 0.0
    if not data.size:
        s = np.zeros(data.shape[:-2] + (0,), data.dtype)
    elif hermitian:
        s = np.abs(np.linalg.eigvalsh(data, UPLO="L"))
    else:
        s = np.linalg.svd(data, compute_uv=False)
    atol = _tolerance_array(atol, data.dtype)
    rtol = _tolerance_array(rtol, data.dtype)
    if rtol is None:
        default = np.finfo(data.dtype).eps * max(data.shape[-2:])
        rtol = default if atol is None else np.where(atol > 0, 0.0, default)
    atol = 0.0 if atol is None else atol
    smax = s.max(axis=-1) if s.shape[-1] else np.zeros(s.shape[:-1], s.dtype)
    cut = np.maximum(atol, rtol * smax)[..., None]
    return Tensor._wrap(np.sum(s > cut, axis=-1).astype(np.int64))


_LSTSQ_DRIVERS = ("gels", "gelsy", "gelsd", "gelss")


def lstsq(A, B, rcond=None, *, driver=None):
    """``tg.linalg.lstsq``: the least-squares solution of A X = B (``pinv(A) @ B``, so it is
    differentiable in both), with the outputs of PyTorch's CPU ``driver`` (default 'gelsy'):
    ``residuals`` (squared residual norms per column, differentiable) for a tall A with every
    matrix of full rank and a driver other than 'gelsy', else empty; ``rank`` except for
    'gels' (empty there); ``singular_values`` for 'gelsd' and 'gelss' only."""
    A, data = _matrix(A, "linalg.lstsq")
    B = as_tensor(B, "linalg.lstsq")
    driver = "gelsy" if driver is None else driver
    if driver not in _LSTSQ_DRIVERS:
        raise RuntimeError(
            "torch.linalg.lstsq: parameter `driver` should be one of (gels, gelsy, gelsd, gelss)"
        )
    vector = B._data.ndim == A._data.ndim - 1
    if (B._data.shape[-2] if not vector else B._data.shape[-1]) != data.shape[-2]:
        raise RuntimeError(
            f"torch.linalg.lstsq: input.size(-2) should match other.size(-2), got shapes "
            f"{list(data.shape)} and {list(B._data.shape)}"
        )
    Bm = B.unsqueeze(-1) if vector else B
    X = matmul(pinv(A, rtol=rcond), Bm)
    m, n = data.shape[-2:]
    rank = matrix_rank(A, rtol=rcond)
    empty = Tensor._wrap(np.zeros((0,), data.dtype))
    residuals = empty
    if m > n and driver != "gelsy" and (driver == "gels" or np.all(rank._data == n)):
        r = matmul(A, X) - Bm
        residuals = (r * r).sum(-2)
        residuals = residuals.squeeze(-1) if vector else residuals
    if driver == "gels":
        rank = Tensor._wrap(np.zeros((0,), np.int64))
    sv = empty
    if driver in ("gelsd", "gelss"):
        sv = Tensor._wrap(np.linalg.svd(data, compute_uv=False))
    return LstsqResult(X.squeeze(-1) if vector else X, residuals, rank, Tensor._wrap(sv._data))


# -- error-code variants, LU, tensor inverses ----------------------------------------------------


def cholesky_ex(A, *, upper=False, check_errors=False):
    """``tg.linalg.cholesky_ex``: (L, info); info > 0 is the order of the first minor that
    is not positive-definite (L is then not meaningful), unless ``check_errors``."""
    from .solve import cholesky  # noqa: PLC0415

    try:
        L = cholesky(A, upper=upper)
        info = np.zeros(A.shape[:-2], np.int32)
    except LinAlgError:
        _, data = _square(A, "linalg.cholesky_ex")
        info = _cholesky_info(data)
        if check_errors:
            raise _not_positive_definite(info, "linalg.cholesky_ex") from None
        L = Tensor._wrap(np.zeros(data.shape, data.dtype))
    return CholeskyExResult(L, Tensor._wrap(info))


def inv_ex(A, *, check_errors=False):
    """``tg.linalg.inv_ex``: (inverse, info); info > 0 marks a singular matrix."""
    from .solve import inv  # noqa: PLC0415

    try:
        X = inv(A)
        info = np.zeros(A.shape[:-2], np.int32)
    except LinAlgError:
        # as PyTorch's: solve_ex(A, I), so info is getrf's first zero pivot (1-based) and
        # the invertible matrices of a batch keep their inverse
        from .solve_more import solve_ex  # noqa: PLC0415 (solve_more -> lu -> this module)

        _, data = _square(A, "linalg.inv_ex")
        eye = np.broadcast_to(np.eye(data.shape[-1], dtype=data.dtype), data.shape)
        result = InvExResult(*solve_ex(Tensor._wrap(data), Tensor._wrap(eye)))
        if check_errors:
            where, k = _first_failure(result.info._data)
            raise LinAlgError(
                f"linalg.inv_ex: {where}The diagonal element {k} is zero, the inversion could "
                "not be completed because the input matrix is singular."
            ) from None
        return result
    return InvExResult(X, Tensor._wrap(info))


def _first_failure(info):
    """("(Batch element b): " or "", info there) for the first nonzero info, as torch's
    messages say it."""
    flat = np.asarray(info).reshape(-1)
    b = int(np.flatnonzero(flat)[0])
    return (f"(Batch element {b}): " if np.ndim(info) else ""), int(flat[b])


def tensorinv(A, ind=2):
    """``tg.linalg.tensorinv``: the inverse of A seen as a matrix (first ``ind`` dims by the
    rest), reshaped to ``A.shape[ind:] + A.shape[:ind]``."""
    A = as_tensor(A, "linalg.tensorinv")
    shape = A._data.shape
    rows, cols = int(np.prod(shape[:ind])), int(np.prod(shape[ind:]))
    if rows != cols:
        raise RuntimeError(
            f"linalg.tensorinv: Expected self to satisfy the requirement "
            f"prod(self.shape[ind:]) == prod(self.shape[:ind]), but got {cols} != {rows}"
        )
    from .solve import inv  # noqa: PLC0415

    return inv(A.reshape(rows, cols)).reshape(shape[ind:] + shape[:ind])


def tensorsolve(A, B, dims=None):
    """``tg.linalg.tensorsolve``: X with ``tensordot(A, X, X.ndim) = B``."""
    A, B = as_tensor(A, "linalg.tensorsolve"), as_tensor(B, "linalg.tensorsolve")
    if dims is not None:
        dims = [d % A._data.ndim for d in dims]
        A = A.permute(*[d for d in range(A._data.ndim) if d not in dims], *dims)
    xshape = A._data.shape[B._data.ndim :]
    n = int(np.prod(xshape))
    return solve(A.reshape(-1, n), B.reshape(-1)).reshape(xshape)


def vander(x, *, N=None):
    """``tg.linalg.vander``: columns x⁰, x¹, …, x^(N−1) (increasing powers) along a new last
    dim; a 0-d x is one point (shape (1, N)), as in PyTorch."""
    x = as_tensor(x, "linalg.vander")
    if x._data.ndim == 0:
        x = x.unsqueeze(0)
    N = x._data.shape[-1] if N is None else int(N)
    if N <= 1:
        raise RuntimeError(f"linalg.vander: N must be greater than 1, got {N}")
    if x._data.dtype.kind == "b":
        x = x._cast(_dtypes.int64)
    cols = [x.unsqueeze(-1) ** 0]
    for _ in range(1, N):
        cols.append(cols[-1] * x.unsqueeze(-1))
    from .joining import cat  # noqa: PLC0415

    return cat(cols, -1)


def _qr_method(self, some=True):
    """``torch.qr`` (deprecated in PyTorch): reduced unless ``some=False``."""
    return qr(self, "reduced" if some else "complete")


Tensor.svd = _svd_method
Tensor.qr = _qr_method


def pinverse(input, rcond=1e-15):
    """``torch.pinverse``: :func:`pinv` with PyTorch's older ``rcond`` default."""
    return pinv(input, rcond)


Tensor.pinverse = pinverse
