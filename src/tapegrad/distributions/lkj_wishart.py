"""Distributions over matrices: LKJCholesky (Cholesky factors of correlation matrices) and
Wishart (positive definite matrices), as torch's."""

from __future__ import annotations

import math
import warnings

import numpy as np

import tapegrad as tg

from ..tensor import Tensor
from . import constraints
from .distribution import Distribution
from .exp_family import ExponentialFamily
from .gamma import Beta, Chi2
from .multivariate_normal import _precision_to_scale_tril
from .utils import broadcast_all, draw, lazy_property

__all__ = ["LKJCholesky", "Wishart"]

_LOG_2 = math.log(2)


class LKJCholesky(Distribution):
    """LKJ over lower Cholesky factors of ``dim`` x ``dim`` correlation matrices, with
    ``concentration`` (sampled by the onion method, as torch; no rsample)."""

    arg_constraints = {"concentration": constraints.positive}
    support = constraints.corr_cholesky

    def __init__(self, dim, concentration=1.0, validate_args=None):
        if dim < 2:
            raise ValueError(
                f"Expected dim to be an integer greater than or equal to 2. Found dim={dim}."
            )
        self.dim = dim
        (self.concentration,) = broadcast_all(concentration)
        dtype = self.concentration.dtype
        marginal_conc = self.concentration + 0.5 * (self.dim - 2)
        offset = tg.cat([tg.zeros(1, dtype=dtype), tg.arange(self.dim - 1, dtype=dtype)])
        self._beta = Beta(offset + 0.5, marginal_conc.unsqueeze(-1) - 0.5 * offset)
        super().__init__(self.concentration.shape, (dim, dim), validate_args)

    def expand(self, batch_shape, _instance=None):
        new = self._get_checked_instance(LKJCholesky, _instance)
        shape = tuple(batch_shape)
        new.dim = self.dim
        new.concentration = self.concentration.expand(shape)
        new._beta = self._beta.expand(shape + (self.dim,))
        Distribution.__init__(new, shape, self._event_shape, validate_args=False)
        new._validate_args = self._validate_args
        return new

    def sample(self, sample_shape=()):
        with tg.no_grad():
            y = self._beta.sample(sample_shape).unsqueeze(-1)._data
            shape = self._extended_shape(sample_shape)
            u = np.tril(draw(lambda g, s: g.standard_normal(s), shape, y.dtype)._data, -1)
            with np.errstate(invalid="ignore", divide="ignore"):
                u = u / np.linalg.norm(u, axis=-1, keepdims=True)
            u[..., 0, :] = 0.0
            w = np.sqrt(y) * u
            tiny = np.finfo(w.dtype).tiny
            diag = np.sqrt(np.maximum(1 - (w**2).sum(-1), tiny))
            idx = np.arange(self.dim)
            w[..., idx, idx] += diag
            return Tensor._wrap(w)

    def log_prob(self, value):
        if self._validate_args:
            self._validate_sample(value)
        diag_elems = value.diagonal(dim1=-1, dim2=-2)[..., 1:]
        order = tg.arange(2, self.dim + 1, dtype=self.concentration.dtype)
        order = 2 * (self.concentration - 1).unsqueeze(-1) + self.dim - order
        unnormalized = (order * tg.log(diag_elems)).sum(-1)
        dm1 = self.dim - 1
        alpha = self.concentration + 0.5 * dm1
        denominator = tg.lgamma(alpha) * dm1
        numerator = tg.special.multigammaln(alpha - 0.5, dm1)
        pi_constant = 0.5 * dm1 * math.log(math.pi)
        return unnormalized - (pi_constant + numerator - denominator)


def _mvdigamma(x, p):
    if not bool((x._data > (p - 1) / 2).all()):
        raise AssertionError("Wrong domain for multivariate digamma function.")
    shifts = tg.arange(p, dtype=x.dtype) / 2
    return tg.digamma(x.unsqueeze(-1) - shifts).sum(-1)


class Wishart(ExponentialFamily):
    """Wishart over p x p positive definite matrices with ``df`` > p - 1 and one of
    ``covariance_matrix``, ``precision_matrix`` or ``scale_tril`` (Bartlett sampling)."""

    support = constraints.positive_definite
    has_rsample = True
    _mean_carrier_measure = 0

    @property
    def arg_constraints(self):
        return {
            "covariance_matrix": constraints.positive_definite,
            "precision_matrix": constraints.positive_definite,
            "scale_tril": constraints.lower_cholesky,
            "df": constraints.greater_than(self._event_shape[-1] - 1),
        }

    def __init__(
        self, df, covariance_matrix=None, precision_matrix=None, scale_tril=None, validate_args=None
    ):
        given = [m for m in (covariance_matrix, precision_matrix, scale_tril) if m is not None]
        if len(given) != 1:
            raise AssertionError(
                "Exactly one of covariance_matrix or precision_matrix or scale_tril may be "
                "specified."
            )
        param = given[0]
        if param.dim() < 2:
            raise ValueError(
                "scale_tril must be at least two-dimensional, with optional leading batch "
                "dimensions"
            )
        if isinstance(df, Tensor):
            batch_shape = np.broadcast_shapes(tuple(param.shape[:-2]), tuple(df.shape))
            self.df = df.expand(batch_shape)
        else:
            batch_shape = tuple(param.shape[:-2])
            self.df = tg.tensor(float(df), dtype=param.dtype)
        p = param.shape[-1]
        event_shape = tuple(param.shape[-2:])
        if bool((self.df._data <= p - 1).any()):
            raise ValueError(f"Value of df={df} expected to be greater than ndim - 1 = {p - 1}.")
        full = batch_shape + event_shape
        if scale_tril is not None:
            self.scale_tril = param.expand(full)
        elif covariance_matrix is not None:
            self.covariance_matrix = param.expand(full)
        else:
            self.precision_matrix = param.expand(full)
        if bool((self.df._data < p).any()):
            warnings.warn(
                "Low df values detected. Singular samples are highly likely to occur for "
                "ndim - 1 < df < ndim.",
                stacklevel=2,
            )
        self._event_shape = event_shape  # arg_constraints reads it before __init__ sets it
        super().__init__(batch_shape, event_shape, validate_args=validate_args)
        self._batch_dims = [-(x + 1) for x in range(len(self._batch_shape))]
        if scale_tril is not None:
            self._unbroadcasted_scale_tril = scale_tril
        elif covariance_matrix is not None:
            self._unbroadcasted_scale_tril = tg.linalg.cholesky(covariance_matrix)
        else:
            self._unbroadcasted_scale_tril = _precision_to_scale_tril(precision_matrix)
        self._dist_chi2 = self._chi2(self.df, batch_shape)

    def _chi2(self, df, batch_shape):
        p = self._event_shape[-1]
        dtype = self._unbroadcasted_scale_tril.dtype
        return Chi2(df.unsqueeze(-1) - tg.arange(p, dtype=dtype).expand(tuple(batch_shape) + (p,)))

    def expand(self, batch_shape, _instance=None):
        new = self._get_checked_instance(Wishart, _instance)
        shape = tuple(batch_shape)
        cov_shape = shape + self._event_shape
        new._unbroadcasted_scale_tril = self._unbroadcasted_scale_tril.expand(cov_shape)
        new.df = self.df.expand(shape)
        new._batch_dims = [-(x + 1) for x in range(len(shape))]
        for name in ("covariance_matrix", "scale_tril", "precision_matrix"):
            if name in self.__dict__:
                setattr(new, name, getattr(self, name).expand(cov_shape))
        new._event_shape = self._event_shape
        new._dist_chi2 = new._chi2(new.df, shape)
        Distribution.__init__(new, shape, self._event_shape, validate_args=False)
        new._validate_args = self._validate_args
        return new

    @lazy_property
    def scale_tril(self):
        return self._unbroadcasted_scale_tril.expand(self._batch_shape + self._event_shape)

    @lazy_property
    def covariance_matrix(self):
        L = self._unbroadcasted_scale_tril
        return (L @ L.mT).expand(self._batch_shape + self._event_shape)

    @lazy_property
    def precision_matrix(self):
        L = self._unbroadcasted_scale_tril
        return tg.linalg.inv(L @ L.mT).expand(self._batch_shape + self._event_shape)

    def _df_matrix(self, x):
        return x.reshape(self._batch_shape + (1, 1))

    @property
    def mean(self):
        return self._df_matrix(self.df) * self.covariance_matrix

    @property
    def mode(self):
        factor = self.df - self.covariance_matrix.shape[-1] - 1
        factor = tg.where(factor <= 0, tg.full_like(factor, math.nan), factor)
        return self._df_matrix(factor) * self.covariance_matrix

    @property
    def variance(self):
        V = self.covariance_matrix
        diag_V = V.diagonal(dim1=-2, dim2=-1)
        outer = diag_V.unsqueeze(-1) * diag_V.unsqueeze(-2)
        return self._df_matrix(self.df) * (V**2 + outer)

    def rsample(self, sample_shape=(), max_try_correction=None):
        if isinstance(sample_shape, int):
            sample_shape = (sample_shape,)
        p = self._event_shape[-1]
        eps = float(np.finfo(self.df.dtype).eps)
        chi = tg.sqrt(self._dist_chi2.rsample(sample_shape)).clamp(min=eps)
        rows, cols = np.tril_indices(p, -1)
        lower = np.zeros(tuple(sample_shape) + self._batch_shape + (p, p))
        n = tuple(sample_shape) + self._batch_shape + (len(rows),)
        lower[..., rows, cols] = draw(lambda g, s: g.standard_normal(s), n, np.float64)._data
        noise = tg.diag_embed(chi) + Tensor._wrap(lower.astype(chi.dtype))
        chol = self._unbroadcasted_scale_tril @ noise
        return chol @ chol.mT

    def log_prob(self, value):
        if self._validate_args:
            self._validate_sample(value)
        nu = self.df
        p = self._event_shape[-1]
        L = self._unbroadcasted_scale_tril
        log_diag = tg.log(L.diagonal(dim1=-2, dim2=-1)).sum(-1)
        logdet = tg.linalg.slogdet(value)[1]
        # tr(Sigma^{-1} X) = ||L^{-1} X L^{-T}||-free form: sum of diag(L^{-T} L^{-1} X)
        shape = np.broadcast_shapes(tuple(L.shape[:-2]), tuple(value.shape[:-2]))
        Linv_X = tg.linalg.solve_triangular(
            L.expand(shape + (p, p)), value.expand(shape + (p, p)), upper=False
        )
        sol = tg.linalg.solve_triangular(L.mT.expand(shape + (p, p)), Linv_X, upper=True)
        trace = sol.diagonal(dim1=-2, dim2=-1).sum(-1)
        return (
            -nu * (p * _LOG_2 / 2 + log_diag)
            - tg.special.multigammaln(nu / 2, p)
            + (nu - p - 1) / 2 * logdet
            - trace / 2
        )

    def entropy(self):
        nu = self.df
        p = self._event_shape[-1]
        log_diag = tg.log(self._unbroadcasted_scale_tril.diagonal(dim1=-2, dim2=-1)).sum(-1)
        return (
            (p + 1) * (p * _LOG_2 / 2 + log_diag)
            + tg.special.multigammaln(nu / 2, p)
            - (nu - p - 1) / 2 * _mvdigamma(nu / 2, p)
            + nu * p / 2
        )

    @property
    def _natural_params(self):
        p = self._event_shape[-1]
        return (-self.precision_matrix / 2, (self.df - p - 1) / 2)

    def _log_normalizer(self, x, y):
        p = self._event_shape[-1]
        logdet = tg.linalg.slogdet(-2 * x)[1]
        return (y + (p + 1) / 2) * (-logdet + _LOG_2 * p) + tg.special.multigammaln(
            y + (p + 1) / 2, p
        )
