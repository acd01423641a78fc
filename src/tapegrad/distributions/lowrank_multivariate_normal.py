"""LowRankMultivariateNormal: covariance ``cov_factor @ cov_factor.mT + diag(cov_diag)``,
with log_prob and entropy through the m x m capacitance matrix (Woodbury and the matrix
determinant lemma, as torch), so an n-dim event costs O(n m^2), not O(n^3)."""

from __future__ import annotations

import math

import numpy as np

import tapegrad as tg

from . import constraints
from .distribution import Distribution
from .multivariate_normal import _batch_mahalanobis
from .utils import draw, lazy_property

__all__ = ["LowRankMultivariateNormal"]


def _capacitance_tril(W, D):
    """Cholesky factor of I + W^T D^{-1} W."""
    m = W.shape[-1]
    K = (W.mT / D.unsqueeze(-2)) @ W + tg.eye(m, dtype=W.dtype)
    return tg.linalg.cholesky(K)


def _lowrank_logdet(D, cap_tril):
    return 2 * tg.log(cap_tril.diagonal(dim1=-2, dim2=-1)).sum(-1) + tg.log(D).sum(-1)


def _lowrank_mahalanobis(W, D, x, cap_tril):
    Wt_Dinv_x = ((W.mT / D.unsqueeze(-2)) @ x.unsqueeze(-1)).squeeze(-1)
    m = cap_tril.shape[-1]
    shape = np.broadcast_shapes(tuple(Wt_Dinv_x.shape[:-1]), tuple(cap_tril.shape[:-2]))
    term2 = _batch_mahalanobis(cap_tril.expand(shape + (m, m)), Wt_Dinv_x.expand(shape + (m,)))
    return (x**2 / D).sum(-1) - term2


class LowRankMultivariateNormal(Distribution):
    """Gaussian over the last dim of ``loc`` with a low-rank plus diagonal covariance."""

    arg_constraints = {
        "loc": constraints.real_vector,
        "cov_factor": constraints.independent(constraints.real, 2),
        "cov_diag": constraints.independent(constraints.positive, 1),
    }
    support = constraints.real_vector
    has_rsample = True

    def __init__(self, loc, cov_factor, cov_diag, validate_args=None):
        if loc.dim() < 1:
            raise ValueError("loc must be at least one-dimensional.")
        event_shape = tuple(loc.shape[-1:])
        if cov_factor.dim() < 2:
            raise ValueError(
                "cov_factor must be at least two-dimensional, with optional leading batch "
                "dimensions"
            )
        if tuple(cov_factor.shape[-2:-1]) != event_shape:
            raise ValueError(
                f"cov_factor must be a batch of matrices with shape {event_shape[0]} x m"
            )
        if tuple(cov_diag.shape[-1:]) != event_shape:
            raise ValueError(
                f"cov_diag must be a batch of vectors with shape {tg.Size(event_shape)}"
            )
        try:
            shape = np.broadcast_shapes(
                tuple(loc.shape) + (1,), tuple(cov_factor.shape), tuple(cov_diag.shape) + (1,)
            )
        except ValueError as e:
            raise ValueError(
                f"Incompatible batch shapes: loc {tg.Size(loc.shape)}, cov_factor "
                f"{tg.Size(cov_factor.shape)}, cov_diag {tg.Size(cov_diag.shape)}"
            ) from e
        self.cov_factor = cov_factor.expand(shape)
        self.loc = loc.expand(shape[:-1])
        self.cov_diag = cov_diag.expand(shape[:-1])
        self._unbroadcasted_cov_factor = cov_factor
        self._unbroadcasted_cov_diag = cov_diag
        self._capacitance_tril = _capacitance_tril(cov_factor, cov_diag)
        super().__init__(shape[:-2], event_shape, validate_args=validate_args)

    def expand(self, batch_shape, _instance=None):
        new = self._get_checked_instance(LowRankMultivariateNormal, _instance)
        loc_shape = tuple(batch_shape) + self._event_shape
        new.loc = self.loc.expand(loc_shape)
        new.cov_diag = self.cov_diag.expand(loc_shape)
        new.cov_factor = self.cov_factor.expand(loc_shape + tuple(self.cov_factor.shape[-1:]))
        new._unbroadcasted_cov_factor = self._unbroadcasted_cov_factor
        new._unbroadcasted_cov_diag = self._unbroadcasted_cov_diag
        new._capacitance_tril = self._capacitance_tril
        Distribution.__init__(new, tuple(batch_shape), self._event_shape, validate_args=False)
        new._validate_args = self._validate_args
        return new

    @property
    def mean(self):
        return self.loc

    @property
    def mode(self):
        return self.loc

    @lazy_property
    def variance(self):
        W, D = self._unbroadcasted_cov_factor, self._unbroadcasted_cov_diag
        return ((W**2).sum(-1) + D).expand(self._batch_shape + self._event_shape)

    @lazy_property
    def scale_tril(self):
        n = self._event_shape[0]
        d_sqrt = tg.sqrt(self._unbroadcasted_cov_diag).unsqueeze(-1)
        Dinvsqrt_W = self._unbroadcasted_cov_factor / d_sqrt
        K = Dinvsqrt_W @ Dinvsqrt_W.mT + tg.eye(n, dtype=d_sqrt.dtype)
        return (d_sqrt * tg.linalg.cholesky(K)).expand(self._batch_shape + self._event_shape * 2)

    @lazy_property
    def covariance_matrix(self):
        W, D = self._unbroadcasted_cov_factor, self._unbroadcasted_cov_diag
        return (W @ W.mT + tg.diag_embed(D)).expand(self._batch_shape + self._event_shape * 2)

    @lazy_property
    def precision_matrix(self):
        W, D = self._unbroadcasted_cov_factor, self._unbroadcasted_cov_diag
        Wt_Dinv = W.mT / D.unsqueeze(-2)
        cap = self._capacitance_tril
        shape = np.broadcast_shapes(tuple(cap.shape[:-2]), tuple(Wt_Dinv.shape[:-2]))
        m, n = Wt_Dinv.shape[-2:]
        A = tg.linalg.solve_triangular(
            cap.expand(shape + (m, m)), Wt_Dinv.expand(shape + (m, n)), upper=False
        )
        P = tg.diag_embed(D.reciprocal()) - A.mT @ A
        return P.expand(self._batch_shape + self._event_shape * 2)

    def rsample(self, sample_shape=()):
        shape = self._extended_shape(sample_shape)
        w_shape = shape[:-1] + tuple(self.cov_factor.shape[-1:])
        eps_W = draw(lambda g, s: g.standard_normal(s), w_shape, self.loc.dtype)
        eps_D = draw(lambda g, s: g.standard_normal(s), shape, self.loc.dtype)
        W, D = self._unbroadcasted_cov_factor, self._unbroadcasted_cov_diag
        return self.loc + (W @ eps_W.unsqueeze(-1)).squeeze(-1) + tg.sqrt(D) * eps_D

    def log_prob(self, value):
        if self._validate_args:
            self._validate_sample(value)
        W, D = self._unbroadcasted_cov_factor, self._unbroadcasted_cov_diag
        M = _lowrank_mahalanobis(W, D, value - self.loc, self._capacitance_tril)
        log_det = _lowrank_logdet(D, self._capacitance_tril)
        return -0.5 * (self._event_shape[0] * math.log(2 * math.pi) + log_det + M)

    def entropy(self):
        log_det = _lowrank_logdet(self._unbroadcasted_cov_diag, self._capacitance_tril)
        H = 0.5 * (self._event_shape[0] * (1.0 + math.log(2 * math.pi)) + log_det)
        return H.expand(self._batch_shape) if self._batch_shape else H
