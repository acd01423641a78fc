"""Threads (issue 13): backward into a shared leaf from several threads loses nothing
(Note [Concurrent accumulation]); threads training their own models, eagerly and with
tg.jit.cache, get what a single-threaded run gets (Note [Recording and threads])."""

import threading
import warnings

import numpy as np
import pytest

import tapegrad as tg
from tapegrad import nn
from tapegrad.autograd import engine
from tapegrad.jit import tracer

THREADS, ITERATIONS = 4, 50


def _run_threads(target, n=THREADS):
    errors, barrier = [], threading.Barrier(n)

    def run(i):
        try:
            barrier.wait()
            target(i)
        except BaseException as exc:  # noqa: BLE001 - reported below
            errors.append(exc)

    threads = [threading.Thread(target=run, args=(i,)) for i in range(n)]
    for t in threads:
        t.start()
    for t in threads:
        t.join()
    if errors:
        raise errors[0]


# The in-place add into an existing .grad races only on large arrays (NumPy releases the
# GIL): 1e6 elements lost 160-224 updates per run without the lock. From None, whole
# contributions were dropped, which a smaller leaf shows.
@pytest.mark.parametrize(("start", "n"), [("zeros", 1_000_000), ("none", 200_000)])
def test_concurrent_backward_into_a_shared_leaf_loses_no_update(start, n):
    w = tg.zeros(n, requires_grad=True)
    if start == "zeros":
        w.grad = tg.zeros(n)

    def work(i):
        for _ in range(ITERATIONS):
            (w * float(i + 1)).sum().backward()

    _run_threads(work)
    expected = ITERATIONS * sum(range(1, THREADS + 1))  # every contribution, exactly
    np.testing.assert_array_equal(w.grad.numpy(), np.full(n, expected, np.float32))


def test_concurrent_autograd_grad_and_create_graph_into_a_shared_leaf():
    w = tg.ones(1000, dtype=tg.float64, requires_grad=True)

    def work(i):
        for _ in range(20):
            (w * w).sum().backward(create_graph=True)

    _run_threads(work)
    np.testing.assert_array_equal(w.grad.detach().numpy(), np.full(1000, 2.0 * 20 * THREADS))


def _make(seed):
    tg.manual_seed(seed)
    model = nn.Sequential(nn.Linear(8, 16), nn.Tanh(), nn.Linear(16, 3))
    opt = tg.optim.Adam(model.parameters(), lr=0.01)
    x, y = tg.randn(32, 8), tg.randint(0, 3, (32,))
    return model, opt, x, y


def _train(model, opt, x, y, cached, iterations=ITERATIONS, read=False):
    loss_fn = nn.CrossEntropyLoss()

    def step(x, y):
        opt.zero_grad()
        loss = loss_fn(model(x), y)
        loss.backward()
        opt.step()
        return loss

    run = tg.jit.cache(step) if cached else step
    losses = []
    for _ in range(iterations):
        loss = run(x, y)
        losses.append(loss.item() if read or not cached else loss.detach().numpy().copy())
    return [p.detach().numpy().copy() for p in model.parameters()], run


@pytest.mark.parametrize("mode", ["eager", "cached", "mixed"])
def test_threads_training_their_own_models_match_a_single_threaded_run(mode):
    seeds = list(range(THREADS))
    expected = [_train(*_make(s), cached=False)[0] for s in seeds]
    jobs = [_make(s) for s in seeds]
    results, runs = [None] * THREADS, [None] * THREADS

    def work(i):
        cached = mode == "cached" or (mode == "mixed" and i % 2 == 0)
        # eager threads read every loss into Python: that must not be blamed on a recording
        results[i], runs[i] = _train(*jobs[i], cached=cached, read=not cached)

    _run_threads(work)
    for i in seeds:
        for got, want in zip(results[i], expected[i], strict=True):
            np.testing.assert_allclose(got, want, rtol=1e-5, atol=1e-6)
        if mode == "cached" or (mode == "mixed" and i % 2 == 0):
            info = runs[i].cache_info()
            assert info.hits >= ITERATIONS - 3, info  # each thread's step was replayed
    _assert_nothing_left_patched()


def _assert_nothing_left_patched():
    assert tracer.ACTIVE["recorder"] is None
    assert engine.run_backward.__module__ == engine.__name__
    assert tg.tensor(1.0)._data.__class__ is np.ndarray
    from tapegrad import _trace
    from tapegrad.creation import Generator
    from tapegrad.tensor import READ_LISTENERS, RETRACE

    assert _trace.HOOK == [None] and RETRACE == [None] and READ_LISTENERS == []
    assert isinstance(Generator.__dict__["numpy"], property)
    assert Generator.__dict__["numpy"].fget.__module__ == Generator.__module__


def test_a_failing_recording_restores_every_process_wide_hook():
    model, opt, x, y = _make(0)

    @tg.jit.cache
    def step(x):
        model(x).sum().backward()
        raise KeyError("boom")

    with pytest.raises(KeyError, match="boom"):
        step(x)
    _assert_nothing_left_patched()


def test_reads_and_draws_in_another_thread_are_not_blamed_on_a_recording():
    model, opt, x, y = _make(1)

    def step(x):
        out = model(x).sum()
        out.backward()
        return out

    cached = tg.jit.cache(step)
    done = threading.Event()

    def reader():
        while not done.is_set():
            (tg.randn(3) * 2).sum().item()  # a read and a random draw, eager

    t = threading.Thread(target=reader)
    t.start()
    try:
        with warnings.catch_warnings():
            warnings.simplefilter("error")  # going eager warns: the test fails
            for _ in range(6):
                cached(x)
    finally:
        done.set()
        t.join()
    assert cached.cache_info().hits >= 3
    _assert_nothing_left_patched()


def test_one_cached_function_called_from_several_threads():
    model, opt, x, y = _make(2)
    twin, twin_opt, _, _ = _make(2)
    params, _ = _train(twin, twin_opt, x, y, cached=False, iterations=THREADS * 10)
    loss_fn = nn.CrossEntropyLoss()

    @tg.jit.cache
    def step(x, y):
        opt.zero_grad()
        loss_fn(model(x), y).backward()
        opt.step()

    _run_threads(lambda i: [step(x, y) for _ in range(10)])
    for got, want in zip(model.parameters(), params, strict=True):
        np.testing.assert_allclose(got.detach().numpy(), want, rtol=1e-5, atol=1e-6)
