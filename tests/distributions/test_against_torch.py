"""tapegrad.distributions against torch.distributions: log_prob, entropy, moments, cdf/icdf,
KL divergences, and their gradients with respect to the parameters, in float64."""

import numpy as np
import pytest

import tapegrad as tg
import tapegrad.distributions as D

torch = pytest.importorskip("torch")
TD = torch.distributions

rng = np.random.default_rng(0)
POS = rng.uniform(0.5, 2.0, (3,))
POS2 = rng.uniform(0.5, 2.0, (3,))
REAL = rng.standard_normal(3)
PROB = rng.uniform(0.1, 0.9, (3,))
SIMPLEX = rng.dirichlet(np.ones(4), size=2)
L = np.tril(rng.standard_normal((3, 3))) + 3 * np.eye(3)

# name: (constructor name, params, a value in the support, methods to compare)
CASES = {
    "Normal": (
        "Normal",
        (REAL, POS),
        REAL + 0.3,
        ("mean", "variance", "stddev", "entropy", "cdf", "icdf"),
    ),
    "Uniform": (
        "Uniform",
        (REAL - 1, REAL + 1.5),
        REAL,
        ("mean", "variance", "entropy", "cdf", "icdf"),
    ),
    "Exponential": ("Exponential", (POS,), POS2, ("mean", "variance", "entropy", "cdf", "icdf")),
    "Laplace": ("Laplace", (REAL, POS), REAL - 0.4, ("mean", "variance", "entropy", "cdf", "icdf")),
    "Cauchy": ("Cauchy", (REAL, POS), REAL * 2, ("entropy", "cdf", "icdf")),
    "Gamma": ("Gamma", (POS, POS2), POS2, ("mean", "variance", "entropy")),
    "Beta": ("Beta", (POS, POS2), PROB, ("mean", "variance", "entropy")),
    "Dirichlet": (
        "Dirichlet",
        (POS[None].repeat(2, 0) + SIMPLEX[:, :3],),
        SIMPLEX[:, :3] / SIMPLEX[:, :3].sum(-1, keepdims=True),
        ("mean", "variance", "entropy"),
    ),
    "LogNormal": ("LogNormal", (REAL, POS), POS2, ("mean", "variance", "entropy")),
    "Chi2": ("Chi2", (POS * 3,), POS2, ("mean", "variance", "entropy")),
    "Bernoulli": ("Bernoulli", (PROB,), np.array([0.0, 1.0, 1.0]), ("mean", "variance", "entropy")),
    "Binomial": (
        "Binomial",
        (np.array([5.0, 7.0, 3.0]), PROB),
        np.array([2.0, 7.0, 0.0]),
        ("mean", "variance"),
    ),
    "Categorical": ("Categorical", (SIMPLEX,), np.array([3.0, 0.0]), ("entropy",)),
    "OneHotCategorical": (
        "OneHotCategorical",
        (SIMPLEX,),
        np.eye(4)[[1, 2]],
        ("mean", "variance", "entropy"),
    ),
    "Poisson": ("Poisson", (POS * 3,), np.array([0.0, 2.0, 5.0]), ("mean", "variance")),
    "Geometric": ("Geometric", (PROB,), np.array([0.0, 3.0, 1.0]), ("mean", "variance", "entropy")),
}
# Which parameters are differentiable (integer counts are not).
DIFF = {"Binomial": (1,)}


def _pair(name):
    ctor, params, value, methods = CASES[name]
    diff = DIFF.get(name, range(len(params)))
    tp = [tg.tensor(p, dtype=tg.float64, requires_grad=i in diff) for i, p in enumerate(params)]
    pp = [
        torch.tensor(p, dtype=torch.float64, requires_grad=i in diff) for i, p in enumerate(params)
    ]
    kw = {}
    if name in ("Bernoulli", "Geometric", "Categorical", "OneHotCategorical"):
        kw = {"probs": 0}
    if kw:
        return (
            getattr(D, ctor)(probs=tp[0]),
            getattr(TD, ctor)(probs=pp[0]),
            tp,
            pp,
            value,
            methods,
        )
    if name == "Binomial":
        return (
            D.Binomial(tp[0], probs=tp[1]),
            TD.Binomial(pp[0], probs=pp[1]),
            tp,
            pp,
            value,
            methods,
        )
    return (getattr(D, ctor)(*tp), getattr(TD, ctor)(*pp), tp, pp, value, methods)


def _compare(ours, theirs, tp, pp, what):
    np.testing.assert_allclose(
        ours.detach().numpy(), theirs.detach().numpy(), rtol=1e-7, atol=1e-9, err_msg=what
    )
    assert tuple(ours.shape) == tuple(theirs.shape), what
    if not theirs.requires_grad:
        return
    w = np.random.default_rng(1).standard_normal(tuple(theirs.shape))
    needs = [i for i, p in enumerate(pp) if p.requires_grad]
    tgrads = torch.autograd.grad(
        (theirs * torch.tensor(w)).sum(), [pp[i] for i in needs], allow_unused=True
    )
    ograds = tg.autograd.grad(
        (ours * tg.tensor(w)).sum(), [tp[i] for i in needs], allow_unused=True
    )
    for i, a, b in zip(needs, ograds, tgrads):
        if b is None:
            continue
        np.testing.assert_allclose(
            a.numpy(), b.numpy(), rtol=1e-6, atol=1e-9, err_msg=f"{what} d/dparam{i}"
        )


@pytest.mark.parametrize("name", sorted(CASES))
def test_log_prob_and_gradients(name):
    ours, theirs, tp, pp, value, _ = _pair(name)
    dt = torch.float64
    _compare(
        ours.log_prob(tg.tensor(value, dtype=tg.float64)),
        theirs.log_prob(torch.tensor(value, dtype=dt)),
        tp,
        pp,
        f"{name}.log_prob",
    )
    assert tuple(ours.batch_shape) == tuple(theirs.batch_shape)
    assert tuple(ours.event_shape) == tuple(theirs.event_shape)


@pytest.mark.parametrize("name", sorted(CASES))
def test_moments_entropy_cdf(name):
    methods = CASES[name][3]
    for m in methods:
        ours, theirs, tp, pp, value, _ = _pair(name)  # fresh: torch frees graphs it built once
        if m in ("cdf", "icdf"):
            arg = value if m == "cdf" else np.full(value.shape, 0.3)
            a = getattr(ours, m)(tg.tensor(arg, dtype=tg.float64))
            b = getattr(theirs, m)(torch.tensor(arg, dtype=torch.float64))
        elif m == "entropy":
            a, b = ours.entropy(), theirs.entropy()
        else:
            a, b = getattr(ours, m), getattr(theirs, m)
        _compare(a, b, tp, pp, f"{name}.{m}")


def test_multivariate_normal_parametrisations():
    loc = rng.standard_normal(3)
    cov = L @ L.T
    for key, mat in (
        ("scale_tril", L),
        ("covariance_matrix", cov),
        ("precision_matrix", np.linalg.inv(cov)),
    ):
        tl = tg.tensor(loc, requires_grad=True, dtype=tg.float64)
        tm = tg.tensor(mat, requires_grad=True, dtype=tg.float64)
        pl = torch.tensor(loc, requires_grad=True)
        pm = torch.tensor(mat, requires_grad=True)
        x = rng.standard_normal((2, 3))
        for what in ("log_prob", "entropy", "variance"):
            ours = D.MultivariateNormal(tl, **{key: tm})
            theirs = TD.MultivariateNormal(pl, **{key: pm})  # fresh: torch frees its graph
            if what == "log_prob":
                a, b = ours.log_prob(tg.tensor(x)), theirs.log_prob(torch.tensor(x))
            elif what == "entropy":
                a, b = ours.entropy(), theirs.entropy()
            else:
                a, b = ours.variance, theirs.variance
            _compare(a, b, [tl, tm], [pl, pm], f"{key} {what}")
        np.testing.assert_allclose(ours.covariance_matrix.detach().numpy(), cov, rtol=1e-10)


KL_PAIRS = [
    "Normal",
    "Exponential",
    "Gamma",
    "Beta",
    "Laplace",
    "Poisson",
    "Bernoulli",
    "Categorical",
    "OneHotCategorical",
    "LogNormal",
    "Dirichlet",
]


@pytest.mark.parametrize("name", KL_PAIRS)
def test_kl_divergence(name):
    p_ours, p_theirs, tp, pp, _, _ = _pair(name)
    # q: the same family with other parameters
    ctor, params, value, _ = CASES[name]
    shifted = [
        np.abs(p) * 1.3 + 0.05 if i == 0 or name != "Normal" else p for i, p in enumerate(params)
    ]
    if name in ("Bernoulli",):
        shifted = [np.clip(params[0] * 0.7 + 0.1, 0.05, 0.95)]
    if name in ("Categorical", "OneHotCategorical"):
        shifted = [params[0][::-1].copy()]
    tq = [tg.tensor(p, dtype=tg.float64) for p in shifted]
    pq = [torch.tensor(p, dtype=torch.float64) for p in shifted]
    if name in ("Bernoulli", "Categorical", "OneHotCategorical"):
        q_ours, q_theirs = getattr(D, ctor)(probs=tq[0]), getattr(TD, ctor)(probs=pq[0])
    else:
        q_ours, q_theirs = getattr(D, ctor)(*tq), getattr(TD, ctor)(*pq)
    _compare(
        D.kl_divergence(p_ours, q_ours), TD.kl_divergence(p_theirs, q_theirs), tp, pp, f"KL {name}"
    )


def test_kl_mvn_and_independent():
    loc = rng.standard_normal((2, 3))
    tl = tg.tensor(loc, requires_grad=True)
    pl = torch.tensor(loc, requires_grad=True)
    q_l = np.tril(rng.standard_normal((3, 3))) + 2 * np.eye(3)
    ours = D.kl_divergence(
        D.MultivariateNormal(tl, scale_tril=tg.tensor(L)),
        D.MultivariateNormal(tg.zeros(3, dtype=tg.float64), scale_tril=tg.tensor(q_l)),
    )
    theirs = TD.kl_divergence(
        TD.MultivariateNormal(pl, scale_tril=torch.tensor(L)),
        TD.MultivariateNormal(torch.zeros(3, dtype=torch.float64), scale_tril=torch.tensor(q_l)),
    )
    _compare(ours, theirs, [tl], [pl], "KL MVN")
    s = tg.tensor(POS, requires_grad=True)
    ps = torch.tensor(POS, requires_grad=True)
    ours = D.kl_divergence(
        D.Independent(D.Normal(tg.zeros(3, dtype=tg.float64), s), 1),
        D.Independent(D.Normal(tg.ones(3, dtype=tg.float64), tg.ones(3, dtype=tg.float64)), 1),
    )
    theirs = TD.kl_divergence(
        TD.Independent(TD.Normal(torch.zeros(3, dtype=torch.float64), ps), 1),
        TD.Independent(
            TD.Normal(torch.ones(3, dtype=torch.float64), torch.ones(3, dtype=torch.float64)), 1
        ),
    )
    _compare(ours, theirs, [s], [ps], "KL Independent")


def test_transformed_distribution_matches_torch():
    loc = tg.tensor(REAL, requires_grad=True)
    ploc = torch.tensor(REAL, requires_grad=True)
    ts = [D.AffineTransform(1.0, 2.0), D.SigmoidTransform()]
    pts = [TD.AffineTransform(1.0, 2.0), TD.SigmoidTransform()]
    ours = D.TransformedDistribution(D.Normal(loc, tg.ones(3, dtype=tg.float64)), ts)
    theirs = TD.TransformedDistribution(TD.Normal(ploc, torch.ones(3, dtype=torch.float64)), pts)
    x = PROB
    _compare(
        ours.log_prob(tg.tensor(x)),
        theirs.log_prob(torch.tensor(x)),
        [loc],
        [ploc],
        "affine+sigmoid",
    )
    ours = D.TransformedDistribution(
        D.Normal(loc, tg.ones(3, dtype=tg.float64)), [D.TanhTransform()]
    )
    theirs = TD.TransformedDistribution(
        TD.Normal(ploc, torch.ones(3, dtype=torch.float64)), [TD.TanhTransform()]
    )
    _compare(
        ours.log_prob(tg.tensor(x - 0.5)),
        theirs.log_prob(torch.tensor(x - 0.5)),
        [loc],
        [ploc],
        "tanh",
    )
    ind = D.Independent(D.Normal(loc, tg.ones(3, dtype=tg.float64)), 1)
    pind = TD.Independent(TD.Normal(ploc, torch.ones(3, dtype=torch.float64)), 1)
    _compare(
        ind.log_prob(tg.tensor(x)), pind.log_prob(torch.tensor(x)), [loc], [ploc], "Independent"
    )
    assert tuple(ind.event_shape) == (3,) and tuple(ind.batch_shape) == ()


def test_standard_gamma_gradient_matches_torch():
    from tapegrad.distributions.gamma import _dgamma_dalpha

    alpha = np.array([0.3, 0.8, 1.0, 2.5, 7.0, 30.0])
    x = np.array([0.05, 0.6, 1.2, 2.0, 6.5, 33.0])
    ours = _dgamma_dalpha(x, alpha)
    theirs = torch._standard_gamma_grad(torch.tensor(alpha), torch.tensor(x)).numpy()
    np.testing.assert_allclose(ours, theirs, rtol=1e-4)
