"""Per-sample weight gradients written after the backward pass (Note [Deferred outer
products] in _vmap_linear.py) and one OpenBLAS block per vmap call (Note [One BLAS block
per call] in _blas_threads.py): bit-identical to the immediate kernel, against a loop and
torch.func, and never deferred where the engine or a hook could read the gradient."""

import numpy as np
import pytest

import tapegrad as tg
from tapegrad import _batched, _blas_threads, _trace, _vmap_linear
from tapegrad import func as tg_func

F = tg.func
NF = tg.nn.functional


@pytest.fixture
def deferrals(monkeypatch):
    """Small chunks (so that small layers defer) and a count of deferred products."""
    monkeypatch.setattr(_vmap_linear, "CHUNK_BYTES", 64)
    count = [0]
    real = _vmap_linear._defer

    def spy(g, x):
        count[0] += 1
        return real(g, x)

    monkeypatch.setattr(_vmap_linear, "_defer", spy)
    return count


def _mlp_params(dtype, rng):
    shapes = {"w1": (7, 5), "b1": (7,), "w2": (6, 7), "b2": (6,), "w3": (3, 6), "b3": (3,)}
    return {k: rng.standard_normal(s).astype(dtype) for k, s in shapes.items()}


def _loss(m):
    fn = m.nn.functional

    def loss(p, xb, yb):
        h = fn.linear(xb.unsqueeze(0), p["w1"], p["b1"]).relu()
        h = fn.linear(h, p["w2"], p["b2"]).relu()
        return ((fn.linear(h, p["w3"], p["b3"]) - yb.unsqueeze(0)) ** 2).mean()

    return loss


def _immediate(monkeypatch, fn, *args):
    with monkeypatch.context() as m:
        m.setattr(_vmap_linear, "may_defer", lambda: False)
        return fn(*args)


@pytest.mark.parametrize("dtype", [np.float32, np.float64])
@pytest.mark.parametrize("x_dim", [0, 1])
def test_deferred_products_equal_the_immediate_ones_a_loop_and_torch(
    monkeypatch, deferrals, torch_mod, dtype, x_dim
):
    torch = torch_mod
    rng = np.random.default_rng(0)
    pa = _mlp_params(dtype, rng)
    xa = rng.standard_normal((9, 5)).astype(dtype)
    ya = rng.standard_normal((9, 3)).astype(dtype)
    p = {k: tg.tensor(v) for k, v in pa.items()}
    x_in = tg.tensor(xa if x_dim == 0 else np.ascontiguousarray(xa.T))
    per_sample = F.vmap(F.grad(_loss(tg)), in_dims=(None, x_dim, 0))
    got = per_sample(p, x_in, tg.tensor(ya))
    assert deferrals[0] == 3  # every weight gradient went through the deferral
    assert _vmap_linear.DEFER.nodes is None and _vmap_linear.DEFER.jobs is None
    want = _immediate(monkeypatch, per_sample, p, x_in, tg.tensor(ya))
    assert deferrals[0] == 3
    tgrads = torch.func.vmap(torch.func.grad(_loss(torch)), in_dims=(None, 0, 0))(
        {k: torch.tensor(v) for k, v in pa.items()}, torch.tensor(xa), torch.tensor(ya)
    )
    tol = 1e-5 if dtype == np.float32 else 1e-12
    for k in pa:
        assert got[k].dtype == want[k].dtype and got[k].shape == (9, *pa[k].shape)
        np.testing.assert_array_equal(got[k].numpy(), want[k].numpy())
        loop = [F.grad(_loss(tg))(p, tg.tensor(xa[b]), tg.tensor(ya[b]))[k] for b in range(9)]
        loop = np.stack([g.numpy() for g in loop])
        np.testing.assert_allclose(got[k].numpy(), loop, rtol=tol, atol=tol)
        np.testing.assert_allclose(got[k].numpy(), tgrads[k].numpy(), rtol=tol, atol=tol)


def test_a_weight_used_twice_is_not_deferred(deferrals):
    """Two Nodes' gradients meet at the weight's AccumulateGrad: the engine sums them."""
    rng = np.random.default_rng(1)
    w = tg.tensor(rng.standard_normal((4, 4)).astype(np.float32))
    x = tg.tensor(rng.standard_normal((5, 4)).astype(np.float32))

    def loss(w, xb):
        return NF.linear(NF.linear(xb.unsqueeze(0), w).tanh(), w).sum()

    got = F.vmap(F.grad(loss), in_dims=(None, 0))(w, x)
    assert deferrals[0] == 0
    for b in range(5):
        want = F.grad(loss)(w, x[b]).numpy()
        np.testing.assert_allclose(got[b].numpy(), want, rtol=1e-5, atol=1e-6)


def test_a_computed_weight_is_not_deferred(deferrals):
    rng = np.random.default_rng(2)
    w = tg.tensor(rng.standard_normal((3, 4)).astype(np.float64))
    x = tg.tensor(rng.standard_normal((5, 4)))

    def loss(w, xb):
        return (NF.linear(xb.unsqueeze(0), w * 1.5) ** 2).sum()

    got = F.vmap(F.grad(loss), in_dims=(None, 0))(w, x)
    assert deferrals[0] == 0
    for b in range(5):
        np.testing.assert_allclose(got[b].numpy(), F.grad(loss)(w, x[b]).numpy(), rtol=1e-12)


def test_a_node_hook_sees_the_written_gradient(deferrals):
    """A hook on a Node of the graph may read the weight gradient: nothing is deferred."""
    rng = np.random.default_rng(3)
    w = tg.tensor(rng.standard_normal((3, 4)).astype(np.float32))
    x = tg.tensor(rng.standard_normal((5, 4)).astype(np.float32))
    seen = []

    def loss(w, xb):
        out = NF.linear(xb.unsqueeze(0), w)
        out.grad_fn.register_hook(lambda gin, gout: seen.append(gin[1].numpy().copy()))
        return (out**2).sum()

    got = F.vmap(F.grad(loss), in_dims=(None, 0))(w, x)
    assert deferrals[0] == 0
    assert len(seen) == 1
    np.testing.assert_array_equal(seen[0], got.numpy())


def test_anomaly_mode_does_not_defer(deferrals):
    rng = np.random.default_rng(4)
    p = {k: tg.tensor(v) for k, v in _mlp_params(np.float32, rng).items()}
    x = tg.tensor(rng.standard_normal((4, 5)).astype(np.float32))
    y = tg.tensor(rng.standard_normal((4, 3)).astype(np.float32))
    per_sample = F.vmap(F.grad(_loss(tg)), in_dims=(None, 0, 0))
    with tg.autograd.detect_anomaly():
        got = per_sample(p, x, y)
    assert deferrals[0] == 0
    want = per_sample(p, x, y)
    assert deferrals[0] == 3
    for k in got:
        np.testing.assert_array_equal(got[k].numpy(), want[k].numpy())


def test_an_error_in_the_pass_closes_the_deferral(monkeypatch, deferrals):
    rng = np.random.default_rng(5)
    p = {k: tg.tensor(v) for k, v in _mlp_params(np.float32, rng).items()}
    x = tg.tensor(rng.standard_normal((4, 5)).astype(np.float32))
    y = tg.tensor(rng.standard_normal((4, 3)).astype(np.float32))
    real = tg_func.engine.grad

    def failing(*args, **kwargs):
        real(*args, **kwargs)
        raise RuntimeError("boom")

    monkeypatch.setattr(tg_func.engine, "grad", failing)
    with pytest.raises(RuntimeError, match="boom"):
        F.vmap(F.grad(_loss(tg)), in_dims=(None, 0, 0))(p, x, y)
    assert deferrals[0] == 3
    assert _vmap_linear.DEFER.nodes is None and _vmap_linear.DEFER.jobs is None
    monkeypatch.setattr(tg_func.engine, "grad", real)
    assert _blas_threads._STATE["depth"] == 0 and not _blas_threads.HOLD.open


def test_chunked_and_nested_vmap_match_loops(deferrals):
    rng = np.random.default_rng(6)
    p = {k: tg.tensor(v) for k, v in _mlp_params(np.float64, rng).items()}
    x = tg.tensor(rng.standard_normal((2, 3, 5)))
    y = tg.tensor(rng.standard_normal((2, 3, 3)))
    g = F.grad(_loss(tg))
    chunked = F.vmap(g, in_dims=(None, 0, 0), chunk_size=2)(p, x[0], y[0])
    nested = F.vmap(F.vmap(g, in_dims=(None, 0, 0)), in_dims=(None, 0, 0))(p, x, y)
    for k in p:
        for i in range(2):
            for j in range(3):
                want = g(p, x[i, j], y[i, j])[k].numpy()
                np.testing.assert_allclose(nested[k][i, j].numpy(), want, rtol=1e-12)
                if i == 0:
                    np.testing.assert_allclose(chunked[k][j].numpy(), want, rtol=1e-12)


# -- Note [One BLAS block per call] ------------------------------------------------------


def _need_openblas():
    if not _blas_threads._handles():
        pytest.skip("no OpenBLAS loaded: one_thread does nothing")


def test_a_vmap_call_enters_one_block_and_restores_the_threads(monkeypatch):
    _need_openblas()
    before = [get() for get, _ in _blas_threads._handles()]
    entered = []
    real = _blas_threads._enter
    monkeypatch.setattr(_blas_threads, "_enter", lambda: (entered.append(1), real())[1])
    rng = np.random.default_rng(7)
    w = tg.tensor((rng.standard_normal((300, 300)) * 0.05).astype(np.float32))
    x = tg.tensor(rng.standard_normal((8, 300)).astype(np.float32))

    def loss(w, xb):  # 8 x 300 x 300 > 2^18: two GEMMs that want a block
        return NF.linear(NF.linear(xb.unsqueeze(0), w).tanh(), w.T.contiguous()).sum()

    got = F.vmap(F.grad(loss), in_dims=(None, 0))(w, x)
    assert len(entered) == 1
    assert _blas_threads._STATE["depth"] == 0 and not _blas_threads.HOLD.open
    assert [get() for get, _ in _blas_threads._handles()] == before
    for b in (0, 7):
        want = F.grad(loss)(w, x[b]).numpy()
        np.testing.assert_allclose(got[b].numpy(), want, rtol=1e-4, atol=1e-5)


def test_a_large_product_leaves_the_held_state():
    _need_openblas()
    hold = _blas_threads.HOLD
    hold.open = True
    try:
        assert _blas_threads.held_serial(1 << 20)
        assert hold.held and _blas_threads._STATE["depth"] == 1
        assert _blas_threads.held_serial(1 << 10)  # entered once
        assert _blas_threads._STATE["depth"] == 1
        with _blas_threads.one_thread(_blas_threads.SMALL_MNK):  # every thread for it
            assert not hold.held and _blas_threads._STATE["depth"] == 0
        assert hold.open and not _blas_threads.held_serial(_blas_threads.SMALL_MNK)
    finally:
        _blas_threads.release_hold()
    assert not hold.open and not hold.held and _blas_threads._STATE["depth"] == 0


def test_no_hold_while_a_recording_runs(monkeypatch):
    _need_openblas()
    monkeypatch.setattr(_trace, "HOOK", [lambda fn, args: fn(*args)])
    hold = _blas_threads.HOLD
    hold.open = True
    try:
        assert not _blas_threads.held_serial(1 << 20) and not hold.held
    finally:
        _blas_threads.release_hold()


# -- F.relu / F.silu under vmap: one BatchedAccess per call ------------------------------


@pytest.mark.parametrize("name", ["relu", "silu"])
def test_functional_activation_under_vmap_traps_once(monkeypatch, name):
    made = []
    real = _batched.BatchedAccess.__init__

    def init(self, tensor=None):
        made.append(1)
        real(self, tensor)

    monkeypatch.setattr(_batched.BatchedAccess, "__init__", init)
    x = tg.tensor(np.linspace(-2, 2, 12).reshape(3, 4))
    got = F.vmap(getattr(NF, name))(x)
    assert len(made) == 1
    np.testing.assert_array_equal(got.numpy(), getattr(NF, name)(x).numpy())
