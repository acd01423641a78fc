"""AdaptiveLogSoftmaxWithLoss against torch with the same weights: output, loss,
log_prob, predict, gradients of the input and every parameter, and torch's errors."""

import numpy as np
import pytest

import tapegrad as tg


def _pair(torch, *args, **kw):
    theirs = torch.nn.AdaptiveLogSoftmaxWithLoss(*args, **kw).double()
    ours = tg.nn.AdaptiveLogSoftmaxWithLoss(*args, **kw).double()
    ours.load_state_dict({k: v.numpy() for k, v in theirs.state_dict().items()})
    return ours, theirs


@pytest.mark.parametrize(
    "args, kw, target",
    [
        ((8, 10, [3, 6]), {}, [0, 5, 9, 2, 7, 7, 1]),
        ((8, 10, [3, 6]), {"head_bias": True, "div_value": 2.0}, [4, 4, 5]),  # no shortlist row
        ((6, 5, [2]), {}, [0, 1, 0]),  # shortlist only
        ((8, 12, [1, 4, 9]), {}, [11, 0, 3, 4, 8, 9]),
    ],
)
def test_forward_and_gradients_match_torch(torch_mod, args, kw, target):
    ours, theirs = _pair(torch_mod, *args, **kw)
    assert repr(ours) == repr(theirs)
    x = np.random.default_rng(0).standard_normal((len(target), args[0]))
    xt, xr = tg.tensor(x, requires_grad=True), torch_mod.tensor(x, requires_grad=True)
    out, ref = ours(xt, tg.tensor(target)), theirs(xr, torch_mod.tensor(target))
    assert type(out).__name__ == "_ASMoutput" and out._fields == ("output", "loss")
    np.testing.assert_allclose(out.output.detach().numpy(), ref.output.detach().numpy(), rtol=1e-12)
    assert out.loss.item() == pytest.approx(ref.loss.item(), rel=1e-12)
    w = np.random.default_rng(1).standard_normal(len(target))
    (out.loss + (out.output * tg.tensor(w)).sum()).backward()
    (ref.loss + (ref.output * torch_mod.tensor(w)).sum()).backward()
    np.testing.assert_allclose(xt.grad.numpy(), xr.grad.numpy(), rtol=1e-10, atol=1e-12)
    theirs_grads = dict(theirs.named_parameters())
    for name, p in ours.named_parameters():
        ref_grad = theirs_grads[name].grad
        assert (p.grad is None) == (ref_grad is None), name  # an unused cluster: no grad
        if ref_grad is not None:
            np.testing.assert_allclose(
                p.grad.numpy(), ref_grad.numpy(), rtol=1e-10, atol=1e-12, err_msg=name
            )


def test_log_prob_and_predict_match_torch(torch_mod):
    ours, theirs = _pair(torch_mod, 8, 10, [3, 6], head_bias=True)
    rng = np.random.default_rng(2)
    with torch_mod.no_grad():  # head biases that send rows to each branch of predict
        theirs.head.bias.copy_(torch_mod.tensor([0, 0, 0, 3.0, -3.0]))
    ours.load_state_dict({k: v.numpy() for k, v in theirs.state_dict().items()})
    x = rng.standard_normal((9, 8)) * 3
    xt, xr = tg.tensor(x, requires_grad=True), torch_mod.tensor(x, requires_grad=True)
    lp, ref = ours.log_prob(xt), theirs.log_prob(xr)
    np.testing.assert_allclose(lp.detach().numpy(), ref.detach().numpy(), rtol=1e-12)
    np.testing.assert_allclose(np.exp(lp.detach().numpy()).sum(1), 1.0, rtol=1e-12)
    g = rng.standard_normal((9, 10))
    lp.backward(tg.tensor(g))
    ref.backward(torch_mod.tensor(g))
    np.testing.assert_allclose(xt.grad.numpy(), xr.grad.numpy(), rtol=1e-10, atol=1e-12)
    for rows in (slice(None), slice(0, 1), slice(2, 5)):
        p = ours.predict(tg.tensor(x[rows]))
        assert p.dtype == tg.int64
        np.testing.assert_array_equal(p.numpy(), theirs.predict(torch_mod.tensor(x[rows])).numpy())
    # all rows in the shortlist / none in it
    for bias in ([9.0, 0, 0, -9, -9], [-9.0, -9, -9, 9, 0]):
        with torch_mod.no_grad():
            theirs.head.bias.copy_(torch_mod.tensor(bias))
        ours.head.bias.data.copy_(tg.tensor(bias, dtype=tg.float64))
        np.testing.assert_array_equal(
            ours.predict(tg.tensor(x)).numpy(), theirs.predict(torch_mod.tensor(x)).numpy()
        )


def test_unbatched(torch_mod):
    ours, theirs = _pair(torch_mod, 8, 10, [3, 6])
    x = np.random.default_rng(3).standard_normal(8)
    for t in (1, 8):
        out, ref = (
            ours(tg.tensor(x), tg.tensor(t)),
            theirs(torch_mod.tensor(x), torch_mod.tensor(t)),
        )
        assert tuple(out.output.shape) == tuple(ref.output.shape) == ()
        assert out.output.item() == pytest.approx(ref.output.item(), rel=1e-12)


def test_errors_match_torch(torch_mod):
    bad_cutoffs = [([], "length larger than 0"), ([3, 2], "unique, positive"), ([0], "unique"),
                   ([10], "unique"), ([2, 2], "unique"), ([2.5], "unique")]  # fmt: skip
    for cutoffs, msg in bad_cutoffs:
        for lib in (tg, torch_mod):
            with pytest.raises(ValueError, match=msg):
                lib.nn.AdaptiveLogSoftmaxWithLoss(8, 10, cutoffs)
    ours, theirs = _pair(torch_mod, 8, 10, [3, 6])
    cases = [
        ((4, 8), [0, 1, 2], "same size in the batch dimension"),
        ((3, 2, 8), [0, 1, 2], "1D target tensor expects 2D input tensors"),
        ((3, 8), [[0, 1, 2]], "0D or 1D target tensor expected"),
        ((3, 8), [0, 10, 2], r"Target values should be in \[0, 9\], but values in range \[0, 10\]"),
        ((3, 8), [0, -1, 2], r"values in range \[-1, 2\] were found"),
    ]
    for shape, target, msg in cases:
        x = np.zeros(shape)
        for lib, m in ((tg, ours), (torch_mod, theirs)):
            with pytest.raises(RuntimeError, match=msg):
                m(lib.tensor(x), lib.tensor(target))
    for lib, m in ((tg, ours), (torch_mod, theirs)):
        with pytest.raises(RuntimeError, match="0D target tensor expects 1D input tensors"):
            m(lib.zeros(2, 8, dtype=lib.float64), lib.tensor(1))


def test_second_order():
    """Composed of differentiable ops: gradcheck and gradgradcheck hold, no rule of its own."""
    asm = tg.nn.AdaptiveLogSoftmaxWithLoss(6, 8, [2, 5], div_value=2.0).double()
    x = tg.randn(4, 6, dtype=tg.float64, requires_grad=True)
    t = tg.tensor([0, 3, 7, 5])
    assert tg.autograd.gradcheck(lambda x: asm(x, t).loss, (x,))
    assert tg.autograd.gradgradcheck(lambda x: asm(x, t).output, (x,))
