"""``kl_divergence(p, q)`` and ``register_kl`` for the usual pairs (closed forms)."""

from __future__ import annotations

import math

import tapegrad as tg

from .continuous import Exponential, Laplace, Normal, Uniform
from .discrete import Bernoulli, Categorical, OneHotCategorical, Poisson
from .gamma import Beta, Dirichlet, Gamma
from .multivariate_normal import MultivariateNormal
from .transformed import Independent, LogNormal

__all__ = ["kl_divergence", "register_kl"]

_KL = {}


def register_kl(type_p, type_q):
    """Decorator: register ``fn(p, q)`` as KL(p || q) for these two distribution types."""

    def deco(fn):
        _KL[(type_p, type_q)] = fn
        return fn

    return deco


def kl_divergence(p, q):
    """KL(p || q), batched over the batch shape."""
    best = None
    for (tp, tq), fn in _KL.items():
        if isinstance(p, tp) and isinstance(q, tq):
            rank = type(p).__mro__.index(tp) + type(q).__mro__.index(tq)
            if best is None or rank < best[0]:
                best = (rank, fn)
    if best is None:
        raise NotImplementedError(
            f"No KL(p || q) is implemented for p type {type(p).__name__} and q type "
            f"{type(q).__name__}"
        )
    return best[1](p, q)


@register_kl(Normal, Normal)
def _kl_normal_normal(p, q):
    var_ratio = (p.scale / q.scale) ** 2
    t1 = ((p.loc - q.loc) / q.scale) ** 2
    return 0.5 * (var_ratio + t1 - 1 - tg.log(var_ratio))


@register_kl(LogNormal, LogNormal)
def _kl_lognormal_lognormal(p, q):
    return _kl_normal_normal(p.base_dist, q.base_dist)


@register_kl(Bernoulli, Bernoulli)
def _kl_bernoulli_bernoulli(p, q):
    sp = tg.nn.functional.softplus
    t1 = p.probs * (sp(-q.logits) - sp(-p.logits))
    t1 = tg.where(q.probs == 0, tg.full_like(t1, float("inf")), t1)
    t1 = tg.where(p.probs == 0, tg.zeros_like(t1), t1)
    t2 = (1 - p.probs) * (sp(q.logits) - sp(p.logits))
    t2 = tg.where(q.probs == 1, tg.full_like(t2, float("inf")), t2)
    t2 = tg.where(p.probs == 1, tg.zeros_like(t2), t2)
    return t1 + t2


@register_kl(Categorical, Categorical)
def _kl_categorical_categorical(p, q):
    t = p.probs * (p.logits - q.logits)
    t = tg.where(q.probs == 0, tg.full_like(t, float("inf")), t)
    t = tg.where(p.probs == 0, tg.zeros_like(t), t)
    return t.sum(-1)


@register_kl(OneHotCategorical, OneHotCategorical)
def _kl_onehot_onehot(p, q):
    return _kl_categorical_categorical(p._categorical, q._categorical)


@register_kl(Exponential, Exponential)
def _kl_exponential_exponential(p, q):
    rate_ratio = q.rate / p.rate
    return rate_ratio - 1 - tg.log(rate_ratio)


@register_kl(Gamma, Gamma)
def _kl_gamma_gamma(p, q):
    t1 = q.concentration * tg.log(p.rate / q.rate)
    t2 = tg.lgamma(q.concentration) - tg.lgamma(p.concentration)
    t3 = (p.concentration - q.concentration) * tg.digamma(p.concentration)
    t4 = (q.rate - p.rate) * (p.concentration / p.rate)
    return t1 + t2 + t3 + t4


@register_kl(Beta, Beta)
def _kl_beta_beta(p, q):
    sum_p = p.concentration1 + p.concentration0
    sum_q = q.concentration1 + q.concentration0
    t1 = tg.lgamma(q.concentration1) + tg.lgamma(q.concentration0) + tg.lgamma(sum_p)
    t2 = tg.lgamma(p.concentration1) + tg.lgamma(p.concentration0) + tg.lgamma(sum_q)
    t3 = (p.concentration1 - q.concentration1) * tg.digamma(p.concentration1)
    t4 = (p.concentration0 - q.concentration0) * tg.digamma(p.concentration0)
    t5 = (sum_q - sum_p) * tg.digamma(sum_p)
    return t1 - t2 + t3 + t4 + t5


@register_kl(Dirichlet, Dirichlet)
def _kl_dirichlet_dirichlet(p, q):
    sum_p = p.concentration.sum(-1)
    sum_q = q.concentration.sum(-1)
    t1 = tg.lgamma(sum_p) - tg.lgamma(sum_q)
    t2 = (tg.lgamma(p.concentration) - tg.lgamma(q.concentration)).sum(-1)
    t3 = p.concentration - q.concentration
    t4 = tg.digamma(p.concentration) - tg.digamma(sum_p).unsqueeze(-1)
    return t1 - t2 + (t3 * t4).sum(-1)


@register_kl(Laplace, Laplace)
def _kl_laplace_laplace(p, q):
    scale_ratio = p.scale / q.scale
    loc_abs_diff = (p.loc - q.loc).abs()
    t1 = -tg.log(scale_ratio)
    t2 = loc_abs_diff / q.scale
    t3 = scale_ratio * tg.exp(-loc_abs_diff / p.scale)
    return t1 + t2 + t3 - 1


@register_kl(Poisson, Poisson)
def _kl_poisson_poisson(p, q):
    return p.rate * (tg.log(p.rate) - tg.log(q.rate)) - (p.rate - q.rate)


@register_kl(Uniform, Uniform)
def _kl_uniform_uniform(p, q):
    result = tg.log((q.high - q.low) / (p.high - p.low))
    outside = (q.low > p.low) | (q.high < p.high)
    return tg.where(outside, tg.full_like(result, float("inf")), result)


@register_kl(Normal, Laplace)
def _kl_normal_laplace(p, q):
    loc_diff = p.loc - q.loc
    scale_ratio = p.scale / q.scale
    loc_diff_scale_ratio = loc_diff / p.scale
    t1 = tg.log(scale_ratio)
    t2 = math.sqrt(2 / math.pi) * p.scale * tg.exp(-0.5 * loc_diff_scale_ratio**2)
    t3 = loc_diff * tg.erf(math.sqrt(0.5) * loc_diff_scale_ratio)
    return -t1 + (t2 + t3) / q.scale - (0.5 * (1 + math.log(0.5 * math.pi)))


@register_kl(MultivariateNormal, MultivariateNormal)
def _kl_mvn_mvn(p, q):
    n = p.event_shape[0]
    Lp, Lq = p._unbroadcasted_scale_tril, q._unbroadcasted_scale_tril
    half_term1 = tg.log(tg.diagonal(Lq, dim1=-2, dim2=-1)).sum(-1) - tg.log(
        tg.diagonal(Lp, dim1=-2, dim2=-1)
    ).sum(-1)
    shape = tuple(p.batch_shape) if p.batch_shape else ()
    A = tg.linalg.solve_triangular(
        Lq.expand(shape + (n, n)), Lp.expand(shape + (n, n)), upper=False
    )
    term2 = (A * A).sum((-2, -1))
    diff = (q.loc - p.loc).unsqueeze(-1)
    y = tg.linalg.solve_triangular(
        Lq.expand(shape + (n, n)), diff.expand(shape + (n, 1)), upper=False
    )
    term3 = (y * y).sum((-2, -1))
    return half_term1 + 0.5 * (term2 + term3 - n)


@register_kl(Independent, Independent)
def _kl_independent_independent(p, q):
    if p.reinterpreted_batch_ndims != q.reinterpreted_batch_ndims:
        raise NotImplementedError("KL between Independents with different event dims")
    result = kl_divergence(p.base_dist, q.base_dist)
    n = p.reinterpreted_batch_ndims
    return result.sum(tuple(range(-n, 0))) if n else result
