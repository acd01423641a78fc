"""Adafactor and Muon (torch 2.13) against torch: the same parameters and gradients give the
same parameters after 5 steps (float64 and float32), state-dict layout, and the errors."""

import numpy as np
import pytest

import tapegrad as tg

RNG = np.random.default_rng(23)
X = RNG.standard_normal((8, 4))
Y = RNG.standard_normal((8, 3))
W0 = RNG.standard_normal((4, 3)) * 0.5
V0 = RNG.standard_normal((3, 3)) * 0.5
B0 = RNG.standard_normal(3) * 0.1
T0 = RNG.standard_normal((2, 4, 3)) * 0.5  # a 3-d parameter: Adafactor's batched factors


def _loss(w, v, b, t, x, y):
    h = (x @ w + b).tanh() @ v
    return ((h - y) ** 2).mean() + ((t * w).sum(0) ** 2).mean()


def _make(m, dtype, with_extra=True):
    values = (W0, V0, B0, T0) if with_extra else (W0, V0)
    return [m.tensor(v.astype(dtype), requires_grad=True) for v in values]


def _run(m, opt, params, steps, dtype):
    x, y = m.tensor(X.astype(dtype)), m.tensor(Y.astype(dtype))
    history = []
    for _ in range(steps):
        opt.zero_grad()
        if len(params) == 4:
            loss = _loss(*params, x, y)
        else:
            w, v = params
            loss = (((x @ w).tanh() @ v - y) ** 2).mean()
        loss.backward()
        opt.step()
        history.append([p.detach().numpy().copy() for p in params])
    return history


CASES = [
    ("Adafactor", {}),
    ("Adafactor", dict(lr=0.05, beta2_decay=-0.5, eps=(1e-30, 1e-3), d=1.5)),
    ("Adafactor", dict(lr=0.05, weight_decay=0.1, maximize=True)),
    ("Adafactor", dict(lr=0.5, d=1.0, eps=(None, 0.0), foreach=False)),
    ("Muon", {}),
    ("Muon", dict(lr=0.02, momentum=0.9, nesterov=False, weight_decay=0.0)),
    ("Muon", dict(lr=0.02, adjust_lr_fn="match_rms_adamw", ns_steps=3)),
    ("Muon", dict(lr=0.02, adjust_lr_fn="original", ns_coefficients=(2.0, -1.5, 0.5), eps=1e-5)),
]


@pytest.mark.parametrize(("name", "kwargs"), CASES, ids=lambda v: str(v))
@pytest.mark.parametrize("dtype", ["float64", "float32"])
def test_five_steps_match_torch(torch_mod, name, kwargs, dtype):
    extra = name != "Muon"
    ps, ts = _make(tg, dtype, extra), _make(torch_mod, dtype, extra)
    ours = _run(tg, getattr(tg.optim, name)(ps, **kwargs), ps, 5, dtype)
    theirs = _run(torch_mod, getattr(torch_mod.optim, name)(ts, **kwargs), ts, 5, dtype)
    rtol = 1e-6 if dtype == "float64" else 1e-5
    for step, (a, b) in enumerate(zip(ours, theirs, strict=True)):
        for i, (pa, pb) in enumerate(zip(a, b, strict=True)):
            assert pa.dtype == pb.dtype
            np.testing.assert_allclose(pa, pb, rtol=rtol, atol=rtol * 1e-2,
                                       err_msg=f"step {step + 1}, parameter {i}")  # fmt: skip
    assert not np.allclose(ours[-1][0], W0), "parameters did not move"


@pytest.mark.parametrize(("name", "kwargs"), [CASES[0], CASES[4]], ids=["Adafactor", "Muon"])
def test_state_dict_layout_as_torch(torch_mod, name, kwargs):
    extra = name != "Muon"
    ps, ts = _make(tg, "float32", extra), _make(torch_mod, "float32", extra)
    ours, theirs = (
        getattr(tg.optim, name)(ps, **kwargs),
        getattr(torch_mod.optim, name)(ts, **kwargs),
    )
    _run(tg, ours, ps, 2, "float32")
    _run(torch_mod, theirs, ts, 2, "float32")
    osd, tsd = ours.state_dict(), theirs.state_dict()
    assert osd["param_groups"] == tsd["param_groups"]
    assert sorted(osd["state"]) == sorted(tsd["state"])
    for k, s in tsd["state"].items():
        assert sorted(osd["state"][k]) == sorted(s)
        for n, v in s.items():
            o = osd["state"][k][n]
            assert tuple(o.shape) == tuple(v.shape), n
            assert str(o.dtype).split(".")[-1] == str(v.dtype).split(".")[-1], n
            np.testing.assert_allclose(o.numpy(), v.numpy(), rtol=1e-5, atol=1e-7, err_msg=n)
    # loading torch's state dict continues torch's trajectory
    fresh = [tg.tensor(t.detach().numpy().copy(), requires_grad=True) for t in ts]
    loaded = getattr(tg.optim, name)(fresh, **kwargs)
    loaded.load_state_dict(
        {
            "state": {
                k: {n: tg.tensor(v.numpy().copy()) for n, v in s.items()}
                for k, s in tsd["state"].items()
            },  # fmt: skip
            "param_groups": [dict(g) for g in tsd["param_groups"]],
        }
    )
    a = _run(tg, loaded, fresh, 2, "float32")
    b = _run(torch_mod, theirs, ts, 2, "float32")
    for pa, pb in zip(a[-1], b[-1], strict=True):
        np.testing.assert_allclose(pa, pb, rtol=1e-5, atol=1e-7)


ERRORS = [
    ("Adafactor", dict(lr=-1.0)),
    ("Adafactor", dict(beta2_decay=0.5)),
    ("Adafactor", dict(eps=(-1.0, 1e-3))),
    ("Adafactor", dict(eps=(None, -1.0))),
    ("Adafactor", dict(d=0.5)),
    ("Adafactor", dict(weight_decay=-0.1)),
    ("Muon", dict(lr=-1.0)),
    ("Muon", dict(momentum=-0.1)),
    ("Muon", dict(weight_decay=-0.1)),
    ("Muon", dict(adjust_lr_fn="other")),
]


@pytest.mark.parametrize(("name", "kwargs"), ERRORS, ids=lambda v: str(v))
def test_bad_options_raise_as_torch(torch_mod, name, kwargs):
    with pytest.raises(ValueError) as want:
        getattr(torch_mod.optim, name)([torch_mod.zeros(2, 2, requires_grad=True)], **kwargs)
    with pytest.raises(ValueError) as got:
        getattr(tg.optim, name)([tg.zeros(2, 2, requires_grad=True)], **kwargs)
    assert str(got.value) == str(want.value)


def test_muon_refuses_non_matrices_and_complex_as_torch(torch_mod):
    for shape in [(3,), (2, 3, 4)]:
        with pytest.raises(ValueError) as want:
            torch_mod.optim.Muon([torch_mod.zeros(*shape, requires_grad=True)])
        with pytest.raises(ValueError) as got:
            tg.optim.Muon([tg.zeros(*shape, requires_grad=True)])
        assert str(got.value).replace("tapegrad.", "torch.") == str(want.value)
    for name, shape in [("Muon", (2, 2)), ("Adafactor", (2,))]:
        msgs = []
        for m in (torch_mod, tg):
            p = m.zeros(*shape, dtype=m.complex64, requires_grad=True)
            p.grad = m.ones(*shape, dtype=m.complex64)
            with pytest.raises(RuntimeError) as err:
                getattr(m.optim, name)([p]).step()
            msgs.append(str(err.value))
        assert msgs[0] == msgs[1]
