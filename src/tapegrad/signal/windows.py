"""``tapegrad.signal.windows`` and the top-level ``hann_window`` family: window functions.

Every window is a creation function (no gradient flows into it; ``requires_grad=True`` makes
a leaf). They follow ``torch/signal/windows/windows.py``: ``sym=True`` gives the symmetric
window (for filter design), ``sym=False`` the periodic one (for spectral analysis: the
symmetric window of ``M + 1`` points without its last). The cosine-sum windows (hann,
hamming, blackman, nuttall, general_hamming) are rows of coefficients for
:func:`general_cosine`. Values are computed in ``dtype`` (float32 or float64; the default
dtype when None) the way torch computes them (its two-sided linspace, then the formula), so
that float32 windows agree to the last bit where it matters (blackman's ends are −1.49e-8).

>>> import tapegrad as tg
>>> tg.signal.windows.hann(5)
tensor([0.0000, 0.5000, 1.0000, 0.5000, 0.0000])
>>> tg.hann_window(4)
tensor([0.0000, 0.5000, 1.0000, 0.5000])
"""

from __future__ import annotations

import math
from collections.abc import Iterable

import numpy as np

from .. import _dtypes
from ..ops._linspace import linspace_values
from ..tensor import Tensor

__all__ = [
    "bartlett",
    "blackman",
    "cosine",
    "exponential",
    "gaussian",
    "general_cosine",
    "general_hamming",
    "hamming",
    "hann",
    "kaiser",
    "nuttall",
]

#: The cosine-sum windows: name -> coefficients a_i of Σ (−1)^i a_i cos(2π i n / N).
COSINE_SUMS = {
    "hann": (0.5, 0.5),
    "hamming": (0.54, 0.46),
    "blackman": (0.42, 0.5, 0.08),
    "nuttall": (0.3635819, 0.4891775, 0.1365995, 0.0106411),
}


def _check(name, M, dtype, layout):
    """torch's ``_window_function_checks``; returns the NumPy dtype."""
    dtype = _dtypes.get_default_dtype() if dtype is None else _dtypes.to_dtype(dtype)
    if not isinstance(M, (int, np.integer)) or isinstance(M, bool):
        raise TypeError(f"{name}: the window length M must be an int, got {type(M).__name__}")
    if M < 0:
        raise ValueError(f"{name} requires non-negative window length, got M={M}")
    if layout is not None and str(layout) not in ("strided", "torch.strided"):
        raise ValueError(f"{name} is implemented for strided tensors only, got: {layout}")
    if dtype not in (_dtypes.float32, _dtypes.float64):
        raise ValueError(f"{name} expects float32 or float64 dtypes, got: {dtype}")
    return dtype


def _finish(values, dtype, requires_grad):
    t = Tensor._wrap(np.ascontiguousarray(values, dtype=dtype))
    if requires_grad:
        t.requires_grad_(True)
    return t


def _n(M, sym):
    """The period: ``M - 1`` for a symmetric window, ``M`` for a periodic one."""
    return M - 1 if sym else M


def _trivial(M, dtype, requires_grad):
    """The windows of length 0 (empty) and 1 (``[1.]``), or None."""
    if M <= 1:
        return _finish(np.ones(M), dtype, requires_grad)
    return None


def general_cosine(
    M, *, a, sym=True, dtype=None, layout=None, device=None, requires_grad=False
) -> Tensor:
    """w_n = Σ_i (−1)^i a_i cos(2π i n / N), N = M − 1 (``sym``) or M."""
    dtype = _check("general_cosine", M, dtype, layout)
    if (t := _trivial(M, dtype, requires_grad)) is not None:
        return t
    if not isinstance(a, Iterable):
        raise TypeError("general_cosine: Coefficients must be a list/tuple")
    a = [float(w) for w in a]
    if not a:
        raise ValueError("general_cosine: Coefficients cannot be empty")
    k = linspace_values(0, (M - 1) * (2 * math.pi / _n(M, sym)), M, dtype)
    a_i = np.array([(-1) ** i * w for i, w in enumerate(a)], dtype)
    i = np.arange(len(a), dtype=dtype)
    return _finish((a_i[:, None] * np.cos(i[:, None] * k)).sum(0), dtype, requires_grad)


def general_hamming(
    M, *, alpha=0.54, sym=True, dtype=None, layout=None, device=None, requires_grad=False
) -> Tensor:
    """w_n = α − (1 − α) cos(2π n / N)."""
    return general_cosine(
        M, a=(alpha, 1.0 - alpha), sym=sym, dtype=dtype, layout=layout, requires_grad=requires_grad
    )


def _cosine_sum(name):
    coefficients = COSINE_SUMS[name]

    def window(M, *, sym=True, dtype=None, layout=None, device=None, requires_grad=False):
        _check(name, M, dtype, layout)
        return general_cosine(
            M, a=coefficients, sym=sym, dtype=dtype, layout=layout, requires_grad=requires_grad
        )

    window.__name__ = window.__qualname__ = name
    window.__doc__ = f"The {name} window: :func:`general_cosine` with a = {coefficients}."
    return window


hann, hamming, blackman, nuttall = (_cosine_sum(name) for name in COSINE_SUMS)


def bartlett(M, *, sym=True, dtype=None, layout=None, device=None, requires_grad=False) -> Tensor:
    """The triangular window 1 − |2n/N − 1|."""
    dtype = _check("bartlett", M, dtype, layout)
    if (t := _trivial(M, dtype, requires_grad)) is not None:
        return t
    k = linspace_values(-1, -1 + (M - 1) * (2 / _n(M, sym)), M, dtype)
    return _finish(1 - np.abs(k), dtype, requires_grad)


def cosine(M, *, sym=True, dtype=None, layout=None, device=None, requires_grad=False) -> Tensor:
    """The sine window sin(π (n + ½) / M') with M' = M (``sym``) or M + 1."""
    dtype = _check("cosine", M, dtype, layout)
    if M == 0:
        return _finish(np.ones(0), dtype, requires_grad)
    constant = math.pi / (M + 1 if not sym and M > 1 else M)
    k = linspace_values(0.5 * constant, (0.5 + (M - 1)) * constant, M, dtype)
    return _finish(np.sin(k), dtype, requires_grad)


def exponential(
    M, *, center=None, tau=1.0, sym=True, dtype=None, layout=None, device=None, requires_grad=False
) -> Tensor:
    """The Poisson window exp(−|n − center| / tau); ``center`` defaults to the middle."""
    dtype = _check("exponential", M, dtype, layout)
    if tau <= 0:
        raise ValueError(f"exponential: Tau must be positive, got: {tau} instead.")
    if sym and center is not None:
        raise ValueError("exponential: Center must be None for symmetric windows")
    if M == 0:
        return _finish(np.ones(0), dtype, requires_grad)
    if center is None:
        center = (M if not sym and M > 1 else M - 1) / 2.0
    k = linspace_values(-center / tau, (-center + (M - 1)) / tau, M, dtype)
    return _finish(np.exp(-np.abs(k)), dtype, requires_grad)


def gaussian(
    M, *, std=1.0, sym=True, dtype=None, layout=None, device=None, requires_grad=False
) -> Tensor:
    """exp(−½ ((n − c) / std)²) around the middle c."""
    dtype = _check("gaussian", M, dtype, layout)
    if std <= 0:
        raise ValueError(f"gaussian: Standard deviation must be positive, got: {std} instead.")
    if M == 0:
        return _finish(np.ones(0), dtype, requires_grad)
    start = -(M if not sym and M > 1 else M - 1) / 2.0
    constant = 1 / (std * math.sqrt(2))
    k = linspace_values(start * constant, (start + (M - 1)) * constant, M, dtype)
    return _finish(np.exp(-(k**2)), dtype, requires_grad)


def kaiser(
    M, *, beta=12.0, sym=True, dtype=None, layout=None, device=None, requires_grad=False
) -> Tensor:
    """I0(β √(1 − (2n/N − 1)²)) / I0(β)."""
    dtype = _check("kaiser", M, dtype, layout)
    if beta < 0:
        raise ValueError(f"kaiser: beta must be non-negative, got: {beta} instead.")
    if (t := _trivial(M, dtype, requires_grad)) is not None:
        return t
    b = dtype.type(beta)
    k = linspace_values(-b, min(b, -b + (M - 1) * (2.0 * b / _n(M, sym))), M, dtype)
    with np.errstate(invalid="ignore"):
        out = np.i0(np.sqrt(b * b - k * k).astype(dtype)) / np.i0(b)
    return _finish(out, dtype, requires_grad)


# -- torch.hann_window & co.: ``periodic=True`` is ``sym=False`` ------------------------------


def _top_level_dtype(name, dtype):
    dtype = _dtypes.get_default_dtype() if dtype is None else _dtypes.to_dtype(dtype)
    if dtype.kind != "f":
        raise RuntimeError(f"{name} expects floating point dtypes, got: {dtype}")
    return dtype


def hann_window(
    window_length, periodic=True, *, dtype=None, layout=None, device=None, requires_grad=False
) -> Tensor:
    """torch.hann_window: 0.5 − 0.5 cos(2π n / N); ``periodic`` drops the symmetric
    window's last point."""
    dtype = _top_level_dtype("hann_window", dtype)
    return hann(window_length, sym=not periodic, dtype=dtype, requires_grad=requires_grad)


def hamming_window(
    window_length,
    periodic=True,
    alpha=0.54,
    beta=0.46,
    *,
    dtype=None,
    layout=None,
    device=None,
    requires_grad=False,
) -> Tensor:
    """torch.hamming_window: α − β cos(2π n / N)."""
    dtype = _top_level_dtype("hamming_window", dtype)
    return general_cosine(
        window_length, a=(alpha, beta), sym=not periodic, dtype=dtype, requires_grad=requires_grad
    )


def blackman_window(
    window_length, periodic=True, *, dtype=None, layout=None, device=None, requires_grad=False
) -> Tensor:
    """torch.blackman_window: 0.42 − 0.5 cos(2π n / N) + 0.08 cos(4π n / N)."""
    dtype = _top_level_dtype("blackman_window", dtype)
    return blackman(window_length, sym=not periodic, dtype=dtype, requires_grad=requires_grad)


def bartlett_window(
    window_length, periodic=True, *, dtype=None, layout=None, device=None, requires_grad=False
) -> Tensor:
    """torch.bartlett_window: the triangular window 1 − |2n/N − 1|."""
    dtype = _top_level_dtype("bartlett_window", dtype)
    return bartlett(window_length, sym=not periodic, dtype=dtype, requires_grad=requires_grad)


def kaiser_window(
    window_length,
    periodic=True,
    beta=12.0,
    *,
    dtype=None,
    layout=None,
    device=None,
    requires_grad=False,
) -> Tensor:
    """torch.kaiser_window: I0(β √(1 − (2n/N − 1)²)) / I0(β)."""
    dtype = _top_level_dtype("kaiser_window", dtype)
    return kaiser(
        window_length, beta=beta, sym=not periodic, dtype=dtype, requires_grad=requires_grad
    )
