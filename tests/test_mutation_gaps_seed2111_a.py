"""Tests for survivors of the official seed-2111 mutation sample (list a): each is seen to
fail on its mutant.

Covers autograd/engine.py:499, autograd/saved_hooks.py:105, nn/_attention_ops.py:101,
nn/_fused.py:114 and :165, nn/_losses.py:230 (the outer ``1 -> 2``) and nn/_norm_split.py:28;
and embedding_bag's check of a non-2-D weight (a bug found on the way, fixed).
"""

import numpy as np
import pytest

import tapegrad as tg
import tapegrad.nn.functional as F


def _run_rule(x, rule):
    """Backward through one Node whose array rule (Note [Array backward]) is ``rule``."""
    from tapegrad.autograd.graph import make_result

    def tensor_rule(g):
        raise AssertionError("the array rule should run")

    out = make_result(x._data.copy(), (x,), tensor_rule, "TestBackward", array_backward=rule)
    out.backward(tg.ones_like(out))


def test_an_array_rule_gradient_that_does_not_fit_is_checked_as_a_tensor():
    """engine.py:499 ``not hasattr(g, "dtype")`` -> ``(hasattr(g, 'dtype'))``: an array
    rule's array that does not fit its input is wrapped and then rounded to bfloat16 or
    named by its shape; a non-array is named by its type (a TypeError)."""
    x = tg.tensor([1.0, 2.0], dtype=tg.bfloat16, requires_grad=True)
    _run_rule(x, lambda g: (np.full(2, 1.0 / 3.0, np.float32),))
    assert x.grad.dtype == tg.bfloat16
    np.testing.assert_array_equal(x.grad.float().numpy(), [0.333984375, 0.333984375])

    y = tg.tensor([1.0, 2.0], requires_grad=True)
    with pytest.raises(RuntimeError, match=r"TestBackward returned a gradient of shape \[3\]"):
        _run_rule(y, lambda g: (np.ones(3, np.float32),))
    with pytest.raises(TypeError, match="TestBackward returned a float as the gradient of input"):
        _run_rule(y, lambda g: (2.0,))


def test_disable_saved_tensors_hooks_works_as_a_decorator_like_torch(torch_mod):
    """saved_hooks.py:105 [drop] ``return wrapper``: used as a decorator it gives the
    wrapped function (which runs with hooks disabled), not None."""
    for lib in (torch_mod, tg):
        graph = lib.autograd.graph

        @graph.disable_saved_tensors_hooks("no hooks in here")
        def enter_hooks(v):
            with graph.saved_tensors_hooks(lambda t: t, lambda t: t):
                pass
            return v

        @graph.disable_saved_tensors_hooks("unused")
        def plus_one(v):
            return v + 1

        assert plus_one(2) == 3
        with pytest.raises(RuntimeError, match="no hooks in here"):
            enter_hooks(1)


@pytest.mark.parametrize("create_graph", [False, True])
def test_attention_gradients_with_a_dropout_mask_match_torch(torch_mod, create_graph):
    """_attention_ops.py:101 [drop] ``dP = dP * D``: under create_graph the dropout mask
    scales dP (q's and k's gradients), as the composed ops in torch."""
    from tapegrad.nn._attention_ops import attention

    rng = np.random.default_rng(0)
    qd, kd, vd = (rng.standard_normal(s) for s in ((2, 3, 4), (2, 5, 4), (2, 5, 3)))
    mask = (rng.random((2, 3, 5)) > 0.4) / 0.6
    gd = rng.standard_normal((2, 3, 3))
    tq, tk, tv = (torch_mod.tensor(a, requires_grad=True) for a in (qd, kd, vd))
    p = torch_mod.softmax(tq @ tk.mT * 0.5, -1) * torch_mod.tensor(mask)
    want = torch_mod.autograd.grad(p @ tv, (tq, tk, tv), torch_mod.tensor(gd))
    q, k, v = (tg.tensor(a, requires_grad=True) for a in (qd, kd, vd))
    out = attention(q, k, v, None, 0.5, mask)
    got = tg.autograd.grad(out, (q, k, v), tg.tensor(gd), create_graph=create_graph)
    for a, b in zip(got, want):
        np.testing.assert_allclose(a.detach().numpy(), b.numpy(), rtol=1e-12, atol=1e-14)


def test_linear_backward_pairs_its_two_gemms_only_when_both_gradients_are_needed(
    monkeypatch, step_mode
):
    """_fused.py:114 ``need_x and need_w and STEP`` -> ``(need_x or need_w or STEP)``: under
    TAPEGRAD_INTRA_OP=step the paired kernel (both GEMMs) runs only when the input and the
    weight both need a gradient; otherwise just the one GEMM needed runs (speed only, so the
    path is checked)."""
    from tapegrad.nn import _linear_split

    calls = []
    monkeypatch.setattr(_linear_split, "grads", lambda *a: calls.append(1))  # None: one GEMM each
    for need_x, need_w in ((True, False), (False, True), (True, True)):
        x = tg.ones(4, 3, requires_grad=need_x)
        w = tg.ones(2, 3, requires_grad=need_w)
        F.linear(x, w, tg.zeros(2, requires_grad=True)).sum().backward()
        if need_x:
            np.testing.assert_array_equal(x.grad.numpy(), np.full((4, 3), 2.0))
        if need_w:
            np.testing.assert_array_equal(w.grad.numpy(), np.full((2, 3), 4.0))
    assert calls == [1]


def test_embedding_looks_up_a_2d_table_with_take_rows(monkeypatch, torch_mod):
    """_fused.py:165 ``weight._data.ndim == 2`` -> ``!= 2``: the 2-D table (the only one
    F.embedding takes) goes through _take_rows (np.take, 2-3x faster than fancy indexing;
    the same values, so the path is checked), a 0-d index through take_index."""
    from tapegrad.nn import _fused

    seen = []
    real = _fused._take_rows
    monkeypatch.setattr(_fused, "_take_rows", lambda idx, w: seen.append(idx.shape) or real(idx, w))
    wd = np.arange(15.0).reshape(5, 3)
    w, tw = tg.tensor(wd, requires_grad=True), torch_mod.tensor(wd, requires_grad=True)
    idx = [[0, 4], [2, 2]]
    out = F.embedding(tg.tensor(idx), w)
    want = torch_mod.nn.functional.embedding(torch_mod.tensor(idx), tw)
    np.testing.assert_array_equal(out.detach().numpy(), want.detach().numpy())
    out.sum().backward()
    want.sum().backward()
    np.testing.assert_array_equal(w.grad.numpy(), tw.grad.numpy())
    assert seen == [(2, 2)]
    F.embedding(tg.tensor(3), w)
    assert seen == [(2, 2)]


@pytest.mark.parametrize("shape", [(4,), (4, 2, 3)])
def test_embedding_bag_of_a_table_not_2d_raises_like_torch(torch_mod, shape):
    """Bug fixed (found with _fused.py:165): embedding_bag took a 3-D table (and failed on a
    1-D one with an IndexError); torch raises ValueError for both."""
    for lib, fn in ((torch_mod, torch_mod.nn.functional.embedding_bag), (tg, F.embedding_bag)):
        with pytest.raises(
            ValueError,
            match=f"weight has to be a 2D Tensor, but got Tensor of dimension {len(shape)}",
        ):
            fn(lib.tensor([[0, 1], [2, 3]]), lib.ones(shape), mode="sum")


def test_layer_norm_splits_by_rows_only_when_there_are_leading_rows(
    monkeypatch, torch_mod, step_mode
):
    """_norm_split.py:28 ``x.ndim > k`` -> ``(x.ndim >= k)``: under TAPEGRAD_INTRA_OP=step
    layer norm runs its row-split kernels only when x has leading (row) axes; normalised over
    all of x there are no rows to split (speed only, so the path is checked)."""
    from tapegrad import _parallel
    from tapegrad.nn import _norm_split

    kernels = []
    real = _norm_split.map_rows
    monkeypatch.setattr(
        _norm_split, "map_rows", lambda kern, *a: kernels.append(kern) or real(kern, *a)
    )
    n = _parallel.MIN_ELEMENTS
    rng = np.random.default_rng(0)
    xd = rng.standard_normal((2, n)).astype(np.float32)
    for norm_shape, split in (((2, n), False), ((n,), True)):
        kernels.clear()
        wd = np.ones(norm_shape, np.float32)
        x = tg.tensor(xd, requires_grad=True)
        w, b = tg.tensor(wd, requires_grad=True), tg.tensor(wd * 0, requires_grad=True)
        out = F.layer_norm(x, norm_shape, w, b)
        out.backward(tg.tensor(xd))
        want = torch_mod.nn.functional.layer_norm(torch_mod.tensor(xd), norm_shape)
        np.testing.assert_allclose(out.detach().numpy(), want.numpy(), rtol=1e-4, atol=1e-5)
        assert kernels == ([_norm_split._forward_kernel, _norm_split._grad_kernel] if split else [])


@pytest.mark.parametrize("shape", [(3,), (1, 3)])
def test_soft_cross_entropy_mean_with_a_target_that_needs_grad_matches_torch(torch_mod, shape):
    """_losses.py:230 ``max(x._data.size // max(n_classes, 1), 1)`` -> ``..., 2)``: with
    one sample (batched or not) the mean divides by 1. Probability targets that need a
    gradient take this composed rule. (The other ``1 -> 2``, ``max(n_classes, 2)``, is
    equivalent: it changes the divisor only for one class, where log_softmax is exactly 0
    (or NaN), so the loss and its gradients are +-0 or NaN whatever the divisor.)"""
    rng = np.random.default_rng(1)
    xd, td = rng.standard_normal(shape), rng.random(shape)
    res = []
    for lib in (torch_mod, tg):
        x, t = lib.tensor(xd, requires_grad=True), lib.tensor(td, requires_grad=True)
        loss = lib.nn.functional.cross_entropy(x, t, reduction="mean", label_smoothing=0.1)
        loss.backward()
        res.append([a.detach().numpy() for a in (loss, x.grad, t.grad)])
    for a, b in zip(*res):
        np.testing.assert_allclose(b, a, rtol=1e-12, atol=1e-15)
