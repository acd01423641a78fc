"""tg.optim.lr_scheduler: learning-rate sequences equal to torch's."""

import math
import warnings

import numpy as np
import pytest

import tapegrad as tg

SCHEDULERS = [
    ("StepLR", dict(step_size=3, gamma=0.5)),
    ("MultiStepLR", dict(milestones=[2, 5, 5, 9], gamma=0.3)),
    ("ExponentialLR", dict(gamma=0.9)),
    ("CosineAnnealingLR", dict(T_max=5)),
    ("CosineAnnealingLR", dict(T_max=4, eta_min=0.01)),
    ("LambdaLR", dict(lr_lambda=lambda epoch: 1.0 / (epoch + 1))),
]


def _ids(value):
    # Deterministic ids (no function addresses), so pytest-xdist workers agree.
    if isinstance(value, dict):
        return ",".join(f"{k}={v}" for k, v in value.items() if not callable(v)) or "fn"
    return str(value)


def _optimizer(m, opt_name="SGD"):
    # Two groups with different rates: every scheduler must treat them separately.
    a = m.zeros(2, requires_grad=True)
    b = m.zeros(2, requires_grad=True)
    return getattr(m.optim, opt_name)([{"params": [a]}, {"params": [b], "lr": 0.5}], lr=0.1)


def _assert_same(ours, theirs):
    np.testing.assert_allclose(np.array(ours), np.array(theirs), rtol=1e-12, atol=0)


def _sequence(m, name, kwargs, epochs=20, external_change_at=None):
    opt = _optimizer(m)
    sched = getattr(m.optim.lr_scheduler, name)(opt, **kwargs)
    lrs = [sched.get_last_lr()]
    for epoch in range(epochs):
        opt.step()
        sched.step()
        if epoch == external_change_at:
            for group in opt.param_groups:
                group["lr"] *= 2
        lrs.append(sched.get_last_lr())
        assert [g["lr"] for g in opt.param_groups] == lrs[-1] or epoch == external_change_at
    return lrs


@pytest.mark.parametrize(("name", "kwargs"), SCHEDULERS, ids=_ids)
def test_sequence_matches_torch(torch_mod, name, kwargs):
    ours = _sequence(tg, name, kwargs)
    theirs = _sequence(torch_mod, name, kwargs)
    _assert_same(ours, theirs)
    assert len({tuple(lrs) for lrs in ours}) > 2  # the rate really changes


@pytest.mark.parametrize(("name", "kwargs"), SCHEDULERS[:4], ids=_ids)
def test_chainable_with_outside_changes_matches_torch(torch_mod, name, kwargs):
    ours = _sequence(tg, name, kwargs, epochs=12, external_change_at=4)
    theirs = _sequence(torch_mod, name, kwargs, epochs=12, external_change_at=4)
    _assert_same(ours, theirs)


@pytest.mark.parametrize(("name", "kwargs"), SCHEDULERS[:5], ids=_ids)
def test_step_with_epoch_uses_closed_form_like_torch(torch_mod, name, kwargs):
    results = []
    for m in (tg, torch_mod):
        opt = _optimizer(m)
        sched = getattr(m.optim.lr_scheduler, name)(opt, **kwargs)
        with warnings.catch_warnings():
            warnings.simplefilter("ignore")
            results.append([_step_to(sched, epoch) for epoch in (7, 3, 11)])
    _assert_same(results[0], results[1])


def _step_to(sched, epoch):
    sched.step(epoch)
    return list(sched.get_last_lr())


def test_lambda_per_group_and_length_check():
    opt = _optimizer(tg)
    sched = tg.optim.lr_scheduler.LambdaLR(opt, [lambda e: 1.0, lambda e: 0.5**e])
    sched.step()
    sched.step()
    assert sched.get_last_lr() == [0.1, 0.125]
    with pytest.raises(ValueError, match="Expected 2 lr_lambdas"):
        tg.optim.lr_scheduler.LambdaLR(opt, [lambda e: 1.0])


def test_cosine_reaches_eta_min_and_records_initial_lr():
    opt = _optimizer(tg)
    sched = tg.optim.lr_scheduler.CosineAnnealingLR(opt, T_max=10, eta_min=0.001)
    assert [g["initial_lr"] for g in opt.param_groups] == [0.1, 0.5]
    for _ in range(10):
        sched.step()
    assert sched.get_last_lr() == pytest.approx([0.001, 0.001], rel=1e-9)
    expected_mid = 0.001 + (0.1 - 0.001) * (1 + math.cos(math.pi * 5 / 10)) / 2
    opt2 = _optimizer(tg)
    sched2 = tg.optim.lr_scheduler.CosineAnnealingLR(opt2, T_max=10, eta_min=0.001)
    for _ in range(5):
        sched2.step()
    assert sched2.get_last_lr()[0] == pytest.approx(expected_mid, rel=1e-12)


@pytest.mark.parametrize(("name", "kwargs"), SCHEDULERS[:5], ids=_ids)
def test_state_dict_resumes_identically(tmp_path, name, kwargs):
    cls = getattr(tg.optim.lr_scheduler, name)
    straight = _sequence(tg, name, kwargs, epochs=10)

    opt = _optimizer(tg)
    sched = cls(opt, **kwargs)
    for _ in range(4):
        sched.step()
    tg.save({"optim": opt.state_dict(), "sched": sched.state_dict()}, tmp_path / "s")

    loaded = tg.load(tmp_path / "s")
    opt2 = _optimizer(tg)
    sched2 = cls(opt2, **kwargs)
    opt2.load_state_dict(loaded["optim"])
    sched2.load_state_dict(loaded["sched"])
    resumed = [sched2.get_last_lr()]
    for _ in range(6):
        sched2.step()
        resumed.append(sched2.get_last_lr())
    _assert_same(resumed, straight[4:])


def test_resuming_without_initial_lr_raises():
    with pytest.raises(KeyError, match="initial_lr"):
        tg.optim.lr_scheduler.StepLR(_optimizer(tg), step_size=2, last_epoch=3)
    with pytest.raises(TypeError, match="not an Optimizer"):
        tg.optim.lr_scheduler.StepLR(object(), step_size=2)
