"""tg.amp (issue 12): autocast is accepted, GradScaler follows torch's algorithm."""

import warnings

import numpy as np
import pytest

import tapegrad as tg


def _trajectory(m):
    scaler = m.amp.GradScaler("cpu", init_scale=4.0, growth_interval=2)
    p = m.nn.Parameter(m.ones(2))
    opt = m.optim.SGD([p], lr=0.1)
    out = []
    for _ in range(4):
        scaled = scaler.scale((p * p).sum())
        scaled.backward()
        scaler.unscale_(opt)
        out.append((scaled.item(), p.grad.tolist()))
        with pytest.raises(RuntimeError, match="already been called"):
            scaler.unscale_(opt)
        scaler.step(opt)
        scaler.update()
        opt.zero_grad()
        out.append((scaler.get_scale(), p.detach().tolist()))
    p.grad = m.tensor([float("inf"), 1.0])
    scaler.step(opt)  # skipped: a gradient is inf
    scaler.update()
    out.append((scaler.get_scale(), p.detach().tolist(), scaler.state_dict()))
    with pytest.raises(AssertionError, match="No inf checks"):
        scaler.update()
    return out


def test_grad_scaler_matches_torch(torch_mod):
    ours, theirs = _trajectory(tg), _trajectory(torch_mod)
    assert len(ours) == len(theirs) == 9
    assert ours[-1][2] == theirs[-1][2]  # state_dict after the skipped step
    for a, b in zip(ours, theirs, strict=True):
        assert a[0] == pytest.approx(b[0], rel=1e-6)  # scaled loss, or the scale
        np.testing.assert_allclose(np.asarray(a[1]), np.asarray(b[1]), rtol=1e-6)


def test_cuda_scaler_without_gpu_disables_itself_and_passes_through(torch_mod):
    with pytest.warns(UserWarning, match="CUDA is not available"):
        scaler = tg.amp.GradScaler()
    with pytest.warns(UserWarning, match="CUDA is not available"):
        tscaler = torch_mod.amp.GradScaler()
    assert scaler.is_enabled() is tscaler.is_enabled() is False
    assert scaler.get_scale() == tscaler.get_scale() == 1.0
    p = tg.nn.Parameter(tg.ones(2))
    opt = tg.optim.SGD([p], lr=0.5)
    loss = (p * p).sum()
    assert scaler.scale(loss) is loss
    loss.backward()
    scaler.step(opt)
    scaler.update()
    assert p.detach().tolist() == [0.0, 0.0] and scaler.state_dict() == {}
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")
        assert tg.cuda.amp.GradScaler().is_enabled() is False


def test_autocast_is_accepted_and_changes_nothing():
    lin = tg.nn.Linear(3, 2)
    x = tg.randn(4, 3)
    with tg.autocast("cpu", dtype=tg.bfloat16):
        y = lin(x)
    assert y.dtype == tg.float32
    with tg.amp.autocast(device_type="cuda", enabled=False), tg.cuda.amp.autocast():
        np.testing.assert_array_equal(lin(x).detach().numpy(), y.detach().numpy())

    @tg.autocast("cpu")
    def f(t):
        return t * 2

    assert f(tg.ones(1)).tolist() == [2.0]
    assert tg.amp.is_autocast_available("cpu") is False
