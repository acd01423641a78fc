"""Solves and inverses from a factorization: linalg.solve_ex, cholesky_inverse, cholesky_solve and
the older torch.triangular_solve.

cholesky_inverse and cholesky_solve read only the ``upper``/lower triangle of the factor in the
forward, but, as PyTorch's rules do, their gradients treat the factor as the full matrix L in
A = L Lᵀ (so the other triangle gets a gradient too); with X = A⁻¹ and g the incoming gradient:
    cholesky_inverse: gL = −X (g + gᵀ) X L          (upper: −U X (g + gᵀ) X)
    cholesky_solve:   gB = A⁻¹ g,  gL = −(gB Yᵀ + Y gBᵀ) L   with Y the solution
Both are written in differentiable ops (the op itself re-run on L), so second derivatives compose.
"""

from __future__ import annotations

from collections import namedtuple

import numpy as np

from ..autograd.graph import make_result
from ..grad_mode import STATE
from ..tensor import Tensor
from ._mathutil import const
from ._registry import register
from ._util import as_tensor, float_data, reduce_grad
from .decomp import _first_failure
from .linalg import matmul
from .lu import _lu_factor_op
from .solve import LinAlgError, _square, solve, solve_triangular

__all__ = ["solve_ex", "cholesky_inverse", "cholesky_solve", "triangular_solve"]

SolveExResult = namedtuple("solve_ex", ["result", "info"])
TriangularSolveResult = namedtuple("triangular_solve", ["solution", "cloned_coefficient"])


def _mT(x):
    return x.transpose(-2, -1)


def solve_ex(A, B, *, left=True, check_errors=False, out=None):
    """``tg.linalg.solve_ex``: (result, info) of :func:`tapegrad.linalg.solve`; ``info`` > 0
    marks a singular matrix (its result is then NaN, as PyTorch's), raised as a LinAlgError
    with ``check_errors=True``. Differentiable as ``solve``.
    """
    A, data = _square(A, "linalg.solve_ex")
    info = _lu_factor_op(Tensor._wrap(data), True, "linalg.solve_ex")[2]._data
    if not info.any():
        return SolveExResult(solve(A, B, left=left), Tensor._wrap(info))
    if check_errors:
        where, _ = _first_failure(info)  # torch's first failing matrix of A's batch
        raise LinAlgError(
            f"linalg.solve_ex: {where}The solver failed because the input matrix is singular."
        )
    return SolveExResult(Tensor._wrap(_getrs_singular(data, B, left)), Tensor._wrap(info))


def _getrs_singular(data, B, left):
    """LAPACK's getrs on the LU of singular matrices: the infinities and NaNs that PyTorch's
    solve_ex returns there (no gradient)."""
    import scipy.linalg.lapack  # noqa: PLC0415

    b = float_data(as_tensor(B, "linalg.solve_ex"))
    # X A = B is Aᵀ Xᵀ = Bᵀ: as PyTorch, getrs transposed on A's own LU (not the LU of Aᵀ,
    # whose infinities and NaNs differ)
    trans = 0 if left else 1
    if not left:
        b = np.swapaxes(b, -1, -2)
    vector = b.ndim == 1 or (b.ndim == data.ndim - 1 and b.shape == data.shape[:-1])
    rhs = b[..., None] if vector else b
    batch = np.broadcast_shapes(data.shape[:-2], rhs.shape[:-2])
    a_b = np.broadcast_to(data, batch + data.shape[-2:])
    r_b = np.broadcast_to(rhs, batch + rhs.shape[-2:])
    dtype = np.result_type(a_b.dtype, r_b.dtype)
    out = np.empty(batch + rhs.shape[-2:], dtype)
    getrf, getrs = scipy.linalg.lapack.get_lapack_funcs(("getrf", "getrs"), (a_b.astype(dtype),))
    with np.errstate(all="ignore"):
        for i in np.ndindex(batch):
            lu_, piv, _ = getrf(a_b[i].astype(dtype))
            out[i] = getrs(lu_, piv, r_b[i].astype(dtype), trans=trans)[0]
    out = out[..., 0] if vector else out
    return np.swapaxes(out, -1, -2) if not left and not vector else out


def _factor(L, op):
    L, data = _square(L, op)
    if L._data.dtype.kind != "f":
        L = L._cast(data.dtype)
    return L, data


def _tri(data, upper):
    return np.triu(data) if upper else np.tril(data)


@register("cholesky_inverse")
def cholesky_inverse(input, upper=False, *, out=None):
    """A⁻¹ for A = L Lᵀ (or Uᵀ U with ``upper=True``) from its Cholesky factor, reading only
    that triangle; gradient as PyTorch's (module docstring).

    Raises:
        LinAlgError: when the factor has a zero on its diagonal.
    """
    L, data = _factor(input, "cholesky_inverse")
    try:  # A⁻¹ = L⁻ᵀ L⁻¹ (U⁻¹ U⁻ᵀ): from the factor's inverse, not from A (better conditioned)
        inv_f = np.linalg.inv(_tri(data, upper)) if data.size else data.copy()
    except np.linalg.LinAlgError:
        raise LinAlgError("cholesky_inverse: the factor has a zero on its diagonal") from None
    inv_t = np.swapaxes(inv_f, -1, -2)
    X = inv_f @ inv_t if upper else inv_t @ inv_f

    def backward(g):
        Xt = cholesky_inverse(L, upper) if STATE.enabled else const(X)
        common = matmul(Xt, matmul(g + _mT(g), Xt))
        return (-(matmul(L, common) if upper else matmul(common, L)),)

    return make_result(X, (L,), backward, "CholeskyInverseBackward", saved=(L,))


@register("cholesky_solve")
def cholesky_solve(input, input2, upper=False, *, out=None):
    """X with A X = B, ``input`` = B (…, n, k) and ``input2`` the Cholesky factor of A
    (lower, or upper with ``upper=True``; only that triangle is read). Batches broadcast;
    gradients as PyTorch's (module docstring).
    """
    B = as_tensor(input, "cholesky_solve")
    L, data = _factor(input2, "cholesky_solve")
    bd = float_data(B)
    n = data.shape[-1]
    if bd.ndim < 2 or bd.shape[-2] != n:
        raise RuntimeError(
            f"cholesky_solve: B {list(B.shape)} must be a matrix (..., {n}, k) to match the "
            f"factor {list(L.shape)}"
        )
    tri = _tri(data, upper)
    first, second = (np.swapaxes(tri, -1, -2), tri) if upper else (tri, np.swapaxes(tri, -1, -2))
    try:  # two triangular solves: A = first · second
        Y = np.linalg.solve(second, np.linalg.solve(first, bd))
    except np.linalg.LinAlgError:
        raise LinAlgError("cholesky_solve: the factor has a zero on its diagonal") from None
    except ValueError:
        raise RuntimeError(
            f"cholesky_solve: batch dims of B {list(B.shape)} and the factor {list(L.shape)} "
            "cannot be broadcast"
        ) from None
    nb, nl = B._rg, L._rg

    def backward(g, out):
        gB = cholesky_solve(g, L, upper)
        gL = None
        if nl:
            common = matmul(gB, _mT(out))
            common = common + _mT(common)
            gL = reduce_grad(-(matmul(L, common) if upper else matmul(common, L)), L)
        return (reduce_grad(gB, B) if nb else None), gL

    return make_result(Y, (B, L), backward, "CholeskySolveBackward", saved=(L,), save_output=True)


@register("triangular_solve")
def triangular_solve(input, A, upper=True, transpose=False, unitriangular=False, *, out=None):
    """``torch.triangular_solve`` (deprecated in PyTorch): X with A X = ``input`` (Aᵀ X with
    ``transpose``), and a copy of A: ``(solution, cloned_coefficient)``, both differentiable.
    """
    A = as_tensor(A, "triangular_solve")
    b = as_tensor(input, "triangular_solve")
    if A._data.ndim < 2 or b._data.ndim < 2:
        raise RuntimeError(
            f"triangular_solve: A and input must have at least 2 dimensions, got "
            f"{list(A.shape)} and {list(b.shape)}"
        )
    M = _mT(A) if transpose else A
    X = solve_triangular(M, b, upper=upper != transpose, unitriangular=unitriangular)
    return TriangularSolveResult(X, A.clone())
