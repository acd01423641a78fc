"""Tests for condition mutants that no test flipped (tools/weakmut.py, list C), the second
part: pooling (nn/_pool_fractional.py, _pool_more.py, _pool_nd.py) and conv3d's padding
path (nn/_conv_more.py); and the bugs found on the way, fixed: max_pool2d's indices with a
large dilation, max_unpool's output_size of k + 1 entries, adaptive max pooling to size 0
and adaptive pooling to the input's own size returning the input itself.
"""

import warnings

import numpy as np
import pytest

import tapegrad as tg
import tapegrad.nn.functional as F


def _both(torch_mod, *arrays):
    """The same float32 arrays as a torch and a tapegrad tensor each."""
    return [torch_mod.tensor(a) for a in arrays], [tg.tensor(a) for a in arrays]


def _close(got, want, tol=1e-6):
    np.testing.assert_allclose(got.detach().numpy(), want.detach().numpy(), rtol=tol, atol=tol)


# -- pooling ----------------------------------------------------------------------------------


def _fractional(lib, x, output_size):
    samples = lib.tensor(np.full((1, 1, 2), 0.3, np.float32))
    return lib.nn.functional.fractional_max_pool2d(
        x, 2, output_size=output_size, _random_samples=samples
    )


@pytest.mark.parametrize("output_size", [(1, 1), (1, 3), (2, 1)])
def test_fractional_max_pool_to_size_one_matches_torch_without_warnings(torch_mod, output_size):
    """_pool_fractional.py:40 and :46: an output of 1 along a dim is the last window only
    (no step between windows to compute, no 0/0)."""
    x = np.random.default_rng(0).standard_normal((1, 1, 4, 5)).astype(np.float32)
    (tx,), (gx,) = _both(torch_mod, x)
    with warnings.catch_warnings():
        warnings.simplefilter("error")
        got = _fractional(tg, gx, output_size)
    _close(got, _fractional(torch_mod, tx, output_size))


def test_fractional_max_pool_to_size_zero_is_empty_like_torch(torch_mod):
    """_pool_fractional.py:46: an output size 0 along a dim gives an empty result."""
    x = np.ones((1, 1, 4, 4), np.float32)
    (tx,), (gx,) = _both(torch_mod, x)
    got, want = _fractional(tg, gx, (0, 2)), _fractional(torch_mod, tx, (0, 2))
    assert tuple(got.shape) == tuple(want.shape) == (1, 1, 0, 2)


@pytest.mark.parametrize("op", ["adaptive_avg_pool1d", "adaptive_max_pool1d"])
@pytest.mark.parametrize(("n", "o"), [(4, 0), (1, 2)])
def test_adaptive_pool1d_to_zero_or_from_one_matches_torch(torch_mod, op, n, o):
    """_pool_more.py:90: an output of 0 is empty, and one input element repeats."""
    x = np.arange(n, dtype=np.float32).reshape(1, 1, n) + 1
    (tx,), (gx,) = _both(torch_mod, x)
    got, want = getattr(F, op)(gx, o), getattr(torch_mod.nn.functional, op)(tx, o)
    assert tuple(got.shape) == tuple(want.shape)
    _close(got, want)


def test_max_unpool_output_size_of_k_plus_one_entries_raises_like_torch(torch_mod):
    """_pool_nd.py:271: output_size has k or k + 2 entries; torch raises a ValueError for
    k + 1 (here (C, H, W) for max_unpool2d)."""
    for lib in (torch_mod, tg):
        x, idx = lib.ones(1, 2, 2, 2), lib.zeros(1, 2, 2, 2, dtype=lib.int64)
        with pytest.raises(ValueError, match="should be a sequence containing 2 or 4"):
            lib.nn.functional.max_unpool2d(x, idx, 2, output_size=(2, 4, 4))
        assert tuple(lib.nn.functional.max_unpool2d(x, idx, 2, output_size=(1, 2, 4, 4)).shape) == (
            1, 2, 4, 4,
        )  # fmt: skip


def test_max_pool_padding_of_half_the_kernel_like_torch(torch_mod):
    """_pool_nd.py:78: pad <= ((k − 1)·d + 1) // 2: kernel 2 takes pad 1, kernel 3 not
    pad 2."""
    x = np.arange(4, dtype=np.float32).reshape(1, 1, 4)
    (tx,), (gx,) = _both(torch_mod, x)
    _close(F.max_pool1d(gx, 2, padding=1), torch_mod.nn.functional.max_pool1d(tx, 2, padding=1))
    for lib, t in ((torch_mod, tx), (tg, gx)):
        with pytest.raises(RuntimeError, match="pad"):
            lib.nn.functional.max_pool1d(t, 3, padding=2)


def test_max_pool2d_indices_with_a_large_dilation_match_torch(torch_mod):
    """A bug, fixed: the tap index of a kernel of under 256 taps is a uint8, and its row
    times the dilation (2 · 200) wrapped at 256 before the flat index was formed."""
    x = np.random.default_rng(0).standard_normal((1, 1, 401, 3)).astype(np.float32)
    (tx,), (gx,) = _both(torch_mod, x)
    kw = {"kernel_size": (3, 1), "dilation": (200, 1), "return_indices": True}
    got, want = F.max_pool2d(gx, **kw), torch_mod.nn.functional.max_pool2d(tx, **kw)
    _close(got[0], want[0])
    np.testing.assert_array_equal(got[1].numpy(), want[1].numpy())


def test_conv3d_padding_only_the_height_and_width_pads_no_depth(torch_mod, monkeypatch):
    """_conv_more.py:115: conv3d pads the depth itself only when its depth padding is not
    zero (the plane-wise conv2d pads height and width); the same values, so the path is
    checked with the explicit pad made to fail."""
    from tapegrad.nn import _conv_more

    def no_pad(*args, **kwargs):
        raise AssertionError("depth padded by zero")

    monkeypatch.setattr(_conv_more, "_pad", no_pad)
    rng = np.random.default_rng(0)
    x = rng.standard_normal((1, 2, 3, 4, 4)).astype(np.float32)
    w = rng.standard_normal((3, 2, 2, 3, 3)).astype(np.float32)
    (tx, tw), (gx, gw) = _both(torch_mod, x, w)
    want = torch_mod.nn.functional.conv3d(tx, tw, padding=(0, 1, 1))
    _close(F.conv3d(gx, gw, padding=(0, 1, 1)), want, tol=1e-5)


@pytest.mark.parametrize(
    ("op", "shape"),
    [
        ("adaptive_avg_pool2d", (1, 1, 2, 3)),
        ("adaptive_max_pool2d", (1, 1, 2, 3)),
        ("adaptive_max_pool1d", (1, 1, 3)),
        ("adaptive_avg_pool3d", (1, 1, 2, 2, 3)),
    ],
)
def test_adaptive_pool_to_the_input_size_returns_a_new_tensor_like_torch(torch_mod, op, shape):
    """A bug, fixed: pooling to the input's own size returned the input itself; torch's
    result is a new tensor (writing into it leaves the input alone, also for a leaf that
    requires grad)."""
    x = np.arange(np.prod(shape), dtype=np.float32).reshape(shape)
    for lib in (torch_mod, tg):
        t = lib.tensor(x, requires_grad=True)
        out = getattr(lib.nn.functional, op)(t, shape[2:])
        assert out is not t
        out.mul_(2)
        out.sum().backward()
        np.testing.assert_array_equal(t.detach().numpy(), x)
        np.testing.assert_array_equal(t.grad.numpy(), np.full_like(x, 2))
