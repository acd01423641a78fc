"""The common cross entropy, (N, C) logits with class indices averaged, takes a fused path
(nn/_loss_ops.index_cross_entropy_mean): same values and gradients as PyTorch, ignored
samples, every sample ignored, second order, and the graph cache with varying targets."""

import numpy as np
import pytest

import tapegrad as tg
import tapegrad.nn.functional as F


@pytest.mark.parametrize("targets", [[0, 2, 1, 2, 0], [0, -100, 1, 2, -100], [-100] * 5, []])
def test_matches_torch(torch_mod, targets):
    rng = np.random.default_rng(0)
    xs = (3 * rng.standard_normal((len(targets), 3))).astype(np.float32)
    out = []
    for m in (tg, torch_mod):
        x = m.tensor(xs, requires_grad=True)
        loss = m.nn.functional.cross_entropy(x, m.tensor(np.array(targets, dtype=np.int64)))
        loss.backward()
        out.append((loss.detach().numpy(), x.grad.numpy()))
    (loss, grad), (ref_loss, ref_grad) = out
    assert loss.dtype == np.float32 and loss.shape == ()
    np.testing.assert_allclose(loss, ref_loss, rtol=1e-5, equal_nan=True)
    np.testing.assert_allclose(grad, ref_grad, rtol=1e-5, atol=1e-7)


def test_out_of_range_target_raises():
    x = tg.zeros(2, 3, requires_grad=True)
    with pytest.raises(IndexError, match="Target 3 is out of bounds"):
        F.cross_entropy(x, tg.tensor([0, 3]))


def test_second_order():
    rng = np.random.default_rng(1)
    x = tg.tensor(rng.standard_normal((4, 3)), requires_grad=True)
    t = tg.tensor([0, 2, -100, 1])
    assert tg.autograd.gradcheck(lambda x: F.cross_entropy(x, t), (x,), eps=1e-6)
    assert tg.autograd.gradgradcheck(lambda x: F.cross_entropy(x, t), (x,), eps=1e-6)


def test_graph_cache_replays_with_new_targets():
    rng = np.random.default_rng(2)
    w = tg.tensor(rng.standard_normal((3, 4)).astype(np.float32), requires_grad=True)

    def step(x, y):
        w.grad = None
        loss = F.cross_entropy(F.linear(x, w), y)
        loss.backward()
        return loss, w.grad

    cached = tg.jit.cache(step)
    for _ in range(6):
        x = tg.tensor(rng.standard_normal((5, 4)).astype(np.float32))
        y = rng.integers(-1, 3, 5)
        y = tg.tensor(np.where(y < 0, -100, y))  # some samples ignored
        got = [t.detach().numpy().copy() for t in cached(x, y)]
        want = [t.detach().numpy() for t in step(x, y)]
        for g, e in zip(got, want, strict=True):
            np.testing.assert_allclose(g, e, rtol=1e-6)
    assert cached.cache_info().hits >= 3


# a dense one-hot below 4096 logits, the target-column gather above
@pytest.mark.parametrize("n, c", [(8, 5), (300, 40)])
def test_both_backward_paths_match_torch_with_ignored_samples(torch_mod, n, c):
    rng = np.random.default_rng(n)
    xs = (3 * rng.standard_normal((n, c))).astype(np.float32)
    ts = rng.integers(0, c, n)
    ts[::7] = -100
    out = []
    for m in (tg, torch_mod):
        x = m.tensor(xs, requires_grad=True)
        m.nn.functional.cross_entropy(x, m.tensor(ts)).backward()
        out.append(x.grad.numpy())
    np.testing.assert_allclose(out[0], out[1], rtol=1e-5, atol=1e-7)


def test_large_logits_replay_under_the_graph_cache():
    rng = np.random.default_rng(1)
    w = tg.tensor(rng.standard_normal((16, 96)).astype(np.float32), requires_grad=True)

    def step(x, y):
        w.grad = None
        loss = F.cross_entropy(x @ w, y)
        loss.backward()
        return loss, w.grad

    cached = tg.jit.cache(step)
    for _ in range(4):
        x = tg.tensor(rng.standard_normal((64, 16)).astype(np.float32))
        y = tg.tensor(rng.integers(0, 96, 64))
        got = [t.detach().numpy().copy() for t in cached(x, y)]
        want = [t.detach().numpy() for t in step(x, y)]
        for g, e in zip(got, want, strict=True):
            np.testing.assert_allclose(g, e, rtol=1e-6, atol=1e-8)
    assert cached.cache_info().hits > 0
