"""F.pad in every mode (negative widths too), F.grid_sample / F.affine_grid, F.one_hot and
the dropout variants, against torch 2.13 (values and gradients, float64)."""

import warnings

import numpy as np
import pytest

import tapegrad as tg
from tapegrad.autograd import gradcheck, gradgradcheck

F = tg.nn.functional
R = np.random.default_rng(31)


def _compare(torch, fn, arrays, grads, atol=1e-10):
    ts = [tg.tensor(a, requires_grad=g) for a, g in zip(arrays, grads, strict=True)]
    rs = [torch.tensor(a, requires_grad=g) for a, g in zip(arrays, grads, strict=True)]
    out = fn(tg, *ts)
    ref = fn(torch, *rs)
    assert tuple(out.shape) == tuple(ref.shape)
    assert out.detach().numpy().dtype == ref.detach().numpy().dtype
    np.testing.assert_allclose(out.detach().numpy(), ref.detach().numpy(), atol=atol, rtol=atol)
    gy = R.standard_normal(tuple(ref.shape))
    out.backward(tg.tensor(gy))
    ref.backward(torch.tensor(gy))
    for i, (t, r) in enumerate(zip(ts, rs, strict=True)):
        if grads[i]:
            assert t.grad.numpy().dtype == r.grad.numpy().dtype, f"grad {i}"
            np.testing.assert_allclose(
                t.grad.numpy(), r.grad.numpy(), atol=atol, rtol=atol, err_msg=f"grad {i}"
            )


PADS = [
    ((2, 3, 5), (1, 2)),
    ((2, 3, 5), (-1, 2)),
    ((2, 3, 5), (2, -2)),
    ((1, 2, 4, 5), (1, -1, -1, 2)),
    ((1, 2, 4, 5), (2, 1, 3, 0)),
    ((2, 4, 5), (1, 1, 2, 2)),
    ((1, 1, 3, 4, 5), (1, 2, -1, 1, 2, 0)),
]


@pytest.mark.parametrize("mode", ["constant", "reflect", "replicate", "circular"])
@pytest.mark.parametrize(("shape", "pad"), PADS, ids=[str(p) for p in PADS])
def test_pad_matches_torch(torch_mod, mode, shape, pad):
    x = R.standard_normal(shape)
    _compare(torch_mod, lambda m, t: m.nn.functional.pad(t, pad, mode=mode), [x], [True])


def test_pad_constant_value_and_errors(torch_mod):
    x = R.standard_normal((2, 3))
    _compare(torch_mod, lambda m, t: m.nn.functional.pad(t, (1, -1), value=2.5), [x], [True])
    with pytest.raises(RuntimeError, match="too large"):
        F.pad(tg.ones(1, 1, 3), (3, 0), mode="reflect")
    with pytest.raises(RuntimeError, match="too large"):
        F.pad(tg.ones(1, 1, 3), (4, 0), mode="circular")


def test_pad_gradgradcheck():
    x = tg.tensor(R.standard_normal((1, 2, 4, 5)), requires_grad=True)
    for mode in ("reflect", "replicate", "circular"):
        assert gradgradcheck(lambda t, mode=mode: F.pad(t, (1, -1, 2, 1), mode=mode), [x])


@pytest.mark.parametrize("align_corners", [False, True])
@pytest.mark.parametrize("shape", [(2, 3, 4, 5), (1, 2, 3, 4, 5)])
def test_affine_grid_matches_torch(torch_mod, shape, align_corners):
    k = len(shape) - 2
    theta = R.standard_normal((shape[0], k, k + 1))
    _compare(
        torch_mod,
        lambda m, t: m.nn.functional.affine_grid(t, list(shape), align_corners=align_corners),
        [theta],
        [True],
    )


def _grid(n, ho, wo, spread=1.3):
    # positions inside and outside [-1, 1], away from the integer lattice where the
    # bilinear weights have kinks (gradients there are one-sided in both libraries)
    return R.uniform(-spread, spread, size=(n, ho, wo, 2))


@pytest.mark.parametrize("align_corners", [False, True])
@pytest.mark.parametrize("padding_mode", ["zeros", "border", "reflection"])
@pytest.mark.parametrize("mode", ["bilinear", "nearest", "bicubic"])
def test_grid_sample_matches_torch(torch_mod, mode, padding_mode, align_corners):
    x = R.standard_normal((2, 3, 4, 5))
    grid = _grid(2, 3, 6)
    _compare(
        torch_mod,
        lambda m, a, g: m.nn.functional.grid_sample(
            a, g, mode=mode, padding_mode=padding_mode, align_corners=align_corners
        ),
        [x, grid],
        [True, mode != "nearest"],
    )


@pytest.mark.parametrize("align_corners", [False, True])
@pytest.mark.parametrize("padding_mode", ["zeros", "border", "reflection"])
@pytest.mark.parametrize("mode", ["bilinear", "nearest"])
def test_grid_sample_5d_matches_torch(torch_mod, mode, padding_mode, align_corners):
    x = R.standard_normal((2, 2, 3, 4, 5))
    grid = R.uniform(-1.3, 1.3, size=(2, 2, 3, 2, 3))
    _compare(
        torch_mod,
        lambda m, a, g: m.nn.functional.grid_sample(
            a, g, mode=mode, padding_mode=padding_mode, align_corners=align_corners
        ),
        [x, grid],
        [True, mode == "bilinear"],
    )


def test_grid_sample_affine_identity_and_gradcheck():
    x = tg.tensor(R.standard_normal((1, 2, 4, 4)), requires_grad=True)
    theta = tg.tensor([[[1.0, 0.0, 0.0], [0.0, 1.0, 0.0]]], dtype=tg.float64)
    grid = F.affine_grid(theta, [1, 2, 4, 4], align_corners=False)
    out = F.grid_sample(x, grid, align_corners=False)
    np.testing.assert_allclose(out.detach().numpy(), x.detach().numpy(), atol=1e-12)
    g = tg.tensor(_grid(1, 2, 3, 0.9), requires_grad=True)
    assert gradcheck(lambda a, b: F.grid_sample(a, b, align_corners=True), [x, g])


def test_grid_sample_errors():
    x = tg.ones(1, 1, 3, 3)
    g = tg.zeros(1, 2, 2, 2)
    with pytest.raises(RuntimeError, match="bicubic interpolation only supports 4D"):
        F.grid_sample(tg.ones(1, 1, 2, 2, 2), tg.zeros(1, 1, 1, 1, 3), mode="bicubic")
    with pytest.raises(ValueError, match="expected mode"):
        F.grid_sample(x, g, mode="cubic")
    with pytest.raises(ValueError, match="padding_mode"):
        F.grid_sample(x, g, padding_mode="wrap")
    with pytest.raises(RuntimeError, match="expected grid of shape"):
        F.grid_sample(x, tg.zeros(1, 2, 2, 3))
    with pytest.raises(ValueError, match="Nx2x3"):
        F.affine_grid(tg.zeros(1, 3, 3), [1, 1, 2, 2])


def test_one_hot_matches_torch(torch_mod):
    t = np.array([[0, 3], [2, 1]])
    ours = F.one_hot(tg.tensor(t), 5)
    ref = torch_mod.nn.functional.one_hot(torch_mod.tensor(t), 5)
    assert ours.dtype == tg.int64 and tuple(ours.shape) == tuple(ref.shape)
    np.testing.assert_array_equal(ours.numpy(), ref.numpy())
    np.testing.assert_array_equal(F.one_hot(tg.tensor(t)).numpy(), ref.numpy()[..., :4])


# -- dropout variants -----------------------------------------------------------------------


@pytest.mark.parametrize(
    ("fn", "shape", "mask_shape"),
    [
        ("dropout1d", (8, 16, 5), (8, 16, 1)),
        ("dropout1d", (16, 5), (16, 1)),
        ("dropout2d", (8, 16, 3, 4), (8, 16, 1, 1)),
        ("dropout2d", (16, 3, 5), (16, 3, 1)),  # 3-D is treated as (N, C, L), as torch
        ("dropout3d", (4, 16, 2, 3, 4), (4, 16, 1, 1, 1)),
        ("dropout3d", (16, 2, 3, 4), (16, 1, 1, 1)),
    ],
)
def test_channel_dropout(fn, shape, mask_shape):
    x = tg.ones(*shape, requires_grad=True)
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")
        out = getattr(F, fn)(x, p=0.5)
        same = getattr(F, fn)(x, p=0.5, training=False)
    assert same is x
    y = out.detach().numpy()
    assert set(np.unique(y)) <= {0.0, 2.0}
    # one value per channel: constant over the spatial dims
    spatial = tuple(i for i, (a, b) in enumerate(zip(shape, mask_shape, strict=True)) if a != b)
    assert np.all(y.min(axis=spatial) == y.max(axis=spatial))
    assert 0.2 < (y == 0).mean() < 0.8
    out.sum().backward()
    np.testing.assert_array_equal(x.grad.numpy(), y)


def test_dropout1d_rejects_bad_rank():
    with pytest.raises(RuntimeError, match="Expected 2D or 3D input"):
        F.dropout1d(tg.ones(2, 3, 4, 5))
    with pytest.raises(ValueError, match="between 0 and 1"):
        F.dropout2d(tg.ones(2, 3, 4), p=1.5)


def test_alpha_dropout_keeps_selu_statistics(torch_mod):
    tg.manual_seed(0)
    x = tg.randn(200, 500)
    out = F.alpha_dropout(x, p=0.2, training=True).numpy()
    assert abs(out.mean()) < 0.02 and abs(out.std() - 1) < 0.02
    # dropped entries take the same value as torch's: a·(−alpha) + b with b = alpha·a·p
    alpha, p = 1.7580993408473766, 0.2
    a = 1 / np.sqrt((alpha * alpha * p + 1) * (1 - p))
    dropped = np.isclose(out, alpha * a * p - alpha * a, atol=1e-6)
    assert 0.15 < dropped.mean() < 0.25
    ref = torch_mod.nn.functional.alpha_dropout(torch_mod.zeros(20000), p=0.2, training=True)
    assert np.isclose(np.unique(ref.numpy()).min(), alpha * a * p - alpha * a, atol=1e-6)
    assert F.alpha_dropout(x, p=0.2) is x  # training defaults to False, as torch
    np.testing.assert_array_equal(F.alpha_dropout(x, 1.0, True).numpy(), 0)


def test_feature_alpha_dropout_and_modules():
    x = tg.randn(4, 8, 3, 3)
    out = F.feature_alpha_dropout(x, 0.5, training=True).numpy() - x.numpy()
    m = tg.nn.FeatureAlphaDropout(0.5)
    assert m(x).shape == x.shape
    m.eval()
    assert m(x) is x
    inputs = {
        tg.nn.Dropout1d: tg.ones(2, 3),
        tg.nn.Dropout2d: x,
        tg.nn.Dropout3d: tg.ones(1, 2, 3, 3, 3),
        tg.nn.AlphaDropout: x,
    }
    for cls, inp in inputs.items():
        mod = cls(0.3)
        assert repr(mod).endswith("(p=0.3, inplace=False)")
        assert mod(inp).shape == inp.shape
        mod.eval()
        assert mod(inp) is inp
    assert out.shape == x.shape


def test_instance_norm_without_input_stats_needs_running_stats_like_torch(torch_mod):
    x = np.random.default_rng(0).standard_normal((2, 3, 4))
    with pytest.raises(RuntimeError) as theirs:
        torch_mod.nn.functional.instance_norm(torch_mod.tensor(x), use_input_stats=False)
    with pytest.raises(RuntimeError) as ours:
        tg.nn.functional.instance_norm(tg.tensor(x), use_input_stats=False)
    assert str(ours.value) == f"instance_norm: {theirs.value}"
