"""tg.jit.cache memory plan (Note [Replay memory] in jit/memplan.py): in-place fusion,
copy elision and program buffers never change a result, never write into arguments,
state or outputs, and never reuse memory that a live view still reads.

``buffers_everywhere`` lowers the buffer threshold to 0 bytes, so that every eligible
intermediate of these small tests gets a program buffer, as a huge one would.
"""

import numpy as np
import pytest

import tapegrad as tg
from tapegrad.jit import memplan

from .test_jit_training import (
    OPTIMIZERS,
    assert_same_state,
    batches,
    make_cnn,
    make_mlp,
    train_both,
)

SIZES = pytest.mark.parametrize("buffers", [False, True], ids=["default", "buffers"])


@pytest.fixture
def buffers_everywhere(monkeypatch):
    monkeypatch.setattr(memplan, "BUFFER_MIN_BYTES", 0)


def use_buffers(request, buffers):
    if buffers:
        request.getfixturevalue("buffers_everywhere")


def replayed(fn, *args, calls=4, records=2):
    """A cached ``fn`` called ``calls`` times on ``args`` (all but ``records`` replay).

    No ``verify_every``: it would return the eager results, and these tests check what
    the replay itself returns (against NumPy).
    """
    c = tg.jit.cache(fn)
    outs = [c(*args) for _ in range(calls)]
    assert c.cache_info().hits == calls - records
    return c, outs


def program_of(c):
    return next(iter(c._entries.values())).program


def test_elementwise_chain_runs_in_place_and_matches():
    x = tg.randn(4, 5)
    c, outs = replayed(lambda x: ((x.exp() * 2.0 + 1.0).tanh() - 0.5).sigmoid(), x)
    text = c.explain(x)
    assert text.count(", out=s") == 5  # one fresh array (exp), then * + tanh - sigmoid in place
    np.testing.assert_allclose(  # sigmoid is SciPy's expit: within an ulp of this formula
        outs[-1]._data, 1 / (1 + np.exp(-(np.tanh(np.exp(x._data) * 2 + 1) - 0.5))), rtol=3e-7
    )


def test_arguments_and_state_are_never_overwritten():
    w = tg.randn(3, 4)
    x = tg.randn(3, 4)
    w0, x0 = w._data.copy(), x._data.copy()
    c, outs = replayed(lambda x: (x.exp() + w.exp()).sqrt(), x)  # x and w die at exp
    np.testing.assert_array_equal(x._data, x0)
    np.testing.assert_array_equal(w._data, w0)
    assert "out=s" in c.explain(x)  # the sum is done in the first exp's memory


def test_a_view_of_state_passed_by_keyword_is_never_written():
    w = tg.randn(3, 4)
    w0 = w._data.copy()

    def f(x):
        v = np.ravel(a=w._data)  # a view of the state array, made with a keyword argument
        return tg.Tensor._wrap(np.exp(v)) + x  # exp must not be written into v

    x = tg.zeros(12)
    c, outs = replayed(f, x)
    np.testing.assert_array_equal(w._data, w0)
    np.testing.assert_allclose(outs[-1]._data, np.exp(w0.ravel()), rtol=1e-6)


@SIZES
def test_outputs_are_never_reused(request, buffers):
    use_buffers(request, buffers)
    x = tg.randn(3, 4)

    def f(x):
        h = x * 2.0
        # h escapes: h + 1 must not be written into h; x * 5 and x * 7 are temporaries
        # (in buffers when allowed) whose exp and copy escape: those need their own memory
        return h, h + 1.0, (h * 3.0).sum(), (x * 5.0).exp(), (x * 7.0).clone()

    c, outs = replayed(f, x)
    kept = [[t._data.copy() for t in out] for out in outs]
    x._data += 1.0  # new values in the same argument memory
    again = c(x)
    for out, copies in zip(outs, kept, strict=True):
        for t, copy in zip(out, copies, strict=True):
            np.testing.assert_array_equal(t._data, copy)  # earlier outputs unchanged
    np.testing.assert_allclose(again[0]._data, x._data * 2, rtol=1e-6)
    np.testing.assert_allclose(again[1]._data, x._data * 2 + 1, rtol=1e-6)
    for a in again:
        for out in outs:
            assert not any(np.shares_memory(a._data, b._data) for b in out)


@SIZES
def test_views_keep_their_memory_alive(request, buffers):
    use_buffers(request, buffers)
    x = tg.randn(4, 4)

    def f(x):
        h = x * 2.0
        v = h.T  # a view of h: h's memory is live while v is
        z = (x + 3.0) * 0.5  # must not be written into h's memory
        y = v @ z
        return y, v[1:]  # an escaping view keeps h out of every buffer

    c, outs = replayed(f, x)
    h = x._data * 2
    np.testing.assert_allclose(outs[-1][0]._data, h.T @ ((x._data + 3) * 0.5), rtol=1e-5)
    np.testing.assert_array_equal(outs[-1][1]._data, h.T[1:])
    if buffers:
        assert program_of(c).buffers  # the buffers were exercised


def test_buffer_is_not_reused_while_a_view_of_it_is_live(buffers_everywhere):
    x = tg.randn(6, 6)

    def f(x):
        a = x.exp()  # buffer 0
        view = a[:, :3]  # keeps buffer 0 live until the last use of `view`
        b = x.sin() * 2.0  # must get another buffer (same shape)
        c = x.cos() + 1.0  # b dies at the matmul below, view later
        d = b @ c
        return (d[:, :3] + view).sum(dim=0)

    c, outs = replayed(f, x)
    a = np.exp(x._data)
    d = (np.sin(x._data) * 2) @ (np.cos(x._data) + 1)
    np.testing.assert_allclose(outs[-1]._data, (d[:, :3] + a[:, :3]).sum(0), rtol=1e-5)
    assert len(program_of(c).buffers) >= 2


def test_no_buffers_by_default_for_small_arrays():
    x = tg.randn(8, 8)
    c, _ = replayed(lambda x: (x.exp() @ x.sin()).tanh(), x)
    assert program_of(c).buffers == [] and "_pool" not in c.explain(x)


def test_gradient_copies_of_temporaries_are_elided():
    w = tg.randn(5, 3, requires_grad=True)

    def step(x):
        w.grad = None
        (x @ w).tanh().sum().backward()
        return w.grad

    x = tg.randn(4, 5)
    c, outs = replayed(step, x, calls=5, records=3)  # the first call creates w.grad
    assert "no copy" in c.explain(x)
    t = np.tanh(x._data @ w._data)
    np.testing.assert_allclose(outs[-1]._data, x._data.T @ (1 - t * t), rtol=1e-5)
    assert not np.shares_memory(outs[-1]._data, outs[-2]._data)


def test_in_place_state_updates_replay(buffers_everywhere):
    w = tg.randn(3, 3)
    m = np.zeros((3, 3), np.float32)

    def step(x):
        with tg.no_grad():
            g = (x @ w).tanh()  # a temporary the state updates read
            m.__imul__(0.5)
            m.__iadd__(g._data)
            w._data -= 0.1 * m
        return g

    x = tg.randn(3, 3)
    c = tg.jit.cache(step, verify_every=1)
    eager_w, eager_m = w._data.copy(), m.copy()
    for _ in range(6):
        g = np.tanh(x._data @ eager_w)
        eager_m = eager_m * 0.5 + g
        eager_w = eager_w - 0.1 * eager_m
        out = c(x)
        np.testing.assert_allclose(out._data, g, rtol=1e-5)
    assert c.cache_info().hits == 4
    np.testing.assert_allclose(w._data, eager_w, rtol=1e-5, atol=1e-6)
    np.testing.assert_allclose(m, eager_m, rtol=1e-5, atol=1e-6)


@SIZES
def test_mlp_adam_training_20_steps(request, buffers):
    use_buffers(request, buffers)
    data = batches(20, (5, 6), 4)
    cached, model, _ = train_both(make_mlp, OPTIMIZERS["adam"], data, verify_every=1)
    assert cached.cache_info() == (17, 3, 1024, 1)
    assert bool(program_of(cached).buffers) == buffers


@SIZES
def test_cnn_batchnorm_dropout_training_20_steps(request, buffers):
    use_buffers(request, buffers)
    data = batches(20, (5, 1, 8, 8), 3)
    cached, model, eager = train_both(make_cnn, OPTIMIZERS["sgd_momentum"], data, verify_every=1)
    assert cached.cache_info() == (17, 3, 1024, 1)
    assert_same_state(model, eager)


def test_augmented_assignment_to_a_slice_skips_the_self_copy():
    x = tg.randn(4, 3)

    def f(x):
        with tg.no_grad():
            y = x * 1.0
            y._data[1:3] += 2.0  # a view, added to in place, then written onto itself
            y._data[[0, 3]] += 5.0  # advanced indexing: a copy, so the write stays
            y._data[np.array([1])] *= 3.0  # an index array: stays too
        return y

    c, outs = replayed(f, x)
    text = c.explain(x)
    assert "[slice(1, 3, None)] = " not in text and text.count("] = ") == 2
    expected = x._data.copy()
    expected[1:3] += 2.0
    expected[[0, 3]] += 5.0
    expected[1] *= 3.0
    np.testing.assert_allclose(outs[-1]._data, expected, rtol=1e-6)
