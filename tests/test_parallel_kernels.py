"""Note [Intra-op parallelism]: elementwise kernels split over threads give bitwise the
one-thread result, follow NumPy's BLAS thread count, raise the kernel's errors, and replay
under tapegrad.jit; map_rows and pair share one pool and one set of rules. (The suite pins
BLAS to one thread: these tests raise it to two, and take the machine as two idle CPUs.)"""

import os
import threading

import numpy as np
import pytest

import tapegrad as tg
from tapegrad import _parallel
from tapegrad.ops import gelu_kernels

threadpoolctl = pytest.importorskip("threadpoolctl")

pytestmark = pytest.mark.skipif(
    not tg._blas_threads._handles(), reason="needs NumPy on OpenBLAS (thread count)"
)


@pytest.fixture(autouse=True)
def _idle_two_cpus(monkeypatch):
    """The rules' machine checks, fixed: two CPUs, not busy (a loaded machine says no),
    splitting on (whatever TAPEGRAD_INTRA_OP says)."""
    monkeypatch.setattr(_parallel, "_CPUS", [2])
    monkeypatch.setattr(_parallel, "ENABLED", [True])
    monkeypatch.setattr(_parallel, "busy", lambda: False)


def _threads(n):
    return threadpoolctl.threadpool_limits(n, "blas")


def _square_plus(outs, ins):
    (out,), (a, b) = outs, ins
    np.multiply(a, a, out=out)
    out += b


@pytest.mark.parametrize("shape", [(1,), (1000,), (2 * _parallel.MIN_ELEMENTS + 17,), (3, 50_001)])
def test_map_rows_covers_every_element_once(shape):
    rng = np.random.default_rng(shape[0])
    a, b = rng.standard_normal((2, *shape)).astype(np.float32)
    out = np.full(shape, np.nan, np.float32)
    with _threads(2):
        assert _parallel.num_threads() == 2
        _parallel.map_rows(_square_plus, (out,), (a, b))
    np.testing.assert_array_equal(out, a * a + b)


def test_num_threads_follows_blas():
    with _threads(1):
        assert _parallel.num_threads() == 1
    with _threads(2):
        assert _parallel.num_threads() == 2
        with tg._blas_threads.one_thread(1):  # the count it saved: the user's
            assert _parallel.num_threads() == 2


def _fail_on_negative(outs, ins):
    if (ins[0] < 0).any():
        raise ValueError("negative part")
    outs[0][...] = ins[0]


def test_a_kernel_error_is_raised_in_the_caller():
    x = np.ones(4 * _parallel.MIN_ELEMENTS, np.float32)
    x[-1] = -1  # in the last part: a worker's
    with _threads(2), pytest.raises(ValueError, match="negative part"):
        _parallel.map_rows(_fail_on_negative, (np.empty_like(x),), (x,))
    out = np.empty_like(x)
    with _threads(2):  # the pool still works after an error
        _parallel.map_rows(_fail_on_negative, (out,), (np.abs(x),))
    np.testing.assert_array_equal(out, 1)


@pytest.mark.parametrize("dtype", [np.float32, np.float64])
def test_gelu_is_bitwise_the_one_thread_result(dtype):
    rng = np.random.default_rng(0)
    x = (rng.standard_normal((16, 64, 96)) * 3).astype(dtype)
    g = rng.standard_normal(x.shape).astype(dtype)

    def run():
        xt = tg.tensor(x, requires_grad=True)
        y = tg.nn.functional.gelu(xt)
        y.backward(tg.tensor(g))
        return y.detach().numpy().copy(), xt.grad.numpy().copy()

    with _threads(1):
        y1, g1 = run()
    with _threads(2):
        y2, g2 = run()
    np.testing.assert_array_equal(y1, y2)
    np.testing.assert_array_equal(g1, g2)
    assert gelu_kernels._parallel_ok(x, g)


@pytest.mark.parametrize("dtype", [np.float32, np.float64])
def test_gelu_double_backward_is_bitwise_the_one_thread_result(dtype):
    """The gradient rule called without the forward's slope (double backward, or the op
    called directly) splits too (Note [GELU's slope in the forward])."""
    rng = np.random.default_rng(1)
    x = (rng.standard_normal((16, 64, 96)) * 3).astype(dtype)
    g = rng.standard_normal(x.shape).astype(dtype)

    def run():
        xt = tg.tensor(x, requires_grad=True)
        (gx,) = tg.autograd.grad(tg.nn.functional.gelu(xt), xt, tg.tensor(g), create_graph=True)
        (ggx,) = tg.autograd.grad(gx, xt, tg.tensor(g))
        direct = gelu_kernels.gelu_backward(tg.tensor(g), tg.tensor(x))
        return gx.detach().numpy().copy(), ggx.numpy().copy(), direct.numpy().copy()

    with _threads(1):
        one = run()
    with _threads(2):
        assert gelu_kernels._parallel_ok(x, g)
        two = run()
    for a, b in zip(one, two, strict=True):
        np.testing.assert_array_equal(a, b)
    # the rule without the forward's slope: the same values (float32 Φ + x·φ is summed there
    # by another route: within float32 rounding of the terms, as torch's own float32 GELU)
    tol = 1e-6 if dtype == np.float32 else 1e-14
    np.testing.assert_allclose(one[0], one[2], rtol=tol, atol=tol * np.abs(g).max())


def test_gelu_step_replays_split_under_jit():
    rng = np.random.default_rng(1)
    w = tg.tensor(rng.standard_normal((64, 256)).astype(np.float32) * 0.1, requires_grad=True)
    x = tg.tensor(rng.standard_normal((16, 64, 64)).astype(np.float32))

    def step(x):
        w.grad = None
        loss = tg.nn.functional.gelu(x @ w).square().mean()
        loss.backward()
        return loss, w.grad

    cached = tg.jit.cache(step, verify_every=1)  # every replay checked against eager
    with _threads(2):
        for _ in range(4):
            loss, grad = cached(x)
        assert cached.cache_info().hits >= 1
        program = next(iter(cached._entries.values())).program
        assert any(c is _parallel._map_rows for c in program.consts)  # one call, split
    with _threads(1):
        eager_loss, eager_grad = step(x)
    # ``x @ w`` on two BLAS threads is the one-thread product bitwise on OpenBLAS's SkylakeX
    # kernels only (on its Haswell kernels, ~1 ulp in a few % of the elements): compare
    # within that rounding; the GELU split itself is bitwise (the tests above).
    np.testing.assert_allclose(loss.numpy(), eager_loss.detach().numpy(), rtol=1e-6)
    np.testing.assert_allclose(grad.numpy(), eager_grad.numpy(), rtol=1e-5, atol=1e-9)


@pytest.mark.parametrize("causal", [True, False])
def test_attention_split_over_the_batch_matches_one_thread(causal):
    rng = np.random.default_rng(2)
    qkv = rng.standard_normal((3, 16, 2, 64, 32)).astype(np.float32)
    g = rng.standard_normal((16, 2, 64, 32)).astype(np.float32)

    def run():
        q, k, v = (tg.tensor(a, requires_grad=True) for a in qkv)
        out = tg.nn.functional.scaled_dot_product_attention(q, k, v, is_causal=causal)
        out.backward(tg.tensor(g))
        return [out.detach().numpy().copy()] + [t.grad.numpy().copy() for t in (q, k, v)]

    with _threads(1):
        one = run()
    calls = []
    original = _parallel._map_rows

    def spy(kernel, *args):
        calls.append(kernel.__name__)
        return original(kernel, *args)

    with _threads(2), pytest.MonkeyPatch.context() as mp:
        mp.setattr(_parallel, "_map_rows", spy)
        two = run()
    assert calls == ["_forward_kernel", "_backward_kernel"]
    for a, b in zip(one, two, strict=True):
        np.testing.assert_array_equal(a, b)


def test_splitting_can_be_turned_off():
    a = np.ones((4, _parallel.MIN_ELEMENTS), np.float32)
    with _threads(2):
        assert len(_parallel._blocks((a,), ())) == 2
        _parallel.ENABLED[0] = False  # as TAPEGRAD_INTRA_OP=0 at import
        try:
            assert _parallel._blocks((a,), ()) == [(0, 4)]
        finally:
            _parallel.ENABLED[0] = True


def test_the_rules_say_one_thread(monkeypatch):
    with _threads(2):
        assert _parallel.num_threads() == 2
        monkeypatch.setattr(_parallel, "busy", lambda: True)
        assert _parallel.num_threads() == 1
        monkeypatch.setattr(_parallel, "busy", lambda: False)
        monkeypatch.setattr(_parallel, "_CPUS", [1])
        assert _parallel.num_threads() == 1
        monkeypatch.setattr(_parallel, "_CPUS", [2])
        monkeypatch.setattr(_parallel, "ENABLED", [False])  # as TAPEGRAD_INTRA_OP=0
        assert _parallel.num_threads() == 1 and not _parallel.two_cores()
        ident = []
        _parallel.pair(lambda: ident.append(threading.get_ident()), lambda: ident.append(1))
        assert ident[0] == threading.get_ident() and ident[1] == 1  # in order, here


def _record_thread(outs, ins, seen):
    seen.append(threading.get_ident())
    outs[0][...] = ins[0]


def test_pair_and_map_rows_share_one_pool():
    """Nested work runs on its caller alone: map_rows inside either piece of a pair, and a
    pair inside a map_rows block, never wait on the pool they are part of."""
    x = np.ones((4, _parallel.MIN_ELEMENTS), np.float32)
    outs = [np.empty_like(x) for _ in range(2)]
    seen = [[], []]

    def piece(i):
        _parallel.map_rows(_record_thread, (outs[i],), (x,), (seen[i],))
        return threading.get_ident()

    with _threads(2):
        here, there = _parallel.pair(lambda: piece(0), lambda: piece(1))
        assert here == threading.get_ident() and there != here
        assert seen == [[here], [there]]  # each map_rows ran whole, on its own thread
        assert there in {t.ident for t in threading.enumerate() if t.name.startswith("tapegrad-")}
        seen = [[], []]
        _parallel.map_rows(_record_thread, (outs[0],), (x,), (seen[0],))
        assert set(seen[0]) == {here, there}  # the pair's worker serves map_rows too
    for out in outs:
        np.testing.assert_array_equal(out, x)


@pytest.mark.skipif(not hasattr(os, "fork"), reason="needs fork")
def test_a_forked_child_starts_its_own_pool():
    x = np.ones((4, _parallel.MIN_ELEMENTS), np.float32)
    out = np.empty_like(x)
    with _threads(2):
        _parallel.map_rows(_record_thread, (out,), (x,), ([],))  # the parent's pool exists
        assert _parallel._POOL["workers"]
        pid = os.fork()
        if pid == 0:  # pragma: no cover - the child reports through its exit status
            ok = False
            try:
                fresh = not _parallel._POOL["workers"]
                seen = []
                _parallel.map_rows(_record_thread, (out,), (x,), (seen,))
                ok = fresh and len(set(seen)) == 2 and (out == 1).all()
            finally:
                os._exit(0 if ok else 1)
        _, status = os.waitpid(pid, 0)
    assert os.waitstatus_to_exitcode(status) == 0


def test_splitting_is_opt_in():
    # Off unless TAPEGRAD_INTRA_OP=1: on the 2-core machine the split lost to OpenBLAS's
    # spinning threads (Note [Intra-op parallelism]); kernels with their own size rule
    # (the convolutions) split with "1" or "kernels" only (they lost too). One fresh interpreter
    # (importing tapegrad costs a second of CPU) runs _parallel's import-time code under
    # each setting: unset, "0", "1", "2", "kernels" and "step".
    import os  # noqa: PLC0415
    import subprocess  # noqa: PLC0415
    import sys  # noqa: PLC0415

    env = {k: v for k, v in os.environ.items() if k != "TAPEGRAD_INTRA_OP"}
    code = (
        "import importlib, os, sys\n"
        "import tapegrad._parallel as p\n"
        "print(p.ENABLED[0], p.KERNELS[0], p.STEP[0])\n"
        "for value in sys.argv[1:]:\n"
        "    os.environ['TAPEGRAD_INTRA_OP'] = value\n"
        "    p = importlib.reload(p)\n"
        "    print(p.ENABLED[0], p.KERNELS[0], p.STEP[0])\n"
    )
    cmd = [sys.executable, "-c", code, "0", "1", "2", "kernels", "step"]
    out = subprocess.run(cmd, env=env, capture_output=True, text=True)
    expected = ["False False False", "False False False", "True True False", "False False False"]
    expected += ["False True False", "True False True"]  # kernels; step (Note [One pool per step])
    assert out.stdout.splitlines() == expected, out.stderr


def test_kernel_rule_follows_the_switches(monkeypatch):
    with _threads(2):
        monkeypatch.setattr(_parallel, "STEP", [False])  # whatever TAPEGRAD_INTRA_OP says
        monkeypatch.setattr(_parallel, "busy", lambda: False)
        monkeypatch.setattr(_parallel, "ENABLED", [False])
        monkeypatch.setattr(_parallel, "KERNELS", [True])
        assert _parallel.may_split() and not _parallel.two_cores()
        monkeypatch.setattr(_parallel, "KERNELS", [False])  # as TAPEGRAD_INTRA_OP=0
        assert not _parallel.may_split()
        monkeypatch.setattr(_parallel, "ENABLED", [True])  # as TAPEGRAD_INTRA_OP=1
        assert _parallel.may_split() and _parallel.two_cores()
        monkeypatch.setattr(_parallel, "STEP", [True])  # as TAPEGRAD_INTRA_OP=step: no conv split
        assert not _parallel.may_split() and _parallel.two_cores()
        monkeypatch.setattr(_parallel, "STEP", [False])
        monkeypatch.setattr(_parallel, "busy", lambda: True)
        assert not _parallel.may_split()


@pytest.mark.parametrize("extra", ["batch_mask", "dropout"])
def test_attention_with_a_batch_mask_or_dropout_matches_one_thread(extra):
    # The split kernels take neither a mask of more than two dims nor dropout: such
    # calls must take the serial path (they did not once the split's refusal was
    # dropped: seed 1809's _attention_split.py:39).
    rng = np.random.default_rng(3)
    qkv = rng.standard_normal((3, 16, 2, 64, 32)).astype(np.float32)
    mask = rng.standard_normal((16, 1, 64, 64)).astype(np.float32)

    def run():
        tg.manual_seed(0)
        q, k, v = (tg.tensor(a, requires_grad=True) for a in qkv)
        if extra == "batch_mask":
            out = tg.nn.functional.scaled_dot_product_attention(q, k, v, attn_mask=tg.tensor(mask))
        else:
            out = tg.nn.functional.scaled_dot_product_attention(q, k, v, dropout_p=0.3)
        out.sum().backward()
        return [out.detach().numpy().copy()] + [t.grad.numpy().copy() for t in (q, k, v)]

    with _threads(1):
        one = run()
    with _threads(2):
        two = run()
    for a, b in zip(one, two, strict=True):
        np.testing.assert_array_equal(a, b)
