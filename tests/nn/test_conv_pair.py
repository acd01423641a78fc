"""Convolution and max pooling as opaque kernels (Note [Opaque kernels] in _trace.py) and
split over two cores (Note [Intra-op parallelism] in _parallel.py): the same
results as the serial kernels and as PyTorch, eagerly and in tg.jit replays."""

import threading

import numpy as np
import pytest

import tapegrad as tg
import tapegrad.nn.functional as F
from tapegrad import _blas_threads, _parallel, _trace
from tapegrad.nn import _conv_ops

rng = np.random.default_rng(0)

CASES = [
    # (N, C, O, kernel, stride, padding, groups, (H, W)): grid path, im2col path, odd batch
    (64, 1, 16, 3, 1, 1, 1, (8, 8)),
    (64, 16, 32, 3, 1, 1, 1, (4, 4)),
    (5, 4, 6, (3, 2), 2, (1, 0), 2, (7, 6)),
    (3, 3, 4, 3, 1, 0, 1, (6, 5)),
]


def _step(x, w, b, g, stride, padding, groups):
    xt = tg.tensor(x, requires_grad=True)
    wt = tg.tensor(w, requires_grad=True)
    bt = tg.tensor(b, requires_grad=True)
    y = F.conv2d(xt, wt, bt, stride=stride, padding=padding, groups=groups)
    y.backward(tg.tensor(g))
    return [y.detach().numpy(), xt.grad.numpy(), wt.grad.numpy(), bt.grad.numpy()]


@pytest.mark.parametrize("case", CASES, ids=[str(c) for c in CASES])
def test_paired_convolution_matches_serial_and_torch(case, monkeypatch, torch_mod):
    n, c, o, k, s, p, groups, hw = case
    k2 = (k, k) if isinstance(k, int) else k
    x = rng.standard_normal((n, c) + hw).astype(np.float32)
    w = rng.standard_normal((o, c // groups) + k2).astype(np.float32)
    b = rng.standard_normal(o).astype(np.float32)
    shape = torch_mod.nn.functional.conv2d(
        torch_mod.tensor(x), torch_mod.tensor(w), stride=s, padding=p, groups=groups
    ).shape
    g = rng.standard_normal(tuple(shape)).astype(np.float32)
    serial = _step(x, w, b, g, s, p, groups)
    jobs = []
    original = _parallel.pair

    def counting_pair(first, second, parallel=None):
        jobs.append(parallel)
        return original(first, second, parallel)

    monkeypatch.setattr(_conv_ops, "PAIR_MNK", 0)
    monkeypatch.setattr(_parallel, "may_split", lambda: True)
    monkeypatch.setattr(_conv_ops, "pair", counting_pair)
    monkeypatch.setattr(_conv_ops._conv_grid, "pair", counting_pair)
    paired = _step(x, w, b, g, s, p, groups)
    assert any(jobs), "the kernels should have run as pairs"
    ts = [torch_mod.tensor(a, requires_grad=True) for a in (x, w, b)]
    yr = torch_mod.nn.functional.conv2d(*ts, stride=s, padding=p, groups=groups)
    yr.backward(torch_mod.tensor(g))
    ref = [yr.detach().numpy()] + [t.grad.numpy() for t in ts]
    for a, b_, r in zip(paired, serial, ref, strict=True):
        np.testing.assert_allclose(a, b_, rtol=1e-5, atol=1e-5)
        np.testing.assert_allclose(a, r, rtol=1e-4, atol=1e-4)


def test_pair_runs_both_in_order_and_raises_the_helpers_error(monkeypatch):
    monkeypatch.setattr(_parallel, "two_cores", lambda: True)
    threads = []

    def job(v):
        threads.append(threading.get_ident())
        return v

    assert _parallel.pair(lambda: job(1), lambda: job(2)) == (1, 2)
    assert len(set(threads)) == 2  # the second ran on a worker thread

    def fail():
        raise ValueError("from the helper")

    with pytest.raises(ValueError, match="from the helper"):
        _parallel.pair(lambda: 1, fail)
    # nested: the pool is in use (or this is a worker), so the inner pairs run serially
    inner = lambda: _parallel.pair(lambda: 3, lambda: 4)  # noqa: E731
    assert _parallel.pair(inner, inner) == ((3, 4), (3, 4))


def test_pair_is_serial_when_blas_is_limited_to_one_thread():
    threadpoolctl = pytest.importorskip("threadpoolctl")
    if not _blas_threads._handles():
        pytest.skip("no OpenBLAS found in this process")
    with threadpoolctl.threadpool_limits(limits=1, user_api="blas"):
        assert not _parallel.two_cores() and not _parallel.may_split()
        with _blas_threads.one_thread(1):  # inside the limit: the user's count decides
            assert not _parallel.two_cores() and not _parallel.may_split()


def _cnn_step(w):
    def step(x):
        h = F.max_pool2d(F.relu(F.conv2d(x, w, padding=1)), 2)
        loss = (h * h).sum()
        loss.backward()
        return loss

    return step


def _program(cached):
    (entry,) = cached._entries.values()
    return entry.program


def test_replay_runs_each_kernel_as_one_call():
    w = tg.randn(4, 2, 3, 3, requires_grad=True)
    step = tg.jit.cache(_cnn_step(w))
    for _ in range(3):
        step(tg.randn(3, 2, 6, 6))
    program = _program(step)
    kernels = [k for k in program.consts if callable(k) and k.__name__.endswith("_kernel")]
    names = {f"{k.__module__.rsplit('.', 1)[-1]}.{k.__name__}" for k in kernels}
    assert {
        "_conv_ops._forward_kernel",
        "_conv_ops._backward_kernel",
        "_pool_2x2._forward_kernel",
        "_pool_2x2._scatter_kernel",
    } <= names
    assert not any(getattr(k, "__name__", "") == "sliding_window_view" for k in program.consts)
    assert program.n_ops < 40  # was ~150 lines of views, copies and GEMMs


@pytest.mark.filterwarnings("ignore:invalid value encountered")
def test_replay_takes_the_nan_and_inf_branches_of_max_pooling():
    """A replay runs the kernels' value branches (NaN windows, inf gradients) as eager does;
    the recording saw only finite values."""
    w = tg.randn(4, 2, 3, 3, requires_grad=True)
    step = tg.jit.cache(_cnn_step(w))
    for _ in range(3):
        w.grad = None
        step(tg.randn(3, 2, 6, 6))
    assert step.cache_info().hits >= 1
    x = rng.standard_normal((3, 2, 6, 6)).astype(np.float32)
    x[0, :, 1:3, 1:3] = np.nan
    x[1, :, 2, 2] = np.inf
    w.grad = None
    hits = step.cache_info().hits
    step(tg.tensor(x))
    assert step.cache_info().hits == hits + 1
    replayed = w.grad.numpy().copy()
    w.grad = None
    _cnn_step(w)(tg.tensor(x))
    np.testing.assert_array_equal(replayed, w.grad.numpy())
    assert np.isnan(replayed).any()  # the NaN reached the weight gradient


def test_opaque_runs_plain_arrays_directly():
    seen = []

    def kernel(a, k):
        seen.append(type(a))
        return a * k

    out = _trace.opaque(kernel, np.arange(3.0), 2)
    np.testing.assert_array_equal(out, [0.0, 2.0, 4.0])
    assert seen == [np.ndarray]


@pytest.mark.filterwarnings("ignore:invalid value encountered")
def test_2x2_pooling_with_two_nans_in_a_window_and_odd_sizes(torch_mod):
    """Note [2x2 max pooling]: a window with two NaNs routes its gradient to the last one,
    an odd row and column get none, and the indices match torch."""
    x = np.round(rng.standard_normal((2, 3, 7, 9)))  # ties
    x[0, 1, 2, 2], x[0, 1, 3, 3] = np.nan, np.nan  # one window, two NaNs
    x[1, 0, 0, 1] = np.nan
    g = rng.standard_normal((2, 3, 3, 4))
    xt = tg.tensor(x, requires_grad=True)
    xr = torch_mod.tensor(x, requires_grad=True)
    out, idx = F.max_pool2d(xt, 2, return_indices=True)
    ref, ridx = torch_mod.nn.functional.max_pool2d(xr, 2, return_indices=True)
    np.testing.assert_array_equal(out.detach().numpy(), ref.detach().numpy())
    np.testing.assert_array_equal(idx.numpy(), ridx.numpy())
    (gx,) = tg.autograd.grad(out, xt, tg.tensor(g), create_graph=True)
    (gr,) = torch_mod.autograd.grad(ref, xr, torch_mod.tensor(g), create_graph=True)
    np.testing.assert_array_equal(gx.detach().numpy(), gr.detach().numpy())


def test_2x2_pooling_double_backward_through_the_gradient(torch_mod):
    x = rng.standard_normal((2, 2, 6, 4))
    g = rng.standard_normal((2, 2, 3, 2))
    v = rng.standard_normal(x.shape)
    res = []
    for m in (tg, torch_mod):
        xt, gt = m.tensor(x, requires_grad=True), m.tensor(g, requires_grad=True)
        (gx,) = m.autograd.grad(m.nn.functional.max_pool2d(xt, 2), xt, gt, create_graph=True)
        (ggrad,) = m.autograd.grad((gx * m.tensor(v)).sum(), gt)
        res.append(ggrad.detach().numpy())
    np.testing.assert_allclose(res[0], res[1], rtol=1e-12, atol=1e-12)


def test_no_pair_when_the_machine_is_busy(monkeypatch):
    """More runnable threads than CPUs: the second core is not free, so pairs run serially."""
    if not _blas_threads._handles() or _parallel._cpus() < 2:
        pytest.skip("needs OpenBLAS and two CPUs")
    monkeypatch.setattr(_parallel, "IGNORE_LOAD", [False])  # a benchmark's override, unset
    monkeypatch.setattr(_parallel, "_BUSY", {"at": -1.0, "busy": False})
    monkeypatch.setattr(_parallel, "_runnable", lambda: 1000)
    assert _parallel.busy() and not _parallel.two_cores() and not _parallel.may_split()
    threads = []
    _parallel.pair(
        lambda: threads.append(threading.get_ident()), lambda: threads.append(threading.get_ident())
    )
    assert set(threads) == {threading.get_ident()}
    monkeypatch.setattr(_parallel, "_BUSY", {"at": -1.0, "busy": True})
    monkeypatch.setattr(_parallel, "_runnable", lambda: 1)
    assert not _parallel.busy()
