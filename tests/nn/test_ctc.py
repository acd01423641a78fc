"""F.ctc_loss / nn.CTCLoss against torch 2.13: losses and gradients (float64), padded and
concatenated targets, every reduction, zero_infinity, and the unbatched form."""

import numpy as np
import pytest

import tapegrad as tg

R = np.random.default_rng(41)
T, N, C = 12, 3, 5
LOGITS = R.standard_normal((T, N, C))
PADDED = np.array([[1, 2, 2, 0], [3, 1, 0, 0], [4, 4, 4, 1]])
TARGET_LENGTHS = [3, 2, 4]
INPUT_LENGTHS = [12, 9, 10]


def _run(m, reduction, concatenated=False, blank=0, zero_infinity=False, in_len=INPUT_LENGTHS):
    x = m.tensor(LOGITS, requires_grad=True)
    lp = x.log_softmax(2)
    lp.retain_grad()
    padded = PADDED if blank == 0 else np.where(PADDED == blank, 0, PADDED)
    if concatenated:
        targets = np.concatenate([padded[b, :n] for b, n in enumerate(TARGET_LENGTHS)])
    else:
        targets = padded
    loss = m.nn.functional.ctc_loss(
        lp,
        m.tensor(targets),
        m.tensor(in_len),
        m.tensor(TARGET_LENGTHS),
        blank=blank,
        reduction=reduction,
        zero_infinity=zero_infinity,
    )
    gy = np.linspace(0.5, 1.5, N) if reduction == "none" else 1.0
    (loss * m.tensor(gy)).sum().backward()
    return loss.detach().numpy(), lp.grad.numpy(), x.grad.numpy()


@pytest.mark.parametrize("reduction", ["none", "mean", "sum"])
@pytest.mark.parametrize("concatenated", [False, True])
def test_ctc_matches_torch(torch_mod, reduction, concatenated):
    ours = _run(tg, reduction, concatenated)
    theirs = _run(torch_mod, reduction, concatenated)
    for what, a, b in zip(("loss", "grad log_probs", "grad logits"), ours, theirs, strict=True):
        np.testing.assert_allclose(a, b, rtol=1e-9, atol=1e-11, err_msg=what)


def test_ctc_blank_other_than_zero(torch_mod):
    ours, theirs = _run(tg, "mean", blank=4), _run(torch_mod, "mean", blank=4)
    for a, b in zip(ours, theirs, strict=True):
        np.testing.assert_allclose(a, b, rtol=1e-9, atol=1e-11)


def test_ctc_zero_infinity(torch_mod):
    # 4 labels with a repeat need at least 5 frames: a 3-frame input is impossible
    short = [12, 9, 3]
    ours = _run(tg, "none", zero_infinity=True, in_len=short)
    theirs = _run(torch_mod, "none", zero_infinity=True, in_len=short)
    assert ours[0][2] == 0.0
    for a, b in zip(ours, theirs, strict=True):
        np.testing.assert_allclose(a, b, rtol=1e-9, atol=1e-11)
    inf_loss = _run(tg, "none", in_len=short)[0]
    assert np.isinf(inf_loss[2])


def test_ctc_unbatched_module_and_errors(torch_mod):
    lp = R.standard_normal((6, 4))
    lp = lp - np.log(np.exp(lp).sum(1, keepdims=True))
    t = np.array([1, 3])
    ours = tg.nn.CTCLoss(reduction="none")(tg.tensor(lp), tg.tensor(t), (6,), (2,))
    ref = torch_mod.nn.CTCLoss(reduction="none")(
        torch_mod.tensor(lp), torch_mod.tensor(t), (6,), (2,)
    )
    assert tuple(ours.shape) == tuple(ref.shape)
    np.testing.assert_allclose(ours.numpy(), ref.numpy(), rtol=1e-10)
    with pytest.raises(RuntimeError, match="not blank"):
        tg.nn.functional.ctc_loss(tg.tensor(lp), tg.tensor([0, 1]), [6], [2])
    x = tg.tensor(lp, requires_grad=True)
    loss = tg.nn.functional.ctc_loss(x, tg.tensor(t), [6], [2])
    (g,) = tg.autograd.grad(loss, x, retain_graph=True)
    assert g.shape == x.shape
    with pytest.raises(NotImplementedError, match="double backward"):
        tg.autograd.grad(loss, x, create_graph=True)


def test_ctc_empty_target_matches_torch(torch_mod):
    # a target of length 0: the only path is all blanks (one end state, not two)
    def run(m):
        x = m.tensor(LOGITS, requires_grad=True)
        loss = m.nn.functional.ctc_loss(
            x.log_softmax(2),
            m.tensor(PADDED),
            m.tensor(INPUT_LENGTHS),
            m.tensor([0, 2, 0]),
            reduction="none",
        )
        loss.sum().backward()
        return loss.detach().numpy(), x.grad.numpy()

    for a, b in zip(run(tg), run(torch_mod), strict=True):
        np.testing.assert_allclose(a, b, rtol=1e-6, atol=1e-8)
