"""Tests for survivors of the seed-2212 mutation sample (list t, the second half): each is
seen to fail on its mutant.

Covers nn/_fold.py:85, nn/utils/_prune_ties.py:80 and :81, nn/_attention.py:118,
nn/losses_more.py:220, ops/arithmetic.py:409, nn/_losses_margin.py:216,
autograd/anomaly.py:76, nn/_linear_split.py:85 (a path), nn/lazy.py:146 and
nn/_attention_split.py:29 (a path); and two bugs found on the way, fixed:
multilabel_margin_loss's range check of every target entry, with torch's RuntimeError, and
the anomaly context managers' ``as`` (None, as torch).
"""

import re
import warnings

import numpy as np
import pytest

import tapegrad as tg
import tapegrad.nn.functional as F


@pytest.mark.parametrize("padding", [(1, 2), (2, 0)])
def test_fold_with_a_different_padding_per_dim_matches_torch(torch_mod, padding):
    """_fold.py:85 [const] ``p[0]`` -> ``p[1]`` (either of the two): fold pads the height by
    padding[0] on both sides; with padding (1, 2) or (2, 0) the columns land where torch
    puts them, and the gradient is unfold's, as torch."""
    size, k, stride = (5, 4), (2, 3), (2, 1)
    tf = torch_mod.nn.functional
    blocks = tf.unfold(torch_mod.zeros(1, 2, *size), k, padding=padding, stride=stride).shape
    rng = np.random.default_rng(0)
    x = rng.standard_normal(blocks).astype(np.float32)
    w = rng.standard_normal((1, 2) + size).astype(np.float32)
    tx = torch_mod.tensor(x, requires_grad=True)
    gx = tg.tensor(x, requires_grad=True)
    to = tf.fold(tx, size, k, padding=padding, stride=stride)
    go = F.fold(gx, size, k, padding=padding, stride=stride)
    (to * torch_mod.tensor(w)).sum().backward()
    (go * tg.tensor(w)).sum().backward()
    np.testing.assert_allclose(go.detach().numpy(), to.detach().numpy(), rtol=1e-6, atol=1e-6)
    np.testing.assert_allclose(gx.grad.numpy(), tx.grad.numpy(), rtol=1e-6, atol=1e-6)


def test_topk_indices_after_introselect_runs_out_of_depth_are_torchs(torch_mod):
    """utils/_prune_ties.py:81 [binop] ``last - first`` -> ``(last + first)`` and :80
    [binop] ``nth + 1 - first`` -> ``(nth + 1 + first)``: an organ pipe
    of pairs (0, 0, 1, 1, ..., 14, 14, 14, 14, ..., 0, 0) exhausts introselect's depth with
    the segment away from the front, so the heap select of ``[first, last)`` decides the
    set; the kept indices are torch's CPU topk's."""
    from tapegrad.nn.utils._prune_ties import topk_indices

    half = np.arange(30)
    v = (np.concatenate([half, half[::-1]]) // 2).astype(np.float32)
    for k in (10, 13, 14, 15):
        for largest in (False, True):
            theirs = torch_mod.topk(torch_mod.tensor(v), k, largest=largest).indices.numpy()
            np.testing.assert_array_equal(np.sort(topk_indices(v, k, largest)), np.sort(theirs))


@pytest.mark.parametrize("lead", [(), (1,)])
def test_sdpa_gqa_with_unequal_key_and_value_heads_names_both(torch_mod, lead):
    """_attention.py:118 [binop] ``value.shape[-3]`` -> ``value.shape[3]`` (in the message):
    key and value with 2 and 3 heads under enable_gqa raise a RuntimeError, as torch, that
    names the value's 3 heads (3-D inputs: no IndexError)."""
    shapes = [lead + (4, 2, 5), lead + (2, 2, 5), lead + (3, 2, 5)]
    with pytest.raises(RuntimeError):
        torch_mod.nn.functional.scaled_dot_product_attention(
            *[torch_mod.zeros(s) for s in shapes], enable_gqa=True
        )
    with pytest.raises(RuntimeError, match=r"\(key 2, value 3\)"):
        F.scaled_dot_product_attention(*[tg.zeros(*s) for s in shapes], enable_gqa=True)


@pytest.mark.parametrize("margin", [0, 0.0, -1.0])
def test_triplet_margin_with_distance_loss_rejects_a_zero_margin_like_torch(torch_mod, margin):
    """losses_more.py:220 [compare] ``margin <= 0`` -> ``(margin < 0)``: a margin of 0 is
    refused with torch's ValueError and message."""
    with pytest.raises(ValueError) as theirs:
        torch_mod.nn.TripletMarginWithDistanceLoss(margin=margin)
    with pytest.raises(ValueError) as ours:
        tg.nn.TripletMarginWithDistanceLoss(margin=margin)
    assert str(ours.value) == str(theirs.value)


def test_mul_by_a_cached_number_without_grad_takes_the_weak_fast_path(torch_mod, monkeypatch):
    """arithmetic.py:409 [drop] ``return Tensor._wrap(out)`` (path): ``tensor * number``
    for a number met before, with nothing to record, returns the fast path's product and
    never reaches the general operand handling (``_operands``); the values are torch's."""
    from tapegrad.ops import arithmetic

    x = tg.tensor([1.0, 2.0, 3.0])
    first = x * 3.0  # caches 3.0's 0-d float32 array
    monkeypatch.setattr(arithmetic, "_operands", lambda *a: pytest.fail("general path"))
    expected = (torch_mod.tensor([1.0, 2.0, 3.0]) * 3.0).numpy()
    for out in (first, x * 3.0, x.mul(3.0)):
        assert out.dtype == tg.float32
        np.testing.assert_array_equal(out.numpy(), expected)
    w = tg.tensor([1.0, 2.0, 3.0], requires_grad=True)
    with tg.no_grad():
        out = w * 3.0
    assert out.grad_fn is None and not out.requires_grad
    np.testing.assert_array_equal(out.numpy(), expected)


@pytest.mark.parametrize(
    "target", [[[3, 4, -1, 0]], [[-2, 0, -1, 1]], [[0, -1, 7, 1]], [[0, -1, -3, 1]], [0, -1, 4, 1]]
)
def test_multilabel_margin_loss_target_out_of_range_raises_like_torch(torch_mod, target):
    """_losses_margin.py:216 [drop] the range check of multilabel_margin_loss: a target
    outside [-1, C) raises torch's RuntimeError, after a row's first -1 too (a bug: those
    were ignored, and the others raised IndexError from the check or from gather)."""
    x = np.array([0.1, 0.2, 0.4, 0.8], np.float32)
    x = x if np.ndim(target) == 1 else x[None]
    with pytest.raises(RuntimeError, match="out of range"):
        torch_mod.nn.functional.multilabel_margin_loss(
            torch_mod.tensor(x), torch_mod.tensor(target)
        )
    with pytest.raises(RuntimeError, match="target out of range"):
        F.multilabel_margin_loss(tg.tensor(x), tg.tensor(target))


def test_margin_losses_in_range_targets_after_minus_one_match_torch(torch_mod):
    """_losses_margin.py:216: entries after a row's first -1 that are in range are
    ignored, as torch; multi_margin_loss's out-of-range target is a RuntimeError too."""
    x = np.array([[0.1, 0.2, 0.4, 0.8], [0.5, -0.3, 0.9, 0.0]], np.float32)
    t = [[0, -1, 3, 1], [2, 1, -1, -1]]
    tx = torch_mod.tensor(x, requires_grad=True)
    gx = tg.tensor(x, requires_grad=True)
    theirs = torch_mod.nn.functional.multilabel_margin_loss(tx, torch_mod.tensor(t))
    ours = F.multilabel_margin_loss(gx, tg.tensor(t))
    theirs.backward()
    ours.backward()
    np.testing.assert_allclose(ours.item(), theirs.item(), rtol=1e-6)
    np.testing.assert_allclose(gx.grad.numpy(), tx.grad.numpy(), rtol=1e-6)
    for lib in (torch_mod, tg):
        with pytest.raises(RuntimeError, match="target out of range"):
            lib.nn.functional.multi_margin_loss(lib.tensor(x), lib.tensor([0, 4]))


def test_anomaly_context_managers_bind_none_like_torch(torch_mod):
    """anomaly.py:76 [drop] ``return self`` (set_detect_anomaly.__enter__): torch's
    set_detect_anomaly and detect_anomaly give None to ``as`` (a bug: tapegrad gave the
    object); anomaly mode is on inside and restored after, as torch."""
    for lib in (torch_mod, tg):
        before = lib.is_anomaly_enabled()
        with lib.autograd.set_detect_anomaly(not before) as m:
            assert m is None and lib.is_anomaly_enabled() is (not before)
        with warnings.catch_warnings():
            warnings.simplefilter("ignore")  # torch warns that anomaly mode is slow
            with lib.autograd.detect_anomaly() as m:
                assert m is None and lib.is_anomaly_enabled()
        assert lib.is_anomaly_enabled() is before


def test_linear_input_gradient_of_a_small_product_runs_one_gemm(monkeypatch):
    """nn/_linear_split.py:85 [drop] ``return None`` (path): under TAPEGRAD_INTRA_OP=step
    the input gradient of a product below the split's size (or of float16) is the caller's
    one GEMM, not row blocks on the pool (speed only, so the path is checked)."""
    from tapegrad import _parallel
    from tapegrad.nn import _linear_split

    calls = []
    real = _linear_split.map_rows
    monkeypatch.setattr(_linear_split, "map_rows", lambda *a: calls.append(1) or real(*a))
    prev, _parallel.STEP[0] = _parallel.STEP[0], True
    try:
        for dtype in (np.float32, np.float16):
            g2, wd = np.ones((4, 2), dtype), np.ones((2, 3), dtype)
            assert _linear_split.grad_input(g2, wd) is None
        x = tg.ones(4, 3, requires_grad=True)
        F.linear(x, tg.ones(2, 3)).sum().backward()
    finally:
        _parallel.STEP[0] = prev
    np.testing.assert_array_equal(x.grad.numpy(), np.full((4, 3), 2.0))
    assert calls == []


@pytest.mark.parametrize("cls", ["LazyConv2d", "LazyConvTranspose3d"])
def test_lazy_conv_of_an_input_of_the_wrong_rank_names_the_ranks_like_torch(torch_mod, cls):
    """lazy.py:146 [const] ``n + 1`` -> ``n + 2`` (in the message): a 2-D input to a lazy
    conv raises torch's RuntimeError naming the unbatched and batched ranks."""
    with pytest.raises(RuntimeError) as theirs:
        getattr(torch_mod.nn, cls)(4, 3)(torch_mod.ones(2, 3))
    expected = str(theirs.value).split(", but got")[0]
    with pytest.raises(RuntimeError, match=re.escape(expected + ", but got input of size")):
        getattr(tg.nn, cls)(4, 3)(tg.ones(2, 3))


def test_attention_splits_from_exactly_twice_the_least_block():
    """nn/_attention_split.py:29 [compare] ``n_scores >= 2 * MIN_ELEMENTS`` -> ``>`` (path):
    under TAPEGRAD_INTRA_OP=step attention of exactly 2 * MIN_ELEMENTS scores runs in row
    blocks (one score fewer does not), with the product of the whole."""
    from tapegrad import _parallel
    from tapegrad.nn import _attention_split

    rng = np.random.default_rng(0)
    q = rng.standard_normal((2, 128, 1)).astype(np.float32)
    prev, _parallel.STEP[0] = _parallel.STEP[0], True
    try:
        for s, splits in ((2 * _parallel.MIN_ELEMENTS // 256, True), (255, False)):
            k = rng.standard_normal((2, s, 1)).astype(np.float32)
            v = rng.standard_normal((2, s, 1)).astype(np.float32)
            got = _attention_split.forward(q, k, v, None, 1.0, None)
            assert (got is not None) is splits
            if splits:
                w = np.exp(q @ k.transpose(0, 2, 1))
                want = (w / w.sum(-1, keepdims=True)) @ v
                np.testing.assert_allclose(got[0], want, rtol=1e-4, atol=1e-5)
    finally:
        _parallel.STEP[0] = prev


def test_unflatten_of_an_empty_dim_and_a_size_that_does_not_divide_like_torch(torch_mod):
    """ops/shape.py:330 [compare] ``-1 in sizes`` -> ``(-1 not in sizes)`` (the second):
    an empty dim unflattens into (0, 5) as torch; (4, -1) of a dim of 6 is torch's
    RuntimeError, from the check (its message)."""
    for lib in (torch_mod, tg):
        assert tuple(lib.zeros(2, 0).unflatten(1, (0, 5)).shape) == (2, 0, 5)
        with pytest.raises(RuntimeError, match="don't multiply up to the size"):
            lib.zeros(2, 6).unflatten(1, (4, -1))
