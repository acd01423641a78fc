"""Tests for survivors of the 21st mutation session (list a3): autograd/profiler.py:103,
profiler_util.py:14 and :182, saved_hooks.py:48, forward_ad.py:119-120, and nn's
_attention_split.py:72, _conv_ops.py:329, _dropout_variants.py:109,
_layers_functional.py:261, _losses_pointwise.py:65, _norm_split.py:29, _pool_more.py:127.
Each test was seen to fail on its mutant. Where both ways compute the same values (a fast
path), the test checks which path runs, as tests/test_mutation_gaps_seed1807.py does."""

import warnings

import numpy as np
import pytest

import tapegrad as tg
from tapegrad import _parallel
from tapegrad.autograd import graph


def _spy(monkeypatch, module, name):
    """Wrap ``module.name``; the returned list gets ``(args, result)`` of each call."""
    calls = []
    real = getattr(module, name)

    def wrapper(*args, **kwargs):
        out = real(*args, **kwargs)
        calls.append((args, out))
        return out

    monkeypatch.setattr(module, name, wrapper)
    return calls


@pytest.fixture
def pool_step():
    """The pool on in step mode (``_parallel.STEP[0]``, a shared one-item list)."""
    old = _parallel.STEP[0]
    _parallel.STEP[0] = True
    try:
        yield
    finally:
        _parallel.STEP[0] = old


# -- autograd/profiler.py, profiler_util.py, saved_hooks.py ----------------------------------


def test_profile_cuda_unavailable_warning_points_at_the_caller():
    """profiler.py:103 [const] '2' -> '3': "CUDA is not available" is reported at the line
    that made the profile (stacklevel=2), as torch's warning is."""
    assert not tg.cuda.is_available()
    with warnings.catch_warnings(record=True) as rec:
        warnings.simplefilter("always")
        prof = tg.autograd.profiler.profile(use_device="cuda")
    msgs = [w for w in rec if "CUDA is not available" in str(w.message)]
    assert len(msgs) == 1
    assert msgs[0].filename == __file__
    assert prof.use_device is None


def test_format_time_switches_to_seconds_at_one_second(torch_mod):
    """profiler_util.py:14 [compare] 'time_us >= 1e6' -> '(time_us > 1000000.0)': exactly
    one second prints as seconds, as torch's _format_time."""
    from torch.autograd import profiler_util as torch_util

    from tapegrad.autograd import profiler_util

    for t in (1e6, 999999.9, 1e3, 999.9, 2.5e6):
        assert profiler_util._format_time(t) == torch_util._format_time(t)
    assert profiler_util._format_time(1e6) == "1.000s"


def test_profiler_table_header_is_printed_above_the_table():
    """profiler_util.py:182 [drop] 'rows = ["=" * len(line), header] + rows': table(header=)
    opens with a rule of '=' and the header, as torch's table."""
    with tg.autograd.profiler.profile() as prof:
        (tg.ones(3) * 2).sum()
    plain = prof.key_averages().table()
    text = prof.key_averages().table(header="MY HEADER")
    lines = text.split("\n")
    assert lines[1] == "MY HEADER"
    assert set(lines[0]) == {"="} and len(lines[0]) == len(plain.split("\n")[0]) - 2  # as torch
    assert "\n".join(lines[2:]) == plain


def test_saved_tensors_hooks_keeps_its_hooks(torch_mod):
    """saved_hooks.py:48 [drop] 'self.pack_hook = pack_hook' -> 'pass': the object holds
    both hooks as attributes, as torch's does."""

    def pack(t):
        return t

    def unpack(t):
        return t

    for lib in (torch_mod, tg):
        h = lib.autograd.graph.saved_tensors_hooks(pack, unpack)
        assert h.pack_hook is pack
        assert h.unpack_hook is unpack


# -- autograd/forward_ad.py ------------------------------------------------------------------


def test_closing_the_last_dual_level_uninstalls_the_forward_hooks():
    """forward_ad.py:120 [drop] 'graph.FORWARD[0] = None' -> 'pass' and [const] '0' -> '1'
    (FORWARD[1] set twice), forward_ad.py:119 [const] '0' -> '1' (both): once no dual level
    is open, no forward hook stays installed (every recorded op would otherwise call it), nor
    the no_grad hook, and the count of open levels is back to 0. (forward_ad.py:119 [drop]
    '_OPEN[0] = 0': that clamp is gone; the count now changes under a lock, together with the
    hooks, so it cannot drift below 0, and the hooks go when it reaches 0.)"""
    fw = tg.autograd.forward_ad
    for _ in range(2):
        with fw.dual_level():
            x = fw.make_dual(tg.tensor([1.0, 2.0]), tg.tensor([1.0, 1.0]))
            assert graph.FORWARD[0] is not None and graph.FORWARD[1] is not None
            np.testing.assert_array_equal(
                fw.unpack_dual(x * x).tangent.detach().numpy(), [2.0, 4.0]
            )
        assert graph.FORWARD == [None, None]
        assert tg.grad_mode.NO_GRAD_HOOK[0] is None
        assert forward_ad_open() == 0


def forward_ad_open():
    from tapegrad.autograd import forward_ad

    return forward_ad._OPEN[0]


# -- nn: fast paths chosen by size -----------------------------------------------------------


def test_attention_backward_uses_the_split_gradients(torch_mod, monkeypatch, pool_step):
    """_attention_split.py:72 [drop] 'return gq, gk, gv' -> 'pass': with the pool on (STEP)
    and p large enough, the split kernel's gradients are the ones returned (not recomputed
    by the one-pass rule); values as torch's."""
    from tapegrad.nn import _attention_split

    calls = _spy(monkeypatch, _attention_split, "backward")
    rng = np.random.default_rng(0)
    q, k, v = (rng.standard_normal((2, 4, 128, 8)) for _ in range(3))
    grads = []
    for lib in (torch_mod, tg):
        ts = [lib.tensor(a, requires_grad=True) for a in (q, k, v)]
        out = lib.nn.functional.scaled_dot_product_attention(*ts)
        (out * lib.tensor(q)).sum().backward()
        grads.append([t.grad.detach().numpy() for t in ts])
    assert len(calls) == 1 and calls[0][1] is not None
    for want, got in zip(*grads):
        np.testing.assert_allclose(got, want, rtol=1e-10, atol=1e-12)


def test_grid_convolution_sizes_its_batch_split_by_multiply_adds(monkeypatch):
    """_conv_ops.py:329 [const] '1' -> '2' (xp[..., :1] -> xp[..., :2]): the grid path asks
    _halves about N·Hp·Wp·(O·C·kh·kw) multiply-adds, one channel's pixels times the weight."""
    from tapegrad.nn import _conv_grid, _conv_ops

    calls = _spy(monkeypatch, _conv_ops, "_halves")
    grid = _spy(monkeypatch, _conv_grid, "grid_conv")
    x = tg.tensor(np.ones((2, 3, 6, 5), np.float32))
    w = tg.tensor(np.ones((4, 3, 3, 2), np.float32))
    out = tg.nn.functional.conv2d(x, w, padding=1)
    assert len(grid) == 1
    assert [c[0] for c in calls] == [(2, 2 * 8 * 7 * (4 * 3 * 3 * 2))]
    assert out.shape == (2, 4, 6, 6)


def test_layer_norm_splits_a_batch_of_two(monkeypatch, torch_mod, pool_step):
    """_norm_split.py:29 [const] '2' -> '3' (x.shape[0] >= 3): with the pool on, a batch of
    two rows is large enough to split (Note [Intra-op parallelism]); values as torch's."""
    from tapegrad.nn import _norm_split

    calls = _spy(monkeypatch, _norm_split, "forward")
    x = np.random.default_rng(1).standard_normal((2, 2 * _parallel.MIN_ELEMENTS // 2))
    w, b = np.linspace(0.5, 1.5, x.shape[1]), np.linspace(-1, 1, x.shape[1])
    got = tg.nn.functional.layer_norm(tg.tensor(x), (x.shape[1],), tg.tensor(w), tg.tensor(b))
    want = torch_mod.nn.functional.layer_norm(
        torch_mod.tensor(x), (x.shape[1],), torch_mod.tensor(w), torch_mod.tensor(b)
    )
    assert len(calls) == 1 and calls[0][1] is not None
    np.testing.assert_allclose(got.numpy(), want.numpy(), rtol=1e-10, atol=1e-12)


def test_adaptive_max_pool_skips_a_dim_whose_size_is_kept(monkeypatch, torch_mod):
    """_pool_more.py:127 [drop] 'return x' -> 'pass': a dim whose output size equals its
    input size is passed through, with no windows (and no per-window max) taken; values and
    gradients as torch's."""
    from tapegrad.nn import _pool_more

    calls = _spy(monkeypatch, _pool_more, "_windows")
    a = np.random.default_rng(2).standard_normal((1, 2, 3, 5))
    res = []
    for lib, size in ((torch_mod, (3, 5)), (tg, (3, 5)), (torch_mod, (3, 2)), (tg, (3, 2))):
        x = lib.tensor(a, requires_grad=True)
        out = lib.nn.functional.adaptive_max_pool2d(x, size)
        out.backward(lib.ones_like(out))
        res.append((out.detach().numpy(), x.grad.numpy()))
    assert [c[0] for c in calls] == [(5, 2)]  # the second call's width only
    for (w_out, w_grad), (g_out, g_grad) in (res[:2], res[2:]):
        np.testing.assert_array_equal(g_out, w_out)
        np.testing.assert_array_equal(g_grad, w_grad)


# -- nn: values --------------------------------------------------------------------------------


def test_alpha_dropout_with_a_tiny_p_still_transforms(torch_mod):
    """_dropout_variants.py:109 [const] '0.0' -> '0.001': only p == 0 returns the input
    itself (as torch); p = 0.001 applies the affine map a·x + b (a != 1) to every element."""
    x = tg.tensor(np.linspace(-1.0, 1.0, 64))
    assert tg.nn.functional.alpha_dropout(x, 0.0, True) is x
    y = torch_mod.randn(3)
    assert torch_mod.nn.functional.alpha_dropout(y, 0.0, True) is y
    out = tg.nn.functional.alpha_dropout(x, 0.001, True).numpy()
    assert not np.any(out == x.numpy())


def test_embedding_bag_padding_idx_zero_matches_torch(torch_mod):
    """_layers_functional.py:261 [compare] 'padding_idx < 0' -> '(padding_idx <= 0)':
    padding_idx=0 is row 0 (not wrapped to n): its entries are left out of every bag."""
    w = np.arange(12.0).reshape(4, 3)
    idx = [[0, 1], [2, 0], [0, 0]]
    for mode in ("sum", "mean", "max"):
        want = torch_mod.nn.functional.embedding_bag(
            torch_mod.tensor(idx), torch_mod.tensor(w), padding_idx=0, mode=mode
        )
        got = tg.nn.functional.embedding_bag(tg.tensor(idx), tg.tensor(w), padding_idx=0, mode=mode)
        np.testing.assert_array_equal(got.numpy(), want.numpy())


def test_pointwise_losses_take_array_targets_and_weights(torch_mod):
    """_losses_pointwise.py:65 [drop] 'return Tensor._wrap(np.asarray(...))' -> 'pass':
    tapegrad (unlike torch, which needs Tensors) takes a NumPy/list target or weight as a
    Tensor of the input's dtype; values as torch's with Tensors."""
    x = np.array([0.2, 0.7, 0.5], np.float32)
    t = [0.0, 1.0, 1.0]
    wt = np.array([2.0, 3.0, 0.5])
    F, tF = tg.nn.functional, torch_mod.nn.functional
    got = F.binary_cross_entropy(tg.tensor(x), t, weight=wt)
    want = tF.binary_cross_entropy(
        torch_mod.tensor(x),
        torch_mod.tensor(t),
        weight=torch_mod.tensor(wt, dtype=torch_mod.float32),
    )
    assert got.dtype == tg.float32
    np.testing.assert_allclose(got.numpy(), want.numpy(), rtol=1e-6)
    got = F.soft_margin_loss(tg.tensor(x), np.array([1.0, -1.0, 1.0]))
    want = tF.soft_margin_loss(torch_mod.tensor(x), torch_mod.tensor([1.0, -1.0, 1.0]))
    np.testing.assert_allclose(got.numpy(), want.numpy(), rtol=1e-6)


# -- autograd/engine.py ----------------------------------------------------------------------


def test_tensor_rule_chain_and_diamond_backward_match_torch(torch_mod):
    """engine.py:479 [const] '0' -> '1' ('count == 1') and [compare] ('count != 0'): in the
    Tensor-rule loop a Node is ready once its last consumer has run, neither earlier nor
    later (a chain of sin, whose rule runs on Tensors, and a diamond through it)."""
    a = np.array([0.5, -1.0, 2.0])
    res = []
    for lib in (torch_mod, tg):
        x = lib.tensor(a, requires_grad=True)
        s = x.sin()
        (s.sin().cos() + s * s).sum().backward()
        res.append(x.grad.numpy())
    np.testing.assert_allclose(res[1], res[0], rtol=1e-12, atol=1e-14)


def test_linear_weight_gradient_of_a_batched_input_matches_torch(torch_mod):
    """_fused.py:130 [const] '1' -> '2' (the one in ``wd.shape[1]``): the weight gradient
    folds the (2, 3, 4) input to (6, 4) rows of in_features (the one in ``reshape(-1, ...)``
    is equivalent: NumPy takes any negative size as the unknown one)."""
    rng = np.random.default_rng(3)
    x, w, b = rng.standard_normal((2, 3, 4)), rng.standard_normal((5, 4)), rng.standard_normal(5)
    res = []
    for lib in (torch_mod, tg):
        for need_x in (True, False):
            ts = [lib.tensor(x, requires_grad=need_x)] + [
                lib.tensor(a, requires_grad=True) for a in (w, b)
            ]
            lib.nn.functional.linear(*ts).pow(2).sum().backward()
            res.append([t.grad.numpy() for t in ts if t.requires_grad])
    for want, got in zip(res[:2], res[2:]):
        for a, c in zip(want, got):
            np.testing.assert_allclose(c, a, rtol=1e-12, atol=1e-12)
