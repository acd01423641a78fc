"""Bijective transforms for TransformedDistribution (``torch.distributions.transforms``).

Each transform gives ``y = t(x)``, ``x = t.inv(y)`` and ``log_abs_det_jacobian(x, y)``
(elementwise for event_dim 0).
"""

from __future__ import annotations

import math

import tapegrad as tg

from . import constraints

_EXTRA = [
    "AbsTransform",
    "CatTransform",
    "CorrCholeskyTransform",
    "CumulativeDistributionTransform",
    "IndependentTransform",
    "LowerCholeskyTransform",
    "PositiveDefiniteTransform",
    "ReshapeTransform",
    "SoftplusTransform",
    "StackTransform",
    "StickBreakingTransform",
]

__all__ = [
    "Transform",
    "ExpTransform",
    "AffineTransform",
    "SigmoidTransform",
    "TanhTransform",
    "PowerTransform",
    "SoftmaxTransform",
    "ComposeTransform",
    "identity_transform",
    *_EXTRA,
]


class Transform:
    domain = constraints.real
    codomain = constraints.real
    bijective = True
    sign = 1

    def __init__(self, cache_size=0):
        self._inv = None

    @property
    def event_dim(self) -> int:
        return max(self.domain.event_dim, self.codomain.event_dim)

    @property
    def inv(self):
        inv = self._inv
        if inv is None:
            inv = _InverseTransform(self)
            self._inv = inv
        return inv

    def __call__(self, x):
        return self._call(x)

    def _call(self, x):
        raise NotImplementedError

    def _inverse(self, y):
        raise NotImplementedError

    def log_abs_det_jacobian(self, x, y):
        raise NotImplementedError

    def forward_shape(self, shape):
        return shape

    def inverse_shape(self, shape):
        return shape

    def __repr__(self):
        return type(self).__name__ + "()"


class _InverseTransform(Transform):
    def __init__(self, transform):
        super().__init__()
        self._inv = transform

    @property
    def domain(self):
        return self._inv.codomain

    @property
    def codomain(self):
        return self._inv.domain

    @property
    def sign(self):
        return self._inv.sign

    @property
    def inv(self):
        return self._inv

    def __call__(self, x):
        return self._inv._inverse(x)

    def _inverse(self, y):
        return self._inv._call(y)

    def log_abs_det_jacobian(self, x, y):
        return -self._inv.log_abs_det_jacobian(y, x)

    def forward_shape(self, shape):
        return self._inv.inverse_shape(shape)

    def inverse_shape(self, shape):
        return self._inv.forward_shape(shape)


class _Identity(Transform):
    def _call(self, x):
        return x

    def _inverse(self, y):
        return y

    def log_abs_det_jacobian(self, x, y):
        return tg.zeros_like(x)


identity_transform = _Identity()


class ExpTransform(Transform):
    codomain = constraints.positive

    def _call(self, x):
        return tg.exp(x)

    def _inverse(self, y):
        return tg.log(y)

    def log_abs_det_jacobian(self, x, y):
        return x


class PowerTransform(Transform):
    domain = constraints.positive
    codomain = constraints.positive

    def __init__(self, exponent, cache_size=0):
        super().__init__()
        self.exponent = exponent

    @property
    def sign(self):
        e = self.exponent
        return (1 if e > 0 else -1 if e < 0 else 0) if isinstance(e, (int, float)) else e.sign()

    def _call(self, x):
        return x**self.exponent

    def _inverse(self, y):
        return y ** (1 / self.exponent)

    def log_abs_det_jacobian(self, x, y):
        return tg.log((self.exponent * y / x).abs())


class SigmoidTransform(Transform):
    codomain = constraints.unit_interval

    def _call(self, x):
        return tg.sigmoid(x)

    def _inverse(self, y):
        eps = 1e-12 if y.dtype == tg.float64 else 1e-6
        y = y.clamp(min=eps, max=1 - eps)
        return tg.log(y) - tg.log1p(-y)

    def log_abs_det_jacobian(self, x, y):
        return -tg.nn.functional.softplus(-x) - tg.nn.functional.softplus(x)


class TanhTransform(Transform):
    codomain = constraints.interval(-1.0, 1.0)

    def _call(self, x):
        return tg.tanh(x)

    def _inverse(self, y):
        return tg.atanh(y)

    def log_abs_det_jacobian(self, x, y):
        return 2.0 * (math.log(2.0) - x - tg.nn.functional.softplus(-2.0 * x))


class AffineTransform(Transform):
    """y = loc + scale * x; ``event_dim`` dims form one event."""

    def __init__(self, loc, scale, event_dim=0, cache_size=0):
        super().__init__()
        self.loc = loc
        self.scale = scale
        self._event_dim = event_dim

    @property
    def event_dim(self):
        return self._event_dim

    @property
    def domain(self):
        return (
            constraints.independent(constraints.real, self._event_dim)
            if self._event_dim
            else constraints.real
        )

    @property
    def codomain(self):
        return self.domain

    @property
    def sign(self):
        if isinstance(self.scale, (int, float)):
            return 1 if self.scale > 0 else -1 if self.scale < 0 else 0
        return self.scale.sign()

    def _call(self, x):
        return self.loc + self.scale * x

    def _inverse(self, y):
        return (y - self.loc) / self.scale

    def log_abs_det_jacobian(self, x, y):
        scale = self.scale
        if isinstance(scale, (int, float)):
            result = tg.full_like(x, math.log(abs(scale)))
        else:
            result = tg.log(scale.abs()) + tg.zeros_like(x)
        if self._event_dim:
            result = result.sum(tuple(range(-self._event_dim, 0)))
        return result


class SoftmaxTransform(Transform):
    """Unconstrained vectors to the simplex (not bijective: no log-det-Jacobian, as torch)."""

    codomain = constraints.simplex
    bijective = False

    @property
    def domain(self):
        return constraints.real_vector

    def _call(self, x):
        return tg.softmax(x, -1)

    def _inverse(self, y):
        return tg.log(y)


class ComposeTransform(Transform):
    """Apply ``parts`` in order."""

    def __init__(self, parts, cache_size=0):
        super().__init__()
        self.parts = list(parts)

    @property
    def domain(self):
        if not self.parts:
            return constraints.real
        domain = self.parts[0].domain
        event_dim = self.parts[-1].codomain.event_dim  # the event dim the parts need, as torch
        for part in reversed(self.parts):
            event_dim += part.domain.event_dim - part.codomain.event_dim
            event_dim = max(event_dim, part.domain.event_dim)
        if event_dim > domain.event_dim:
            domain = constraints.independent(domain, event_dim - domain.event_dim)
        return domain

    @property
    def codomain(self):
        if not self.parts:
            return constraints.real
        codomain = self.parts[-1].codomain
        event_dim = self.parts[0].domain.event_dim
        for part in self.parts:
            event_dim += part.codomain.event_dim - part.domain.event_dim
            event_dim = max(event_dim, part.codomain.event_dim)
        if event_dim > codomain.event_dim:
            codomain = constraints.independent(codomain, event_dim - codomain.event_dim)
        return codomain

    @property
    def event_dim(self):
        return max((p.event_dim for p in self.parts), default=0)

    def _call(self, x):
        for part in self.parts:
            x = part(x)
        return x

    def _inverse(self, y):
        for part in reversed(self.parts):
            y = part.inv(y)
        return y

    def forward_shape(self, shape):
        for part in self.parts:
            shape = part.forward_shape(shape)
        return shape

    def inverse_shape(self, shape):
        for part in reversed(self.parts):
            shape = part.inverse_shape(shape)
        return shape

    def log_abs_det_jacobian(self, x, y):
        if not self.parts:
            return tg.zeros_like(x)
        total = 0
        event_dim = self.event_dim
        for part in self.parts:
            y_part = part(x)
            term = part.log_abs_det_jacobian(x, y_part)
            extra = event_dim - part.event_dim
            if extra:
                term = term.sum(tuple(range(-extra, 0)))
            total = total + term
            x = y_part
        return total


from .transforms_extra import *  # noqa: E402, F403 - the structured transforms, re-exported
