"""ExponentialFamily: the natural parameters and log-normalisers of every member, checked
through the Bregman entropy and KL against torch's own (same generic code path)."""

import numpy as np
import pytest

import tapegrad as tg
import tapegrad.distributions as D
from tapegrad.distributions.kl_extra import _kl_expfamily_expfamily

torch = pytest.importorskip("torch")
TD = torch.distributions

rng = np.random.default_rng(3)
A = rng.standard_normal((3, 3))
COV = A @ A.T + 3 * np.eye(3)

# name: (build(M, T), build q(M, T), whether torch defines the carrier measure (entropy))
MEMBERS = {
    "Normal": (
        lambda M, T: M.Normal(T([0.3, -1.0]), T([1.5, 0.7])),
        lambda M, T: M.Normal(T([0.0, 1.0]), T([1.0, 2.0])),
        True,
    ),
    "Exponential": (
        lambda M, T: M.Exponential(T([1.5, 0.7])),
        lambda M, T: M.Exponential(T([1.0, 2.0])),
        True,
    ),
    "Gamma": (
        lambda M, T: M.Gamma(T([2.0, 0.7]), T([1.5, 3.0])),
        lambda M, T: M.Gamma(T([1.0, 2.0]), T([1.0, 1.0])),
        True,
    ),
    "Bernoulli": (
        lambda M, T: M.Bernoulli(probs=T([0.3, 0.8])),
        lambda M, T: M.Bernoulli(probs=T([0.5, 0.6])),
        True,
    ),
    "Beta": (
        lambda M, T: M.Beta(T([2.0, 0.7]), T([1.5, 3.0])),
        lambda M, T: M.Beta(T([1.0, 2.0]), T([1.0, 1.0])),
        False,
    ),
    "Dirichlet": (
        lambda M, T: M.Dirichlet(T([[2.0, 0.7, 1.0]])),
        lambda M, T: M.Dirichlet(T([[1.0, 2.0, 3.0]])),
        False,
    ),
    "Poisson": (
        lambda M, T: M.Poisson(T([2.0, 0.7])),
        lambda M, T: M.Poisson(T([1.0, 3.0])),
        False,
    ),
    "ContinuousBernoulli": (
        lambda M, T: M.ContinuousBernoulli(probs=T([0.3, 0.8])),
        lambda M, T: M.ContinuousBernoulli(probs=T([0.5, 0.6])),
        True,
    ),
    "Wishart": (
        lambda M, T: M.Wishart(T(5.0), covariance_matrix=T(COV)),
        lambda M, T: M.Wishart(T(4.0), covariance_matrix=T(COV * 1.5)),
        True,
    ),
}


def _build(fn, M, params):
    lib = tg if M is D else torch

    def T(x):
        t = lib.tensor(np.asarray(x, dtype=np.float64), requires_grad=True)
        params.append(t)
        return t

    return fn(M, T)


@pytest.mark.parametrize("name", sorted(MEMBERS))
def test_bregman_entropy_and_kl_against_torch(name):
    build_p, build_q, has_entropy = MEMBERS[name]
    tp, pp = [], []
    p_ours, p_theirs = _build(build_p, D, tp), _build(build_p, TD, pp)
    assert isinstance(p_ours, D.ExponentialFamily)
    q_ours, q_theirs = _build(build_q, D, tp), _build(build_q, TD, pp)
    a = _kl_expfamily_expfamily(p_ours, q_ours)
    b = TD.kl._kl_expfamily_expfamily(p_theirs, q_theirs)
    np.testing.assert_allclose(a.detach().numpy(), b.detach().numpy(), rtol=1e-9, atol=1e-12)
    ga = tg.autograd.grad(a.sum(), tp, allow_unused=True)
    gb = torch.autograd.grad(b.sum(), pp, allow_unused=True)
    for x, y in zip(ga, gb):
        if y is not None:
            np.testing.assert_allclose(x.numpy(), y.numpy(), rtol=1e-7, atol=1e-10)
    if has_entropy:
        a = D.ExponentialFamily.entropy(p_ours)
        b = TD.ExponentialFamily.entropy(p_theirs)
        np.testing.assert_allclose(a.detach().numpy(), b.detach().numpy(), rtol=1e-9)
        np.testing.assert_allclose(a.detach().numpy(), p_ours.entropy().detach().numpy())
