"""The issue-11 layers under tg.jit.cache: recordings become stable (replays hit) and
replays match eager values and gradients."""

import warnings

import numpy as np
import pytest

import tapegrad as tg

F = tg.nn.functional


def _layers():
    return {
        "sdpa": lambda x: F.scaled_dot_product_attention(x, x, x, is_causal=True),
        "mha": tg.nn.MultiheadAttention(4, 2, batch_first=True),
        "lstm": tg.nn.LSTM(4, 4, batch_first=True, bidirectional=True),
        "gru": tg.nn.GRU(4, 4, batch_first=True),
        "conv1d": tg.nn.Conv1d(8, 8, 3, padding=1),
        "conv_transpose1d": tg.nn.ConvTranspose1d(8, 8, 3, stride=2),
        "group_norm": tg.nn.GroupNorm(2, 8),
        "elu": tg.nn.ELU(0.5),
        "interpolate": lambda x: F.interpolate(x, size=7, mode="linear"),
        "adaptive_pool": tg.nn.AdaptiveAvgPool1d(3),
    }


@pytest.mark.parametrize("name", list(_layers()))
def test_layer_replays_under_jit_cache(name):
    layer = _layers()[name]
    qp = tg.nn.Parameter(tg.randn(4, dtype=tg.float64))
    if isinstance(layer, tg.nn.Module):
        layer.double()
    x0 = tg.randn(2, 8, 4, dtype=tg.float64)

    def step(x0):
        x = x0 * qp
        y = layer(x, x, x, need_weights=False)[0] if name == "mha" else layer(x)
        y = y[0] if isinstance(y, tuple) else y
        loss = (y**2).mean()
        loss.backward()
        return loss

    cached = tg.jit.cache(step)
    with warnings.catch_warnings():
        warnings.simplefilter("error")  # no fallback to eager
        for _ in range(5):
            qp.grad = None
            got = cached(x0).item()
            got_grad = qp.grad.numpy().copy()
    qp.grad = None
    want = step(x0).item()
    np.testing.assert_allclose(got, want, rtol=1e-12)
    np.testing.assert_allclose(got_grad, qp.grad.numpy(), rtol=1e-10, atol=1e-12)
    assert cached.cache_info().hits >= 2


def test_subclass_overriding_a_class_default_replays():
    """Regression: the state walk guarded a subclass's attribute with the base class's
    shadowed default, so every replay missed."""

    class Base(tg.nn.Module):
        scale = 1.0

        def forward(self, x):
            return x * self.scale

    class Child(Base):
        scale = 3.0

    m = Child()
    p = tg.nn.Parameter(tg.ones(3))

    def step(x):
        loss = m(x * p).sum()
        loss.backward()
        return loss

    cached = tg.jit.cache(step)
    for _ in range(4):
        p.grad = None
        assert cached(tg.ones(3)).item() == 9.0
    assert cached.cache_info().hits >= 2
