"""The families added after the first set (StudentT ... Wishart) against torch.distributions,
in float64: log_prob, moments, entropy, cdf/icdf and their gradients with respect to every
parameter; batch/event shapes and expand; and the KL pairs torch registers."""

import numpy as np
import pytest

import tapegrad as tg
import tapegrad.distributions as D

from .test_against_torch import _compare

torch = pytest.importorskip("torch")
TD = torch.distributions

rng = np.random.default_rng(19)
POS = rng.uniform(0.5, 2.0, (3,))
POS2 = rng.uniform(0.5, 2.0, (3,))
REAL = rng.standard_normal(3)
PROB = rng.uniform(0.1, 0.9, (3,))
SIMPLEX = rng.dirichlet(np.ones(4), size=2)
A = rng.standard_normal((3, 3))
COV = A @ A.T + 3 * np.eye(3)
CORR_L = np.linalg.cholesky(COV / np.sqrt(np.outer(np.diag(COV), np.diag(COV))))


def _lkj_value():
    return CORR_L


# name: (build(M, *params), params, a value in the support, methods, differentiable params)
# ``build`` takes the module (tapegrad.distributions or torch.distributions) and the
# parameter tensors, so one row serves both libraries.
ROWS = {
    "StudentT": (
        lambda M, df, loc, scale: M.StudentT(df, loc, scale),
        (POS * 3, REAL, POS2),
        REAL + 0.2,
        ("mean", "mode", "variance", "entropy"),
        None,
    ),
    "StudentT_low_df": (  # df <= 1: mean nan; 1 < df <= 2: variance inf
        lambda M, df, loc, scale: M.StudentT(df, loc, scale),
        (np.array([0.5, 1.5, 3.0]), REAL, POS2),
        REAL,
        ("mean", "variance"),
        None,
    ),
    "HalfNormal": (
        lambda M, s: M.HalfNormal(s),
        (POS,),
        POS2,
        ("mean", "mode", "variance", "entropy", "cdf", "icdf"),
        None,
    ),
    "HalfCauchy": (
        lambda M, s: M.HalfCauchy(s),
        (POS,),
        POS2,
        ("mean", "mode", "variance", "entropy", "cdf", "icdf"),
        None,
    ),
    "Gumbel": (
        lambda M, loc, s: M.Gumbel(loc, s),
        (REAL, POS),
        REAL * 2,
        ("mean", "mode", "variance", "stddev", "entropy", "cdf", "icdf"),
        None,
    ),
    "Weibull": (
        lambda M, s, k: M.Weibull(s, k),
        (POS, POS2 + 0.5),
        POS2,
        ("mean", "mode", "variance", "entropy", "cdf", "icdf"),
        None,
    ),
    "Pareto": (
        lambda M, s, a: M.Pareto(s, a),
        (POS, POS2 + 2.5),
        POS + POS2,
        ("mean", "mode", "variance", "entropy", "cdf", "icdf"),
        None,
    ),
    "InverseGamma": (
        lambda M, a, b: M.InverseGamma(a, b),
        (np.array([0.5, 1.5, 3.0]), POS2),
        POS2,
        ("mean", "mode", "variance", "entropy"),
        None,
    ),
    "InverseGamma_cdf": (  # torch has no derivative of igamma in its first argument
        lambda M, a, b: M.InverseGamma(a, b),
        (np.array([0.5, 1.5, 3.0]), POS2),
        POS2,
        ("cdf",),
        (1,),
    ),
    "Kumaraswamy": (
        lambda M, a, b: M.Kumaraswamy(a, b),
        (POS + 1, np.array([0.5, 1.5, 3.0])),
        PROB,
        ("mean", "variance", "entropy", "cdf", "icdf"),  # mode: test_kumaraswamy_mode
        None,
    ),
    "FisherSnedecor": (
        lambda M, d1, d2: M.FisherSnedecor(d1, d2),
        (np.array([1.5, 3.0, 6.0]), np.array([1.5, 3.0, 8.0])),
        POS2,
        ("mean", "mode", "variance"),
        None,
    ),
    "VonMises": (  # concentrations on both sides of the Bessel approximation's switch
        lambda M, loc, k: M.VonMises(loc, k),
        (REAL, np.array([0.5, 2.0, 5.0])),
        REAL + 0.3,
        ("mean", "mode", "variance"),
        None,
    ),
    "ContinuousBernoulli": (  # 0.5 lies in the Taylor-expanded region
        lambda M, p: M.ContinuousBernoulli(probs=p),
        (np.array([0.2, 0.5, 0.8]),),
        PROB,
        ("mean", "variance", "stddev", "entropy", "cdf", "icdf"),
        None,
    ),
    "ContinuousBernoulli_logits": (
        lambda M, lg: M.ContinuousBernoulli(logits=lg),
        (REAL,),
        PROB,
        ("mean", "variance", "entropy"),
        None,
    ),
    "NegativeBinomial": (
        lambda M, n, p: M.NegativeBinomial(n, probs=p),
        (POS * 3, PROB),
        np.array([0.0, 2.0, 5.0]),
        ("mean", "mode", "variance"),
        None,
    ),
    "Binomial": (
        lambda M, n, p: M.Binomial(n, probs=p),
        (np.array([6.0, 6.0, 6.0]), PROB),
        np.array([0.0, 2.0, 6.0]),
        ("mean", "mode", "variance", "entropy"),
        (1,),
    ),
    "Geometric": (
        lambda M, p: M.Geometric(probs=p),
        (PROB,),
        np.array([0.0, 2.0, 5.0]),
        ("mode",),
        None,
    ),
    "Multinomial": (
        lambda M, p: M.Multinomial(5, probs=p),
        (SIMPLEX,),
        np.array([[1.0, 2.0, 0.0, 2.0], [0.0, 0.0, 5.0, 0.0]]),
        ("mean", "variance", "entropy"),
        None,
    ),
    "LowRankMultivariateNormal": (
        lambda M, loc, W, d: M.LowRankMultivariateNormal(loc, W, d),
        (rng.standard_normal((2, 3)), rng.standard_normal((3, 2)), POS),
        rng.standard_normal((2, 3)),
        (
            "mean",
            "variance",
            "entropy",
            "covariance_matrix",
            "precision_matrix",
            "scale_tril",
        ),
        None,
    ),
    "MixtureSameFamily": (
        lambda M, w, loc, s: M.MixtureSameFamily(M.Categorical(probs=w), M.Normal(loc, s)),
        (SIMPLEX, rng.standard_normal((2, 4)), rng.uniform(0.5, 2.0, (2, 4))),
        REAL[:2],
        ("mean", "variance", "cdf"),
        None,
    ),
    "MixtureSameFamily_vector": (  # components with an event dim (Independent Normals)
        lambda M, w, loc, s: M.MixtureSameFamily(
            M.Categorical(probs=w), M.Independent(M.Normal(loc, s), 1)
        ),
        (SIMPLEX, rng.standard_normal((2, 4, 3)), rng.uniform(0.5, 2.0, (2, 4, 3))),
        rng.standard_normal((2, 3)),
        ("mean", "variance"),
        None,
    ),
    "RelaxedBernoulli": (
        lambda M, t, p: M.RelaxedBernoulli(t, probs=p),
        (np.array(0.7), PROB),
        PROB[::-1].copy(),
        (),
        None,
    ),
    "RelaxedOneHotCategorical": (
        lambda M, t, p: M.RelaxedOneHotCategorical(t, probs=p),
        (np.array(0.6), SIMPLEX),
        SIMPLEX[::-1].copy(),
        (),
        None,
    ),
    "LogisticNormal": (
        lambda M, loc, s: M.LogisticNormal(loc, s),
        (REAL, POS),
        SIMPLEX[0],
        (),
        None,
    ),
    "LKJCholesky": (
        lambda M, c: M.LKJCholesky(3, c),
        (np.array([0.5, 2.0]),),
        np.stack([CORR_L, np.eye(3)]),
        (),
        None,
    ),
    "Wishart": (
        lambda M, df, cov: M.Wishart(df, covariance_matrix=cov),
        (np.array(4.5), COV),
        COV + np.eye(3),
        ("mean", "mode", "variance", "entropy"),
        None,
    ),
}


def _pair(name):
    build, params, value, methods, diff = ROWS[name]
    diff = range(len(params)) if diff is None else diff
    tp = [tg.tensor(p, dtype=tg.float64, requires_grad=i in diff) for i, p in enumerate(params)]
    pp = [
        torch.tensor(p, dtype=torch.float64, requires_grad=i in diff) for i, p in enumerate(params)
    ]
    return build(D, *tp), build(TD, *pp), tp, pp, value, methods


@pytest.mark.parametrize("name", sorted(ROWS))
def test_log_prob_and_gradients(name):
    ours, theirs, tp, pp, value, _ = _pair(name)
    _compare(
        ours.log_prob(tg.tensor(value, dtype=tg.float64)),
        theirs.log_prob(torch.tensor(value, dtype=torch.float64)),
        tp,
        pp,
        f"{name}.log_prob",
    )
    assert tuple(ours.batch_shape) == tuple(theirs.batch_shape)
    assert tuple(ours.event_shape) == tuple(theirs.event_shape)
    assert type(ours.support).__name__ == type(theirs.support).__name__
    assert ours.has_rsample == theirs.has_rsample


@pytest.mark.parametrize(
    "name, method", [(n, m) for n in sorted(ROWS) for m in ROWS[n][3]], ids=str
)
def test_moments_entropy_cdf(name, method):
    ours, theirs, tp, pp, value, _ = _pair(name)
    if method in ("cdf", "icdf"):
        arg = value if method == "cdf" else np.full(value.shape, 0.3)
        a = getattr(ours, method)(tg.tensor(arg, dtype=tg.float64))
        b = getattr(theirs, method)(torch.tensor(arg, dtype=torch.float64))
    elif method == "entropy":
        a, b = ours.entropy(), theirs.entropy()
    else:
        a, b = getattr(ours, method), getattr(theirs, method)
    _compare(a, b, tp, pp, f"{name}.{method}")


@pytest.mark.parametrize("name", sorted(ROWS))
def test_expand_and_sample_shapes(name):
    ours, theirs, _, _, _, _ = _pair(name)
    shape = (2,) + tuple(theirs.batch_shape)
    e_ours, e_theirs = ours.expand(shape), theirs.expand(shape)
    assert type(e_ours) is type(ours)
    assert tuple(e_ours.batch_shape) == tuple(e_theirs.batch_shape)
    assert tuple(e_ours.event_shape) == tuple(e_theirs.event_shape)
    s = e_ours.sample((5,))
    assert tuple(s.shape) == tuple(e_theirs.sample((5,)).shape)
    assert s.dtype == tg.float64 and not s.requires_grad


def test_generalized_pareto_matches_torch_float32():
    """torch's GeneralizedPareto only runs in float32 (it compares with a float32 zero)."""
    loc, scale, conc = REAL, POS, np.array([0.3, 0.0, -0.2])
    value = REAL + 0.5 * POS
    tp = [tg.tensor(p, dtype=tg.float32, requires_grad=True) for p in (loc, scale, conc)]
    pp = [torch.tensor(p, dtype=torch.float32, requires_grad=True) for p in (loc, scale, conc)]
    for what in ("log_prob", "cdf", "icdf", "mean", "variance", "entropy"):
        ours, theirs = D.GeneralizedPareto(*tp), TD.GeneralizedPareto(*pp)
        if what in ("log_prob", "cdf"):
            a = getattr(ours, what)(tg.tensor(value, dtype=tg.float32))
            b = getattr(theirs, what)(torch.tensor(value, dtype=torch.float32))
        elif what == "icdf":
            a, b = ours.icdf(tg.full((3,), 0.3)), theirs.icdf(torch.full((3,), 0.3))
        elif what == "entropy":
            a, b = ours.entropy(), theirs.entropy()
        else:
            a, b = getattr(ours, what), getattr(theirs, what)
        np.testing.assert_allclose(a.detach().numpy(), b.detach().numpy(), rtol=2e-5, atol=1e-6)
        w = np.random.default_rng(1).standard_normal(3).astype(np.float32)
        ga = tg.autograd.grad((a * tg.tensor(w)).sum(), tp, allow_unused=True)
        gb = torch.autograd.grad((b * torch.tensor(w)).sum(), pp, allow_unused=True)
        for x, y in zip(ga, gb):
            if y is not None:
                np.testing.assert_allclose(x.numpy(), y.numpy(), rtol=1e-4, atol=1e-5)


# (p row, q row): KL(p || q) against torch's, gradients w.r.t. p's parameters.
KL_PAIRS = [
    ("HalfNormal", "HalfNormal2"),
    ("Gumbel", "Gumbel2"),
    ("Pareto", "Pareto2"),
    ("Binomial", "Binomial2"),
    ("Binomial", "Binomial_fewer"),  # q has fewer trials: infinite
    ("Geometric", "Geometric2"),
    ("ContinuousBernoulli", "ContinuousBernoulli2"),
    ("LowRankMultivariateNormal", "LowRankMultivariateNormal2"),
    ("LowRankMultivariateNormal", "MultivariateNormal"),
    ("MultivariateNormal", "LowRankMultivariateNormal"),
    ("Cauchy", "Cauchy2"),
    ("Bernoulli", "Poisson"),
]
# the second-family rows used only as q (no gradient needed)
Q_ROWS = {
    "HalfNormal2": lambda M, T: M.HalfNormal(T(POS2)),
    "Gumbel2": lambda M, T: M.Gumbel(T(REAL[::-1].copy()), T(POS2)),
    "Pareto2": lambda M, T: M.Pareto(T(POS * 0.5), T(POS2 + 1)),
    "Binomial2": lambda M, T: M.Binomial(T([6.0, 6.0, 6.0]), probs=T(PROB[::-1].copy())),
    "Binomial_fewer": lambda M, T: M.Binomial(T([6.0, 5.0, 6.0]), probs=T(PROB)),
    "Geometric2": lambda M, T: M.Geometric(probs=T(PROB[::-1].copy())),
    "ContinuousBernoulli2": lambda M, T: M.ContinuousBernoulli(probs=T(np.array([0.3, 0.4, 0.9]))),
    "LowRankMultivariateNormal2": lambda M, T: M.LowRankMultivariateNormal(
        T(REAL), T(np.ones((3, 2)) * 0.3), T(POS2)
    ),
    "MultivariateNormal": lambda M, T: M.MultivariateNormal(T(REAL), covariance_matrix=T(COV)),
    "Cauchy2": lambda M, T: M.Cauchy(T(REAL[::-1].copy()), T(POS2)),
    "Poisson": lambda M, T: M.Poisson(T(POS2)),
}
P_EXTRA = {
    "MultivariateNormal": (
        lambda M, loc, L: M.MultivariateNormal(loc, scale_tril=L),
        (rng.standard_normal((2, 3)), np.linalg.cholesky(COV)),
    ),
    "Cauchy": (lambda M, loc, s: M.Cauchy(loc, s), (REAL, POS)),
    "Bernoulli": (lambda M, p: M.Bernoulli(probs=p), (PROB,)),
}


def _p(name):
    if name in ROWS:
        return _pair(name)[:4]
    build, params = P_EXTRA[name]
    tp = [tg.tensor(p, dtype=tg.float64, requires_grad=True) for p in params]
    pp = [torch.tensor(p, dtype=torch.float64, requires_grad=True) for p in params]
    return build(D, *tp), build(TD, *pp), tp, pp


def _q(name, M):
    if name in Q_ROWS:

        def T(x):
            return (tg if M is D else torch).tensor(np.asarray(x, dtype=np.float64))

        return Q_ROWS[name](M, T)
    build, params, *_ = ROWS[name]
    T = tg.tensor if M is D else torch.tensor
    return build(M, *[T(np.asarray(p, dtype=np.float64) * 1.1) for p in params])


@pytest.mark.parametrize("p_name, q_name", KL_PAIRS, ids=str)
def test_kl_pairs(p_name, q_name):
    ours_p, theirs_p, tp, pp = _p(p_name)
    ours = D.kl_divergence(ours_p, _q(q_name, D))
    theirs = TD.kl_divergence(theirs_p, _q(q_name, TD))
    _compare(ours, theirs, tp, pp, f"KL({p_name} || {q_name})")


# Cross-family pairs (torch's closed forms and its infinite rows): (p, q) built from scalars
# of both libraries; every pair torch registers among these classes.
_SCALAR = {
    "Beta": lambda M, T: M.Beta(T(2.0), T(3.0)),
    "ContinuousBernoulli": lambda M, T: M.ContinuousBernoulli(probs=T(0.3)),
    "Exponential": lambda M, T: M.Exponential(T(1.5)),
    "Gamma": lambda M, T: M.Gamma(T(2.0), T(1.5)),
    "Gumbel": lambda M, T: M.Gumbel(T(0.5), T(1.5)),
    "Laplace": lambda M, T: M.Laplace(T(0.3), T(1.2)),
    "Normal": lambda M, T: M.Normal(T(0.3), T(1.2)),
    "Pareto": lambda M, T: M.Pareto(T(1.0), T(3.5)),
    "Uniform": lambda M, T: M.Uniform(T(0.2), T(0.7)),
    "Poisson": lambda M, T: M.Poisson(T(2.0)),
    "Bernoulli": lambda M, T: M.Bernoulli(probs=T(0.3)),
    "Binomial": lambda M, T: M.Binomial(T(4.0), probs=T(0.3)),
}
CROSS = sorted(
    (p.__name__, q.__name__)
    for p, q in TD.kl._KL_REGISTRY
    if p.__name__ in _SCALAR and q.__name__ in _SCALAR and p is not q
)


@pytest.mark.parametrize("p_name, q_name", CROSS, ids=str)
def test_kl_cross_families(p_name, q_name):
    def build(M, rg):
        lib = tg if M is D else torch
        params = []

        def T(x):
            t = lib.tensor(x, dtype=lib.float64, requires_grad=rg)
            params.append(t)
            return t

        return _SCALAR[p_name](M, T), params, _SCALAR[q_name](M, lambda x: T(x))

    ours_p, tp, ours_q = build(D, True)
    theirs_p, pp, theirs_q = build(TD, True)
    _compare(
        D.kl_divergence(ours_p, ours_q),
        TD.kl_divergence(theirs_p, theirs_q),
        tp,
        pp,
        f"KL({p_name} || {q_name})",
    )


def test_kl_transformed_needs_equal_transforms():
    base = D.Normal(tg.zeros(2, dtype=tg.float64), tg.ones(2, dtype=tg.float64))
    p = D.TransformedDistribution(base, [D.AffineTransform(1.0, 2.0)])
    q = D.TransformedDistribution(base, [D.AffineTransform(1.0, 2.0)])
    np.testing.assert_allclose(D.kl_divergence(p, q).numpy(), 0.0)
    other = D.TransformedDistribution(base, [D.AffineTransform(1.0, 3.0)])
    with pytest.raises(NotImplementedError):
        D.kl_divergence(p, other)
    with pytest.raises(NotImplementedError):
        D.kl_divergence(
            D.TransformedDistribution(base, [D.ExpTransform().inv]),
            D.TransformedDistribution(base, [D.SigmoidTransform().inv]),
        )


def test_exponential_family_bregman_entropy_and_kl():
    """ExponentialFamily's autograd entropy equals the closed forms; Wishart's KL goes through
    the Bregman divergence, as torch's."""
    cb = D.ContinuousBernoulli(probs=tg.tensor([0.2, 0.7], dtype=tg.float64))
    np.testing.assert_allclose(
        D.ExponentialFamily.entropy(cb).detach().numpy(), cb.entropy().numpy(), rtol=1e-9
    )
    df = tg.tensor(5.0, dtype=tg.float64, requires_grad=True)
    pdf = torch.tensor(5.0, dtype=torch.float64, requires_grad=True)
    ours = D.Wishart(df, covariance_matrix=tg.tensor(COV))
    theirs = TD.Wishart(pdf, covariance_matrix=torch.tensor(COV))
    np.testing.assert_allclose(
        D.ExponentialFamily.entropy(ours).detach().numpy(), ours.entropy().detach().numpy()
    )
    q = (D.Wishart(tg.tensor(4.0, dtype=tg.float64), covariance_matrix=tg.tensor(COV * 1.5)),)
    pq = (
        TD.Wishart(
            torch.tensor(4.0, dtype=torch.float64), covariance_matrix=torch.tensor(COV * 1.5)
        ),
    )
    _compare(
        D.kl_divergence(ours, q[0]), TD.kl_divergence(theirs, pq[0]), [df], [pdf], "KL Wishart"
    )
    with pytest.raises(NotImplementedError, match="different exponential families"):
        D.kl_divergence(cb, ours)


def test_every_torch_kl_pair_is_registered():
    from tapegrad.distributions.kl import _KL

    theirs = {(p.__name__, q.__name__) for p, q in TD.kl._KL_REGISTRY}
    ours = {(p.__name__, q.__name__) for p, q in _KL}
    assert theirs <= ours, sorted(theirs - ours)


def test_kumaraswamy_mode_is_the_density_argmax():
    """torch 2.13's Kumaraswamy.mode is nan whenever concentration0 > 1 (a wrong formula);
    ours is the argmax of the density, nan where there is no interior mode (as torch)."""
    c1 = np.array([2.0, 3.0, 1.5, 0.5, 2.0])
    c0 = np.array([3.0, 2.0, 1.2, 2.0, 0.7])
    t1 = tg.tensor(c1, requires_grad=True)
    mode = D.Kumaraswamy(t1, tg.tensor(c0)).mode
    x = np.linspace(1e-6, 1 - 1e-6, 400001)[:, None]
    pdf = c1 * c0 * x ** (c1 - 1) * (1 - x**c1) ** (c0 - 1)
    expected = np.where((c1 < 1) | (c0 < 1), np.nan, x[pdf.argmax(0), 0])
    np.testing.assert_allclose(mode.detach().numpy(), expected, atol=1e-5)
    (g,) = tg.autograd.grad(mode[:3].sum(), [t1])
    eps = 1e-6
    num = (
        D.Kumaraswamy(tg.tensor(c1 + eps), tg.tensor(c0)).mode.numpy()
        - D.Kumaraswamy(tg.tensor(c1 - eps), tg.tensor(c0)).mode.numpy()
    ) / (2 * eps)
    np.testing.assert_allclose(g.numpy()[:3], num[:3], rtol=1e-5)
    assert np.all(g.numpy()[3:] == 0)
