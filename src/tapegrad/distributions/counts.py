"""Multinomial (counts over K categories in ``total_count`` draws) and NegativeBinomial
(failures before ``total_count`` successes, a Gamma-Poisson mixture)."""

from __future__ import annotations

import numpy as np

import tapegrad as tg

from ..tensor import Tensor
from . import constraints
from .discrete import Binomial, Categorical
from .distribution import Distribution
from .gamma import Gamma
from .utils import broadcast_all, lazy_property, logits_to_probs, probs_to_logits

__all__ = ["Multinomial", "NegativeBinomial"]

_logsigmoid = tg.nn.functional.logsigmoid


class Multinomial(Distribution):
    """Counts over the last dim of ``probs``/``logits`` in ``total_count`` (an int) draws."""

    arg_constraints = {"probs": constraints.simplex, "logits": constraints.real_vector}

    def __init__(self, total_count=1, probs=None, logits=None, validate_args=None):
        if not isinstance(total_count, int):
            raise NotImplementedError("inhomogeneous total_count is not supported")
        self.total_count = total_count
        self._categorical = Categorical(probs=probs, logits=logits)
        self._binomial = Binomial(total_count=total_count, probs=self.probs)
        batch_shape = self._categorical._batch_shape
        event_shape = tuple(self._categorical.param_shape[-1:])
        super().__init__(batch_shape, event_shape, validate_args=validate_args)

    def expand(self, batch_shape, _instance=None):
        new = self._get_checked_instance(Multinomial, _instance)
        shape = tuple(batch_shape)
        new.total_count = self.total_count
        new._categorical = self._categorical.expand(shape)
        new._binomial = Binomial(total_count=self.total_count, probs=new._categorical.probs)
        Distribution.__init__(new, shape, self._event_shape, validate_args=False)
        new._validate_args = self._validate_args
        return new

    @constraints.dependent_property(is_discrete=True, event_dim=1)
    def support(self):
        return constraints.multinomial(self.total_count)

    @property
    def logits(self):
        return self._categorical.logits

    @property
    def probs(self):
        return self._categorical.probs

    @property
    def param_shape(self):
        return self._categorical.param_shape

    @property
    def mean(self):
        return self.probs * self.total_count

    @property
    def variance(self):
        return self.total_count * self.probs * (1 - self.probs)

    def sample(self, sample_shape=()):
        if isinstance(sample_shape, int):
            sample_shape = (sample_shape,)
        draws = self._categorical.sample((self.total_count,) + tuple(sample_shape))._data
        k = self._event_shape[0]
        counts = (draws[..., None] == np.arange(k)).sum(0)
        return Tensor._wrap(counts.astype(self.probs.dtype))

    def entropy(self):
        n = float(self.total_count)
        log_n_factorial = tg.lgamma(tg.tensor(n + 1, dtype=self.probs.dtype))
        term1 = n * self._categorical.entropy() - log_n_factorial
        support = self._binomial.enumerate_support(expand=False)[1:]
        binomial_probs = tg.exp(self._binomial.log_prob(support))
        weights = tg.lgamma(support + 1)
        return term1 + (binomial_probs * weights).sum((0, -1))

    def log_prob(self, value):
        if self._validate_args:
            self._validate_sample(value)
        logits, value = broadcast_all(self.logits, value)
        log_factorial_n = tg.lgamma(value.sum(-1) + 1)
        log_factorial_xs = tg.lgamma(value + 1).sum(-1)
        # 0 * -inf is 0 here: a category of probability 0 drawn 0 times
        logits = tg.where((value == 0) & (logits == -np.inf), tg.zeros_like(logits), logits)
        return log_factorial_n - log_factorial_xs + (logits * value).sum(-1)


class NegativeBinomial(Distribution):
    """Failures before ``total_count`` successes, each trial failing with ``probs``."""

    arg_constraints = {
        "total_count": constraints.greater_than_eq(0),
        "probs": constraints.half_open_interval(0.0, 1.0),
        "logits": constraints.real,
    }
    support = constraints.nonnegative_integer

    def __init__(self, total_count, probs=None, logits=None, validate_args=None):
        if (probs is None) == (logits is None):
            raise ValueError("Either `probs` or `logits` must be specified, but not both.")
        if probs is not None:
            total_count, self.probs = broadcast_all(total_count, probs)
            param = self.probs
        else:
            total_count, self.logits = broadcast_all(total_count, logits)
            param = self.logits
        self.total_count = total_count.to(param.dtype)
        self._param = param
        super().__init__(param.shape, validate_args=validate_args)

    def expand(self, batch_shape, _instance=None):
        new = self._get_checked_instance(NegativeBinomial, _instance)
        shape = tuple(batch_shape)
        new.total_count = self.total_count.expand(shape)
        return self._expand_probs_or_logits(new, shape)

    @lazy_property
    def logits(self):
        return probs_to_logits(self.probs, is_binary=True)

    @lazy_property
    def probs(self):
        return logits_to_probs(self.logits, is_binary=True)

    @property
    def param_shape(self):
        return self._param.shape

    @property
    def mean(self):
        return self.total_count * tg.exp(self.logits)

    @property
    def mode(self):
        return ((self.total_count - 1) * tg.exp(self.logits)).floor().clamp(min=0.0)

    @property
    def variance(self):
        return self.mean / tg.sigmoid(-self.logits)

    @lazy_property
    def _gamma(self):
        return Gamma(self.total_count, tg.exp(-self.logits), validate_args=False)

    def sample(self, sample_shape=()):
        with tg.no_grad():
            rate = self._gamma.sample(sample_shape)
            return tg.poisson(rate)

    def log_prob(self, value):
        if self._validate_args:
            self._validate_sample(value)
        n = self.total_count
        log_unnormalized = n * _logsigmoid(-self.logits) + value * _logsigmoid(self.logits)
        log_normalization = -tg.lgamma(n + value) + tg.lgamma(1.0 + value) + tg.lgamma(n)
        log_normalization = log_normalization.masked_fill(n + value == 0.0, 0.0)
        return log_unnormalized - log_normalization
