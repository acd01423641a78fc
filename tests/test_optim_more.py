"""The optimizers of issue 11 against torch 2.13: parameter trajectories (float32, 8 steps),
every option, param groups, state-dict layout and round trips, and L-BFGS step by step."""

import numpy as np
import pytest

import tapegrad as tg

RNG = np.random.default_rng(17)
X = RNG.standard_normal((8, 4)).astype(np.float32)
Y = RNG.standard_normal((8, 3)).astype(np.float32)
W0 = (RNG.standard_normal((4, 3)) * 0.5).astype(np.float32)
B0 = (RNG.standard_normal(3) * 0.1).astype(np.float32)

CASES = [
    ("Adagrad", dict(lr=0.1)),
    ("Adagrad", dict(lr=0.1, lr_decay=0.1, weight_decay=0.05, initial_accumulator_value=0.2)),
    ("Adagrad", dict(lr=0.1, eps=1e-6, maximize=True, foreach=False)),
    ("Adadelta", dict()),
    ("Adadelta", dict(lr=0.5, rho=0.8, eps=1e-5, weight_decay=0.1)),
    ("Adadelta", dict(lr=0.5, maximize=True, capturable=False, foreach=False)),
    ("Adamax", dict(lr=0.05)),
    ("Adamax", dict(lr=0.05, betas=(0.8, 0.95), eps=1e-6, weight_decay=0.1)),
    ("Adamax", dict(lr=0.05, maximize=True)),
    ("NAdam", dict(lr=0.05)),
    ("NAdam", dict(lr=0.05, momentum_decay=0.01, weight_decay=0.1)),
    ("NAdam", dict(lr=0.05, weight_decay=0.1, decoupled_weight_decay=True)),
    ("NAdam", dict(lr=0.05, betas=(0.8, 0.9), maximize=True)),
    ("RAdam", dict(lr=0.05)),
    ("RAdam", dict(lr=0.05, betas=(0.5, 0.8))),  # rho_t > 5 from step 7 on: both branches
    ("RAdam", dict(lr=0.05, betas=(0.5, 0.8), weight_decay=0.1, decoupled_weight_decay=True)),
    ("RAdam", dict(lr=0.05, betas=(0.5, 0.8), weight_decay=0.1, maximize=True)),
    ("ASGD", dict(lr=0.05)),
    ("ASGD", dict(lr=0.05, lambd=0.01, alpha=0.5, t0=3, weight_decay=0.1)),
    ("ASGD", dict(lr=0.05, t0=2, maximize=True)),
    ("Rprop", dict(lr=0.01)),
    ("Rprop", dict(lr=0.05, etas=(0.3, 1.5), step_sizes=(1e-3, 0.08))),
    ("Rprop", dict(lr=0.01, maximize=True)),
    # the existing optimizers with every option torch has (compat flags accepted)
    ("SGD", dict(lr=0.1, momentum=0.9, dampening=0.2, weight_decay=0.1, foreach=False)),
    ("SGD", dict(lr=0.1, momentum=0.9, nesterov=True, maximize=True, fused=None)),
    ("Adam", dict(lr=0.05, amsgrad=True, weight_decay=0.1, maximize=True, foreach=False)),
    ("Adam", dict(lr=0.05, decoupled_weight_decay=True, weight_decay=0.1, capturable=False)),
    ("AdamW", dict(lr=0.05, amsgrad=True, maximize=True, foreach=False, fused=None)),
    ("RMSprop", dict(lr=0.01, momentum=0.5, centered=True, maximize=True, foreach=False)),
]


def _loss(m, w, b, x, y):
    return ((m.tanh(x @ w + b) - y) ** 2).mean()


def _run(m, opt, params, steps):
    x, y = m.tensor(X), m.tensor(Y)
    history = []
    for _ in range(steps):
        opt.zero_grad()
        _loss(m, *params, x, y).backward()
        opt.step()
        history.append([p.detach().numpy().copy() for p in params])
    return history


def _params(m):
    return [m.tensor(W0, requires_grad=True), m.tensor(B0, requires_grad=True)]


def _close(ours, theirs, rtol=2e-5, atol=2e-6):
    for step, (a, b) in enumerate(zip(ours, theirs, strict=True)):
        for i, (pa, pb) in enumerate(zip(a, b, strict=True)):
            assert pa.dtype == pb.dtype
            np.testing.assert_allclose(
                pa, pb, rtol=rtol, atol=atol, err_msg=f"step {step + 1}, parameter {i}"
            )


@pytest.mark.parametrize(("name", "kwargs"), CASES, ids=lambda v: str(v))
def test_trajectory_matches_torch(torch_mod, name, kwargs):
    ps, ts = _params(tg), _params(torch_mod)
    ours = _run(tg, getattr(tg.optim, name)(ps, **kwargs), ps, 8)
    theirs = _run(torch_mod, getattr(torch_mod.optim, name)(ts, **kwargs), ts, 8)
    _close(ours, theirs)
    assert not np.allclose(ours[-1][0], W0), "parameters did not move"


def _torch_state_to_tg(sd):
    def conv(v):
        if hasattr(v, "detach"):
            return tg.tensor(v.detach().numpy().copy())
        return v

    return {
        "state": {k: {n: conv(v) for n, v in s.items()} for k, s in sd["state"].items()},
        "param_groups": [dict(g) for g in sd["param_groups"]],
    }


STATE_CASES = [c for c in CASES if c[0] not in ("SGD",)] + [("SGD", dict(lr=0.1, momentum=0.9))]


@pytest.mark.parametrize(("name", "kwargs"), STATE_CASES, ids=lambda v: str(v))
def test_state_dict_layout_and_round_trip(torch_mod, name, kwargs):
    """Same keys and values as torch's state dict; loading torch's continues its trajectory."""
    ps, ts = _params(tg), _params(torch_mod)
    ours_opt = getattr(tg.optim, name)(ps, **kwargs)
    theirs_opt = getattr(torch_mod.optim, name)(ts, **kwargs)
    _run(tg, ours_opt, ps, 3)
    _run(torch_mod, theirs_opt, ts, 3)
    ours_sd, theirs_sd = ours_opt.state_dict(), theirs_opt.state_dict()
    assert ours_sd["param_groups"] == theirs_sd["param_groups"]
    assert sorted(ours_sd["state"]) == sorted(theirs_sd["state"])
    for k, s in theirs_sd["state"].items():
        assert sorted(ours_sd["state"][k]) == sorted(s)
        for n, v in s.items():
            ov = ours_sd["state"][k][n]
            np.testing.assert_allclose(np.asarray(ov.numpy()), v.numpy(), rtol=1e-4, atol=1e-6)
            assert str(ov.dtype).split(".")[-1] == str(v.dtype).split(".")[-1], n
    # a fresh tapegrad optimizer loaded from torch's state dict follows torch from here
    fresh = [tg.tensor(t.detach().numpy().copy(), requires_grad=True) for t in ts]
    loaded = getattr(tg.optim, name)(fresh, **kwargs)
    loaded.load_state_dict(_torch_state_to_tg(theirs_sd))
    _close(_run(tg, loaded, fresh, 3), _run(torch_mod, theirs_opt, ts, 3))
    # and tapegrad's own dict survives tg.save / tg.load style copying
    again = getattr(tg.optim, name)(_params(tg), **kwargs)
    again.load_state_dict(ours_opt.state_dict())
    assert again.state_dict()["param_groups"] == ours_sd["param_groups"]


def test_param_groups_with_per_group_options(torch_mod):
    def make(m):
        w, b = _params(m)
        opt = m.optim.NAdam([{"params": [w], "lr": 0.1, "weight_decay": 0.1}], lr=0.01)
        opt.add_param_group({"params": b, "betas": (0.5, 0.8)})
        return opt, [w, b]

    (ours_opt, ps), (theirs_opt, ts) = make(tg), make(torch_mod)
    _close(_run(tg, ours_opt, ps, 5), _run(torch_mod, theirs_opt, ts, 5))
    assert ours_opt.state_dict()["param_groups"] == theirs_opt.state_dict()["param_groups"]


def test_adagrad_add_param_group_after_construction(torch_mod):
    def make(m):
        w, b = _params(m)
        opt = m.optim.Adagrad([w], lr=0.1, initial_accumulator_value=0.1)
        opt.add_param_group({"params": [b], "lr": 0.2})
        return opt, [w, b]

    (ours_opt, ps), (theirs_opt, ts) = make(tg), make(torch_mod)
    _close(_run(tg, ours_opt, ps, 4), _run(torch_mod, theirs_opt, ts, 4))


def test_zero_grad_set_to_none_false_keeps_zeros():
    w = tg.tensor([1.0, 2.0], requires_grad=True)
    opt = tg.optim.Adagrad([w])
    (w * w).sum().backward()
    opt.zero_grad(set_to_none=False)
    assert w.grad is not None and w.grad.numpy().tolist() == [0.0, 0.0]
    opt.zero_grad()
    assert w.grad is None


def test_bad_hyperparameters_and_differentiable():
    w = [tg.zeros(2, requires_grad=True)]
    with pytest.raises(ValueError, match="Invalid rho"):
        tg.optim.Adadelta(w, rho=1.5)
    with pytest.raises(ValueError, match="Invalid beta"):
        tg.optim.NAdam(w, betas=(1.0, 0.9))
    with pytest.raises(ValueError, match="Invalid eta"):
        tg.optim.Rprop(w, etas=(1.5, 1.2))
    with pytest.raises(ValueError, match="Invalid learning rate"):
        tg.optim.LBFGS(w, lr=-1)
    with pytest.raises(NotImplementedError, match="differentiable"):
        tg.optim.Adam(w, differentiable=True)
    with pytest.raises(ValueError, match="per-parameter options"):
        tg.optim.LBFGS([{"params": w}, {"params": [tg.zeros(1, requires_grad=True)]}])


# -- L-BFGS ------------------------------------------------------------------------------------

H = 8
MLP = np.random.default_rng(5)
W1 = MLP.standard_normal((1, H)) * 0.8
B1 = MLP.standard_normal(H) * 0.3
W2 = MLP.standard_normal((H, 1)) * 0.5
XS = np.linspace(0.0, np.pi, 12).reshape(-1, 1)


def _pinn(m, history_size=100, max_iter=5, line_search_fn="strong_wolfe"):
    """Fit u'' = -sin(x), u(0) = u(pi) = 0 (solution sin x) with second derivatives taken
    by autograd.grad(create_graph=True) inside the closure; returns the loss per step."""
    params = [m.tensor(a, dtype=m.float64, requires_grad=True) for a in (W1, B1, W2)]
    w1, b1, w2 = params
    opt = m.optim.LBFGS(
        params, lr=1, max_iter=max_iter, history_size=history_size, line_search_fn=line_search_fn
    )
    x = m.tensor(XS, dtype=m.float64, requires_grad=True)
    ends = m.tensor([[0.0], [np.pi]], dtype=m.float64)

    def u(z):
        return m.tanh(z @ w1 + b1) @ w2

    def closure():
        opt.zero_grad()
        y = u(x)
        (du,) = m.autograd.grad(y.sum(), x, create_graph=True)
        (d2u,) = m.autograd.grad(du.sum(), x, create_graph=True)
        loss = ((d2u + m.sin(x)) ** 2).mean() + (u(ends) ** 2).mean()
        loss.backward()
        return loss

    losses = []
    for _ in range(10):
        opt.step(closure)
        losses.append(float(closure().detach()))
    return losses, opt


@pytest.mark.parametrize(
    "kwargs",
    [{}, {"history_size": 3}, {"line_search_fn": None, "max_iter": 4}],
    ids=["strong_wolfe", "short-history", "no-line-search"],
)
def test_lbfgs_pinn_matches_torch_step_by_step(torch_mod, kwargs):
    ours, opt = _pinn(tg, **kwargs)
    theirs, topt = _pinn(torch_mod, **kwargs)
    np.testing.assert_allclose(ours, theirs, rtol=1e-7, atol=1e-12)
    assert ours[-1] < 0.1 * ours[0]
    state, tstate = opt.state[opt._params[0]], next(iter(topt.state.values()))
    assert state["func_evals"] == tstate["func_evals"]
    assert state["n_iter"] == tstate["n_iter"]
    assert sorted(state) == sorted(tstate)  # torch's state layout
    assert sorted(opt.state_dict()["param_groups"][0]) == sorted(
        topt.state_dict()["param_groups"][0]
    )


def test_lbfgs_float32_quadratic(torch_mod):
    def run(m):
        x = m.tensor([3.0, -1.0, 2.0], requires_grad=True)
        a = m.tensor([1.0, 10.0, 3.0])
        opt = m.optim.LBFGS([x], lr=0.5, max_iter=4)

        def closure():
            opt.zero_grad()
            loss = (a * (x - 1.0) ** 2).sum() + (x**4).sum() * 0.01
            loss.backward()
            return loss

        return [float(opt.step(closure).detach()) for _ in range(5)], x.detach().numpy()

    (ours, xo), (theirs, xt) = run(tg), run(torch_mod)
    np.testing.assert_allclose(ours, theirs, rtol=1e-5)
    np.testing.assert_allclose(xo, xt, rtol=1e-5, atol=1e-6)


JIT_OPTIMIZERS = {
    "Adagrad": dict(lr=0.05, lr_decay=0.1),
    "Adadelta": dict(),
    "Adamax": dict(),
    "NAdam": dict(weight_decay=0.1),
    "RAdam": dict(betas=(0.5, 0.8)),  # crosses rho_t = 5 during the replays
    "ASGD": dict(t0=3),
    "Rprop": dict(),
}


@pytest.mark.parametrize("name", sorted(JIT_OPTIMIZERS))
def test_jit_cache_replays_the_new_optimizers(name):
    """A training step with each optimizer is recorded once and replayed (no eager
    fallback: step-dependent factors are array math), with eager's losses and weights."""
    from tests.test_jit_training import batches, make_mlp, train_both  # noqa: PLC0415

    def make(m):
        return getattr(tg.optim, name)(m.parameters(), **JIT_OPTIMIZERS[name])

    cached, *_ = train_both(make_mlp, make, batches(12, (5, 6), 4), None)
    assert cached.cache_info().hits == 9


@pytest.mark.parametrize("name", sorted(JIT_OPTIMIZERS) + ["LBFGS"])
def test_state_dict_survives_tg_save_and_load(tmp_path, name):
    def build():
        params = _params(tg)
        kwargs = {} if name == "LBFGS" else JIT_OPTIMIZERS[name]
        return params, getattr(tg.optim, name)(params, **kwargs)

    def advance(params, opt, steps):
        x, y = tg.tensor(X), tg.tensor(Y)

        def closure():
            opt.zero_grad()
            loss = _loss(tg, *params, x, y)
            loss.backward()
            return loss

        for _ in range(steps):
            opt.step(closure)
        return [p.detach().numpy().copy() for p in params]

    params, opt = build()
    advance(params, opt, 2)
    tg.save(opt.state_dict(), tmp_path / "opt.tg")
    params2, opt2 = build()
    for p, q in zip(params2, params, strict=True):
        p.data = q.detach().clone()
    opt2.load_state_dict(tg.load(tmp_path / "opt.tg"))
    _close([advance(params2, opt2, 2)], [advance(params, opt, 2)], rtol=1e-6, atol=1e-7)
