"""Exact GELU in float32: the forward's Abramowitz & Stegun erf and the gradient from its
kept e^(−x²/2) (ops/gelu_kernels.py), against float64 truth and against torch."""

from __future__ import annotations

import numpy as np
import pytest

import tapegrad as tg

special = pytest.importorskip("scipy.special")


def _truth(x):
    x64 = x.astype(np.float64)
    cdf = 0.5 * special.erfc(-x64 / np.sqrt(2.0))
    pdf = np.exp(-0.5 * x64 * x64) / np.sqrt(2.0 * np.pi)
    return x64 * cdf, cdf + x64 * pdf


def _gelu_and_grad(x):
    t = tg.tensor(x, requires_grad=True)
    y = tg.nn.functional.gelu(t)
    y.sum().backward()
    return y.detach().numpy(), t.grad.numpy()


def test_float32_gelu_and_gradient_are_within_float32_rounding_of_the_truth():
    # every regime: the erfc tail (e^(−x²/2) underflows past |x| ≈ 13), the middle, zero
    x = np.concatenate([np.linspace(-14.0, 14.0, 280_001), [0.0, -0.0, 1e-30, -1e-30]])
    x = x.astype(np.float32)
    y, g = _gelu_and_grad(x)
    y_true, g_true = _truth(x)
    assert y.dtype == g.dtype == np.float32
    np.testing.assert_allclose(y, y_true, rtol=2e-7, atol=4e-7)
    np.testing.assert_allclose(g, g_true, rtol=2e-7, atol=4e-7)
    assert np.all(y[x > 0] > 0) and np.all(y[x < 0] <= 0)  # never the wrong sign


def test_float32_gelu_matches_torch(torch_mod):
    torch = torch_mod
    x = (np.random.default_rng(0).standard_normal((16, 64, 256)) * 3).astype(np.float32)
    y, g = _gelu_and_grad(x)
    tx = torch.tensor(x, requires_grad=True)
    ty = torch.nn.functional.gelu(tx)
    ty.sum().backward()
    torch.testing.assert_close(torch.from_numpy(y), ty.detach())
    torch.testing.assert_close(torch.from_numpy(g), tx.grad)


def test_float32_gelu_propagates_nan_and_saturates_at_the_tails():
    y, g = _gelu_and_grad(np.array([np.nan, 30.0, -30.0], np.float32))
    assert np.isnan(y[0]) and np.isnan(g[0])
    assert y[1] == 30.0 and g[1] == 1.0
    assert y[2] == 0.0 and g[2] == 0.0


@pytest.mark.parametrize("dtype", [np.float32, np.float64])
def test_gradient_from_the_forwards_slope_is_the_backward_formula_bit_for_bit(dtype):
    # Note [GELU's slope in the forward]: the forward computes Φ(x) + x·φ(x) with the
    # backward's own operations, so the gradient has the bits of grad·((x·e)/√(2π) + Φ)
    # evaluated after the fact (and the output those of x·Φ, with or without a gradient).
    from tapegrad.ops import gelu_kernels as gk

    rng = np.random.default_rng(3)
    x = (rng.standard_normal((8, 33, 20)) * 4).astype(dtype)
    g = rng.standard_normal(x.shape).astype(dtype)
    if dtype == np.float32:
        cdf, e = gk._cdf_gauss_f32(x)
        slope = np.multiply(x, e)
        slope *= np.float32(gk._INV_SQRT_2PI)
        slope += cdf
    else:
        cdf = gk.normal_cdf(x)
        slope = gk._normal_pdf_times_x(x)
        slope += cdf
    xt = tg.tensor(x, requires_grad=True)
    y = tg.nn.functional.gelu(xt)
    y.backward(tg.tensor(g))
    np.testing.assert_array_equal(xt.grad.numpy(), g * slope)
    np.testing.assert_array_equal(y.detach().numpy(), x * cdf)
    with tg.no_grad():  # no slope computed: the same output
        np.testing.assert_array_equal(tg.nn.functional.gelu(xt).numpy(), x * cdf)
    np.testing.assert_array_equal(tg.nn.functional.gelu(tg.tensor(x)).numpy(), x * cdf)
    assert gk.normal_cdf_and_slope(x, False)[1] is None


def test_gelu_second_derivative_with_the_kept_slope(torch_mod):
    torch = torch_mod
    x = (np.random.default_rng(4).standard_normal((5, 7)) * 2).astype(np.float32)
    xt = tg.tensor(x, requires_grad=True)
    (gx,) = tg.autograd.grad(tg.nn.functional.gelu(xt).sum(), xt, create_graph=True)
    (ggx,) = tg.autograd.grad((gx * gx).sum(), xt)
    tx = torch.tensor(x, requires_grad=True)
    (tgx,) = torch.autograd.grad(torch.nn.functional.gelu(tx).sum(), tx, create_graph=True)
    (tggx,) = torch.autograd.grad((tgx * tgx).sum(), tx)
    torch.testing.assert_close(torch.from_numpy(gx.detach().numpy()), tgx.detach())
    torch.testing.assert_close(torch.from_numpy(ggx.numpy()), tggx)
