"""tg.optim: trajectories equal to torch.optim, param groups, state dicts, in-place updates."""

import numpy as np
import pytest

import tapegrad as tg

RNG = np.random.default_rng(7)
X = RNG.standard_normal((8, 4)).astype(np.float32)
Y = RNG.standard_normal((8, 3)).astype(np.float32)
W0 = (RNG.standard_normal((4, 3)) * 0.5).astype(np.float32)
B0 = (RNG.standard_normal(3) * 0.1).astype(np.float32)

CASES = [
    ("SGD", dict(lr=0.1)),
    ("SGD", dict(lr=0.1, momentum=0.9)),
    ("SGD", dict(lr=0.1, momentum=0.9, nesterov=True)),
    ("SGD", dict(lr=0.1, momentum=0.9, dampening=0.5)),
    ("SGD", dict(lr=0.1, weight_decay=0.1)),
    ("SGD", dict(lr=0.05, momentum=0.5, nesterov=True, weight_decay=0.05)),
    ("SGD", dict(lr=0.1, maximize=True)),
    ("SGD", dict(lr=0.1, momentum=0.9, dampening=0.1, weight_decay=0.1, maximize=True)),
    ("Adam", dict(lr=0.05)),
    ("Adam", dict(lr=0.05, amsgrad=True)),
    ("Adam", dict(lr=0.05, weight_decay=0.1)),
    ("Adam", dict(lr=0.05, weight_decay=0.1, amsgrad=True)),
    ("Adam", dict(lr=0.05, betas=(0.8, 0.9), eps=1e-6, maximize=True)),
    ("AdamW", dict(lr=0.05)),
    ("AdamW", dict(lr=0.05, weight_decay=0.1)),
    ("AdamW", dict(lr=0.05, weight_decay=0.1, amsgrad=True)),
    ("AdamW", dict(lr=0.05, weight_decay=0.1, maximize=True)),
    ("RMSprop", dict(lr=0.01)),
    ("RMSprop", dict(lr=0.01, centered=True)),
    ("RMSprop", dict(lr=0.01, momentum=0.9)),
    ("RMSprop", dict(lr=0.01, momentum=0.9, centered=True, weight_decay=0.1)),
    ("RMSprop", dict(lr=0.01, alpha=0.9, eps=1e-6, weight_decay=0.1, maximize=True)),
]


def _loss(m, w, b, x, y):
    # Written once against the shared API: m is tapegrad or torch.
    return ((m.tanh(x @ w + b) - y) ** 2).mean()


def _params(m, dtype=None):
    w = m.tensor(W0, dtype=dtype, requires_grad=True)
    b = m.tensor(B0, dtype=dtype, requires_grad=True)
    return w, b


def _run(m, make_opt, params, steps, dtype=None):
    """Train ``params`` for ``steps`` steps; returns the parameter values after each step."""
    x, y = m.tensor(X, dtype=dtype), m.tensor(Y, dtype=dtype)
    opt = make_opt(params)
    history = []
    for _ in range(steps):
        opt.zero_grad()
        _loss(m, *params, x, y).backward()
        opt.step()
        history.append([p.detach().numpy().copy() for p in params])
    return opt, history


def _assert_history_close(ours, theirs, rtol=1e-5, atol=1e-6):
    assert len(ours) == len(theirs)
    for step, (a, b) in enumerate(zip(ours, theirs, strict=True)):
        for i, (pa, pb) in enumerate(zip(a, b, strict=True)):
            np.testing.assert_allclose(
                pa, pb, rtol=rtol, atol=atol, err_msg=f"step {step + 1}, parameter {i}"
            )


@pytest.mark.parametrize(("name", "kwargs"), CASES, ids=lambda v: str(v))
def test_trajectory_matches_torch(torch_mod, name, kwargs):
    ours_opt, ours = _run(tg, lambda ps: getattr(tg.optim, name)(ps, **kwargs), _params(tg), 10)
    theirs_opt, theirs = _run(
        torch_mod, lambda ps: getattr(torch_mod.optim, name)(ps, **kwargs), _params(torch_mod), 10
    )
    _assert_history_close(ours, theirs)
    # Parameters moved, so the comparison is not vacuous.
    assert not np.allclose(ours[-1][0], W0)
    # The state holds the same entries with the same values as torch's.
    ours_state = ours_opt.state_dict()["state"]
    theirs_state = theirs_opt.state_dict()["state"]
    assert ours_state.keys() == theirs_state.keys()
    for idx, entry in theirs_state.items():
        assert ours_state[idx].keys() == entry.keys()
        for key, value in entry.items():
            # float32 state: within 1e-5 of the buffer's largest entry. On an AVX-512 Xeon
            # torch's addcmul_ fuses its multiply-add (bitwise a - b*c rounded once; NumPy
            # rounds b*c first), so a small entry of a centered RMSprop's momentum differed
            # by 2.4e-6 (3.5e-5 of itself) while the parameters agreed to 1e-5.
            want = value.numpy()
            atol = max(1e-6, 1e-5 * float(np.abs(want).max(initial=0.0)))
            np.testing.assert_allclose(
                ours_state[idx][key].numpy(), want, rtol=1e-5, atol=atol, err_msg=key
            )


@pytest.mark.parametrize("name", ["SGD", "Adam", "RMSprop"])
def test_float64_parameters_stay_float64_and_match_torch(torch_mod, name):
    kwargs = {"lr": 0.05, "momentum": 0.9} if name != "Adam" else {"lr": 0.05, "amsgrad": True}
    ours_opt, ours = _run(
        tg, lambda ps: getattr(tg.optim, name)(ps, **kwargs), _params(tg, tg.float64), 10,
        dtype=tg.float64,
    )  # fmt: skip
    _, theirs = _run(
        torch_mod, lambda ps: getattr(torch_mod.optim, name)(ps, **kwargs),
        _params(torch_mod, torch_mod.float64), 10, dtype=torch_mod.float64,
    )  # fmt: skip
    _assert_history_close(ours, theirs, rtol=1e-12, atol=1e-12)
    assert all(p.dtype == np.float64 for p in ours[-1])


@pytest.mark.parametrize(("name", "kwargs"), CASES[::3], ids=lambda v: str(v))
def test_float32_stays_float32(name, kwargs):
    params = _params(tg)
    opt, _ = _run(tg, lambda ps: getattr(tg.optim, name)(ps, **kwargs), params, 2)
    assert all(p.dtype == np.float32 for p in params)
    for state in opt.state.values():
        for key, value in state.items():
            if value is not None and key != "step":
                assert value.dtype == np.float32, key


def test_param_groups_with_different_lr_match_torch(torch_mod):
    def groups(opt_module, params):
        w, b = params
        return opt_module.SGD(
            [{"params": [w]}, {"params": [b], "lr": 0.01, "momentum": 0.5}], lr=0.1, momentum=0.9
        )

    ours_opt, ours = _run(tg, lambda ps: groups(tg.optim, ps), _params(tg), 10)
    _, theirs = _run(torch_mod, lambda ps: groups(torch_mod.optim, ps), _params(torch_mod), 10)
    _assert_history_close(ours, theirs)
    assert [g["lr"] for g in ours_opt.param_groups] == [0.1, 0.01]
    assert [g["momentum"] for g in ours_opt.param_groups] == [0.9, 0.5]
    assert ours_opt.param_groups[1]["nesterov"] is False  # default filled in


def test_add_param_group_matches_torch(torch_mod):
    def make(opt_module, params):
        w, b = params
        opt = opt_module.Adam([w], lr=0.05)
        opt.add_param_group({"params": b, "lr": 0.2})
        return opt

    _, ours = _run(tg, lambda ps: make(tg.optim, ps), _params(tg), 5)
    _, theirs = _run(torch_mod, lambda ps: make(torch_mod.optim, ps), _params(torch_mod), 5)
    _assert_history_close(ours, theirs)


@pytest.mark.parametrize(("name", "kwargs"), CASES[1::4], ids=lambda v: str(v))
def test_state_dict_round_trip_continues_identically(tmp_path, name, kwargs):
    def make(ps):
        return getattr(tg.optim, name)(ps, **kwargs)

    _, straight = _run(tg, make, _params(tg), 8)

    first_params = _params(tg)
    first_opt, _ = _run(tg, make, first_params, 4)
    tg.save({"optim": first_opt.state_dict(), "params": list(first_params)}, tmp_path / "ckpt")
    del first_opt

    loaded = tg.load(tmp_path / "ckpt")
    params = [tg.tensor(p.numpy(), requires_grad=True) for p in loaded["params"]]
    opt = make(params)
    opt.load_state_dict(loaded["optim"])
    x, y = tg.tensor(X), tg.tensor(Y)
    for step in range(4, 8):
        opt.zero_grad()
        _loss(tg, *params, x, y).backward()
        opt.step()
        for p, expected in zip(params, straight[step], strict=True):
            np.testing.assert_array_equal(p.detach().numpy(), expected)


def test_state_dict_layout_is_torch_like():
    w, b = _params(tg)
    opt = tg.optim.SGD([{"params": [w]}, {"params": [b], "lr": 0.5}], lr=0.1, momentum=0.9)
    (w.sum() + b.sum()).backward()
    opt.step()
    sd = opt.state_dict()
    assert [g["params"] for g in sd["param_groups"]] == [[0], [1]]
    assert sd["param_groups"][1]["lr"] == 0.5
    assert set(sd["state"]) == {0, 1}
    assert set(sd["state"][0]) == {"momentum_buffer"}


def test_load_state_dict_copies_and_casts():
    w = tg.tensor([1.0, 2.0], requires_grad=True)
    opt = tg.optim.Adam([w], lr=0.1)
    (w * w).sum().backward()
    opt.step()
    sd = opt.state_dict()
    w2 = tg.tensor([1.0, 2.0], dtype=tg.float64, requires_grad=True)
    opt2 = tg.optim.Adam([w2], lr=0.1)
    opt2.load_state_dict(sd)
    state = opt2.state[w2]
    assert state["exp_avg"].dtype == np.float64  # cast to the parameter's dtype
    assert state["step"].dtype == np.float32  # step keeps its own dtype
    assert state["exp_avg"]._data is not sd["state"][0]["exp_avg"]._data
    w2.grad = tg.ones(2, dtype=tg.float64)
    opt2.step()
    np.testing.assert_array_equal(sd["state"][0]["step"].numpy(), 1.0)  # source untouched


def test_load_state_dict_mismatch_raises():
    w, b = _params(tg)
    opt = tg.optim.SGD([w, b], lr=0.1)
    with pytest.raises(ValueError, match="number of parameter groups"):
        opt.load_state_dict(tg.optim.SGD([{"params": [w]}, {"params": [b]}], lr=0.1).state_dict())
    with pytest.raises(ValueError, match="doesn't match the size"):
        opt.load_state_dict(tg.optim.SGD([w], lr=0.1).state_dict())


def test_updates_are_in_place_and_bump_the_version_once():
    w, b = _params(tg)
    w_array = w._data
    opt = tg.optim.SGD([w, b], lr=0.1, momentum=0.9, weight_decay=0.1, maximize=True)
    _loss(tg, w, b, tg.tensor(X), tg.tensor(Y)).backward()
    grad_before = w.grad.numpy().copy()
    version = w._version
    opt.step()
    assert w._data is w_array
    assert w._version == version + 1
    np.testing.assert_array_equal(w.grad.numpy(), grad_before)  # the gradient is not modified
    assert w.is_leaf and w.requires_grad and w.grad_fn is None


def test_stale_graph_after_step_raises():
    w = tg.tensor([1.0, 2.0], requires_grad=True)
    loss = (w * w).sum()
    loss.backward(retain_graph=True)
    tg.optim.SGD([w], lr=0.1).step()
    with pytest.raises(RuntimeError):
        loss.backward()


def test_parameters_without_grad_are_skipped():
    w, b = _params(tg)
    opt = tg.optim.Adam([w, b], lr=0.1)
    (w.sum()).backward()
    opt.step()
    np.testing.assert_array_equal(b.detach().numpy(), B0)
    assert b not in opt.state and w in opt.state


def test_zero_grad():
    w = tg.tensor([1.0, 2.0], requires_grad=True)
    opt = tg.optim.SGD([w], lr=0.1)
    (w * w).sum().backward()
    grad_array = w.grad._data
    opt.zero_grad(set_to_none=False)
    assert w.grad._data is grad_array
    np.testing.assert_array_equal(w.grad.numpy(), [0.0, 0.0])
    opt.zero_grad()
    assert w.grad is None


def test_step_with_closure_runs_with_grad_enabled():
    w = tg.tensor([1.0, 2.0], requires_grad=True)
    opt = tg.optim.SGD([w], lr=0.1)

    def closure():
        opt.zero_grad()
        loss = (w * w).sum()
        loss.backward()
        return loss

    with tg.no_grad():
        loss = opt.step(closure)
    assert loss.item() == 5.0
    np.testing.assert_allclose(w.detach().numpy(), [0.8, 1.6])


def test_named_parameters_are_accepted():
    w, b = _params(tg)
    opt = tg.optim.SGD([("w", w), ("b", b)], lr=0.1)
    assert opt.param_groups[0]["param_names"] == ["w", "b"]
    assert opt.param_groups[0]["params"][0] is w


def test_invalid_arguments_raise():
    w = tg.tensor([1.0], requires_grad=True)
    with pytest.raises(ValueError, match="empty parameter list"):
        tg.optim.SGD([], lr=0.1)
    with pytest.raises(TypeError, match="iterable of Tensors"):
        tg.optim.SGD(w, lr=0.1)
    with pytest.raises(ValueError, match="Invalid learning rate"):
        tg.optim.Adam([w], lr=-1.0)
    with pytest.raises(ValueError, match="Nesterov"):
        tg.optim.SGD([w], lr=0.1, nesterov=True)
    with pytest.raises(ValueError, match="beta parameter at index 1"):
        tg.optim.AdamW([w], betas=(0.9, 1.0))
    with pytest.raises(ValueError, match="more than one parameter group"):
        tg.optim.SGD([{"params": [w]}, {"params": [w]}], lr=0.1)
    with pytest.raises(ValueError, match="non-leaf"):
        tg.optim.SGD([w * 2], lr=0.1)
    with pytest.raises(TypeError, match="sets"):
        tg.optim.SGD([{"params": {w}}], lr=0.1)
    with pytest.raises(TypeError, match="only optimize Tensors"):
        tg.optim.SGD([np.zeros(2)], lr=0.1)
