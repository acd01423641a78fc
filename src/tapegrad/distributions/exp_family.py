"""ExponentialFamily: p(x) = h(x) exp(<t(x), theta> - F(theta)). A subclass gives its
natural parameters ``_natural_params`` (theta), ``_log_normalizer`` (F) and
``_mean_carrier_measure`` (E[log h(x)]); the entropy is then the Bregman identity
H = F(theta) - <theta, grad F(theta)> - E[log h], with grad F taken by autograd (as torch)."""

from __future__ import annotations

import tapegrad as tg

from .distribution import Distribution

__all__ = ["ExponentialFamily"]


class ExponentialFamily(Distribution):
    """Base class of exponential-family distributions (entropy by the Bregman identity)."""

    @property
    def _natural_params(self):
        raise NotImplementedError

    def _log_normalizer(self, *natural_params):
        raise NotImplementedError

    @property
    def _mean_carrier_measure(self):
        raise NotImplementedError

    def entropy(self):
        result = -self._mean_carrier_measure
        nparams = [p.detach().requires_grad_() for p in self._natural_params]
        with tg.enable_grad():
            lg_normal = self._log_normalizer(*nparams)
            grads = tg.autograd.grad(lg_normal.sum(), nparams, create_graph=True)
        result = result + lg_normal
        for p, g in zip(nparams, grads):
            result = result - (p * g).reshape(self._batch_shape + (-1,)).sum(-1)
        return result
