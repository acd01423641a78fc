"""functional_call, stack_module_state, model ensembling and per-sample gradients,
against a loop and torch.func."""

import warnings

import numpy as np
import pytest

import tapegrad as tg

F = tg.func


@pytest.fixture(autouse=True)
def _quiet():
    with warnings.catch_warnings():
        warnings.simplefilter("ignore", UserWarning)
        yield


def _mlp(m, seed=0):
    m.manual_seed(seed)
    return m.nn.Sequential(m.nn.Linear(4, 8), m.nn.Tanh(), m.nn.Linear(8, 2)).double()


def test_functional_call_replaces_and_restores():
    net = _mlp(tg)
    before = {k: v.detach().numpy().copy() for k, v in net.state_dict().items()}
    params = {k: tg.zeros_like(v) for k, v in net.named_parameters()}
    x = tg.randn(3, 4, dtype=tg.float64)
    out = F.functional_call(net, params, (x,))
    np.testing.assert_allclose(out.detach().numpy(), 0.0)
    out = F.functional_call(net, params, x)  # a single argument need not be a tuple
    assert out.shape == (3, 2)
    for k, v in net.state_dict().items():
        np.testing.assert_array_equal(v.detach().numpy(), before[k])
    partial = F.functional_call(net, {"2.bias": tg.ones(2, dtype=tg.float64)}, (x,))
    want = np.broadcast_to(1.0 - net[2].bias.detach().numpy(), (3, 2))
    np.testing.assert_allclose((partial - net(x)).detach().numpy(), want)


def test_functional_call_errors_and_strict():
    net = _mlp(tg)
    x = tg.randn(3, 4, dtype=tg.float64)
    with pytest.raises(RuntimeError, match="no parameter or buffer named 'nope'"):
        F.functional_call(net, {"nope": tg.ones(1)}, (x,))
    with pytest.raises(RuntimeError, match="Missing key"):
        F.functional_call(net, {"0.weight": net[0].weight}, (x,), strict=True)
    with pytest.raises(ValueError, match="multiple dictionaries"):
        F.functional_call(net, ({"0.bias": tg.ones(8)}, {"0.bias": tg.ones(8)}), (x,))
    with pytest.raises(ValueError, match="dict"):
        F.functional_call(net, [1], (x,))


def test_functional_call_tied_weights():
    a, b = tg.nn.Linear(3, 3, bias=False), tg.nn.Linear(3, 3, bias=False)
    b.weight = a.weight  # one Parameter in two modules
    net = tg.nn.Sequential(a, tg.nn.Tanh(), b)
    x = tg.randn(2, 3)
    w = tg.eye(3)
    out = F.functional_call(net, {"0.weight": w}, (x,))
    np.testing.assert_allclose(out.detach().numpy(), np.tanh(x.numpy()), rtol=1e-6)
    untied = F.functional_call(net, {"0.weight": w}, (x,), tie_weights=False)
    want = (x.tanh() @ a.weight.T).detach().numpy()
    np.testing.assert_allclose(untied.detach().numpy(), want, rtol=1e-6)
    assert b.weight is a.weight


def _loss(net):
    def loss(params, x, y):
        out = F.functional_call(net, params, (x.unsqueeze(0),))
        return ((out - y.unsqueeze(0)) ** 2).mean()

    return loss


def test_per_sample_gradients_equal_a_loop_and_torch(torch_mod):
    torch = torch_mod
    net = _mlp(tg)
    params = {k: v.detach() for k, v in net.named_parameters()}
    rng = np.random.default_rng(0)
    xa, ya = rng.standard_normal((6, 4)), rng.standard_normal((6, 2))
    x, y = tg.tensor(xa), tg.tensor(ya)
    per = F.vmap(F.grad(_loss(net)), in_dims=(None, 0, 0))(params, x, y)
    for b in range(6):
        one = F.grad(_loss(net))(params, x[b], y[b])
        for k in params:
            np.testing.assert_allclose(per[k][b].numpy(), one[k].numpy(), rtol=1e-12)
    tnet = _mlp(torch)
    tnet.load_state_dict({k: torch.tensor(v.numpy()) for k, v in net.state_dict().items()})
    tparams = {k: v.detach() for k, v in tnet.named_parameters()}
    tper = torch.func.vmap(torch.func.grad(_loss_t(torch, tnet)), in_dims=(None, 0, 0))(
        tparams, torch.tensor(xa), torch.tensor(ya)
    )
    for k in params:
        np.testing.assert_allclose(per[k].numpy(), tper[k].numpy(), rtol=1e-10, atol=1e-12)


def _loss_t(torch, net):
    def loss(params, x, y):
        out = torch.func.functional_call(net, params, (x.unsqueeze(0),))
        return ((out - y.unsqueeze(0)) ** 2).mean()

    return loss


def test_stack_module_state_ensemble_matches_torch(torch_mod):
    torch = torch_mod
    models = [_mlp(tg, seed) for seed in range(3)]
    params, buffers = F.stack_module_state(models)
    assert params["0.weight"].shape == (3, 8, 4) and params["0.weight"].is_leaf
    assert params["0.weight"].requires_grad and buffers == {}
    base = _mlp(tg)
    x = tg.randn(5, 4, dtype=tg.float64)

    def fmodel(p, b, x):
        return F.functional_call(base, (p, b), (x,))

    out = F.vmap(fmodel, in_dims=(0, 0, None))(params, buffers, x)
    for i, m in enumerate(models):
        np.testing.assert_allclose(out[i].detach().numpy(), m(x).detach().numpy(), rtol=1e-12)
    tmodels = [_mlp(torch, seed) for seed in range(3)]
    for tm, m in zip(tmodels, models):
        tm.load_state_dict({k: torch.tensor(v.numpy()) for k, v in m.state_dict().items()})
    tp, tb = torch.func.stack_module_state(tmodels)
    for k in params:
        np.testing.assert_allclose(params[k].detach().numpy(), tp[k].detach().numpy())
    with pytest.raises(RuntimeError, match="same training/eval mode"):
        F.stack_module_state([_mlp(tg), _mlp(tg).eval()])
    with pytest.raises(RuntimeError, match="at least one model"):
        F.stack_module_state([])


def test_vmap_over_module_with_batchnorm_buffers():
    net = tg.nn.Sequential(tg.nn.Linear(3, 4), tg.nn.BatchNorm1d(4)).double().eval()
    params = dict(net.named_parameters())
    buffers = dict(net.named_buffers())
    x = tg.randn(5, 2, 3, dtype=tg.float64)
    out = F.vmap(lambda xx: F.functional_call(net, (params, buffers), (xx,)))(x)
    np.testing.assert_allclose(
        out.detach().numpy(), net(x.reshape(10, 3)).reshape(5, 2, 4).detach().numpy(), rtol=1e-12
    )
