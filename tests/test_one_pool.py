"""Note [One pool per step] (``TAPEGRAD_INTRA_OP=step``): linear's GEMMs and layer norm's
passes split by rows give the one-thread results (layer norm bitwise; linear's GEMMs within
one rounding, see :func:`_assert_gemm_equal`), a replay holds OpenBLAS at one thread for the
whole call, and the cached GPT step equals the switch off. The
machine checks are fixed as in test_parallel_kernels.py (two idle CPUs, BLAS at two
threads), so the splits happen whatever the load."""

import numpy as np
import pytest

import tapegrad as tg
from tapegrad import _blas_threads, _parallel, demo_gpt
from tapegrad.nn import _linear_split, _norm_split

from .nn.test_gpt_step_cache import _step

threadpoolctl = pytest.importorskip("threadpoolctl")

pytestmark = pytest.mark.skipif(
    not _blas_threads._handles(), reason="needs NumPy on OpenBLAS (thread count)"
)


class _Splits:
    """Counts the pool's splits (``_parallel._run`` calls)."""

    def __init__(self, monkeypatch):
        self.n = 0
        run = _parallel._run

        def counted(first, rest):
            self.n += 1
            return run(first, rest)

        monkeypatch.setattr(_parallel, "_run", counted)


@pytest.fixture
def step_mode(monkeypatch):
    """Two idle CPUs, BLAS at two threads, the one-pool switch on (STEP is shared by
    reference with the kernels' modules: set in place, restored after)."""
    monkeypatch.setattr(_parallel, "_CPUS", [2])
    monkeypatch.setattr(_parallel, "busy", lambda: False)
    saved = _parallel.STEP[0], _parallel.ENABLED[0]
    _parallel.STEP[0] = _parallel.ENABLED[0] = True
    try:
        with threadpoolctl.threadpool_limits(2, "blas"):
            yield _Splits(monkeypatch)
    finally:
        _parallel.STEP[0], _parallel.ENABLED[0] = saved


def _off():
    class Off:
        def __enter__(self):
            self.saved = _parallel.STEP[0]
            _parallel.STEP[0] = False

        def __exit__(self, *exc):
            _parallel.STEP[0] = self.saved

    return Off()


def _held(fn, *args):
    """``fn(*args)`` with OpenBLAS held at one thread, as in a replay: the GEMMs that do not
    split (the bias gradient's GEMV) run on one thread, as in the serial run."""
    assert _blas_threads.hold()
    try:
        return fn(*args)
    finally:
        _blas_threads.release()


def _assert_gemm_equal(a, e):
    """``a`` is ``e`` up to the rounding of a GEMM's sums: a row block of a product equals
    the whole product bitwise on OpenBLAS's SkylakeX kernels, but not on its Haswell
    kernels (an AMD EPYC, 2026-12-02: ~1 ulp in a few % of the elements, for any row split),
    so a bitwise check fails by CPU. A block written at the wrong rows or with the wrong
    operand differs by the size of the values, far above this bound."""
    assert a.dtype == e.dtype and a.shape == e.shape
    tol = 1e-5 if a.dtype == np.float32 else 1e-12
    scale = float(np.max(np.abs(e))) if e.size else 0.0
    np.testing.assert_allclose(a, e, rtol=tol, atol=tol * scale)


def _linear_run(x, w, b, need=("x", "w")):
    """y and the gradients asked for (of x, w, b) through F.linear."""
    xt = tg.tensor(x, requires_grad="x" in need)
    wt = tg.tensor(w, requires_grad="w" in need)
    bt = tg.tensor(b, requires_grad=True)
    y = tg.nn.functional.linear(xt, wt, bt)
    y.backward(tg.tensor(np.cos(y.detach().numpy())))
    grads = [t.grad.numpy() for t in (xt, wt) if t.requires_grad]
    return [y.detach().numpy(), *grads, bt.grad.numpy()]


@pytest.mark.parametrize("dtype", [np.float32, np.float64])
@pytest.mark.parametrize(
    "x_shape, n_out",
    [
        ((16, 64, 64), 192),
        ((16, 64, 256), 64),
        ((1024, 64), 96),
        ((9, 37, 65), 130),
        ((20_000, 3), 70),
    ],
)
def test_linear_split_is_the_one_thread_result(step_mode, x_shape, n_out, dtype):
    rng = np.random.default_rng(n_out)
    x = rng.standard_normal(x_shape).astype(dtype)
    w = rng.standard_normal((n_out, x_shape[-1])).astype(dtype)
    b = rng.standard_normal(n_out).astype(dtype)
    split = _held(_linear_run, x, w, b)
    assert step_mode.n == 2  # forward in row blocks; dx and dw side by side
    with _off(), threadpoolctl.threadpool_limits(1, "blas"):
        serial = _linear_run(x, w, b)
    assert step_mode.n == 2
    for a, e in zip(split, serial, strict=True):
        _assert_gemm_equal(a, e)


@pytest.mark.parametrize("need", ["x", "w"])
def test_one_linear_gradient_splits_by_rows(step_mode, need):
    rng = np.random.default_rng(1)
    x = rng.standard_normal((16, 64, 256)).astype(np.float32)
    w = rng.standard_normal((64, 256)).astype(np.float32)
    b = rng.standard_normal(64).astype(np.float32)
    split = _held(_linear_run, x, w, b, (need,))
    assert step_mode.n == 2  # forward; dx or dw in row blocks
    with _off(), threadpoolctl.threadpool_limits(1, "blas"):
        serial = _linear_run(x, w, b, (need,))
    for a, e in zip(split, serial, strict=True):
        _assert_gemm_equal(a, e)


def test_small_or_integer_linears_do_not_split(step_mode):
    x = np.ones((4, 8), np.float32)
    assert _linear_split.forward(x, np.ones((3, 8), np.float32), None) is None
    big = np.ones((1024, 64), np.float32)
    assert _linear_split.forward(big, np.ones((64, 64), np.float64), None) is None
    assert _linear_split.forward(big.astype(np.int64), np.ones((64, 64), np.int64), None) is None
    assert _linear_split.forward(big, np.ones((64, 65), np.float32), None) is None  # bad shape
    with pytest.raises(RuntimeError):  # the usual error, from the usual GEMM
        tg.nn.functional.linear(tg.tensor(big), tg.tensor(np.ones((64, 65), np.float32)))
    with _off():
        assert _linear_split.forward(big, np.ones((64, 64), np.float32), None) is None


def _layer_norm_run(x, w, b):
    xt = tg.tensor(x, requires_grad=True)
    wt = tg.tensor(w, requires_grad=True)
    bt = tg.tensor(b, requires_grad=True)
    y = tg.nn.functional.layer_norm(xt, x.shape[-1:], wt, bt, 1e-5)
    y.backward(tg.tensor(np.sin(3 * y.detach().numpy())))
    return [y.detach().numpy(), xt.grad.numpy(), wt.grad.numpy(), bt.grad.numpy()]


@pytest.mark.parametrize("dtype", [np.float32, np.float64])
@pytest.mark.parametrize("shape", [(16, 64, 64), (1024, 64), (5, 7, 3000)])
def test_layer_norm_split_is_bitwise_the_one_thread_result(step_mode, shape, dtype):
    rng = np.random.default_rng(shape[-1])
    x = (rng.standard_normal(shape) * 3 + 1).astype(dtype)
    w = rng.standard_normal(shape[-1]).astype(dtype)
    b = rng.standard_normal(shape[-1]).astype(dtype)
    split = _held(_layer_norm_run, x, w, b)
    assert step_mode.n == 2  # forward, backward's dx
    with _off():
        serial = _layer_norm_run(x, w, b)
    for a, e in zip(split, serial, strict=True):
        assert a.dtype == e.dtype and a.shape == e.shape
        np.testing.assert_array_equal(a, e)


def test_layer_norm_without_affine_or_small_does_not_split(step_mode):
    x = np.random.default_rng(0).standard_normal((1024, 64)).astype(np.float32)
    y = tg.nn.functional.layer_norm(tg.tensor(x), (64,))
    small = tg.nn.functional.layer_norm(tg.tensor(x[:4]), (64,), tg.ones(64), tg.zeros(64))
    assert step_mode.n == 0
    with _off():
        np.testing.assert_array_equal(
            y.numpy(), tg.nn.functional.layer_norm(tg.tensor(x), (64,)).numpy()
        )
    assert small.shape == (4, 64)
    assert _norm_split.forward(x, x[0], x[0].astype(np.float64), x[:64, :1], 1, 1e-5) is None


def _blas_count(outs, ins):
    """Writes NumPy's OpenBLAS thread count into ``outs[0]`` (a kernel for map_rows)."""
    outs[0][...] = _blas_threads._handles()[0][0]()


def test_a_replay_holds_blas_at_one_thread(step_mode):
    def f(x):
        seen = np.empty_like(x._data, shape=(1,))
        _parallel.map_rows(_blas_count, (seen,), (x._data[:1],))  # too small to split
        return tg.tensor(seen) + x.sum()

    cached = tg.jit.cache(f)
    x = tg.ones(3)
    assert [cached(x).numpy()[0] - 3 for _ in range(2)] == [2, 2]  # recordings run eagerly
    assert cached(x).numpy()[0] - 3 == 1  # the replay
    assert cached.cache_info().hits == 1
    assert _blas_threads._handles()[0][0]() == 2  # released after
    with _off():
        assert cached(x).numpy()[0] - 3 == 2


VOCAB, BLOCK, BATCH = 17, 64, 8


def _gpt_params_after(steps, seed=0):
    tg.manual_seed(seed)
    model = demo_gpt.build(tg, VOCAB, block_size=BLOCK, n_layer=2, n_head=2, n_embd=64)
    opt = demo_gpt.optimizer_for(tg, model, 1e-2)

    cached = tg.jit.cache(_step(model, opt))
    rng = np.random.default_rng(seed)
    losses = []
    for _ in range(steps):
        x = rng.integers(0, VOCAB, (BATCH, BLOCK))
        losses.append(float(cached(tg.from_numpy(x), tg.from_numpy(np.roll(x, -1, 1)))))
    assert cached.cache_info().hits == steps - 3
    return losses, [p.detach().numpy().copy() for p in model.parameters()]


def test_cached_gpt_step_with_one_pool_equals_it_off(step_mode):
    on_losses, on = _gpt_params_after(6)
    assert step_mode.n >= 6 * 20  # linear, layer norm (and GELU, attention) split each step
    with _off(), threadpoolctl.threadpool_limits(1, "blas"):
        off_losses, off = _gpt_params_after(6)
    np.testing.assert_allclose(on_losses, off_losses, rtol=1e-6)
    # AdamW divides each gradient by its running RMS, so a last-bit difference in a small
    # gradient (the GEMMs' rounding, _assert_gemm_equal) moved a weight by up to 8.4e-5 in
    # six steps (Haswell kernels); a wrong gradient moves it by about the learning rate
    # (1e-2) every step.
    for a, e in zip(on, off, strict=True):
        np.testing.assert_allclose(a, e, rtol=1e-5, atol=5e-4)
