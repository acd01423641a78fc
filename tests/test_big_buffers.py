"""Note [Reused big buffers] (_big_buffers.py): a kept array is handed out again only when
nothing but the pool holds it, and per-sample gradients that the caller keeps are never
overwritten by the next call."""

import sys
import weakref

import numpy as np
import pytest

import tapegrad as tg
from tapegrad import _big_buffers, _vmap_linear

F = tg.func
NF = tg.nn.functional

pytestmark = pytest.mark.skipif(not _big_buffers._TRUSTED, reason="no exact reference counts")


@pytest.fixture
def pool(monkeypatch):
    """Pool every size (the real threshold is ~31 MiB)."""
    monkeypatch.setattr(_big_buffers, "MIN_BYTES", 0)
    monkeypatch.setattr(_big_buffers, "MAX_BYTES", 1 << 20)
    _big_buffers.clear()
    yield _big_buffers
    _big_buffers.clear()


def test_a_free_array_is_reused(pool):
    a = pool.empty((3, 4), np.float32)
    ida = id(a)
    del a
    b = pool.empty((3, 4), np.float32)
    assert id(b) == ida
    assert pool.empty((3, 4), np.float64) is not b  # another dtype, another array
    assert pool.empty((4, 3), np.float32) is not b  # another shape, another array


@pytest.mark.parametrize(
    "holder",
    [
        lambda a: tg.Tensor._wrap(a),
        lambda a: a[1:],
        lambda a: a.T,
        lambda a: memoryview(a),
        lambda a: a.reshape(-1),
        lambda a: [a],
    ],
    ids=["tensor", "view", "transpose", "memoryview", "reshape", "list"],
)
def test_an_array_held_anywhere_is_not_reused(pool, holder):
    a = pool.empty((3, 4), np.float32)
    a.fill(7)
    kept = holder(a)
    del a
    for _ in range(3):  # more calls than slots: none of them may hand out the held array
        b = pool.empty((3, 4), np.float32)
        b.fill(-1)
    assert np.all(np.asarray(kept if not isinstance(kept, list) else kept[0]) == 7)


def test_a_weak_reference_keeps_the_array_out_of_reuse(pool):
    a = pool.empty((3, 4), np.float32)
    a.fill(3)
    ref = weakref.ref(a)
    del a
    for _ in range(3):
        pool.empty((3, 4), np.float32).fill(-1)
    assert np.all(ref() == 3)


def test_a_torch_alias_keeps_the_array(pool, torch_mod):
    a = pool.empty((3, 4), np.float32)
    a.fill(5)
    t = torch_mod.from_numpy(a)
    del a
    for _ in range(3):
        pool.empty((3, 4), np.float32).fill(-1)
    assert bool((t == 5).all())


def test_slots_serve_a_caller_that_keeps_the_previous_result(pool):
    first = pool.empty((3, 4), np.float32)
    second = pool.empty((3, 4), np.float32)
    ids = {id(first), id(second)}
    del first  # the loop's "g = f()": the previous result lives on, the older one is free
    third = pool.empty((3, 4), np.float32)
    assert id(third) in ids and third is not second


def test_the_pool_keeps_at_most_max_bytes(pool, monkeypatch):
    monkeypatch.setattr(pool, "MAX_BYTES", 4 * 1000 * 2)
    for n in (100, 200, 300):
        pool.empty((n,), np.float64)  # 2 slots of n*8 bytes each may fit
    kept = sum(v.nbytes for vs in pool._POOL.values() for v in vs)
    assert kept <= pool.MAX_BYTES
    assert pool.empty((2000,), np.float64).nbytes == 16000  # too big to keep: plain
    assert ((2000,), np.dtype(np.float64)) not in pool._POOL


def test_small_arrays_are_plain(monkeypatch):
    _big_buffers.clear()
    a = _big_buffers.empty((3, 4), np.float32)
    assert not _big_buffers._POOL
    assert a.shape == (3, 4)


def test_kept_per_sample_gradients_survive_later_calls(pool, monkeypatch, torch_mod):
    """Every result kept while later calls run: each equals its own loop and torch.func
    (a reused buffer still held would be overwritten by the next call)."""
    torch = torch_mod
    monkeypatch.setattr(_vmap_linear, "CHUNK_BYTES", 4 * 5 * 4)  # the chunked kernel
    rng = np.random.default_rng(0)
    wa = rng.standard_normal((4, 5)).astype(np.float32)
    w = tg.tensor(wa)

    def loss(m):
        return lambda w, xb: (m.nn.functional.linear(xb.unsqueeze(0), w).tanh() ** 2).sum()

    per_sample = F.vmap(F.grad(loss(tg)), in_dims=(None, 0))
    theirs = torch.func.vmap(torch.func.grad(loss(torch)), in_dims=(None, 0))
    xs = [rng.standard_normal((6, 5)).astype(np.float32) for _ in range(4)]
    kept = [per_sample(w, tg.tensor(xa)) for xa in xs]
    assert len({id(g.numpy()) for g in kept}) == len(kept)
    for g, xa in zip(kept, xs):
        want = theirs(torch.tensor(wa), torch.tensor(xa)).numpy()
        np.testing.assert_allclose(g.numpy(), want, rtol=1e-5, atol=1e-6)
        for k in range(6):
            one = F.grad(loss(tg))(w, tg.tensor(xa[k])).numpy()
            np.testing.assert_allclose(g.numpy()[k], one, rtol=1e-5, atol=1e-6)
    # dropped results are reused: the next call allocates nothing new
    del kept, g
    before = {id(v) for vs in pool._POOL.values() for v in vs}
    again = per_sample(w, tg.tensor(xs[0]))
    assert id(again.numpy()) in before or sys.implementation.name != "cpython"
