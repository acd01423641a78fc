"""Sampling of the added families: moments of seeded draws against torch's closed forms (or
torch's own draws where there is none), gradients of rsample-based expectations against the
gradient of torch's closed form, straight-through gradients, and validation errors (type and
message) as torch's."""

import math
import warnings

import numpy as np
import pytest

import tapegrad as tg
import tapegrad.distributions as D

torch = pytest.importorskip("torch")
TD = torch.distributions

N = 40000


def _lib(M):
    return tg if M is D else torch


def _T(M, x, rg=False):
    return _lib(M).tensor(np.asarray(x, dtype=np.float64), requires_grad=rg)


# name: build(M, T) with T(x) making a parameter tensor of M's library
FAMILIES = {
    "StudentT": lambda M, T: M.StudentT(T([5.0, 9.0]), T([0.5, -1.0]), T([1.0, 2.0])),
    "HalfNormal": lambda M, T: M.HalfNormal(T([0.5, 2.0])),
    "Gumbel": lambda M, T: M.Gumbel(T([0.0, 1.0]), T([1.0, 0.5])),
    "Weibull": lambda M, T: M.Weibull(T([1.0, 2.0]), T([1.5, 3.0])),
    "Pareto": lambda M, T: M.Pareto(T([1.0, 0.5]), T([6.0, 9.0])),
    "InverseGamma": lambda M, T: M.InverseGamma(T([6.0, 9.0]), T([2.0, 1.0])),
    "Kumaraswamy": lambda M, T: M.Kumaraswamy(T([2.0, 0.7]), T([3.0, 1.5])),
    "FisherSnedecor": lambda M, T: M.FisherSnedecor(T([4.0, 10.0]), T([12.0, 20.0])),
    "GeneralizedPareto": lambda M, T: M.GeneralizedPareto(
        T([0.0, 1.0]), T([1.0, 0.5]), T([0.1, -0.2])
    ),
    "ContinuousBernoulli": lambda M, T: M.ContinuousBernoulli(probs=T([0.2, 0.8])),
    "NegativeBinomial": lambda M, T: M.NegativeBinomial(T([3.0, 10.0]), probs=T([0.3, 0.6])),
    "LowRankMultivariateNormal": lambda M, T: M.LowRankMultivariateNormal(
        T([1.0, -1.0, 0.0]), T([[1.0, 0.0], [0.5, 1.0], [0.0, -1.0]]), T([0.5, 1.0, 0.2])
    ),
    "MixtureSameFamily": lambda M, T: M.MixtureSameFamily(
        M.Categorical(probs=T([0.3, 0.7])), M.Normal(T([-2.0, 1.0]), T([0.5, 1.0]))
    ),
    "Multinomial": lambda M, T: M.Multinomial(6, probs=T([0.2, 0.5, 0.3])),
    "Wishart": lambda M, T: M.Wishart(T(6.0), covariance_matrix=T([[2.0, 0.5], [0.5, 1.0]])),
}


@pytest.mark.parametrize("name", sorted(FAMILIES))
def test_sample_moments_match_torch_closed_forms(name):
    tg.manual_seed(0)
    ours = FAMILIES[name](D, lambda x: _T(D, x))
    theirs = FAMILIES[name](TD, lambda x: _T(TD, x))
    s = ours.sample((N,)).numpy()
    assert s.shape == (N,) + tuple(theirs.batch_shape) + tuple(theirs.event_shape)
    mean, var = theirs.mean.numpy(), theirs.variance.numpy()
    # five standard errors: fails on a wrong formula or a wrong sampler, not on noise
    np.testing.assert_array_less(np.abs(s.mean(0) - mean), 5 * np.sqrt(var / N) + 1e-9)
    np.testing.assert_allclose(s.var(0), var, rtol=0.1, err_msg=name)


def test_von_mises_circular_moments():
    tg.manual_seed(0)
    loc, kappa = np.array([0.5, -2.5, 3.0]), np.array([0.3, 2.0, 20.0])
    s = D.VonMises(_T(D, loc), _T(D, kappa)).sample((N,)).numpy()
    assert np.all((s >= -math.pi) & (s < math.pi))
    circ_mean = np.arctan2(np.sin(s).mean(0), np.cos(s).mean(0))
    np.testing.assert_allclose(np.angle(np.exp(1j * (circ_mean - loc))), 0.0, atol=0.08)
    variance = TD.VonMises(_T(TD, loc), _T(TD, kappa)).variance.numpy()  # 1 - I1/I0
    np.testing.assert_allclose(1 - np.cos(s - loc).mean(0), variance, rtol=0.05, atol=0.005)


def test_relaxed_categorical_argmax_is_categorical():
    """Gumbel-max: the argmax of a RelaxedOneHotCategorical draw is Categorical(probs) at any
    temperature; a RelaxedBernoulli draw exceeds 1/2 with probability probs."""
    tg.manual_seed(0)
    p = np.array([0.1, 0.6, 0.3])
    x = D.RelaxedOneHotCategorical(_T(D, 2.0), probs=_T(D, p)).rsample((N,)).numpy()
    np.testing.assert_allclose(x.sum(-1), 1.0, rtol=1e-12)
    np.testing.assert_allclose(np.bincount(x.argmax(-1), minlength=3) / N, p, atol=0.01)
    b = D.RelaxedBernoulli(_T(D, 0.5), probs=_T(D, [0.2, 0.7])).rsample((N,)).numpy()
    np.testing.assert_allclose((b > 0.5).mean(0), [0.2, 0.7], atol=0.01)


@pytest.mark.parametrize(
    "build",
    [
        lambda M, T: M.LogisticNormal(T([0.5, -0.5, 0.0]), T([0.5, 1.0, 0.3])),
        lambda M, T: M.LKJCholesky(3, T(2.0)),
    ],
    ids=["LogisticNormal", "LKJCholesky"],
)
def test_samples_match_torch_samples(build):
    """No closed-form moments: compare our draws' mean and spread with torch's draws."""
    tg.manual_seed(0)
    torch.manual_seed(0)
    ours = build(D, lambda x: _T(D, x)).sample((N,)).numpy()
    theirs = build(TD, lambda x: _T(TD, x)).sample((N,)).numpy()
    assert ours.shape == theirs.shape
    sd = theirs.std(0) + 1e-12
    np.testing.assert_array_less(
        np.abs(ours.mean(0) - theirs.mean(0)), 5 * sd * math.sqrt(2 / N) + 1e-9
    )
    np.testing.assert_allclose(ours.std(0), theirs.std(0), rtol=0.05, atol=1e-9)
    support = build(D, lambda x: _T(D, x)).support
    assert bool(support.check(tg.tensor(ours[:100])).numpy().all())


# The gradient of E[x^2] (estimated by rsample) against the gradient of torch's
# variance + mean^2, for each reparameterised family.
RSAMPLE = [
    "StudentT",
    "HalfNormal",
    "Gumbel",
    "Weibull",
    "Pareto",
    "InverseGamma",
    "Kumaraswamy",
    "FisherSnedecor",
    "GeneralizedPareto",
    "ContinuousBernoulli",
    "LowRankMultivariateNormal",
]


@pytest.mark.parametrize("name", RSAMPLE)
def test_rsample_gradient_matches_torch_closed_form(name):
    tg.manual_seed(1)
    tp, pp = [], []

    def T_ours(x):
        tp.append(_T(D, x, rg=True))
        return tp[-1]

    def T_theirs(x):
        pp.append(_T(TD, x, rg=True))
        return pp[-1]

    ours = FAMILIES[name](D, T_ours)
    theirs = FAMILIES[name](TD, T_theirs)
    assert ours.has_rsample and theirs.has_rsample
    x = ours.rsample((N,))
    est = (x**2).mean(0).sum()
    exact = (theirs.variance + theirs.mean**2).sum()
    g_ours = tg.autograd.grad(est, tp)
    g_theirs = torch.autograd.grad(exact, pp)
    for i, (a, b) in enumerate(zip(g_ours, g_theirs)):
        b = b.numpy()
        np.testing.assert_allclose(
            a.numpy(), b, rtol=0.1, atol=0.03 * np.abs(b).max() + 1e-3, err_msg=f"param {i}"
        )


def test_straight_through_sample_and_gradient():
    tg.manual_seed(0)
    logits = _T(D, [0.2, -1.0, 1.5], rg=True)
    d = D.OneHotCategoricalStraightThrough(logits=logits)
    x = d.rsample((4,))
    assert np.all(x.detach().numpy().sum(-1) == 1) and set(np.unique(x.detach().numpy())) <= {0, 1}
    w = tg.tensor([1.0, 2.0, 3.0], dtype=tg.float64)
    (g,) = tg.autograd.grad((x * w).sum(), [logits])
    plogits = _T(TD, [0.2, -1.0, 1.5], rg=True)
    probs = TD.OneHotCategoricalStraightThrough(logits=plogits).probs
    (expected,) = torch.autograd.grad((4 * probs * torch.tensor([1.0, 2.0, 3.0])).sum(), [plogits])
    np.testing.assert_allclose(g.numpy(), expected.numpy(), rtol=1e-10)


def _message(e):
    return str(e).replace("tapegrad", "torch")


# constructors that must raise as torch does: same type, same message
BAD = {
    "StudentT df": lambda M, T: M.StudentT(T([-1.0]), T([0.0]), T([1.0])),
    "HalfNormal scale": lambda M, T: M.HalfNormal(T([-1.0])),
    "Weibull concentration": lambda M, T: M.Weibull(T([1.0]), T([0.0])),
    "NegativeBinomial both": lambda M, T: M.NegativeBinomial(T([1.0]), T([0.5]), T([0.0])),
    "NegativeBinomial probs": lambda M, T: M.NegativeBinomial(T([1.0]), probs=T([1.0])),
    "Multinomial count": lambda M, T: M.Multinomial(2.5, probs=T([0.5, 0.5])),
    "RelaxedBernoulli both": lambda M, T: M.RelaxedBernoulli(T(1.0), T([0.5]), T([0.0])),
    "LowRank loc": lambda M, T: M.LowRankMultivariateNormal(T(0.0), T([[1.0]]), T([1.0])),
    "LowRank factor": lambda M, T: M.LowRankMultivariateNormal(
        T([0.0, 0.0]), T([[1.0]]), T([1.0, 1.0])
    ),
    "LowRank diag": lambda M, T: M.LowRankMultivariateNormal(T([0.0]), T([[1.0]]), T([1.0, 1.0])),
    "Mixture type": lambda M, T: M.MixtureSameFamily(
        M.Normal(T(0.0), T(1.0)), M.Normal(T([0.0]), T([1.0]))
    ),
    "Mixture count": lambda M, T: M.MixtureSameFamily(
        M.Categorical(probs=T([0.5, 0.5])), M.Normal(T([0.0, 1.0, 2.0]), T([1.0, 1.0, 1.0]))
    ),
    "LKJ dim": lambda M, T: M.LKJCholesky(1, T(1.0)),
    "Wishart df": lambda M, T: M.Wishart(T(0.5), covariance_matrix=T([[1.0, 0.0], [0.0, 1.0]])),
    "Pareto log_prob support": lambda M, T: M.Pareto(T([2.0]), T([1.0])).log_prob(T([1.0])),
    "Reshape sizes": lambda M, T: M.ReshapeTransform((2, 3), (4,)),
}


@pytest.mark.parametrize("name", sorted(BAD))
def test_validation_errors_as_torch(name):
    with pytest.raises(Exception) as theirs:
        BAD[name](TD, lambda x: _T(TD, x))
    with pytest.raises(Exception) as ours:
        BAD[name](D, lambda x: _T(D, x))
    assert ours.type is theirs.type, (ours.value, theirs.value)
    assert _message(ours.value) == str(theirs.value)


def test_validate_args_off_skips_checks():
    for M in (D, TD):  # neither library checks here
        M.Pareto(_T(M, [1.0]), _T(M, [-1.0]), validate_args=False)
        M.HalfNormal(_T(M, [-1.0]), validate_args=False).log_prob(_T(M, [-2.0]))
        M.Kumaraswamy(_T(M, [-1.0]), _T(M, [1.0]), validate_args=False)
    with pytest.raises(ValueError, match="distribution Chi2"):  # as torch: StudentT's Chi2
        D.StudentT(_T(D, [-1.0]), validate_args=False)
    with warnings.catch_warnings():
        warnings.simplefilter("error")
        D.Gumbel(_T(D, [0.0]), _T(D, [1.0])).log_prob(_T(D, [5.0]))


MC_ONLY = {  # rsample families with no closed-form moments: both sides Monte Carlo
    "RelaxedBernoulli": lambda M, T: M.RelaxedBernoulli(T(0.7), logits=T([0.5, -1.0])),
    "RelaxedOneHotCategorical": lambda M, T: M.RelaxedOneHotCategorical(
        T(0.8), logits=T([0.5, -1.0, 0.2])
    ),
    "LogisticNormal": lambda M, T: M.LogisticNormal(T([0.5, -0.5]), T([0.5, 1.0])),
}


@pytest.mark.parametrize("name", sorted(MC_ONLY))
def test_rsample_gradient_matches_torch_monte_carlo(name):
    """The gradient of E[x^2] by our rsample against torch's, both estimated from draws."""
    tg.manual_seed(2)
    torch.manual_seed(2)
    grads = []
    for M in (D, TD):
        params = []

        def T(x, M=M, params=params):
            params.append(_T(M, x, rg=True))
            return params[-1]

        x = MC_ONLY[name](M, T).rsample((N,))
        est = (x**2).mean(0).sum()
        grads.append((tg.autograd.grad if M is D else torch.autograd.grad)(est, params))
    for a, b in zip(*grads):
        b = b.numpy()
        np.testing.assert_allclose(a.numpy(), b, rtol=0.1, atol=0.05 * np.abs(b).max() + 1e-3)


@pytest.mark.filterwarnings("ignore:Singular sample")  # torch's Wishart sampler
@pytest.mark.parametrize(
    "name",
    [
        "StudentT",
        "Gumbel",
        "Multinomial",
        "LowRankMultivariateNormal",
        "Wishart",
        "VonMises",
        "RelaxedOneHotCategorical",
        "ContinuousBernoulli",
    ],
)
def test_float32_parameters_stay_float32(name):
    from .test_families_against_torch import ROWS

    build, params, value, _, _ = ROWS[name]
    ours = build(D, *[tg.tensor(np.asarray(p, dtype=np.float32)) for p in params])
    theirs = build(TD, *[torch.tensor(np.asarray(p, dtype=np.float32)) for p in params])
    a = ours.log_prob(tg.tensor(np.asarray(value, dtype=np.float32)))
    b = theirs.log_prob(torch.tensor(np.asarray(value, dtype=np.float32)))
    assert a.dtype == tg.float32 and b.dtype == torch.float32
    np.testing.assert_allclose(a.numpy(), b.numpy(), rtol=1e-4, atol=1e-4)
    assert ours.sample((3,)).dtype == tg.float32
