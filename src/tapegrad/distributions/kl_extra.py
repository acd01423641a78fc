"""The KL pairs torch registers beyond the same-family closed forms of ``kl``: the new
families (Binomial, Geometric, HalfNormal, Gumbel, Pareto, Cauchy, ContinuousBernoulli,
LowRankMultivariateNormal, TransformedDistribution, ExponentialFamily) and the cross-family
pairs (Beta, Exponential, Gamma, Gumbel, Laplace, Normal, Pareto, Uniform, ...), ported term
by term from ``torch.distributions.kl``. A pair whose KL is infinite because q's support does
not cover p's is one row of ``_INFINITE``."""

from __future__ import annotations

import math

import numpy as np

import tapegrad as tg

from .continuous import Cauchy, Exponential, Laplace, Normal, Uniform
from .continuous_bernoulli import ContinuousBernoulli
from .discrete import Bernoulli, Binomial, Geometric, Poisson
from .exp_family import ExponentialFamily
from .gamma import Beta, Gamma
from .kl import _kl_normal_normal, kl_divergence, register_kl
from .lowrank_multivariate_normal import (
    LowRankMultivariateNormal,
    _lowrank_logdet,
    _lowrank_mahalanobis,
)
from .multivariate_normal import MultivariateNormal, _batch_mahalanobis
from .transformed import TransformedDistribution
from .transformed_families import Gumbel, HalfNormal, Pareto
from .transforms import Transform, _InverseTransform

__all__: list = []

_EULER = 0.57721566490153286060
_INF = math.inf


def _inf_where(cond, value):
    return tg.where(cond, tg.full_like(value, _INF), value)


def _x_log_x(t):
    return tg.xlogy(t, t)


def _trace_XXT(m):
    return (m * m).sum((-2, -1))


def _infinite_like(t):
    return tg.full_like(t, _INF)


# (p type, q type, the parameter of p whose shape the infinite result takes)
_INFINITE = [
    (Beta, Pareto, "concentration1"),
    (ContinuousBernoulli, Pareto, "probs"),
    *((Exponential, q, "rate") for q in (Beta, ContinuousBernoulli, Pareto, Uniform)),
    *((Gamma, q, "concentration") for q in (Beta, ContinuousBernoulli, Pareto, Uniform)),
    *((Gumbel, q, "loc") for q in (Beta, ContinuousBernoulli, Exponential, Gamma, Pareto, Uniform)),
    *(
        (Laplace, q, "loc")
        for q in (Beta, ContinuousBernoulli, Exponential, Gamma, Pareto, Uniform)
    ),
    *((Normal, q, "loc") for q in (Beta, ContinuousBernoulli, Exponential, Gamma, Pareto, Uniform)),
    *((Pareto, q, "scale") for q in (Beta, ContinuousBernoulli, Uniform)),
    (Poisson, Bernoulli, "rate"),
    (Poisson, Binomial, "rate"),
]
for _p, _q, _param in _INFINITE:
    register_kl(_p, _q)(lambda p, q, _param=_param: _infinite_like(getattr(p, _param)))


@register_kl(Binomial, Binomial)
def _kl_binomial_binomial(p, q):
    if bool((p.total_count < q.total_count)._data.any()):
        raise NotImplementedError(
            "KL between Binomials where q.total_count > p.total_count is not implemented"
        )
    kl = p.total_count * (p.probs * (p.logits - q.logits) + tg.log1p(-p.probs) - tg.log1p(-q.probs))
    return _inf_where(p.total_count > q.total_count, kl)


@register_kl(Geometric, Geometric)
def _kl_geometric_geometric(p, q):
    return -p.entropy() - tg.log1p(-q.probs) / p.probs - q.logits


@register_kl(HalfNormal, HalfNormal)
def _kl_halfnormal_halfnormal(p, q):
    return _kl_normal_normal(p.base_dist, q.base_dist)


@register_kl(Cauchy, Cauchy)
def _kl_cauchy_cauchy(p, q):
    t1 = tg.log((p.scale + q.scale) ** 2 + (p.loc - q.loc) ** 2)
    return t1 - tg.log(4 * p.scale * q.scale)


@register_kl(Gumbel, Gumbel)
def _kl_gumbel_gumbel(p, q):
    ct1, ct2, ct3 = p.scale / q.scale, q.loc / q.scale, p.loc / q.scale
    t1 = -tg.log(ct1) - ct2 + ct3
    t3 = tg.exp(ct2 + tg.lgamma(1 + ct1) - ct3)
    return t1 + ct1 * _EULER + t3 - (1 + _EULER)


@register_kl(Pareto, Pareto)
def _kl_pareto_pareto(p, q):
    scale_ratio, alpha_ratio = p.scale / q.scale, q.alpha / p.alpha
    result = q.alpha * tg.log(scale_ratio) - tg.log(alpha_ratio) + alpha_ratio - 1
    return _inf_where(p.support.lower_bound < q.support.lower_bound, result)


@register_kl(ContinuousBernoulli, ContinuousBernoulli)
def _kl_cb_cb(p, q):
    t1 = p.mean * (p.logits - q.logits)
    t2 = p._cont_bern_log_norm() + tg.log1p(-p.probs)
    t3 = -q._cont_bern_log_norm() - tg.log1p(-q.probs)
    return t1 + t2 + t3


@register_kl(ExponentialFamily, ExponentialFamily)
def _kl_expfamily_expfamily(p, q):
    if type(p) is not type(q):
        raise NotImplementedError(
            "The cross KL-divergence between different exponential families cannot be "
            "computed using Bregman divergences"
        )
    p_nparams = [t.detach().requires_grad_() for t in p._natural_params]
    q_nparams = q._natural_params
    with tg.enable_grad():
        lg_normal = p._log_normalizer(*p_nparams)
        grads = tg.autograd.grad(lg_normal.sum(), p_nparams, create_graph=True)
    result = q._log_normalizer(*q_nparams) - lg_normal
    n = len(q.event_shape)
    for pnp, qnp, g in zip(p_nparams, q_nparams, grads):
        term = (qnp - pnp) * g
        if n:  # as torch's _sum_rightmost: a scalar parameter's term is summed whole
            term = term.reshape(tuple(term.shape[:-n]) + (-1,)).sum(-1)
        result = result - term
    return result


def _same_value(a, b):
    if a is b:
        return True
    if isinstance(a, tg.Tensor) or isinstance(b, tg.Tensor):
        a, b = np.asarray(getattr(a, "_data", a)), np.asarray(getattr(b, "_data", b))
        return a.shape == b.shape and bool(np.all(a == b))
    if isinstance(a, Transform) and isinstance(b, Transform):
        return _same_transform(a, b)
    return a == b


def _same_transform(a, b):
    """Transforms equal as torch's ``__eq__``: same class and equal parameters."""
    if type(a) is not type(b):
        return False
    if isinstance(a, _InverseTransform):
        return _same_transform(a._inv, b._inv)
    va = {k: v for k, v in vars(a).items() if k != "_inv"}
    vb = {k: v for k, v in vars(b).items() if k != "_inv"}
    return va.keys() == vb.keys() and all(_same_value(va[k], vb[k]) for k in va)


@register_kl(TransformedDistribution, TransformedDistribution)
def _kl_transformed_transformed(p, q):
    same = len(p.transforms) == len(q.transforms) and all(
        _same_transform(a, b) for a, b in zip(p.transforms, q.transforms)
    )
    if not same or tuple(p.event_shape) != tuple(q.event_shape):
        raise NotImplementedError
    return kl_divergence(p.base_dist, q.base_dist)


@register_kl(Bernoulli, Poisson)
def _kl_bernoulli_poisson(p, q):
    return -p.entropy() - (p.probs * tg.log(q.rate) - q.rate)


@register_kl(Beta, ContinuousBernoulli)
def _kl_beta_cb(p, q):
    return -p.entropy() - p.mean * q.logits - tg.log1p(-q.probs) - q._cont_bern_log_norm()


@register_kl(Beta, Exponential)
def _kl_beta_exponential(p, q):
    c1, c0 = p.concentration1, p.concentration0
    return -p.entropy() - tg.log(q.rate) + q.rate * (c1 / (c1 + c0))


@register_kl(Beta, Gamma)
def _kl_beta_gamma(p, q):
    c1, c0 = p.concentration1, p.concentration0
    t2 = tg.lgamma(q.concentration) - q.concentration * tg.log(q.rate)
    t3 = (q.concentration - 1) * (tg.digamma(c1) - tg.digamma(c1 + c0))
    return -p.entropy() + t2 - t3 + q.rate * c1 / (c1 + c0)


@register_kl(Beta, Normal)
def _kl_beta_normal(p, q):
    c1, c0 = p.concentration1, p.concentration0
    E = c1 / (c1 + c0)
    var_normal = q.scale**2
    t2 = 0.5 * tg.log(var_normal * 2 * math.pi)
    t3 = (E * (1 - E) / (c1 + c0 + 1) + E**2) * 0.5
    return -p.entropy() + t2 + (t3 - q.loc * E + q.loc**2 * 0.5) / var_normal


@register_kl(Beta, Uniform)
def _kl_beta_uniform(p, q):
    result = -p.entropy() + tg.log(q.high - q.low)
    lo, hi = p.support.lower_bound, p.support.upper_bound
    return _inf_where((q.low > lo) | (q.high < hi), result)


@register_kl(ContinuousBernoulli, Exponential)
def _kl_cb_exponential(p, q):
    return -p.entropy() - tg.log(q.rate) + q.rate * p.mean


@register_kl(ContinuousBernoulli, Normal)
def _kl_cb_normal(p, q):
    t2 = 0.5 * (math.log(2.0 * math.pi) + (q.loc / q.scale) ** 2) + tg.log(q.scale)
    t3 = (p.variance + p.mean**2 - 2.0 * q.loc * p.mean) / (2.0 * q.scale**2)
    return -p.entropy() + t2 + t3


@register_kl(ContinuousBernoulli, Uniform)
def _kl_cb_uniform(p, q):
    result = -p.entropy() + tg.log(q.high - q.low)
    lo, hi = p.support.lower_bound, p.support.upper_bound
    return _inf_where((q.low >= lo) | (q.high <= hi), result)


@register_kl(Exponential, Gamma)
def _kl_exponential_gamma(p, q):
    ratio = q.rate / p.rate
    t1 = -q.concentration * tg.log(ratio)
    return t1 + ratio + tg.lgamma(q.concentration) + q.concentration * _EULER - (1 + _EULER)


@register_kl(Exponential, Gumbel)
def _kl_exponential_gumbel(p, q):
    srp = p.rate * q.scale
    lsr = q.loc / q.scale
    t2 = tg.exp(lsr) * srp / (srp + 1)
    return tg.log(srp) - 1 - lsr + t2 + srp.reciprocal()


@register_kl(Exponential, Normal)
def _kl_exponential_normal(p, q):
    var_normal = q.scale**2
    rate_sqr = p.rate**2
    t1 = 0.5 * tg.log(rate_sqr * var_normal * 2 * math.pi)
    return t1 - 1 + (rate_sqr.reciprocal() - q.loc / p.rate + q.loc**2 * 0.5) / var_normal


@register_kl(Gamma, Exponential)
def _kl_gamma_exponential(p, q):
    return -p.entropy() - tg.log(q.rate) + q.rate * p.concentration / p.rate


@register_kl(Gamma, Gumbel)
def _kl_gamma_gumbel(p, q):
    a = p.concentration
    bsp = p.rate * q.scale
    lsr = q.loc / q.scale
    t1 = (a - 1) * tg.digamma(a) - tg.lgamma(a) - a
    t2 = tg.log(bsp) + a / bsp
    t3 = tg.exp(lsr) * (1 + bsp.reciprocal()) ** (-a) - lsr
    return t1 + t2 + t3


@register_kl(Gamma, Normal)
def _kl_gamma_normal(p, q):
    a = p.concentration
    var_normal = q.scale**2
    beta_sqr = p.rate**2
    t1 = 0.5 * tg.log(beta_sqr * var_normal * 2 * math.pi) - a - tg.lgamma(a)
    t2 = 0.5 * (a**2 + a) / beta_sqr
    t3 = q.loc * a / p.rate
    return t1 + (a - 1) * tg.digamma(a) + (t2 - t3 + 0.5 * q.loc**2) / var_normal


@register_kl(Gumbel, Normal)
def _kl_gumbel_normal(p, q):
    ratio = p.scale / q.scale
    t1 = tg.log(ratio / math.sqrt(2 * math.pi))
    t2 = (math.pi * ratio * 0.5) ** 2 / 3
    t3 = ((p.loc + p.scale * _EULER - q.loc) / q.scale) ** 2 * 0.5
    return -t1 + t2 + t3 - (_EULER + 1)


@register_kl(Laplace, Normal)
def _kl_laplace_normal(p, q):
    var_normal = q.scale**2
    ratio = p.scale**2 / var_normal
    t1 = 0.5 * tg.log(2 * ratio / math.pi)
    t = 0.5 * p.loc**2 - p.loc * q.loc + 0.5 * q.loc**2
    return -t1 + ratio + t / var_normal - 1


@register_kl(Normal, Gumbel)
def _kl_normal_gumbel(p, q):
    msr = p.loc / q.scale
    vssr = (p.scale / q.scale) ** 2
    lsr = q.loc / q.scale
    t3 = tg.exp(-msr + 0.5 * vssr + lsr)
    return -0.5 * tg.log(vssr) + msr - lsr + t3 - 0.5 * (1 + math.log(2 * math.pi))


@register_kl(Pareto, Exponential)
def _kl_pareto_exponential(p, q):
    srp = p.scale * q.rate
    a = p.alpha
    result = tg.log(a / srp) - a.reciprocal() + a * srp / (a - 1) - 1
    return _inf_where(a <= 1, result)


@register_kl(Pareto, Gamma)
def _kl_pareto_gamma(p, q):
    a = p.alpha
    common = tg.log(p.scale) + a.reciprocal()
    t1 = tg.log(a) - common
    t2 = tg.lgamma(q.concentration) - q.concentration * tg.log(q.rate)
    t3 = (1 - q.concentration) * common
    t4 = q.rate * a * p.scale / (a - 1)
    return _inf_where(a <= 1, t1 + t2 + t3 + t4 - 1)


@register_kl(Pareto, Normal)
def _kl_pareto_normal(p, q):
    a = p.alpha
    var_normal = 2 * q.scale**2
    common = p.scale / (a - 1)
    t1 = tg.log(math.sqrt(2 * math.pi) * q.scale * a / p.scale)
    t3 = a * common**2 / (a - 2)
    t4 = (a * common - q.loc) ** 2
    return _inf_where(a <= 2, t1 - a.reciprocal() + (t3 + t4) / var_normal - 1)


@register_kl(Uniform, Beta)
def _kl_uniform_beta(p, q):
    c = p.high - p.low
    t2 = (q.concentration1 - 1) * (_x_log_x(p.high) - _x_log_x(p.low) - c) / c
    t3 = (q.concentration0 - 1) * (_x_log_x(1 - p.high) - _x_log_x(1 - p.low) + c) / c
    t4 = (
        tg.lgamma(q.concentration1)
        + tg.lgamma(q.concentration0)
        - tg.lgamma(q.concentration1 + q.concentration0)
    )
    result = t3 + t4 - tg.log(c) - t2
    lo, hi = q.support.lower_bound, q.support.upper_bound
    return _inf_where((p.high > hi) | (p.low < lo), result)


@register_kl(Uniform, ContinuousBernoulli)
def _kl_uniform_cb(p, q):
    result = -p.entropy() - p.mean * q.logits - tg.log1p(-q.probs) - q._cont_bern_log_norm()
    lo, hi = q.support.lower_bound, q.support.upper_bound
    return _inf_where((p.high >= hi) | (p.low <= lo), result)


@register_kl(Uniform, Exponential)
def _kl_uniform_exponential(p, q):
    result = q.rate * (p.high + p.low) / 2 - tg.log((p.high - p.low) * q.rate)
    return _inf_where(p.low < q.support.lower_bound, result)


@register_kl(Uniform, Gamma)
def _kl_uniform_gamma(p, q):
    c = p.high - p.low
    t2 = tg.lgamma(q.concentration) - q.concentration * tg.log(q.rate)
    t3 = (1 - q.concentration) * (_x_log_x(p.high) - _x_log_x(p.low) - c) / c
    t4 = q.rate * (p.high + p.low) / 2
    return _inf_where(p.low < q.support.lower_bound, -tg.log(c) + t2 + t3 + t4)


@register_kl(Uniform, Gumbel)
def _kl_uniform_gumbel(p, q):
    c = q.scale / (p.high - p.low)
    hi = (p.high - q.loc) / q.scale
    lo = (p.low - q.loc) / q.scale
    t1 = tg.log(c) + 0.5 * (hi + lo)
    return t1 - c * (tg.exp(-hi) - tg.exp(-lo))


@register_kl(Uniform, Normal)
def _kl_uniform_normal(p, q):
    c = p.high - p.low
    t1 = tg.log(math.sqrt(math.pi * 2) * q.scale / c)
    t2 = c**2 / 12
    t3 = ((p.high + p.low - 2 * q.loc) / 2) ** 2
    return t1 + 0.5 * (t2 + t3) / q.scale**2


@register_kl(Uniform, Pareto)
def _kl_uniform_pareto(p, q):
    width = p.high - p.low
    t1 = tg.log(q.alpha * q.scale**q.alpha * width)
    t2 = (_x_log_x(p.high) - _x_log_x(p.low) - width) / width
    return _inf_where(p.low < q.support.lower_bound, t2 * (q.alpha + 1) - t1)


def _check_event_shapes(p, q, what):
    if tuple(p.event_shape) != tuple(q.event_shape):
        raise ValueError(
            f"KL-divergence between two {what} with different event shapes cannot be computed"
        )


def _solve_lower(L, B):
    shape = np.broadcast_shapes(tuple(L.shape[:-2]), tuple(B.shape[:-2]))
    n, m = L.shape[-1], B.shape[-1]
    return tg.linalg.solve_triangular(
        L.expand(shape + (n, n)), B.expand(shape + (n, m)), upper=False
    )


def _mahalanobis(L, x):
    n = L.shape[-1]
    shape = np.broadcast_shapes(tuple(L.shape[:-2]), tuple(x.shape[:-1]))
    return _batch_mahalanobis(L.expand(shape + (n, n)), x.expand(shape + (n,)))


@register_kl(LowRankMultivariateNormal, LowRankMultivariateNormal)
def _kl_lowrank_lowrank(p, q):
    _check_event_shapes(p, q, "Low Rank Multivariate Normals")
    pW, pD = p._unbroadcasted_cov_factor, p._unbroadcasted_cov_diag
    qW, qD = q._unbroadcasted_cov_factor, q._unbroadcasted_cov_diag
    term1 = _lowrank_logdet(qD, q._capacitance_tril) - _lowrank_logdet(pD, p._capacitance_tril)
    term3 = _lowrank_mahalanobis(qW, qD, q.loc - p.loc, q._capacitance_tril)
    A = _solve_lower(q._capacitance_tril, qW.mT / qD.unsqueeze(-2))
    term21 = (pD / qD).sum(-1)
    term22 = _trace_XXT(pW * tg.rsqrt(qD).unsqueeze(-1))
    term23 = _trace_XXT(A * tg.sqrt(pD).unsqueeze(-2))
    term24 = _trace_XXT(A @ pW)
    return 0.5 * (term1 + term21 + term22 - term23 - term24 + term3 - p.event_shape[0])


@register_kl(MultivariateNormal, LowRankMultivariateNormal)
def _kl_mvn_lowrank(p, q):
    _check_event_shapes(p, q, "(Low Rank) Multivariate Normals")
    qW, qD = q._unbroadcasted_cov_factor, q._unbroadcasted_cov_diag
    pL = p._unbroadcasted_scale_tril
    term1 = _lowrank_logdet(qD, q._capacitance_tril) - 2 * tg.log(
        pL.diagonal(dim1=-2, dim2=-1)
    ).sum(-1)
    term3 = _lowrank_mahalanobis(qW, qD, q.loc - p.loc, q._capacitance_tril)
    A = _solve_lower(q._capacitance_tril, qW.mT / qD.unsqueeze(-2))
    term21 = _trace_XXT(pL * tg.rsqrt(qD).unsqueeze(-1))
    term22 = _trace_XXT(A @ pL)
    return 0.5 * (term1 + term21 - term22 + term3 - p.event_shape[0])


@register_kl(LowRankMultivariateNormal, MultivariateNormal)
def _kl_lowrank_mvn(p, q):
    _check_event_shapes(p, q, "(Low Rank) Multivariate Normals")
    pW, pD = p._unbroadcasted_cov_factor, p._unbroadcasted_cov_diag
    qL = q._unbroadcasted_scale_tril
    term1 = 2 * tg.log(qL.diagonal(dim1=-2, dim2=-1)).sum(-1) - _lowrank_logdet(
        pD, p._capacitance_tril
    )
    term3 = _mahalanobis(qL, q.loc - p.loc)
    term21 = _trace_XXT(_solve_lower(qL, pW))
    term22 = _trace_XXT(_solve_lower(qL, tg.diag_embed(tg.sqrt(pD))))
    return 0.5 * (term1 + term21 + term22 + term3 - p.event_shape[0])
