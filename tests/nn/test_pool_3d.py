"""3-D pools, unpooling, fractional max pooling and conv_transpose3d against torch: values,
indices, gradients and (through tests/_second_order.py) the double backward."""

import numpy as np
import pytest

import tapegrad as tg
import tapegrad.nn.functional as F
from tapegrad.autograd import gradgradcheck

from .._second_order import check_against_torch
from ._compare import compare_module

rng = np.random.default_rng(103)


def _fm(m):
    return m.nn.functional


def _distinct(shape):
    """Values with no ties (the first maximum is the only one, so indices are unambiguous)."""
    return rng.permutation(int(np.prod(shape))).reshape(shape) / 7.0 - 3.0


MAX3D = [
    ((2,), {}, (1, 2, 4, 4, 6)),
    ((3, 2, 1), {"ceil_mode": True}, (2, 1, 5, 6, 5)),
    (((2, 3, 1), (1, 2, 2), (1, 1, 0)), {"dilation": (1, 1, 2)}, (3, 4, 5, 6)),
]


@pytest.mark.parametrize(("args", "kw", "shape"), MAX3D, ids=[str(c[:2]) for c in MAX3D])
def test_max_pool3d_matches_torch(args, kw, shape, torch_mod):
    x = _distinct(shape)
    check_against_torch(lambda m, a: _fm(m).max_pool3d(a, *args, **kw), [x], torch_mod)
    a, ia = F.max_pool3d(tg.tensor(x), *args, return_indices=True, **kw)
    b, ib = torch_mod.nn.functional.max_pool3d(
        torch_mod.tensor(x), *args, return_indices=True, **kw
    )
    np.testing.assert_array_equal(ia.numpy(), ib.numpy())
    assert ia.dtype == tg.int64
    # indices feed max_unpool3d, which puts the maxima back (or refuses the size, as torch)
    size = shape[-3:]
    try:
        ref = torch_mod.nn.functional.max_unpool3d(b, ib, *args[:3], output_size=size)
    except ValueError:
        with pytest.raises(ValueError, match="output_size"):
            F.max_unpool3d(a, ia, *args[:3], output_size=size)
    else:
        back = F.max_unpool3d(a, ia, *args[:3], output_size=size)
        np.testing.assert_array_equal(back.numpy(), ref.numpy())


AVG3D = [
    ((2,), {}),
    ((3, 2, 1), {"ceil_mode": True, "count_include_pad": False}),
    (((2, 3, 2), (1, 2, 1), (1, 1, 0)), {"ceil_mode": True, "divisor_override": 3}),
]


@pytest.mark.parametrize(("args", "kw"), AVG3D, ids=[str(c) for c in AVG3D])
def test_avg_pool3d_matches_torch(args, kw, torch_mod):
    x = rng.standard_normal((2, 2, 5, 4, 6))
    check_against_torch(lambda m, a: _fm(m).avg_pool3d(a, *args, **kw), [x], torch_mod)


@pytest.mark.parametrize("size", [(2, 3, 1), 2, (None, 2, None)])
def test_adaptive_3d_pools_match_torch(size, torch_mod):
    x = _distinct((2, 3, 5, 4, 6))
    check_against_torch(lambda m, a: _fm(m).adaptive_avg_pool3d(a, size), [x], torch_mod)
    check_against_torch(lambda m, a: _fm(m).adaptive_max_pool3d(a, size), [x], torch_mod)
    _, ia = F.adaptive_max_pool3d(tg.tensor(x), size, return_indices=True)
    _, ib = torch_mod.nn.functional.adaptive_max_pool3d(
        torch_mod.tensor(x), size, return_indices=True
    )
    np.testing.assert_array_equal(ia.numpy(), ib.numpy())


@pytest.mark.parametrize("k", [1, 2, 3])
def test_max_unpool_matches_torch(k, torch_mod):
    """Values back at their positions, zeros elsewhere; the gradient gathers (with
    overlapping windows an index may repeat: every copy gets the gradient there)."""
    shape = (2, 3) + (7, 6, 5)[:k]
    x = torch_mod.tensor(_distinct(shape))
    pool = getattr(torch_mod.nn.functional, f"max_pool{k}d")
    y, idx = pool(x, 3, 2, 1, return_indices=True)
    unpool = f"max_unpool{k}d"

    def fn(m, v):
        return getattr(_fm(m), unpool)(v, m.tensor(idx.numpy()), 3, 2, 1, output_size=shape[2:])

    check_against_torch(fn, [y.numpy()], torch_mod)
    with pytest.raises(RuntimeError, match="invalid max index"):
        getattr(F, unpool)(tg.tensor(y.numpy()), tg.tensor(idx.numpy() + 1000), 3, 2, 1)
    with pytest.raises(ValueError, match="output_size"):
        getattr(F, unpool)(tg.tensor(y.numpy()), tg.tensor(idx.numpy()), 3, 2, 1, (1,) * k)


@pytest.mark.parametrize(
    ("shape", "kernel", "kw"),
    [
        ((2, 3, 9, 9), 3, {"output_size": (4, 3)}),
        ((3, 9, 11), (2, 3), {"output_ratio": (0.5, 0.5)}),
        ((2, 2, 6, 6, 7), (2, 3, 2), {"output_size": 3}),
        ((1, 1, 8, 7, 6), (4, 3, 2), {"output_ratio": (0.5, 0.5, 0.5)}),
    ],
)
def test_fractional_max_pool_matches_torch_given_the_samples(shape, kernel, kw, torch_mod):
    k = 3 if len(shape) == 5 else 2  # (3, 9, 11) is an unbatched 2-D input
    n = shape[0] if len(shape) == k + 2 else 1
    u = rng.uniform(size=(n, shape[-k - 1], k))
    fn = lambda m, a: getattr(_fm(m), f"fractional_max_pool{k}d")(  # noqa: E731
        a, kernel, return_indices=True, _random_samples=m.tensor(u), **kw
    )
    x = _distinct(shape)
    check_against_torch(fn, [x], torch_mod)
    ia = fn(tg, tg.tensor(x))[1]
    ib = fn(torch_mod, torch_mod.tensor(x))[1]
    np.testing.assert_array_equal(ia.numpy(), ib.numpy())


def test_fractional_max_pool_draws_fresh_samples_and_checks_sizes():
    x = tg.randn(1, 2, 9, 9)
    a = F.fractional_max_pool2d(x, 2, output_size=4)
    assert tuple(a.shape) == (1, 2, 4, 4)
    with pytest.raises(ValueError, match="output_size or an output_ratio"):
        F.fractional_max_pool2d(x, 2)
    with pytest.raises(RuntimeError, match="too large"):
        F.fractional_max_pool2d(x, 5, output_size=6)
    # as torch: output + kernel - 1 may reach the input size in 2-D, not in 3-D
    assert tuple(F.fractional_max_pool2d(tg.randn(1, 1, 5, 9), (3, 1), (3, 2)).shape)[-2:] == (3, 2)
    with pytest.raises(RuntimeError, match="pool time 3 too large"):
        F.fractional_max_pool3d(tg.randn(1, 1, 5, 9, 9), (3, 1, 1), (3, 2, 2))


def test_conv_transpose3d_matches_torch_to_second_order(torch_mod):
    x = rng.standard_normal((2, 4, 3, 3, 2))
    w = rng.standard_normal((4, 1, 2, 3, 2))
    b = rng.standard_normal(2)
    kw = dict(stride=(2, 1, 2), padding=(1, 1, 0), output_padding=(1, 0, 1), groups=2,
              dilation=(1, 2, 1))  # fmt: skip
    fn = lambda m, x, w, b: _fm(m).conv_transpose3d(x, w, b, **kw)  # noqa: E731
    check_against_torch(fn, [x, w, b], torch_mod)
    xs = [tg.tensor(a, requires_grad=True) for a in (x[:1, :, :2], w, b)]
    assert gradgradcheck(lambda *a: fn(tg, *a), xs)


MODULES = [
    ("MaxPool3d", (2,), {}, (2, 3, 4, 4, 4)),
    ("MaxPool3d", ((2, 3, 1), 1, (1, 1, 0)), {"ceil_mode": True}, (3, 5, 4, 3)),
    ("AvgPool3d", (3, 2, 1), {"count_include_pad": False}, (2, 3, 5, 5, 4)),
    ("AdaptiveAvgPool3d", ((2, None, 3),), {}, (2, 3, 5, 4, 6)),
    ("AdaptiveMaxPool3d", (2,), {}, (2, 3, 5, 4, 6)),
    ("ConvTranspose3d", (3, 4, 3), {"stride": 2, "padding": 1}, (2, 3, 2, 3, 2)),
    ("ConvTranspose3d", (4, 2, (2, 1, 3)), {"groups": 2, "bias": False}, (4, 3, 2, 2)),
    ("ChannelShuffle", (3,), {}, (2, 6, 3, 2)),
]


@pytest.mark.parametrize("case", MODULES, ids=[f"{c[0]}-{i}" for i, c in enumerate(MODULES)])
def test_modules_match_torch(case, torch_mod):
    name, args, kwargs, shape = case
    ours = getattr(tg.nn, name)(*args, **kwargs)
    theirs = getattr(torch_mod.nn, name)(*args, **kwargs).double()
    ours.to(tg.float64)
    assert repr(ours) == repr(theirs)
    compare_module(ours, theirs, torch_mod, _distinct(shape))


def test_unpool_and_fractional_modules_match_torch(torch_mod):
    x = _distinct((2, 3, 6, 7))
    pool, unpool = tg.nn.MaxPool2d(2, return_indices=True), tg.nn.MaxUnpool2d(2)
    y, idx = pool(tg.tensor(x))
    tp, tu = torch_mod.nn.MaxPool2d(2, return_indices=True), torch_mod.nn.MaxUnpool2d(2)
    ty, tidx = tp(torch_mod.tensor(x))
    assert repr(unpool) == repr(tu)
    got = unpool(y, idx, output_size=(6, 7))
    np.testing.assert_array_equal(got.numpy(), tu(ty, tidx, output_size=(6, 7)).numpy())
    u = rng.uniform(size=(2, 3, 2))
    ours = tg.nn.FractionalMaxPool2d(2, output_size=3, _random_samples=tg.tensor(u))
    theirs = torch_mod.nn.FractionalMaxPool2d(2, output_size=3, _random_samples=torch_mod.tensor(u))
    np.testing.assert_array_equal(ours(tg.tensor(x)).numpy(), theirs(torch_mod.tensor(x)).numpy())


def test_nan_picks_the_last_nan_of_a_window_as_torch(torch_mod):
    """PyTorch's CPU kernels keep a window's last NaN (``val > max || isnan(val)``): the
    index, and so the gradient, goes there."""
    x = rng.standard_normal((1, 2, 4, 4, 4))
    for pos in ((0, 0, 0, 1), (0, 1, 1, 0), (1, 3, 3, 3), (1, 2, 3, 3), (1, 2, 2, 3)):
        x[(0,) + pos] = np.nan
    u = rng.uniform(size=(1, 2, 3))
    calls = [
        ("max_pool3d", (2,), {}),
        ("max_pool3d", (3, 1, 1), {}),
        ("adaptive_max_pool3d", ((3, 2, 3),), {}),
        ("fractional_max_pool3d", (2,), {"output_size": 2}),
    ]
    for fn, args, kw in calls:
        kt = dict(kw, _random_samples=torch_mod.tensor(u)) if fn.startswith("frac") else kw
        ko = dict(kw, _random_samples=tg.tensor(u)) if fn.startswith("frac") else kw
        b, ib = getattr(torch_mod.nn.functional, fn)(
            torch_mod.tensor(x), *args, return_indices=True, **kt
        )
        a, ia = getattr(F, fn)(tg.tensor(x), *args, return_indices=True, **ko)
        np.testing.assert_array_equal(ia.numpy(), ib.numpy(), err_msg=fn)
        np.testing.assert_array_equal(a.numpy(), b.numpy(), err_msg=fn)


@pytest.mark.parametrize(
    "kernel, stride, padding",
    [(2, 2, 0), (2, 1, 0), (3, 2, 1)],  # the tiled path, overlapping windows, padding
)
def test_max_pool2d_picks_the_last_nan_of_a_window_as_torch(torch_mod, kernel, stride, padding):
    torch = torch_mod
    # Regression: tapegrad picked the first NaN (index and gradient differed from torch's).
    rng = np.random.default_rng(0)
    x = rng.standard_normal((2, 3, 6, 6))
    x[rng.random(x.shape) < 0.3] = np.nan
    tt = torch.tensor(x, requires_grad=True)
    o_t, i_t = torch.nn.functional.max_pool2d(tt, kernel, stride, padding, return_indices=True)
    o_t.sum().backward()
    tg_x = tg.tensor(x, requires_grad=True)
    o, i = tg.nn.functional.max_pool2d(tg_x, kernel, stride, padding, return_indices=True)
    o.sum().backward()
    np.testing.assert_array_equal(i.numpy(), i_t.numpy())
    np.testing.assert_array_equal(o.detach().numpy(), o_t.detach().numpy())
    np.testing.assert_array_equal(tg_x.grad.numpy(), tt.grad.numpy())


@pytest.mark.parametrize(
    "name, call",
    [
        ("max_pool3d", lambda F, x: F.max_pool3d(x, 1)),
        ("avg_pool3d", lambda F, x: F.avg_pool3d(x, 1)),
        ("max_pool1d", lambda F, x: F.max_pool1d(x[0][0], 1)),
    ],
)
def test_pooling_a_non_tensor_is_a_type_error_naming_the_op(name, call, torch_mod):
    # As torch (TypeError), with the op's name rather than Python's internal text.
    x = [[[[[1.0, 2.0], [3.0, 4.0]]]]]
    with pytest.raises(TypeError):
        call(torch_mod.nn.functional, x)
    with pytest.raises(TypeError, match=f"{name}: input must be a Tensor, got list"):
        call(tg.nn.functional, x)
