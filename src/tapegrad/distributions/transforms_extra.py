"""The structured transforms of ``torch.distributions.transforms``: Abs, Softplus, the simplex
and matrix maps (StickBreaking, LowerCholesky, PositiveDefinite, CorrCholesky), shape maps
(Reshape, Independent), slice-wise maps (Cat, Stack) and CumulativeDistribution.
Re-exported by ``transforms``; composed from tapegrad ops, so they are differentiable.
"""

from __future__ import annotations

import math

import numpy as np

import tapegrad as tg

from . import constraints
from .transforms import Transform

__all__ = [
    "AbsTransform",
    "CatTransform",
    "CorrCholeskyTransform",
    "CumulativeDistributionTransform",
    "IndependentTransform",
    "LowerCholeskyTransform",
    "PositiveDefiniteTransform",
    "ReshapeTransform",
    "SoftplusTransform",
    "StackTransform",
    "StickBreakingTransform",
]

_softplus = tg.nn.functional.softplus


def _sum_rightmost(value, dims: int):
    return value.sum(tuple(range(-dims, 0))) if dims > 0 else value


class AbsTransform(Transform):
    """y = |x| (not bijective; the inverse returns y)."""

    codomain = constraints.positive
    bijective = False

    def _call(self, x):
        return x.abs()

    def _inverse(self, y):
        return y


class SoftplusTransform(Transform):
    """y = log(1 + exp(x))."""

    codomain = constraints.positive

    def _call(self, x):
        return _softplus(x)

    def _inverse(self, y):
        return tg.log(-tg.expm1(-y)) + y

    def log_abs_det_jacobian(self, x, y):
        return -_softplus(-x)


def _stick_offset(x):
    k = x.shape[-1]
    return tg.arange(k, 0, -1, dtype=x.dtype)  # k + 1 - cumsum(ones(k))


class StickBreakingTransform(Transform):
    """R^(K-1) to the K-simplex by stick breaking (bijective; see torch)."""

    domain = constraints.real_vector
    codomain = constraints.simplex

    def _call(self, x):
        eps = float(np.finfo(x.dtype).eps)
        z = tg.sigmoid(x - tg.log(_stick_offset(x))).clamp(min=eps, max=1 - eps)
        z_cumprod = tg.cumprod(1 - z, -1)
        pad = tg.nn.functional.pad
        return pad(z, (0, 1), value=1.0) * pad(z_cumprod, (1, 0), value=1.0)

    def _inverse(self, y):
        y_crop = y[..., :-1]
        offset = tg.arange(y_crop.shape[-1], 0, -1, dtype=y.dtype)
        sf = (1 - y_crop.cumsum(-1)).clamp(min=float(np.finfo(y.dtype).tiny))
        return tg.log(y_crop) - tg.log(sf) + tg.log(offset)

    def log_abs_det_jacobian(self, x, y):
        x = x - tg.log(_stick_offset(x))
        return (-x + tg.nn.functional.logsigmoid(x) + tg.log(y[..., :-1])).sum(-1)

    def forward_shape(self, shape):
        return tuple(shape[:-1]) + (shape[-1] + 1,)

    def inverse_shape(self, shape):
        return tuple(shape[:-1]) + (shape[-1] - 1,)


class LowerCholeskyTransform(Transform):
    """Unconstrained square matrices to lower-triangular ones with a positive diagonal."""

    domain = constraints.independent(constraints.real, 2)
    codomain = constraints.lower_cholesky
    bijective = False  # as torch: no log_abs_det_jacobian

    def _call(self, x):
        return x.tril(-1) + tg.diag_embed(tg.exp(x.diagonal(dim1=-2, dim2=-1)))

    def _inverse(self, y):
        return y.tril(-1) + tg.diag_embed(tg.log(y.diagonal(dim1=-2, dim2=-1)))


class PositiveDefiniteTransform(Transform):
    """Unconstrained square matrices to positive definite ones: L L^T of LowerCholesky."""

    domain = constraints.independent(constraints.real, 2)
    codomain = constraints.positive_definite
    bijective = False  # as torch: no log_abs_det_jacobian

    def _call(self, x):
        L = LowerCholeskyTransform()(x)
        return L @ L.mT

    def _inverse(self, y):
        return LowerCholeskyTransform().inv(tg.linalg.cholesky(y))


def _tril_indices(n, diag):
    return np.tril_indices(n, k=diag)


def vec_to_tril_matrix(vec, diag=0):
    """The lower triangle (below diagonal ``diag``, row-major) of a square matrix from
    the last dim of ``vec``; zeros elsewhere (as torch.distributions.utils)."""
    n = vec.shape[-1]
    size = round((math.sqrt(1 + 8 * n) - 1) / 2 - diag)
    if (size + diag) * (size + diag + 1) // 2 != n:
        raise ValueError(f"vec_to_tril_matrix: {n} is not a triangular number")
    rows, cols = _tril_indices(size, diag)
    flat = tg.tensor(rows * size + cols)
    out = tg.zeros(tuple(vec.shape[:-1]) + (size * size,), dtype=vec.dtype)
    index = flat.expand(tuple(vec.shape[:-1]) + (n,))
    return out.scatter_add(-1, index, vec).reshape(tuple(vec.shape[:-1]) + (size, size))


def tril_matrix_to_vec(mat, diag=0):
    """The entries of ``mat`` on and below diagonal ``diag``, row-major."""
    n = mat.shape[-1]
    rows, cols = _tril_indices(n, diag)
    flat = mat.reshape(tuple(mat.shape[:-2]) + (n * n,))
    return flat[..., tg.tensor(rows * n + cols)]


class CorrCholeskyTransform(Transform):
    """R^(D(D-1)/2) to Cholesky factors of D x D correlation matrices (tanh, then stick
    breaking over each row, as torch)."""

    domain = constraints.real_vector
    codomain = constraints.corr_cholesky

    def _call(self, x):
        eps = float(np.finfo(x.dtype).eps)
        x = tg.tanh(x).clamp(min=-1 + eps, max=1 - eps)
        r = vec_to_tril_matrix(x, diag=-1)
        z1m_cumprod_sqrt = tg.cumprod(tg.sqrt(1 - r**2), -1)
        r = r + tg.eye(r.shape[-1], dtype=r.dtype)
        return r * tg.nn.functional.pad(z1m_cumprod_sqrt[..., :-1], (1, 0), value=1.0)

    def _inverse(self, y):
        y_cumsum = 1 - tg.cumsum(y * y, -1)
        y_cumsum_shifted = tg.nn.functional.pad(y_cumsum[..., :-1], (1, 0), value=1.0)
        y_vec = tril_matrix_to_vec(y, diag=-1)
        y_cumsum_vec = tril_matrix_to_vec(y_cumsum_shifted, diag=-1)
        t = y_vec / tg.sqrt(y_cumsum_vec)
        return (tg.log1p(t) - tg.log1p(-t)) / 2

    def log_abs_det_jacobian(self, x, y):
        y1m_cumsum = 1 - (y * y).cumsum(-1)
        stick_breaking = 0.5 * tg.log(tril_matrix_to_vec(y1m_cumsum, diag=-2)).sum(-1)
        tanh = -2 * (x + _softplus(-2 * x) - math.log(2.0)).sum(-1)
        return stick_breaking + tanh

    def forward_shape(self, shape):
        n = shape[-1]
        d = round((0.25 + 2 * n) ** 0.5 + 0.5)
        if d * (d - 1) // 2 != n:
            raise ValueError("Input is not a flattened lower-diagonal number")
        return tuple(shape[:-1]) + (d, d)

    def inverse_shape(self, shape):
        if shape[-2] != shape[-1]:
            raise ValueError("Input is not square")
        d = shape[-1]
        return tuple(shape[:-2]) + (d * (d - 1) // 2,)


class ReshapeTransform(Transform):
    """Reshape the rightmost ``in_shape`` dims to ``out_shape`` (Jacobian 1)."""

    def __init__(self, in_shape, out_shape, cache_size=0):
        self.in_shape, self.out_shape = tuple(in_shape), tuple(out_shape)
        if math.prod(self.in_shape) != math.prod(self.out_shape):
            raise ValueError("in_shape, out_shape have different numbers of elements")
        super().__init__(cache_size)

    @property
    def domain(self):
        return constraints.independent(constraints.real, len(self.in_shape))

    @property
    def codomain(self):
        return constraints.independent(constraints.real, len(self.out_shape))

    def _call(self, x):
        return x.reshape(tuple(x.shape[: x.dim() - len(self.in_shape)]) + self.out_shape)

    def _inverse(self, y):
        return y.reshape(tuple(y.shape[: y.dim() - len(self.out_shape)]) + self.in_shape)

    def log_abs_det_jacobian(self, x, y):
        return tg.zeros(tuple(x.shape[: x.dim() - len(self.in_shape)]), dtype=x.dtype)

    def _reshape(self, shape, src, dst):
        cut = len(shape) - len(src)
        if cut < 0:
            raise ValueError("Too few dimensions on input")
        if tuple(shape[cut:]) != src:
            raise ValueError(f"Shape mismatch: expected {tuple(shape[cut:])} but got {src}")
        return tuple(shape[:cut]) + dst

    def forward_shape(self, shape):
        return self._reshape(shape, self.in_shape, self.out_shape)

    def inverse_shape(self, shape):
        return self._reshape(shape, self.out_shape, self.in_shape)


class IndependentTransform(Transform):
    """``base_transform`` with its rightmost ``reinterpreted_batch_ndims`` dims as one event
    (the log-det-Jacobian summed over them)."""

    def __init__(self, base_transform, reinterpreted_batch_ndims, cache_size=0):
        super().__init__(cache_size)
        self.base_transform = base_transform
        self.reinterpreted_batch_ndims = reinterpreted_batch_ndims

    @property
    def domain(self):
        return constraints.independent(self.base_transform.domain, self.reinterpreted_batch_ndims)

    @property
    def codomain(self):
        return constraints.independent(self.base_transform.codomain, self.reinterpreted_batch_ndims)

    @property
    def bijective(self):
        return self.base_transform.bijective

    @property
    def sign(self):
        return self.base_transform.sign

    def _call(self, x):
        if x.dim() < self.domain.event_dim:
            raise ValueError("Too few dimensions on input")
        return self.base_transform(x)

    def _inverse(self, y):
        if y.dim() < self.codomain.event_dim:
            raise ValueError("Too few dimensions on input")
        return self.base_transform.inv(y)

    def log_abs_det_jacobian(self, x, y):
        result = self.base_transform.log_abs_det_jacobian(x, y)
        return _sum_rightmost(result, self.reinterpreted_batch_ndims)

    def forward_shape(self, shape):
        return self.base_transform.forward_shape(shape)

    def inverse_shape(self, shape):
        return self.base_transform.inverse_shape(shape)

    def __repr__(self):
        return f"IndependentTransform({self.base_transform!r}, {self.reinterpreted_batch_ndims})"


class CatTransform(Transform):
    """``tseq[i]`` applied to the ``lengths[i]`` slices of ``dim``, in order."""

    def __init__(self, tseq, dim=0, lengths=None, cache_size=0):
        super().__init__(cache_size)
        self.transforms = list(tseq)
        self.lengths = list(lengths) if lengths is not None else [1] * len(self.transforms)
        if len(self.lengths) != len(self.transforms):
            raise AssertionError(
                f"lengths ({len(self.lengths)}) must match transforms ({len(self.transforms)})"
            )
        self.dim = dim

    @property
    def event_dim(self):
        return max(t.event_dim for t in self.transforms)

    @property
    def length(self):
        return sum(self.lengths)

    @property
    def bijective(self):
        return all(t.bijective for t in self.transforms)

    @property
    def domain(self):
        return constraints.cat([t.domain for t in self.transforms], self.dim, self.lengths)

    @property
    def codomain(self):
        return constraints.cat([t.codomain for t in self.transforms], self.dim, self.lengths)

    def _slices(self, x, name):
        if not -x.dim() <= self.dim < x.dim():
            raise AssertionError(
                f"dim {self.dim} out of range for tensor with {x.dim()} dimensions"
            )
        if x.shape[self.dim] != self.length:
            raise AssertionError(
                f"{name}.size({self.dim}) = {x.shape[self.dim]} must equal length {self.length}"
            )
        start = 0
        for n in self.lengths:
            yield x.narrow(self.dim, start, n)
            start += n

    def _call(self, x):
        parts = [t(s) for t, s in zip(self.transforms, self._slices(x, "x"))]
        return tg.cat(parts, self.dim)

    def _inverse(self, y):
        parts = [t.inv(s) for t, s in zip(self.transforms, self._slices(y, "y"))]
        return tg.cat(parts, self.dim)

    def log_abs_det_jacobian(self, x, y):
        terms = []
        for t, xs, ys in zip(self.transforms, self._slices(x, "x"), self._slices(y, "y")):
            term = t.log_abs_det_jacobian(xs, ys)
            terms.append(_sum_rightmost(term, self.event_dim - t.event_dim))
        dim = (self.dim - x.dim() if self.dim >= 0 else self.dim) + self.event_dim
        return tg.cat(terms, dim) if dim < 0 else sum(terms)


class StackTransform(Transform):
    """``tseq[i]`` applied to index i of ``dim``."""

    def __init__(self, tseq, dim=0, cache_size=0):
        super().__init__(cache_size)
        self.transforms = list(tseq)
        self.dim = dim

    @property
    def bijective(self):
        return all(t.bijective for t in self.transforms)

    @property
    def domain(self):
        return constraints.stack([t.domain for t in self.transforms], self.dim)

    @property
    def codomain(self):
        return constraints.stack([t.codomain for t in self.transforms], self.dim)

    def _slices(self, x, name):
        if not -x.dim() <= self.dim < x.dim():
            raise AssertionError(
                f"dim {self.dim} out of range for tensor with {x.dim()} dimensions"
            )
        if x.shape[self.dim] != len(self.transforms):
            raise AssertionError(
                f"{name}.size({self.dim}) = {x.shape[self.dim]} must equal len(transforms) "
                f"{len(self.transforms)}"
            )
        return [x.select(self.dim, i) for i in range(x.shape[self.dim])]

    def _call(self, x):
        return tg.stack([t(s) for t, s in zip(self.transforms, self._slices(x, "x"))], self.dim)

    def _inverse(self, y):
        return tg.stack([t.inv(s) for t, s in zip(self.transforms, self._slices(y, "y"))], self.dim)

    def log_abs_det_jacobian(self, x, y):
        pairs = zip(self.transforms, self._slices(x, "x"), self._slices(y, "y"))
        return tg.stack([t.log_abs_det_jacobian(xs, ys) for t, xs, ys in pairs], self.dim)


class CumulativeDistributionTransform(Transform):
    """y = distribution.cdf(x): the support of ``distribution`` to the unit interval."""

    codomain = constraints.unit_interval

    def __init__(self, distribution, cache_size=0):
        super().__init__(cache_size)
        self.distribution = distribution

    @property
    def domain(self):
        return self.distribution.support

    def _call(self, x):
        return self.distribution.cdf(x)

    def _inverse(self, y):
        return self.distribution.icdf(y)

    def log_abs_det_jacobian(self, x, y):
        return self.distribution.log_prob(x)
