"""Sampling: shapes, moments (seeded, loose tolerances), reparameterised gradients, validation."""

import numpy as np
import pytest

import tapegrad as tg
import tapegrad.distributions as D

f64 = tg.float64


def _t(x, rg=False):
    return tg.tensor(np.asarray(x, dtype=np.float64), requires_grad=rg)


@pytest.mark.parametrize(
    "dist, mean, var",
    [
        (lambda: D.Normal(_t([1.0, -2.0]), _t([0.5, 2.0])), [1.0, -2.0], [0.25, 4.0]),
        (lambda: D.Uniform(_t([0.0, 1.0]), _t([1.0, 5.0])), [0.5, 3.0], [1 / 12, 16 / 12]),
        (lambda: D.Exponential(_t([2.0, 0.5])), [0.5, 2.0], [0.25, 4.0]),
        (lambda: D.Laplace(_t([0.0, 1.0]), _t([1.0, 0.5])), [0.0, 1.0], [2.0, 0.5]),
        (lambda: D.Gamma(_t([2.0, 0.5]), _t([1.0, 2.0])), [2.0, 0.25], [2.0, 0.125]),
        (lambda: D.Beta(_t([2.0, 0.5]), _t([3.0, 0.5])), [0.4, 0.5], [0.04, 0.125]),
        (lambda: D.Bernoulli(probs=_t([0.2, 0.7])), [0.2, 0.7], [0.16, 0.21]),
        (lambda: D.Poisson(_t([0.5, 4.0])), [0.5, 4.0], [0.5, 4.0]),
        (lambda: D.Binomial(_t([10.0, 3.0]), probs=_t([0.3, 0.5])), [3.0, 1.5], [2.1, 0.75]),
        (
            lambda: D.Geometric(probs=_t([0.3, 0.6])),
            [7 / 3, 2 / 3],
            [(1 / 0.3 - 1) / 0.3, (1 / 0.6 - 1) / 0.6],
        ),
        (lambda: D.LogNormal(_t([0.0, 0.5]), _t([0.3, 0.2])), np.exp([0.045, 0.52]), None),
    ],
)
def test_sample_shapes_and_moments(dist, mean, var):
    tg.manual_seed(0)
    d = dist()
    s = d.sample((40000,))
    assert tuple(s.shape) == (40000, 2)
    assert s.requires_grad is False
    np.testing.assert_allclose(s.numpy().mean(0), mean, rtol=0.05, atol=0.02)
    if var is not None:
        np.testing.assert_allclose(s.numpy().var(0), var, rtol=0.08, atol=0.01)
    np.testing.assert_allclose(d.mean.detach().numpy(), mean, rtol=1e-6)


def test_categorical_and_dirichlet_and_mvn_samples():
    tg.manual_seed(0)
    p = np.array([0.1, 0.6, 0.3])
    c = D.Categorical(probs=_t(p)).sample((50000,))
    assert c.dtype == tg.int64 and tuple(c.shape) == (50000,)
    np.testing.assert_allclose(np.bincount(c.numpy(), minlength=3) / 50000, p, atol=0.01)
    oh = D.OneHotCategorical(probs=_t(p)).sample((5,))
    assert tuple(oh.shape) == (5, 3) and np.all(oh.numpy().sum(-1) == 1)
    a = np.array([1.0, 2.0, 3.0])
    x = D.Dirichlet(_t(a)).sample((30000,)).numpy()
    np.testing.assert_allclose(x.mean(0), a / a.sum(), atol=0.01)
    np.testing.assert_allclose(x.sum(-1), 1.0, rtol=1e-12)
    cov = np.array([[2.0, 0.5], [0.5, 1.0]])
    m = D.MultivariateNormal(_t([1.0, -1.0]), covariance_matrix=_t(cov)).sample((50000,)).numpy()
    np.testing.assert_allclose(np.cov(m.T), cov, atol=0.05)


def test_rsample_is_differentiable():
    tg.manual_seed(0)
    loc, scale = _t([1.0], rg=True), _t([2.0], rg=True)
    x = D.Normal(loc, scale).rsample((1000,))
    x.sum().backward()
    assert loc.grad.item() == pytest.approx(1000.0)
    # d/dscale of sum(loc + eps * scale) is sum(eps) = sum((x - loc) / scale)
    assert scale.grad.item() == pytest.approx(((x.detach() - 1.0) / 2.0).sum().item())


def test_gamma_rsample_gradient_is_the_mean_gradient():
    """E[z] = a / b, so d/da of the sample mean converges to 1 / b (implicit reparam.)."""
    tg.manual_seed(1)
    a = _t([0.7, 3.0], rg=True)
    b = _t([2.0, 0.5])
    n = 40000
    z = D.Gamma(a, b).rsample((n,))
    (z.sum(0) / n).sum().backward()
    np.testing.assert_allclose(a.grad.numpy(), 1 / b.numpy(), rtol=0.05)
    c = _t([2.0, 3.0, 5.0], rg=True)
    x = D.Dirichlet(c).rsample((n,))
    (x[:, 0].mean()).backward()  # E[x0] = c0 / sum(c)
    s = 10.0
    np.testing.assert_allclose(c.grad.numpy(), [(s - 2) / s**2, -2 / s**2, -2 / s**2], atol=0.01)


def test_validation_errors_like_torch():
    with pytest.raises(
        ValueError, match="Expected parameter scale .* to satisfy the constraint GreaterThan"
    ):
        D.Normal(_t([0.0]), _t([-1.0]))
    with pytest.raises(ValueError, match="within the support"):
        D.Exponential(_t([1.0])).log_prob(_t([-1.0]))
    with pytest.raises(ValueError, match="either `probs` or `logits`"):
        D.Bernoulli(probs=_t([0.5]), logits=_t([0.0]))
    with pytest.raises(ValueError, match="Uniform is not defined"):
        D.Uniform(_t([1.0]), _t([0.0]))
    D.Normal(_t([0.0]), _t([-1.0]), validate_args=False)  # no check when disabled
    with pytest.raises(
        NotImplementedError,
        match=r"No KL\(p \|\| q\) is implemented for p type Normal and q type Categorical",
    ):
        D.kl_divergence(D.Normal(0.0, 1.0), D.Categorical(probs=_t([0.5, 0.5])))
    with pytest.raises(NotImplementedError, match="different exponential families"):
        D.kl_divergence(D.Normal(0.0, 1.0), D.Poisson(1.0))  # as torch: both ExponentialFamily


def test_expand_and_logits_parametrisation():
    d = D.Normal(_t([0.0, 1.0]), _t([1.0, 1.0])).expand((3, 2))
    assert tuple(d.batch_shape) == (3, 2)
    assert tuple(d.sample().shape) == (3, 2)
    b = D.Bernoulli(logits=_t([0.0, 2.0]))
    np.testing.assert_allclose(b.probs.numpy(), 1 / (1 + np.exp(-np.array([0.0, 2.0]))))
    c = D.Categorical(logits=_t([[0.0, 1.0, 2.0]]))
    np.testing.assert_allclose(c.probs.numpy().sum(-1), 1.0)
    assert tuple(c.enumerate_support().shape) == (3, 1)
