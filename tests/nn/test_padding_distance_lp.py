"""Padding layers, PairwiseDistance/CosineSimilarity, BatchNorm3d and LP pooling, against
torch: values, gradients, reprs and errors."""

from __future__ import annotations

import numpy as np
import pytest

import tapegrad as tg

KINDS = ["Constant", "Zero", "Reflection", "Replication", "Circular"]


def _both(torch_mod, fn, *arrays):
    """``fn(lib, *tensors)`` for both libraries: outputs and the inputs' gradients."""
    results = []
    for m in (tg, torch_mod):
        ts = [m.tensor(a, requires_grad=True) for a in arrays]
        out = fn(m, *ts)
        out.backward(m.tensor(np.cos(np.arange(out.numel())).reshape(tuple(out.shape))))
        results.append([out.detach().numpy()] + [t.grad.numpy() for t in ts])
    return results


@pytest.mark.parametrize("n", [1, 2, 3])
@pytest.mark.parametrize("kind", KINDS)
@pytest.mark.parametrize("padding", ["int", "tuple"])
def test_padding_layers_match_torch(torch_mod, kind, n, padding):
    pad = 2 if padding == "int" else (1, 2, 0, 1, 2, 0)[: 2 * n]
    args = (pad, -1.5) if kind == "Constant" else (pad,)
    name = f"{kind}Pad{n}d"
    ours, theirs = getattr(tg.nn, name)(*args), getattr(torch_mod.nn, name)(*args)
    assert repr(ours) == repr(theirs)
    assert ours.padding == theirs.padding
    x = np.random.default_rng(n).standard_normal((2, 3, 4, 5, 6)[3 - n :])
    got, want = _both(torch_mod, lambda m, t: (ours if m is tg else theirs)(t), x)
    for a, b in zip(got, want, strict=True):
        np.testing.assert_allclose(a, b, rtol=1e-12, atol=1e-12)


@pytest.mark.parametrize("n", [1, 2, 3])
def test_circular_pad_checks_the_rank_like_torch(torch_mod, n):
    x = np.zeros((1,) * (n + 3))
    with pytest.raises(ValueError) as theirs:
        getattr(torch_mod.nn, f"CircularPad{n}d")(1)(torch_mod.tensor(x))
    with pytest.raises(ValueError) as ours:
        getattr(tg.nn, f"CircularPad{n}d")(1)(tg.tensor(x))
    assert str(ours.value) == str(theirs.value)


@pytest.mark.parametrize(
    "name, args",
    [
        ("PairwiseDistance", ()),
        ("PairwiseDistance", (1.0, 1e-3, True)),
        ("CosineSimilarity", ()),
        ("CosineSimilarity", (0, 1e-4)),
    ],
)
def test_distance_modules_match_torch(torch_mod, name, args):
    rng = np.random.default_rng(0)
    a, b = rng.standard_normal((2, 4, 5))
    ours, theirs = getattr(tg.nn, name)(*args), getattr(torch_mod.nn, name)(*args)
    assert repr(ours) == repr(theirs)
    got, want = _both(torch_mod, lambda m, x, y: (ours if m is tg else theirs)(x, y), a, b)
    for u, v in zip(got, want, strict=True):
        np.testing.assert_allclose(u, v, rtol=1e-10, atol=1e-12)


def test_triplet_margin_with_distance_loss_has_torchs_default_distance(torch_mod):
    assert repr(tg.nn.TripletMarginWithDistanceLoss()) == repr(
        torch_mod.nn.TripletMarginWithDistanceLoss()
    )
    rng = np.random.default_rng(1)
    a, p, n = rng.standard_normal((3, 4, 6))
    got, want = _both(
        torch_mod, lambda m, *t: m.nn.TripletMarginWithDistanceLoss(swap=True)(*t), a, p, n
    )
    for u, v in zip(got, want, strict=True):
        np.testing.assert_allclose(u, v, rtol=1e-10, atol=1e-12)


def test_batch_norm_3d_trains_and_evaluates_like_torch(torch_mod):
    rng = np.random.default_rng(2)
    x = rng.standard_normal((3, 4, 2, 3, 5))
    ours, theirs = tg.nn.BatchNorm3d(4).double(), torch_mod.nn.BatchNorm3d(4).double()
    assert repr(ours) == repr(theirs)
    got, want = _both(torch_mod, lambda m, t: (ours if m is tg else theirs)(t), x)
    for u, v in zip(got, want, strict=True):
        np.testing.assert_allclose(u, v, rtol=1e-10, atol=1e-12)
    for key, value in theirs.state_dict().items():
        np.testing.assert_allclose(ours.state_dict()[key].numpy(), value.numpy(), rtol=1e-12)
    ours.eval()
    theirs.eval()
    np.testing.assert_allclose(
        ours(tg.tensor(x)).detach().numpy(),
        theirs(torch_mod.tensor(x)).detach().numpy(),
        rtol=1e-10,
        atol=1e-12,
    )
    with pytest.raises(ValueError, match=r"expected 5D input \(got 4D input\)"):
        ours(tg.tensor(x[0]))


@pytest.mark.parametrize(
    "n, p, kernel, stride, ceil",
    [
        (1, 2.0, 3, None, False),
        (1, 1.5, 2, 1, True),
        (2, 2.0, (2, 3), 2, False),
        (2, 3.0, 2, None, True),
        (3, 2.0, 2, None, False),
        (3, 1.0, (1, 2, 2), 1, False),
    ],
)
def test_lp_pool_matches_torch(torch_mod, n, p, kernel, stride, ceil):
    x = np.random.default_rng(n).random((2, 3, 5, 6, 7)[3 - n :]) + 0.1
    fname = f"lp_pool{n}d"
    got, want = _both(
        torch_mod,
        lambda m, t: getattr(m.nn.functional, fname)(t, p, kernel, stride, ceil),
        x,
    )
    for u, v in zip(got, want, strict=True):
        np.testing.assert_allclose(u, v, rtol=1e-10, atol=1e-12)
    ours = getattr(tg.nn, f"LPPool{n}d")(p, kernel, stride, ceil)
    theirs = getattr(torch_mod.nn, f"LPPool{n}d")(p, kernel, stride, ceil)
    assert repr(ours) == repr(theirs)
    np.testing.assert_allclose(
        ours(tg.tensor(x)).numpy(), theirs(torch_mod.tensor(x)).numpy(), rtol=1e-10
    )


DTYPES = [
    "bool",
    "uint8",
    "int8",
    "int32",
    "int64",
    "float16",
    "bfloat16",
    "float32",
    "float64",
    "complex64",
    "complex128",
]


def test_can_cast_follows_torchs_rules(torch_mod):
    for a in DTYPES:
        for b in DTYPES:
            want = torch_mod.can_cast(getattr(torch_mod, a), getattr(torch_mod, b))
            assert tg.can_cast(getattr(tg, a), getattr(tg, b)) == want, (a, b)
    with pytest.raises(TypeError, match="must be torch.dtype, not int"):
        tg.can_cast(1, tg.int32)


@pytest.mark.parametrize("values", [[], [1, 2], [0.0], 3, [[True]]], ids=str)
def test_top_level_is_nonzero_and_is_same_size_match_torch(torch_mod, values):
    try:
        want = torch_mod.is_nonzero(torch_mod.tensor(values))
    except RuntimeError as e:
        with pytest.raises(RuntimeError, match=str(e)):
            tg.is_nonzero(tg.tensor(values))
    else:
        assert tg.is_nonzero(tg.tensor(values)) == want
    assert tg.is_same_size(tg.tensor(values), tg.tensor(values))
    assert torch_mod.is_same_size(torch_mod.tensor(values), torch_mod.tensor(values))


@pytest.mark.parametrize("hard", [False, True])
def test_gumbel_softmax_samples_the_softmax_with_torchs_gradients(hard):
    F = tg.nn.functional
    tg.manual_seed(0)
    p = np.array([0.1, 0.2, 0.3, 0.4])
    logits = tg.tensor(np.log(np.tile(p, (20000, 1))), requires_grad=True)
    y = F.gumbel_softmax(logits, tau=0.5, hard=hard)
    np.testing.assert_allclose(y.detach().numpy().sum(-1), 1.0, rtol=1e-12)
    freq = np.bincount(y.detach().numpy().argmax(-1), minlength=4) / 20000
    np.testing.assert_allclose(freq, p, atol=0.015)  # argmax of logits + Gumbel ~ softmax
    if hard:
        assert set(np.unique(y.detach().numpy())) <= {0.0, 1.0}
    # straight-through: the gradient is the soft sample's, whose rows sum to zero
    (y * tg.tensor(np.arange(4.0))).sum().backward()
    assert np.abs(logits.grad.numpy().sum(-1)).max() < 1e-9
    assert np.abs(logits.grad.numpy()).max() > 0


def test_gumbel_softmax_along_another_dim(torch_mod):
    tg.manual_seed(1)
    y = tg.nn.functional.gumbel_softmax(tg.zeros(3, 5), dim=0, hard=True)
    np.testing.assert_array_equal(y.numpy().sum(0), np.ones(5))
    t = torch_mod.nn.functional.gumbel_softmax(torch_mod.zeros(3, 5), dim=0, hard=True)
    assert t.shape == tuple(y.shape) and t.dtype == torch_mod.float32 and y.dtype == tg.float32
