"""mean(dim=(2, 3)) of a channels-last (N, C, H, W) array: the GEMV path and its channels-last
gradient (Note [Spatial mean of channels-last] in ops/_spatial_mean.py) against torch."""

import warnings

import numpy as np
import pytest

import tapegrad as tg
from tapegrad.ops import _spatial_mean

rng = np.random.default_rng(3)


def _channels_last(shape, dtype):
    n, c, h, w = shape
    return rng.standard_normal((n, h, w, c)).astype(dtype).transpose(0, 3, 1, 2)


@pytest.mark.parametrize("dtype", [np.float32, np.float64])
@pytest.mark.parametrize("keepdim", [False, True])
@pytest.mark.parametrize("dim", [(2, 3), (-1, -2)])
def test_matches_torch_forward_and_backward(dtype, keepdim, dim, torch_mod):
    a = _channels_last((5, 3, 4, 6), dtype)
    assert _spatial_mean.applies(a, (2, 3))
    x = tg.tensor(a, requires_grad=True)
    x._data = a  # keep the channels-last layout (tg.tensor copies to C order)
    y = x.mean(dim=dim, keepdim=keepdim)
    g = rng.standard_normal(y.shape).astype(dtype)
    y.backward(tg.tensor(g))
    xt = torch_mod.tensor(a, requires_grad=True)
    yt = xt.mean(dim=dim, keepdim=keepdim)
    yt.backward(torch_mod.tensor(g))
    tol = 1e-6 if dtype == np.float32 else 1e-13
    assert y.dtype == tg.float32 if dtype == np.float32 else tg.float64
    np.testing.assert_allclose(y.detach().numpy(), yt.detach().numpy(), rtol=tol, atol=tol)
    np.testing.assert_allclose(x.grad.numpy(), xt.grad.numpy(), rtol=tol, atol=tol)


def test_gradient_keeps_the_channels_last_layout():
    a = _channels_last((4, 8, 3, 3), np.float32)
    x = tg.tensor(a, requires_grad=True)
    x._data = a
    y = tg.nn.functional.relu(x).mean(dim=(2, 3))
    (gx,) = tg.autograd.grad(y.sum(), x)
    assert gx._data.transpose(0, 2, 3, 1).flags.c_contiguous
    np.testing.assert_array_equal(gx.numpy(), np.broadcast_to(np.float32(1 / 9) * (a > 0), a.shape))


def test_nan_and_inf_propagate_as_torch(torch_mod):
    a = _channels_last((2, 3, 2, 2), np.float32)
    a[0, 1, 0, 0] = np.nan
    a[1, 2, 1, 1] = np.inf
    a[1, 0, 0, 0], a[1, 0, 1, 0] = np.inf, -np.inf
    t = tg.tensor(a)
    t._data = a
    ref = torch_mod.tensor(a).mean(dim=(2, 3)).numpy()
    with warnings.catch_warnings():
        warnings.simplefilter("error")  # inf - inf gives NaN quietly, as torch
        out = t.mean(dim=(2, 3)).numpy()
    np.testing.assert_allclose(out, ref, rtol=1e-6)
    assert np.isnan(out[0, 1]) and np.isnan(out[1, 0]) and out[1, 2] == np.inf


def test_second_order_keeps_the_formula():
    a = _channels_last((2, 3, 2, 3), np.float64)
    x = tg.tensor(a, requires_grad=True)
    x._data = a
    assert tg.autograd.gradcheck(lambda t: (t * t).mean(dim=(2, 3)), (x,))
    assert tg.autograd.gradgradcheck(lambda t: (t * t).mean(dim=(2, 3)), (x,))


def test_other_layouts_take_numpy(torch_mod):
    a = rng.standard_normal((3, 4, 5, 6)).astype(np.float32)  # NCHW: not the GEMV path
    assert not _spatial_mean.applies(a, (2, 3))
    assert not _spatial_mean.applies(a.transpose(0, 3, 1, 2).copy(), (1, 2))
    np.testing.assert_allclose(
        tg.tensor(a).mean(dim=(2, 3)).numpy(),
        torch_mod.tensor(a).mean(dim=(2, 3)).numpy(),
        rtol=1e-6,
    )


def test_cached_step_replays_the_same():
    w = tg.randn(6, 3, 3, 3, requires_grad=True)

    def step(x):
        loss = tg.nn.functional.conv2d(x, w, padding=1).relu().mean(dim=(2, 3)).square().sum()
        loss.backward()
        return loss

    cached = tg.jit.cache(step)
    xs = [tg.randn(4, 3, 5, 5) for _ in range(5)]
    eager = []
    for x in xs:
        w.grad = None
        eager.append((step(x).item(), w.grad.numpy().copy()))
    for x, (loss, gw) in zip(xs, eager, strict=True):
        w.grad = None
        assert cached(x).item() == loss
        np.testing.assert_array_equal(w.grad.numpy(), gw)
    assert cached.cache_info().hits >= 1
