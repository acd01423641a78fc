"""Bernoulli, Binomial, Categorical, OneHotCategorical, Poisson, Geometric."""

from __future__ import annotations

import numpy as np

import tapegrad as tg

from ..creation import _rng
from ..tensor import Tensor
from . import constraints
from .distribution import Distribution
from .exp_family import ExponentialFamily
from .utils import broadcast_all, clamp_probs, lazy_property, logits_to_probs, probs_to_logits

__all__ = ["Bernoulli", "Binomial", "Categorical", "OneHotCategorical", "Poisson", "Geometric"]


def _one_of(probs, logits, name):
    if (probs is None) == (logits is None):
        raise ValueError(f"{name}: either `probs` or `logits` must be specified, but not both.")


class _BinaryParams(Distribution):
    """The probs/logits parametrisation of Bernoulli, Binomial and Geometric: one is given,
    the other is derived on first use."""

    def _set_param(self, name, probs, logits, *others):
        """Broadcast ``others`` with the given parameter; store it; return (others, it)."""
        _one_of(probs, logits, name)
        *rest, param = broadcast_all(*others, probs if probs is not None else logits)
        if probs is not None:
            self.probs = param
        else:
            self.logits = param
        return rest, param

    @lazy_property
    def logits(self):
        return probs_to_logits(self.probs, is_binary=True)

    @lazy_property
    def probs(self):
        return logits_to_probs(self.logits, is_binary=True)


class Bernoulli(_BinaryParams, ExponentialFamily):
    """1 with probability ``probs`` (or ``sigmoid(logits)``), else 0."""

    # the exponential-family form (ExponentialFamily's entropy and Bregman KL), as torch
    _mean_carrier_measure = 0

    @property
    def _natural_params(self):
        return (tg.logit(self.probs),)

    def _log_normalizer(self, x):
        return tg.log1p(tg.exp(x))

    arg_constraints = {"probs": constraints.unit_interval, "logits": constraints.real}
    support = constraints.boolean
    has_enumerate_support = True

    def __init__(self, probs=None, logits=None, validate_args=None):
        _, param = self._set_param("Bernoulli", probs, logits)
        super().__init__(param.shape, validate_args=validate_args)

    def expand(self, batch_shape, _instance=None):
        shape = tuple(batch_shape)
        if "probs" in self.__dict__:
            return Bernoulli(probs=self.probs.expand(shape), validate_args=self._validate_args)
        return Bernoulli(logits=self.logits.expand(shape), validate_args=self._validate_args)

    @property
    def mean(self):
        return self.probs

    @property
    def mode(self):
        mode = (self.probs >= 0.5).to(self.probs.dtype)
        return tg.where(self.probs == 0.5, tg.full_like(mode, float("nan")), mode)

    @property
    def variance(self):
        return self.probs * (1 - self.probs)

    def sample(self, sample_shape=()):
        shape = self._extended_shape(sample_shape)
        p = np.broadcast_to(self.probs._data, shape)
        return Tensor._wrap((_rng(None).random(shape) < p).astype(self.probs.dtype))

    def log_prob(self, value):
        if self._validate_args:
            self._validate_sample(value)
        logits, value = broadcast_all(self.logits, value)
        return -tg.nn.functional.binary_cross_entropy_with_logits(logits, value, reduction="none")

    def entropy(self):
        return tg.nn.functional.binary_cross_entropy_with_logits(
            self.logits, self.probs, reduction="none"
        )

    def enumerate_support(self, expand=True):
        values = tg.arange(
            2, dtype=self.probs.dtype if "probs" in self.__dict__ else self.logits.dtype
        )
        values = values.reshape((-1,) + (1,) * len(self._batch_shape))
        if expand:
            values = values.expand((-1,) + self._batch_shape)
        return values


class Binomial(_BinaryParams):
    """Number of successes in ``total_count`` Bernoulli trials with ``probs``."""

    arg_constraints = {
        "total_count": constraints.nonnegative_integer,
        "probs": constraints.unit_interval,
        "logits": constraints.real,
    }
    has_enumerate_support = True

    def __init__(self, total_count=1, probs=None, logits=None, validate_args=None):
        (self.total_count,), param = self._set_param("Binomial", probs, logits, total_count)
        super().__init__(param.shape, validate_args=validate_args)

    def expand(self, batch_shape, _instance=None):
        shape = tuple(batch_shape)
        kind = "probs" if "probs" in self.__dict__ else "logits"
        return Binomial(
            self.total_count.expand(shape),
            **{kind: getattr(self, kind).expand(shape)},
            validate_args=self._validate_args,
        )

    @constraints.dependent_property(is_discrete=True, event_dim=0)
    def support(self):
        return constraints.integer_interval(0, self.total_count)

    @property
    def mode(self):
        return ((self.total_count + 1) * self.probs).floor().clamp(max=self.total_count)

    def _homogeneous_count(self, what):
        n = int(self.total_count._data.max())
        if not self.total_count._data.min() == n:
            raise NotImplementedError(f"Inhomogeneous total count not supported by `{what}`.")
        return n

    def enumerate_support(self, expand=True):
        n = self._homogeneous_count("enumerate_support")
        dtype = (self.probs if "probs" in self.__dict__ else self.logits).dtype
        values = tg.arange(1 + n, dtype=dtype).reshape((-1,) + (1,) * len(self._batch_shape))
        return values.expand((-1,) + self._batch_shape) if expand else values

    def entropy(self):
        self._homogeneous_count("entropy")
        log_prob = self.log_prob(self.enumerate_support(False))
        return -(tg.exp(log_prob) * log_prob).sum(0)

    @property
    def mean(self):
        return self.total_count * self.probs

    @property
    def variance(self):
        return self.total_count * self.probs * (1 - self.probs)

    def sample(self, sample_shape=()):
        shape = self._extended_shape(sample_shape)
        n = np.broadcast_to(self.total_count._data, shape).astype(np.int64)
        p = np.broadcast_to(self.probs._data, shape)
        return Tensor._wrap(_rng(None).binomial(n, p).astype(self.probs.dtype))

    def log_prob(self, value):
        if self._validate_args:
            self._validate_sample(value)
        n = self.total_count
        log_factorial_n = tg.lgamma(n + 1)
        log_factorial_k = tg.lgamma(value + 1)
        log_factorial_nmk = tg.lgamma(n - value + 1)
        logits = self.logits
        # k * logits - n * log(1 + exp(logits)), stable for any sign of logits
        normalize = n * tg.nn.functional.softplus(logits)
        return log_factorial_n - log_factorial_k - log_factorial_nmk + value * logits - normalize


class Categorical(Distribution):
    """One of K categories (the last dim of ``probs``/``logits``), as an integer index."""

    arg_constraints = {
        "probs": constraints.simplex,
        "logits": constraints.independent(constraints.real, 1),
    }
    has_enumerate_support = True

    def __init__(self, probs=None, logits=None, validate_args=None):
        _one_of(probs, logits, "Categorical")
        if probs is not None:
            if probs.dim() < 1:
                raise ValueError("`probs` parameter must be at least one-dimensional.")
            self.probs = probs / probs.sum(-1, keepdim=True)
            param = self.probs
        else:
            if logits.dim() < 1:
                raise ValueError("`logits` parameter must be at least one-dimensional.")
            self.logits = logits - tg.logsumexp(logits, dim=-1, keepdim=True)
            param = self.logits
        self._num_events = param.shape[-1]
        super().__init__(tuple(param.shape[:-1]), validate_args=validate_args)

    def expand(self, batch_shape, _instance=None):
        shape = tuple(batch_shape) + (self._num_events,)
        cls = type(self)
        if "probs" in self.__dict__:
            return cls(probs=self.probs.expand(shape), validate_args=self._validate_args)
        return cls(logits=self.logits.expand(shape), validate_args=self._validate_args)

    @constraints.dependent_property(is_discrete=True, event_dim=0)
    def support(self):
        return constraints.integer_interval(0, self._num_events - 1)

    @lazy_property
    def logits(self):
        return probs_to_logits(self.probs)

    @lazy_property
    def probs(self):
        return logits_to_probs(self.logits)

    @property
    def param_shape(self):
        return (self.probs if "probs" in self.__dict__ else self.logits).shape

    @property
    def mean(self):
        return tg.full(self._extended_shape(), float("nan"), dtype=self.probs.dtype)

    @property
    def mode(self):
        return self.probs.argmax(dim=-1)

    @property
    def variance(self):
        return tg.full(self._extended_shape(), float("nan"), dtype=self.probs.dtype)

    def sample(self, sample_shape=()):
        if isinstance(sample_shape, int):
            sample_shape = (sample_shape,)
        p = self.probs._data.astype(np.float64)
        cdf = np.cumsum(p, axis=-1)
        cdf /= cdf[..., -1:]
        shape = tuple(sample_shape) + self._batch_shape
        u = _rng(None).random(shape + (1,))
        idx = (np.broadcast_to(cdf, shape + (self._num_events,)) < u).sum(-1)
        return Tensor._wrap(np.minimum(idx, self._num_events - 1).astype(np.int64))

    def log_prob(self, value):
        if self._validate_args:
            self._validate_sample(value)
        value = value.long().unsqueeze(-1)
        shape = np.broadcast_shapes(tuple(value.shape), tuple(self.logits.shape[:-1]) + (1,))
        value = value.expand(shape)
        log_pmf = self.logits.expand(shape[:-1] + (self._num_events,))
        return log_pmf.gather(-1, value).squeeze(-1)

    def entropy(self):
        min_real = float(np.finfo(self.logits.dtype).min)
        logits = self.logits.clamp(min=min_real)
        return -(logits * self.probs).sum(-1)

    def enumerate_support(self, expand=True):
        values = tg.arange(self._num_events).reshape((-1,) + (1,) * len(self._batch_shape))
        if expand:
            values = values.expand((-1,) + self._batch_shape)
        return values


class OneHotCategorical(Distribution):
    """A Categorical draw as a one-hot vector over the last dim."""

    arg_constraints = {
        "probs": constraints.simplex,
        "logits": constraints.independent(constraints.real, 1),
    }
    support = constraints.one_hot
    has_enumerate_support = True

    def __init__(self, probs=None, logits=None, validate_args=None):
        self._categorical = Categorical(probs, logits, validate_args=False)
        batch_shape = self._categorical._batch_shape
        event_shape = (self._categorical._num_events,)
        super().__init__(batch_shape, event_shape, validate_args=validate_args)

    def expand(self, batch_shape, _instance=None):
        shape = tuple(batch_shape) + self._event_shape
        if "probs" in self._categorical.__dict__:
            return OneHotCategorical(
                probs=self.probs.expand(shape), validate_args=self._validate_args
            )
        return OneHotCategorical(
            logits=self.logits.expand(shape), validate_args=self._validate_args
        )

    @property
    def probs(self):
        return self._categorical.probs

    @property
    def logits(self):
        return self._categorical.logits

    @property
    def mean(self):
        return self._categorical.probs

    @property
    def mode(self):
        probs = self._categorical.probs
        return tg.nn.functional.one_hot(probs.argmax(-1), probs.shape[-1]).to(probs.dtype)

    @property
    def variance(self):
        p = self._categorical.probs
        return p * (1 - p)

    def sample(self, sample_shape=()):
        idx = self._categorical.sample(sample_shape)
        n = self._categorical._num_events
        return Tensor._wrap(np.eye(n, dtype=self.probs.dtype)[idx._data])

    def log_prob(self, value):
        if self._validate_args:
            self._validate_sample(value)
        indices = value.argmax(-1)
        return self._categorical.log_prob(indices)

    def entropy(self):
        return self._categorical.entropy()

    def enumerate_support(self, expand=True):
        n = self._event_shape[0]
        values = tg.eye(n, dtype=self.probs.dtype).reshape(
            (n,) + (1,) * len(self._batch_shape) + (n,)
        )
        if expand:
            values = values.expand((n,) + self._batch_shape + (n,))
        return values


class Poisson(ExponentialFamily):
    """Counts with mean ``rate``."""

    # the exponential-family form (ExponentialFamily's entropy and Bregman KL), as torch
    @property
    def _natural_params(self):
        return (tg.log(self.rate),)

    def _log_normalizer(self, x):
        return tg.exp(x)

    arg_constraints = {"rate": constraints.nonnegative}
    support = constraints.nonnegative_integer

    def __init__(self, rate, validate_args=None):
        (self.rate,) = broadcast_all(rate)
        super().__init__(self.rate.shape, validate_args=validate_args)

    def expand(self, batch_shape, _instance=None):
        return Poisson(self.rate.expand(tuple(batch_shape)), validate_args=self._validate_args)

    @property
    def mean(self):
        return self.rate

    @property
    def mode(self):
        return self.rate.floor()

    @property
    def variance(self):
        return self.rate

    def sample(self, sample_shape=()):
        shape = self._extended_shape(sample_shape)
        lam = np.broadcast_to(self.rate._data, shape)
        return Tensor._wrap(_rng(None).poisson(lam).astype(self.rate.dtype))

    def log_prob(self, value):
        if self._validate_args:
            self._validate_sample(value)
        rate, value = broadcast_all(self.rate, value)
        return tg.xlogy(value, rate) - rate - tg.lgamma(value + 1)


class Geometric(_BinaryParams):
    """Number of failures before the first success, success probability ``probs``."""

    arg_constraints = {"probs": constraints.unit_interval, "logits": constraints.real}
    support = constraints.nonnegative_integer

    def __init__(self, probs=None, logits=None, validate_args=None):
        _, param = self._set_param("Geometric", probs, logits)
        super().__init__(param.shape, validate_args=validate_args)

    def expand(self, batch_shape, _instance=None):
        kind = "probs" if "probs" in self.__dict__ else "logits"
        param = getattr(self, kind).expand(tuple(batch_shape))
        return Geometric(**{kind: param}, validate_args=self._validate_args)

    @property
    def mode(self):
        return tg.zeros_like(self.probs)

    @property
    def mean(self):
        return 1.0 / self.probs - 1.0

    @property
    def variance(self):
        return (1.0 / self.probs - 1.0) / self.probs

    def sample(self, sample_shape=()):
        shape = self._extended_shape(sample_shape)
        p = np.broadcast_to(self.probs._data, shape)
        return Tensor._wrap((_rng(None).geometric(p) - 1).astype(self.probs.dtype))

    def log_prob(self, value):
        if self._validate_args:
            self._validate_sample(value)
        value, probs = broadcast_all(value, self.probs)
        probs = clamp_probs(probs)
        return value * tg.log1p(-probs) + tg.log(probs)

    def entropy(self):
        p = clamp_probs(self.probs)
        return (
            tg.nn.functional.binary_cross_entropy_with_logits(self.logits, p, reduction="none") / p
        )
