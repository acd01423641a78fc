"""LU with partial pivoting and what it gives: linalg.lu_factor(_ex), linalg.lu, linalg.lu_solve,
and the older torch.lu, torch.lu_unpack, torch.lu_solve.

One recorded op, :func:`_lu_factor_op` (LAPACK's getrf, as PyTorch), carries the gradient;
everything else is composed from it in differentiable ops (unpacking is tril/triu, solving is
two triangular solves and a constant permutation), so gradients of any order come out.

The rule is PyTorch's ``linalg_lu_backward`` (FunctionsManual.cpp), for A = P L U with L
(m, k) unit lower, U (k, n) upper, k = min(m, n), and gL, gU the gradients of L and U:
    square: gA = P L⁻ᵀ [tril(Lᵀ gL, −1) + triu(gU Uᵀ)] U⁻ᵀ
    wide:   gA1 = P L⁻ᵀ [tril(Lᵀ gL − triu(gU) Uᵀ, −1) U1⁻ᵀ + triu(gU1)],  gA2 = P L⁻ᵀ gU2
    tall:   gA1 = P [L1⁻ᵀ triu(gU Uᵀ − Lᵀ tril(gL, −1)) + tril(gL1, −1)] U⁻ᵀ,  gA2 = P gL2 U⁻ᵀ
The packed factor LU's gradient splits into gL (strictly lower part) and gU (upper part).
"""

from __future__ import annotations

from collections import namedtuple

import numpy as np

from .. import _trace
from ..autograd.graph import make_results
from ..grad_mode import STATE
from ..tensor import Tensor
from ._dtype_errors import scalar as _scalar_name
from ._mathutil import const
from ._registry import register
from ._util import as_tensor
from .decomp import _first_failure, _matrix, _mT
from .joining import cat
from .linalg import matmul
from .solve import solve_triangular
from .tri import tril, triu

__all__ = [
    "lu_factor",
    "lu_factor_ex",
    "lu",
    "lu_solve",
    "lu_unpack",
    "torch_lu",
    "torch_lu_solve",
]

LUFactorResult = namedtuple("lu_factor", ["LU", "pivots"])
LUFactorExResult = namedtuple("lu_factor_ex", ["LU", "pivots", "info"])
LUResult = namedtuple("lu", ["P", "L", "U"])
LUUnpackResult = namedtuple("lu_unpack", ["P", "L", "U"])
LUWithInfoResult = namedtuple("_lu_with_info", ["LU", "pivots", "info"])


def _getrf(data):
    """LAPACK's getrf over a batch: (packed LU, 1-based int32 pivots, int32 info)."""
    import scipy.linalg.lapack  # noqa: PLC0415

    m, n = data.shape[-2:]
    k = min(m, n)
    lus = np.empty_like(data)
    piv = np.empty(data.shape[:-2] + (k,), np.int32)
    info = np.zeros(data.shape[:-2], np.int32)
    if k == 0:
        return lus, piv, info
    getrf = scipy.linalg.lapack.get_lapack_funcs("getrf", (data,))
    for i in np.ndindex(data.shape[:-2]):
        lus[i], p, info[i] = getrf(data[i])
        piv[i] = p[:k] + 1
    return lus, piv, info


def _permutation(piv, m, dtype):
    """P (…, m, m) with A = P L U from 1-based sequential row swaps ``piv`` (…, k)."""
    perms = np.empty(piv.shape[:-1] + (m,), np.int64)
    for i in np.ndindex(piv.shape[:-1]):
        perm = np.arange(m)
        for j, p in enumerate(piv[i] - 1):
            perm[[j, p]] = perm[[p, j]]
        perms[i] = perm
    eye = np.eye(m, dtype=dtype)
    return np.ascontiguousarray(np.swapaxes(eye[perms], -1, -2))  # P[perm[j], j] = 1


def _unpack(LU, m, n):
    """L (…, m, k) unit lower and U (…, k, n) upper from the packed factor, differentiably."""
    k = min(m, n)
    L = tril(LU[..., :, :k], -1) + const(np.eye(m, k, dtype=LU._data.dtype))
    U = triu(LU[..., :k, :])
    return L, U


def _check_pivot(pivot, op):
    if not pivot:
        raise RuntimeError(f"{op}: LU without pivoting is not implemented on the CPU")


@register("linalg_lu_factor_ex", method=False, function=False)
def _lu_factor_op(A, pivot=True, op="linalg.lu_factor_ex"):
    """``tg.linalg.lu_factor_ex``'s recorded op: (LU, pivots, info), PyTorch's gradient."""
    A, data = _matrix(A, op)
    _check_pivot(pivot, op)
    lu_, piv, info = _getrf(data)
    m, n = data.shape[-2:]
    k = min(m, n)

    def backward(gLU, gpiv, ginfo):
        LU = _lu_factor_op(A, pivot, op)[0] if STATE.enabled else const(lu_)
        L, U = _unpack(LU, m, n)
        P = const(_permutation(piv, m, lu_.dtype))
        return (_lu_backward(gLU[..., :, :k], gLU[..., :k, :], P, L, U),)

    return make_results((lu_, piv, info), (A,), backward, "LinalgLuFactorExBackward", saved=(A,))


def _lu_backward(gL, gU, P, L, U):
    """PyTorch's linalg_lu_backward (module docstring), with gL, gU full-size slices."""
    m, n = L._data.shape[-2], U._data.shape[-1]
    k = min(m, n)
    if k == 0:
        return matmul(P, const(np.zeros(P._data.shape[:-2] + (m, n), P._data.dtype)))
    if m == n:
        gA = tril(matmul(_mT(L), gL), -1) + triu(matmul(gU, _mT(U)))
        gA = solve_triangular(_mT(U), gA, upper=False, left=False)
        gA = solve_triangular(_mT(L), gA, upper=True, unitriangular=True)
    elif m < n:
        U1 = U[..., :, :k]
        gA = matmul(_mT(L), gL) - matmul(triu(gU), _mT(U))
        gA = solve_triangular(_mT(U1), tril(gA, -1), upper=False, left=False)
        gA = cat([gA + triu(gU[..., :, :k]), gU[..., :, k:]], -1)
        gA = solve_triangular(_mT(L), gA, upper=True, unitriangular=True)
    else:
        L1 = L[..., :k, :]
        gA = matmul(gU, _mT(U)) - matmul(_mT(L), tril(gL, -1))
        gA = solve_triangular(_mT(L1), triu(gA), upper=True, unitriangular=True)
        gA = cat([gA + tril(gL[..., :k, :], -1), gL[..., k:, :]], -2)
        gA = solve_triangular(_mT(U), gA, upper=False, left=False)
    return matmul(P, gA)


def _singular_error(info, op):
    """torch's error for an exactly singular U (getrf's info > 0; a plain RuntimeError, as
    torch's): the first failing matrix of a batch and its 1-based zero pivot."""
    where, k = _first_failure(info)
    return RuntimeError(
        f"{op}: {where}U[{k},{k}] is zero and using it on lu_solve would result in a division "
        "by zero. If you still want to perform the factorization, consider calling "
        "linalg.lu(A, pivot) or linalg.lu_factor_ex(A, pivot)"
    )


def lu_factor_ex(A, *, pivot=True, check_errors=False):
    """``tg.linalg.lu_factor_ex``: (LU, pivots, info) of ``A = P L U`` for (…, m, n) A.

    ``LU`` packs L (below the diagonal, unit diagonal implied) and U; ``pivots`` (…, k) are
    LAPACK's 1-based row swaps (int32); ``info`` > 0 marks an exactly singular U (the
    factorization is still returned). Differentiable in A (PyTorch's rule).

    >>> import tapegrad as tg
    >>> tg.linalg.lu_factor_ex(tg.tensor([[0.0, 1.0], [2.0, 3.0]])).pivots
    tensor([2, 2], dtype=tapegrad.int32)
    """
    LU, piv, info = _lu_factor_op(A, pivot, "linalg.lu_factor_ex")
    if check_errors:
        _trace.raise_if(info._data, _singular_error, info._data, "linalg.lu_factor_ex")
    return LUFactorExResult(LU, piv, info)


def lu_factor(A, *, pivot=True):
    """``tg.linalg.lu_factor``: (LU, pivots) as :func:`lu_factor_ex`; differentiable in A.
    An exactly singular matrix (a zero on U's diagonal) raises, as PyTorch's does;
    :func:`lu_factor_ex` and :func:`lu` factor it."""
    LU, piv, info = _lu_factor_op(A, pivot, "linalg.lu_factor")
    _trace.raise_if(info._data, _singular_error, info._data, "linalg.lu_factor")
    return LUFactorResult(LU, piv)


def lu(A, *, pivot=True):
    """``tg.linalg.lu``: P (…, m, m), L (…, m, k), U (…, k, n) with A = P L U; L and U are
    differentiable (PyTorch's linalg_lu_backward)."""
    LU, piv, _ = _lu_factor_op(A, pivot, "linalg.lu")
    m, n = LU._data.shape[-2:]
    L, U = _unpack(LU, m, n)
    return LUResult(Tensor._wrap(_permutation(piv._data, m, LU._data.dtype)), L, U)


@register("lu_unpack", method=False)
def lu_unpack(LU_data, LU_pivots, unpack_data=True, unpack_pivots=True):
    """``tg.lu_unpack``: (P, L, U) from a packed factor; L and U differentiable in
    ``LU_data``. A part not asked for is an empty tensor, as in PyTorch."""
    LU = as_tensor(LU_data, "lu_unpack")
    if LU._data.ndim < 2:
        raise RuntimeError(
            f"lu_unpack: LU_data must have at least 2 dimensions, got {list(LU._data.shape)}"
        )
    m, n = LU._data.shape[-2:]
    piv = LU_pivots._data if isinstance(LU_pivots, Tensor) else np.asarray(LU_pivots)
    if piv.dtype.kind not in "iu":
        raise RuntimeError(
            f"lu_unpack: LU_pivots is expected to be a contiguous tensor of "
            f"torch.int32 dtype, got {piv.dtype}"
        )
    if piv.shape[-1:] != (min(m, n),):
        raise RuntimeError(
            f"lu_unpack: the last dim of LU_pivots {list(piv.shape)} must be min(m, n) = "
            f"{min(m, n)} for LU_data {list(LU._data.shape)}"
        )
    empty = np.zeros((0,), LU._data.dtype)
    if unpack_data:
        L, U = _unpack(LU, m, n)
    else:
        L, U = Tensor._wrap(empty), Tensor._wrap(empty.copy())
    P = _permutation(piv, m, LU._data.dtype) if unpack_pivots else empty.copy()
    return LUUnpackResult(Tensor._wrap(P), L, U)


def lu_solve(LU, pivots, B, *, left=True, adjoint=False):
    """``tg.linalg.lu_solve``: X with A X = B (Aᵀ X = B when ``adjoint``; X A = B, X Aᵀ = B
    when ``left=False``) from :func:`lu_factor`'s output; differentiable in LU and B."""
    LU = as_tensor(LU, "linalg.lu_solve")
    B = as_tensor(B, "linalg.lu_solve")
    if LU._data.ndim < 2 or LU._data.shape[-1] != LU._data.shape[-2]:
        raise RuntimeError(
            f"linalg.lu_solve: LU must be a batch of square matrices, got {list(LU.shape)}"
        )
    if B._data.ndim < 2:
        raise RuntimeError(
            f"linalg.lu_solve: B must have at least 2 dimensions, got {list(B.shape)}"
        )
    if B._data.dtype != LU._data.dtype:  # torch promotes nothing here
        raise RuntimeError(
            "linalg.lu_solve: Expected LU and B to have the same dtype, but found LU of type "
            f"{_scalar_name(LU._data.dtype)} and B of type {_scalar_name(B._data.dtype)} instead"
        )
    n = LU._data.shape[-1]
    if B._data.shape[-2 if left else -1] != n:
        raise RuntimeError(
            f"linalg.lu_solve: incompatible shapes LU {list(LU.shape)} and B {list(B.shape)}"
            f" (left={left})"
        )
    if not left:  # X A = B  <=>  Aᵀ Xᵀ = Bᵀ
        return _mT(lu_solve(LU, pivots, _mT(B), adjoint=not adjoint))
    piv = pivots._data if isinstance(pivots, Tensor) else np.asarray(pivots)
    L, U = _unpack(LU, n, n)
    P = const(_permutation(piv, n, LU._data.dtype))
    if adjoint:  # Aᵀ = Uᵀ Lᵀ Pᵀ: X = P L⁻ᵀ U⁻ᵀ B
        y = solve_triangular(_mT(U), B, upper=False)
        return matmul(P, solve_triangular(_mT(L), y, upper=True, unitriangular=True))
    y = solve_triangular(L, matmul(_mT(P), B), upper=False, unitriangular=True)
    return solve_triangular(U, y, upper=True)


@register("lu")
def torch_lu(A, pivot=True, get_infos=False, out=None):
    """``torch.lu`` (deprecated in PyTorch): (LU, pivots[, infos])."""
    LU, piv, info = _lu_factor_op(A, pivot, "lu")
    return LUWithInfoResult(LU, piv, info) if get_infos else (LU, piv)


@register("lu_solve")
def torch_lu_solve(b, LU_data, LU_pivots, *, out=None):
    """``torch.lu_solve`` (deprecated in PyTorch): :func:`lu_solve` with B first."""
    return lu_solve(LU_data, LU_pivots, b)
