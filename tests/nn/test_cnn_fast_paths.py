"""The digits CNN's kernels on their first-order array paths (Note [Array backward]):
max pooling's gradient (Note [Interleaving channel runs]), the convolution's one-GEMM
weight-and-bias gradient, against torch and against the Tensor rules, bit for bit."""

import numpy as np
import pytest

import tapegrad as tg
import tapegrad.nn.functional as F
from tapegrad.autograd import engine

rng = np.random.default_rng(16)


def _channels_last(a):
    """``a`` (N, C, H, W) stored channels-last, as a convolution's result is."""
    return np.ascontiguousarray(a.transpose(0, 2, 3, 1)).transpose(0, 3, 1, 2)


def _grads(fn, arrays, g, array_rules):
    xs = [tg.tensor(a, requires_grad=True) for a in arrays]
    out = fn(tg, *xs)
    engine.ARRAY_RULES[0] = array_rules
    try:
        return out, tg.autograd.grad(out, xs, tg.tensor(g), allow_unused=True)
    finally:
        engine.ARRAY_RULES[0] = True


def _check(fn, arrays, g, torch_mod, rtol):
    """Values and first-order gradients vs torch; array rules vs Tensor rules bit for bit."""
    out, fast = _grads(fn, arrays, g, True)
    _, full = _grads(fn, arrays, g, False)
    ts = [torch_mod.tensor(np.ascontiguousarray(a), requires_grad=True) for a in arrays]
    ref = fn(torch_mod, *ts)
    want = torch_mod.autograd.grad(ref, ts, torch_mod.tensor(np.ascontiguousarray(g)))
    np.testing.assert_allclose(out.detach().numpy(), ref.detach().numpy(), rtol=rtol, atol=rtol)
    for f, s, w in zip(fast, full, want, strict=True):
        assert f.dtype == s.dtype and f.shape == s.shape
        np.testing.assert_array_equal(f.numpy(), s.numpy())
        np.testing.assert_allclose(f.numpy(), w.numpy(), rtol=rtol, atol=rtol)


POOL_SHAPES = [(64, 16, 8, 8), (2, 1, 4, 6), (3, 3, 7, 9), (1, 5, 2, 2), (2, 32, 5, 4)]


@pytest.mark.parametrize("dtype", [np.float32, np.float64], ids=["float32", "float64"])
@pytest.mark.parametrize("layout", ["nchw", "channels_last"])
@pytest.mark.parametrize("shape", POOL_SHAPES, ids=[str(s) for s in POOL_SHAPES])
def test_2x2_max_pool_gradient_matches_torch_and_the_tensor_rule(shape, layout, dtype, torch_mod):
    x = np.round(rng.standard_normal(shape) * 2).astype(dtype)  # ties: the first maximum
    if layout == "channels_last":
        x = _channels_last(x)
    n, c, h, w = shape
    g = rng.standard_normal((n, c, h // 2, w // 2)).astype(dtype)
    _check(lambda m, a: m.nn.functional.max_pool2d(a, 2), [x], g, torch_mod, 0)


@pytest.mark.parametrize("args", [(2, 2, 0, 1), (3, 2, 1, 1), (2, 1, 0, 2), (3, 3, 0, 1)], ids=str)
def test_other_max_pools_take_their_array_rules(args, torch_mod):
    k, s, p, d = args
    x = rng.standard_normal((2, 3, 9, 8))
    fn = lambda m, a: m.nn.functional.max_pool2d(a, k, s, p, d)  # noqa: E731
    out_shape = fn(tg, tg.tensor(x)).shape
    _check(fn, [x], rng.standard_normal(out_shape), torch_mod, 1e-12)  # overlaps: sum order


@pytest.mark.parametrize("bad", [np.inf, -np.inf, np.nan])
def test_2x2_pool_gradient_with_non_finite_values_stays_on_the_maxima(bad, torch_mod):
    x = rng.standard_normal((2, 4, 6, 6)).astype(np.float32)
    g = rng.standard_normal((2, 4, 3, 3)).astype(np.float32)
    g[0, 1, 1, 2] = g[1, 3, 0, 0] = bad
    _check(lambda m, a: m.nn.functional.max_pool2d(a, 2), [x], g, torch_mod, 0)


def test_2x2_pool_gradient_of_a_strided_upstream_gradient(torch_mod):
    """The gradient arriving from a convolution is a view of a padded buffer."""
    x = rng.standard_normal((4, 8, 8, 8)).astype(np.float32)
    w = rng.standard_normal((6, 8, 3, 3)).astype(np.float32)

    def fn(m, a, b):
        return m.nn.functional.conv2d(m.nn.functional.max_pool2d(a, 2), b, padding=1)

    _check(fn, [x, w], rng.standard_normal((4, 6, 4, 4)).astype(np.float32), torch_mod, 1e-4)


def test_the_cnn_nodes_run_their_array_rules():
    x = tg.tensor(rng.standard_normal((4, 1, 8, 8)).astype(np.float32))
    w1 = tg.tensor(rng.standard_normal((16, 1, 3, 3)).astype(np.float32), requires_grad=True)
    w2 = tg.tensor(rng.standard_normal((8, 16, 3, 3)).astype(np.float32), requires_grad=True)
    h = F.max_pool2d(F.relu(F.conv2d(x, w1, padding=1)), 2)
    loss = F.relu(F.conv2d(h, w2, padding=1)).sum()
    nodes = {}
    for node in tg.autograd.graph.iter_graph([loss]):
        if node._array_backward is not None:
            nodes[node.name()] = node

    calls = []
    for name, node in nodes.items():
        rule = node._array_backward
        node._array_backward = lambda *a, _r=rule, _n=name: calls.append(_n) or _r(*a)
    loss.backward()
    assert {"ReluBackward", "MaxPool2DWithIndicesBackward"} <= set(calls)
    assert w1.grad is not None and w2.grad is not None


CONV_CASES = [
    # (N, C, O, kernel, stride, padding, dilation, groups, bias, (H, W))
    (64, 16, 32, 3, 1, 1, 1, 1, True, (4, 4)),  # the digits CNN's second conv: kept im2col
    (64, 1, 16, 3, 1, 1, 1, 1, True, (8, 8)),  # its first: the tap rows, kept
    (3, 1, 4, 3, 1, 1, 1, 1, True, (5, 5)),  # tap rows not kept (O <= kh·kw)
    (2, 3, 5, 3, 1, 1, 1, 1, True, (7, 6)),  # the grid
    (3, 5, 6, (3, 2), 2, (1, 0), 1, 1, True, (7, 6)),  # strided, kept
    (2, 4, 6, 3, 1, 2, 2, 1, False, (7, 7)),  # dilated, no bias
    (2, 4, 6, 3, 1, 1, 1, 2, True, (5, 5)),  # groups
    (2, 24, 8, 3, 1, 1, 1, 1, True, (40, 40)),  # columns too large to keep
]


@pytest.mark.parametrize("dtype", [np.float32, np.float64], ids=["float32", "float64"])
@pytest.mark.parametrize("case", CONV_CASES, ids=[str(c) for c in CONV_CASES])
def test_conv2d_array_rule_matches_torch_and_the_tensor_rule(case, dtype, torch_mod):
    n, c, o, k, s, p, d, groups, bias, hw = case
    k2 = (k, k) if isinstance(k, int) else k
    x = rng.standard_normal((n, c) + hw).astype(dtype)
    w = (rng.standard_normal((o, c // groups) + k2) / np.sqrt(c * 9)).astype(dtype)
    arrays = [x, w] + ([rng.standard_normal(o).astype(dtype)] if bias else [])

    def fn(m, *a):
        return m.nn.functional.conv2d(*a, stride=s, padding=p, dilation=d, groups=groups)

    out_shape = fn(tg, *(tg.tensor(a) for a in arrays)).shape
    g = rng.standard_normal(out_shape).astype(dtype)
    _check(fn, arrays, g, torch_mod, 2e-4 if dtype == np.float32 else 1e-10)


def test_conv2d_bias_gradient_from_the_kept_ones_when_only_some_inputs_need_one(torch_mod):
    x = rng.standard_normal((8, 16, 4, 4)).astype(np.float32)
    w = rng.standard_normal((32, 16, 3, 3)).astype(np.float32) / 12
    b = rng.standard_normal(32).astype(np.float32)
    g = rng.standard_normal((8, 32, 4, 4)).astype(np.float32)
    for needs in [(False, True, True), (True, False, True), (False, False, True)]:
        ours = [tg.tensor(a, requires_grad=r) for a, r in zip((x, w, b), needs, strict=True)]
        ref = [torch_mod.tensor(a, requires_grad=r) for a, r in zip((x, w, b), needs, strict=True)]
        F.conv2d(*ours, padding=1).backward(tg.tensor(g))
        torch_mod.nn.functional.conv2d(*ref, padding=1).backward(torch_mod.tensor(g))
        for a, r in zip(ours, ref, strict=True):
            assert (a.grad is None) == (r.grad is None)
            if a.grad is not None:
                np.testing.assert_allclose(a.grad.numpy(), r.grad.numpy(), rtol=1e-4, atol=1e-4)


def test_conv2d_second_order_still_records():
    x = tg.tensor(rng.standard_normal((2, 3, 5, 5)), requires_grad=True)
    w = tg.tensor(rng.standard_normal((4, 3, 3, 3)), requires_grad=True)
    b = tg.tensor(rng.standard_normal(4), requires_grad=True)
    assert tg.autograd.gradgradcheck(lambda *a: F.conv2d(*a, padding=1), (x, w, b))
    y = rng.permutation(2 * 4 * 6 * 6).reshape(2, 4, 6, 6) / 10.0  # no ties in a window
    y = tg.tensor(np.ascontiguousarray(y.transpose(0, 2, 3, 1)).transpose(0, 3, 1, 2))
    assert tg.autograd.gradgradcheck(lambda a: F.max_pool2d(a, 2), (y.requires_grad_(),))


@pytest.mark.filterwarnings("ignore:invalid value encountered")
@pytest.mark.parametrize("dtype", [np.float32, np.float64], ids=["float32", "float64"])
def test_2x2_pool_of_channels_last_input_with_ties_nans_and_indices(dtype, torch_mod):
    """The forward copies the windows' columns out as void runs (Note [Interleaving channel
    runs]): values, indices (first maximum on ties, last NaN) and gradients as torch's."""
    x = np.round(rng.standard_normal((3, 6, 7, 9)) * 2).astype(dtype)
    x[0, 1, 2, 2] = x[0, 1, 3, 3] = x[2, 5, 0, 1] = np.nan
    x = _channels_last(x)
    g = rng.standard_normal((3, 6, 3, 4)).astype(dtype)
    xt = tg.tensor(x, requires_grad=True)
    xr = torch_mod.tensor(np.ascontiguousarray(x), requires_grad=True)
    out, idx = F.max_pool2d(xt, 2, return_indices=True)
    ref, ridx = torch_mod.nn.functional.max_pool2d(xr, 2, return_indices=True)
    np.testing.assert_array_equal(out.detach().numpy(), ref.detach().numpy())
    np.testing.assert_array_equal(idx.numpy(), ridx.numpy())
    out.backward(tg.tensor(g))
    ref.backward(torch_mod.tensor(g))
    np.testing.assert_array_equal(xt.grad.numpy(), xr.grad.numpy())
