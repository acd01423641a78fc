"""tg.optim.swa_utils against torch 2.13: AveragedModel with every averaging function and
use_buffers, update_bn, SWALR's schedule, and the errors."""

import numpy as np
import pytest

import tapegrad as tg
from tapegrad.optim import swa_utils

RNG = np.random.default_rng(5)


def _net(m):
    m.manual_seed(0)
    return m.nn.Sequential(m.nn.Linear(3, 4), m.nn.BatchNorm1d(4), m.nn.Linear(4, 2))


def _set_all(pairs, rng):
    """Give the torch and tapegrad models the same new parameters and buffers."""
    values = {}
    for k, v in pairs[0][1].state_dict().items():
        v = v.detach().numpy()
        draw = np.abs(rng.standard_normal(v.shape) * 3)
        values[k] = draw.astype(v.dtype) if v.dtype.kind == "f" else np.asarray(rng.integers(9))
    for m, model in pairs:
        model.load_state_dict({k: m.tensor(v) for k, v in values.items()})


AVG_CASES = [
    ("default", {}),
    ("default_buffers", {"use_buffers": True}),
    ("ema_multi", {"multi_avg_fn": ("get_ema_multi_avg_fn", 0.9)}),
    ("ema_multi_buffers", {"multi_avg_fn": ("get_ema_multi_avg_fn", 0.75), "use_buffers": True}),
    ("swa_multi", {"multi_avg_fn": ("get_swa_multi_avg_fn",)}),
    ("ema", {"avg_fn": ("get_ema_avg_fn", 0.5)}),
    ("swa", {"avg_fn": ("get_swa_avg_fn",)}),
    ("swa_buffers", {"avg_fn": ("get_swa_avg_fn",), "use_buffers": True}),
]


def _build(m, kwargs):
    out = dict(kwargs)
    for key in ("multi_avg_fn", "avg_fn"):
        if key in out:
            name, *args = out[key]
            out[key] = getattr(m.optim.swa_utils, name)(*args)
    return out


@pytest.mark.parametrize("case,kwargs", AVG_CASES, ids=[c for c, _ in AVG_CASES])
@pytest.mark.parametrize("dtype", ["float32", "float64"])
def test_averaged_model_matches_torch(torch_mod, case, kwargs, dtype):
    pairs = [(m, _net(m).to(getattr(m, dtype))) for m in (torch_mod, tg)]
    rng = np.random.default_rng(1)
    _set_all(pairs, rng)
    averaged = [m.optim.swa_utils.AveragedModel(net, **_build(m, kwargs)) for m, net in pairs]
    for _ in range(5):
        for avg, (_, net) in zip(averaged, pairs, strict=True):
            avg.update_parameters(net)
        _set_all(pairs, rng)
    want, got = averaged[0].state_dict(), averaged[1].state_dict()
    assert list(got) == list(want)
    for k in want:
        assert got[k].dtype == getattr(tg, str(want[k].dtype).split(".")[1]), k
        np.testing.assert_allclose(got[k].numpy(), want[k].numpy(), rtol=1e-6, atol=1e-7,
                                   err_msg=k)  # fmt: skip
    x = RNG.standard_normal((5, 3))
    averaged[0].eval(), averaged[1].eval()
    np.testing.assert_allclose(
        averaged[1](tg.tensor(x, dtype=getattr(tg, dtype))).detach().numpy(),
        averaged[0](torch_mod.tensor(x, dtype=getattr(torch_mod, dtype))).detach().numpy(),
        rtol=1e-5,
        atol=1e-6,
    )


def test_update_bn_matches_torch(torch_mod):
    xs = [RNG.standard_normal((6, 3)).astype(np.float32) for _ in range(4)]
    out = []
    pairs = [(m, _net(m)) for m in (torch_mod, tg)]
    _set_all(pairs, np.random.default_rng(2))
    for m, net in pairs:
        net.eval()
        loader = [(m.tensor(x), m.zeros(6)) for x in xs[:2]] + [m.tensor(x) for x in xs[2:]]
        m.optim.swa_utils.update_bn(loader, net)
        bn = net[1]
        assert not net.training and bn.momentum == 0.1
        out.append([bn.running_mean.numpy(), bn.running_var.numpy(), int(bn.num_batches_tracked)])
    np.testing.assert_allclose(out[1][0], out[0][0], rtol=1e-5, atol=1e-7)
    np.testing.assert_allclose(out[1][1], out[0][1], rtol=1e-5)
    assert out[1][2] == out[0][2] == 4


@pytest.mark.parametrize(
    "kwargs",
    [
        dict(swa_lr=0.05),
        dict(swa_lr=0.05, anneal_epochs=3, anneal_strategy="linear"),
        dict(swa_lr=[0.05, 0.2], anneal_epochs=4),
        dict(swa_lr=0.5, anneal_epochs=0),
    ],
)
def test_swalr_matches_torch(torch_mod, kwargs):
    lrs = []
    for m in (torch_mod, tg):
        a, b = m.zeros(2, requires_grad=True), m.zeros(2, requires_grad=True)
        opt = m.optim.SGD([{"params": [a]}, {"params": [b], "lr": 0.3}], lr=1.0)
        sched = m.optim.swa_utils.SWALR(opt, **kwargs)
        seq = [sched.get_last_lr()]
        for _ in range(12):
            opt.step()
            sched.step()
            seq.append(sched.get_last_lr())
        lrs.append(seq)
    np.testing.assert_allclose(np.array(lrs[1]), np.array(lrs[0]), rtol=1e-12)


@pytest.mark.parametrize(
    "call",
    [
        lambda m: m.optim.swa_utils.get_ema_multi_avg_fn(1.5),
        lambda m: m.optim.swa_utils.get_ema_avg_fn(-0.1),
        lambda m: m.optim.swa_utils.SWALR(_opt(m), swa_lr=0.1, anneal_strategy="exp"),
        lambda m: m.optim.swa_utils.SWALR(_opt(m), swa_lr=0.1, anneal_epochs=-1),
        lambda m: m.optim.swa_utils.SWALR(_opt(m), swa_lr=0.1, anneal_epochs=2.0),
    ],
)
def test_errors_match_torch(torch_mod, call):
    with pytest.raises(ValueError) as want:
        call(torch_mod)
    with pytest.raises(ValueError) as got:
        call(tg)
    assert str(got.value) == str(want.value)


def _opt(m):
    return m.optim.SGD([m.zeros(1, requires_grad=True)], lr=0.1)


def test_both_avg_fns_is_an_error_and_names_are_torchs(torch_mod):
    net = tg.nn.Linear(2, 2)
    f = swa_utils.get_swa_avg_fn()
    with pytest.raises(AssertionError, match="Only one of avg_fn and multi_avg_fn"):
        swa_utils.AveragedModel(net, avg_fn=f, multi_avg_fn=swa_utils.get_swa_multi_avg_fn())
    public = [n for n in torch_mod.optim.swa_utils.__all__]
    assert [n for n in public if not hasattr(swa_utils, n)] == []
    assert set(public) <= set(dir(swa_utils))
    from tapegrad.optim.swa_utils import AveragedModel  # noqa: F401  (module __getattr__)

    with pytest.raises(AttributeError):
        swa_utils.nothing_here  # noqa: B018


def test_averaged_model_does_not_touch_the_source_or_the_graph():
    net = tg.nn.Linear(2, 2)
    ema = swa_utils.AveragedModel(net, multi_avg_fn=swa_utils.get_ema_multi_avg_fn(0.5))
    before = net.weight.detach().clone()
    ema.update_parameters(net)
    with tg.no_grad():
        net.weight.add_(1.0)
    ema.update_parameters(net)
    assert tg.equal(net.weight, before + 1)
    np.testing.assert_allclose(
        ema.module.weight.detach().numpy(), (before + 0.5).numpy(), rtol=1e-6
    )
    assert ema.module.weight.grad_fn is None and ema.module.weight.requires_grad
