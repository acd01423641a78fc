"""The structured transforms, ``biject_to``/``transform_to`` and torch's submodule names,
against torch: forward, inverse, log|det J| and their gradients; shapes, domains, codomains."""

import importlib
import types

import numpy as np
import pytest

import tapegrad as tg
import tapegrad.distributions as D

torch = pytest.importorskip("torch")
TD = torch.distributions

rng = np.random.default_rng(7)
SPD = rng.standard_normal((2, 3, 3))
SPD = SPD @ np.swapaxes(SPD, -1, -2) + 3 * np.eye(3)


def _lib(M):
    return tg if M is D else torch


# name: (build(M), x, check log_abs_det_jacobian)
TRANSFORMS = {
    "Abs": (lambda M: M.AbsTransform(), rng.standard_normal((2, 3)), False),
    "Softplus": (lambda M: M.SoftplusTransform(), rng.standard_normal((2, 3)), True),
    "StickBreaking": (lambda M: M.StickBreakingTransform(), rng.standard_normal((2, 3)), True),
    "LowerCholesky": (lambda M: M.LowerCholeskyTransform(), rng.standard_normal((2, 3, 3)), False),
    "PositiveDefinite": (
        lambda M: M.PositiveDefiniteTransform(),
        rng.standard_normal((2, 3, 3)),
        False,
    ),
    "CorrCholesky": (lambda M: M.CorrCholeskyTransform(), rng.standard_normal((2, 6)), True),
    "Reshape": (lambda M: M.ReshapeTransform((2, 3), (6,)), rng.standard_normal((4, 2, 3)), False),
    "Independent": (
        lambda M: M.IndependentTransform(M.SigmoidTransform(), 1),
        rng.standard_normal((2, 3)),
        True,
    ),
    "Cat": (
        lambda M: M.CatTransform(
            [M.ExpTransform(), M.AffineTransform(1.0, 2.0)], dim=-1, lengths=[1, 2]
        ),
        rng.standard_normal((2, 3)),
        True,
    ),
    "Stack": (
        lambda M: M.StackTransform([M.ExpTransform(), M.SigmoidTransform()], dim=1),
        rng.standard_normal((3, 2)),
        True,
    ),
    "CumulativeDistribution": (
        lambda M: M.CumulativeDistributionTransform(
            M.Normal(_lib(M).tensor(0.5, dtype=_lib(M).float64), 2.0)
        ),
        rng.standard_normal((2, 3)),
        True,
    ),
    "Compose(StickBreaking, Affine)": (
        lambda M: M.ComposeTransform([M.StickBreakingTransform(), M.AffineTransform(0.0, 3.0)]),
        rng.standard_normal((2, 3)),
        True,
    ),
    "Power(-1)": (lambda M: M.PowerTransform(-1.0), rng.uniform(0.5, 2, (3,)), True),
}


def _grad_check(name, a, b, xo, xt):
    np.testing.assert_allclose(a.detach().numpy(), b.detach().numpy(), rtol=1e-9, atol=1e-12)
    assert tuple(a.shape) == tuple(b.shape), name
    w = np.random.default_rng(1).standard_normal(tuple(b.shape))
    (ga,) = tg.autograd.grad((a * tg.tensor(w)).sum(), [xo])
    (gb,) = torch.autograd.grad((b * torch.tensor(w)).sum(), [xt])
    np.testing.assert_allclose(ga.numpy(), gb.numpy(), rtol=1e-7, atol=1e-10, err_msg=name)


@pytest.mark.parametrize("name", sorted(TRANSFORMS))
def test_transform_against_torch(name):
    build, x, ladj = TRANSFORMS[name]
    ours, theirs = build(D), build(TD)
    xo = tg.tensor(x, requires_grad=True)
    xt = torch.tensor(x, requires_grad=True)
    yo, yt = ours(xo), theirs(xt)
    _grad_check(f"{name} forward", yo, yt, xo, xt)
    y = yt.detach().numpy()
    yo2 = tg.tensor(y, requires_grad=True)
    yt2 = torch.tensor(y, requires_grad=True)
    _grad_check(f"{name} inverse", ours.inv(yo2), theirs.inv(yt2), yo2, yt2)
    if ladj:
        _grad_check(
            f"{name} log_abs_det_jacobian",
            ours.log_abs_det_jacobian(xo, ours(xo)),
            theirs.log_abs_det_jacobian(xt, theirs(xt)),
            xo,
            xt,
        )
    assert tuple(ours.forward_shape(x.shape)) == tuple(theirs.forward_shape(x.shape))
    assert tuple(ours.inverse_shape(y.shape)) == tuple(theirs.inverse_shape(y.shape))
    assert ours.domain.event_dim == theirs.domain.event_dim
    assert ours.codomain.event_dim == theirs.codomain.event_dim
    assert ours.bijective == theirs.bijective
    assert bool(ours.codomain.check(yo).numpy().all())


def test_stick_breaking_transformed_distribution_shapes():
    """A transform that changes the event shape (Note [Transformed shapes])."""
    loc = tg.zeros(3, dtype=tg.float64, requires_grad=True)
    ploc = torch.zeros(3, dtype=torch.float64, requires_grad=True)
    ours = D.TransformedDistribution(D.Normal(loc, 1.0), D.StickBreakingTransform())
    theirs = TD.TransformedDistribution(TD.Normal(ploc, 1.0), TD.StickBreakingTransform())
    assert tuple(ours.event_shape) == tuple(theirs.event_shape) == (4,)
    assert tuple(ours.batch_shape) == tuple(theirs.batch_shape) == ()
    v = rng.dirichlet(np.ones(4), 2)
    _grad_check(
        "log_prob", ours.log_prob(tg.tensor(v)), theirs.log_prob(torch.tensor(v)), loc, ploc
    )
    assert tuple(ours.sample((5,)).shape) == (5, 4)


CONSTRAINTS = {
    "real": lambda C: C.real,
    "positive": lambda C: C.positive,
    "nonnegative": lambda C: C.nonnegative,
    "greater_than(1)": lambda C: C.greater_than(1.0),
    "greater_than_eq(-1)": lambda C: C.greater_than_eq(-1.0),
    "less_than(2)": lambda C: C.less_than(2.0),
    "unit_interval": lambda C: C.unit_interval,
    "interval(1, 3)": lambda C: C.interval(1.0, 3.0),
    "half_open_interval(0, 2)": lambda C: C.half_open_interval(0.0, 2.0),
    "simplex": lambda C: C.simplex,
    "real_vector": lambda C: C.real_vector,
    "independent(positive, 1)": lambda C: C.independent(C.positive, 1),
    "corr_cholesky": lambda C: C.corr_cholesky,
    "lower_cholesky": lambda C: C.lower_cholesky,
    "positive_definite": lambda C: C.positive_definite,
    "cat": lambda C: C.cat([C.positive, C.real], 1, [1, 2]),
    "stack": lambda C: C.stack([C.positive, C.unit_interval], 1),
}
X = {"corr_cholesky": rng.standard_normal((2, 3))}
X_MATRIX = rng.standard_normal((2, 3, 3))


@pytest.mark.parametrize("registry", ["biject_to", "transform_to"])
@pytest.mark.parametrize("cname", sorted(CONSTRAINTS))
def test_registry_against_torch(registry, cname):
    try:
        theirs = getattr(TD, registry)(CONSTRAINTS[cname](TD.constraints))
    except NotImplementedError as e:
        with pytest.raises(NotImplementedError, match=str(e)):
            getattr(D, registry)(CONSTRAINTS[cname](D.constraints))
        return
    ours = getattr(D, registry)(CONSTRAINTS[cname](D.constraints))
    matrix = cname in ("lower_cholesky", "positive_definite")
    x = X_MATRIX if matrix else X.get(cname, rng.standard_normal((2, 3)))
    if cname == "stack":
        x = x[:, :2]
    xo, xt = tg.tensor(x, requires_grad=True), torch.tensor(x, requires_grad=True)
    yo, yt = ours(xo), theirs(xt)
    _grad_check(f"{registry}({cname})", yo, yt, xo, xt)
    assert bool(CONSTRAINTS[cname](D.constraints).check(yo).numpy().all())
    if registry == "biject_to":
        np.testing.assert_allclose(ours.inv(yo).detach().numpy(), x, rtol=1e-6, atol=1e-8)


def test_registry_register_and_errors():
    reg = D.constraint_registry.ConstraintRegistry()
    reg.register(D.constraints.positive, lambda c: D.ExpTransform())
    assert isinstance(reg(D.constraints.greater_than(3.0)), D.ExpTransform)  # by class
    with pytest.raises(NotImplementedError, match="Cannot transform _Boolean constraints"):
        reg(D.constraints.boolean)


def test_torch_submodule_names():
    """Every torch.distributions submodule exists here, holding the same public classes."""
    names = [
        n for n in dir(TD) if isinstance(getattr(TD, n), types.ModuleType) and not n.startswith("_")
    ]
    assert len(names) > 40
    for n in names:
        ours = importlib.import_module(f"tapegrad.distributions.{n}")
        assert getattr(D, n) is ours
        theirs = getattr(TD, n)
        classes = [
            c
            for c in getattr(theirs, "__all__", [])
            if isinstance(getattr(theirs, c, None), type) and isinstance(getattr(D, c, None), type)
        ]
        for c in classes:
            assert getattr(ours, c) is getattr(D, c), f"{n}.{c}"
    from tapegrad.distributions.normal import Normal

    assert Normal is D.Normal
