"""Continuous relaxations of discrete draws: RelaxedBernoulli and RelaxedOneHotCategorical
(Concrete / Gumbel-softmax, reparameterised), and OneHotCategoricalStraightThrough (a hard
one-hot sample whose gradient is that of the probabilities)."""

from __future__ import annotations

import math

import tapegrad as tg

from . import constraints
from .discrete import Categorical, OneHotCategorical
from .distribution import Distribution
from .transformed import TransformedDistribution
from .transforms import ExpTransform, SigmoidTransform
from .utils import broadcast_all, clamp_probs, draw, lazy_property, logits_to_probs, probs_to_logits

__all__ = [
    "LogitRelaxedBernoulli",
    "RelaxedBernoulli",
    "ExpRelaxedCategorical",
    "RelaxedOneHotCategorical",
    "OneHotCategoricalStraightThrough",
]


def _uniform(shape, dtype):
    return clamp_probs(draw(lambda g, s: g.random(s), shape, dtype))


class LogitRelaxedBernoulli(Distribution):
    """The logit of a RelaxedBernoulli draw: (logit(u) + logits) / temperature."""

    arg_constraints = {"probs": constraints.unit_interval, "logits": constraints.real}
    support = constraints.real
    has_rsample = True

    def __init__(self, temperature, probs=None, logits=None, validate_args=None):
        self.temperature = temperature
        if (probs is None) == (logits is None):
            raise ValueError("Either `probs` or `logits` must be specified, but not both.")
        if probs is not None:
            (self.probs,) = broadcast_all(probs)
        else:
            (self.logits,) = broadcast_all(logits)
        self._param = self.probs if probs is not None else self.logits
        super().__init__(self._param.shape, validate_args=validate_args)

    def expand(self, batch_shape, _instance=None):
        new = self._get_checked_instance(LogitRelaxedBernoulli, _instance)
        shape = tuple(batch_shape)
        new.temperature = self.temperature
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

    def rsample(self, sample_shape=()):
        shape = self._extended_shape(sample_shape)
        probs = clamp_probs(self.probs.expand(shape))
        u = _uniform(shape, probs.dtype)
        return (tg.log(u) - tg.log1p(-u) + tg.log(probs) - tg.log1p(-probs)) / self.temperature

    def log_prob(self, value):
        if self._validate_args:
            self._validate_sample(value)
        logits, value = broadcast_all(self.logits, value)
        diff = logits - value * self.temperature
        return tg.log(self.temperature) + diff - 2 * tg.log1p(tg.exp(diff))


class RelaxedBernoulli(TransformedDistribution):
    """A relaxed Bernoulli on (0, 1) at ``temperature``: sigmoid of a LogitRelaxedBernoulli."""

    arg_constraints = {"probs": constraints.unit_interval, "logits": constraints.real}
    support = constraints.unit_interval
    has_rsample = True

    def __init__(self, temperature, probs=None, logits=None, validate_args=None):
        base = LogitRelaxedBernoulli(temperature, probs, logits)
        super().__init__(base, SigmoidTransform(), validate_args=validate_args)

    def expand(self, batch_shape, _instance=None):
        new = self._get_checked_instance(RelaxedBernoulli, _instance)
        return super().expand(batch_shape, _instance=new)

    @property
    def temperature(self):
        return self.base_dist.temperature

    @property
    def logits(self):
        return self.base_dist.logits

    @property
    def probs(self):
        return self.base_dist.probs


class ExpRelaxedCategorical(Distribution):
    """The log of a RelaxedOneHotCategorical draw (log-softmax of Gumbel-perturbed logits)."""

    arg_constraints = {"probs": constraints.simplex, "logits": constraints.real_vector}
    support = constraints.real_vector
    has_rsample = True

    def __init__(self, temperature, probs=None, logits=None, validate_args=None):
        self._categorical = Categorical(probs, logits)
        self.temperature = temperature
        batch_shape = self._categorical._batch_shape
        event_shape = tuple(self._categorical.param_shape[-1:])
        super().__init__(batch_shape, event_shape, validate_args=validate_args)

    def expand(self, batch_shape, _instance=None):
        new = self._get_checked_instance(ExpRelaxedCategorical, _instance)
        shape = tuple(batch_shape)
        new.temperature = self.temperature
        new._categorical = self._categorical.expand(shape)
        Distribution.__init__(new, shape, self._event_shape, validate_args=False)
        new._validate_args = self._validate_args
        return new

    @property
    def param_shape(self):
        return self._categorical.param_shape

    @property
    def logits(self):
        return self._categorical.logits

    @property
    def probs(self):
        return self._categorical.probs

    def rsample(self, sample_shape=()):
        shape = self._extended_shape(sample_shape)
        u = _uniform(shape, self.logits.dtype)
        gumbels = -tg.log(-tg.log(u))
        scores = (self.logits + gumbels) / self.temperature
        return scores - scores.logsumexp(dim=-1, keepdim=True)

    def log_prob(self, value):
        k = self._categorical._num_events
        if self._validate_args:
            self._validate_sample(value)
        logits, value = broadcast_all(self.logits, value)
        t = self.temperature
        log_scale = math.lgamma(k) + (k - 1) * tg.log(t)
        score = logits - value * t
        score = (score - score.logsumexp(dim=-1, keepdim=True)).sum(-1)
        return score + log_scale


class RelaxedOneHotCategorical(TransformedDistribution):
    """A relaxed one-hot vector on the simplex at ``temperature`` (Gumbel-softmax)."""

    arg_constraints = {"probs": constraints.simplex, "logits": constraints.real_vector}
    support = constraints.simplex
    has_rsample = True

    def __init__(self, temperature, probs=None, logits=None, validate_args=None):
        base = ExpRelaxedCategorical(temperature, probs, logits, validate_args=validate_args)
        super().__init__(base, ExpTransform(), validate_args=validate_args)

    def expand(self, batch_shape, _instance=None):
        new = self._get_checked_instance(RelaxedOneHotCategorical, _instance)
        return super().expand(batch_shape, _instance=new)

    @property
    def temperature(self):
        return self.base_dist.temperature

    @property
    def logits(self):
        return self.base_dist.logits

    @property
    def probs(self):
        return self.base_dist.probs


class OneHotCategoricalStraightThrough(OneHotCategorical):
    """OneHotCategorical whose ``rsample`` is the hard sample in the forward pass and has the
    gradient of ``probs`` (the straight-through estimator)."""

    has_rsample = True

    def expand(self, batch_shape, _instance=None):
        shape = tuple(batch_shape) + self._event_shape
        kind = "probs" if "probs" in self._categorical.__dict__ else "logits"
        param = getattr(self, kind).expand(shape)
        return OneHotCategoricalStraightThrough(**{kind: param}, validate_args=self._validate_args)

    def rsample(self, sample_shape=()):
        samples = self.sample(sample_shape)
        probs = self._categorical.probs
        return samples + (probs - probs.detach())
