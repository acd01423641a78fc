"""Normal, Uniform, Exponential, Laplace, Cauchy: location-scale families with closed forms."""

from __future__ import annotations

import math

import numpy as np

import tapegrad as tg

from . import constraints
from .distribution import Distribution
from .exp_family import ExponentialFamily
from .utils import broadcast_all, draw, eps_of

__all__ = ["Normal", "Uniform", "Exponential", "Laplace", "Cauchy"]

_HALF_LOG_2PI = 0.5 * math.log(2 * math.pi)


def _expand_params(self, cls, batch_shape, names, _instance=None):
    new = _instance if _instance is not None else cls.__new__(cls)
    batch_shape = tuple(batch_shape)
    for name in names:
        setattr(new, name, getattr(self, name).expand(batch_shape))
    Distribution.__init__(new, batch_shape, self._event_shape, validate_args=False)
    new._validate_args = self._validate_args
    return new


class _LocScale(Distribution):
    """A real location-scale family (Normal, Laplace, Cauchy): ``loc`` and ``scale``
    broadcast together, expanded together, and the mode at ``loc``."""

    arg_constraints = {"loc": constraints.real, "scale": constraints.positive}
    support = constraints.real
    has_rsample = True

    def __init__(self, loc, scale, validate_args=None):
        self.loc, self.scale = broadcast_all(loc, scale)
        super().__init__(self.loc.shape, validate_args=validate_args)

    def expand(self, batch_shape, _instance=None):
        return _expand_params(self, type(self), batch_shape, ("loc", "scale"), _instance)

    @property
    def mode(self):
        return self.loc


class Normal(_LocScale, ExponentialFamily):
    """Gaussian with mean ``loc`` and standard deviation ``scale``."""

    # the exponential-family form (ExponentialFamily's entropy and Bregman KL), as torch
    _mean_carrier_measure = 0

    @property
    def _natural_params(self):
        return (self.loc / self.scale**2, -0.5 * self.scale**-2)

    def _log_normalizer(self, x, y):
        return -0.25 * x**2 / y + 0.5 * tg.log(-math.pi / y)

    @property
    def mean(self):
        return self.loc

    @property
    def stddev(self):
        return self.scale

    @property
    def variance(self):
        return self.scale**2

    def rsample(self, sample_shape=()):
        shape = self._extended_shape(sample_shape)
        eps = draw(lambda g, s: g.standard_normal(s), shape, self.loc.dtype)
        return self.loc + eps * self.scale

    def log_prob(self, value):
        if self._validate_args:
            self._validate_sample(value)
        var = self.scale**2
        return -((value - self.loc) ** 2) / (2 * var) - tg.log(self.scale) - _HALF_LOG_2PI

    def cdf(self, value):
        if self._validate_args:
            self._validate_sample(value)
        return 0.5 * (1 + tg.erf((value - self.loc) / (self.scale * math.sqrt(2))))

    def icdf(self, value):
        return self.loc + self.scale * tg.erfinv(2 * value - 1) * math.sqrt(2)

    def entropy(self):
        return 0.5 + _HALF_LOG_2PI + tg.log(self.scale)


class Uniform(Distribution):
    """Uniform on the half-open interval ``[low, high)``."""

    arg_constraints = {"low": constraints.real, "high": constraints.dependent}
    has_rsample = True

    def __init__(self, low, high, validate_args=None):
        self.low, self.high = broadcast_all(low, high)
        super().__init__(self.low.shape, validate_args=validate_args)
        if self._validate_args and not bool(np.all(self.low._data < self.high._data)):
            raise ValueError("Uniform is not defined when low>= high")

    def expand(self, batch_shape, _instance=None):
        return _expand_params(self, Uniform, batch_shape, ("low", "high"), _instance)

    @constraints.dependent_property(is_discrete=False, event_dim=0)
    def support(self):
        return constraints.interval(self.low, self.high)

    @property
    def mean(self):
        return (self.high + self.low) / 2

    @property
    def mode(self):
        return self.high * float("nan")

    @property
    def stddev(self):
        return (self.high - self.low) / 12**0.5

    @property
    def variance(self):
        return (self.high - self.low) ** 2 / 12

    def rsample(self, sample_shape=()):
        shape = self._extended_shape(sample_shape)
        u = draw(lambda g, s: g.random(s), shape, self.low.dtype)
        return self.low + u * (self.high - self.low)

    def log_prob(self, value):
        if self._validate_args:
            self._validate_sample(value)
        lb = (self.low <= value).to(self.low.dtype)
        ub = (self.high > value).to(self.low.dtype)
        return tg.log(lb * ub) - tg.log(self.high - self.low)

    def cdf(self, value):
        if self._validate_args:
            self._validate_sample(value)
        return ((value - self.low) / (self.high - self.low)).clamp(min=0, max=1)

    def icdf(self, value):
        return value * (self.high - self.low) + self.low

    def entropy(self):
        return tg.log(self.high - self.low)


class Exponential(ExponentialFamily):
    """Exponential with ``rate`` (mean ``1 / rate``)."""

    # the exponential-family form (ExponentialFamily's entropy and Bregman KL), as torch
    _mean_carrier_measure = 0

    @property
    def _natural_params(self):
        return (-self.rate,)

    def _log_normalizer(self, x):
        return -tg.log(-x)

    arg_constraints = {"rate": constraints.positive}
    support = constraints.nonnegative
    has_rsample = True

    def __init__(self, rate, validate_args=None):
        (self.rate,) = broadcast_all(rate)
        super().__init__(self.rate.shape, validate_args=validate_args)

    def expand(self, batch_shape, _instance=None):
        return _expand_params(self, Exponential, batch_shape, ("rate",), _instance)

    @property
    def mean(self):
        return self.rate.reciprocal() if hasattr(self.rate, "reciprocal") else 1 / self.rate

    @property
    def mode(self):
        return tg.zeros_like(self.rate)

    @property
    def stddev(self):
        return 1 / self.rate

    @property
    def variance(self):
        return self.rate ** (-2)

    def rsample(self, sample_shape=()):
        shape = self._extended_shape(sample_shape)
        e = draw(lambda g, s: g.standard_exponential(s), shape, self.rate.dtype)
        return e / self.rate

    def log_prob(self, value):
        if self._validate_args:
            self._validate_sample(value)
        return tg.log(self.rate) - self.rate * value

    def cdf(self, value):
        if self._validate_args:
            self._validate_sample(value)
        return 1 - tg.exp(-self.rate * value)

    def icdf(self, value):
        return -tg.log1p(-value) / self.rate

    def entropy(self):
        return 1.0 - tg.log(self.rate)


class Laplace(_LocScale):
    """Laplace with ``loc`` and ``scale``."""

    @property
    def mean(self):
        return self.loc

    @property
    def variance(self):
        return 2 * self.scale**2

    @property
    def stddev(self):
        return 2**0.5 * self.scale

    def rsample(self, sample_shape=()):
        shape = self._extended_shape(sample_shape)
        eps = eps_of(self.loc.dtype)
        u = draw(lambda g, s: g.uniform(-1 + eps, 1, s), shape, self.loc.dtype)
        return self.loc - self.scale * tg.sign(u) * tg.log1p(-u.abs())

    def log_prob(self, value):
        if self._validate_args:
            self._validate_sample(value)
        return -tg.log(2 * self.scale) - (value - self.loc).abs() / self.scale

    def cdf(self, value):
        if self._validate_args:
            self._validate_sample(value)
        z = (value - self.loc) / self.scale
        return 0.5 - 0.5 * tg.sign(z) * tg.expm1(-z.abs())

    def icdf(self, value):
        term = value - 0.5
        return self.loc - self.scale * tg.sign(term) * tg.log1p(-2 * term.abs())

    def entropy(self):
        return 1 + tg.log(2 * self.scale)


class Cauchy(_LocScale):
    """Cauchy with ``loc`` (median) and ``scale`` (half width at half maximum)."""

    @property
    def mean(self):
        return tg.full(self._extended_shape(), float("nan"), dtype=self.loc.dtype)

    @property
    def variance(self):
        return tg.full(self._extended_shape(), float("inf"), dtype=self.loc.dtype)

    def rsample(self, sample_shape=()):
        shape = self._extended_shape(sample_shape)
        eps = draw(lambda g, s: g.standard_cauchy(s), shape, self.loc.dtype)
        return self.loc + eps * self.scale

    def log_prob(self, value):
        if self._validate_args:
            self._validate_sample(value)
        return (
            -math.log(math.pi)
            - tg.log(self.scale)
            - tg.log1p(((value - self.loc) / self.scale) ** 2)
        )

    def cdf(self, value):
        return tg.atan((value - self.loc) / self.scale) / math.pi + 0.5

    def icdf(self, value):
        return tg.tan(math.pi * (value - 0.5)) * self.scale + self.loc

    def entropy(self):
        return math.log(4 * math.pi) + tg.log(self.scale)
