"""The demo GPT's training step replays under ``tg.jit.cache`` (issue 11's benchmark).

The embedding index checks run as replayed guards (tapegrad._trace.raise_if), so the
step no longer falls back to eager; a bad index in a replayed call still raises the
eager IndexError. Cached and eager twins must end with the same parameters.
"""

import warnings

import numpy as np
import pytest

import tapegrad as tg
from tapegrad import demo_gpt

VOCAB, BLOCK, BATCH = 11, 8, 3


def _step(model, opt):
    def step(x, y):
        _, loss = model(x, y)
        opt.zero_grad(set_to_none=True)
        loss.backward()
        tg.nn.utils.clip_grad_norm_(model.parameters(), 1.0)
        opt.step()
        return loss

    return step


def _twins():
    tg.manual_seed(0)
    cfg = dict(block_size=BLOCK, n_layer=2, n_head=2, n_embd=8)
    a = demo_gpt.build(tg, VOCAB, **cfg)
    b = demo_gpt.build(tg, VOCAB, **cfg)
    b.load_state_dict(a.state_dict())
    return (a, demo_gpt.optimizer_for(tg, a, 1e-2)), (b, demo_gpt.optimizer_for(tg, b, 1e-2))


@pytest.mark.parametrize("verify_every", [None, 1])
def test_gpt_step_replays_and_matches_eager(verify_every):
    (ma, oa), (mb, ob) = _twins()
    eager = _step(ma, oa)
    cached = tg.jit.cache(_step(mb, ob), verify_every=verify_every)
    rng = np.random.default_rng(0)
    with warnings.catch_warnings():
        warnings.simplefilter("error")  # a fallback to eager warns: fail on it
        for _ in range(6):
            x = rng.integers(0, VOCAB, (BATCH, BLOCK))
            y = rng.integers(0, VOCAB, (BATCH, BLOCK))
            la = eager(tg.from_numpy(x), tg.from_numpy(y))
            lb = cached(tg.from_numpy(x), tg.from_numpy(y))
            np.testing.assert_allclose(lb.detach().numpy(), la.detach().numpy(), rtol=1e-5)
    info = cached.cache_info()
    assert info.hits >= 3 and info.hits + info.misses == 6
    for p, q in zip(ma.parameters(), mb.parameters(), strict=True):
        np.testing.assert_allclose(q.detach().numpy(), p.detach().numpy(), rtol=1e-5, atol=1e-6)


@pytest.mark.parametrize("bad", [VOCAB, -1])
def test_replayed_step_still_raises_on_out_of_range_tokens(bad):
    _, (m, o) = _twins()
    cached = tg.jit.cache(_step(m, o))
    x = np.zeros((BATCH, BLOCK), np.int64)
    for _ in range(4):
        cached(tg.from_numpy(x), tg.from_numpy(x))
    assert cached.cache_info().hits >= 1
    before = [p.detach().numpy().copy() for p in m.parameters()]
    x[1, 2] = bad
    with pytest.raises(IndexError, match="index out of range in self"):
        cached(tg.from_numpy(x), tg.from_numpy(x * 0))
    x[1, 2] = 0  # the targets are checked too (cross_entropy)
    with pytest.raises(IndexError):
        cached(tg.from_numpy(x), tg.from_numpy(x * 0 + bad))
    for p, b in zip(m.parameters(), before, strict=True):  # the failed calls changed nothing
        np.testing.assert_array_equal(p.detach().numpy(), b)


@pytest.mark.parametrize(
    "shape, n_in, n_out", [((2, 0, 3), 3, 4), ((2, 3), 3, 0), ((2, 5, 0), 0, 4)]
)
def test_linear_on_empty_shapes_matches_torch(torch_mod, shape, n_in, n_out):
    """The array backward of F.linear steps aside for empty operands; the fallback folds
    the leading dims with an explicit row count (reshape(-1, 0) is ambiguous)."""
    grads = []
    for m in (tg, torch_mod):
        lin = m.nn.Linear(n_in, n_out)
        x = m.zeros(shape, requires_grad=True)
        lin(x).sum().backward()
        grads.append((tuple(x.grad.shape), tuple(lin.weight.grad.shape)))
    assert grads[0] == grads[1]
