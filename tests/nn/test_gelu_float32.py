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
