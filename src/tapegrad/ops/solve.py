"""Inverting and factoring matrices: inv, det, slogdet, solve, solve_triangular, cholesky.

All take batches of matrices (..., n, n), as NumPy does. Gradients (g the incoming one):
    inv:      −Xᵀ g Xᵀ with X = A⁻¹
    det:      g·det(A)·A⁻ᵀ; for a singular A, g·adj(A)ᵀ from an SVD (first order only)
    slogdet:  d logabsdet = g·A⁻ᵀ (sign has no gradient)
    solve:    dB = A⁻ᵀ g,  dA = −dB Xᵀ           (X = A⁻¹ B)
    solve_triangular: the same, with dA kept to A's triangle
    cholesky: A⁻¹-free rule of Murray (2016), as PyTorch: with P = tril(Lᵀ gL),
              dA = L⁻ᵀ · ½(P + tril(P, −1)ᵀ) · L⁻¹ (two triangular solves; symmetric)
"""

from __future__ import annotations

from collections import namedtuple

import numpy as np

from ..autograd.graph import make_result, sum_to
from ..tensor import Tensor
from . import _dtype_errors
from ._mathutil import const
from ._registry import register
from ._util import as_tensor, float_data

__all__ = ["LinAlgError", "inv", "det", "slogdet", "solve", "solve_triangular", "cholesky"]


class LinAlgError(RuntimeError):
    """A matrix was singular (or not positive-definite) where the op needs it not to be."""


SlogdetResult = namedtuple("slogdet", ["sign", "logabsdet"])


def _square(A, op):
    """A's data as a float batch of square matrices, or a clear error naming ``op``."""
    t = as_tensor(A, op)
    data = float_data(t)
    if data.ndim < 2:  # torch's words
        raise RuntimeError(
            f"{op}: The input tensor A must have at least 2 dimensions, got shape "
            f"{list(data.shape)}"
        )
    if data.shape[-1] != data.shape[-2]:
        raise RuntimeError(
            f"{op}: expected a square matrix or a batch of them (..., n, n), "
            f"got shape {list(data.shape)}"
        )
    return t, data


def _call(fn, op, why, *args):
    try:
        return fn(*args)
    except np.linalg.LinAlgError:
        raise LinAlgError(f"{op}: {why}") from None


def _zero_pivot(data):
    """("(Batch element b): " or "", k) as torch's messages for singular matrices state them:
    the first matrix of ``data``'s batch (not broadcast with another operand's) whose LU
    (getrf) has a zero pivot, and that pivot's 1-based index k. Only called once NumPy has
    refused a matrix."""
    from .decomp import _first_failure  # noqa: PLC0415 - decomp and lu import this module
    from .lu import _getrf  # noqa: PLC0415

    info = _getrf(data)[2]
    if not info.any():  # SciPy's getrf found no zero pivot where NumPy's LAPACK did
        return "", None
    return _first_failure(info)


def _cholesky_info(data):
    """potrf's info per matrix: the order of the first leading minor that is not
    positive-definite (0 where the whole matrix is)."""
    info = np.zeros(data.shape[:-2], np.int32)
    for i in np.ndindex(data.shape[:-2]):
        for k in range(1, data.shape[-1] + 1):
            minor = data[i][:k, :k]
            if np.isnan(minor).any() or np.any(np.linalg.eigvalsh(minor) <= 0):  # potrf: NaN fails
                info[i] = k
                break
    return info


def _not_positive_definite(info, op):
    """torch's error for a matrix Cholesky refuses: the first failing matrix of a batch and
    the order of its first leading minor that is not positive-definite."""
    from .decomp import _first_failure  # noqa: PLC0415 - decomp imports this module

    if not info.any():  # eigvalsh found every minor positive where LAPACK did not
        return LinAlgError(f"{op}: The input is not positive-definite.")
    where, k = _first_failure(info)
    return LinAlgError(
        f"{op}: {where}The factorization could not be completed because the input is not "
        f"positive-definite (the leading minor of order {k} is not positive-definite)."
    )


def _cast_to(g: Tensor, t: Tensor) -> Tensor:
    return g if g._data.dtype == t._data.dtype else g._cast(t._data.dtype)


def _batch_scalar(g: Tensor) -> Tensor:
    """A per-matrix gradient (...,) shaped (..., 1, 1) to scale whole matrices."""
    return g.reshape(g._data.shape + (1, 1))


@register("inverse")
def inv(A):
    """The inverse of a square matrix (or batch).  d/dA = −A⁻ᵀ g A⁻ᵀ.

    Raises:
        LinAlgError: when a matrix is singular.
    """
    A, data = _square(A, "linalg.inv")
    try:
        out = np.linalg.inv(data)
    except np.linalg.LinAlgError:
        where, k = _zero_pivot(data)
        element = "The" if k is None else f"The diagonal element {k} is zero, the"
        raise LinAlgError(
            f"linalg.inv: {where}{element} inversion could not be completed because the input "
            "matrix is singular."
        ) from None
    return make_result(out, (A,), _inv_backward, "LinalgInvBackward", save_output=True)


def _inv_backward(g, out):
    Xt = out.mT
    return (-(Xt @ g @ Xt),)


@register("det")
def det(A):
    """The determinant of a square matrix (or batch).  d/dA = g·det(A)·A⁻ᵀ.

    For a singular matrix the gradient is g·adj(A)ᵀ, computed from an SVD; it is not
    differentiable again there.
    """
    A, data = _square(A, "linalg.det")
    out = np.asanyarray(np.linalg.det(data))

    def backward(g, out):
        try:
            return (_batch_scalar(g * out) * inv(A).mT,)
        except LinAlgError:
            return (_batch_scalar(g) * const(_adjugate_t(A._data).astype(g._data.dtype)),)

    return make_result(out, (A,), backward, "LinalgDetBackward", saved=(A,), save_output=True)


def _adjugate_t(a):
    """adj(A)ᵀ, the cofactor matrix, valid for singular A: with A = U Σ Vᴴ,
    adj(A)ᵀ = det(U)·det(Vᴴ)·U·diag(Π_{j≠i} σ_j)·Vᴴ."""
    u, s, vh = np.linalg.svd(a)
    n = s.shape[-1]
    others = np.stack([np.prod(np.delete(s, i, axis=-1), axis=-1) for i in range(n)], -1)
    scale = (np.linalg.det(u) * np.linalg.det(vh))[..., None, None]
    return scale * (u * others[..., None, :]) @ vh


@register("slogdet")
def slogdet(A):
    """(sign, log|det A|) as a named tuple; stable where det over- or underflows.

    d logabsdet/dA = g·A⁻ᵀ; ``sign`` carries no gradient.
    """
    A, data = _square(A, "linalg.slogdet")
    sign, logabs = np.linalg.slogdet(data)

    def backward(g):
        return (_batch_scalar(g) * inv(A).mT,)

    logabsdet = make_result(
        np.asanyarray(logabs), (A,), backward, "LinalgSlogdetBackward", saved=(A,)
    )
    return SlogdetResult(Tensor._wrap(np.asanyarray(sign)), logabsdet)


def _check_rhs(A, B, op):
    """Validate B against A (..., n, n); return (B, its data, is a vector)."""
    b = as_tensor(B, op)
    bd = float_data(b)
    n = A._data.shape[-1]
    vector = bd.ndim == 1 or (bd.ndim == A._data.ndim - 1 and bd.shape == A._data.shape[:-1])
    rows = bd.shape[-1] if vector else (bd.shape[-2] if bd.ndim >= 2 else None)
    if rows != n:
        raise RuntimeError(
            f"{op}: incompatible shapes A {list(A.shape)} and B {list(b.shape)}: B needs "
            f"{n} rows (B of shape (..., {n}) or (..., {n}, k))"
        )
    return b, bd, vector


@register("solve", function=False, method=False)
def solve(A, B, *, left=True):
    """X with A X = B (or X A = B when ``left=False``); batches broadcast.

    B may be a vector (n,) or batch of vectors (..., n) matching A's batch, or a
    matrix (..., n, k). d/dB = A⁻ᵀ g, d/dA = −(d/dB) Xᵀ.

    Raises:
        LinAlgError: when A is singular.
    """
    if not left:
        return solve(as_tensor(A, "linalg.solve").mT, as_tensor(B, "linalg.solve").mT).mT
    A, ad = _square(A, "linalg.solve")
    b, bd, vector = _check_rhs(A, B, "linalg.solve")
    if ad.dtype != bd.dtype:  # torch does not promote here
        raise RuntimeError(
            "linalg.solve: Expected A and B to have the same dtype, but found A of type "
            f"{_dtype_errors.scalar(ad.dtype)} and B of type {_dtype_errors.scalar(bd.dtype)} "
            "instead"
        )
    rhs = bd[..., None] if vector else bd
    try:
        out = np.linalg.solve(ad, rhs)
    except np.linalg.LinAlgError:
        where, _ = _zero_pivot(ad)
        raise LinAlgError(
            f"linalg.solve: {where}The solver failed because the input matrix is singular."
        ) from None
    except ValueError:
        raise RuntimeError(
            f"linalg.solve: batch dims of A {list(A.shape)} and B {list(b.shape)} "
            "cannot be broadcast"
        ) from None
    if vector:
        out = out[..., 0]
    na, nb = A._rg, b._rg

    def backward(g, out):
        G = g.unsqueeze(-1) if vector else g
        X = out.unsqueeze(-1) if vector else out
        gB = solve(A.mT, G)
        ga = _cast_to(sum_to(-(gB @ X.mT), A._data.shape), A) if na else None
        gb = None
        if nb:
            gb = _cast_to(sum_to(gB.squeeze(-1) if vector else gB, b._data.shape), b)
        return ga, gb

    return make_result(out, (A, b), backward, "LinalgSolveBackward", saved=(A,), save_output=True)


def _triangle(n, upper, strict):
    """Constant mask of the upper or lower triangle of an n×n matrix (diagonal unless strict)."""
    ones = np.ones((n, n), dtype=bool)
    k = 1 if strict else 0
    return np.triu(ones, k) if upper else np.tril(ones, -k)


@register("solve_triangular", function=False, method=False)
def solve_triangular(A, B, *, upper, left=True, unitriangular=False):
    """X with A X = B (or X A = B) for triangular A; only A's ``upper``/lower triangle is read.

    ``unitriangular=True`` takes A's diagonal as ones. d/dB = A⁻ᵀ g; d/dA = −(d/dB) Xᵀ,
    restricted to the triangle that was read. A zero on the diagonal gives inf/NaN, as
    torch (no error).
    """
    if not left:
        At = as_tensor(A, "linalg.solve_triangular").mT
        Bt = as_tensor(B, "linalg.solve_triangular").mT
        return solve_triangular(At, Bt, upper=not upper, unitriangular=unitriangular).mT
    A, ad = _square(A, "linalg.solve_triangular")
    b = as_tensor(B, "linalg.solve_triangular")
    bd = float_data(b)
    n = ad.shape[-1]
    if bd.ndim < 2 or bd.shape[-2] != n:
        raise RuntimeError(
            f"linalg.solve_triangular: B must be a matrix (..., {n}, k) to match A "
            f"{list(A.shape)}, got shape {list(b.shape)}"
        )
    read = _triangle(n, upper, strict=unitriangular)
    tri = np.where(read, ad, 0)
    if unitriangular:
        tri = tri + np.eye(n, dtype=tri.dtype)
    try:
        try:
            out = np.linalg.solve(tri, bd)
        except np.linalg.LinAlgError:  # a zero on the diagonal: inf/NaN, as torch's trsm
            out = _trsm(tri, bd, upper)
    except ValueError:
        raise RuntimeError(
            f"linalg.solve_triangular: batch dims of A {list(A.shape)} and B {list(b.shape)} "
            "cannot be broadcast"
        ) from None
    na, nb = A._rg, b._rg

    def backward(g, out):
        gB = solve_triangular(A.mT, g, upper=not upper, unitriangular=unitriangular)
        ga = gb = None
        if na:
            k = int(unitriangular)  # the triangle read, as torch's triu/tril (an inf outside
            # it gives 0, not a product's NaN)
            step = -(gB @ out.mT)
            step = step.triu(k) if upper else step.tril(-k)
            ga = _cast_to(sum_to(step, A._data.shape), A)
        if nb:
            gb = _cast_to(sum_to(gB, b._data.shape), b)
        return ga, gb

    return make_result(
        out, (A, b), backward, "LinalgSolveTriangularBackward", saved=(A,), save_output=True
    )


def _trsm(tri, bd, upper):
    """tri⁻¹ bd by BLAS trsm, matrix by matrix: no check of the diagonal, so a zero there
    gives the inf and NaN that torch's solve_triangular returns (NumPy's solve refuses)."""
    import scipy.linalg  # noqa: PLC0415 - only for singular matrices

    batch = np.broadcast_shapes(tri.shape[:-2], bd.shape[:-2])
    dtype = np.result_type(tri, bd)
    a = np.broadcast_to(tri, batch + tri.shape[-2:]).astype(dtype)
    b = np.broadcast_to(bd, batch + bd.shape[-2:]).astype(dtype)
    trsm = scipy.linalg.blas.get_blas_funcs("trsm", (a,))
    out = np.empty(b.shape, dtype)
    with np.errstate(all="ignore"):
        for i in np.ndindex(batch):
            out[i] = trsm(1.0, a[i], b[i], lower=not upper)
    return out


@register("cholesky")
def cholesky(A, *, upper=False):
    """The Cholesky factor L (lower, A = L Lᵀ) of a symmetric positive-definite matrix,
    or U = Lᵀ with ``upper=True``. Only the lower triangle of A is read.

    The gradient is symmetric (Murray 2016, as PyTorch).

    Raises:
        LinAlgError: when A is not positive-definite.
    """
    A, data = _square(A, "linalg.cholesky")
    try:
        L = np.linalg.cholesky(data)
        if np.isnan(np.diagonal(L, axis1=-2, axis2=-1)).any():  # NumPy passes NaN on; potrf
            raise np.linalg.LinAlgError  # fails there, as torch
    except np.linalg.LinAlgError:
        raise _not_positive_definite(_cholesky_info(data), "linalg.cholesky") from None
    out = np.swapaxes(L, -1, -2).copy() if upper else L
    n = data.shape[-1]

    def backward(g, out):
        L, gL = (out.mT, g.mT) if upper else (out, g)
        P = (L.mT @ gL) * const(_triangle(n, False, strict=False))
        P = (P + (P * const(_triangle(n, False, strict=True))).mT) * 0.5
        gA = solve_triangular(L.mT, P, upper=True)
        return (solve_triangular(L, gA, upper=False, left=False),)

    return make_result(out, (A,), backward, "LinalgCholeskyBackward", save_output=True)
