"""Every activation module against torch: repr, values, input and parameter gradients."""

import numpy as np
import pytest

import tapegrad as tg

from ._compare import compare_module

rng = np.random.default_rng(0)

MODULES = [
    ("ELU", ()), ("ELU", (0.5,)), ("SELU", ()), ("CELU", (1.3,)), ("LeakyReLU", (0.2,)),
    ("Hardtanh", (-0.5, 2.0)), ("ReLU6", ()), ("Hardsigmoid", ()), ("Hardswish", ()),
    ("Mish", ()), ("Softsign", ()), ("Softshrink", (0.3,)), ("Hardshrink", (0.3,)),
    ("Tanhshrink", ()), ("Threshold", (0.1, 20.0)), ("LogSigmoid", ()), ("GLU", ()),
    ("GLU", (1,)), ("Softmin", (1,)), ("Softmax2d", ()), ("PReLU", ()), ("PReLU", (4, 0.1)),
    ("RReLU", ()), ("SiLU", ()), ("GELU", ("tanh",)), ("Softplus", (2.0, 1.0)),
    ("LogSoftmax", (1,)), ("Softmax", (-1,)), ("ReLU", ()), ("Sigmoid", ()), ("Tanh", ()),
]  # fmt: skip


@pytest.mark.parametrize("name, args", MODULES, ids=[f"{n}{a}" for n, a in MODULES])
def test_activation_module_matches_torch(name, args, torch_mod):
    ours = getattr(tg.nn, name)(*args).double()
    theirs = getattr(torch_mod.nn, name)(*args).double()
    assert repr(ours) == repr(theirs)
    x = rng.uniform(-7, 7, size=(2, 4, 3, 6))
    # eval: RReLU uses its mean slope (training draws random slopes)
    compare_module(ours, theirs, torch_mod, x, train=False, atol=1e-7)


def test_inplace_flag_repr(torch_mod):
    for name, args in (("ELU", (0.5, True)), ("ReLU6", (True,)), ("Threshold", (0.1, 2, True))):
        assert repr(getattr(tg.nn, name)(*args)) == repr(getattr(torch_mod.nn, name)(*args))


def test_activation_float32_keeps_dtype(torch_mod):
    x = rng.standard_normal((3, 5)).astype(np.float32)
    for name in ("elu", "selu", "hardswish", "mish", "logsigmoid", "softsign"):
        out = getattr(tg.nn.functional, name)(tg.tensor(x))
        ref = getattr(torch_mod.nn.functional, name)(torch_mod.tensor(x))
        assert out.dtype == tg.float32
        np.testing.assert_allclose(out.numpy(), ref.numpy(), atol=1e-6, rtol=1e-5)


def test_rrelu_training_draws_slopes_in_range():
    x = -tg.ones(1000, dtype=tg.float64)
    out = tg.nn.functional.rrelu(x, 0.1, 0.3, training=True).numpy()
    assert np.all((out <= -0.1) & (out >= -0.3)) and np.std(out) > 0.03
    pos = tg.nn.functional.rrelu(tg.ones(5), training=True).numpy()
    np.testing.assert_array_equal(pos, np.ones(5))


def test_activation_errors():
    with pytest.raises(RuntimeError, match="Halving dimension must be even"):
        tg.nn.functional.glu(tg.randn(3, 5))
    with pytest.raises(RuntimeError, match="Mismatch of parameter numbers"):
        tg.nn.functional.prelu(tg.randn(2, 3), tg.ones(4))
    with pytest.raises(ValueError, match="min_val cannot be greater"):
        tg.nn.functional.hardtanh(tg.zeros(2), 1.0, -1.0)
    with pytest.raises(AssertionError, match=r"max_val \(-1.0\) must be greater than min_val"):
        tg.nn.Hardtanh(1.0, -1.0)
    with pytest.raises(TypeError, match="unexpected keyword"):
        tg.elu(tg.randn(3), beta=2)


def test_activation_second_derivatives_match_torch(torch_mod):
    x = rng.uniform(-2.5, 2.5, size=(7,))
    for name in ("elu", "selu", "celu", "mish", "softsign", "logsigmoid", "hardswish"):
        res = []
        for m in (tg, torch_mod):
            t = m.tensor(x, requires_grad=True)
            y = getattr(m.nn.functional, name)(t)
            (g,) = m.autograd.grad(y.sum(), [t], create_graph=True)
            (gg,) = m.autograd.grad(g.sum(), [t])
            res.append(gg.detach().numpy())
        np.testing.assert_allclose(res[0], res[1], atol=1e-10, err_msg=name)


@pytest.mark.parametrize("shape", [(), (3,)])
def test_prelu_per_channel_weight_needs_a_channel_dim_like_torch(shape, torch_mod):
    # torch: a 1-D input is one channel (not shape[0] channels), a 0-d input is refused
    x = np.linspace(-1.0, 1.0, int(np.prod(shape))).reshape(shape)
    w = np.array([0.1, 0.2, 0.3])
    with pytest.raises(RuntimeError) as theirs:
        torch_mod.nn.functional.prelu(torch_mod.tensor(x), torch_mod.tensor(w))
    with pytest.raises(RuntimeError) as ours:
        tg.nn.functional.prelu(tg.tensor(x), tg.tensor(w))
    assert str(ours.value) == f"prelu: {theirs.value}"
    # one weight for every element still works, as in torch
    out = tg.nn.functional.prelu(tg.tensor(x), tg.tensor(w[:1])).numpy()
    ref = torch_mod.nn.functional.prelu(torch_mod.tensor(x), torch_mod.tensor(w[:1])).numpy()
    np.testing.assert_allclose(out, ref)
