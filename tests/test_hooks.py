"""Hooks against PyTorch: order of execution, replacement, removal, leaves, autograd.grad."""

import numpy as np
import pytest

import tapegrad as tg

X = [1.0, 2.0]


def _trace(m):
    """Register every kind of hook on a small graph; return the call log after backward."""
    log = []
    x = m.tensor(X, requires_grad=True)
    y = x * 2.0
    z = (y * y).sum()
    y.grad_fn.register_prehook(lambda g: log.append(("node_pre", g[0].tolist())))
    y.register_hook(lambda g: log.append("tensor1"))
    y.register_hook(lambda g: g * 10.0)
    y.retain_grad()
    y.register_hook(lambda g: log.append(("tensor3", g.tolist())))
    y.grad_fn.register_hook(lambda gi, go: log.append(("node_post", gi[0].tolist())))
    x.register_hook(lambda g: log.append(("leaf", g.tolist())))
    x.register_post_accumulate_grad_hook(lambda t: log.append(("post", t.grad.tolist())))
    z.backward()
    return log, y.grad.tolist(), x.grad.tolist()


def test_order_and_replacement_match_torch(torch_mod):
    assert _trace(tg) == _trace(torch_mod)


def test_removal(torch_mod):
    for m in (tg, torch_mod):
        calls = []
        x = m.tensor(X, requires_grad=True)
        y = x * 3.0
        h1 = y.register_hook(lambda g: calls.append("y"))
        h2 = x.register_hook(lambda g: g * 0.0)
        h3 = y.grad_fn.register_prehook(lambda g: calls.append("pre"))
        h4 = y.grad_fn.register_hook(lambda gi, go: calls.append("post"))
        h5 = x.register_post_accumulate_grad_hook(lambda t: calls.append("acc"))
        for h in (h1, h2, h3, h4, h5):
            h.remove()
        h1.remove()  # removing twice is harmless
        y.sum().backward()
        assert calls == [], m.__name__
        np.testing.assert_allclose(x.grad.numpy(), [3.0, 3.0])


def test_hook_called_once_with_summed_gradient(torch_mod):
    res = []
    for m in (tg, torch_mod):
        seen = []
        x = m.tensor(X, requires_grad=True)
        y = x * 2.0
        y.register_hook(lambda g: seen.append(g.tolist()))
        (y * 3.0 + y * y).sum().backward()
        res.append(seen)
    assert res[0] == res[1] and len(res[0]) == 1


def test_hooks_under_autograd_grad(torch_mod):
    res = []
    for m in (tg, torch_mod):
        log = []
        x = m.tensor(X, requires_grad=True)
        y = x * 2.0
        z = (y * y).sum()
        y.register_hook(lambda g: log.append("y"))
        x.register_hook(lambda g: (log.append("x"), g + 1.0)[1])
        x.register_post_accumulate_grad_hook(lambda t: log.append("post"))
        (g,) = m.autograd.grad(z, x, retain_graph=True)
        (gy,) = m.autograd.grad(z, y)  # y's own hook applies to what grad returns for y
        res.append((log, g.tolist(), gy.tolist(), x.grad))
    assert res[0] == res[1]


def test_capture_of_node_not_run_ignores_node_prehook(torch_mod):
    res = []
    for m in (tg, torch_mod):
        x = m.tensor(X, requires_grad=True)
        y = x * 2.0
        y.register_hook(lambda g: g * 10.0)
        y.grad_fn.register_prehook(lambda g: (g[0] * 100.0,))
        (gy,) = m.autograd.grad((y * y).sum(), y)
        res.append(gy.tolist())
    assert res[0] == res[1]


def test_node_hooks_may_replace(torch_mod):
    res = []
    for m in (tg, torch_mod):
        x = m.tensor(X, requires_grad=True)
        y = x * 2.0
        y.grad_fn.register_prehook(lambda g: (g[0] * 5.0,))
        y.grad_fn.register_hook(lambda gi, go: (gi[0] + 1.0, None))
        y.sum().backward()
        res.append(x.grad.tolist())
    assert res[0] == res[1]


def test_retain_grad_and_leaf_hooks(torch_mod):
    res = []
    for m in (tg, torch_mod):
        x = m.tensor(X, requires_grad=True)
        x.retain_grad()  # no-op on a leaf
        y = x.exp()
        y.retain_grad()
        assert y.retains_grad
        z = (y * y).sum()
        z.backward(retain_graph=True)
        z.backward()
        res.append((y.grad.tolist(), x.grad.tolist()))
    np.testing.assert_allclose(res[0], res[1], rtol=1e-5)


def test_hook_errors():
    with pytest.raises(RuntimeError, match="doesn't require gradient"):
        tg.ones(2).register_hook(lambda g: g)
    y = tg.ones(2, requires_grad=True) * 2.0
    with pytest.raises(RuntimeError, match="leaf"):
        y.register_post_accumulate_grad_hook(lambda t: None)
    y.register_hook(lambda g: 3)
    with pytest.raises(TypeError, match="hook"):
        y.sum().backward()


def test_hooks_under_create_graph_are_differentiable(torch_mod):
    res = []
    for m in (tg, torch_mod):
        x = m.tensor(X, requires_grad=True)
        y = x * x
        y.register_hook(lambda g: g * y)
        (g,) = m.autograd.grad(y.sum(), x, create_graph=True)
        (gg,) = m.autograd.grad(g.sum(), x)
        res.append((g.tolist(), gg.tolist()))
    assert res[0] == res[1]


def _post_hook_log(m, create_graph=False, twice=False):
    """A leaf reached by several paths: the post-accumulate hook sees the summed grad once."""
    log = []
    x = m.tensor(X, requires_grad=True, dtype=m.float64)
    x.register_post_accumulate_grad_hook(lambda t: log.append(t.grad.detach().tolist()))
    for _ in range(2 if twice else 1):
        loss = (x * x).sum() + x.sin().sum() + (3.0 * x).sum()
        loss.backward(create_graph=create_graph)
    return log


@pytest.mark.parametrize("create_graph", [False, True])
@pytest.mark.parametrize("twice", [False, True])
def test_post_accumulate_hook_on_a_sum_of_paths(create_graph, twice, torch_mod):
    ours = _post_hook_log(tg, create_graph, twice)
    theirs = _post_hook_log(torch_mod, create_graph, twice)
    assert len(ours) == len(theirs) == (2 if twice else 1)
    np.testing.assert_allclose(ours, theirs, rtol=1e-12)
