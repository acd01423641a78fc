"""MultivariateNormal, parametrised by a covariance, a precision or a lower Cholesky factor."""

from __future__ import annotations

import math

import numpy as np

import tapegrad as tg

from . import constraints
from .distribution import Distribution
from .utils import draw, lazy_property

__all__ = ["MultivariateNormal"]


def _batch_mahalanobis(L, x):
    """x^T (L L^T)^{-1} x over the last dim, batched: ||L^{-1} x||^2."""
    y = tg.linalg.solve_triangular(L, x.unsqueeze(-1), upper=False).squeeze(-1)
    return (y * y).sum(-1)


class MultivariateNormal(Distribution):
    """Gaussian over vectors of the last dim of ``loc``; give exactly one of
    ``covariance_matrix``, ``precision_matrix`` or ``scale_tril``."""

    arg_constraints = {
        "loc": constraints.real_vector,
        "covariance_matrix": constraints.positive_definite,
        "precision_matrix": constraints.positive_definite,
        "scale_tril": constraints.lower_cholesky,
    }
    support = constraints.real_vector
    has_rsample = True

    def __init__(
        self,
        loc,
        covariance_matrix=None,
        precision_matrix=None,
        scale_tril=None,
        validate_args=None,
    ):
        if loc.dim() < 1:
            raise ValueError("loc must be at least one-dimensional.")
        given = [m is not None for m in (covariance_matrix, precision_matrix, scale_tril)]
        if sum(given) != 1:
            raise ValueError(
                "Exactly one of covariance_matrix or precision_matrix or scale_tril may be "
                "specified."
            )
        matrix = next(m for m in (covariance_matrix, precision_matrix, scale_tril) if m is not None)
        if matrix.dim() < 2:
            raise ValueError(
                "scale_tril, covariance_matrix or precision_matrix must be at least "
                "two-dimensional, with optional leading batch dimensions"
            )
        batch_shape = np.broadcast_shapes(tuple(matrix.shape[:-2]), tuple(loc.shape[:-1]))
        event = tuple(loc.shape[-1:])
        mshape = batch_shape + event + event
        if scale_tril is not None:
            self.scale_tril = scale_tril.expand(mshape)
        elif covariance_matrix is not None:
            self.covariance_matrix = covariance_matrix.expand(mshape)
        else:
            self.precision_matrix = precision_matrix.expand(mshape)
        self.loc = loc.expand(batch_shape + event)
        super().__init__(batch_shape, event, validate_args=validate_args)
        if scale_tril is not None:
            self._unbroadcasted_scale_tril = scale_tril
        elif covariance_matrix is not None:
            self._unbroadcasted_scale_tril = tg.linalg.cholesky(covariance_matrix)
        else:
            self._unbroadcasted_scale_tril = _precision_to_scale_tril(precision_matrix)

    def expand(self, batch_shape, _instance=None):
        shape = tuple(batch_shape)
        return MultivariateNormal(
            self.loc.expand(shape + self._event_shape),
            scale_tril=self._unbroadcasted_scale_tril.expand(shape + self._event_shape * 2),
            validate_args=self._validate_args,
        )

    @lazy_property
    def scale_tril(self):
        return self._unbroadcasted_scale_tril.expand(self._batch_shape + self._event_shape * 2)

    @lazy_property
    def covariance_matrix(self):
        L = self._unbroadcasted_scale_tril
        return (L @ L.mT).expand(self._batch_shape + self._event_shape * 2)

    @lazy_property
    def precision_matrix(self):
        cov = self._unbroadcasted_scale_tril @ self._unbroadcasted_scale_tril.mT
        return tg.linalg.inv(cov).expand(self._batch_shape + self._event_shape * 2)

    @property
    def mean(self):
        return self.loc

    @property
    def mode(self):
        return self.loc

    @property
    def variance(self):
        L = self._unbroadcasted_scale_tril
        return (L * L).sum(-1).expand(self._batch_shape + self._event_shape)

    def rsample(self, sample_shape=()):
        shape = self._extended_shape(sample_shape)
        eps = draw(lambda g, s: g.standard_normal(s), shape, self.loc.dtype)
        return self.loc + (self._unbroadcasted_scale_tril @ eps.unsqueeze(-1)).squeeze(-1)

    def log_prob(self, value):
        if self._validate_args:
            self._validate_sample(value)
        diff = value - self.loc
        L = self._unbroadcasted_scale_tril
        shape = np.broadcast_shapes(tuple(diff.shape[:-1]), tuple(L.shape[:-2]))
        n = self._event_shape[0]
        M = _batch_mahalanobis(L.expand(shape + (n, n)), diff.expand(shape + (n,)))
        half_log_det = tg.log(tg.diagonal(L, dim1=-2, dim2=-1)).sum(-1)
        return -0.5 * (n * math.log(2 * math.pi) + M) - half_log_det

    def entropy(self):
        n = self._event_shape[0]
        half_log_det = tg.log(tg.diagonal(self._unbroadcasted_scale_tril, dim1=-2, dim2=-1)).sum(-1)
        H = 0.5 * n * (1.0 + math.log(2 * math.pi)) + half_log_det
        return H.expand(self._batch_shape) if self._batch_shape else H


def _precision_to_scale_tril(P):
    """The lower Cholesky factor of P^{-1}, without inverting P directly (as torch)."""
    Lf = tg.linalg.cholesky(tg.flip(P, (-2, -1)))
    L_inv = tg.flip(Lf, (-2, -1)).mT
    eye = tg.eye(P.shape[-1], dtype=P.dtype)
    return tg.linalg.solve_triangular(L_inv, eye.expand(L_inv.shape), upper=False)
