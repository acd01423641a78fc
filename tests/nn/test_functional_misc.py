"""channel_shuffle, the upsample aliases, aten's grid samplers and linear_cross_entropy
against torch."""

import warnings

import numpy as np
import pytest

import tapegrad as tg

from .._second_order import check_against_torch

rng = np.random.default_rng(11)


def _fm(m):
    return m.nn.functional


def test_channel_shuffle_matches_torch_and_checks_groups(torch_mod):
    x = rng.standard_normal((2, 6, 3))
    check_against_torch(lambda m, a: _fm(m).channel_shuffle(a, 3), [x], torch_mod)
    assert tg.channel_shuffle(tg.tensor(x), 2).tolist() == (
        torch_mod.channel_shuffle(torch_mod.tensor(x), 2).tolist()
    )
    for bad, match in (((2, 3, 4), "divisible"), ((2, 4), "> 2 dims")):
        with pytest.raises(RuntimeError, match=match):
            tg.nn.functional.channel_shuffle(tg.zeros(*bad), 2)
    with pytest.raises(RuntimeError, match="positive"):
        tg.nn.functional.channel_shuffle(tg.zeros(2, 4, 3), 0)


@pytest.mark.parametrize(
    ("fn", "shape", "kw"),
    [
        ("upsample_bilinear", (2, 3, 4, 4), {"scale_factor": 1.7}),
        ("upsample_bilinear", (1, 2, 3, 5), {"size": (4, 7)}),
        ("upsample_nearest", (2, 3, 4), {"size": 5}),
        ("upsample_nearest", (1, 2, 3, 4), {"scale_factor": 0.6}),
        ("upsample", (1, 2, 3, 4), {"scale_factor": 2, "mode": "bicubic"}),
    ],
)
def test_upsample_aliases_match_torch(fn, shape, kw, torch_mod):
    x = rng.standard_normal(shape)
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")  # torch's deprecation warnings
        check_against_torch(lambda m, a: getattr(_fm(m), fn)(a, **kw), [x], torch_mod)
    with pytest.raises(NotImplementedError, match="4D"):  # torch's type (interpolate's)
        tg.nn.functional.upsample_bilinear(tg.zeros(1, 2, 3), size=4)


@pytest.mark.parametrize("interp", [0, 1, 2])
@pytest.mark.parametrize("padding", [0, 1, 2])
def test_grid_sampler_2d_codes_match_torch(interp, padding, torch_mod):
    x = rng.standard_normal((2, 3, 4, 5))
    g = rng.uniform(-1.2, 1.2, size=(2, 3, 2, 2))
    fn = lambda m, a, b: m.grid_sampler_2d(a, b, interp, padding, True)  # noqa: E731
    check_against_torch(fn, [x, g], torch_mod)


def test_grid_sampler_3d_and_generic_match_torch(torch_mod):
    x = rng.standard_normal((1, 2, 3, 4, 3))
    g = rng.uniform(-1, 1, size=(1, 2, 2, 1, 3))
    check_against_torch(lambda m, a, b: m.grid_sampler_3d(a, b, 0, 2, False), [x, g], torch_mod)
    check_against_torch(lambda m, a, b: m.grid_sampler(a, b, 0, 1, True), [x, g], torch_mod)
    with pytest.raises(RuntimeError, match="expected 4D"):
        tg.grid_sampler_2d(tg.tensor(x), tg.tensor(g), 0, 0, False)
    with pytest.raises(RuntimeError, match="interpolation_mode"):
        tg.grid_sampler(tg.tensor(x), tg.tensor(g), 3, 0, False)


LCE = [
    ((4, 3), (5, 3), {}, "index"),
    ((3,), (5, 3), {"reduction": "none"}, "index"),
    ((4, 3), (5, 3), {"weight": True, "ignore_index": 1, "reduction": "mean"}, "index"),
    ((4, 3), (5, 3), {"linear_bias": True, "reduction": "sum"}, "prob"),
    ((4, 3), (5, 2, 3), {"linear_bias": True, "weight": True}, "index"),
    ((4, 3), (5, 2, 3), {"reduction": "none", "label_smoothing": 0.2}, "prob"),
]


@pytest.mark.parametrize(("xs", "ws", "kw", "kind"), LCE, ids=[str(i) for i in range(len(LCE))])
def test_linear_cross_entropy_matches_torch(xs, ws, kw, kind, torch_mod):
    classes, out = ws[0], ws[1:-1]
    batch = xs[:-1]
    arrays = [rng.standard_normal(xs), rng.standard_normal(ws)]
    if kw.get("linear_bias"):
        arrays.append(rng.standard_normal(ws[:-1]))
    if kind == "index":
        target = rng.integers(0, classes, size=batch + out)
    else:
        target = rng.dirichlet(np.ones(classes), size=batch + out)
        target = np.moveaxis(target, -1, len(batch))
    cw = rng.uniform(0.5, 2, size=classes)

    def fn(m, x, w, b=None):
        extra = dict(kw, linear_bias=b)
        if kw.get("weight"):
            extra["weight"] = m.tensor(cw)
        t = m.tensor(target)
        return _fm(m).linear_cross_entropy(x, w, t, **extra)

    check_against_torch(fn, arrays, torch_mod)


def test_linear_cross_entropy_accepts_options_and_checks_shapes(torch_mod):
    x, w = rng.standard_normal((6, 3)), rng.standard_normal((5, 3))
    t = rng.integers(0, 5, size=6)
    opts = tg.nn.LinearCrossEntropyOptions(batch_chunk_size=2)
    got = tg.nn.functional.linear_cross_entropy(tg.tensor(x), tg.tensor(w), tg.tensor(t),
                                                options=opts)  # fmt: skip
    want = torch_mod.nn.functional.linear_cross_entropy(
        torch_mod.tensor(x), torch_mod.tensor(w), torch_mod.tensor(t),
        options=torch_mod.nn.LinearCrossEntropyOptions(batch_chunk_size=2),
    )  # fmt: skip
    np.testing.assert_allclose(got.item(), want.item(), rtol=1e-12)
    with pytest.raises(ValueError, match="batch_chunk_size"):
        tg.nn.LinearCrossEntropyOptions(batch_chunk_size=0)
    with pytest.raises(RuntimeError, match="in_features"):
        tg.nn.functional.linear_cross_entropy(tg.zeros(2, 4), tg.zeros(5, 3), tg.zeros(2).long())
    with pytest.raises(RuntimeError, match="ignore_index"):
        tg.nn.functional.linear_cross_entropy(
            tg.zeros(2, 3), tg.zeros(5, 3), tg.zeros(2, 5), ignore_index=1
        )


def test_grid_sample_nearest_gives_the_grid_a_zero_gradient(torch_mod):
    """PyTorch's grid gradient of nearest sampling is zeros; tapegrad left the grid out of
    the graph, so ``autograd.grad`` with the grid raised "not used in the graph"."""
    x = rng.standard_normal((1, 2, 3, 4))
    g = rng.uniform(-1, 1, size=(1, 2, 2, 2))
    g[0, 0, 0, 0] = np.nan  # and a NaN position still gives a zero (not NaN) gradient
    fn = lambda m, a, b: m.nn.functional.grid_sample(a, b, mode="nearest")  # noqa: E731
    ours = [tg.tensor(x, requires_grad=True), tg.tensor(g, requires_grad=True)]
    theirs = [torch_mod.tensor(x, requires_grad=True), torch_mod.tensor(g, requires_grad=True)]
    got = tg.autograd.grad(fn(tg, *ours).sum(), ours)
    want = torch_mod.autograd.grad(fn(torch_mod, *theirs).sum(), theirs)
    for a, b in zip(got, want):
        np.testing.assert_array_equal(a.numpy(), b.numpy())
