"""Layers against PyTorch with identical weights, plus float64 gradchecks of the fused ops."""

import numpy as np
import pytest

import tapegrad as tg
import tapegrad.nn.functional as F
from tapegrad.autograd import gradcheck, gradgradcheck

from ._compare import compare_module

rng = np.random.default_rng(0)

CONV_CASES = [
    # (C, O, kernel, stride, padding, dilation, groups, bias, (H, W))
    (3, 4, 3, 1, 0, 1, 1, True, (7, 6)),
    (3, 4, 3, 1, 1, 1, 1, False, (5, 5)),
    (4, 6, 3, 2, 1, 1, 2, True, (9, 8)),
    (2, 4, (3, 2), (2, 1), (1, 0), (2, 1), 1, True, (9, 7)),
    (4, 4, 3, 1, "same", 2, 4, True, (6, 6)),
    (2, 3, 2, 1, "valid", 1, 1, True, (4, 5)),
    (3, 2, 1, 1, 0, 1, 1, True, (3, 3)),
]


@pytest.mark.parametrize("case", CONV_CASES, ids=[str(c) for c in CONV_CASES])
def test_conv2d_matches_torch(case, torch_mod):
    c, o, k, s, p, d, g, bias, hw = case
    ours = tg.nn.Conv2d(c, o, k, s, p, d, g, bias).double()
    theirs = torch_mod.nn.Conv2d(c, o, k, s, p, d, g, bias).double()
    compare_module(ours, theirs, torch_mod, rng.standard_normal((2, c) + hw))


@pytest.mark.parametrize("case", CONV_CASES, ids=[str(c) for c in CONV_CASES])
def test_conv2d_in_one_sample_column_blocks_matches_torch(case, torch_mod, monkeypatch):
    """Note [Convolution memory]: columns built block by block (here one sample each)."""
    from tapegrad.nn import _conv_ops

    monkeypatch.setattr(_conv_ops, "_BLOCK_BYTES", 1)
    c, o, k, s, p, d, g, bias, hw = case
    ours = tg.nn.Conv2d(c, o, k, s, p, d, g, bias).double()
    theirs = torch_mod.nn.Conv2d(c, o, k, s, p, d, g, bias).double()
    compare_module(ours, theirs, torch_mod, rng.standard_normal((3, c) + hw))


def test_conv2d_float32_and_unbatched(torch_mod):
    ours, theirs = tg.nn.Conv2d(2, 3, 3, padding=1), torch_mod.nn.Conv2d(2, 3, 3, padding=1)
    x = rng.standard_normal((2, 5, 5)).astype(np.float32)
    compare_module(ours, theirs, torch_mod, x, atol=1e-5)
    assert ours(tg.tensor(x)).dtype == tg.float32


@pytest.mark.parametrize("case", CONV_CASES[:5], ids=[str(c) for c in CONV_CASES[:5]])
def test_conv2d_gradcheck(case):
    c, o, k, s, p, d, g, bias, _ = case
    x = tg.randn(1, c, 5, 5, dtype=tg.float64, requires_grad=True)
    w = tg.randn(
        o, c // g, *((k, k) if isinstance(k, int) else k), dtype=tg.float64, requires_grad=True
    )
    b = tg.randn(o, dtype=tg.float64, requires_grad=True) if bias else None
    inputs = (x, w, b) if bias else (x, w)

    def f(x, w, b=None):
        return F.conv2d(x, w, b, s, p, d, g)

    assert gradcheck(f, inputs, atol=1e-6, rtol=1e-5)
    assert gradgradcheck(f, inputs[:2], atol=1e-6, rtol=1e-5)


def test_conv2d_errors():
    with pytest.raises(RuntimeError, match="channels"):
        F.conv2d(tg.randn(1, 3, 5, 5), tg.randn(2, 2, 3, 3))
    with pytest.raises(RuntimeError, match="smaller"):
        F.conv2d(tg.randn(1, 1, 2, 2), tg.randn(1, 1, 3, 3))
    with pytest.raises(RuntimeError, match="expected scalar type Double but found Float"):
        F.conv2d(tg.randn(1, 1, 4, 4, dtype=tg.float64), tg.randn(1, 1, 3, 3))
    with pytest.raises(NotImplementedError, match="padding_mode"):
        tg.nn.Conv2d(1, 1, 3, padding_mode="reflect")


MAXPOOL_CASES = [
    # (kernel, stride, padding, dilation, ceil_mode)
    (2, None, 0, 1, False),
    (3, 2, 1, 1, False),
    (3, 1, 1, 2, False),
    ((2, 3), (1, 2), (1, 1), 1, False),
    (3, 2, 0, 1, True),
    (2, 2, 1, 1, True),
]


@pytest.mark.parametrize("case", MAXPOOL_CASES, ids=[str(c) for c in MAXPOOL_CASES])
def test_max_pool2d_matches_torch(case, torch_mod):
    k, s, p, d, ceil = case
    ours = tg.nn.MaxPool2d(k, s, p, d, ceil_mode=ceil)
    theirs = torch_mod.nn.MaxPool2d(k, s, p, d, ceil_mode=ceil)
    compare_module(ours, theirs, torch_mod, rng.standard_normal((2, 3, 7, 8)))


def test_max_pool2d_ties_go_to_first_max(torch_mod):
    x = np.round(rng.standard_normal((1, 2, 6, 6)))  # many ties
    x[0, 0, :2, :2] = 1.0
    compare_module(tg.nn.MaxPool2d(2), torch_mod.nn.MaxPool2d(2), torch_mod, x)
    compare_module(tg.nn.MaxPool2d(3, 1), torch_mod.nn.MaxPool2d(3, 1), torch_mod, x)


@pytest.mark.parametrize("args", [(3, 2, 1), (2,), (3,)], ids=["overlapping", "tiled", "tiled-3"])
def test_max_pool2d_return_indices(torch_mod, args):
    x = np.round(rng.standard_normal((2, 2, 7, 7)))  # ties: the first maximum's index
    out, idx = F.max_pool2d(tg.tensor(x), *args, return_indices=True)
    ref, ridx = torch_mod.nn.functional.max_pool2d(torch_mod.tensor(x), *args, return_indices=True)
    np.testing.assert_array_equal(idx._data, ridx.numpy())
    np.testing.assert_allclose(out._data, ref.numpy())
    out, idx = F.max_pool2d(tg.tensor(x[0]), *args, return_indices=True)  # unbatched
    np.testing.assert_array_equal(idx._data, ridx.numpy()[0])


@pytest.mark.parametrize("kernel", [2, 3])
def test_max_pool2d_tiled_windows_match_torch(kernel, torch_mod):
    """Note [Tiled max pooling]: stride == kernel, leftover rows/cols, many ties."""
    x = np.maximum(np.round(rng.standard_normal((2, 3, 7, 8))), 0)  # relu-like: tied zeros
    pool = tg.nn.MaxPool2d(kernel).double()
    compare_module(pool, torch_mod.nn.MaxPool2d(kernel), torch_mod, x)


def test_max_pool2d_tiled_backward_keeps_infinite_grads_on_the_maxima(torch_mod):
    x = rng.standard_normal((1, 2, 4, 4))
    g = np.ones((1, 2, 2, 2))
    g[0, 0, 0, 0], g[0, 1, 1, 1] = np.inf, -np.inf
    xt = tg.tensor(x, requires_grad=True)
    xr = torch_mod.tensor(x, requires_grad=True)
    F.max_pool2d(xt, 2).backward(tg.tensor(g))
    torch_mod.nn.functional.max_pool2d(xr, 2).backward(torch_mod.tensor(g))
    np.testing.assert_array_equal(xt.grad._data, xr.grad.numpy())


def test_max_pool2d_gradcheck():
    x = tg.tensor(rng.permutation(50).reshape(1, 2, 5, 5) / 10.0, requires_grad=True)
    for args in ((2,), (3,), (3, 2, 1), (2, 1, 0, 2)):
        assert gradcheck(lambda x, a=args: F.max_pool2d(x, *a), (x,), atol=1e-6, rtol=1e-5)
        assert gradgradcheck(lambda x, a=args: F.max_pool2d(x, *a), (x,), atol=1e-6, rtol=1e-5)


AVGPOOL_CASES = [
    # (kernel, stride, padding, ceil_mode, count_include_pad, divisor_override)
    (2, None, 0, False, True, None),
    (3, 2, 1, False, True, None),
    (3, 2, 1, False, False, None),
    ((3, 2), (2, 1), (1, 1), True, True, None),
    (3, 2, 1, True, False, None),
    (2, 1, 1, False, True, 3),
]


@pytest.mark.parametrize("case", AVGPOOL_CASES, ids=[str(c) for c in AVGPOOL_CASES])
def test_avg_pool2d_matches_torch(case, torch_mod):
    ours = tg.nn.AvgPool2d(*case)
    theirs = torch_mod.nn.AvgPool2d(*case)
    compare_module(ours, theirs, torch_mod, rng.standard_normal((2, 3, 7, 8)))


def test_avg_pool2d_gradcheck():
    x = tg.randn(1, 2, 5, 5, dtype=tg.float64, requires_grad=True)
    for args in ((2,), (3, 2, 1, False, False), (3, 2, 1, True, True)):
        assert gradcheck(lambda x, a=args: F.avg_pool2d(x, *a), (x,), atol=1e-6, rtol=1e-5)
        assert gradgradcheck(lambda x, a=args: F.avg_pool2d(x, *a), (x,), atol=1e-6, rtol=1e-5)


def test_pool_errors():
    with pytest.raises(RuntimeError, match="half of effective kernel"):
        F.max_pool2d(tg.randn(1, 1, 5, 5), 2, 2, 2)
    with pytest.raises(RuntimeError, match="3-D or 4-D"):
        F.avg_pool2d(tg.randn(5, 5), 2)


@pytest.mark.parametrize(
    "cls,shape",
    [("BatchNorm1d", (6, 3)), ("BatchNorm1d", (4, 3, 5)), ("BatchNorm2d", (4, 3, 3, 2))],
)
@pytest.mark.parametrize(
    "kwargs", [{}, {"affine": False}, {"momentum": None}, {"track_running_stats": False}]
)
def test_batch_norm_matches_torch(cls, shape, kwargs, torch_mod):
    ours = getattr(tg.nn, cls)(3, **kwargs).double()
    theirs = getattr(torch_mod.nn, cls)(3, **kwargs).double()
    if ours.weight is not None:
        with torch_mod.no_grad():
            theirs.weight.uniform_(0.5, 1.5)
            theirs.bias.uniform_(-0.5, 0.5)
    x = rng.standard_normal(shape) * 2 + 1
    compare_module(ours, theirs, torch_mod, x, train=True, steps=3)
    compare_module(ours, theirs, torch_mod, x, train=False)


def test_batch_norm_gradcheck():
    x = tg.randn(4, 2, 3, dtype=tg.float64, requires_grad=True)
    w = tg.tensor([1.5, 0.7], dtype=tg.float64, requires_grad=True)
    b = tg.tensor([0.1, -0.2], dtype=tg.float64, requires_grad=True)

    def f(x, w, b):
        return F.batch_norm(x, None, None, w, b, training=True)

    assert gradcheck(f, (x, w, b), atol=1e-6, rtol=1e-5)
    assert gradgradcheck(f, (x, w, b), atol=1e-6, rtol=1e-5)


def test_batch_norm_errors():
    with pytest.raises(ValueError, match="more than 1 value per channel"):
        tg.nn.BatchNorm1d(3)(tg.randn(1, 3))
    with pytest.raises(ValueError, match="expected 4D input"):
        tg.nn.BatchNorm2d(3)(tg.randn(2, 3))


@pytest.mark.parametrize("shape,normalized", [((4, 5), 5), ((2, 3, 4), (3, 4))])
@pytest.mark.parametrize("affine", [True, False])
def test_layer_norm_matches_torch(shape, normalized, affine, torch_mod):
    ours = tg.nn.LayerNorm(normalized, elementwise_affine=affine).double()
    theirs = torch_mod.nn.LayerNorm(normalized, elementwise_affine=affine).double()
    if affine:
        with torch_mod.no_grad():
            theirs.weight.normal_()
            theirs.bias.normal_()
    compare_module(ours, theirs, torch_mod, rng.standard_normal(shape))


def test_layer_norm_gradcheck():
    x = tg.randn(3, 4, dtype=tg.float64, requires_grad=True)
    w = tg.randn(4, dtype=tg.float64, requires_grad=True)
    b = tg.randn(4, dtype=tg.float64, requires_grad=True)

    def f(x, w, b):
        return F.layer_norm(x, (4,), w, b)

    assert gradcheck(f, (x, w, b), atol=1e-6, rtol=1e-5)
    assert gradgradcheck(f, (x, w, b), atol=1e-6, rtol=1e-5)


def test_linear_matches_torch(torch_mod):
    ours, theirs = tg.nn.Linear(5, 3).double(), torch_mod.nn.Linear(5, 3).double()
    compare_module(ours, theirs, torch_mod, rng.standard_normal((4, 5)))
    compare_module(ours, theirs, torch_mod, rng.standard_normal((2, 4, 5)))
    ours, theirs = tg.nn.Linear(5, 3, bias=False), torch_mod.nn.Linear(5, 3, bias=False)
    compare_module(ours, theirs, torch_mod, rng.standard_normal(5).astype(np.float32), atol=1e-5)


def test_linear_gradgradcheck():
    x = tg.randn(3, 4, dtype=tg.float64, requires_grad=True)
    w = tg.randn(2, 4, dtype=tg.float64, requires_grad=True)
    b = tg.randn(2, dtype=tg.float64, requires_grad=True)
    assert gradgradcheck(F.linear, (x, w, b), atol=1e-6, rtol=1e-5)
    with pytest.raises(RuntimeError, match="don't match"):
        F.linear(tg.randn(3, 5), tg.randn(2, 4))


ACTIVATIONS = [
    ("ReLU", {}),
    ("GELU", {}),
    ("GELU", {"approximate": "tanh"}),
    ("SiLU", {}),
    ("Sigmoid", {}),
    ("Tanh", {}),
    ("Softmax", {"dim": 1}),
    ("LogSoftmax", {"dim": -1}),
    ("Flatten", {}),
    ("Identity", {}),
]


@pytest.mark.parametrize("name,kwargs", ACTIVATIONS, ids=[f"{n}{k}" for n, k in ACTIVATIONS])
def test_activation_matches_torch(name, kwargs, torch_mod):
    ours = getattr(tg.nn, name)(**kwargs)
    theirs = getattr(torch_mod.nn, name)(**kwargs)
    compare_module(ours, theirs, torch_mod, rng.standard_normal((3, 4, 2)) * 3)


@pytest.mark.parametrize(
    "fn",
    [
        F.gelu,
        F.silu,
        lambda x: F.softmax(x, 1),
        lambda x: F.log_softmax(x, 0),
        lambda x: F.gelu(x, "tanh"),
    ],
)
def test_activation_gradgradcheck(fn):
    x = tg.randn(3, 4, dtype=tg.float64, requires_grad=True)
    assert gradcheck(fn, (x,), atol=1e-6, rtol=1e-5)
    assert gradgradcheck(fn, (x,), atol=1e-6, rtol=1e-5)


def test_softmax_is_stable_for_large_inputs():
    x = tg.tensor([[1000.0, 0.0, -1000.0]])
    assert np.isfinite(F.softmax(x, 1)._data).all()
    assert np.isfinite(F.log_softmax(x, 1)._data).all()


def test_dropout_train_eval_and_seed():
    x = tg.ones(2000, requires_grad=True)
    drop = tg.nn.Dropout(0.25)
    tg.manual_seed(3)
    y = drop(x)
    kept = y._data != 0
    assert abs(kept.mean() - 0.75) < 0.05
    np.testing.assert_allclose(y._data[kept], 1 / 0.75)
    y.sum().backward()
    np.testing.assert_allclose(x.grad._data, y._data)  # gradient = mask / (1 - p)
    tg.manual_seed(3)
    np.testing.assert_array_equal(drop(x)._data, y._data)
    drop.eval()
    assert drop(x) is x
    assert (F.dropout(x, 1.0)._data == 0).all()
    with pytest.raises(ValueError, match="between 0 and 1"):
        tg.nn.Dropout(1.5)


def test_embedding_matches_torch(torch_mod):
    idx = np.array([[1, 2, 4], [4, 0, 1]])
    for pad in (None, 1, -1):
        ours = tg.nn.Embedding(5, 3, padding_idx=pad).double()
        theirs = torch_mod.nn.Embedding(5, 3, padding_idx=pad).double()
        ours.load_state_dict({"weight": theirs.weight.detach().numpy()})
        out, ref = ours(tg.tensor(idx)), theirs(torch_mod.tensor(idx))
        np.testing.assert_allclose(out._data, ref.detach().numpy())
        gy = rng.standard_normal(out.shape)
        out.backward(tg.tensor(gy))
        ref.backward(torch_mod.tensor(gy))
        np.testing.assert_allclose(ours.weight.grad._data, theirs.weight.grad.numpy())
    w = tg.randn(5, 3, dtype=tg.float64, requires_grad=True)
    assert gradgradcheck(lambda w: F.embedding(tg.tensor(idx), w, padding_idx=0), (w,))
    with pytest.raises(IndexError, match="out of range"):
        F.embedding(tg.tensor([5]), w)
    with pytest.raises(RuntimeError):  # as torch: float indices are a RuntimeError
        torch_mod.nn.functional.embedding(torch_mod.tensor([0.0, 1.0]), torch_mod.ones(5, 3))
    with pytest.raises(RuntimeError, match="embedding: indices must be integers.*float32"):
        F.embedding(tg.tensor([0.0, 1.0]), w)


def test_pad_one_hot(torch_mod):
    x = rng.standard_normal((2, 3, 4))
    for p in ((1, 2), (1, 0, 0, 2), (-1, 1, 2, 0)):
        ours = F.pad(tg.tensor(x), p, value=0.5)
        ref = torch_mod.nn.functional.pad(torch_mod.tensor(x), p, value=0.5)
        np.testing.assert_allclose(ours._data, ref.numpy())
    xt = tg.tensor(x, requires_grad=True)
    assert gradgradcheck(lambda x: F.pad(x, (1, 2, -1, 1)), (xt,))
    t = np.array([0, 2, 1])
    np.testing.assert_array_equal(
        F.one_hot(tg.tensor(t))._data, torch_mod.nn.functional.one_hot(torch_mod.tensor(t)).numpy()
    )
    assert F.one_hot(tg.tensor(t), 5).shape == (3, 5)
    with pytest.raises(RuntimeError, match="smaller than num_classes"):
        F.one_hot(tg.tensor(t), 2)


def test_sequential_cnn_matches_torch(torch_mod):
    def build(nn):
        return nn.Sequential(
            nn.Conv2d(1, 4, 3, padding=1),
            nn.BatchNorm2d(4),
            nn.ReLU(),
            nn.MaxPool2d(2),
            nn.Conv2d(4, 6, 3, padding=1, groups=2),
            nn.GELU(),
            nn.AvgPool2d(2),
            nn.Flatten(),
            nn.Dropout(0.0),
            nn.Linear(36, 5),
            nn.LayerNorm(5),
        )

    ours, theirs = build(tg.nn).double(), build(torch_mod.nn).double()
    x = rng.standard_normal((3, 1, 8, 12))
    compare_module(ours, theirs, torch_mod, x, train=True, steps=2)
    compare_module(ours, theirs, torch_mod, x, train=False)


def test_max_pool2d_nan_wins_like_torch(torch_mod):
    x = rng.standard_normal((1, 1, 4, 4))
    x[0, 0, 0, 1] = np.nan
    x[0, 0, 3, 3] = np.nan
    xt = tg.tensor(x, requires_grad=True)
    xr = torch_mod.tensor(x, requires_grad=True)
    out, ref = F.max_pool2d(xt, 2), torch_mod.nn.functional.max_pool2d(xr, 2)
    np.testing.assert_array_equal(np.isnan(out._data), np.isnan(ref.detach().numpy()))
    out.sum().backward()
    ref.sum().backward()
    np.testing.assert_array_equal(xt.grad._data, xr.grad.numpy())


def test_conv_and_pool_results_are_channels_last_views():
    """Note [Channels-last convolution]: results are NHWC in memory, (N, C, H, W) in shape."""
    y = F.max_pool2d(F.conv2d(tg.randn(2, 3, 6, 6), tg.randn(4, 3, 3, 3), padding=1), 2)
    assert y.shape == (2, 4, 3, 3)
    assert y._data.transpose(0, 2, 3, 1).flags.c_contiguous


def test_softplus_module_matches_torch(torch_mod):
    x = np.linspace(-30, 30, 13)
    ours = tg.tensor(x, dtype=tg.float64, requires_grad=True)
    theirs = torch_mod.tensor(x, requires_grad=True)
    a = tg.nn.Softplus(beta=2.0, threshold=5.0)(ours)
    b = torch_mod.nn.Softplus(beta=2.0, threshold=5.0)(theirs)
    np.testing.assert_allclose(a.detach().numpy(), b.detach().numpy(), rtol=1e-10)
    a.sum().backward()
    b.sum().backward()
    np.testing.assert_allclose(ours.grad.numpy(), theirs.grad.numpy(), rtol=1e-10)


@pytest.mark.parametrize("op", ["max_pool2d", "avg_pool2d"])
@pytest.mark.parametrize(
    "kwargs",
    [{"kernel_size": 0}, {"kernel_size": 2, "padding": -1}, {"kernel_size": 2, "stride": 0}],
)
def test_pool2d_bad_geometry_raises_runtime_error_like_torch(op, kwargs, torch_mod):
    # The 2-D pools had their own geometry code raising ValueError; torch raises RuntimeError.
    x = np.zeros((1, 1, 4, 4), np.float32)
    with pytest.raises(RuntimeError):
        getattr(torch_mod.nn.functional, op)(torch_mod.tensor(x), **kwargs)
    with pytest.raises(RuntimeError, match=op):
        getattr(tg.nn.functional, op)(tg.tensor(x), **kwargs)
