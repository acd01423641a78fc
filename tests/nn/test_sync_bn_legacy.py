"""SyncBatchNorm (one process), NLLLoss2d and CrossMapLRN2d against torch."""

import warnings

import numpy as np
import pytest

import tapegrad as tg

from ._compare import compare_module


@pytest.mark.parametrize("shape", [(4, 3), (4, 3, 5), (2, 3, 4, 4), (2, 3, 2, 3, 2)])
@pytest.mark.parametrize("momentum", [0.1, None])
def test_sync_batchnorm_is_batchnorm_in_one_process(torch_mod, shape, momentum):
    x = np.random.default_rng(0).standard_normal(shape)
    ours = tg.nn.SyncBatchNorm(3, momentum=momentum).double()
    theirs = torch_mod.nn.SyncBatchNorm(3, momentum=momentum).double()
    compare_module(ours, theirs, torch_mod, x, steps=2, atol=1e-10)
    compare_module(ours, theirs, torch_mod, x, train=False, atol=1e-10)


def test_sync_batchnorm_errors(torch_mod):
    for lib in (tg, torch_mod):
        with pytest.raises(ValueError, match=r"expected at least 2D input \(got 1D input\)"):
            lib.nn.SyncBatchNorm(3)(lib.ones(3))
        with pytest.raises(ValueError, match="number of input channels should be non-zero"):
            lib.nn.SyncBatchNorm(0)(lib.ones(2, 0))


def test_convert_sync_batchnorm(torch_mod):
    built = []
    for lib in (tg, torch_mod):
        nn = lib.nn
        inner = nn.BatchNorm1d(3, affine=False, momentum=None)
        model = nn.Sequential(nn.Conv2d(3, 3, 1), nn.BatchNorm2d(3), nn.Sequential(inner))
        model[1].eval()
        out = nn.SyncBatchNorm.convert_sync_batchnorm(model)
        assert out is model and out[0] is model[0]
        bn = out[1]
        assert type(bn) is nn.SyncBatchNorm and not bn.training
        assert type(out[2][0]) is nn.SyncBatchNorm and out[2][0].momentum is None
        built.append(repr(out).replace("tapegrad.", "").replace("torch.", ""))
        single = nn.BatchNorm2d(2)
        converted = nn.SyncBatchNorm.convert_sync_batchnorm(single)
        assert converted is not single and converted.weight is single.weight
        assert converted.running_mean is single.running_mean
    assert built[0] == built[1]


def test_nll_loss_2d(torch_mod):
    x = np.log(np.random.default_rng(1).dirichlet(np.ones(4), size=(2, 3, 3)))
    x = np.ascontiguousarray(x.transpose(0, 3, 1, 2))
    y = np.random.default_rng(2).integers(0, 4, size=(2, 3, 3))
    y[0, 0, 0] = 1
    res = []
    for lib in (tg, torch_mod):
        with pytest.warns(FutureWarning, match="`NLLLoss2d` has been deprecated"):
            loss = lib.nn.NLLLoss2d(ignore_index=1, reduction="sum")
        xt = lib.tensor(x, requires_grad=True)
        out = loss(xt, lib.tensor(y))
        out.backward()
        res.append((repr(loss), out.item(), xt.grad.numpy()))
        assert isinstance(loss, lib.nn.NLLLoss)
    assert res[0][0] == res[1][0]
    assert res[0][1] == pytest.approx(res[1][1], rel=1e-12)
    np.testing.assert_allclose(res[0][2], res[1][2])


@pytest.mark.parametrize("size", [1, 2, 3, 4, 5, 9])
def test_cross_map_lrn2d_forward_matches_torch(torch_mod, size):
    x = np.random.default_rng(size).standard_normal((2, 7, 3, 2))
    ours = tg.nn.CrossMapLRN2d(size, alpha=0.3, beta=0.6, k=1.5)
    theirs = torch_mod.nn.CrossMapLRN2d(size, alpha=0.3, beta=0.6, k=1.5)
    assert repr(ours) == repr(theirs)
    out = ours(tg.tensor(x)).numpy()
    np.testing.assert_allclose(out, theirs(torch_mod.tensor(x)).numpy(), rtol=1e-12)
    x32 = x.astype(np.float32)
    assert ours(tg.tensor(x32)).dtype == tg.float32


def test_cross_map_lrn2d_gradient_is_the_derivative(torch_mod):
    """Note [CrossMapLRN2d window]: torch's own backward fails gradcheck; ours passes, and
    where the window is symmetric (channels 0 and 1 for size 3) the two agree."""
    x = np.random.default_rng(7).standard_normal((2, 5, 2, 2))
    xt = tg.tensor(x, requires_grad=True)
    fn = tg.nn.CrossMapLRN2d(3, alpha=0.3, beta=0.6, k=1.5)
    assert tg.autograd.gradcheck(fn, (xt,))
    assert tg.autograd.gradgradcheck(fn, (xt,))
    ref = torch_mod.nn.CrossMapLRN2d(3, alpha=0.3, beta=0.6, k=1.5)
    xr = torch_mod.tensor(x, requires_grad=True)
    assert not torch_mod.autograd.gradcheck(ref, (xr,), raise_exception=False)
    with pytest.raises(ValueError, match="Expected input to be 4D, got 3D instead"):
        fn(tg.ones(2, 3, 3))


def test_no_warning_from_the_others():
    with warnings.catch_warnings():
        warnings.simplefilter("error")
        tg.nn.SyncBatchNorm(2)
        tg.nn.CrossMapLRN2d(3)


def test_sync_batchnorm_refuses_cpu_training_in_a_process_group(monkeypatch):
    """torch syncs only accelerator tensors: training on CPU under an initialised group is
    torch's ValueError, never statistics silently left per-process."""
    bn = tg.nn.SyncBatchNorm(3)
    monkeypatch.setattr(tg.distributed, "is_initialized", lambda: True)
    with pytest.raises(ValueError, match="SyncBatchNorm expected input tensor to be on GPU"):
        bn(tg.ones(2, 3))
    bn.eval()  # evaluation needs no sync
    assert tuple(bn(tg.ones(2, 3)).shape) == (2, 3)
