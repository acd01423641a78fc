"""Differences from PyTorch 2.13 found in review, each checked against torch (issue 10/11
follow-up): NaN gradients of zero-weight losses, the overwritten history of copy_, max
pooling and p=1/inf norms under create_graph, NumPy warnings, mixed-dtype products."""

from __future__ import annotations

import math

import numpy as np
import pytest

import tapegrad as tg


def _both(torch, fn):
    return fn(tg), fn(torch)


def _np(t):
    if t is None:
        return None
    if getattr(t, "_is_zerotensor", lambda: False)():  # torch's lazily zero gradient
        return np.zeros(tuple(t.shape))
    return t.detach().numpy()


# -- 1. mean-reduced NLL / cross entropy where every kept class weighs 0 --------------------


@pytest.mark.parametrize("loss", ["nll_loss", "cross_entropy"])
@pytest.mark.parametrize(
    "target", [[1, -100, 2], [1, 1, 2], [-100, -100, -100], [0, 1, 3]], ids=str
)
@pytest.mark.parametrize("smoothing", [0.0, 0.1])
@pytest.mark.parametrize("reduction", ["mean", "sum"])
def test_zero_class_weights_give_torchs_nan_gradient(torch_mod, loss, target, smoothing, reduction):
    if smoothing and loss == "nll_loss":
        pytest.skip("nll_loss has no label_smoothing")
    x = np.random.default_rng(0).standard_normal((3, 4))

    def run(lib):
        xt = lib.tensor(x, requires_grad=True)
        kw = dict(weight=lib.tensor([1.0, 0.0, 0.0, 1.0], dtype=lib.float64), reduction=reduction)
        if smoothing:
            kw["label_smoothing"] = smoothing
        out = getattr(lib.nn.functional, loss)(xt, lib.tensor(target), **kw)
        out.backward()
        return out.item(), xt.grad.numpy()

    (lo, go), (lt, gt) = run(tg), run(torch_mod)
    np.testing.assert_allclose(lo, lt, rtol=1e-12, equal_nan=True)
    np.testing.assert_allclose(go, gt, rtol=1e-12, atol=1e-15, equal_nan=True)


def test_zero_class_weights_nan_pattern_on_3d_input(torch_mod):
    x = np.random.default_rng(1).standard_normal((2, 4, 3))
    t = [[1, 1, 2], [2, -100, 1]]

    def run(lib, loss):
        xt = lib.tensor(x, requires_grad=True)
        w = lib.tensor([1.0, 0.0, 0.0, 1.0], dtype=lib.float64)
        getattr(lib.nn.functional, loss)(xt, lib.tensor(t), weight=w).backward()
        return xt.grad.numpy()

    for loss in ("nll_loss", "cross_entropy"):
        np.testing.assert_array_equal(np.isnan(run(tg, loss)), np.isnan(run(torch_mod, loss)))


# -- 2. copy_ / fill_ / zero_ / x[...] = v over a tensor with history ------------------------

_OVERWRITES = {
    "copy_": lambda lib, b: b.copy_(lib.tensor([4.0, 5.0, 6.0])),
    "copy_grad_src": lambda lib, b: b.copy_(lib.tensor([4.0, 5.0, 6.0], requires_grad=True)),
    "copy_broadcast": lambda lib, b: b.copy_(lib.tensor(1.0)),
    "copy_float64": lambda lib, b: b.copy_(lib.tensor([1.0, 2.0, 3.0], dtype=lib.float64)),
    "fill_": lambda lib, b: b.fill_(2.0),
    "zero_": lambda lib, b: b.zero_(),
    "setitem_all": lambda lib, b: b.__setitem__(Ellipsis, 1.0),
    "setitem_slice": lambda lib, b: b.__setitem__(slice(None), lib.tensor([1.0, 2.0, 3.0])),
    "view_copy_part": lambda lib, b: b[:2].copy_(lib.tensor([7.0, 8.0])),
    "view_copy_all": lambda lib, b: b[:].copy_(lib.tensor([7.0, 8.0, 9.0])),
}


@pytest.mark.parametrize("name", sorted(_OVERWRITES))
def test_overwritten_history_gets_zero_gradient_like_torch(torch_mod, name):
    def run(lib):
        a = lib.tensor([1.0, -2.0, 3.0], requires_grad=True)
        b = a * 2
        _OVERWRITES[name](lib, b)
        (gb,) = lib.autograd.grad((b * lib.tensor([1.0, 10.0, 100.0])).sum(), a)
        return gb.numpy()

    np.testing.assert_array_equal(*_both(torch_mod, run))


def test_overwritten_places_stay_zero_when_the_gradient_is_nan(torch_mod):
    def run(lib):
        a = lib.tensor([1.0, -2.0, 3.0], requires_grad=True)
        b = a * 2
        b[:2] = lib.tensor([7.0, 8.0])
        b.backward(lib.tensor([math.nan, math.inf, 1.0]))
        return a.grad.numpy()

    np.testing.assert_array_equal(*_both(torch_mod, run))


# -- 3. max pooling under create_graph: the input gradient is a function of the input ---------


@pytest.mark.parametrize("k", [1, 2, 3])
@pytest.mark.parametrize("stride", [None, 1], ids=["tiled", "overlapping"])
@pytest.mark.parametrize("size", [4, 5])
def test_max_pool_input_gradient_requires_grad_like_torch(torch_mod, k, stride, size):
    x = np.random.default_rng(k).standard_normal([2, 3] + [size] * k)

    def run(lib):
        pool = getattr(lib.nn.functional, f"max_pool{k}d")
        xt = lib.tensor(x, requires_grad=True)
        y = pool(xt, 2, stride)
        w = lib.tensor(np.linspace(-1, 1, y.numel()).reshape(y.shape))
        g = lib.ones_like(y, requires_grad=True)
        (gx,) = lib.autograd.grad(y, xt, g, create_graph=True)
        (gx2,) = lib.autograd.grad((y * w).sum(), xt, create_graph=True)
        assert gx.requires_grad and gx2.requires_grad
        gg, gxx = lib.autograd.grad((gx * gx2).sum(), (g, xt), allow_unused=True)
        return gx2.detach().numpy(), gg.numpy(), _np(gxx)

    for ours, theirs in zip(run(tg), run(torch_mod), strict=True):
        np.testing.assert_allclose(ours, theirs, rtol=1e-12)


# -- 4. p = 1 / inf norms: a create_graph gradient depends on the input ----------------------

_NORMS = {
    "norm": lambda lib, x, p: x.norm(p=p),
    "vector_norm": lambda lib, x, p: lib.linalg.vector_norm(x, ord=p),
    "linalg.norm": lambda lib, x, p: lib.linalg.norm(x.flatten(), ord=p),
    "matrix_norm": lambda lib, x, p: lib.linalg.matrix_norm(x, ord=p),
    "abs": lambda lib, x, p: x.abs().sum(),
    "l1_loss": lambda lib, x, p: lib.nn.functional.l1_loss(x, lib.zeros_like(x)),
}


@pytest.mark.parametrize("name", sorted(_NORMS))
@pytest.mark.parametrize("p", [1, math.inf, 0, 2], ids=["1", "inf", "0", "2"])
def test_second_derivative_through_sign_based_norms_is_zero_not_missing(torch_mod, name, p):
    if name == "matrix_norm" and p in (0, 2):
        pytest.skip("matrix_norm: ord 0 does not exist; 2 is the SVD's")

    def run(lib):
        x = lib.tensor([[1.0, -2.0, 0.5], [3.0, 0.0, -4.0]], dtype=lib.float64, requires_grad=True)
        (gx,) = lib.autograd.grad(_NORMS[name](lib, x, p), x, create_graph=True, allow_unused=True)
        if gx is None:  # torch: an ord-0 norm has no gradient at all
            return None, None
        assert gx.requires_grad
        (gxx,) = lib.autograd.grad((gx * gx).sum(), x, allow_unused=True)
        return gx.detach().numpy(), _np(gxx)

    for ours, theirs in zip(run(tg), run(torch_mod), strict=True):
        if theirs is None:
            assert ours is None
        else:
            np.testing.assert_allclose(ours, theirs, rtol=1e-12, atol=1e-15)
