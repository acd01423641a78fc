"""tg.jit.cache: replayed programs match eager runs, never go stale, and re-record when needed."""

import warnings

import numpy as np
import pytest

import tapegrad as tg
from tapegrad.jit import ReplayMismatchError

# -- a small MLP built from leaf tensors, with hand-written optimizers ----------------------


def make_mlp(seed, sizes=(6, 16, 4)):
    g = tg.Generator(seed)
    params = []
    for n_in, n_out in zip(sizes[:-1], sizes[1:], strict=True):
        w = tg.randn(n_in, n_out, generator=g) * (1.0 / n_in**0.5)
        params += [w.requires_grad_(), tg.zeros(n_out, requires_grad=True)]
    return params


def forward(params, x, dropout=False):
    w1, b1, w2, b2 = params
    h = (x @ w1 + b1).tanh()
    if dropout:
        h = h * (tg.rand(*h.shape) > 0.3) / 0.7
    return (h @ w2 + b2).relu() + h.mean() * 0.1


def make_sgd_step(params, lr=0.05, momentum=0.9, dropout=False):
    state = {}  # momentum buffers, created on the first step (like an optimizer's)

    def step(x, y):
        for p in params:
            p.grad = None
        out = forward(params, x, dropout)
        loss = ((out - y) * (out - y)).mean()
        loss.backward()
        with tg.no_grad():
            for i, p in enumerate(params):
                if i not in state:
                    state[i] = np.zeros_like(p._data)
                buf = state[i]
                buf *= momentum
                buf += p.grad._data
                p._data -= lr * buf
        return loss

    return step


def make_adam_step(params, lr=0.01, betas=(0.9, 0.999), eps=1e-8):
    m = [np.zeros_like(p._data) for p in params]
    v = [np.zeros_like(p._data) for p in params]
    t = np.zeros((), np.float32)  # the step count lives in an array, so replays advance it

    def step(x, y):
        for p in params:
            if p.grad is not None:
                p.grad._data.fill(0.0)
        loss = ((forward(params, x) - y) ** 2).mean()
        loss.backward()
        with tg.no_grad():
            np.add(t, 1.0, out=t)
            c1 = 1.0 - betas[0] ** t
            c2 = 1.0 - betas[1] ** t
            for p, mi, vi in zip(params, m, v, strict=True):
                g = p.grad._data
                mi *= betas[0]
                mi += (1 - betas[0]) * g
                vi *= betas[1]
                vi += (1 - betas[1]) * g * g
                p._data -= lr * (mi / c1) / (np.sqrt(vi / c2) + eps)
        return loss

    return step


def batches(n, batch=5, seed=3):
    rng = np.random.default_rng(seed)
    f32 = np.float32  # the parameters' dtype: torch's matmul does not promote
    return [
        (
            tg.tensor(rng.standard_normal((batch, 6)).astype(f32)),
            tg.tensor(rng.standard_normal((batch, 4)).astype(f32)),
        )
        for _ in range(n)
    ]


def assert_params_close(a, b):
    for p, q in zip(a, b, strict=True):
        np.testing.assert_allclose(p._data, q._data, rtol=1e-5, atol=1e-6)


@pytest.mark.parametrize("verify_every", [None, 1])
@pytest.mark.parametrize("make_step", [make_sgd_step, make_adam_step])
def test_training_steps_match_eager(make_step, verify_every):
    eager_params, cached_params = make_mlp(0), make_mlp(0)
    eager_step = make_step(eager_params)
    cached_step = tg.jit.cache(make_step(cached_params), verify_every=verify_every)
    for x, y in batches(20):
        le = eager_step(x, y)
        lc = cached_step(x, y)
        np.testing.assert_allclose(lc._data, le._data, rtol=1e-5, atol=1e-6)
    assert_params_close(cached_params, eager_params)
    info = cached_step.cache_info()
    assert info.hits >= 15 and info.currsize == 1
    for p, q in zip(cached_params, eager_params, strict=True):
        np.testing.assert_allclose(p.grad._data, q.grad._data, rtol=1e-5, atol=1e-6)


def test_random_masks_are_fresh_and_follow_the_seed():
    eager_params, cached_params = make_mlp(1), make_mlp(1)
    eager_step = make_sgd_step(eager_params, dropout=True)
    cached_step = tg.jit.cache(make_sgd_step(cached_params, dropout=True))
    data = batches(12)
    tg.manual_seed(7)
    eager_losses = [eager_step(x, y).item() for x, y in data]
    tg.manual_seed(7)
    cached_losses = [cached_step(x, y).item() for x, y in data]
    np.testing.assert_allclose(cached_losses, eager_losses, rtol=1e-5)
    assert_params_close(cached_params, eager_params)
    assert cached_step.cache_info().hits >= 8

    x = tg.ones(3, 5)
    masked = tg.jit.cache(lambda x: x * (tg.rand(3, 5) > 0.5))
    outs = [masked(x).numpy().copy() for _ in range(6)]
    assert masked.cache_info().hits >= 3
    assert not all(np.array_equal(outs[-1], o) for o in outs[-4:-1])


def test_new_shape_records_again_and_lru_eviction():
    w = tg.randn(6, 3)
    f = tg.jit.cache(lambda x: (x @ w).tanh(), maxsize=2)
    xs = {n: tg.randn(n, 6) for n in (2, 3, 4)}
    for _ in range(3):
        f(xs[2])
    assert f.cache_info() == (1, 2, 2, 1)
    for _ in range(3):
        f(xs[3])
    assert f.cache_info().currsize == 2 and f.cache_info().misses == 4
    f(xs[4])  # evicts the least recently used signature (batch 2)
    assert f.cache_info().currsize == 2
    misses = f.cache_info().misses
    out = f(xs[2])
    assert f.cache_info().misses == misses + 1  # batch 2 records again
    np.testing.assert_allclose(out._data, np.tanh(xs[2]._data @ w._data), rtol=1e-6)
    f.cache_clear()
    assert f.cache_info() == (0, 0, 2, 0)


def test_branch_on_item_is_never_stale():
    def f(x):
        if x.sum().item() > 0:
            return x * 2.0
        return x * -1.0

    c = tg.jit.cache(f)
    pos, neg = tg.ones(3), -tg.ones(3)
    with pytest.warns(RuntimeWarning, match=r"item\(\).*test_jit.py"):
        c(pos)
    with warnings.catch_warnings():
        warnings.simplefilter("error")  # warned once only
        for _ in range(3):
            np.testing.assert_array_equal(c(pos)._data, [2, 2, 2])
            np.testing.assert_array_equal(c(neg)._data, [1, 1, 1])
    assert c.cache_info().hits == 0


def test_python_value_changes_are_guarded():
    class Config:
        scale = 2.0

    cfg = Config()
    c = tg.jit.cache(lambda x: x * cfg.scale)
    x = tg.ones(2)
    for _ in range(3):
        np.testing.assert_array_equal(c(x)._data, [2, 2])
    assert c.cache_info().hits == 1
    cfg.scale = 5.0
    for _ in range(3):
        np.testing.assert_array_equal(c(x)._data, [5, 5])


def test_state_is_read_at_replay_time():
    w = tg.ones(3, 2)
    c = tg.jit.cache(lambda x: x @ w)
    x = tg.ones(1, 3)
    for _ in range(3):
        c(x)
    w._data = np.full((3, 2), 2.0, np.float32)  # rebinding, not an in-place change
    np.testing.assert_array_equal(c(x)._data, [[6, 6]])
    w._data *= 2
    np.testing.assert_array_equal(c(x)._data, [[12, 12]])
    assert c.cache_info().hits >= 3


def test_grad_mode_is_part_of_the_signature():
    w = tg.randn(4, 2, requires_grad=True)
    c = tg.jit.cache(lambda x: (x @ w).sum())
    x = tg.randn(3, 4)
    with pytest.warns(RuntimeWarning, match="requires grad"):  # its graph: eager (issue 18)
        c(x)
    for _ in range(2):
        assert c(x).grad_fn is not None
    with tg.no_grad():
        for _ in range(3):
            out = c(x)
    assert c.cache_info().currsize == 2
    assert not out.requires_grad and out.grad_fn is None
    np.testing.assert_allclose((out * 2)._data, 2 * (x._data @ w._data).sum(), rtol=1e-6)


def test_hooks_and_retain_graph_are_refused():
    w = tg.randn(3, requires_grad=True)
    seen = []
    w.register_hook(lambda g: seen.append(1))

    def step(x):
        w.grad = None
        (x * w).sum().backward()
        return w.grad

    c = tg.jit.cache(step)
    with pytest.warns(RuntimeWarning, match="hooks"):
        c(tg.ones(3))
    for _ in range(3):
        c(tg.ones(3))
    assert len(seen) == 4  # every call ran eagerly, hooks included

    def twice(x):
        y = (x * w).sum()
        y.backward(retain_graph=True)
        return y

    with pytest.warns(RuntimeWarning, match="retain_graph"):
        tg.jit.cache(twice)(tg.ones(3))


def test_explain_and_forward_output():
    params = make_mlp(2)
    step = tg.jit.cache(make_sgd_step(params))
    x, y = batches(1)[0]
    assert "nothing recorded" in step.explain(x, y)
    for _ in range(4):
        step(x, y)
    text = step.explain(x, y)
    assert "def replay(" in text and "out=" in text and "array ops" in text

    fwd = tg.jit.cache(lambda x: forward(params, x))
    with tg.no_grad():
        outs = [fwd(x) for _ in range(3)]
        expected = forward(params, x)
    assert isinstance(outs[-1], tg.Tensor) and fwd.cache_info().hits == 1
    np.testing.assert_allclose((outs[-1] + 1)._data, expected._data + 1, rtol=1e-6)


def test_verify_reports_a_differing_replay():
    w = tg.ones(2)
    c = tg.jit.cache(lambda x: x * w, verify_every=1)
    x = tg.ones(2)
    for _ in range(3):
        c(x)
    entry = next(iter(c._entries.values()))
    real = entry.program.run
    entry.program.run = lambda *a: tuple(r + 1 for r in real(*a))
    with pytest.raises(ReplayMismatchError, match="output 0"):
        c(x)


def test_decorator_forms():
    @tg.jit.cache
    def f(x):
        return x + 1

    @tg.jit.cache(maxsize=3)
    def g(x, k):
        return x * k

    x = tg.ones(2)
    for _ in range(3):
        f(x)
        g(x, 2)
    np.testing.assert_array_equal(g(x, 3)._data, [3, 3])
    assert f.cache_info().hits == 1 and g.cache_info().currsize == 2
    assert f.__name__ == "f"


def test_numpy_copy_behind_the_tracer_is_refused():
    c = tg.jit.cache(lambda x: tg.from_numpy(np.array(x._data)) * 2.0)
    x = tg.tensor([1.0, 2.0, 3.0])
    with pytest.warns(RuntimeWarning, match="copies a traced array"):
        for _ in range(4):  # the same input every time: only the copy check can notice
            np.testing.assert_array_equal(c(x)._data, [2, 4, 6])
    np.testing.assert_array_equal(c(tg.tensor([4.0, 5.0, 6.0]))._data, [8, 10, 12])
    assert c.cache_info().hits == 0


def test_exception_while_recording_leaves_plain_state():
    w = tg.ones(3, requires_grad=True)

    def f(x):
        assert (x * w).shape == (3,)
        raise ValueError("boom")

    with pytest.raises(ValueError, match="boom"):
        tg.jit.cache(f)(tg.ones(3))
    assert type(w._data) is np.ndarray


def test_argument_layout_is_part_of_the_signature():
    """A transposed argument (same shape and dtype, other strides) records again."""

    @tg.jit.cache
    def scale_first_row(x):
        with tg.no_grad():
            x.reshape(-1)[:3] *= 2.0  # writes through a view of the argument
        return x.sum()

    for _ in range(4):
        scale_first_row(tg.ones(3, 3))
    t = tg.ones(3, 3).T  # same shape and dtype, other strides
    scale_first_row(t)
    info = scale_first_row.cache_info()
    assert info.currsize == 2
