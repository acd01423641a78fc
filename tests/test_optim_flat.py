"""Note [Flat optimizer state]: the whole-group path of Adam/AdamW (and SGD) gives bitwise
the per-parameter loop's results (``foreach=False``), keeps torch's per-parameter state,
and hands over to the loop (and back) where it does not apply."""

import numpy as np
import pytest

import tapegrad as tg

RNG = np.random.default_rng(3)
SHAPES = [(5, 4), (4,), (3, 5), (1,), (2, 3, 2)]
INIT = [RNG.standard_normal(s).astype(np.float32) for s in SHAPES]
TARGET = [RNG.standard_normal(s).astype(np.float32) for s in SHAPES]

CASES = [
    ("Adam", dict(lr=0.05)),
    ("Adam", dict(lr=0.05, weight_decay=0.1)),
    ("Adam", dict(lr=0.05, weight_decay=0.1, amsgrad=True, maximize=True)),
    ("Adam", dict(lr=0.05, betas=(0.8, 0.9), eps=1e-6, maximize=True)),
    ("AdamW", dict(lr=0.05, weight_decay=0.1)),
    ("AdamW", dict(lr=0.05, weight_decay=0.1, amsgrad=True)),
    ("AdamW", dict(lr=0.05, maximize=True)),
    ("SGD", dict(lr=0.01)),
    ("SGD", dict(lr=0.01, momentum=0.9)),
    ("SGD", dict(lr=0.01, momentum=0.9, nesterov=True, weight_decay=0.05)),
    ("SGD", dict(lr=0.01, momentum=0.9, dampening=0.3, maximize=True)),
]


def _params(dtype=np.float32):
    return [tg.tensor(a.astype(dtype), requires_grad=True) for a in INIT]


def _loss(params, skip=()):
    total = 0
    for i, (p, t) in enumerate(zip(params, TARGET, strict=True)):
        if i not in skip:
            total = total + ((p * p.abs() - tg.tensor(t, dtype=p.dtype)) ** 2).sum()
    return total


def _train(opt, params, steps, skip_at=None):
    for k in range(steps):
        opt.zero_grad()
        _loss(params, skip=(1,) if k == skip_at else ()).backward()
        opt.step()
    return [p.detach().numpy().copy() for p in params]


def _make(name, params, kwargs, foreach=None):
    groups = [{"params": params[:3]}, {"params": params[3:], "lr": 0.02}]
    return getattr(tg.optim, name)(groups, foreach=foreach, **kwargs)


def _assert_same_state(a, b):
    sa, sb = a.state_dict()["state"], b.state_dict()["state"]
    assert sa.keys() == sb.keys()
    for i in sa:
        assert list(sa[i]) == list(sb[i])  # same entries, in the same (torch's) order
        for key in sa[i]:
            if sa[i][key] is not None:
                np.testing.assert_array_equal(sa[i][key].numpy(), sb[i][key].numpy(), key)


@pytest.mark.parametrize(("name", "kwargs"), CASES, ids=lambda v: str(v))
def test_flat_path_is_bitwise_the_loop(name, kwargs):
    pf, pl = _params(), _params()
    flat, loop = _make(name, pf, kwargs), _make(name, pl, kwargs, foreach=False)
    for a, b in zip(_train(flat, pf, 6), _train(loop, pl, 6), strict=True):
        np.testing.assert_array_equal(a, b)
    assert flat._flat and not loop._flat  # the flat path ran
    _assert_same_state(flat, loop)
    state = [flat.state[p] for p in pf[:3]]
    key = "exp_avg" if "Adam" in name else "momentum_buffer"
    if key in state[0]:  # one buffer for the group, seen through per-parameter views
        assert all(np.shares_memory(s[key]._data, flat._flat[0][key]) for s in state)


@pytest.mark.parametrize(("name", "kwargs"), [CASES[2], CASES[4], CASES[9]], ids=str)
def test_a_parameter_without_grad_falls_back_to_the_loop(name, kwargs):
    pf, pl = _params(), _params()
    flat, loop = _make(name, pf, kwargs), _make(name, pl, kwargs, foreach=False)
    ours, theirs = _train(flat, pf, 5, skip_at=2), _train(loop, pl, 5, skip_at=2)
    for a, b in zip(ours, theirs, strict=True):
        np.testing.assert_array_equal(a, b)
    _assert_same_state(flat, loop)
    if "Adam" in name:  # steps now differ within group 0: it stays on the loop
        assert 0 not in flat._flat and 1 in flat._flat


@pytest.mark.parametrize(("name", "kwargs"), [CASES[1], CASES[5], CASES[8]], ids=str)
def test_loaded_state_is_gathered_and_continues_identically(name, kwargs):
    ps = _params()
    opt = _make(name, ps, kwargs)
    straight = _train(opt, ps, 7)

    first = _params()
    first_opt = _make(name, first, kwargs)
    _train(first_opt, first, 4)
    params = [tg.tensor(p.detach().numpy(), requires_grad=True) for p in first]
    resumed = _make(name, params, kwargs)
    resumed.load_state_dict(first_opt.state_dict())
    out = _train(resumed, params, 3)
    for a, b in zip(out, straight, strict=True):
        np.testing.assert_array_equal(a, b)
    assert resumed._flat  # the loaded state moved into flat buffers
    # loading copied: the first optimizer's state is not the resumed one's
    assert not np.shares_memory(
        first_opt.state[first[0]][list(first_opt.state[first[0]])[-1]]._data,
        resumed.state[params[0]][list(resumed.state[params[0]])[-1]]._data,
    )


def test_float64_and_mixed_dtypes():
    p64 = _params(np.float64)
    flat = tg.optim.AdamW(p64, lr=0.1)
    _train(flat, p64, 3)
    assert flat._flat[0]["exp_avg"].dtype == np.float64
    mixed = _params()
    mixed[1] = tg.tensor(INIT[1].astype(np.float64), requires_grad=True)
    opt = tg.optim.Adam(mixed, lr=0.1)
    _train(opt, mixed, 2)  # mixed dtypes: the loop, each state in its parameter's dtype
    assert not opt._flat
    assert opt.state[mixed[1]]["exp_avg"].dtype == np.float64


@pytest.mark.parametrize("name", ["AdamW", "SGD"])
def test_cached_step_after_load_state_dict_uses_the_loaded_state(name):
    kwargs = dict(lr=0.05, weight_decay=0.1) if name == "AdamW" else dict(lr=0.003, momentum=0.9)

    def step_of(params, opt):
        def step():
            opt.zero_grad()
            loss = _loss(params)
            loss.backward()
            opt.step()
            return loss

        return step

    pe, pc = _params(), _params()
    oe, oc = _make(name, pe, kwargs), _make(name, pc, kwargs)
    eager, cached = step_of(pe, oe), tg.jit.cache(step_of(pc, oc))
    for _ in range(5):
        eager(), cached()
    assert cached.cache_info().hits >= 2
    other = _params()
    other_opt = _make(name, other, dict(kwargs, lr=2 * kwargs["lr"]))
    _train(other_opt, other, 3)
    sd = other_opt.state_dict()
    for g in sd["param_groups"]:
        g["lr"] = kwargs["lr"]
    oe.load_state_dict(sd)
    oc.load_state_dict(sd)
    for _ in range(3):
        eager(), cached()
    for a, b in zip(pe, pc, strict=True):
        np.testing.assert_allclose(b.detach().numpy(), a.detach().numpy(), rtol=1e-6, atol=1e-7)


@pytest.mark.parametrize(
    ("name", "key", "before", "after"),
    [
        ("SGD", "momentum", 0.0, 0.9),
        ("SGD", "momentum", 0.9, 0.0),
        ("AdamW", "amsgrad", True, False),
    ],
)
def test_switching_a_state_entry_on_or_off_matches_the_loop(name, key, before, after):
    pf, pl = _params(), _params()
    kwargs = {"lr": 0.01, key: before}
    flat, loop = _make(name, pf, kwargs), _make(name, pl, kwargs, foreach=False)
    _train(flat, pf, 3), _train(loop, pl, 3)
    for opt in (flat, loop):
        for g in opt.param_groups:
            g[key] = after
    for a, b in zip(_train(flat, pf, 3), _train(loop, pl, 3), strict=True):
        np.testing.assert_array_equal(a, b)
    _assert_same_state(flat, loop)
