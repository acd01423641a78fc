"""The schedulers of issue 11 against torch 2.13: exact lr (and momentum) sequences over two
param groups, and state-dict round trips that continue the same sequence."""

import copy
import re
import warnings

import numpy as np
import pytest

import tapegrad as tg


def _optimizer(m, kind="SGD"):
    a = m.zeros(2, requires_grad=True)
    b = m.zeros(3, requires_grad=True)
    groups = [{"params": [a]}, {"params": [b], "lr": 0.05}]
    if kind == "SGD":
        return m.optim.SGD(groups, lr=0.1, momentum=0.9)
    return m.optim.Adam(groups, lr=0.1)


def _make(m, name, kind, kwargs):
    opt = _optimizer(m, kind)
    sched_mod = m.optim.lr_scheduler
    kwargs = dict(kwargs)
    if name == "SequentialLR":
        kwargs["schedulers"] = [
            sched_mod.LinearLR(opt, start_factor=0.25, total_iters=3),
            sched_mod.ExponentialLR(opt, gamma=0.8),
            sched_mod.CosineAnnealingLR(opt, T_max=4),
        ]
        return opt, sched_mod.SequentialLR(opt, **kwargs)
    if name == "ChainedScheduler":
        scheds = [
            sched_mod.ConstantLR(opt, factor=0.5, total_iters=3),
            sched_mod.ExponentialLR(opt, gamma=0.9),
            sched_mod.MultiplicativeLR(opt, lambda e: 0.99),
        ]
        return opt, sched_mod.ChainedScheduler(scheds)
    return opt, getattr(sched_mod, name)(opt, **kwargs)


CASES = [
    ("LambdaLR", "SGD", dict(lr_lambda=lambda e: 1.0 / (e + 1))),
    ("MultiplicativeLR", "SGD", dict(lr_lambda=lambda e: 0.9)),
    ("MultiplicativeLR", "SGD", dict(lr_lambda=[lambda e: 0.9, lambda e: 0.5 + 0.01 * e])),
    ("ConstantLR", "SGD", dict()),
    ("ConstantLR", "SGD", dict(factor=0.5, total_iters=3)),
    ("LinearLR", "SGD", dict()),
    ("LinearLR", "SGD", dict(start_factor=0.1, end_factor=0.7, total_iters=7)),
    ("PolynomialLR", "SGD", dict()),
    ("PolynomialLR", "SGD", dict(total_iters=8, power=2.0)),
    ("SequentialLR", "SGD", dict(milestones=[3, 7])),
    ("ChainedScheduler", "SGD", dict()),
    ("CosineAnnealingWarmRestarts", "SGD", dict(T_0=3)),
    ("CosineAnnealingWarmRestarts", "SGD", dict(T_0=2, T_mult=2, eta_min=0.001)),
    ("CyclicLR", "SGD", dict(base_lr=0.01, max_lr=0.1, step_size_up=3)),
    (
        "CyclicLR",
        "SGD",
        dict(base_lr=[0.01, 0.02], max_lr=[0.1, 0.2], step_size_up=2, step_size_down=4),
    ),
    ("CyclicLR", "SGD", dict(base_lr=0.01, max_lr=0.1, step_size_up=2, mode="triangular2")),
    (
        "CyclicLR",
        "Adam",
        dict(base_lr=0.01, max_lr=0.1, step_size_up=3, mode="exp_range", gamma=0.9),
    ),
    ("CyclicLR", "Adam", dict(base_lr=0.01, max_lr=0.1, step_size_up=2, cycle_momentum=False)),
    (
        "CyclicLR",
        "SGD",
        dict(base_lr=0.01, max_lr=0.1, step_size_up=2, scale_fn=lambda x: 0.5**x),
    ),
    ("OneCycleLR", "SGD", dict(max_lr=0.5, total_steps=16)),
    ("OneCycleLR", "Adam", dict(max_lr=[0.5, 0.2], epochs=4, steps_per_epoch=4, pct_start=0.25)),
    (
        "OneCycleLR",
        "SGD",
        dict(max_lr=0.5, total_steps=16, anneal_strategy="linear", three_phase=True),
    ),
    ("OneCycleLR", "SGD", dict(max_lr=0.5, total_steps=16, cycle_momentum=False)),
]


def _case_id(value):
    """A test id without object addresses: xdist workers must collect the same ids."""
    return re.sub(r"<function (\S+) at 0x[0-9a-f]+>", r"\1", str(value))[:40]


def _momenta(opt):
    return [g.get("momentum", g.get("betas", (None,))[0]) for g in opt.param_groups]


def _sequence(opt, sched, steps):
    out = [(list(sched.get_last_lr()), _momenta(opt))]
    for _ in range(steps):
        opt.step()
        sched.step()
        out.append((list(sched.get_last_lr()), _momenta(opt)))
    return out


def _assert_same(ours, theirs):
    for i, ((lo, mo), (lt, mt)) in enumerate(zip(ours, theirs, strict=True)):
        np.testing.assert_allclose(lo, lt, rtol=1e-14, atol=0, err_msg=f"lr at step {i}")
        assert [m is None for m in mo] == [m is None for m in mt]
        np.testing.assert_allclose(
            [m for m in mo if m is not None],
            [m for m in mt if m is not None],
            rtol=1e-14,
            err_msg=f"momentum at step {i}",
        )


@pytest.mark.parametrize(("name", "kind", "kwargs"), CASES, ids=_case_id)
def test_sequence_matches_torch(torch_mod, name, kind, kwargs):
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")
        ours = _sequence(*_make(tg, name, kind, kwargs), 15)
        theirs = _sequence(*_make(torch_mod, name, kind, kwargs), 15)
    _assert_same(ours, theirs)


@pytest.mark.parametrize(("name", "kind", "kwargs"), CASES, ids=_case_id)
def test_state_dict_round_trip(name, kind, kwargs):
    opt, sched = _make(tg, name, kind, kwargs)
    _sequence(opt, sched, 5)
    saved_sched = copy.deepcopy(sched.state_dict())
    saved_opt = copy.deepcopy(opt.state_dict())
    expected = _sequence(opt, sched, 6)[1:]
    opt2, sched2 = _make(tg, name, kind, kwargs)
    opt2.load_state_dict(saved_opt)
    sched2.load_state_dict(saved_sched)
    _assert_same(_sequence(opt2, sched2, 6)[1:], expected)


@pytest.mark.parametrize(
    "kwargs",
    [
        dict(),
        dict(mode="max", patience=1, factor=0.5),
        dict(patience=2, threshold_mode="abs", threshold=0.05, cooldown=2, min_lr=[0.02, 0.001]),
        dict(patience=0, eps=0.02),
    ],
    ids=str,
)
def test_reduce_lr_on_plateau_matches_torch(torch_mod, kwargs):
    metrics = [1.0, 0.9, 0.95, 0.95, 0.94, 0.96, 0.8, 0.81, 0.82, 0.83, 0.84, 0.5, 0.6, 0.7]
    metrics = metrics + metrics[::-1] + [0.3] * 12

    def run(m):
        opt = _optimizer(m)
        sched = m.optim.lr_scheduler.ReduceLROnPlateau(opt, **kwargs)
        lrs = []
        for v in metrics:
            opt.step()
            sched.step(v)
            lrs.append(list(sched.get_last_lr()))
        return lrs, sched

    (ours, sched), (theirs, _) = run(tg), run(torch_mod)
    np.testing.assert_allclose(ours, theirs, rtol=1e-14)
    assert ours[0] != ours[-1], "the rate never changed: the test would not catch a bad rule"
    fresh_opt = _optimizer(tg)
    again = tg.optim.lr_scheduler.ReduceLROnPlateau(fresh_opt, **kwargs)
    again.load_state_dict(sched.state_dict())
    assert again.best == sched.best and again.num_bad_epochs == sched.num_bad_epochs


def test_scheduler_errors():
    opt = _optimizer(tg)
    sched = tg.optim.lr_scheduler
    with pytest.raises(ValueError, match="Factor should be < 1.0"):
        sched.ReduceLROnPlateau(opt, factor=1.0)
    with pytest.raises(ValueError, match="total_steps OR"):
        sched.OneCycleLR(opt, max_lr=0.1)
    with pytest.raises(ValueError, match="Tried to step"):
        s = sched.OneCycleLR(opt, max_lr=0.1, total_steps=2)
        for _ in range(3):
            s.step()
    with pytest.raises(ValueError, match="T_0"):
        sched.CosineAnnealingWarmRestarts(opt, T_0=0)
    with pytest.raises(ValueError, match="one more"):
        sched.SequentialLR(opt, [sched.ConstantLR(opt)], milestones=[2])
    with pytest.raises(ValueError, match="momentum"):
        sched.CyclicLR(tg.optim.Adagrad([tg.zeros(1, requires_grad=True)]), 0.01, 0.1)
