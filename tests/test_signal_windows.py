"""tg.signal.windows and tg.{hann,hamming,bartlett,blackman,kaiser}_window against torch."""

import numpy as np
import pytest

import tapegrad as tg

WINDOWS = {
    "hann": {},
    "hamming": {},
    "blackman": {},
    "nuttall": {},
    "bartlett": {},
    "cosine": {},
    "gaussian": {"std": 0.7},
    "exponential": {"tau": 2.5},
    "kaiser": {"beta": 4.0},
    "general_hamming": {"alpha": 0.6},
    "general_cosine": {"a": [0.46, 0.23, 0.31]},
}


def _same(ours, ref, rtol=1e-6, atol=1e-7):
    assert ours.dtype == np.dtype(str(ref.dtype).rsplit(".", 1)[-1])
    assert tuple(ours.shape) == tuple(ref.shape)
    np.testing.assert_allclose(ours.detach().numpy(), ref.detach().numpy(), rtol=rtol, atol=atol)


@pytest.mark.parametrize("name", sorted(WINDOWS))
@pytest.mark.parametrize("M", [0, 1, 2, 5, 10])
@pytest.mark.parametrize("sym", [True, False])
@pytest.mark.parametrize("dtype", ["float32", "float64"])
def test_windows_match_torch(torch_mod, name, M, sym, dtype):
    kw = dict(WINDOWS[name], sym=sym)
    ours = getattr(tg.signal.windows, name)(M, dtype=getattr(tg, dtype), **kw)
    ref = getattr(torch_mod.signal.windows, name)(M, dtype=getattr(torch_mod, dtype), **kw)
    _same(ours, ref, atol=1e-7 if dtype == "float32" else 1e-12)


def test_window_keywords():
    w = tg.signal.windows.hann(4, requires_grad=True, device="cpu", layout=tg.strided)
    assert w.requires_grad and w.is_leaf and w.dtype == tg.float32
    assert tg.signal.windows.exponential(5, center=1.0, sym=False).shape == (5,)


@pytest.mark.parametrize(
    "call,exc,match",
    [
        (lambda: tg.signal.windows.hann(-1), ValueError, "non-negative"),
        (lambda: tg.signal.windows.hann(3, dtype=tg.int64), ValueError, "float32 or float64"),
        (lambda: tg.signal.windows.gaussian(3, std=0.0), ValueError, "positive"),
        (lambda: tg.signal.windows.exponential(3, center=1.0), ValueError, "Center"),
        (lambda: tg.signal.windows.kaiser(3, beta=-1.0), ValueError, "non-negative"),
        (lambda: tg.signal.windows.general_cosine(3, a=[]), ValueError, "empty"),
        (lambda: tg.hann_window(3, dtype=tg.int64), RuntimeError, "floating point"),
    ],
)
def test_window_errors(call, exc, match):
    with pytest.raises(exc, match=match):
        call()


@pytest.mark.parametrize(
    "name,kw",
    [
        ("hann_window", {}),
        ("hamming_window", {}),
        ("hamming_window", {"alpha": 0.5, "beta": 0.4}),
        ("bartlett_window", {}),
        ("blackman_window", {}),
        ("kaiser_window", {"beta": 5.0}),
    ],
)
@pytest.mark.parametrize("n", [0, 1, 2, 7, 16])
@pytest.mark.parametrize("periodic", [True, False])
@pytest.mark.parametrize("dtype", ["float32", "float64"])
def test_top_level_windows_match_torch(torch_mod, name, kw, n, periodic, dtype):
    args = (n, periodic, *kw.values())
    ours = getattr(tg, name)(*args, dtype=getattr(tg, dtype))
    ref = getattr(torch_mod, name)(*args, dtype=getattr(torch_mod, dtype))
    _same(ours, ref, rtol=1e-5 if dtype == "float32" else 1e-10, atol=1e-6)
