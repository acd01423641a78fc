"""Per-sample weight gradients written in cache-sized chunks (Note [Outer products in
chunks] in _vmap_linear.py): bit-identical to one einsum in every branch (whole, chunks
of samples with a short last chunk, blocks of rows inside a sample), and through
``vmap(grad)`` against a loop and torch.func."""

import numpy as np
import pytest

import tapegrad as tg
from tapegrad import _vmap_linear

F = tg.func
NF = tg.nn.functional


@pytest.mark.parametrize("dtype", [np.float32, np.float64, np.float16])
@pytest.mark.parametrize(
    "chunk, n, o, i",
    [
        (1 << 20, 5, 3, 4),  # all of it in one chunk: one einsum
        (3 * 4 * 4 * 2, 7, 3, 4),  # two samples per chunk for float16..4: a short last one
        (4 * 8, 3, 5, 4),  # a sample larger than a chunk: blocks of rows
        (1, 2, 3, 5),  # a chunk smaller than one row: a row at a time
    ],
)
def test_chunks_equal_one_einsum_bitwise(monkeypatch, dtype, chunk, n, o, i):
    rng = np.random.default_rng(0)
    g = rng.standard_normal((n, o)).astype(dtype)
    x = rng.standard_normal((n, i)).astype(dtype)
    monkeypatch.setattr(_vmap_linear, "CHUNK_BYTES", chunk)
    got = _vmap_linear.outer_products(g, x)
    want = np.einsum("no,ni->noi", g, x)
    assert got.dtype == want.dtype and got.shape == want.shape
    assert got.flags.c_contiguous
    np.testing.assert_array_equal(got, want)


def test_chunks_of_non_contiguous_inputs(monkeypatch):
    """The rows of g as the per-sample linear reads them (``g3[:, 0]`` of a 3-D view)."""
    rng = np.random.default_rng(1)
    g = rng.standard_normal((6, 2, 5)).astype(np.float32)[:, 1]
    x = rng.standard_normal((6, 8)).astype(np.float32)[:, ::2]
    monkeypatch.setattr(_vmap_linear, "CHUNK_BYTES", 2 * 5 * 4 * 4)
    np.testing.assert_array_equal(_vmap_linear.outer_products(g, x), np.einsum("no,ni->noi", g, x))


@pytest.mark.parametrize("chunk", [1 << 20, 200, 8])
def test_per_sample_gradients_in_chunks_equal_a_loop_and_torch(monkeypatch, torch_mod, chunk):
    torch = torch_mod
    monkeypatch.setattr(_vmap_linear, "CHUNK_BYTES", chunk)
    rng = np.random.default_rng(2)
    wa = rng.standard_normal((6, 5)).astype(np.float32)
    ba = rng.standard_normal(6).astype(np.float32)
    xa = rng.standard_normal((9, 5)).astype(np.float32)

    def loss(m):
        def f(w, b, xb):
            return (m.nn.functional.linear(xb.unsqueeze(0), w, b).relu() ** 2).mean()

        return f

    w, b, x = tg.tensor(wa), tg.tensor(ba), tg.tensor(xa)
    per_sample = F.vmap(F.grad(loss(tg), argnums=(0, 1)), in_dims=(None, None, 0))
    gw, gb = per_sample(w, b, x)
    monkeypatch.setattr(_vmap_linear, "CHUNK_BYTES", 1 << 40)
    whole = per_sample(w, b, x)[0]
    np.testing.assert_array_equal(gw.numpy(), whole.numpy())  # chunks change no bit
    for k in range(9):
        ow, ob = F.grad(loss(tg), argnums=(0, 1))(w, b, x[k])
        np.testing.assert_allclose(gw[k].numpy(), ow.numpy(), rtol=1e-6, atol=1e-7)
        np.testing.assert_allclose(gb[k].numpy(), ob.numpy(), rtol=1e-6, atol=1e-7)
    tw, tb = torch.func.vmap(torch.func.grad(loss(torch), argnums=(0, 1)), in_dims=(None, None, 0))(
        torch.tensor(wa), torch.tensor(ba), torch.tensor(xa)
    )
    np.testing.assert_allclose(gw.numpy(), tw.numpy(), rtol=1e-6, atol=1e-6)
    np.testing.assert_allclose(gb.numpy(), tb.numpy(), rtol=1e-6, atol=1e-6)


def test_a_jit_recording_replays_the_chunked_kernel(monkeypatch):
    """The chunked kernel is one opaque call of a ``tg.jit.cache`` recording: the replay
    writes fresh gradients (its ``out=`` chunks were recorded as writes into a constant
    array before, so recordings never agreed and the cache gave up)."""
    monkeypatch.setattr(_vmap_linear, "CHUNK_BYTES", 3 * 5 * 4)
    rng = np.random.default_rng(3)
    w = tg.tensor(rng.standard_normal((3, 5)).astype(np.float32))
    b = tg.tensor(rng.standard_normal(3).astype(np.float32))

    def loss(w, b, xb):
        return (NF.linear(xb.unsqueeze(0), w, b).tanh() ** 2).mean()

    per_sample = F.vmap(F.grad(loss, argnums=(0, 1)), in_dims=(None, None, 0))
    cached = tg.jit.cache(per_sample)
    for _ in range(4):
        x = tg.tensor(rng.standard_normal((8, 5)).astype(np.float32))
        got, want = cached(w, b, x), per_sample(w, b, x)
        for g, e in zip(got, want):
            np.testing.assert_array_equal(g.numpy(), e.numpy())
    info = cached.cache_info()
    assert info.hits == 2 and info.misses == 2  # two recordings agreed, then replays
