"""Scalar and matrix functions of a matrix: matrix_exp, logdet, linalg.cond.

matrix_exp's gradient is the Fréchet derivative of exp at Aᵀ in the direction g, L(Aᵀ, g) (the
value of PyTorch's rule, the top-right block of exp([[Aᵀ, g], [0, Aᵀ]])), computed by a
scaled-and-squared Taylor series in differentiable matmuls that are linear in g, so gradients of
every order and the derived forward-mode rule follow. logdet and cond are compositions of
slogdet, svdvals, inv and the norms.
"""

from __future__ import annotations

import numpy as np

from ..autograd.graph import make_result
from . import _dtype_errors
from ._mathutil import const
from ._registry import register
from ._util import as_tensor, bfloat16_in_float32, float_data
from .linalg import matmul
from .solve import LinAlgError, _square, inv, slogdet

__all__ = ["matrix_exp", "logdet", "cond"]


def _mT(x):
    return x.transpose(-2, -1)


@register("matrix_exp")
@bfloat16_in_float32
def matrix_exp(input):
    """exp(A) = Σ Aᵏ/k! of a square matrix (or batch), by SciPy's Padé approximant with
    scaling and squaring.

    >>> import tapegrad as tg
    >>> tg.matrix_exp(tg.zeros(2, 2))
    tensor([[1., 0.],
            [0., 1.]])
    """
    import scipy.linalg  # noqa: PLC0415

    A, data = _square(input, "matrix_exp")
    if A._data.dtype.kind not in "fc":  # torch refuses integer and bool matrices
        raise RuntimeError(
            "linalg.matrix_exp: Expected a floating point or complex tensor as input. Got "
            f"{_dtype_errors.scalar(A._data.dtype)}"
        )
    out = scipy.linalg.expm(data).astype(data.dtype, copy=False) if data.size else data.copy()

    def backward(g):
        return (_expm_frechet(_mT(A), g),)

    return make_result(np.asarray(out), (A,), backward, "MatrixExpBackward", saved=(A,))


def _expm_frechet(X, E, degree=18):
    """L(X, E), the derivative of exp at X in the direction E (for the gradient, X = Aᵀ and
    E = g), by scaling and squaring a Taylor series, in matmuls that are linear in E (so the
    forward-mode rule derived from this one is exact, Note [Forward-mode tangents]):
        T_k = Xᵏ/k!,  D_k = (D_(k−1) X + T_(k−1) E)/k,  then s times (P, L) <- (P², P L + L P)
    with X, E scaled by 2⁻ˢ so that ‖X‖₁ <= 1/2 (the truncation error is then below 1e-22).
    """
    norm = float(np.abs(X._data).sum(axis=-2).max()) if X._data.size else 0.0
    s = max(0, int(np.ceil(np.log2(norm / 0.5)))) if norm > 0.5 else 0
    if s:
        X, E = X * (0.5**s), E * (0.5**s)
    n = X._data.shape[-1]
    T, D = X, E  # k = 1
    P = const(np.eye(n, dtype=X._data.dtype)) + X
    L = E
    for k in range(2, degree + 1):
        D = (matmul(D, X) + matmul(T, E)) * (1.0 / k)
        T = matmul(T, X) * (1.0 / k)
        P, L = P + T, L + D
    for _ in range(s):
        P, L = matmul(P, P), matmul(P, L) + matmul(L, P)
    return L


@register("logdet")
def logdet(input):
    """log det A of a square matrix (or batch): NaN where det A < 0 and −inf where it is 0,
    as PyTorch; the gradient is g·A⁻ᵀ (0 where the result is NaN)."""
    A, _ = _square(input, "logdet")
    sign, logabs = slogdet(A)
    negative = sign._data < 0
    return logabs * const((~negative).astype(logabs._data.dtype)) + const(
        np.where(negative, np.nan, 0.0).astype(logabs._data.dtype)
    )


def cond(A, p=None):
    """``tg.linalg.cond``: the condition number ‖A‖·‖A⁻¹‖ in the matrix norm ``p`` (None, 2,
    -2: ratio of the extreme singular values, any shape; 'nuc': Σσ·Σ1/σ; 'fro', ±1, ±inf:
    square matrices, inf where A is singular), as PyTorch; differentiable where A is invertible."""
    from .decomp import svdvals  # noqa: PLC0415
    from .norm import matrix_norm  # noqa: PLC0415

    A = as_tensor(A, "linalg.cond")
    if A._data.dtype.kind != "f":
        A = A._cast(float_data(A).dtype)
    if p in (None, 2, -2):
        if A._data.ndim < 2:
            raise RuntimeError(
                f"linalg.cond: The input tensor A must have at least 2 dimensions, got "
                f"{list(A.shape)}"
            )
        if A._data.size == 0:  # zeros without grad, also for an empty batch (as torch)
            return const(np.zeros(A._data.shape[:-2], A._data.dtype))
        S = svdvals(A)
        return S[..., -1] / S[..., 0] if p == -2 else S[..., 0] / S[..., -1]
    if p == "nuc":  # as PyTorch: from the singular values (finite where A is near-singular)
        _square(A, "linalg.cond")
        if A._data.size == 0:
            return const(np.zeros(A._data.shape[:-2], A._data.dtype))
        S = svdvals(A)
        return S.sum(-1) * (1.0 / S).sum(-1)
    if p not in ("fro", 1, -1, float("inf"), float("-inf")):
        raise RuntimeError(f"linalg.cond got an invalid norm type: {p}")
    _square(A, "linalg.cond")
    if A._data.size == 0:
        return const(np.zeros(A._data.shape[:-2], A._data.dtype))
    try:
        return matrix_norm(A, p) * matrix_norm(inv(A), p)
    except LinAlgError:
        out = np.empty(A._data.shape[:-2], A._data.dtype)
        for i in np.ndindex(out.shape):
            try:
                out[i] = (matrix_norm(A[i], p) * matrix_norm(inv(A[i]), p))._data
            except LinAlgError:
                out[i] = np.inf
        return const(out)
