"""Regressions found by op_db in nn.functional (issue 10): each compared with torch."""

import numpy as np
import pytest

import tapegrad as tg

torch = pytest.importorskip("torch", reason="PyTorch is not installed: comparison skipped")

rng = np.random.default_rng(10)


def _both(torch, shape):
    x = rng.standard_normal(shape)
    return tg.tensor(x, requires_grad=True), torch.tensor(x, requires_grad=True)


def _check(ours, theirs, xs_ours, xs_theirs):
    np.testing.assert_allclose(ours.detach().numpy(), theirs.detach().numpy(), atol=1e-12)
    assert tuple(ours.shape) == tuple(theirs.shape)
    if theirs.numel() == 0:
        return
    w = rng.standard_normal(tuple(theirs.shape))
    got = tg.autograd.grad((ours * tg.tensor(w)).sum(), xs_ours)
    want = torch.autograd.grad((theirs * theirs.new_tensor(w)).sum(), xs_theirs)
    for g, h in zip(got, want):
        np.testing.assert_allclose(g.numpy(), h.numpy(), atol=1e-12)


@pytest.mark.parametrize("fn", ["multi_margin_loss", "multilabel_margin_loss"])
@pytest.mark.parametrize("reduction", ["none", "mean", "sum"])
def test_margin_losses_take_a_0d_input_as_one_sample(fn, reduction, torch_mod):
    """A 0-d input and target were refused; torch takes them as one sample of one class."""
    for target in (0, -1) if fn.startswith("multilabel") else (0,):
        a, b = _both(torch_mod, ())
        ours = getattr(tg.nn.functional, fn)(a, tg.tensor(target), reduction=reduction)
        theirs = getattr(torch_mod.nn.functional, fn)(
            b, torch_mod.tensor(target), reduction=reduction
        )
        _check(ours, theirs, [a], [b])


def test_circular_pad_leaves_an_empty_unpadded_dim_alone(torch_mod):
    for pad in ((1, 2), (0, 1)):
        a, b = _both(torch_mod, (0, 3, 3))
        ours = tg.nn.functional.pad(a, pad, mode="circular")
        theirs = torch_mod.nn.functional.pad(b, pad, mode="circular")
        assert tuple(ours.shape) == tuple(theirs.shape) == (0, 3, 3 + sum(pad))
    with pytest.raises(RuntimeError, match="circular"):  # the padded dim is still checked
        tg.nn.functional.pad(tg.zeros(2, 0), (1, 1), mode="circular")


def test_pool_and_conv_arguments_accept_one_element_tuples(torch_mod):
    """torch's int[2] arguments repeat a 1-element list: padding=(1,) is (1, 1)."""
    a, b = _both(torch_mod, (2, 3, 9, 9))
    F, G = tg.nn.functional, torch_mod.nn.functional
    _check(F.avg_pool2d(a, (3, 3), (1,), (1,), True, False, 2),
           G.avg_pool2d(b, (3, 3), (1,), (1,), True, False, 2), [a], [b])  # fmt: skip
    _check(F.max_pool2d(a, (3,), (2,), (1,)), G.max_pool2d(b, (3,), (2,), (1,)), [a], [b])
    w = rng.standard_normal((2, 3, 3, 3))
    _check(
        F.conv2d(a, tg.tensor(w), stride=(2,), padding=(1,)),
        G.conv2d(b, torch_mod.tensor(w), stride=(2,), padding=(1,)),
        [a],
        [b],
    )
    with pytest.raises(ValueError, match="padding"):
        F.avg_pool2d(a, 3, 1, (1, 1, 1))


@pytest.mark.parametrize("training", [True, False])
def test_batch_norm_of_an_empty_input_is_a_copy(training, torch_mod):
    for shape in ((0,), (0, 4), (4, 0)):
        c = shape[1] if len(shape) > 1 else 0
        a, b = _both(torch_mod, shape)
        ours = tg.nn.functional.batch_norm(a, tg.zeros(c), tg.ones(c), training=training)
        theirs = torch_mod.nn.functional.batch_norm(
            b, torch_mod.zeros(c), torch_mod.ones(c), training=training
        )
        assert tuple(ours.shape) == tuple(theirs.shape) and ours.dtype == tg.float64
        (g,) = tg.autograd.grad(ours.sum(), [a])
        assert tuple(g.shape) == shape
    with pytest.raises(RuntimeError, match="running_mean"):  # a 1-D input has no channels
        tg.nn.functional.batch_norm(tg.ones(3), tg.zeros(3), tg.ones(3))


@pytest.mark.parametrize(
    "sa, sb, dims",
    [((1, 1, 1), (2, 1, 2), ([0, 1], [2, 0])), ((3, 1), (3, 2), 2), ((3, 2), (1, 2), 2)],
)
def test_tensordot_broadcasts_size_one_contracted_dims(sa, sb, dims, torch_mod):
    a, ta = _both(torch_mod, sa)
    b, tb = _both(torch_mod, sb)
    _check(tg.tensordot(a, b, dims=dims), torch_mod.tensordot(ta, tb, dims=dims), [a, b], [ta, tb])
    assert tg.autograd.gradgradcheck(lambda x, y: tg.tensordot(x, y, dims=dims), (a, b))
    with pytest.raises(RuntimeError, match="contracted dimensions"):
        tg.tensordot(tg.ones(3, 2), tg.ones(2, 2), dims=2)
