"""LDLᵀ of symmetric matrices with Bunch-Kaufman pivoting: linalg.ldl_factor(_ex), linalg.ldl_solve.

LAPACK's sytrf/sytrs (as PyTorch), reading and writing the lower triangle: ``LD`` holds L below
the diagonal and the 1×1 / 2×2 blocks of D on it (its upper triangle is zero), ``pivots`` are
LAPACK's 1-based interchanges (negative pairs mark a 2×2 block). As in PyTorch, the outputs of
a differentiable input require grad but none of these ops has a derivative.
"""

from __future__ import annotations

from collections import namedtuple

import numpy as np

from ..autograd.graph import make_results
from ..tensor import Tensor
from ._util import as_tensor, float_data
from .solve import LinAlgError, _square

__all__ = ["ldl_factor", "ldl_factor_ex", "ldl_solve"]

LDLFactorResult = namedtuple("ldl_factor", ["LD", "pivots"])
LDLFactorExResult = namedtuple("ldl_factor_ex", ["LD", "pivots", "info"])


def _no_derivative(name):
    def backward(*grads):
        raise RuntimeError(f"derivative for aten::{name} is not implemented")

    return backward


def _lapack(name, data):
    import scipy.linalg.lapack  # noqa: PLC0415

    return scipy.linalg.lapack.get_lapack_funcs(name, (data,))


def ldl_factor_ex(A, *, hermitian=False, check_errors=False, out=None):
    """``tg.linalg.ldl_factor_ex``: (LD, pivots, info) of symmetric (…, n, n) A (its lower
    triangle is read); ``info`` > 0 marks an exactly zero block of D (A singular)."""
    A, data = _square(A, "linalg.ldl_factor_ex")
    n = data.shape[-1]
    ld = np.zeros_like(data)
    piv = np.empty(data.shape[:-2] + (n,), np.int32)
    info = np.zeros(data.shape[:-2], np.int32)
    if n:
        sytrf = _lapack("sytrf", data)
        for i in np.ndindex(data.shape[:-2]):
            lu_, piv[i], info[i] = sytrf(data[i], lower=1)
            ld[i] = np.tril(lu_)
    if check_errors and info.any():
        raise LinAlgError(
            f"linalg.ldl_factor_ex: the block D[{int(info.max()) - 1}, {int(info.max()) - 1}] "
            "of the factorization is exactly zero: the matrix is singular"
        )
    outs = make_results(
        (ld, piv, info), (A,), _no_derivative("linalg_ldl_factor_ex"), "LinalgLdlFactorExBackward"
    )
    return LDLFactorExResult(*outs)


def ldl_factor(A, *, hermitian=False, out=None):
    """``tg.linalg.ldl_factor``: (LD, pivots) as :func:`ldl_factor_ex`.

    Raises:
        LinAlgError: when a block of D is exactly zero (A singular).
    """
    LD, piv, info = ldl_factor_ex(A, hermitian=hermitian)
    if info._data.any():
        raise LinAlgError(
            f"linalg.ldl_factor: the block D[{int(info._data.max()) - 1}, "
            f"{int(info._data.max()) - 1}] of the factorization is exactly zero: the matrix "
            "is singular"
        )
    return LDLFactorResult(LD, piv)


def ldl_solve(LD, pivots, B, *, hermitian=False, out=None):
    """``tg.linalg.ldl_solve``: X with A X = B from :func:`ldl_factor`'s (LD, pivots); batch
    dims broadcast. No derivative (as in PyTorch)."""
    LD, data = _square(LD, "linalg.ldl_solve")
    B = as_tensor(B, "linalg.ldl_solve")
    bd = float_data(B)
    piv = pivots._data if isinstance(pivots, Tensor) else np.asarray(pivots)
    n = data.shape[-1]
    if bd.ndim < 2 or bd.shape[-2] != n:
        raise RuntimeError(
            f"linalg.ldl_solve: B {list(B.shape)} must be a matrix (..., {n}, k) to match LD "
            f"{list(LD.shape)}"
        )
    if piv.shape != data.shape[:-1]:
        raise RuntimeError(
            f"linalg.ldl_solve: pivots {list(piv.shape)} must have the shape LD.shape[:-1] = "
            f"{list(data.shape[:-1])}"
        )
    dtype = np.result_type(data.dtype, bd.dtype)
    try:
        batch = np.broadcast_shapes(data.shape[:-2], bd.shape[:-2])
    except ValueError:
        raise RuntimeError(
            f"linalg.ldl_solve: batch dims of LD {list(LD.shape)} and B {list(B.shape)} "
            "cannot be broadcast"
        ) from None
    lds = np.broadcast_to(data, batch + data.shape[-2:])
    pivs = np.broadcast_to(piv, batch + piv.shape[-1:])
    bs = np.broadcast_to(bd, batch + bd.shape[-2:])
    X = np.empty(batch + bd.shape[-2:], dtype)
    if X.size:
        sytrs = _lapack("sytrs", lds.astype(dtype))
        for i in np.ndindex(batch):
            X[i] = sytrs(lds[i].astype(dtype), pivs[i], bs[i].astype(dtype), lower=1)[0]
    outs = make_results((X,), (LD, B), _no_derivative("linalg_ldl_solve"), "LinalgLdlSolveBackward")
    return outs[0]
