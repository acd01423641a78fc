"""Survivors of the mutation sample seed 2303 (docs/mutation-run-seed2303.md), each killed
by a test of the behaviour it changed."""

import numpy as np
import pytest
import torch

import tapegrad as tg
from tapegrad.autograd.graph import make_result
from tapegrad.autograd.memory import saved_bytes


@pytest.mark.parametrize("container", ["list", "dict"])
def test_saved_bytes_of_a_closure_holding_a_container_that_contains_itself(container):
    """saved_bytes walks captured containers only a few levels deep: a self-referential
    list or dict is measured without a RecursionError, its shallow array counted once."""
    x = tg.ones(3, requires_grad=True)
    if container == "list":
        held = [np.ones(4)]  # 32 bytes, one level down
        held.append(held)
    else:
        held = {"a": np.ones(4)}
        held["self"] = held

    def backward(g):
        return (g * len(held),)

    y = make_result(x._data * 2.0, (x,), backward, "SelfListBackward")
    assert saved_bytes(y) == 32


@pytest.mark.parametrize("batch", [(5,), (2, 3)])
def test_linear_backward_in_step_mode_for_input_and_weight_matches_torch(step_mode, batch):
    """Step mode (TAPEGRAD_INTRA_OP=step) hands x's and w's gradients to one split GEMM
    pair; a small product falls back to plain GEMMs: either way torch's gradients."""
    rng = np.random.default_rng(0)
    xs, ws, bs = (
        rng.standard_normal(batch + (4,)),
        rng.standard_normal((3, 4)),
        rng.standard_normal(3),
    )
    grads = []
    for mod in (tg, torch):
        x, w, b = (mod.tensor(a, requires_grad=True) for a in (xs, ws, bs))
        mod.nn.functional.linear(x, w, b).tanh().sum().backward()
        grads.append([t.grad.detach().numpy() for t in (x, w, b)])
    for mine, theirs in zip(*grads, strict=True):
        np.testing.assert_allclose(mine, theirs, rtol=1e-12, atol=1e-14)


def test_swapaxes_names_itself_in_a_dimension_error():
    """torch: IndexError 'Dimension out of range'; tapegrad's message names the op."""
    with pytest.raises(IndexError, match="swapaxes: dimension 2 out of range"):
        tg.swapaxes(tg.zeros(2, 3), 0, 2)
    with pytest.raises(IndexError, match="swapaxes: dimension 1 out of range"):
        tg.swapaxes(tg.zeros(()), 1, 0)
    with pytest.raises(IndexError):
        torch.swapaxes(torch.zeros(2, 3), 0, 2)


@pytest.mark.parametrize("op", ["layer_norm", "group_norm", "rms_norm"])
def test_normalization_leaves_numpys_error_state_as_it_found_it(op):
    """The kernels silence floating-point warnings while they run (inf - inf = NaN silently,
    as torch) and restore the caller's NumPy error state after."""
    x = tg.randn(2, 4, 3)
    call = {
        "layer_norm": lambda: tg.nn.functional.layer_norm(x, (3,), tg.ones(3), tg.zeros(3)),
        "group_norm": lambda: tg.nn.functional.group_norm(x, 2, tg.ones(4), tg.zeros(4)),
        "rms_norm": lambda: tg.nn.functional.rms_norm(x, (3,), tg.ones(3)),
    }[op]
    with np.errstate(all="raise"):
        call()
        assert np.geterr() == dict(divide="raise", over="raise", under="raise", invalid="raise")


@pytest.mark.parametrize(
    "kw", [{"keepdim": True}, {"keepdims": True}, {"dim": None, "keepdim": True}]
)
def test_prod_over_everything_keeps_dims_when_asked_like_sum_and_numpy(kw):
    """torch.prod has no keepdim without a dim (TypeError); tapegrad takes NumPy's
    keepdims there, as its sum does: shape (1, 1), and the gradient of every element."""
    xs = np.array([[1.0, 2.0, 3.0], [4.0, 0.5, -2.0]])
    x = tg.tensor(xs, requires_grad=True)
    y = tg.prod(x, **kw)
    assert y.shape == tg.sum(x, keepdim=True).shape == np.prod(xs, keepdims=True).shape
    y.sum().backward()
    t = torch.tensor(xs, requires_grad=True)
    torch.prod(t).backward()
    np.testing.assert_allclose(y.detach().numpy(), np.prod(xs, keepdims=True), rtol=1e-15)
    np.testing.assert_allclose(x.grad.numpy(), t.grad.numpy(), rtol=1e-15)


@pytest.mark.parametrize("shape", [(), (3,), (3, 2)])
@pytest.mark.parametrize("i", [-1, 3])
def test_index_add_out_of_range_raises_torchs_error_type_for_each_rank(shape, i):
    """torch's index_add: IndexError for a 0-d or 1-D tensor, RuntimeError for more dims."""
    errors = []
    for mod in (torch, tg):
        x, src = mod.zeros(shape), mod.ones((1,) + shape[1:] if shape else ())
        with pytest.raises((IndexError, RuntimeError)) as info:
            x.index_add(0, mod.tensor([i]), src)
        errors.append(info.type)
    assert errors[0] is errors[1]
