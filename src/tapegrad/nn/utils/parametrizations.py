"""``torch.nn.utils.parametrizations``: weight_norm and spectral_norm as parametrizations
(state-dict keys ``parametrizations.weight.original0/1`` and ``.original``, ``.0._u/_v``)."""

from __future__ import annotations

import numpy as np

from ...creation import default_generator
from ...grad_mode import no_grad
from ...ops import joining
from ...ops.householder import householder_product
from ...ops.matfun import matrix_exp
from ...ops.norm import vector_norm
from ...ops.solve import solve
from ...tensor import Tensor
from .._distance import normalize
from ..module import Module
from . import parametrize

__all__ = ["weight_norm", "spectral_norm", "orthogonal", "norm_except_dim"]


def norm_except_dim(v, pow=2, dim=0):
    """The ``pow``-norm of ``v`` over every dim but ``dim``, keeping dims (size 1); the
    norm of all of ``v`` when ``dim == -1``."""
    if dim == -1:
        return vector_norm(v, pow)
    dim = dim % v.ndim
    others = tuple(d for d in range(v.ndim) if d != dim)
    return vector_norm(v, pow, others, keepdim=True)


class _WeightNorm(Module):
    def __init__(self, dim=0):
        super().__init__()
        self.dim = -1 if dim is None else dim

    def forward(self, weight_g, weight_v):
        return weight_v * (weight_g / norm_except_dim(weight_v, 2, self.dim))

    def right_inverse(self, weight):
        return norm_except_dim(weight, 2, self.dim), weight


def weight_norm(module, name="weight", dim=0):
    """Reparametrize ``module.<name>`` as ``g · v / ‖v‖`` (norm over every dim but ``dim``;
    all dims when ``dim`` is None), with ``g`` = original0 and ``v`` = original1.

    >>> import tapegrad as tg
    >>> m = tg.nn.utils.parametrizations.weight_norm(tg.nn.Linear(4, 2))
    >>> sorted(m.state_dict())
    ['bias', 'parametrizations.weight.original0', 'parametrizations.weight.original1']
    """
    ndim = getattr(module, name).ndim
    if dim is not None and not -ndim <= dim < ndim:
        raise IndexError(
            "Dimension out of range (expected to be in range of "
            f"[-{ndim}, {ndim - 1}] but got {dim})"
        )
    parametrize.register_parametrization(module, name, _WeightNorm(dim), unsafe=True)
    return module


class _SpectralNorm(Module):
    def __init__(self, weight, n_power_iterations=1, dim=0, eps=1e-12):
        super().__init__()
        ndim = weight.ndim
        if dim >= ndim or dim < -ndim:
            raise IndexError(
                "Dimension out of range (expected to be in range of "
                f"[-{ndim}, {ndim - 1}] but got {dim})"
            )
        if n_power_iterations <= 0:
            raise ValueError(
                "Expected n_power_iterations to be positive, but got "
                f"n_power_iterations={n_power_iterations}"
            )
        self.dim = dim if dim >= 0 else dim + ndim
        self.eps = eps
        if ndim > 1:
            self.n_power_iterations = n_power_iterations
            mat = self._matrix(weight)._data
            h, w = mat.shape
            rng = default_generator.numpy
            u = Tensor._wrap(rng.standard_normal(h).astype(mat.dtype))
            v = Tensor._wrap(rng.standard_normal(w).astype(mat.dtype))
            self.register_buffer("_u", normalize(u, dim=0, eps=eps))
            self.register_buffer("_v", normalize(v, dim=0, eps=eps))
            self._power_method(mat, 15)

    def _matrix(self, weight):
        if self.dim != 0:
            weight = weight.permute(self.dim, *(d for d in range(weight.ndim) if d != self.dim))
        return weight.flatten(1)

    def _power_method(self, mat, n):
        """``n`` power iterations on the array ``mat``, updating ``_u`` and ``_v`` in place."""
        u, v = self._u._data, self._v._data
        for _ in range(n):
            x = mat @ v
            u[...] = x / max(np.sqrt((x * x).sum()), self.eps)
            y = mat.T @ u
            v[...] = y / max(np.sqrt((y * y).sum()), self.eps)
        self._u._vc.value += n  # torch writes each buffer once per iteration
        self._v._vc.value += n

    def forward(self, weight):
        if weight.ndim == 1:
            return normalize(weight, dim=0, eps=self.eps)
        mat = self._matrix(weight)
        if self.training:
            with no_grad():
                self._power_method(mat._data, self.n_power_iterations)
        u = Tensor._wrap(self._u._data.copy())
        v = Tensor._wrap(self._v._data.copy())
        sigma = (u * (mat @ v)).sum()
        return weight / sigma

    def right_inverse(self, value):
        return value


_TRANSPOSED_CONVS = ("ConvTranspose1d", "ConvTranspose2d", "ConvTranspose3d")


def spectral_norm(module, name="weight", n_power_iterations=1, eps=1e-12, dim=None):
    """Reparametrize ``module.<name>`` as ``W / σ(W)``, σ the largest singular value
    estimated by power iteration (one per forward in training). ``dim`` defaults to 1 for
    transposed convolutions, else 0.

    Raises:
        ValueError: ``module`` has no parameter or buffer called ``name``.
    """
    weight = getattr(module, name, None)
    if not isinstance(weight, Tensor):
        raise ValueError(f"Module '{module}' has no parameter or buffer with name '{name}'")
    if dim is None:
        dim = 1 if type(module).__name__ in _TRANSPOSED_CONVS else 0
    parametrize.register_parametrization(
        module, name, _SpectralNorm(weight, n_power_iterations, dim, eps)
    )
    return module


# -- orthogonal ------------------------------------------------------------------------------


def _tril(x, diagonal=0):
    """Lower triangle of a matrix, as a product with a constant 0/1 mask (differentiable)."""
    mask = np.tril(np.ones(x.shape[-2:], dtype=x._data.dtype), diagonal)
    return x * Tensor._wrap(mask)


def _make_orthogonal(a):
    """Q of the QR decomposition of ``a`` with R's diagonal made positive (array in, out)."""
    q, r = np.linalg.qr(a)
    signs = np.sign(np.diagonal(r))
    signs[signs == 0] = 1
    return (q * signs).astype(a.dtype)


def _is_orthogonal(q):
    n, k = q.shape
    eps = 10.0 * n * np.finfo(q.dtype).eps
    return np.allclose(q.T @ q, np.eye(k, dtype=q.dtype), atol=eps, rtol=1e-5)


class _Orthogonal(Module):
    def __init__(self, weight, orthogonal_map, *, use_trivialization=True):
        super().__init__()
        self.shape = tuple(weight.shape)
        self.orthogonal_map = orthogonal_map
        if use_trivialization:
            self.register_buffer("base", None)

    def forward(self, X):
        n, k = X.shape[-2], X.shape[-1]
        transposed = n < k
        if transposed:
            X = X.mT
            n, k = k, n
        if self.orthogonal_map in ("matrix_exp", "cayley"):
            X = _tril(X)
            if n != k:
                X = joining.cat([X, Tensor._wrap(np.zeros((n, n - k), X._data.dtype))], dim=-1)
            A = X - X.mT
            if self.orthogonal_map == "matrix_exp":
                Q = matrix_exp(A)
            else:
                eye = Tensor._wrap(np.eye(n, dtype=A._data.dtype))
                Q = solve(eye - A * 0.5, eye + A * 0.5)
            if n != k:
                Q = Q[:, :k]
        else:
            A = _tril(X, -1)
            tau = 2.0 / (1.0 + (A * A).sum(dim=-2))
            Q = householder_product(A, tau)
            diag = np.trunc(np.diagonal(X._data)).astype(X._data.dtype)  # torch's .int()
            Q = Q * Tensor._wrap(diag[None, :])
        if "base" in self._buffers:  # torch: hasattr(self, "base")
            Q = self.base @ Q
        if transposed:
            Q = Q.mT
        return Q

    def right_inverse(self, Q):
        if tuple(Q.shape) != self.shape:
            raise ValueError(
                f"Expected a matrix or batch of matrices of shape {list(self.shape)}. "
                f"Got a tensor of shape {list(Q.shape)}."
            )
        if "base" not in self._buffers:
            return self._right_inverse_without_base(Q)
        q = Q._data
        n, k = q.shape
        if n < k:
            q = q.T
            n, k = k, n
        if n == k:
            q = q.copy() if _is_orthogonal(q) else _make_orthogonal(q)
        else:
            extra = default_generator.numpy.standard_normal((n, n - k)).astype(q.dtype)
            q = _make_orthogonal(np.concatenate([q, extra], axis=1))
        self.base = Tensor._wrap(q)
        neg_eye = np.zeros(Q.shape, dtype=Q._data.dtype)
        np.fill_diagonal(neg_eye, -1.0)
        return Tensor._wrap(neg_eye)

    def _right_inverse_without_base(self, Q):
        """torch's: the matrix_exp and cayley maps cannot be inverted (NotImplementedError,
        which registration takes as the identity); householder keeps geqrf's reflectors
        with R's diagonal signs on the diagonal (-1 where LAPACK skipped a reflection)."""
        if self.orthogonal_map in ("matrix_exp", "cayley"):
            raise NotImplementedError(
                "It is not possible to assign to the matrix exponential or the Cayley "
                "parametrizations when use_trivialization=False."
            )
        q = Q._data
        transposed = q.shape[0] < q.shape[1]
        h, tau = np.linalg.qr(q.T if transposed else q, mode="raw")  # geqrf: h is A.T
        a = h.T.astype(q.dtype)
        d = np.arange(len(tau))
        a[d, d] = np.where(tau == 0.0, -1.0, 1.0) * np.sign(a[d, d])
        return Tensor._wrap(np.ascontiguousarray(a.T if transposed else a))


def orthogonal(module, name="weight", orthogonal_map=None, *, use_trivialization=True):
    """Constrain the matrix ``module.<name>`` to be orthogonal (orthonormal columns or rows),
    as ``torch.nn.utils.parametrizations.orthogonal``: ``matrix_exp`` (default for square
    matrices), ``cayley`` or ``householder`` (default otherwise) of the stored original,
    times the ``base`` buffer (trivialization).

    Raises:
        ValueError: no such tensor, not a matrix, or an unknown map.
        NotImplementedError: a batch of matrices.
    """
    weight = getattr(module, name, None)
    if not isinstance(weight, Tensor):
        raise ValueError(f"Module '{module}' has no parameter or buffer with name '{name}'")
    if weight.ndim < 2:
        raise ValueError(
            f"Expected a matrix or batch of matrices. Got a tensor of {weight.ndim} dimensions."
        )
    if weight.ndim > 2:
        raise NotImplementedError("orthogonal: batches of matrices are not supported yet")
    if orthogonal_map is None:
        orthogonal_map = "matrix_exp" if weight.shape[-2] == weight.shape[-1] else "householder"
    if orthogonal_map not in ("matrix_exp", "cayley", "householder"):
        raise ValueError(
            'orthogonal_map has to be one of "matrix_exp", "cayley", "householder". '
            f"Got: {orthogonal_map}"
        )
    orth = _Orthogonal(weight, orthogonal_map, use_trivialization=use_trivialization)
    parametrize.register_parametrization(module, name, orth, unsafe=True)
    return module
