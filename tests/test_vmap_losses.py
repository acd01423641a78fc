"""Issue 15: batching rules for the fused losses (_batch_rules_losses.py): nll_loss,
l1_loss, binary_cross_entropy (with logits), kl_div, gaussian_nll_loss; and for the
norms that looped: group_norm (_batch_rules_nn.py), rms_norm and F.normalize (composed,
now dispatched). Each against a
Python loop for in_dims 0 and 1 and under nested vmap, with no fallback allowed, and
per-sample gradients (vmap(grad)) against a loop of gradients, in float64
(tests/_vmap_harness.py)."""

import numpy as np

import tapegrad as tg

from ._vmap_harness import (
    _ints,
    no_fallback,  # noqa: F401 - autouse: a fallback fails the test
    rule_tests,
)

F = tg.func
NF = tg.nn.functional


def _probs(r, shape):
    return r.uniform(0.05, 0.95, shape)


def _pair(r, b, shape=(3, 4)):
    return [r.standard_normal(b + shape), r.standard_normal(b + shape)]


CASES = {}
for _red in ("mean", "sum", "none"):
    CASES[f"l1_loss-{_red}"] = (
        lambda x, t, red=_red: NF.l1_loss(x, t, reduction=red),
        _pair,
        (True, True),
        0,
    )
    CASES[f"l1_loss-unbatched-target-{_red}"] = (
        lambda x, t, red=_red: NF.l1_loss(x, t, reduction=red),
        lambda r, b: [r.standard_normal(b + (5,)), r.standard_normal((5,))],
        (True, False),
        0,
    )
    CASES[f"bce-{_red}"] = (
        lambda x, t, red=_red: NF.binary_cross_entropy(x, t, reduction=red),
        lambda r, b: [_probs(r, b + (2, 3)), _probs(r, b + (2, 3))],
        (True, True),
        0,
    )
    CASES[f"bce-weight-{_red}"] = (
        lambda x, t, w, red=_red: NF.binary_cross_entropy(x, t, weight=w, reduction=red),
        lambda r, b: [_probs(r, b + (2, 3)), _probs(r, b + (2, 3)), r.uniform(0.5, 2, (3,))],
        (True, True, False),
        0,
    )
    CASES[f"bce_with_logits-{_red}"] = (
        lambda x, t, red=_red: NF.binary_cross_entropy_with_logits(x, t, reduction=red),
        lambda r, b: [r.standard_normal(b + (2, 3)), _probs(r, b + (2, 3))],
        (True, True),
        0,
    )
    CASES[f"nll_loss-{_red}"] = (
        lambda x, t, red=_red: NF.nll_loss(NF.log_softmax(x, -1), t, reduction=red),
        lambda r, b: [r.standard_normal(b + (4, 5)), _ints(r, 5, b + (4,))],
        (True, True),
        0,
    )
    CASES[f"nll_loss-weight-ignore-{_red}"] = (
        lambda x, t, w, red=_red: NF.nll_loss(x, t, weight=w, ignore_index=1, reduction=red),
        lambda r, b: [r.standard_normal(b + (6, 3)), _ints(r, 3, b + (6,)), r.uniform(0.5, 2, 3)],
        (True, True, False),
        0,
    )
    CASES[f"gaussian_nll-{_red}"] = (
        lambda x, t, v, red=_red: NF.gaussian_nll_loss(x, t, v, reduction=red),
        lambda r, b: [
            r.standard_normal(b + (3, 2)),
            r.standard_normal(b + (3, 2)),
            r.uniform(0.5, 2, b + (3, 2)),
        ],  # fmt: skip
        (True, True, True),
        2,
    )
for _red in ("batchmean", "sum", "none"):
    CASES[f"kl_div-{_red}"] = (
        lambda x, t, red=_red: NF.kl_div(NF.log_softmax(x, -1), t, reduction=red),
        lambda r, b: [r.standard_normal(b + (3, 4)), _probs(r, b + (3, 4))],
        (True, True),
        0,
    )
CASES["cross_entropy-weight-ignore-mean"] = (  # its rule (_batch_rules_nn.py), nested too
    lambda x, t, w: NF.cross_entropy(x, t, weight=w, ignore_index=2),
    lambda r, b: [r.standard_normal(b + (6, 3)), _ints(r, 3, b + (6,)), r.uniform(0.5, 2, 3)],
    (True, True, False),
    0,
)
CASES["nll_loss-one-sample"] = (
    lambda x, t: NF.nll_loss(x, t),
    lambda r, b: [r.standard_normal(b + (5,)), _ints(r, 5, b)],
    (True, True),
    0,
)
CASES["nll_loss-unbatched-target"] = (
    lambda x, t: NF.nll_loss(x, t),
    lambda r, b: [r.standard_normal(b + (4, 5)), _ints(r, 5, (4,))],
    (True, False),
    0,
)
CASES["bce_with_logits-pos_weight"] = (
    lambda x, t, p: NF.binary_cross_entropy_with_logits(x, t, pos_weight=p),
    lambda r, b: [r.standard_normal(b + (2, 3)), _probs(r, b + (2, 3)), r.uniform(0.5, 2, 3)],
    (True, True, False),
    0,
)
CASES["bce-unbatched-input"] = (
    lambda x, t: NF.binary_cross_entropy(x, t),
    lambda r, b: [_probs(r, (2, 3)), _probs(r, b + (2, 3))],
    (False, True),
    0,
)
CASES["group_norm"] = (
    lambda x, w, b: NF.group_norm(x, 2, w, b),
    lambda r, b: [r.standard_normal(b + (2, 4, 3)), r.standard_normal(4), r.standard_normal(4)],
    (True, False, False),
    0,
)
CASES["group_norm-batched-affine"] = (  # per-sample gradients of the affine parameters
    lambda x, w, b: NF.group_norm(x, 2, w, b),
    lambda r, b: [
        r.standard_normal(b + (2, 4, 3)),
        r.standard_normal(b + (4,)),
        r.standard_normal(b + (4,)),
    ],  # fmt: skip
    (True, True, True),
    1,
)
CASES["group_norm-unbatched-input"] = (
    lambda x, w: NF.group_norm(x, 4, w),
    lambda r, b: [r.standard_normal((3, 4, 2, 2)), r.standard_normal(b + (4,))],
    (False, True),
    1,
)
CASES["rms_norm"] = (
    lambda x, w: NF.rms_norm(x, (5,), w),
    lambda r, b: [r.standard_normal(b + (3, 5)), r.standard_normal(5)],
    (True, False),
    0,
)
CASES["normalize"] = (
    lambda x: NF.normalize(x, dim=-1),
    lambda r, b: [r.standard_normal(b + (3, 5))],
    (True,),
    0,
)


(
    test_rule_matches_a_loop,
    test_rule_under_nested_vmap,
    test_per_sample_gradients_through_the_rule,
) = rule_tests(CASES)


def test_loss_modules_under_functional_call_use_the_rules():
    """Per-sample gradients of a classifier trained with NLLLoss and of one with
    BCEWithLogitsLoss, as a loop of single-sample gradients."""
    rng = np.random.default_rng(4)
    tg.manual_seed(0)
    net = tg.nn.Sequential(tg.nn.Linear(4, 3), tg.nn.LogSoftmax(-1)).double()
    params = {k: v.detach() for k, v in net.named_parameters()}
    x = tg.tensor(rng.standard_normal((5, 4)))
    y = tg.tensor(rng.integers(0, 3, 5))
    for crit, target in ((tg.nn.NLLLoss(), y), (tg.nn.L1Loss(), x[:, :3])):

        def loss(p, xb, yb, crit=crit):
            return crit(F.functional_call(net, p, (xb.unsqueeze(0),)), yb.unsqueeze(0))

        got = F.vmap(F.grad(loss), in_dims=(None, 0, 0))(params, x, target)
        for b in range(5):
            want = F.grad(loss)(params, x[b], target[b])
            for k in params:
                np.testing.assert_allclose(got[k][b].numpy(), want[k].numpy(), rtol=1e-12)


def test_a_legacy_flag_or_a_weighted_l1_mean_still_gives_the_loop_result(monkeypatch, recwarn):
    """Cases the rules leave to the loop (size_average, a weighted l1 mean) stay exact."""
    monkeypatch.undo()  # the loop is allowed here (no_fallback patched it away)
    rng = np.random.default_rng(5)
    x, t, w = (tg.tensor(rng.standard_normal((3, 4))) for _ in range(3))
    cases = (
        lambda x, t: NF.l1_loss(x, t, weight=w[0]),
        lambda x, t: NF.binary_cross_entropy_with_logits(x, t.sigmoid(), size_average=False),
    )
    for f in cases:
        got = F.vmap(f)(x, t)
        want = tg.stack([f(x[b], t[b]) for b in range(3)])
        np.testing.assert_allclose(got.numpy(), want.numpy(), rtol=1e-12)


def test_layer_norm_under_nested_vmap_runs_its_rule_at_both_levels():
    """The rule's physical call is dispatched, so the outer level batches it too."""
    rng = np.random.default_rng(6)
    x = tg.tensor(rng.standard_normal((2, 3, 4, 5)))
    w, b = (tg.tensor(rng.standard_normal(5)) for _ in range(2))

    def f(v):
        return NF.layer_norm(v, (5,), w, b)

    got = F.vmap(F.vmap(f))(x)
    np.testing.assert_allclose(got.numpy(), f(x).numpy(), rtol=1e-12, atol=1e-13)
