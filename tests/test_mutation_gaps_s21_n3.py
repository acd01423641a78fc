"""Tests for the third list of survivors of the 21st mutation run in src/tapegrad/nn (helper
h21n): 1x1 max pooling's indices, the ATen GRU's packed overload called with keywords, the
GRU cell's double backward on an unbatched input, DDP's per-step used-parameter flags,
SyncBatchNorm's shared batch counter, and the version counters and dtype of the gradient
clipping functions and of spectral_norm's power iteration (three differences from torch,
fixed with these tests: clip_grad_value_ and spectral_norm bumped the versions once where
torch does twice / once per iteration, and the norm of complex gradients was complex).
Each test that names a mutant was seen to fail on it."""

import types

import numpy as np
import pytest

import tapegrad as tg

from ._fake_world import fake_world_of_one


def test_max_pool_with_a_one_by_one_kernel_returns_torchs_indices(torch_mod):
    """_pool_ops.py:198 [const] '0' -> '1' (both occurrences, 'taps[1]'): a 1x1 kernel tiles
    the input with a single tap, and its indices are every cell's own."""
    x = np.arange(24.0).reshape(1, 2, 3, 4) % 5
    want_out, want_idx = torch_mod.nn.functional.max_pool2d(
        torch_mod.tensor(x), 1, return_indices=True
    )
    out, idx = tg.nn.functional.max_pool2d(tg.tensor(x), 1, return_indices=True)
    np.testing.assert_array_equal(out.numpy(), want_out.numpy())
    assert idx.dtype == tg.int64
    np.testing.assert_array_equal(idx.numpy(), want_idx.numpy())


def test_aten_gru_packed_overload_with_the_rest_as_keywords(torch_mod):
    """_rnn_aten.py:50 [const] '2' -> '3' ('len(args) > 3'): with exactly three positional
    arguments (data, batch_sizes, hx) the third is hx, so the call is the packed overload."""
    torch = torch_mod
    rng = np.random.default_rng(0)
    data, h = rng.standard_normal((3, 3)), rng.standard_normal((1, 2, 4))
    torch.manual_seed(0)
    params = [p.detach().double().numpy() for p in torch.nn.GRU(3, 4)._flat_weights]
    outs = []
    for lib in (torch, tg):
        out, h_n = lib.gru(
            lib.tensor(data),
            lib.tensor([2, 1]),
            lib.tensor(h),
            params=[lib.tensor(p) for p in params],
            has_biases=True,
            num_layers=1,
            dropout=0.0,
            train=False,
            bidirectional=False,
        )
        outs.append((out.numpy(), h_n.numpy()))
    for got, want in zip(outs[1], outs[0]):
        assert got.shape == want.shape
        np.testing.assert_allclose(got, want, rtol=1e-12)


def test_gru_cell_double_backward_and_its_refusal_of_an_unbatched_input(torch_mod):
    """_rnn_ops.py (gru_pointwise's graph-building backward): second derivatives of a (1, H)
    input as torch's; a 1-D input raises torch's IndexError (torch.gru_cell takes batches
    only; GRUCell adds the batch dim), so the gates' split dim (-1 or 1) is the same."""
    rng = np.random.default_rng(1)
    arrays = [rng.standard_normal(s) for s in ((3,), (2,), (6, 3), (6, 2))]

    def second(lib, batched):
        leaves = [lib.tensor(a, requires_grad=True) for a in arrays]
        x, h, w_ih, w_hh = leaves
        if batched:
            x, h = x[None], h[None]
        (gx,) = lib.autograd.grad(lib.gru_cell(x, h, w_ih, w_hh).sum(), x, create_graph=True)
        return [g.numpy() for g in lib.autograd.grad((gx * gx).sum(), leaves)]

    want = second(torch_mod, True)
    for got, w in zip(second(tg, True), want):
        np.testing.assert_allclose(got, w, rtol=1e-10, atol=1e-12)
    for lib in (torch_mod, tg):
        with pytest.raises(IndexError):
            second(lib, False)


class _Either(tg.nn.Module):
    def __init__(self):
        super().__init__()
        self.a = tg.nn.Linear(2, 1)
        self.b = tg.nn.Linear(2, 1)
        self.use_a = True

    def forward(self, x):
        return self.a(x) if self.use_a else self.b(x)


def test_ddp_hands_each_step_a_fresh_used_flags_array(monkeypatch):
    """parallel/distributed.py:161 [drop] 'bucket.used = np.zeros(...)' -> 'pass': with
    find_unused_parameters the flags are all-reduced in place by a non-blocking request, so
    each step writes its flags into a new array: the previous step's request (which a
    backward that raised never waits for) keeps its own, untouched."""
    handed = []  # (array, its values when handed over) of each MAX all-reduce
    request = types.SimpleNamespace(Test=lambda: True, Wait=lambda: None)

    def iallreduce(send, recv, op):
        if op == "max":
            handed.append((recv, recv.copy()))
        return request

    ddp = fake_world_of_one(monkeypatch, [], Iallreduce=iallreduce)
    inner = _Either()
    model = ddp.DistributedDataParallel(inner, find_unused_parameters=True)
    model(tg.ones(3, 2)).sum().backward()
    inner.use_a = False
    model(tg.ones(3, 2)).sum().backward()
    assert len(handed) == 2
    (first, first_values), (second, second_values) = handed
    assert first is not second
    np.testing.assert_array_equal(first, first_values)
    assert sorted(first_values.tolist()) == [0, 0, 1, 1]
    assert not np.array_equal(first_values, second_values)
    assert inner.a.weight.grad.tolist() == [[3.0, 3.0]]
    assert inner.b.weight.grad.tolist() == [[3.0, 3.0]]


def test_convert_sync_batchnorm_shares_the_batch_counter(torch_mod):
    """sync_batchnorm.py:78 [drop] 'out.num_batches_tracked = module.num_batches_tracked'
    -> 'pass': the converted module counts on from the original's batches, as torch."""
    x = np.arange(12.0, dtype=np.float32).reshape(4, 3)
    counts = []
    for lib in (torch_mod, tg):
        bn = lib.nn.BatchNorm1d(3)
        bn(lib.tensor(x))
        bn(lib.tensor(x))
        conv = lib.nn.SyncBatchNorm.convert_sync_batchnorm(lib.nn.Sequential(bn))[0]
        assert conv.num_batches_tracked is bn.num_batches_tracked
        counts.append(int(conv.num_batches_tracked))
    assert counts == [2, 2]


@pytest.mark.parametrize("foreach", [None, False, True])
def test_clip_grad_value_bumps_the_gradients_version_as_torch(torch_mod, foreach):
    """clip_grad.py:134 [const] '1' -> '2' (and the fix: torch's default foreach path clamps
    twice, so the gradient's version moves by 2; by 1 with foreach=False)."""
    steps = []
    for lib in (torch_mod, tg):
        w = lib.tensor([3.0, -4.0], requires_grad=True)
        (w * w).sum().backward()
        before = w.grad._version
        lib.nn.utils.clip_grad_value_([w], 1.0, foreach=foreach)
        steps.append(w.grad._version - before)
        assert w.grad.tolist() == [1.0, -1.0]
    assert steps[1] == steps[0]


@pytest.mark.parametrize("norm_type", [2.0, float("inf")])
def test_gradient_norm_of_complex_gradients_is_real_as_torch(torch_mod, norm_type):
    """A bug found at clip_grad.py:77 ('total = np.asarray(total, dtype=dtype)', whose drop is
    equivalent): the norm of complex64 gradients was a complex64 tensor; torch's is float32,
    and the clipped gradients stay complex64."""
    grads = [np.array([3.0 + 4.0j, -1.0j], np.complex64), np.array([2.0 - 2.0j], np.complex64)]
    results = []
    for lib in (torch_mod, tg):
        ws = [lib.tensor(np.zeros_like(g), requires_grad=True) for g in grads]
        for w, g in zip(ws, grads):
            w.grad = lib.tensor(g)
        total = lib.nn.utils.clip_grad_norm_(ws, 1.0, norm_type=norm_type)
        results.append((total, [w.grad.numpy() for w in ws]))
    (want, want_grads), (got, got_grads) = results
    assert got.dtype == tg.float32 and want.dtype == torch_mod.float32
    assert got.shape == ()
    np.testing.assert_allclose(got.numpy(), want.numpy(), rtol=1e-6)
    for g, w in zip(got_grads, want_grads):
        assert g.dtype == w.dtype
        np.testing.assert_allclose(g, w, rtol=1e-6)


@pytest.mark.parametrize("n", [1, 3])
def test_spectral_norm_power_iteration_bumps_versions_per_iteration_as_torch(torch_mod, n):
    """parametrizations.py:104 [drop] 'self._u._vc.value += 1' -> 'pass' and [const] '1' ->
    '2' (and the fix: torch writes _u and _v once per power iteration, so their versions
    move by n_power_iterations per training forward and by 15 more at construction)."""
    versions = []
    for lib in (torch_mod, tg):
        lib.manual_seed(0)
        lin = lib.nn.utils.parametrizations.spectral_norm(lib.nn.Linear(3, 4), n_power_iterations=n)
        p = lin.parametrizations.weight[0]
        seen = [(p._u._version, p._v._version)]
        lin(lib.ones(2, 3))
        seen.append((p._u._version, p._v._version))
        lin.eval()
        lin(lib.ones(2, 3))
        seen.append((p._u._version, p._v._version))
        versions.append(seen)
    assert versions[1] == versions[0]
