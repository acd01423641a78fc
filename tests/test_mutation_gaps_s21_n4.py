"""Tests for the fourth list of survivors of the 21st mutation run in src/tapegrad/nn (helper
h21n): a float32 attention mask with a float16 query, the grid convolution's pair of halves,
conv3d's check of the output channels against the groups, the linear rule's owned weight
gradient, max_pool3d's indices, DDP's bucket cap and request progress, pruning's
importance_scores shape check, a prune amount of zero, weight_norm's unsafe flag, and two
differences from torch fixed with these tests: ``add_module``/``register_buffer``/
``register_parameter`` over a name held by another table raise torch's KeyError, and
``embedding`` requires a 2-D weight. Each test that names a mutant was seen to fail on it."""

import importlib
import types

import numpy as np
import pytest

import tapegrad as tg

from ._fake_world import fake_world_of_one


def test_sdpa_casts_a_float32_mask_to_a_float16_query(torch_mod):
    """_attention.py:40 [drop] 'return Tensor._wrap(m.astype(dtype))' -> 'pass': a float32
    additive mask is cast to a float16 query's dtype (kept float32, the double backward's
    scores became float32 and the product with the float16 gradient raised)."""
    rng = np.random.default_rng(0)
    q, k, v = (rng.standard_normal((1, 1, 4, 4)) for _ in range(3))
    mask = (rng.standard_normal((4, 4)) * 3).astype(np.float32)
    res = {}
    for lib in (torch_mod, tg):
        qkv = [lib.tensor(a).to(lib.float16).requires_grad_() for a in (q, k, v)]
        out = lib.nn.functional.scaled_dot_product_attention(*qkv, attn_mask=lib.tensor(mask))
        (gq,) = lib.autograd.grad(out.sum(), qkv[0], create_graph=True)
        assert out.dtype == gq.dtype == lib.float16
        res[lib] = out.detach().float().numpy(), gq.detach().float().numpy()
    for got, want in zip(res[tg], res[torch_mod], strict=True):
        np.testing.assert_allclose(got, want, atol=3e-3)


def test_grid_conv_runs_its_halves_in_parallel(monkeypatch):
    """_conv_grid.py:95 [const] 'True' -> 'False': ``halves`` says the size rule chose a
    pair, so the two halves run side by side (checked by the pair call; same values)."""
    from tapegrad.nn import _conv_grid

    rng = np.random.default_rng(1)
    xp = rng.standard_normal((4, 5, 5, 2))
    wm = rng.standard_normal((3, 2 * 2 * 2))
    bias = rng.standard_normal(3)
    whole = _conv_grid.grid_conv(xp, wm, bias, (2, 2), (4, 4), (1, 1), np.float64).copy()
    seen = []
    real = _conv_grid.pair

    def pair(*fns, **kw):
        seen.append(kw)
        return real(*fns, **kw)

    monkeypatch.setattr(_conv_grid, "pair", pair)
    split = _conv_grid.grid_conv(xp, wm, bias, (2, 2), (4, 4), (1, 1), np.float64, ((0, 2), (2, 4)))
    assert seen == [{"parallel": True}]
    np.testing.assert_allclose(split, whole, rtol=1e-12)


def test_conv3d_rejects_out_channels_not_divisible_by_groups(torch_mod):
    """_conv_more.py:62 [drop] 'ok = ok and weight.shape[0] % groups == 0' -> 'pass': 3
    output channels in 2 groups raise torch's RuntimeError (conv3d ran on)."""
    x, w = np.ones((1, 4, 3, 3, 3)), np.ones((3, 2, 2, 2, 2))
    with pytest.raises(RuntimeError):
        torch_mod.nn.functional.conv3d(torch_mod.tensor(x), torch_mod.tensor(w), groups=2)
    with pytest.raises(RuntimeError, match="groups=2 don't match"):
        tg.nn.functional.conv3d(tg.tensor(x), tg.tensor(w), groups=2)


def test_linear_weight_gradient_is_stored_without_a_copy(monkeypatch):
    """_fused.py:135 [drop] 'owned[id(gw)] = gw' -> 'pass': the weight gradient the linear
    rule makes (input without grad) is fresh, so the engine stores it as the leaf's grad
    instead of copying it (a speed rule: checked by the engine's store, same values)."""
    from tapegrad.autograd import engine

    stored = []
    real = engine._store_owned

    def spy(leaf, g):
        stored.append(leaf)
        return real(leaf, g)

    monkeypatch.setattr(engine, "_store_owned", spy)
    x = tg.tensor(np.arange(6.0).reshape(3, 2))
    w = tg.tensor(np.ones((4, 2)), requires_grad=True)
    tg.nn.functional.linear(x, w).sum().backward()
    assert any(leaf is w for leaf in stored)
    np.testing.assert_array_equal(w.grad.numpy(), np.tile([6.0, 9.0], (4, 1)))


def test_embedding_requires_a_2d_weight(torch_mod):
    """A bug fixed (found with _fused.py:167 [const] 'True' -> 'False'): tapegrad took a 3-D
    weight (and its gradient lost repeated rows in a batched backward); torch raises."""
    idx = [0, 0, 1]
    with pytest.raises(RuntimeError, match="'weight' must be 2-D"):
        torch_mod.nn.functional.embedding(torch_mod.tensor(idx), torch_mod.ones(3, 2, 2))
    with pytest.raises(RuntimeError, match="'weight' must be 2-D"):
        tg.nn.functional.embedding(tg.tensor(idx), tg.ones(3, 2, 2))


def test_max_pool3d_indices_with_a_stride_match_torch(torch_mod):
    """_pool_nd.py:125 [const] '1' -> '2' (the first '1', '(o - 2) * s'): every output
    window is read, so the values and indices match torch's."""
    x = np.random.default_rng(2).standard_normal((1, 2, 5, 6, 5))
    kw = dict(kernel_size=2, stride=(2, 1, 2), return_indices=True)
    want = torch_mod.nn.functional.max_pool3d(torch_mod.tensor(x), **kw)
    got = tg.nn.functional.max_pool3d(tg.tensor(x), **kw)
    np.testing.assert_array_equal(got[0].numpy(), want[0].numpy())
    np.testing.assert_array_equal(got[1].numpy(), want[1].numpy())


@pytest.mark.parametrize("kind", ["buffer", "parameter"])
def test_add_module_over_another_kind_raises_keyerror(torch_mod, kind):
    """A bug fixed (found with module.py:175 [drop] 'self._forget(name, self._modules)'):
    add_module over a buffer or parameter, and register_buffer over a child, raise torch's
    KeyError (tapegrad replaced them)."""
    for lib in (torch_mod, tg):
        m = lib.nn.Module()
        if kind == "buffer":
            m.register_buffer("foo", lib.zeros(2))
        else:
            m.register_parameter("foo", lib.nn.Parameter(lib.zeros(2)))
        with pytest.raises(KeyError, match="attribute 'foo' already exists"):
            m.add_module("foo", lib.nn.Linear(2, 2))
        m = lib.nn.Module()
        m.foo = lib.nn.Linear(2, 2)
        with pytest.raises(KeyError, match="attribute 'foo' already exists"):
            m.register_buffer("foo", lib.zeros(2))
        with pytest.raises(KeyError, match="attribute 'foo' already exists"):
            m.register_parameter("foo", lib.nn.Parameter(lib.zeros(2)))


def test_ddp_bucket_cap_and_request_progress(monkeypatch):
    """parallel/distributed.py:97 [const] '1024' -> '1025' (both): the cap is torch's
    bucket_cap_mb MiB. parallel/distributed.py:191 [drop] 'other.request.Test()' -> 'pass':
    a gradient that becomes ready lets MPI progress the requests in flight (one bucket per
    parameter here, so the second parameter's gradient tests the first's request)."""
    tests = []
    request = types.SimpleNamespace(Test=lambda: tests.append(1), Wait=lambda: None)
    ddp = fake_world_of_one(monkeypatch, [], Iallreduce=lambda send, recv, op: request)
    assert ddp.DistributedDataParallel(tg.nn.Linear(2, 1)).bucket_bytes_cap == 25 * 1024 * 1024
    model = ddp.DistributedDataParallel(tg.nn.Linear(2, 1), bucket_cap_mb=1e-6)
    assert model.bucket_bytes_cap == int(1e-6 * 1024 * 1024)
    model(tg.ones(3, 2)).sum().backward()
    assert tests
    np.testing.assert_array_equal(model.module.bias.grad.numpy(), [3.0])


def _prune(lib):
    return importlib.import_module(lib.__name__ + ".nn.utils.prune")


def test_prune_rejects_importance_scores_of_another_shape(torch_mod):
    """utils/_prune_base.py:103 [drop] 'raise AssertionError(...)' -> 'pass': torch raises
    AssertionError."""
    for lib in (torch_mod, tg):
        method = _prune(lib).L1Unstructured(amount=1)
        with pytest.raises(AssertionError, match="importance_scores should have the same shape"):
            method.prune(lib.ones(2, 3), importance_scores=lib.ones(3, 2))


def test_prune_amount_zero_keeps_every_entry(torch_mod):
    """utils/_prune_ties.py:48 [const] '0' -> '1': a top-0 cut selects nothing."""
    from tapegrad.nn.utils import _prune_ties

    t = tg.tensor([3.0, 1.0, 2.0])
    assert _prune_ties.topk_flat_indices(t, 0, True).numpy().tolist() == []
    for lib in (torch_mod, tg):
        m = lib.nn.Linear(3, 2)
        _prune(lib).random_structured(m, "weight", amount=0, dim=0)
        _prune(lib).l1_unstructured(m, "bias", amount=0)
        assert m.weight_mask.numpy().tolist() == [[1.0] * 3] * 2
        assert m.bias_mask.numpy().tolist() == [1.0, 1.0]


def test_weight_norm_parametrization_is_unsafe_as_torch(torch_mod):
    """utils/parametrizations.py:60 [const] 'True' -> 'False': torch registers weight_norm
    with unsafe=True, and the flag is kept on the parametrization list."""
    for lib in (torch_mod, tg):
        m = lib.nn.utils.parametrizations.weight_norm(lib.nn.Linear(3, 2))
        assert m.parametrizations.weight.unsafe is True
