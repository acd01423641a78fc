"""Options of nn.utils that no test passed (the scan of tests/test_option_values.py applied to
nn.utils): each non-default value against torch."""

import numpy as np
import pytest

import tapegrad as tg


def _grads(lib, values):
    ps = []
    for v in values:
        p = lib.nn.Parameter(lib.tensor(np.zeros_like(v)))
        p.grad = lib.tensor(v)
        ps.append(p)
    return ps


GRADS = [np.array([[3.0, -4.0], [1.0, 2.0]]), np.array([0.5, -12.0, 2.0])]


@pytest.mark.parametrize("foreach", [None, False, True])
@pytest.mark.parametrize("norm_type", [2.0, 1, 3.5, float("inf"), 0.5])
def test_get_total_norm_and_clip_grads_with_norm_options_match_torch(torch_mod, norm_type, foreach):
    results = []
    for lib in (torch_mod, tg):
        ps = _grads(lib, GRADS)
        grads = [p.grad for p in ps]
        total = lib.nn.utils.get_total_norm(grads, norm_type=norm_type, foreach=foreach)
        lib.nn.utils.clip_grads_with_norm_(ps, 1.5, total, foreach=foreach)
        results.append([float(total)] + [np.asarray(p.grad.numpy()) for p in ps])
    np.testing.assert_allclose(results[1][0], results[0][0], rtol=1e-12)
    for ours, want in zip(results[1][1:], results[0][1:]):
        np.testing.assert_allclose(ours, want, rtol=1e-12)


@pytest.mark.parametrize("bad", [float("nan"), float("inf")])
def test_get_total_norm_error_if_nonfinite_matches_torch(torch_mod, bad):
    values = [GRADS[0], np.array([1.0, bad])]
    for lib in (torch_mod, tg):
        grads = [lib.tensor(v) for v in values]
        total = lib.nn.utils.get_total_norm(grads, error_if_nonfinite=False)
        assert not np.isfinite(float(total))
        with pytest.raises(RuntimeError, match="non-finite"):
            lib.nn.utils.get_total_norm(grads, error_if_nonfinite=True)


def test_weight_norm_and_spectral_norm_of_a_named_parameter_match_torch(torch_mod):
    # name= (the bias instead of the weight), spectral_norm's eps, and their removal by name
    rng = np.random.default_rng(0)
    w, b = rng.standard_normal((3, 4)), rng.standard_normal(3)
    x = rng.standard_normal((2, 4))
    outs = []
    for lib in (torch_mod, tg):
        lib.manual_seed(0)
        m = lib.nn.Linear(4, 3).double()
        with lib.no_grad():
            m.weight.copy_(lib.tensor(w))
            m.bias.copy_(lib.tensor(b))
        lib.nn.utils.weight_norm(m, name="bias", dim=0)
        names = sorted(n for n, _ in m.named_parameters())
        y1 = m(lib.tensor(x))
        lib.nn.utils.remove_weight_norm(m, name="bias")
        names_after = sorted(n for n, _ in m.named_parameters())
        y2 = m(lib.tensor(x))
        outs.append((names, names_after, y1.detach().numpy(), y2.detach().numpy()))
    assert outs[1][:2] == outs[0][:2]
    for ours, want in zip(outs[1][2:], outs[0][2:]):
        np.testing.assert_allclose(ours, want, rtol=1e-12)


@pytest.mark.parametrize("eps", [1e-12, 10.0])
def test_spectral_norm_eps_matches_torch(torch_mod, eps):
    # eps is added to the norms of u and v in the power iteration; a large one shows in sigma
    w = np.array([[2.0, 0.5, -1.0], [0.3, 1.5, 0.2]])
    outs = []
    for lib in (torch_mod, tg):
        m = lib.nn.Linear(3, 2, bias=False).double()
        with lib.no_grad():
            m.weight.copy_(lib.tensor(w))
        lib.nn.utils.spectral_norm(m, eps=eps, n_power_iterations=3)
        u0 = np.linspace(0.2, 1.0, 2)
        v0 = np.linspace(-1.0, 0.5, 3)
        with lib.no_grad():
            m.weight_u.copy_(lib.tensor(u0 / np.linalg.norm(u0)))
            m.weight_v.copy_(lib.tensor(v0 / np.linalg.norm(v0)))
        m.train()
        m(lib.ones(1, 3, dtype=lib.float64))
        outs.append(np.asarray(m.weight.detach().numpy()))
        lib.nn.utils.remove_spectral_norm(m, name="weight")
        assert "weight" in dict(m.named_parameters())
    np.testing.assert_allclose(outs[1], outs[0], rtol=1e-10)
