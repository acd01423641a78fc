"""Independent, TransformedDistribution and LogNormal."""

from __future__ import annotations

import tapegrad as tg

from . import constraints
from .continuous import Normal
from .distribution import Distribution
from .transforms import ComposeTransform, ExpTransform, Transform

__all__ = ["Independent", "TransformedDistribution", "LogNormal"]


def _sum_rightmost(value, dims: int):
    return value.sum(tuple(range(-dims, 0))) if dims > 0 else value


class Independent(Distribution):
    """Reinterpret the rightmost ``reinterpreted_batch_ndims`` batch dims of ``base_distribution``
    as event dims (log_prob sums over them)."""

    arg_constraints: dict = {}

    def __init__(self, base_distribution, reinterpreted_batch_ndims, validate_args=None):
        n = int(reinterpreted_batch_ndims)
        batch = tuple(base_distribution.batch_shape)
        if n > len(batch):
            raise ValueError(
                "Expected reinterpreted_batch_ndims <= len(base_distribution.batch_shape), "
                f"actual {n} vs {len(batch)}"
            )
        self.base_dist = base_distribution
        self.reinterpreted_batch_ndims = n
        cut = len(batch) - n
        super().__init__(
            batch[:cut],
            batch[cut:] + tuple(base_distribution.event_shape),
            validate_args=validate_args,
        )

    @property
    def has_rsample(self):
        return self.base_dist.has_rsample

    @property
    def support(self):
        return constraints.independent(self.base_dist.support, self.reinterpreted_batch_ndims)

    @property
    def mean(self):
        return self.base_dist.mean

    @property
    def mode(self):
        return self.base_dist.mode

    @property
    def variance(self):
        return self.base_dist.variance

    def sample(self, sample_shape=()):
        return self.base_dist.sample(sample_shape)

    def rsample(self, sample_shape=()):
        return self.base_dist.rsample(sample_shape)

    def log_prob(self, value):
        return _sum_rightmost(self.base_dist.log_prob(value), self.reinterpreted_batch_ndims)

    def entropy(self):
        return _sum_rightmost(self.base_dist.entropy(), self.reinterpreted_batch_ndims)

    def expand(self, batch_shape, _instance=None):
        shape = tuple(batch_shape)
        base = self.base_dist.expand(shape + self._event_shape[: self.reinterpreted_batch_ndims])
        return Independent(base, self.reinterpreted_batch_ndims, validate_args=self._validate_args)

    def __repr__(self):
        return f"Independent({self.base_dist!r}, {self.reinterpreted_batch_ndims})"


class TransformedDistribution(Distribution):
    """The distribution of ``t_n(...t_1(x))`` for ``x ~ base_distribution``."""

    arg_constraints: dict = {}

    def __init__(self, base_distribution, transforms, validate_args=None):
        if isinstance(transforms, Transform):
            transforms = [transforms]
        self.transforms = list(transforms)
        for t in self.transforms:
            if not isinstance(t, Transform):
                raise ValueError(
                    "transforms must be a Transform or a list of Transforms, got "
                    f"{type(t).__name__}"
                )
        # Note [Transformed shapes]: as torch, the transforms may change the event shape
        # (StickBreaking adds one, Reshape regroups); the base is expanded to what they
        # need and its batch dims that they consume become event dims (Independent).
        base_shape = tuple(base_distribution.batch_shape) + tuple(base_distribution.event_shape)
        base_event_dim = len(base_distribution.event_shape)
        transform = ComposeTransform(self.transforms)
        if len(base_shape) < transform.domain.event_dim:
            raise ValueError(
                f"base_distribution needs to have shape with size at least "
                f"{transform.domain.event_dim}, but got {tg.Size(base_shape)}."
            )
        forward_shape = tuple(transform.forward_shape(base_shape))
        expanded = tuple(transform.inverse_shape(forward_shape))
        if base_shape != expanded:
            base_distribution = base_distribution.expand(expanded[: len(expanded) - base_event_dim])
        reinterpreted = transform.domain.event_dim - base_event_dim
        if reinterpreted > 0:
            base_distribution = Independent(base_distribution, reinterpreted)
        self.base_dist = base_distribution
        change = transform.codomain.event_dim - transform.domain.event_dim
        event_dim = max(transform.codomain.event_dim, base_event_dim + change)
        cut = len(forward_shape) - event_dim
        super().__init__(forward_shape[:cut], forward_shape[cut:], validate_args=validate_args)

    @property
    def has_rsample(self):
        return self.base_dist.has_rsample

    def expand(self, batch_shape, _instance=None):
        new = self._get_checked_instance(TransformedDistribution, _instance)
        batch_shape = tuple(batch_shape)
        shape = batch_shape + self._event_shape
        for t in reversed(self.transforms):
            shape = tuple(t.inverse_shape(shape))
        base_batch = shape[: len(shape) - len(self.base_dist.event_shape)]
        new.base_dist = self.base_dist.expand(base_batch)
        new.transforms = self.transforms
        Distribution.__init__(new, batch_shape, self._event_shape, validate_args=False)
        new._validate_args = self._validate_args
        return new

    @property
    def support(self):
        if not self.transforms:
            return self.base_dist.support
        support = self.transforms[-1].codomain
        if len(self._event_shape) > support.event_dim:
            support = constraints.independent(support, len(self._event_shape) - support.event_dim)
        return support

    def sample(self, sample_shape=()):
        with tg.no_grad():
            x = self.base_dist.sample(sample_shape)
            for t in self.transforms:
                x = t(x)
            return x

    def rsample(self, sample_shape=()):
        x = self.base_dist.rsample(sample_shape)
        for t in self.transforms:
            x = t(x)
        return x

    def log_prob(self, value):
        if self._validate_args:
            self._validate_sample(value)
        event_dim = len(self._event_shape)
        log_prob = 0.0
        y = value
        for t in reversed(self.transforms):
            x = t.inv(y)
            event_dim += t.domain.event_dim - t.codomain.event_dim
            log_prob = log_prob - _sum_rightmost(
                t.log_abs_det_jacobian(x, y), event_dim - t.domain.event_dim
            )
            y = x
        base = self.base_dist.log_prob(y)
        return log_prob + _sum_rightmost(base, event_dim - len(self.base_dist.event_shape))

    def _monotonize_cdf(self, value):
        """A decreasing transform (negative ``sign``) flips the cdf: u -> 1 - u."""
        sign = 1
        for t in self.transforms:
            sign = sign * t.sign
        if isinstance(sign, int) and sign == 1:
            return value
        return sign * (value - 0.5) + 0.5

    def cdf(self, value):
        for t in reversed(self.transforms):
            value = t.inv(value)
        if self._validate_args:
            self.base_dist._validate_sample(value)
        return self._monotonize_cdf(self.base_dist.cdf(value))

    def icdf(self, value):
        value = self.base_dist.icdf(self._monotonize_cdf(value))
        for t in self.transforms:
            value = t(value)
        return value


class LogNormal(TransformedDistribution):
    """exp(X) for X ~ Normal(loc, scale)."""

    arg_constraints = {"loc": constraints.real, "scale": constraints.positive}
    support = constraints.positive
    has_rsample = True

    def __init__(self, loc, scale, validate_args=None):
        base = Normal(loc, scale, validate_args=validate_args)
        super().__init__(base, ExpTransform(), validate_args=validate_args)

    def expand(self, batch_shape, _instance=None):
        shape = tuple(batch_shape)
        return LogNormal(self.loc.expand(shape), self.scale.expand(shape), self._validate_args)

    @property
    def loc(self):
        return self.base_dist.loc

    @property
    def scale(self):
        return self.base_dist.scale

    @property
    def mean(self):
        return tg.exp(self.loc + self.scale**2 / 2)

    @property
    def mode(self):
        return tg.exp(self.loc - self.scale**2)

    @property
    def variance(self):
        s2 = self.scale**2
        return tg.expm1(s2) * tg.exp(2 * self.loc + s2)

    def entropy(self):
        return self.base_dist.entropy() + self.loc
