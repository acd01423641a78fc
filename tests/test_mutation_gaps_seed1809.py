"""Tests for the gaps the seed-1809 mutation sample found (docs/mutation-run-seed1809.md).

Each test was seen to fail on its mutant (or on the bug it names) before the fix."""

from __future__ import annotations

import numpy as np
import pytest

import tapegrad as tg


@pytest.mark.parametrize(
    "repeats",
    [[1, 2, 3], (2,), np.array([1, 2, 3]), 2.0, True],
    ids=["list", "tuple", "ndarray", "float", "bool"],
)
def test_repeat_interleave_takes_an_int_or_a_tensor_like_torch(torch_mod, repeats):
    # shape_more.py:387's `and` -> `or` sent a list of counts down the int path (the
    # first count for every element); torch refuses anything but an int or a tensor.
    with pytest.raises(TypeError):
        torch_mod.repeat_interleave(torch_mod.arange(3.0), repeats)
    with pytest.raises(TypeError, match="repeat_interleave"):
        tg.repeat_interleave(tg.arange(3.0), repeats)


@pytest.mark.parametrize("repeats", [2, np.int64(2), np.array(2), "tensor1", "tensor0", "counts"])
def test_repeat_interleave_counts_match_torch(torch_mod, repeats):
    def make(m):
        if repeats == "tensor1":
            return m.tensor([2])
        if repeats == "tensor0":
            return m.tensor(2)
        if repeats == "counts":
            return m.tensor([1, 0, 3])
        return repeats

    x = np.arange(6.0).reshape(3, 2)
    want = torch_mod.repeat_interleave(torch_mod.tensor(x, requires_grad=True), make(torch_mod), 0)
    xt = tg.tensor(x, requires_grad=True)
    got = tg.repeat_interleave(xt, make(tg), 0)
    np.testing.assert_array_equal(got.detach().numpy(), want.detach().numpy())
    got.sum().backward()
    wx = torch_mod.tensor(x, requires_grad=True)
    torch_mod.repeat_interleave(wx, make(torch_mod), 0).sum().backward()
    np.testing.assert_array_equal(xt.grad.numpy(), wx.grad.numpy())


POLYNOMIALS = [
    "chebyshev_polynomial_t",
    "chebyshev_polynomial_u",
    "chebyshev_polynomial_v",
    "chebyshev_polynomial_w",
    "hermite_polynomial_h",
    "hermite_polynomial_he",
    "laguerre_polynomial_l",
    "legendre_polynomial_p",
    "shifted_chebyshev_polynomial_t",
]


@pytest.mark.parametrize("name", POLYNOMIALS)
def test_polynomials_of_negative_degree_are_zero_like_torch(torch_mod, name):
    # polynomials.py:62: degrees no recurrence step reaches (n < 0) keep the start value
    x = np.linspace(-1, 1, 5)
    n = np.array([-1, -2, 0, 1, 3])
    want = getattr(torch_mod.special, name)(torch_mod.tensor(x), torch_mod.tensor(n))
    got = getattr(tg.special, name)(tg.tensor(x), tg.tensor(n))
    np.testing.assert_allclose(got.numpy(), want.numpy(), rtol=1e-12, atol=1e-12)


@pytest.mark.parametrize("mode", ["nearest", "nearest-exact"])
@pytest.mark.parametrize("scale", [0.5, 2.0, 1.7, 0.3])
def test_nearest_interpolation_of_long_inputs_with_a_scale_factor_like_torch(
    torch_mod, mode, scale
):
    # _interpolate.py:36: the source index is floor(dst * (1 / scale)); an error of 1% in
    # the factor shows only once dst * scale passes ~50 elements
    x = np.arange(2 * 3 * 240, dtype=np.float32).reshape(2, 3, 240)
    kw = dict(scale_factor=scale, mode=mode)
    want = torch_mod.nn.functional.interpolate(torch_mod.tensor(x), **kw)
    got = tg.nn.functional.interpolate(tg.tensor(x), **kw)
    np.testing.assert_array_equal(got.numpy(), want.numpy())
    x2 = x.reshape(2, 3, 16, 15)
    want = torch_mod.nn.functional.interpolate(torch_mod.tensor(x2), **kw)
    got = tg.nn.functional.interpolate(tg.tensor(x2), **kw)
    np.testing.assert_array_equal(got.numpy(), want.numpy())


@pytest.mark.parametrize("shape, normalized", [((4, 3, 1), (1,)), ((5, 1, 1), (1, 1))])
def test_layer_norm_over_dims_of_size_one_matches_torch(torch_mod, shape, normalized):
    # _norm_ops.py:150: the row count of a leading sum divides by the tail's size, which is
    # 1 here (every x-hat is 0, the output is the bias)
    rng = np.random.default_rng(0)
    x = rng.standard_normal(shape)
    w = rng.standard_normal(normalized)
    b = rng.standard_normal(normalized)
    g = rng.standard_normal(shape)
    results = []
    for m in (tg, torch_mod):
        xt, wt, bt = (m.tensor(a, requires_grad=True) for a in (x, w, b))
        out = m.nn.functional.layer_norm(xt, normalized, wt, bt)
        out.backward(m.tensor(g))
        results.append([out.detach().numpy(), xt.grad.numpy(), wt.grad.numpy(), bt.grad.numpy()])
    for a, b_ in zip(*results, strict=True):
        np.testing.assert_allclose(a, b_, rtol=1e-10, atol=1e-12)


def test_broadcast_tensors_takes_tensors_not_a_list_like_torch(torch_mod):
    # broadcasting.py:34 unpacked a list argument; torch raises TypeError for it
    a, b = np.ones((2, 1)), np.ones(3)
    with pytest.raises(TypeError):
        torch_mod.broadcast_tensors([torch_mod.tensor(a), torch_mod.tensor(b)])
    with pytest.raises(TypeError, match="broadcast_tensors"):
        tg.broadcast_tensors([tg.tensor(a), tg.tensor(b)])
    got = tg.broadcast_tensors(tg.tensor(a), tg.tensor(b))
    assert [tuple(t.shape) for t in got] == [(2, 3), (2, 3)]
