"""VonMises: the circular normal on [-pi, pi) with ``loc`` and ``concentration``.

Note [VonMises as torch]
log_prob and variance use torch's polynomial approximation of log I0 and log I1
(Abramowitz and Stegun 9.8.1-9.8.4, relative error about 1e-7), not the exact Bessel
functions, so values agree with torch's to float64 rounding; gradients follow by autograd.
Sampling is Best and Fisher's (1979) rejection sampler, in float64 NumPy with tapegrad's
generator; there is no rsample (torch has none).
"""

from __future__ import annotations

import math

import numpy as np

import tapegrad as tg

from ..creation import _rng
from ..tensor import Tensor
from . import constraints
from .distribution import Distribution
from .utils import broadcast_all

__all__ = ["VonMises"]

_I0_COEF_SMALL = [1.0, 3.5156229, 3.0899424, 1.2067492, 0.2659732, 0.0360768, 0.0045813]
_I0_COEF_LARGE = [
    0.39894228, 0.01328592, 0.00225319, -0.00157565, 0.00916281,
    -0.02057706, 0.02635537, -0.01647633, 0.00392377,
]  # fmt: skip
_I1_COEF_SMALL = [0.5, 0.87890594, 0.51498869, 0.15084934, 0.02658733, 0.00301532, 0.00032411]
_I1_COEF_LARGE = [
    0.39894228, -0.03988024, -0.00362018, 0.00163801, -0.01031555,
    0.02282967, -0.02895312, 0.01787654, -0.00420059,
]  # fmt: skip
_COEF_SMALL = [_I0_COEF_SMALL, _I1_COEF_SMALL]
_COEF_LARGE = [_I0_COEF_LARGE, _I1_COEF_LARGE]


def _eval_poly(y, coef):
    coef = list(coef)
    result = coef.pop()
    while coef:
        result = coef.pop() + y * result
    return result


def _log_modified_bessel_fn(x, order=0):
    """log I_order(x) for x > 0, order 0 or 1 (Note [VonMises as torch])."""
    if order not in (0, 1):
        raise AssertionError(f"order must be 0 or 1, got {order}")
    small_x = tg.where(x < 3.75, x, tg.full_like(x, 1.0))  # keeps the untaken branch finite
    large_x = tg.where(x < 3.75, tg.full_like(x, 3.75), x)
    y = (small_x / 3.75) ** 2
    small = _eval_poly(y, _COEF_SMALL[order])
    if order == 1:
        small = small_x.abs() * small
    small = tg.log(small)
    large = large_x - 0.5 * tg.log(large_x) + tg.log(_eval_poly(3.75 / large_x, _COEF_LARGE[order]))
    return tg.where(x < 3.75, small, large)


def _rejection_sample(loc, kappa, proposal_r, shape, rng):
    x = np.empty(shape)
    done = np.zeros(shape, dtype=bool)
    while not done.all():
        u1, u2, u3 = rng.random((3,) + shape)
        z = np.cos(math.pi * u1)
        f = (1 + proposal_r * z) / (proposal_r + z)
        c = kappa * (proposal_r - f)
        with np.errstate(divide="ignore", invalid="ignore"):
            accept = (c * (2 - c) - u2 > 0) | (np.log(c / u2) + 1 - c >= 0)
        accept &= ~done
        x = np.where(accept, np.sign(u3 - 0.5) * np.arccos(np.clip(f, -1, 1)), x)
        done |= accept
    return (x + math.pi + loc) % (2 * math.pi) - math.pi


class VonMises(Distribution):
    """Von Mises (circular normal) with ``loc`` (an angle) and ``concentration`` > 0."""

    arg_constraints = {"loc": constraints.real, "concentration": constraints.positive}
    support = constraints.real
    has_rsample = False

    def __init__(self, loc, concentration, validate_args=None):
        self.loc, self.concentration = broadcast_all(loc, concentration)
        super().__init__(self.loc.shape, (), validate_args)

    def expand(self, batch_shape, _instance=None):
        shape = tuple(batch_shape)
        return VonMises(
            self.loc.expand(shape), self.concentration.expand(shape), self._validate_args
        )

    def log_prob(self, value):
        if self._validate_args:
            self._validate_sample(value)
        log_prob = self.concentration * tg.cos(value - self.loc)
        return (
            log_prob - math.log(2 * math.pi) - _log_modified_bessel_fn(self.concentration, order=0)
        )

    def sample(self, sample_shape=()):
        shape = self._extended_shape(sample_shape)
        kappa = np.broadcast_to(self.concentration._data.astype(np.float64), shape)
        loc = np.broadcast_to(self.loc._data.astype(np.float64), shape)
        tau = 1 + np.sqrt(1 + 4 * kappa**2)
        rho = (tau - np.sqrt(2 * tau)) / (2 * kappa)
        with np.errstate(divide="ignore", invalid="ignore"):
            r = np.where(kappa < 1e-5, 1 / kappa + kappa, (1 + rho**2) / (2 * rho))
        x = _rejection_sample(loc, kappa, r, shape, _rng(None))
        return Tensor._wrap(x.astype(self.loc.dtype))

    @property
    def mean(self):
        return self.loc

    @property
    def mode(self):
        return self.loc

    @property
    def variance(self):
        k = self.concentration
        log_ratio = _log_modified_bessel_fn(k, order=1) - _log_modified_bessel_fn(k, order=0)
        return 1 - tg.exp(log_ratio)
