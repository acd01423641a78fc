"""Module features of issue 11 against torch: hooks (forward with kwargs/always_call, full
backward), containers (Sequential editing, ParameterList/Dict), lookups and dtype casts."""

import numpy as np
import pytest

import tapegrad as tg


def _linear(m):
    lin = m.nn.Linear(3, 2).double()
    w = np.arange(6.0).reshape(2, 3) / 10
    lin.load_state_dict({"weight": m.tensor(w), "bias": m.tensor([0.5, -0.5])})
    return lin


def test_full_backward_hooks_match_torch(torch_mod):
    logs = []
    for m in (tg, torch_mod):
        log = []
        lin = _linear(m)
        lin.register_full_backward_pre_hook(lambda mod, go, log=log: log.append(("pre", go)))

        def hook(mod, gi, go, log=log):
            log.append(("hook", gi, go))
            return tuple(g * 2 for g in gi)

        lin.register_full_backward_hook(hook)
        x = m.tensor(np.ones((4, 3)), requires_grad=True)
        (lin(x) ** 2).sum().backward()
        log.append(("x.grad", (x.grad,)))
        log.append(("w.grad", (lin.weight.grad,)))
        logs.append(log)
    assert [e[0] for e in logs[0]] == [e[0] for e in logs[1]] == ["pre", "hook", "x.grad", "w.grad"]
    for a, b in zip(*logs):
        for ta, tb in zip(a[1:], b[1:]):
            for u, v in zip(ta, tb):
                np.testing.assert_allclose(u.numpy(), v.numpy(), err_msg=a[0])


def test_full_backward_hook_without_input_grad(torch_mod):
    seen = []
    for m in (tg, torch_mod):
        lin = _linear(m)
        lin.register_full_backward_hook(lambda mod, gi, go: seen.append(gi))
        lin(m.tensor(np.ones((1, 3)))).sum().backward()
    assert seen[0] == seen[1] == (None,)


def test_backward_pre_hook_replaces_grad_output(torch_mod):
    grads = []
    for m in (tg, torch_mod):
        lin = _linear(m)
        lin.register_full_backward_pre_hook(lambda mod, go: (go[0] * 0 + 1,))
        x = m.tensor(np.ones((2, 3)), requires_grad=True)
        (lin(x) * 5).sum().backward()
        grads.append(x.grad.numpy())
    np.testing.assert_allclose(grads[0], grads[1])


def test_forward_hooks_with_kwargs_prepend_and_always_call():
    calls = []

    class Net(tg.nn.Module):
        def forward(self, x, scale=1.0):
            if scale == 0:
                raise ValueError("boom")
            return x * scale

    net = Net()
    net.register_forward_pre_hook(lambda m, a, k: (a, {"scale": k.get("scale", 1.0) * 2}),
                                  with_kwargs=True)  # fmt: skip
    net.register_forward_hook(lambda m, a, k, out: calls.append(("post", k)), with_kwargs=True)
    net.register_forward_hook(lambda m, a, out: calls.append("first"), prepend=True)
    out = net(tg.ones(2), scale=3.0)
    np.testing.assert_allclose(out.numpy(), [6.0, 6.0])
    assert calls == ["first", ("post", {"scale": 6.0})]
    seen = []
    net2 = Net()
    net2.register_forward_hook(lambda m, a, out: seen.append(out), always_call=True)
    with pytest.raises(ValueError, match="boom"):
        net2(tg.ones(2), scale=0)
    assert seen == [None]
    h = net2.register_forward_pre_hook(lambda m, a: (a[0] + 1,))
    np.testing.assert_allclose(net2(tg.ones(2)).numpy(), [2.0, 2.0])
    h.remove()
    np.testing.assert_allclose(net2(tg.ones(2)).numpy(), [1.0, 1.0])


def test_sequential_editing_matches_torch(torch_mod):
    def build(m):
        s = m.nn.Sequential(m.nn.Linear(2, 2), m.nn.ReLU(), m.nn.Tanh(), m.nn.Sigmoid())
        del s[1:3]
        s.insert(1, m.nn.ELU())
        s.append(m.nn.Identity())
        s.extend([m.nn.ReLU6()])
        popped = s.pop(0)
        s2 = s + m.nn.Sequential(m.nn.GELU())
        s2 += m.nn.Sequential(m.nn.SiLU())
        return repr(s2), type(popped).__name__, len(s2), type(s2[-1]).__name__, list(s2._modules)

    assert build(tg) == build(torch_mod)


def test_parameter_list_and_dict(torch_mod):
    for m in (tg, torch_mod):
        pl = m.nn.ParameterList([m.nn.Parameter(m.zeros(2)), m.zeros(3)])
        pl.append(m.nn.Parameter(m.ones(1)))
        assert [n for n, _ in pl.named_parameters()] == ["0", "1", "2"]
        assert isinstance(pl[1], m.nn.Parameter) and len(pl) == 3
        pd = m.nn.ParameterDict({"a": m.nn.Parameter(m.zeros(2))})
        pd["b"] = m.zeros(3)
        pd.update({"c": m.nn.Parameter(m.ones(1))})
        assert list(pd.keys()) == ["a", "b", "c"] and "b" in pd
        del pd["a"]
        assert list(pd.state_dict()) == ["b", "c"]

        class Net(m.nn.Module):
            def __init__(self):
                super().__init__()
                self.ps = pl
                self.pd = pd

        assert list(Net().state_dict()) == ["ps.0", "ps.1", "ps.2", "pd.b", "pd.c"]


def test_lookups_buffers_and_casts(torch_mod):
    for m in (tg, torch_mod):
        net = m.nn.Sequential(m.nn.Linear(2, 3), m.nn.BatchNorm1d(3))
        net[1].register_buffer("scratch", m.zeros(3), persistent=False)
        assert net.get_parameter("0.bias") is net[0].bias
        assert net.get_buffer("1.running_mean") is net[1].running_mean
        assert "1.scratch" not in net.state_dict() and "1.scratch" in dict(net.named_buffers())
        with pytest.raises(AttributeError):
            net.get_parameter("0.nope")
        net.half()
        assert net[0].weight.dtype == m.float16
        assert net[1].num_batches_tracked.dtype == m.int64
        net.type(m.float64)
        assert net[0].weight.dtype == m.float64
        net.requires_grad_(False)
        assert not any(p.requires_grad for p in net.parameters())
        names = [n for n, _ in net.named_modules(prefix="root")]
        assert names == ["root", "root.0", "root.1"]
        shared = m.nn.Linear(2, 2)
        twice = m.nn.Sequential(shared, shared)
        assert len(list(twice.named_modules())) == 2
        assert len(list(twice.named_modules(remove_duplicate=False))) == 3
        visited = []
        twice.apply(lambda mod: visited.append(type(mod).__name__))
        assert visited[-1] == "Sequential"
