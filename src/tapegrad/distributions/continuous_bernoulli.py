"""ContinuousBernoulli (Loaiza-Ganem and Cunningham 2019): density proportional to
p^x (1 - p)^(1 - x) on [0, 1]. Near p = 1/2 the normaliser is 0/0, so inside ``lims``
every closed form switches to its Taylor expansion (as torch)."""

from __future__ import annotations

import math

import tapegrad as tg

from . import constraints
from .exp_family import ExponentialFamily
from .utils import broadcast_all, clamp_probs, draw, lazy_property, logits_to_probs, probs_to_logits

__all__ = ["ContinuousBernoulli"]


class ContinuousBernoulli(ExponentialFamily):
    """Continuous Bernoulli on [0, 1] with ``probs`` (or ``logits``)."""

    arg_constraints = {"probs": constraints.unit_interval, "logits": constraints.real}
    support = constraints.unit_interval
    _mean_carrier_measure = 0
    has_rsample = True

    def __init__(self, probs=None, logits=None, lims=(0.499, 0.501), validate_args=None):
        if (probs is None) == (logits is None):
            raise ValueError("Either `probs` or `logits` must be specified, but not both.")
        if probs is not None:
            (self.probs,) = broadcast_all(probs)
            if validate_args is not None:
                if not bool(self.arg_constraints["probs"].check(self.probs)._data.all()):
                    raise ValueError("The parameter probs has invalid values")
            self.probs = clamp_probs(self.probs)
        else:
            (self.logits,) = broadcast_all(logits)
        self._param = self.probs if probs is not None else self.logits
        self._lims = lims
        super().__init__(self._param.shape, validate_args=validate_args)

    def expand(self, batch_shape, _instance=None):
        new = self._get_checked_instance(ContinuousBernoulli, _instance)
        shape = tuple(batch_shape)
        new._lims = self._lims
        return self._expand_probs_or_logits(new, shape)

    @lazy_property
    def logits(self):
        return probs_to_logits(self.probs, is_binary=True)

    @lazy_property
    def probs(self):
        return clamp_probs(logits_to_probs(self.logits, is_binary=True))

    @property
    def param_shape(self):
        return self._param.shape

    def _outside_unstable_region(self):
        return (self.probs <= self._lims[0]) | (self.probs > self._lims[1])

    def _cut_probs(self):
        p = self.probs
        return tg.where(self._outside_unstable_region(), p, self._lims[0] * tg.ones_like(p))

    def _cont_bern_log_norm(self):
        cut = self._cut_probs()
        below = tg.where(cut <= 0.5, cut, tg.zeros_like(cut))
        above = tg.where(cut >= 0.5, cut, tg.ones_like(cut))
        log_norm = tg.log(tg.abs(tg.log1p(-cut) - tg.log(cut))) - tg.where(
            cut <= 0.5, tg.log1p(-2.0 * below), tg.log(2.0 * above - 1.0)
        )
        x = (self.probs - 0.5) ** 2
        taylor = math.log(2.0) + (4.0 / 3.0 + 104.0 / 45.0 * x) * x
        return tg.where(self._outside_unstable_region(), log_norm, taylor)

    @property
    def mean(self):
        cut = self._cut_probs()
        mus = cut / (2.0 * cut - 1.0) + 1.0 / (tg.log1p(-cut) - tg.log(cut))
        x = self.probs - 0.5
        taylor = 0.5 + (1.0 / 3.0 + 16.0 / 45.0 * x**2) * x
        return tg.where(self._outside_unstable_region(), mus, taylor)

    @property
    def stddev(self):
        return tg.sqrt(self.variance)

    @property
    def variance(self):
        cut = self._cut_probs()
        var = cut * (cut - 1.0) / (1.0 - 2.0 * cut) ** 2 + 1.0 / (tg.log1p(-cut) - tg.log(cut)) ** 2
        x = (self.probs - 0.5) ** 2
        taylor = 1.0 / 12.0 - (1.0 / 15.0 - 128.0 / 945.0 * x) * x
        return tg.where(self._outside_unstable_region(), var, taylor)

    def sample(self, sample_shape=()):
        with tg.no_grad():
            return self.rsample(sample_shape)

    def rsample(self, sample_shape=()):
        shape = self._extended_shape(sample_shape)
        return self.icdf(draw(lambda g, s: g.random(s), shape, self.probs.dtype))

    def log_prob(self, value):
        if self._validate_args:
            self._validate_sample(value)
        logits, value = broadcast_all(self.logits, value)
        bce = tg.nn.functional.binary_cross_entropy_with_logits(logits, value, reduction="none")
        return -bce + self._cont_bern_log_norm()

    def cdf(self, value):
        if self._validate_args:
            self._validate_sample(value)
        cut = self._cut_probs()
        cdfs = (cut**value * (1.0 - cut) ** (1.0 - value) + cut - 1.0) / (2.0 * cut - 1.0)
        unbounded = tg.where(self._outside_unstable_region(), cdfs, value)
        return tg.where(
            value <= 0.0,
            tg.zeros_like(value),
            tg.where(value >= 1.0, tg.ones_like(value), unbounded),
        )

    def icdf(self, value):
        cut = self._cut_probs()
        inner = (tg.log1p(-cut + value * (2.0 * cut - 1.0)) - tg.log1p(-cut)) / (
            tg.log(cut) - tg.log1p(-cut)
        )
        return tg.where(self._outside_unstable_region(), inner, value)

    def entropy(self):
        log_probs0 = tg.log1p(-self.probs)
        log_probs1 = tg.log(self.probs)
        return self.mean * (log_probs0 - log_probs1) - self._cont_bern_log_norm() - log_probs0

    @property
    def _natural_params(self):
        return (self.logits,)

    def _log_normalizer(self, x):
        lo, hi = self._lims[0] - 0.5, self._lims[1] - 0.5
        outside = (x <= lo) | (x > hi)
        cut = tg.where(outside, x, lo * tg.ones_like(x))
        log_norm = tg.log(tg.abs(tg.expm1(cut))) - tg.log(tg.abs(cut))
        taylor = 0.5 * x + x**2 / 24.0 - x**4 / 2880.0
        return tg.where(outside, log_norm, taylor)
