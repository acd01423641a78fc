"""nn.init against PyTorch's formulas, seeding, and default layer initialisation."""

import math

import numpy as np
import pytest

import tapegrad as tg
from tapegrad.nn import init


def test_calculate_gain_and_fans_match_torch(torch_mod):
    for name, param in [
        ("relu", None),
        ("tanh", None),
        ("leaky_relu", math.sqrt(5)),
        ("linear", None),
        ("sigmoid", None),
        ("selu", None),
    ]:
        assert init.calculate_gain(name, param) == pytest.approx(
            torch_mod.nn.init.calculate_gain(name, param)
        )
    for shape in [(4, 3), (8, 2, 3, 3)]:
        assert init._fans(tg.zeros(*shape)) == torch_mod.nn.init._calculate_fan_in_and_fan_out(
            torch_mod.zeros(*shape)
        )
    with pytest.raises(ValueError, match="fewer than 2"):
        init.xavier_uniform_(tg.zeros(3))


@pytest.mark.parametrize(
    "fn,kwargs,bound,std",
    [
        (init.uniform_, {"a": -2.0, "b": 3.0}, None, 5 / math.sqrt(12)),
        (init.normal_, {"mean": 1.0, "std": 0.5}, None, 0.5),
        (init.xavier_uniform_, {}, math.sqrt(6 / (200 + 100)), math.sqrt(2 / 300)),
        (init.xavier_normal_, {"gain": 2.0}, None, 2 * math.sqrt(2 / 300)),
        (init.kaiming_uniform_, {"a": math.sqrt(5)}, 1 / math.sqrt(100), 1 / math.sqrt(300)),
        (
            init.kaiming_normal_,
            {"mode": "fan_out", "nonlinearity": "relu"},
            None,
            math.sqrt(2 / 200),
        ),
    ],
)
def test_random_init_statistics(fn, kwargs, bound, std):
    t = tg.zeros(200, 100)
    v = t._version
    assert fn(t, **kwargs) is t
    assert t._version > v
    assert t.dtype == tg.float32
    assert t._data.std() == pytest.approx(std, rel=0.03)
    if bound is not None:
        assert np.abs(t._data).max() <= bound


def test_constant_inits_and_generator():
    t = tg.empty(3, 2)
    np.testing.assert_array_equal(init.zeros_(t)._data, 0)
    np.testing.assert_array_equal(init.ones_(t)._data, 1)
    np.testing.assert_array_equal(init.constant_(t, 0.5)._data, 0.5)
    a = init.normal_(tg.empty(5), generator=tg.Generator(7))._data.copy()
    b = init.normal_(tg.empty(5), generator=tg.Generator(7))._data.copy()
    np.testing.assert_array_equal(a, b)


def test_manual_seed_makes_models_reproducible():
    tg.manual_seed(42)
    m1 = tg.nn.Sequential(tg.nn.Conv2d(1, 2, 3), tg.nn.Linear(4, 3))
    tg.manual_seed(42)
    m2 = tg.nn.Sequential(tg.nn.Conv2d(1, 2, 3), tg.nn.Linear(4, 3))
    for p1, p2 in zip(m1.parameters(), m2.parameters(), strict=True):
        np.testing.assert_array_equal(p1._data, p2._data)


@pytest.mark.parametrize(
    "layer", [lambda nn: nn.Linear(50, 40), lambda nn: nn.Conv2d(6, 8, 3, groups=2)]
)
def test_default_init_bounds_as_torch(layer, torch_mod):
    ours, theirs = layer(tg.nn), layer(torch_mod.nn)
    for (name, p), (_, q) in zip(ours.named_parameters(), theirs.named_parameters(), strict=True):
        assert p.shape == tuple(q.shape) and p.dtype == tg.float32
        bound = np.abs(q.detach().numpy()).max()
        fan_in = (
            int(np.prod(p.shape[1:])) if name == "weight" else int(np.prod(ours.weight.shape[1:]))
        )
        assert np.abs(p._data).max() <= 1 / math.sqrt(fan_in) + 1e-7
        assert np.abs(p._data).max() > 0.8 / math.sqrt(fan_in)  # the full range is used
        assert bound <= 1 / math.sqrt(fan_in) + 1e-7


def test_norm_and_embedding_defaults(torch_mod):
    for m in (tg, torch_mod):
        bn = m.nn.BatchNorm2d(3)
        np.testing.assert_array_equal(bn.weight.detach().numpy(), 1)
        np.testing.assert_array_equal(bn.bias.detach().numpy(), 0)
        np.testing.assert_array_equal(bn.running_var.numpy(), 1)
        emb = m.nn.Embedding(100, 20, padding_idx=3)
        w = emb.weight.detach().numpy()
        np.testing.assert_array_equal(w[3], 0)
        assert w.std() == pytest.approx(1.0, rel=0.05) and w.dtype == np.float32
