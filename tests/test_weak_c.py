"""Tests for condition mutants that no test flipped (tools/weakmut.py, list C): each input
below makes the mutated condition decide differently, with a visible result.

Covers nn/_attention.py, _attention_ops.py, _conv_transpose3d.py, _ctc.py,
_dropout_variants.py, _fold.py, _functional_misc.py, _hooks.py, _interpolate.py,
_layers_functional.py, _linear_cross_entropy.py, _linear_split.py, _losses.py,
_losses_margin.py, _losses_pointwise.py and _mha.py (pooling: tests/test_weak_c2.py); and
a bug found on the way, fixed: interpolate to the input's own size returned the input
itself.
"""

import numpy as np
import pytest

import tapegrad as tg
import tapegrad.nn.functional as F


def _both(torch_mod, *arrays):
    """The same float32 arrays as a torch and a tapegrad tensor each."""
    return [torch_mod.tensor(a) for a in arrays], [tg.tensor(a) for a in arrays]


def _close(got, want, tol=1e-6):
    np.testing.assert_allclose(
        np.asarray(got.detach().numpy()), want.detach().numpy(), rtol=tol, atol=tol
    )


# -- scaled_dot_product_attention -------------------------------------------------------------


def test_sdpa_gqa_with_a_3d_float_mask_per_query_head_matches_torch(torch_mod):
    """_attention.py:136: with enable_gqa, a (Hq, L, S) mask is regrouped per key head
    (here 4 query heads over 2 key/value heads)."""
    rng = np.random.default_rng(0)
    q = rng.standard_normal((1, 4, 3, 2)).astype(np.float32)
    k = rng.standard_normal((1, 2, 5, 2)).astype(np.float32)
    v = rng.standard_normal((1, 2, 5, 3)).astype(np.float32)
    m = rng.standard_normal((4, 3, 5)).astype(np.float32)
    (tq, tk, tv, tm), (gq, gk, gv, gm) = _both(torch_mod, q, k, v, m)
    want = torch_mod.nn.functional.scaled_dot_product_attention(
        tq, tk, tv, attn_mask=tm, enable_gqa=True
    )
    got = F.scaled_dot_product_attention(gq, gk, gv, attn_mask=gm, enable_gqa=True)
    _close(got, want)


def test_sdpa_dropout_of_a_tiny_probability_still_rescales():
    """_attention.py:143: any p > 0 runs dropout, the kept weights scaled by 1/(1 − p) as
    torch's; with p = 5e-4 and this seed no weight of the 3 x 3 is dropped, so the output is
    the dropout-free one over (1 − p)."""
    rng = np.random.default_rng(0)
    q, k, v = (tg.tensor(rng.standard_normal((1, 3, 2)).astype(np.float32)) for _ in range(3))
    plain = F.scaled_dot_product_attention(q, k, v).numpy()
    p = 5e-4
    got = F.scaled_dot_product_attention(q, k, v, dropout_p=p).numpy()
    np.testing.assert_allclose(got, plain / np.float32(1 - p), rtol=1e-6, atol=1e-7)


def test_sdpa_rejects_a_dropout_probability_just_above_one(torch_mod):
    """_attention.py:98: torch's check is 0 <= p <= 1."""
    for lib in (torch_mod, tg):
        x = lib.ones(1, 2, 3)
        with pytest.raises(RuntimeError, match="dropout probability has to be between 0 and 1"):
            lib.nn.functional.scaled_dot_product_attention(x, x, x, dropout_p=1.005)


def test_sdpa_double_backward_through_the_query_only_matches_torch(torch_mod):
    """_attention_ops.py:105: under create_graph, the query's gradient alone (key and value
    without grad) is the scaled dS @ k, and differentiable."""
    rng = np.random.default_rng(1)
    q = rng.standard_normal((2, 3, 4)).astype(np.float32)
    k = rng.standard_normal((2, 5, 4)).astype(np.float32)
    v = rng.standard_normal((2, 5, 3)).astype(np.float32)
    res = []
    for lib in (torch_mod, tg):
        tq = lib.tensor(q, requires_grad=True)
        out = lib.nn.functional.scaled_dot_product_attention(tq, lib.tensor(k), lib.tensor(v))
        (gq,) = lib.autograd.grad((out * out).sum(), tq, create_graph=True)
        (ggq,) = lib.autograd.grad((gq * gq).sum(), tq)
        res.append((gq.detach().numpy(), ggq.numpy()))
    np.testing.assert_allclose(res[1][0], res[0][0], rtol=1e-5, atol=1e-6)
    np.testing.assert_allclose(res[1][1], res[0][1], rtol=1e-4, atol=1e-5)


# -- convolution, fold ------------------------------------------------------------------------


def test_conv_transpose3d_to_a_single_voxel_matches_torch(torch_mod):
    """_conv_transpose3d.py:50: an output size of 1 along each dim is valid."""
    rng = np.random.default_rng(0)
    x = rng.standard_normal((1, 2, 1, 1, 1)).astype(np.float32)
    w = rng.standard_normal((2, 3, 1, 1, 1)).astype(np.float32)
    (tx, tw), (gx, gw) = _both(torch_mod, x, w)
    _close(F.conv_transpose3d(gx, gw), torch_mod.nn.functional.conv_transpose3d(tx, tw))


@pytest.mark.parametrize("shape", [(1, 1, 3, 5), (1, 1, 5, 2), (1, 1, 3, 2)])
def test_unfold_with_a_single_block_along_a_dim_matches_torch(torch_mod, shape):
    """_fold.py:47: kernel (3, 2) over a height of 3 (or a width of 2) has one block row
    (column)."""
    x = np.arange(np.prod(shape), dtype=np.float32).reshape(shape)
    (tx,), (gx,) = _both(torch_mod, x)
    _close(F.unfold(gx, (3, 2)), torch_mod.nn.functional.unfold(tx, (3, 2)))


@pytest.mark.parametrize("shape", [(1, 1, 2, 5), (1, 1, 5, 1)])
def test_unfold_with_no_block_along_one_dim_raises_like_torch(torch_mod, shape):
    """_fold.py:47: no block along one dim only (the other fits) is torch's RuntimeError."""
    with pytest.raises(RuntimeError, match="must be at least one"):
        torch_mod.nn.functional.unfold(torch_mod.ones(shape), (3, 2))
    with pytest.raises(RuntimeError, match="too small for kernel"):
        F.unfold(tg.ones(shape), (3, 2))


# -- ctc_loss ---------------------------------------------------------------------------------


def test_ctc_loss_with_more_input_lengths_than_samples_raises_like_torch(torch_mod):
    """_ctc.py:137: 3 input lengths for 2 samples (the target lengths fit)."""
    for lib in (torch_mod, tg):
        lp = lib.zeros(5, 2, 4).log_softmax(2)
        with pytest.raises(RuntimeError, match="input"):
            lib.nn.functional.ctc_loss(lp, lib.ones(2, 2, dtype=lib.int64), [5, 5, 5], [2, 2])


def test_ctc_loss_rejects_a_target_equal_to_the_number_of_classes():
    """_ctc.py:156: a label of C is out of the class range (torch's CPU kernel reads past
    the row without a check; tapegrad raises rather than index out of bounds)."""
    lp = tg.zeros(5, 2, 4).log_softmax(2)
    with pytest.raises(RuntimeError, match=r"targets of sample 0 must be in \[0, 4\)"):
        F.ctc_loss(lp, tg.tensor([[1, 4], [1, 2]]), [5, 5], [2, 2])


# -- dropout ----------------------------------------------------------------------------------


def test_feature_dropout_rejects_a_probability_just_above_one(torch_mod):
    """_dropout_variants.py:27."""
    for lib in (torch_mod, tg):
        with pytest.raises(ValueError, match="dropout probability has to be between 0 and 1"):
            lib.nn.functional.dropout2d(lib.ones(1, 2, 3, 3), p=1.005)


def test_feature_dropout_of_probability_one_zeroes_everything(torch_mod):
    """_dropout_variants.py:41: p = 1 drops every channel (no 1/(1 − p))."""
    for lib in (torch_mod, tg):
        out = lib.nn.functional.dropout2d(lib.ones(1, 2, 3, 3), p=1.0)
        np.testing.assert_array_equal(out.numpy(), np.zeros((1, 2, 3, 3), np.float32))


# -- misc functional --------------------------------------------------------------------------


def test_channel_shuffle_with_one_group_is_the_identity_like_torch(torch_mod):
    """_functional_misc.py:45: groups = 1 is positive, the input's values come back."""
    x = np.arange(16, dtype=np.float32).reshape(1, 4, 2, 2)
    (tx,), (gx,) = _both(torch_mod, x)
    _close(F.channel_shuffle(gx, 1), torch_mod.nn.functional.channel_shuffle(tx, 1))


def test_grid_sampler_rejects_interpolation_mode_three():
    """_functional_misc.py:89: modes are 0, 1, 2 (torch's kernel does not check and gives
    zeros; tapegrad raises instead of an IndexError)."""
    with pytest.raises(RuntimeError, match="interpolation_mode must be 0"):
        tg.grid_sampler(tg.ones(1, 1, 2, 2), tg.zeros(1, 2, 2, 2), 3, 0, False)


def test_forward_hook_without_always_call_is_skipped_when_forward_raises(torch_mod):
    """_hooks.py:93: only always_call hooks run after a failing forward, as torch."""
    for lib in (torch_mod, tg):

        class Boom(lib.nn.Module):
            def forward(self, x):
                raise ValueError("boom")

        calls = []
        m = Boom()
        m.register_forward_hook(lambda *a: calls.append("plain"))
        m.register_forward_hook(lambda *a: calls.append("always"), always_call=True)
        with pytest.raises(ValueError, match="boom"):
            m(lib.ones(1))
        assert calls == ["always"]


# -- interpolate ------------------------------------------------------------------------------


def test_interpolate_of_a_6d_input_is_not_implemented_like_torch(torch_mod):
    """_interpolate.py:106: 3, 4 or 5 dims only."""
    for lib in (torch_mod, tg):
        with pytest.raises(NotImplementedError, match="6D"):
            lib.nn.functional.interpolate(lib.ones(1, 1, 2, 2, 2, 2), scale_factor=2)


@pytest.mark.parametrize("mode", ["nearest", "nearest-exact", "area"])
@pytest.mark.parametrize("how", [{"size": (2, 2)}, {"scale_factor": 1.0}])
def test_interpolate_to_the_same_size_keeps_infinities_like_torch(torch_mod, mode, how):
    """_interpolate.py:145: nearest/area at the same size (no scale, or scale 1) copy the
    input, as torch's kernels: an inf stays where it is (no 0 · inf from a resampling
    product)."""
    x = np.array([[[[1.0, np.inf], [2.0, -np.inf]]]], np.float32)
    (tx,), (gx,) = _both(torch_mod, x)
    got = F.interpolate(gx, mode=mode, **how)
    want = torch_mod.nn.functional.interpolate(tx, mode=mode, **how)
    np.testing.assert_array_equal(got.numpy(), want.numpy())


def test_interpolate_to_the_same_size_returns_a_new_tensor_like_torch(torch_mod):
    """Nearest at the same size is a copy in torch: writing into the result leaves the
    input alone, also for a leaf that requires grad (and the gradient flows)."""
    x = np.arange(4, dtype=np.float32).reshape(1, 1, 2, 2)
    for lib in (torch_mod, tg):
        t = lib.tensor(x, requires_grad=True)
        out = lib.nn.functional.interpolate(t, size=(2, 2))
        assert out is not t
        out.mul_(2)
        out.sum().backward()
        np.testing.assert_array_equal(t.detach().numpy(), x)
        np.testing.assert_array_equal(t.grad.numpy(), np.full_like(x, 2))


@pytest.mark.parametrize("shape", [(1, 1, 2), (1, 1, 2, 2, 2)])
@pytest.mark.parametrize("mode", ["nearest", "nearest-exact"])
def test_interpolate_nearest_with_a_scale_keeping_the_size_matches_torch(torch_mod, mode, shape):
    """_interpolate.py:145: scale 1.4 of 2 is 2 again, but torch samples at 1/1.4 steps
    (1-D and 3-D; torch's 2-D nearest kernel copies whenever a size is kept)."""
    x = np.arange(np.prod(shape), dtype=np.float32).reshape(shape)
    (tx,), (gx,) = _both(torch_mod, x)
    got = F.interpolate(gx, scale_factor=1.4, mode=mode)
    _close(got, torch_mod.nn.functional.interpolate(tx, scale_factor=1.4, mode=mode))


def test_interpolate_bilinear_align_corners_to_size_one_matches_torch(torch_mod):
    """_interpolate.py:28: with align_corners an output of 1 takes the first pixel."""
    x = np.arange(6, dtype=np.float32).reshape(1, 1, 2, 3)
    (tx,), (gx,) = _both(torch_mod, x)
    got = F.interpolate(gx, size=(1, 2), mode="bilinear", align_corners=True)
    want = torch_mod.nn.functional.interpolate(tx, size=(1, 2), mode="bilinear", align_corners=True)
    _close(got, want)


# -- normalization, layers --------------------------------------------------------------------


def test_group_norm_of_a_2d_input_matches_torch(torch_mod):
    """_layers_functional.py:35: (N, C) is enough."""
    x = np.random.default_rng(0).standard_normal((3, 4)).astype(np.float32)
    (tx,), (gx,) = _both(torch_mod, x)
    _close(F.group_norm(gx, 2), torch_mod.nn.functional.group_norm(tx, 2), tol=1e-5)


@pytest.mark.parametrize("which", ["running_mean", "running_var"])
def test_instance_norm_without_input_stats_needs_both_running_stats(torch_mod, which):
    """_layers_functional.py:78."""
    for lib in (torch_mod, tg):
        with pytest.raises(RuntimeError, match="Expected running_mean and running_var"):
            lib.nn.functional.instance_norm(
                lib.ones(1, 2, 3), use_input_stats=False, **{which: lib.ones(2)}
            )


def test_pixel_unshuffle_of_a_width_that_does_not_divide_raises_like_torch(torch_mod):
    """_layers_functional.py:182: the height divides, the width does not."""
    for lib in (torch_mod, tg):
        with pytest.raises(RuntimeError, match="divisible by downscale_factor"):
            lib.nn.functional.pixel_unshuffle(lib.ones(1, 1, 4, 3), 2)


def test_embedding_bag_checks_the_last_offset_like_torch(torch_mod):
    """_layers_functional.py:225: offsets[-1] (not offsets[1]) past the input."""
    for lib in (torch_mod, tg):
        with pytest.raises(RuntimeError, match=r"offsets\[-1\] can not be greater"):
            lib.nn.functional.embedding_bag(
                lib.tensor([0, 1, 2]), lib.ones(4, 2), lib.tensor([0, 1, 5])
            )


def test_embedding_bag_index_equal_to_num_embeddings_raises_like_torch(torch_mod):
    """_layers_functional.py:283."""
    for lib in (torch_mod, tg):
        with pytest.raises(RuntimeError, match="range"):
            lib.nn.functional.embedding_bag(lib.tensor([[0, 4]]), lib.ones(4, 2))


def test_linear_cross_entropy_options_accept_one_and_reject_zero(torch_mod):
    """_linear_cross_entropy.py:47: a batch_chunk_size of 1 (and "aspect_ratio:1") is
    positive (torch's checks)."""
    for cls in (torch_mod.nn.LinearCrossEntropyOptions, tg.nn.LinearCrossEntropyOptions):
        assert cls(batch_chunk_size=1).batch_chunk_size == 1
        assert cls(chunking_method="aspect_ratio:1").chunking_method == "aspect_ratio:1"
        with pytest.raises(ValueError, match="batch_chunk_size must be positive int"):
            cls(batch_chunk_size=0)
        with pytest.raises(ValueError, match="invalid chunking_method"):
            cls(chunking_method="aspect_ratio:0")


def test_linear_split_grads_of_exactly_one_block(monkeypatch):
    """_linear_split.py:107: under TAPEGRAD_INTRA_OP=step the pair of weight/input GEMMs
    runs side by side from m·n·k = BLOCK_MNK (128 x 128 x 64) on; one row fewer is the
    caller's path (the same values either way, so the path is checked)."""
    from tapegrad.nn import _linear_split

    monkeypatch.setattr(_linear_split, "STEP", [True])
    assert _linear_split.BLOCK_MNK == 1 << 20
    rng = np.random.default_rng(0)
    g = rng.standard_normal((128, 128)).astype(np.float32)
    w = rng.standard_normal((128, 64)).astype(np.float32)
    x = rng.standard_normal((128, 64)).astype(np.float32)
    pair = _linear_split.grads(g, w, x)
    assert pair is not None
    np.testing.assert_allclose(pair[0], g @ w, rtol=1e-5, atol=1e-5)
    np.testing.assert_allclose(pair[1], g.T @ x, rtol=1e-5, atol=1e-5)
    assert _linear_split.grads(g[:127].copy(), w, x[:127].copy()) is None


# -- losses -----------------------------------------------------------------------------------


def test_cross_entropy_rejects_label_smoothing_just_above_one(torch_mod):
    """_losses.py:178."""
    for lib in (torch_mod, tg):
        with pytest.raises(RuntimeError, match="label_smoothing must be between 0.0 and 1.0"):
            lib.nn.functional.cross_entropy(
                lib.zeros(2, 3), lib.tensor([0, 1]), label_smoothing=1.005
            )


def test_cosine_embedding_loss_with_one_input_of_the_wrong_rank_raises_like_torch(torch_mod):
    """_losses_margin.py:80: a 1-D target, input1 2-D, input2 1-D."""
    for lib in (torch_mod, tg):
        with pytest.raises(RuntimeError, match="1D target tensor expects 2D input tensors"):
            lib.nn.functional.cosine_embedding_loss(lib.ones(2, 3), lib.ones(3), lib.ones(2))


def test_gaussian_nll_loss_with_a_zero_float_variance_matches_torch(torch_mod):
    """_losses_pointwise.py:268: a float var of 0 is not negative; it is clamped at eps."""
    x = np.array([[0.5, -1.0, 0.0]], np.float32)
    (tx, tt), (gx, gt) = _both(torch_mod, x, np.zeros_like(x))
    want = torch_mod.nn.functional.gaussian_nll_loss(tx, tt, 0.0)
    _close(F.gaussian_nll_loss(gx, gt, 0.0), want, tol=1e-5)


def test_gaussian_nll_loss_var_of_the_first_dim_only_is_the_wrong_size(torch_mod):
    """_losses_pointwise.py:274: var (2,) for input (2, 2, 1) is neither input.shape[:-1]
    nor one size-1 dim off."""
    for lib in (torch_mod, tg):
        with pytest.raises(ValueError, match="var is of incorrect size"):
            lib.nn.functional.gaussian_nll_loss(lib.ones(2, 2, 1), lib.zeros(2, 2, 1), lib.ones(2))


# -- multi-head attention ---------------------------------------------------------------------


def _mha_args(lib, e=4, heads=2):
    rng = np.random.default_rng(0)
    w_in = lib.tensor(rng.standard_normal((3 * e, e)).astype(np.float32))
    w_out = lib.tensor(rng.standard_normal((e, e)).astype(np.float32))
    return w_in, w_out


def test_mha_with_a_batched_query_and_unbatched_key_raises_like_torch(torch_mod):
    """_mha.py:117: query 3-D, key and value 2-D."""
    for lib in (torch_mod, tg):
        w_in, w_out = _mha_args(lib)
        with pytest.raises(AssertionError):
            lib.nn.functional.multi_head_attention_forward(
                lib.ones(3, 1, 4), lib.ones(5, 4), lib.ones(5, 4), 4, 2,
                w_in, None, None, None, False, 0.0, w_out, None,
            )  # fmt: skip


def test_mha_separate_projections_missing_one_weight_raises_like_torch(torch_mod):
    """_mha.py:67: use_separate_proj_weight with q_proj_weight None."""
    for lib in (torch_mod, tg):
        _, w_out = _mha_args(lib)
        w = lib.ones(4, 4)
        with pytest.raises(AssertionError):
            lib.nn.functional.multi_head_attention_forward(
                lib.ones(3, 1, 4), lib.ones(5, 1, 4), lib.ones(5, 1, 4), 4, 2,
                None, None, None, None, False, 0.0, w_out, None,
                use_separate_proj_weight=True, q_proj_weight=None, k_proj_weight=w,
                v_proj_weight=w,
            )  # fmt: skip


def test_mha_dropout_of_a_tiny_probability_rescales_the_weights():
    """_mha.py:225: any p > 0 in training runs dropout on the weights (scaled by 1/(1 − p),
    as torch's); with p = 5e-4 and this seed none of the few weights is dropped, so the
    returned weights are the eval ones over (1 − p)."""
    w_in, w_out = _mha_args(tg)
    rng = np.random.default_rng(1)
    q = tg.tensor(rng.standard_normal((3, 1, 4)).astype(np.float32))
    p = 5e-4
    res = [
        F.multi_head_attention_forward(
            q, q, q, 4, 2, w_in, None, None, None, False, p, w_out, None, training=training
        )[1].numpy()
        for training in (False, True)
    ]
    np.testing.assert_allclose(res[1], res[0] / np.float32(1 - p), rtol=1e-6, atol=1e-7)
