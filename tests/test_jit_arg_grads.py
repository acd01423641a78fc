"""tg.jit.cache binds the .grad of argument tensors (Note [Gradients of arguments])."""

import warnings

import numpy as np
import pytest

import tapegrad as tg


def step(x, w):
    loss = (x * w).tanh().sum() + (w * w).sum() * 0.5
    loss.backward()
    return loss


def _eager_grads(x, w):
    x2 = tg.tensor(x.detach().numpy(), requires_grad=x.requires_grad)
    w2 = tg.tensor(w.detach().numpy(), requires_grad=True)
    loss = step(x2, w2)
    return loss, x2.grad, w2.grad


@pytest.mark.parametrize("verify", [None, 1])
def test_replay_sets_grad_of_fresh_argument_tensors(verify):
    c = tg.jit.cache(step, verify_every=verify)
    rng = np.random.default_rng(0)
    with warnings.catch_warnings():
        warnings.simplefilter("error", RuntimeWarning)  # must not fall back to eager
        for _ in range(5):
            x = tg.tensor(rng.standard_normal(4).astype(np.float32), requires_grad=True)
            w = tg.tensor(rng.standard_normal(4).astype(np.float32), requires_grad=True)
            loss, gx, gw = _eager_grads(x, w)
            out = c(x, w)
            np.testing.assert_allclose(out.detach().numpy(), loss.detach().numpy(), rtol=1e-6)
            np.testing.assert_allclose(x.grad.numpy(), gx.numpy(), rtol=1e-6)
            np.testing.assert_allclose(w.grad.numpy(), gw.numpy(), rtol=1e-6)
            assert x.grad.dtype == x.dtype and x.grad.shape == x.shape
            assert x.grad.grad_fn is None and not x.grad.requires_grad
    assert c.cache_info().hits == 3


def test_each_replay_gives_a_new_grad_tensor():
    c = tg.jit.cache(step)
    w = tg.tensor(np.ones(3, np.float32), requires_grad=True)
    x = tg.tensor(np.arange(3, dtype=np.float32))
    grads = []
    for _ in range(4):
        w.grad = None
        c(x, w)
        grads.append(w.grad)
    assert c.cache_info().hits == 2
    assert grads[2] is not grads[3] and not np.shares_memory(grads[2]._data, grads[3]._data)
    np.testing.assert_array_equal(grads[2].numpy(), grads[3].numpy())
    assert x.grad is None  # x does not require grad


def test_accumulating_into_an_existing_grad_runs_eagerly_and_stays_correct():
    c = tg.jit.cache(step)
    w = tg.tensor(np.ones(3, np.float32), requires_grad=True)
    x = tg.tensor(np.arange(3, dtype=np.float32))
    w.grad = tg.zeros(3)
    with pytest.warns(RuntimeWarning, match="existing .grad of an argument"):
        c(x, w)
    c(x, w)  # accumulates again, eagerly
    _, _, gw = _eager_grads(x, w)
    np.testing.assert_allclose(w.grad.numpy(), 2 * gw.numpy(), rtol=1e-6)
    # the same function with .grad cleared is another signature, and replays
    for _ in range(3):
        w.grad = None
        c(x, w)
    np.testing.assert_allclose(w.grad.numpy(), gw.numpy(), rtol=1e-6)
    assert c.cache_info().hits == 1
