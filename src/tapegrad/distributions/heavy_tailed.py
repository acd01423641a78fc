"""StudentT, FisherSnedecor (ratios of gamma draws, so reparameterised through
``standard_gamma``) and GeneralizedPareto (by its inverse CDF)."""

from __future__ import annotations

import math

import numpy as np

import tapegrad as tg

from . import constraints
from .distribution import Distribution
from .gamma import Chi2, Gamma
from .utils import broadcast_all, draw

__all__ = ["StudentT", "FisherSnedecor", "GeneralizedPareto"]


def _where_else(cond, value, other):
    """``value`` where ``cond``, else the constant ``other`` (no gradient there)."""
    return tg.where(cond, value, tg.full_like(value, other))


def _safe(x, cond, fill):
    """``x`` where ``cond``, else ``fill``: keeps the untaken branch of a ``where`` finite so
    its zero gradient does not turn into 0 * inf = nan."""
    return tg.where(cond, x, tg.full_like(x, fill))


class StudentT(Distribution):
    """Student's t with ``df`` degrees of freedom, ``loc`` and ``scale``."""

    arg_constraints = {
        "df": constraints.positive,
        "loc": constraints.real,
        "scale": constraints.positive,
    }
    support = constraints.real
    has_rsample = True

    def __init__(self, df, loc=0.0, scale=1.0, validate_args=None):
        self.df, self.loc, self.scale = broadcast_all(df, loc, scale)
        self._chi2 = Chi2(self.df)
        super().__init__(self.df.shape, validate_args=validate_args)

    def expand(self, batch_shape, _instance=None):
        new = self._get_checked_instance(StudentT, _instance)
        shape = tuple(batch_shape)
        new.df, new.loc, new.scale = (p.expand(shape) for p in (self.df, self.loc, self.scale))
        new._chi2 = self._chi2.expand(shape)
        Distribution.__init__(new, shape, validate_args=False)
        new._validate_args = self._validate_args
        return new

    @property
    def mean(self):
        return _where_else(self.df > 1, self.loc, math.nan)

    @property
    def mode(self):
        return self.loc

    @property
    def variance(self):
        df = self.df
        big = df > 2
        safe = _safe(df, big, 3.0)
        var = self.scale**2 * safe / (safe - 2)
        rest = tg.where(df > 1, tg.full_like(df, math.inf), tg.full_like(df, math.nan))
        return tg.where(big, var, rest)

    def rsample(self, sample_shape=()):
        shape = self._extended_shape(sample_shape)
        X = draw(lambda g, s: g.standard_normal(s), shape, self.df.dtype)
        Z = self._chi2.rsample(sample_shape)
        Y = X * tg.rsqrt(Z / self.df)
        return self.loc + self.scale * Y

    def log_prob(self, value):
        if self._validate_args:
            self._validate_sample(value)
        df = self.df
        y = (value - self.loc) / self.scale
        Z = (
            tg.log(self.scale)
            + 0.5 * tg.log(df)
            + 0.5 * math.log(math.pi)
            + tg.lgamma(0.5 * df)
            - tg.lgamma(0.5 * (df + 1.0))
        )
        return -0.5 * (df + 1.0) * tg.log1p(y**2 / df) - Z

    def entropy(self):
        df = self.df
        lbeta = tg.lgamma(0.5 * df) + math.lgamma(0.5) - tg.lgamma(0.5 * (df + 1))
        return (
            tg.log(self.scale)
            + 0.5 * (df + 1) * (tg.digamma(0.5 * (df + 1)) - tg.digamma(0.5 * df))
            + 0.5 * tg.log(df)
            + lbeta
        )


class FisherSnedecor(Distribution):
    """Fisher-Snedecor F with ``df1`` and ``df2`` degrees of freedom."""

    arg_constraints = {"df1": constraints.positive, "df2": constraints.positive}
    support = constraints.positive
    has_rsample = True

    def __init__(self, df1, df2, validate_args=None):
        self.df1, self.df2 = broadcast_all(df1, df2)
        self._gamma1 = Gamma(self.df1 * 0.5, self.df1)
        self._gamma2 = Gamma(self.df2 * 0.5, self.df2)
        super().__init__(self.df1.shape, validate_args=validate_args)

    def expand(self, batch_shape, _instance=None):
        new = self._get_checked_instance(FisherSnedecor, _instance)
        shape = tuple(batch_shape)
        new.df1, new.df2 = self.df1.expand(shape), self.df2.expand(shape)
        new._gamma1, new._gamma2 = self._gamma1.expand(shape), self._gamma2.expand(shape)
        Distribution.__init__(new, shape, validate_args=False)
        new._validate_args = self._validate_args
        return new

    @property
    def mean(self):
        df2 = _where_else(self.df2 > 2, self.df2, math.nan)  # as torch: nan, and its gradient
        return df2 / (df2 - 2)

    @property
    def mode(self):
        df1, df2 = self.df1, self.df2
        safe = _safe(df1, df1 > 2, 3.0)
        return _where_else(df1 > 2, (safe - 2) / safe * df2 / (df2 + 2), math.nan)

    @property
    def variance(self):
        df1 = self.df1
        df2 = _where_else(self.df2 > 4, self.df2, math.nan)  # as torch: nan, and its gradient
        return 2 * df2**2 * (df1 + df2 - 2) / (df1 * (df2 - 2) ** 2 * (df2 - 4))

    def rsample(self, sample_shape=()):
        shape = self._extended_shape(sample_shape)
        tiny = float(np.finfo(self.df1.dtype).tiny)
        X1 = self._gamma1.rsample(sample_shape).reshape(shape)
        X2 = self._gamma2.rsample(sample_shape).reshape(shape).clamp(min=tiny)
        return (X1 / X2).clamp(min=tiny)

    def log_prob(self, value):
        if self._validate_args:
            self._validate_sample(value)
        ct1, ct2, ct3 = self.df1 * 0.5, self.df2 * 0.5, self.df1 / self.df2
        t1 = tg.lgamma(ct1 + ct2) - tg.lgamma(ct1) - tg.lgamma(ct2)
        t2 = ct1 * tg.log(ct3) + (ct1 - 1) * tg.log(value)
        t3 = (ct1 + ct2) * tg.log1p(ct3 * value)
        return t1 + t2 - t3


class GeneralizedPareto(Distribution):
    """Generalized Pareto with ``loc``, ``scale`` and shape ``concentration`` (xi); xi = 0 is
    the exponential limit."""

    arg_constraints = {
        "loc": constraints.real,
        "scale": constraints.positive,
        "concentration": constraints.real,
    }
    has_rsample = True

    def __init__(self, loc, scale, concentration, validate_args=None):
        self.loc, self.scale, self.concentration = broadcast_all(loc, scale, concentration)
        super().__init__(self.loc.shape, validate_args=validate_args)

    def expand(self, batch_shape, _instance=None):
        new = self._get_checked_instance(GeneralizedPareto, _instance)
        shape = tuple(batch_shape)
        new.loc, new.scale, new.concentration = (
            p.expand(shape) for p in (self.loc, self.scale, self.concentration)
        )
        Distribution.__init__(new, shape, validate_args=False)
        new._validate_args = self._validate_args
        return new

    def _zero_and_safe(self):
        c = self.concentration
        eq_zero = tg.isclose(c, tg.zeros_like(c))
        return eq_zero, tg.where(eq_zero, tg.ones_like(c), c)

    def rsample(self, sample_shape=()):
        shape = self._extended_shape(sample_shape)
        return self.icdf(draw(lambda g, s: g.random(s), shape, self.loc.dtype))

    def log_prob(self, value):
        if self._validate_args:
            self._validate_sample(value)
        z = (value - self.loc) / self.scale
        eq_zero, safe = self._zero_and_safe()
        y = 1 / safe + tg.ones_like(z)
        nonzero = tg.where(y == 0, y, y * tg.log1p(safe * z))
        return -tg.log(self.scale) - tg.where(eq_zero, z, nonzero)

    def log_survival_function(self, value):
        if self._validate_args:
            self._validate_sample(value)
        z = (value - self.loc) / self.scale
        eq_zero, safe = self._zero_and_safe()
        return tg.where(eq_zero, -z, -tg.log1p(safe * z) / safe)

    def log_cdf(self, value):
        return tg.log1p(-tg.exp(self.log_survival_function(value)))

    def cdf(self, value):
        return tg.exp(self.log_cdf(value))

    def icdf(self, value):
        eq_zero, safe = self._zero_and_safe()
        logu = tg.log1p(-value)
        nonzero = self.loc + self.scale / safe * tg.expm1(-safe * logu)
        return tg.where(eq_zero, self.loc - self.scale * logu, nonzero)

    @property
    def mean(self):
        c = self.concentration
        valid = c < 1
        result = self.loc + self.scale / (1 - _safe(c, valid, 0.5))
        return _where_else(valid, result, math.nan)

    @property
    def variance(self):
        c = self.concentration
        valid = c < 0.5
        s = _safe(c, valid, 0.25)
        return _where_else(valid, self.scale**2 / ((1 - s) ** 2 * (1 - 2 * s)), math.nan)

    def entropy(self):
        return (tg.log(self.scale) + self.concentration + 1).expand(self._batch_shape)

    @property
    def mode(self):
        return self.loc

    @constraints.dependent_property(is_discrete=False, event_dim=0)
    def support(self):
        lower = self.loc
        c = self.concentration
        upper = tg.where(c < 0, lower - self.scale / c, tg.full_like(c, math.inf))
        return constraints.interval(lower, upper)
