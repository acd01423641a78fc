"""The deferred outer products of vmap(grad) written on two cores (Note [Deferred outer
products on two cores] in _vmap_linear.py): bitwise the serial kernel, errors in the
worker raised in the caller, nested vmap and chunk_size still right, and the default
rules (the user's thread limit, a busy machine, small products, the switch)."""

import os
import threading

import numpy as np
import pytest

import tapegrad as tg
from tapegrad import _blas_threads, _parallel, _vmap_linear

F = tg.func


@pytest.fixture
def split(monkeypatch):
    """The split forced on, small chunks, and a record of which thread wrote each job."""
    monkeypatch.setattr(_vmap_linear, "SPLIT", ["force"])
    monkeypatch.setattr(_vmap_linear, "CHUNK_BYTES", 64)
    writers = []
    real = _vmap_linear._outer_into

    def spy(g, x, out):
        writers.append(threading.current_thread().name)
        return real(g, x, out)

    monkeypatch.setattr(_vmap_linear, "_outer_into", spy)
    return writers


def _params(dtype, rng, sizes=(5, 7, 6, 3)):
    p = {}
    for i, (n_in, n_out) in enumerate(zip(sizes, sizes[1:]), 1):
        p[f"w{i}"] = rng.standard_normal((n_out, n_in)).astype(dtype)
        p[f"b{i}"] = rng.standard_normal(n_out).astype(dtype)
    return p


def _loss(p, xb, yb):
    h = F_linear(xb.unsqueeze(0), p["w1"], p["b1"]).relu()
    h = F_linear(h, p["w2"], p["b2"]).relu()
    return ((F_linear(h, p["w3"], p["b3"]) - yb.unsqueeze(0)) ** 2).mean()


F_linear = tg.nn.functional.linear


def _run(p, x, y, **kw):
    params = {k: tg.tensor(v) for k, v in p.items()}
    out = F.vmap(F.grad(_loss), in_dims=(None, 0, 0), **kw)(params, tg.tensor(x), tg.tensor(y))
    return {k: v.numpy().copy() for k, v in out.items()}


@pytest.mark.parametrize("dtype", [np.float32, np.float64])
@pytest.mark.parametrize("batch", [1, 2, 9])
def test_split_products_are_bitwise_the_serial_ones(monkeypatch, split, dtype, batch):
    rng = np.random.default_rng(batch)
    p = _params(dtype, rng)
    x = rng.standard_normal((batch, 5)).astype(dtype)
    y = rng.standard_normal((batch, 3)).astype(dtype)
    got = _run(p, x, y)
    assert any(name.startswith("tapegrad-intraop") for name in split), split
    with monkeypatch.context() as m:
        m.setattr(_vmap_linear, "SPLIT", ["0"])
        del split[:]
        want = _run(p, x, y)
        assert split and not any(name.startswith("tapegrad-intraop") for name in split)
    for k in want:
        assert got[k].dtype == want[k].dtype and got[k].shape == want[k].shape
        np.testing.assert_array_equal(got[k], want[k])
    # and against the loop of grad per sample
    params = {k: tg.tensor(v) for k, v in p.items()}
    for b in range(batch):
        one = F.grad(_loss)(params, tg.tensor(x[b]), tg.tensor(y[b]))
        for k in want:
            np.testing.assert_allclose(got[k][b], one[k].numpy(), rtol=1e-5, atol=1e-6)


def test_halves_cover_every_row_once():
    g = np.arange(6.0).reshape(1, 6)
    x = np.arange(4.0).reshape(1, 4)
    out = np.full((1, 6, 4), np.nan)
    first, second = _vmap_linear._halves([(g, x, out), (g[:, :1], x, out[:, :1])])
    assert len(first) == 2 and len(second) == 1  # a single row is not cut
    _vmap_linear._write(first)
    _vmap_linear._write(second)
    np.testing.assert_array_equal(out, np.einsum("no,ni->noi", g, x))


def test_an_error_in_the_worker_is_raised_in_the_caller(monkeypatch, split):
    real = _vmap_linear._outer_into

    def fail_on_worker(g, x, out):
        if threading.current_thread().name.startswith("tapegrad-intraop"):
            raise RuntimeError("worker failed")
        return real(g, x, out)

    monkeypatch.setattr(_vmap_linear, "_outer_into", fail_on_worker)
    rng = np.random.default_rng(0)
    p = _params(np.float64, rng)
    x, y = rng.standard_normal((4, 5)), rng.standard_normal((4, 3))
    with pytest.raises(RuntimeError, match="worker failed"):
        _run(p, x, y)
    assert _vmap_linear.DEFER.nodes is None and _vmap_linear.DEFER.jobs is None
    monkeypatch.setattr(_vmap_linear, "_outer_into", real)
    _run(p, x, y)  # the pool and the deferral still work


def test_nested_vmap_and_chunk_size_stay_right(split):
    rng = np.random.default_rng(3)
    p = _params(np.float64, rng)
    x, y = rng.standard_normal((2, 3, 5)), rng.standard_normal((2, 3, 3))
    params = {k: tg.tensor(v) for k, v in p.items()}
    g = F.grad(_loss)
    chunked = F.vmap(g, in_dims=(None, 0, 0), chunk_size=2)(
        params, tg.tensor(x[0]), tg.tensor(y[0])
    )
    nested = F.vmap(F.vmap(g, in_dims=(None, 0, 0)), in_dims=(None, 0, 0))(
        params, tg.tensor(x), tg.tensor(y)
    )
    for i in range(2):
        for j in range(3):
            one = g(params, tg.tensor(x[i, j]), tg.tensor(y[i, j]))
            for k in p:
                want = one[k].numpy()
                np.testing.assert_allclose(nested[k][i, j].numpy(), want, rtol=1e-12)
                if i == 0:
                    np.testing.assert_allclose(chunked[k][j].numpy(), want, rtol=1e-12)


def test_the_default_rules(monkeypatch):
    big = _vmap_linear.SPLIT_BYTES
    monkeypatch.setattr(_vmap_linear, "SPLIT", ["auto"])
    monkeypatch.setattr(_vmap_linear, "_CPUS", [2])
    monkeypatch.setattr(_parallel, "busy", lambda: False)
    monkeypatch.setattr(_vmap_linear, "user_threads", lambda: 2)
    assert _vmap_linear._split_now(big)
    assert not _vmap_linear._split_now(big - 1)  # too small to pay for a wake-up
    monkeypatch.setattr(_vmap_linear, "user_threads", lambda: 1)  # threadpool_limits(1)
    assert not _vmap_linear._split_now(big)
    monkeypatch.setattr(_vmap_linear, "user_threads", lambda: 2)
    monkeypatch.setattr(_parallel, "busy", lambda: True)  # no free core
    assert not _vmap_linear._split_now(big)
    monkeypatch.setattr(_parallel, "busy", lambda: False)
    monkeypatch.setattr(_vmap_linear, "_CPUS", [1])
    assert not _vmap_linear._split_now(big)
    monkeypatch.setattr(_vmap_linear, "_CPUS", [2])
    monkeypatch.setattr(_vmap_linear, "SPLIT", ["0"])
    assert not _vmap_linear._split_now(big)
    monkeypatch.setattr(_vmap_linear, "SPLIT", ["force"])
    monkeypatch.setattr(_parallel, "busy", lambda: True)
    assert _vmap_linear._split_now(1)


def test_user_threads_reads_the_limit_inside_a_held_block():
    """The rule asks for the user's count, not the one-thread state of the vmap call."""
    if not _blas_threads._handles():
        pytest.skip("no OpenBLAS found")
    threadpoolctl = pytest.importorskip("threadpoolctl")
    with threadpoolctl.threadpool_limits(1):
        with _blas_threads.one_thread(0):
            assert _blas_threads.user_threads() == 1
    with threadpoolctl.threadpool_limits(2):
        with _blas_threads.one_thread(0):
            assert _blas_threads.user_threads() == 2


@pytest.mark.parametrize(
    "env, want",
    [
        ({}, "0"),
        ({"TAPEGRAD_VMAP_SPLIT": "0"}, "0"),
        ({"TAPEGRAD_VMAP_SPLIT": " Force"}, "force"),
        ({"TAPEGRAD_VMAP_SPLIT": "force", "TAPEGRAD_INTRA_OP": "0"}, "0"),
        ({"TAPEGRAD_INTRA_OP": "kernels"}, "0"),
        ({"TAPEGRAD_VMAP_SPLIT": "auto"}, "auto"),
    ],
    ids=["default", "off", "force", "intra-op-off", "intra-op-kernels", "auto"],
)
def test_the_switch(env, want):
    assert _vmap_linear.split_mode(env) == want


def test_a_bad_switch_names_the_values():
    with pytest.raises(ValueError, match="TAPEGRAD_VMAP_SPLIT must be 0, auto or force"):
        _vmap_linear.split_mode({"TAPEGRAD_VMAP_SPLIT": "2"})


def test_the_switch_is_read_at_import():
    """(A fresh interpreter would take seconds under load: the import's own line is checked.)"""
    assert _vmap_linear.SPLIT[0] == _vmap_linear.split_mode(os.environ)


def test_the_users_thread_limit_keeps_a_vmap_call_serial(monkeypatch, split):
    """End to end under the default rule (a free second core assumed): threadpoolctl's
    limit, read through the vmap call's own one-thread block, decides."""
    if not _blas_threads._handles():
        pytest.skip("no OpenBLAS found")
    threadpoolctl = pytest.importorskip("threadpoolctl")
    monkeypatch.setattr(_vmap_linear, "SPLIT", ["auto"])
    monkeypatch.setattr(_vmap_linear, "SPLIT_BYTES", 0)
    monkeypatch.setattr(_vmap_linear, "_CPUS", [2])
    monkeypatch.setattr(_parallel, "busy", lambda: False)
    rng = np.random.default_rng(5)
    p = _params(np.float32, rng)
    x = rng.standard_normal((6, 5)).astype(np.float32)
    y = rng.standard_normal((6, 3)).astype(np.float32)
    on_worker = []
    for limit in (1, 2):
        del split[:]
        with threadpoolctl.threadpool_limits(limit):
            _run(p, x, y)
        on_worker.append(any(name.startswith("tapegrad-intraop") for name in split))
    assert on_worker == [False, True]
