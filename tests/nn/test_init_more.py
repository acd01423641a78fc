"""nn.init's structured and truncated inits, and torch's deprecated spellings, against torch."""

import math

import numpy as np
import pytest

import tapegrad as tg
from tapegrad.nn import init


def _both(torch_mod, name, shape, *args, dtype="float32", **kwargs):
    t = getattr(torch_mod.nn.init, name)(torch_mod.empty(*shape, dtype=getattr(torch_mod, dtype)),
                                         *args, **kwargs)  # fmt: skip
    g = getattr(init, name)(tg.empty(*shape, dtype=getattr(tg, dtype)), *args, **kwargs)
    return t, g


# deterministic inits: the same values as torch
@pytest.mark.parametrize(
    "name,shape,args",
    [
        ("eye_", (3, 5), ()),
        ("eye_", (5, 3), ()),
        ("dirac_", (4, 3, 3), ()),
        ("dirac_", (6, 4, 3, 5), ()),
        ("dirac_", (6, 2, 3, 3, 3), (3,)),
        ("dirac_", (2, 5, 4, 4), ()),
    ],
)
@pytest.mark.parametrize("dtype", ["float32", "float64"])
def test_deterministic_inits_match_torch(torch_mod, name, shape, args, dtype):
    t, g = _both(torch_mod, name, shape, *args, dtype=dtype)
    assert g.dtype == getattr(tg, dtype)
    np.testing.assert_array_equal(g.numpy(), t.numpy())


@pytest.mark.parametrize(
    "name,shape,args,exc",
    [
        ("eye_", (3,), (), ValueError),
        ("eye_", (2, 3, 4), (), ValueError),
        ("dirac_", (3, 3), (), ValueError),
        ("dirac_", (4, 3, 3, 3), (3,), ValueError),
        ("orthogonal_", (3,), (), ValueError),
        ("sparse_", (3, 3, 3), (0.5,), ValueError),
    ],
)
def test_init_errors_match_torch(torch_mod, name, shape, args, exc):
    with pytest.raises(exc) as expected:
        getattr(torch_mod.nn.init, name)(torch_mod.empty(*shape), *args)
    with pytest.raises(exc) as got:
        getattr(init, name)(tg.empty(*shape), *args)
    assert str(got.value) == str(expected.value)


@pytest.mark.parametrize(
    "mean,std,a,b",
    [(0.0, 1.0, -2.0, 2.0), (0.0, 0.02, -0.04, 0.04), (0.5, 1.0, 0.0, 3.0), (0.0, 1.0, 1.0, 1.5)],
)
def test_trunc_normal_bounds_and_moments(torch_mod, mean, std, a, b):
    w = init.trunc_normal_(tg.empty(200, 200), mean, std, a, b)
    x = w.numpy()
    assert x.dtype == np.float32 and x.min() >= a and x.max() <= b
    # the truncated normal's mean and variance
    alpha, beta = (a - mean) / std, (b - mean) / std
    pdf = lambda z: math.exp(-z * z / 2) / math.sqrt(2 * math.pi)  # noqa: E731
    cdf = lambda z: (1 + math.erf(z / math.sqrt(2))) / 2  # noqa: E731
    mass = cdf(beta) - cdf(alpha)
    mu = mean + std * (pdf(alpha) - pdf(beta)) / mass
    var = std**2 * (1 + (alpha * pdf(alpha) - beta * pdf(beta)) / mass
                    - ((pdf(alpha) - pdf(beta)) / mass) ** 2)  # fmt: skip
    n = x.size
    assert abs(x.mean() - mu) < 5 * math.sqrt(var / n)
    assert abs(x.var() - var) < 0.02 * var
    # torch's samples agree on the same law (a loose two-sample check of the moments)
    t = torch_mod.nn.init.trunc_normal_(torch_mod.empty(200, 200), mean, std, a, b).numpy()
    assert abs(t.mean() - x.mean()) < 8 * math.sqrt(var / n)


def test_trunc_normal_warns_as_torch(torch_mod):
    with pytest.warns(UserWarning, match="mean is more than 2 std from") as expected:
        torch_mod.nn.init.trunc_normal_(torch_mod.empty(3), mean=10.0)
    with pytest.warns(UserWarning) as got:
        w = init.trunc_normal_(tg.empty(3), mean=10.0)
    assert str(got[0].message) == str(expected[0].message)
    assert got[0].filename == __file__
    assert bool((w.abs() <= 2).all())


@pytest.mark.parametrize("shape", [(4, 4), (3, 7), (7, 3), (6, 2, 3, 3)])
@pytest.mark.parametrize("gain", [1.0, 2.5])
def test_orthogonal_is_orthogonal_with_gain(shape, gain):
    w = init.orthogonal_(tg.empty(*shape, dtype=tg.float64), gain=gain)
    m = w.numpy().reshape(shape[0], -1)
    small = min(m.shape)
    gram = m @ m.T if m.shape[0] <= m.shape[1] else m.T @ m
    np.testing.assert_allclose(gram, gain**2 * np.eye(small), atol=1e-12)


def test_random_inits_follow_the_generator():
    for name, args in [("trunc_normal_", ()), ("orthogonal_", ()), ("sparse_", (0.3,))]:
        fn = getattr(init, name)
        tg.manual_seed(1)
        a = fn(tg.empty(5, 4), *args, generator=tg.Generator().manual_seed(3))
        tg.manual_seed(1)
        b = fn(tg.empty(5, 4), *args, generator=tg.Generator().manual_seed(3))
        c = fn(tg.empty(5, 4), *args, generator=tg.Generator().manual_seed(4))
        assert tg.equal(a, b) and not tg.equal(a, c), name


@pytest.mark.parametrize("sparsity", [0.0, 0.1, 0.5, 1.0])
def test_sparse_zeros_per_column_as_torch(torch_mod, sparsity):
    t, g = _both(torch_mod, "sparse_", (10, 6), sparsity, std=0.5)
    assert ((g.numpy() == 0).sum(0) == (t.numpy() == 0).sum(0)).all()
    assert ((g.numpy() == 0).sum(0) == math.ceil(sparsity * 10)).all()


def test_inits_bump_the_version_and_keep_the_leaf():
    p = tg.nn.Parameter(tg.empty(4, 4))
    for fn in [init.trunc_normal_, init.orthogonal_, init.eye_, lambda t: init.sparse_(t, 0.5)]:
        v = p._version
        assert fn(p) is p and p._version == v + 1 and p.requires_grad and p.is_leaf


DEPRECATED = [
    ("uniform", (4, 4), ()),
    ("normal", (4, 4), ()),
    ("constant", (4, 4), (0.5,)),
    ("eye", (4, 4), ()),
    ("dirac", (4, 4, 3), ()),
    ("xavier_uniform", (4, 4), ()),
    ("xavier_normal", (4, 4), ()),
    ("kaiming_uniform", (4, 4), ()),
    ("kaiming_normal", (4, 4), ()),
    ("orthogonal", (4, 4), ()),
    ("sparse", (4, 4), (0.5,)),
]


@pytest.mark.parametrize("name,shape,args", DEPRECATED)
def test_deprecated_names_warn_as_torch(torch_mod, name, shape, args):
    with pytest.warns(FutureWarning) as expected:
        getattr(torch_mod.nn.init, name)(torch_mod.empty(*shape), *args)
    with pytest.warns(FutureWarning) as got:
        out = getattr(init, name)(tg.empty(*shape), *args)
    assert str(got[0].message) == str(expected[0].message)
    assert got[0].filename == __file__
    assert getattr(init, name).__name__ == name
    assert out.shape == tuple(shape)


def test_every_torch_init_function_exists(torch_mod):
    names = [n for n in torch_mod.nn.init.__all__] if hasattr(torch_mod.nn.init, "__all__") else [
        n for n in dir(torch_mod.nn.init)
        if not n.startswith("_") and callable(getattr(torch_mod.nn.init, n))
        and getattr(getattr(torch_mod.nn.init, n), "__module__", "") == "torch.nn.init"
    ]  # fmt: skip
    assert [n for n in names if not hasattr(init, n)] == []


# -- kaiming's mode and zero-element tensors, and torch's private fan helpers (bugs found here:
# tapegrad refused mode="FAN_OUT", which torch lower-cases, named the modes differently, and
# filled zero-element tensors silently where torch warns)


@pytest.mark.parametrize("name", ["kaiming_uniform_", "kaiming_normal_"])
def test_kaiming_mode_any_case_and_errors_as_torch(torch_mod, name):
    for mode in ["FAN_OUT", "Fan_In"]:
        getattr(init, name)(tg.empty(3, 4), mode=mode)
    with pytest.raises(ValueError) as want:
        getattr(torch_mod.nn.init, name)(torch_mod.empty(3, 4), mode="x")
    with pytest.raises(ValueError) as got:
        getattr(init, name)(tg.empty(3, 4), mode="x")
    assert str(got.value) == str(want.value)
    # the mode changes the bound: fan_out of a (3, 4) weight is 3
    w = getattr(init, name)(tg.empty(300, 4), mode="FAN_OUT", nonlinearity="linear")
    assert np.std(w.numpy()) == pytest.approx(1 / math.sqrt(300), rel=0.1)


@pytest.mark.parametrize("name", ["kaiming_uniform_", "kaiming_normal_"])
@pytest.mark.parametrize("shape", [(0, 3), (0,), (2, 0, 3)])
def test_kaiming_zero_element_warns_as_torch(torch_mod, name, shape):
    with pytest.warns(UserWarning) as want:
        getattr(torch_mod.nn.init, name)(torch_mod.empty(*shape))
    with pytest.warns(UserWarning) as got:
        out = getattr(init, name)(tg.empty(*shape))
    assert (
        str(got[0].message)
        == str(want[0].message)
        == "Initializing zero-element tensors is a no-op"
    )
    assert got[0].filename == __file__ and out.shape == shape


@pytest.mark.parametrize("shape", [(4, 3), (8, 2, 3, 3), (5, 0)])
def test_private_fan_helpers_as_torch(torch_mod, shape):
    t, g = torch_mod.empty(*shape), tg.empty(*shape)
    assert init._calculate_fan_in_and_fan_out(g) == torch_mod.nn.init._calculate_fan_in_and_fan_out(
        t
    )
    for mode in ["fan_in", "FAN_OUT"]:
        assert init._calculate_correct_fan(g, mode) == torch_mod.nn.init._calculate_correct_fan(
            t, mode
        )


def test_private_no_grad_helpers_fill_in_place(torch_mod):
    p = tg.nn.Parameter(tg.empty(50, 40))
    cases = [
        ("_no_grad_uniform_", (-0.5, 0.5), lambda x: x.min() >= -0.5 and x.max() <= 0.5),
        ("_no_grad_normal_", (3.0, 0.1), lambda x: abs(x.mean() - 3.0) < 0.02),
        ("_no_grad_trunc_normal_", (0.0, 1.0, -0.1, 0.1), lambda x: abs(x).max() <= 0.1),
        ("_no_grad_fill_", (7.0,), lambda x: (x == 7).all()),
        ("_no_grad_zero_", (), lambda x: (x == 0).all()),
    ]
    for name, args, check in cases:
        assert hasattr(torch_mod.nn.init, name)
        assert getattr(init, name)(p, *args) is p and check(p.detach().numpy()), name
        assert p.requires_grad and p.grad_fn is None
