"""Tests for the gaps that the seed-1806 mutation sample found (docs/mutation-run-seed1806.md):
each fails on its mutant."""

import warnings

import numpy as np
import pytest

import tapegrad as tg


def test_cross_entropy_batched_gradients_match_torch(torch_mod):
    # nn/_loss_ops.py: the index path's gradient for a batch prefix (is_grads_batched).
    torch = torch_mod
    x = np.random.default_rng(0).standard_normal((5, 3))
    t = np.array([0, 2, 1, 1, 0])
    xt = torch.tensor(x, requires_grad=True)
    loss = torch.nn.functional.cross_entropy(xt, torch.tensor(t))
    (ref,) = torch.autograd.grad(loss, xt, torch.tensor([1.0, 2.0]), is_grads_batched=True)
    xg = tg.tensor(x, requires_grad=True)
    loss = tg.nn.functional.cross_entropy(xg, tg.tensor(t))
    (ours,) = tg.autograd.grad(loss, xg, tg.tensor([1.0, 2.0]), is_grads_batched=True)
    np.testing.assert_allclose(ours.numpy(), ref.numpy(), rtol=1e-12, atol=1e-15)


def test_cross_entropy_of_float16_logits_matches_torch(torch_mod):
    # nn/_loss_ops.py: the row max for dtypes without a reduce ``initial`` (float16).
    torch = torch_mod
    x = np.random.default_rng(1).standard_normal((6, 4)).astype(np.float16)
    t = np.array([0, 3, 1, 2, 2, 0])
    ref = torch.nn.functional.cross_entropy(torch.tensor(x), torch.tensor(t))
    ours = tg.nn.functional.cross_entropy(tg.tensor(x), tg.tensor(t))
    assert ours.dtype == tg.float16
    np.testing.assert_allclose(float(ours), float(ref), rtol=2e-3)


def test_multi_head_attention_forward_trains_by_default_like_torch(torch_mod):
    # nn/_mha.py: ``training=True`` is the default, so dropout_p=1 drops every weight and the
    # output is the output projection's bias.
    torch = torch_mod
    e, rng = 4, np.random.default_rng(2)
    q = rng.standard_normal((3, 2, e))
    w, b = rng.standard_normal((3 * e, e)), rng.standard_normal(3 * e)
    wo, bo = rng.standard_normal((e, e)), rng.standard_normal(e)
    outs = []
    for lib in (torch, tg):
        T = lib.tensor
        args = (T(q), T(q), T(q), e, 2, T(w), T(b), None, None, False, 1.0, T(wo), T(bo))
        out, _ = lib.nn.functional.multi_head_attention_forward(*args)
        outs.append(np.asarray(out.detach().numpy()))
    np.testing.assert_allclose(outs[1], outs[0], rtol=1e-12)
    np.testing.assert_allclose(outs[1], np.broadcast_to(bo, outs[1].shape), rtol=1e-12)


@pytest.mark.parametrize("p", [None, 2, -2])
@pytest.mark.parametrize("shape", [(2, 3, 3), (0, 0), (2, 0, 0)])
def test_cond_with_p_two_and_of_empty_matrices_matches_torch(torch_mod, p, shape):
    # ops/matfun.py: p=2 is the largest over the smallest singular value, p=-2 its inverse;
    # an empty matrix (checked on its last two dims) has condition number 0.
    torch = torch_mod
    a = np.random.default_rng(3).standard_normal(shape)
    ref = torch.linalg.cond(torch.tensor(a), p).numpy()
    ours = tg.linalg.cond(tg.tensor(a), p).numpy()
    assert ours.shape == ref.shape
    np.testing.assert_allclose(ours, ref, rtol=1e-12)


@pytest.mark.parametrize("size", [2, 4])
def test_local_response_norm_of_an_even_size_matches_torch(torch_mod, size):
    # nn/_layers_functional.py: an even window pads size // 2 before and (size - 1) // 2 after.
    torch = torch_mod
    x = np.random.default_rng(4).standard_normal((2, 6, 5))
    xt, xg = torch.tensor(x, requires_grad=True), tg.tensor(x, requires_grad=True)
    ref = torch.nn.functional.local_response_norm(xt, size)
    ours = tg.nn.functional.local_response_norm(xg, size)
    np.testing.assert_allclose(ours.detach().numpy(), ref.detach().numpy(), rtol=1e-12)
    ref.sum().backward()
    ours.sum().backward()
    np.testing.assert_allclose(xg.grad.numpy(), xt.grad.numpy(), rtol=1e-10)


def test_householder_product_refuses_tau_of_another_batch_like_torch(torch_mod):
    # ops/householder.py: tau of the right rank but another batch shape is an error.
    torch = torch_mod
    a = np.random.default_rng(5).standard_normal((2, 4, 3))
    tau = np.random.default_rng(6).standard_normal((3, 3))
    with pytest.raises(RuntimeError, match="batch"):
        torch.linalg.householder_product(torch.tensor(a), torch.tensor(tau))
    with pytest.raises(RuntimeError, match=r"householder_product: tau \[3, 3\].*\[2, 4, 3\]"):
        tg.linalg.householder_product(tg.tensor(a), tg.tensor(tau))


@pytest.mark.parametrize("legacy", [{"reduce": False}, {"size_average": False}])
def test_kl_div_legacy_reduction_arguments_match_torch(torch_mod, legacy):
    # nn/_losses_pointwise.py: size_average/reduce still choose the reduction, as in torch.
    torch = torch_mod
    rng = np.random.default_rng(7)
    a, b = np.log(rng.dirichlet(np.ones(4), 3)), rng.dirichlet(np.ones(4), 3)
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")
        ref = torch.nn.functional.kl_div(torch.tensor(a), torch.tensor(b), **legacy)
        ours = tg.nn.functional.kl_div(tg.tensor(a), tg.tensor(b), **legacy)
    assert tuple(ours.shape) == tuple(ref.shape)
    np.testing.assert_allclose(ours.numpy(), ref.numpy(), rtol=1e-12)
