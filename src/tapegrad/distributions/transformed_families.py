"""Families defined as a transform of a simpler one (as torch defines them): HalfNormal and
HalfCauchy (|x|), Gumbel (-log(-log u)), Weibull and Pareto (of an Exponential),
InverseGamma (1 / Gamma), Kumaraswamy (of a Uniform). Sampling, rsample and log_prob come
from TransformedDistribution; the closed forms (moments, entropy, cdf) are written here.
"""

from __future__ import annotations

import math

import numpy as np

import tapegrad as tg

from . import constraints
from .continuous import Cauchy, Exponential, Normal, Uniform
from .gamma import Gamma
from .transformed import TransformedDistribution
from .transforms import AffineTransform, ExpTransform, PowerTransform
from .transforms_extra import AbsTransform, StickBreakingTransform
from .utils import broadcast_all

__all__ = [
    "HalfNormal",
    "HalfCauchy",
    "Gumbel",
    "Weibull",
    "Pareto",
    "InverseGamma",
    "Kumaraswamy",
    "LogisticNormal",
    "euler_constant",
]

euler_constant = 0.57721566490153286060


def _nan_where(cond, value):
    return tg.where(cond, tg.full_like(value, float("nan")), value)


class _Half(TransformedDistribution):
    """|X| for a symmetric X = base(0, scale): twice its density on [0, inf)."""

    arg_constraints = {"scale": constraints.positive}
    support = constraints.nonnegative
    has_rsample = True
    _base = Normal

    def __init__(self, scale, validate_args=None):
        base = self._base(0, scale, validate_args=False)
        super().__init__(base, AbsTransform(), validate_args=validate_args)

    def expand(self, batch_shape, _instance=None):
        new = self._get_checked_instance(type(self), _instance)
        return super().expand(batch_shape, _instance=new)

    @property
    def scale(self):
        return self.base_dist.scale

    @property
    def mode(self):
        return tg.zeros_like(self.scale)

    def log_prob(self, value):
        if self._validate_args:
            self._validate_sample(value)
        log_prob = self.base_dist.log_prob(value) + math.log(2)
        return tg.where(value >= 0, log_prob, tg.full_like(log_prob, -math.inf))

    def cdf(self, value):
        if self._validate_args:
            self._validate_sample(value)
        return 2 * self.base_dist.cdf(value) - 1

    def icdf(self, prob):
        return self.base_dist.icdf((prob + 1) / 2)

    def entropy(self):
        return self.base_dist.entropy() - math.log(2)


class HalfNormal(_Half):
    """|X| for X ~ Normal(0, scale)."""

    _base = Normal

    @property
    def mean(self):
        return self.scale * math.sqrt(2 / math.pi)

    @property
    def variance(self):
        return self.scale**2 * (1 - 2 / math.pi)


class HalfCauchy(_Half):
    """|X| for X ~ Cauchy(0, scale)."""

    _base = Cauchy

    @property
    def mean(self):
        return tg.full(self._extended_shape(), math.inf, dtype=self.scale.dtype)

    @property
    def variance(self):
        return self.base_dist.variance


class Gumbel(TransformedDistribution):
    """Gumbel (type-I extreme value) with ``loc`` and ``scale``: loc - scale * log(-log U)."""

    arg_constraints = {"loc": constraints.real, "scale": constraints.positive}
    support = constraints.real

    def __init__(self, loc, scale, validate_args=None):
        self.loc, self.scale = broadcast_all(loc, scale)
        info = np.finfo(self.loc.dtype)
        base = Uniform(
            tg.full_like(self.loc, float(info.tiny)),
            tg.full_like(self.loc, 1 - float(info.eps)),
            validate_args=validate_args,
        )
        transforms = [
            ExpTransform().inv,
            AffineTransform(loc=0, scale=-tg.ones_like(self.scale)),
            ExpTransform().inv,
            AffineTransform(loc=self.loc, scale=-self.scale),
        ]
        super().__init__(base, transforms, validate_args=validate_args)

    def expand(self, batch_shape, _instance=None):
        new = self._get_checked_instance(Gumbel, _instance)
        new.loc = self.loc.expand(tuple(batch_shape))
        new.scale = self.scale.expand(tuple(batch_shape))
        return super().expand(batch_shape, _instance=new)

    def log_prob(self, value):
        if self._validate_args:
            self._validate_sample(value)
        y = (self.loc - value) / self.scale
        return y - tg.exp(y) - tg.log(self.scale)

    @property
    def mean(self):
        return self.loc + self.scale * euler_constant

    @property
    def mode(self):
        return self.loc

    @property
    def stddev(self):
        return math.pi / math.sqrt(6) * self.scale

    @property
    def variance(self):
        return self.stddev**2

    def entropy(self):
        return tg.log(self.scale) + (1 + euler_constant)


class Weibull(TransformedDistribution):
    """Weibull with ``scale`` and ``concentration``: scale * E^(1/concentration), E ~ Exp(1)."""

    arg_constraints = {"scale": constraints.positive, "concentration": constraints.positive}
    support = constraints.positive

    def __init__(self, scale, concentration, validate_args=None):
        self.scale, self.concentration = broadcast_all(scale, concentration)
        self.concentration_reciprocal = self.concentration.reciprocal()
        base = Exponential(tg.ones_like(self.scale), validate_args=validate_args)
        transforms = [
            PowerTransform(exponent=self.concentration_reciprocal),
            AffineTransform(loc=0, scale=self.scale),
        ]
        super().__init__(base, transforms, validate_args=validate_args)

    def expand(self, batch_shape, _instance=None):
        shape = tuple(batch_shape)
        return Weibull(
            self.scale.expand(shape), self.concentration.expand(shape), self._validate_args
        )

    @property
    def mean(self):
        return self.scale * tg.exp(tg.lgamma(1 + self.concentration_reciprocal))

    @property
    def mode(self):
        k = self.concentration
        return self.scale * ((k - 1) / k) ** k.reciprocal()

    @property
    def variance(self):
        r = self.concentration_reciprocal
        return self.scale**2 * (tg.exp(tg.lgamma(1 + 2 * r)) - tg.exp(2 * tg.lgamma(1 + r)))

    def entropy(self):
        r = self.concentration_reciprocal
        return euler_constant * (1 - r) + tg.log(self.scale * r) + 1


class Pareto(TransformedDistribution):
    """Pareto type I with ``scale`` (minimum) and ``alpha`` (tail index)."""

    arg_constraints = {"alpha": constraints.positive, "scale": constraints.positive}

    def __init__(self, scale, alpha, validate_args=None):
        self.scale, self.alpha = broadcast_all(scale, alpha)
        base = Exponential(self.alpha, validate_args=validate_args)
        transforms = [ExpTransform(), AffineTransform(loc=0, scale=self.scale)]
        super().__init__(base, transforms, validate_args=validate_args)

    def expand(self, batch_shape, _instance=None):
        new = self._get_checked_instance(Pareto, _instance)
        new.scale = self.scale.expand(tuple(batch_shape))
        new.alpha = self.alpha.expand(tuple(batch_shape))
        return super().expand(batch_shape, _instance=new)

    @constraints.dependent_property(is_discrete=False, event_dim=0)
    def support(self):
        return constraints.greater_than_eq(self.scale)

    @property
    def mean(self):
        a = self.alpha.clamp(min=1)
        return a * self.scale / (a - 1)

    @property
    def mode(self):
        return self.scale

    @property
    def variance(self):
        a = self.alpha.clamp(min=2)
        return self.scale**2 * a / ((a - 1) ** 2 * (a - 2))

    def entropy(self):
        return tg.log(self.scale / self.alpha) + (1 + self.alpha.reciprocal())


class InverseGamma(TransformedDistribution):
    """1 / X for X ~ Gamma(concentration, rate)."""

    arg_constraints = {"concentration": constraints.positive, "rate": constraints.positive}
    support = constraints.positive
    has_rsample = True

    def __init__(self, concentration, rate, validate_args=None):
        base = Gamma(concentration, rate, validate_args=validate_args)
        neg_one = -tg.ones((), dtype=base.rate.dtype)
        super().__init__(base, PowerTransform(neg_one), validate_args=validate_args)

    def expand(self, batch_shape, _instance=None):
        new = self._get_checked_instance(InverseGamma, _instance)
        return super().expand(batch_shape, _instance=new)

    @property
    def concentration(self):
        return self.base_dist.concentration

    @property
    def rate(self):
        return self.base_dist.rate

    @property
    def mean(self):
        a = self.concentration
        safe = tg.where(a > 1, a, tg.full_like(a, 2.0))
        return tg.where(a > 1, self.rate / (safe - 1), tg.full_like(a, math.inf))

    @property
    def mode(self):
        return self.rate / (self.concentration + 1)

    @property
    def variance(self):
        a = self.concentration
        safe = tg.where(a > 2, a, tg.full_like(a, 3.0))
        result = self.rate**2 / ((safe - 1) ** 2 * (safe - 2))
        return tg.where(a > 2, result, tg.full_like(result, math.inf))

    def entropy(self):
        a = self.concentration
        return a + tg.log(self.rate) + tg.lgamma(a) - (1 + a) * tg.digamma(a)


def _kumaraswamy_moment(a, b, n):
    arg1 = 1 + n / a
    return b * tg.exp(tg.lgamma(arg1) + tg.lgamma(b) - tg.lgamma(arg1 + b))


class Kumaraswamy(TransformedDistribution):
    """Kumaraswamy on (0, 1): (1 - U^(1/concentration0))^(1/concentration1)."""

    arg_constraints = {
        "concentration1": constraints.positive,
        "concentration0": constraints.positive,
    }
    support = constraints.unit_interval
    has_rsample = True

    def __init__(self, concentration1, concentration0, validate_args=None):
        self.concentration1, self.concentration0 = broadcast_all(concentration1, concentration0)
        c0 = self.concentration0
        base = Uniform(tg.zeros_like(c0), tg.ones_like(c0), validate_args=validate_args)
        transforms = [
            PowerTransform(exponent=c0.reciprocal()),
            AffineTransform(loc=1.0, scale=-1.0),
            PowerTransform(exponent=self.concentration1.reciprocal()),
        ]
        super().__init__(base, transforms, validate_args=validate_args)

    def expand(self, batch_shape, _instance=None):
        new = self._get_checked_instance(Kumaraswamy, _instance)
        new.concentration1 = self.concentration1.expand(tuple(batch_shape))
        new.concentration0 = self.concentration0.expand(tuple(batch_shape))
        return super().expand(batch_shape, _instance=new)

    @property
    def mean(self):
        return _kumaraswamy_moment(self.concentration1, self.concentration0, 1)

    @property
    def mode(self):
        # NOTE: ((a - 1) / (a b - 1))^(1 / a) with a = concentration1, b = concentration0;
        # nan where a < 1 or b < 1 (no interior mode), as torch. torch 2.13's formula
        # (log1p(-b) / b - log1p(-a b)) is nan for every b > 1, which is wrong: not copied.
        c1, c0 = self.concentration1, self.concentration0
        undefined = (c0 < 1) | (c1 < 1)
        a = tg.where(undefined, tg.full_like(c1, 2.0), c1)  # keeps the untaken branch finite
        b = tg.where(undefined, tg.full_like(c0, 2.0), c0)
        log_mode = (tg.log(a - 1) - tg.log(a * b - 1)) / a
        return tg.exp(_nan_where(undefined, log_mode))

    @property
    def variance(self):
        c1, c0 = self.concentration1, self.concentration0
        return _kumaraswamy_moment(c1, c0, 2) - self.mean**2

    def entropy(self):
        t1 = 1 - self.concentration1.reciprocal()
        t0 = 1 - self.concentration0.reciprocal()
        H0 = tg.digamma(self.concentration0 + 1) + euler_constant
        return t0 + t1 * H0 - tg.log(self.concentration1) - tg.log(self.concentration0)


class LogisticNormal(TransformedDistribution):
    """The stick-breaking image on the K-simplex of a Normal over K - 1 dims."""

    arg_constraints = {"loc": constraints.real, "scale": constraints.positive}
    support = constraints.simplex
    has_rsample = True

    def __init__(self, loc, scale, validate_args=None):
        base = Normal(loc, scale, validate_args=validate_args)
        if not base.batch_shape:
            base = base.expand([1])
        super().__init__(base, StickBreakingTransform(), validate_args=validate_args)

    def expand(self, batch_shape, _instance=None):
        new = self._get_checked_instance(LogisticNormal, _instance)
        return super().expand(batch_shape, _instance=new)

    @property
    def loc(self):
        return self.base_dist.base_dist.loc

    @property
    def scale(self):
        return self.base_dist.base_dist.scale
