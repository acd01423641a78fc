"""Derivatives of any order through create_graph, and autograd.grad's contract, vs PyTorch."""

import numpy as np
import pytest

import tapegrad as tg

from ._autograd_helpers import assert_close

RNG = np.random.default_rng(3)
X = RNG.uniform(0.2, 1.5, size=(2, 3))
W = RNG.standard_normal((3, 3))


def composed(m, x):
    w = m.tensor(W)
    h = (x @ w).tanh() * x.sigmoid()
    return (h.exp() / (x * x + 1.0)).sqrt().log().sum(dim=1).mean() + (x**3).sum()


def test_third_derivatives_match_torch(torch_mod):
    res = []
    for m in (tg, torch_mod):
        x = m.tensor(X, requires_grad=True)
        y = composed(m, x)
        (g,) = m.autograd.grad(y, x, create_graph=True)
        (g2,) = m.autograd.grad((g * g).sum(), x, create_graph=True)
        (g3,) = m.autograd.grad(g2.sum(), x, create_graph=True)
        (g4,) = m.autograd.grad(g3.sum(), x)
        res.append((g, g2, g3, g4))
    assert_close(res[0], res[1], rtol=1e-6, atol=1e-8)


def test_third_derivative_scalar_chain(torch_mod):
    res = []
    for m in (tg, torch_mod):
        x = m.tensor(0.7, requires_grad=True)
        y = (x.tanh() * x.exp()).sigmoid()
        d = [y]
        for _ in range(3):
            (nxt,) = m.autograd.grad(d[-1], x, create_graph=True)
            d.append(nxt)
        res.append(tuple(d[1:]))
    assert_close(res[0], res[1])


def test_grad_several_outputs_and_inputs(torch_mod):
    res = []
    for m in (tg, torch_mod):
        a = m.tensor(X, requires_grad=True)
        b = m.tensor(W, requires_grad=True)
        u = (a @ b).tanh()
        v = (a * a).sum(dim=0)
        go = (m.tensor(np.ones((2, 3))), m.tensor(np.arange(3.0)))
        res.append(m.autograd.grad((u, v), (a, b), grad_outputs=go))
    assert_close(res[0], res[1])


def test_allow_unused(torch_mod):
    for m in (tg, torch_mod):
        a = m.tensor(X, requires_grad=True)
        b = m.tensor(W, requires_grad=True)
        with pytest.raises(RuntimeError):
            m.autograd.grad(a.sum(), (a, b))
        ga, gb = m.autograd.grad(a.sum(), (a, b), allow_unused=True)
        assert gb is None
        ga, gb = m.autograd.grad(a.sum(), (a, b), materialize_grads=True)
        np.testing.assert_array_equal(gb.numpy(), np.zeros((3, 3)))
    p = tg.ones(2, requires_grad=True) * 1.0
    with pytest.raises(RuntimeError, match="input 1 \\(shape \\[3, 3\\]\\) was not used"):
        tg.autograd.grad(p.sum(), (p, tg.tensor(W, requires_grad=True)))


def test_retain_graph_and_freed_graph():
    x = tg.tensor(X, requires_grad=True)
    y = (x.exp() * x).sum()
    g1 = tg.autograd.grad(y, x, retain_graph=True)
    g2 = tg.autograd.grad(y, x)
    assert_close(g1, g2)
    with pytest.raises(RuntimeError, match="retain_graph=True"):
        tg.autograd.grad(y, x)


def test_grad_does_not_touch_dot_grad_and_backward_inputs(torch_mod):
    res = []
    for m in (tg, torch_mod):
        a = m.tensor(X, requires_grad=True)
        b = m.tensor(W, requires_grad=True)
        y = (a @ b).sum()
        m.autograd.grad(y, a, retain_graph=True)
        assert a.grad is None
        m.autograd.backward(y, inputs=[b])
        assert a.grad is None
        res.append(b.grad)
    assert_close(res[0], res[1])


def test_gradgradcheck_composed():
    x = tg.tensor(X, requires_grad=True, dtype=tg.float64)
    assert tg.autograd.gradgradcheck(lambda x: composed(tg, x), (x,))
