"""Gamma, Beta, Dirichlet (and Chi2): reparameterised through standard-gamma draws.

Note [Implicit reparameterisation]
A gamma draw z ~ Gamma(a, 1) has no closed-form inverse CDF, so rsample differentiates it
implicitly (Figurnov et al. 2018, as torch's ``_standard_gamma_grad``): with F(z; a) the
regularised lower incomplete gamma function, F(z(a); a) = u is fixed, hence
dz/da = -(dF/da) / (dF/dz), where dF/dz is the gamma density and dF/da is taken by a
central difference of ``scipy.special.gammainc`` in a (relative step 1e-5, about 1e-9
relative error in float64). Beta and Dirichlet normalise gamma draws, so their gradients
follow by the chain rule. The derivative is treated as a constant: gradients of rsample
are first order in the concentration (torch's are too).
"""

from __future__ import annotations

import numpy as np
from scipy import special as sp

import tapegrad as tg

from ..autograd.graph import make_result
from ..creation import _rng
from ..tensor import Tensor
from . import constraints
from .distribution import Distribution
from .exp_family import ExponentialFamily
from .utils import broadcast_all

__all__ = ["Gamma", "Beta", "Dirichlet", "Chi2", "standard_gamma"]


def _dgamma_dalpha(z, a):
    """dz/da of a standard gamma draw z at concentration a (Note [Implicit reparameterisation])."""
    z = z.astype(np.float64)
    a = a.astype(np.float64)
    h = 1e-5 * np.maximum(a, 1e-3)
    dF_da = (sp.gammainc(a + h, z) - sp.gammainc(a - h, z)) / (2 * h)
    with np.errstate(divide="ignore", over="ignore", invalid="ignore"):
        log_pdf = (a - 1) * np.log(z) - z - sp.gammaln(a)
        grad = -dF_da / np.exp(log_pdf)
    return np.where(np.isfinite(grad), grad, 0.0)


def standard_gamma(concentration: Tensor, sample_shape=(), generator=None) -> Tensor:
    """Draws of Gamma(concentration, 1) with shape ``sample_shape + concentration.shape``,
    differentiable in ``concentration`` (Note [Implicit reparameterisation])."""
    a = concentration._data
    shape = tuple(sample_shape) + a.shape
    z = _rng(generator).standard_gamma(np.broadcast_to(a.astype(np.float64), shape), shape)
    tiny = np.finfo(a.dtype).tiny
    z = np.maximum(z, tiny).astype(a.dtype)
    n = len(shape) - a.ndim
    dz = Tensor._wrap(_dgamma_dalpha(z, np.broadcast_to(a, shape)).astype(a.dtype))

    def backward(g):
        grad = g * dz
        return (grad.sum(dim=tuple(range(n))) if n else grad,)

    return make_result(z, (concentration,), backward, "StandardGammaBackward")


class Gamma(ExponentialFamily):
    """Gamma with shape ``concentration`` and ``rate`` (mean concentration / rate)."""

    # the exponential-family form (ExponentialFamily's entropy and Bregman KL), as torch
    _mean_carrier_measure = 0

    @property
    def _natural_params(self):
        return (self.concentration - 1, -self.rate)

    def _log_normalizer(self, x, y):
        return tg.lgamma(x + 1) + (x + 1) * tg.log(-y.reciprocal())

    arg_constraints = {"concentration": constraints.positive, "rate": constraints.positive}
    support = constraints.nonnegative
    has_rsample = True

    def __init__(self, concentration, rate, validate_args=None):
        self.concentration, self.rate = broadcast_all(concentration, rate)
        super().__init__(self.concentration.shape, validate_args=validate_args)

    def expand(self, batch_shape, _instance=None):
        new = Gamma.__new__(Gamma)
        new.concentration = self.concentration.expand(tuple(batch_shape))
        new.rate = self.rate.expand(tuple(batch_shape))
        Distribution.__init__(new, batch_shape, validate_args=False)
        new._validate_args = self._validate_args
        return new

    @property
    def mean(self):
        return self.concentration / self.rate

    @property
    def mode(self):
        return ((self.concentration - 1) / self.rate).clamp(min=0)

    @property
    def variance(self):
        return self.concentration / self.rate**2

    def rsample(self, sample_shape=()):
        shape = self._extended_shape(sample_shape)
        a = (
            self.concentration.expand(shape)
            if self.concentration.shape != shape
            else self.concentration
        )
        z = standard_gamma(a)
        tiny = float(np.finfo(z.dtype).tiny)
        return (z / self.rate).clamp(min=tiny)

    def log_prob(self, value):
        if self._validate_args:
            self._validate_sample(value)
        a, b = self.concentration, self.rate
        return tg.xlogy(a, b) + tg.xlogy(a - 1, value) - b * value - tg.lgamma(a)

    def entropy(self):
        a = self.concentration
        return a - tg.log(self.rate) + tg.lgamma(a) + (1.0 - a) * tg.digamma(a)

    def cdf(self, value):
        if self._validate_args:
            self._validate_sample(value)
        return tg.special.gammainc(self.concentration, self.rate * value)


class Chi2(Gamma):
    """Chi-squared with ``df`` degrees of freedom: Gamma(df / 2, 1 / 2)."""

    arg_constraints = {"df": constraints.positive}

    def __init__(self, df, validate_args=None):
        (df,) = broadcast_all(df)
        super().__init__(0.5 * df, tg.full_like(df, 0.5), validate_args=validate_args)

    @property
    def df(self):
        return self.concentration * 2


class Dirichlet(ExponentialFamily):
    """Dirichlet over the simplex of the last dim, with ``concentration`` > 0."""

    # the exponential-family form (ExponentialFamily's entropy and Bregman KL), as torch
    @property
    def _natural_params(self):
        return (self.concentration,)

    def _log_normalizer(self, x):
        return tg.lgamma(x).sum(-1) - tg.lgamma(x.sum(-1))

    arg_constraints = {"concentration": constraints.independent(constraints.positive, 1)}
    support = constraints.simplex
    has_rsample = True

    def __init__(self, concentration, validate_args=None):
        if concentration.dim() < 1:
            raise ValueError("`concentration` parameter must be at least one-dimensional.")
        self.concentration = concentration
        shape = tuple(concentration.shape)
        super().__init__(shape[:-1], shape[-1:], validate_args=validate_args)

    def expand(self, batch_shape, _instance=None):
        new = Dirichlet.__new__(Dirichlet)
        new.concentration = self.concentration.expand(tuple(batch_shape) + self._event_shape)
        Distribution.__init__(new, batch_shape, self._event_shape, validate_args=False)
        new._validate_args = self._validate_args
        return new

    def rsample(self, sample_shape=()):
        shape = self._extended_shape(sample_shape)
        a = (
            self.concentration.expand(shape)
            if self.concentration.shape != shape
            else self.concentration
        )
        z = standard_gamma(a)
        x = z / z.sum(-1, keepdim=True)
        eps = float(np.finfo(x.dtype).tiny)
        return x.clamp(min=eps, max=1 - float(np.finfo(x.dtype).eps))

    def log_prob(self, value):
        if self._validate_args:
            self._validate_sample(value)
        a = self.concentration
        return tg.xlogy(a - 1.0, value).sum(-1) + tg.lgamma(a.sum(-1)) - tg.lgamma(a).sum(-1)

    @property
    def mean(self):
        return self.concentration / self.concentration.sum(-1, keepdim=True)

    @property
    def mode(self):
        a = (self.concentration - 1).clamp(min=0.0)
        return a / a.sum(-1, keepdim=True)

    @property
    def variance(self):
        a0 = self.concentration.sum(-1, keepdim=True)
        return self.concentration * (a0 - self.concentration) / (a0**2 * (a0 + 1))

    def entropy(self):
        k = self.concentration.shape[-1]
        a = self.concentration
        a0 = a.sum(-1)
        return (
            tg.lgamma(a).sum(-1)
            - tg.lgamma(a0)
            - (k - a0) * tg.digamma(a0)
            - ((a - 1.0) * tg.digamma(a)).sum(-1)
        )


class Beta(ExponentialFamily):
    """Beta on [0, 1] with ``concentration1`` (alpha) and ``concentration0`` (beta)."""

    # the exponential-family form (ExponentialFamily's entropy and Bregman KL), as torch
    @property
    def _natural_params(self):
        return (self.concentration1, self.concentration0)

    def _log_normalizer(self, x, y):
        return tg.lgamma(x) + tg.lgamma(y) - tg.lgamma(x + y)

    arg_constraints = {
        "concentration1": constraints.positive,
        "concentration0": constraints.positive,
    }
    support = constraints.unit_interval
    has_rsample = True

    def __init__(self, concentration1, concentration0, validate_args=None):
        c1, c0 = broadcast_all(concentration1, concentration0)
        self.concentration1, self.concentration0 = c1, c0
        self._dirichlet = Dirichlet(tg.stack([c1, c0], -1), validate_args=False)
        super().__init__(c1.shape, validate_args=validate_args)

    def expand(self, batch_shape, _instance=None):
        shape = tuple(batch_shape)
        return Beta(
            self.concentration1.expand(shape),
            self.concentration0.expand(shape),
            validate_args=self._validate_args,
        )

    @property
    def mean(self):
        return self.concentration1 / (self.concentration1 + self.concentration0)

    @property
    def mode(self):
        return self._dirichlet.mode[..., 0]

    @property
    def variance(self):
        total = self.concentration1 + self.concentration0
        return self.concentration1 * self.concentration0 / (total**2 * (total + 1))

    def rsample(self, sample_shape=()):
        return self._dirichlet.rsample(sample_shape)[..., 0]

    def log_prob(self, value):
        if self._validate_args:
            self._validate_sample(value)
        heads_tails = tg.stack([value, 1.0 - value], -1)
        return self._dirichlet.log_prob(heads_tails)

    def entropy(self):
        return self._dirichlet.entropy()
