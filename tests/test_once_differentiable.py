"""``torch.autograd.function.once_differentiable``: a backward that runs once, and a clear
error (torch's) when its result is differentiated again."""

import numpy as np
import pytest

import tapegrad as tg


def _cube(lib):
    from importlib import import_module

    once = import_module(f"{lib.__name__}.autograd.function").once_differentiable

    class Cube(lib.autograd.Function):
        @staticmethod
        def forward(ctx, x):
            ctx.save_for_backward(x)
            return x**3

        @staticmethod
        @once
        def backward(ctx, g):
            (x,) = ctx.saved_tensors
            assert not lib.is_grad_enabled()  # runs with grad mode off
            return g * 3 * x**2

    return Cube


def test_first_order_is_the_backward_and_matches_torch(torch_mod):
    xs = np.array([0.5, -1.0, 2.0])
    got, want = [], []
    for lib, out in ((tg, got), (torch_mod, want)):
        x = lib.tensor(xs, requires_grad=True)
        _cube(lib).apply(x).sum().backward()
        out.append(x.grad.numpy())
        y = _cube(lib).apply(x)
        (g,) = lib.autograd.grad(y.sum(), x, create_graph=True)  # upstream needs no grad
        out.append(g.detach().numpy())
        assert g.requires_grad is False
    np.testing.assert_allclose(got, want)
    np.testing.assert_allclose(got[0], 3 * xs**2)


def test_differentiating_twice_raises_torchs_error(torch_mod):
    for lib in (tg, torch_mod):
        x = lib.tensor([0.5, 2.0], requires_grad=True)
        y = _cube(lib).apply(x * x)  # the gradient reaching Cube's backward requires grad
        (g,) = lib.autograd.grad((y * x).sum(), x, create_graph=True)
        assert g.requires_grad
        with pytest.raises(RuntimeError, match="differentiate twice a function that was marked"):
            g.sum().backward()
