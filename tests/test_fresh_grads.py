"""Note [Fresh gradients]: gradients a rule hands over as new arrays (F.linear's first-order
path) are kept by a leaf without a copy, yet never alias anything a user or another path
can see, and agree with PyTorch."""

import numpy as np

import tapegrad as tg
import tapegrad.nn.functional as F


def _data(rng, *shape):
    return rng.standard_normal(shape).astype(np.float32)


def test_linear_shared_weight_sums_both_paths(torch_mod):
    rng = np.random.default_rng(0)
    xs, ws, bs = _data(rng, 5, 3), _data(rng, 4, 3), _data(rng, 4)
    grads = []
    for m in (tg, torch_mod):
        x = m.tensor(xs, requires_grad=True)
        w = m.tensor(ws, requires_grad=True)
        b = m.tensor(bs, requires_grad=True)
        fn = m.nn.functional
        h = m.tanh(fn.linear(x, w, b))
        y = fn.linear(h[:, :3], w, b)  # w and b get a gradient from two Nodes
        (y * y).sum().backward()
        grads.append([t.grad.numpy() for t in (x, w, b)])
    for mine, ref in zip(*grads, strict=True):
        np.testing.assert_allclose(mine, ref, rtol=1e-5, atol=1e-6)


def test_fresh_leaf_grad_accumulates_in_place_without_aliasing():
    rng = np.random.default_rng(1)
    x = tg.tensor(_data(rng, 6, 3))
    w = tg.tensor(_data(rng, 2, 3), requires_grad=True)
    F.linear(x, w).sum().backward()
    first = w.grad
    kept = first.numpy().copy()
    F.linear(x, w).sum().backward()  # adds into the stored gradient
    np.testing.assert_allclose(w.grad.numpy(), 2 * kept, rtol=1e-6)
    assert w.grad is first  # accumulated in place, as in PyTorch


def test_gradient_kept_by_a_hook_is_not_changed_by_later_accumulation():
    rng = np.random.default_rng(2)
    x = tg.tensor(_data(rng, 6, 3))
    w = tg.tensor(_data(rng, 2, 3), requires_grad=True)
    seen = []
    w.register_hook(lambda g: seen.append(g))
    F.linear(x, w).sum().backward()
    before = seen[0].numpy().copy()
    F.linear(x, w).sum().backward()
    np.testing.assert_array_equal(seen[0].numpy(), before)
    np.testing.assert_allclose(w.grad.numpy(), 2 * before, rtol=1e-6)


def test_autograd_grad_and_create_graph_paths_agree():
    rng = np.random.default_rng(3)
    x = tg.tensor(_data(rng, 2, 5, 3).astype(np.float64), requires_grad=True)
    w = tg.tensor(_data(rng, 4, 3).astype(np.float64), requires_grad=True)
    b = tg.tensor(_data(rng, 4).astype(np.float64), requires_grad=True)
    fast = tg.autograd.grad((F.linear(x, w, b) ** 2).sum(), (x, w, b))
    recorded = tg.autograd.grad((F.linear(x, w, b) ** 2).sum(), (x, w, b), create_graph=True)
    for a, r in zip(fast, recorded, strict=True):
        assert a.grad_fn is None and r.grad_fn is not None
        np.testing.assert_allclose(a.numpy(), r.detach().numpy(), rtol=1e-12)
