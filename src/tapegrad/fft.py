"""``tg.fft``: the discrete Fourier transforms tapegrad can represent.

tapegrad has no complex dtype, so only the transforms whose input and output are both
real exist here: ``irfft`` and ``hfft`` of a real 1-D signal along ``dim`` (the input read
as the real half-spectrum of a Hermitian signal, as PyTorch does for real input), with
``norm=`` and gradients of any order, plus ``fftfreq``, ``rfftfreq``, ``fftshift`` and
``ifftshift``. The transforms that return complex tensors (``fft``, ``ifft``, ``rfft``,
``ihfft`` and the 2-D / n-D ones) raise ``NotImplementedError`` saying so.

For a real input x of m bins and output length n, ``irfft`` is
    y_t = s · Σ_k c_k x_k cos(2π k t / n),   c_k = 1 for k = 0 and k = n/2, else 2,
with s = 1/n ('backward'), 1/√n ('ortho') or 1 ('forward'); ``hfft`` is the same with
the norm swapped ('backward' ↔ 'forward'). Its adjoint, the backward rule, is
    g_x = s · c_k · Re(rfft(g))_k   (cut or zero-padded to m bins),
and the adjoint's own backward is the forward transform again.

>>> import tapegrad as tg
>>> tg.fft.irfft(tg.tensor([4.0, 0.0, 0.0]))
tensor([1., 1., 1., 1.])
"""

from __future__ import annotations

import numpy as np

from . import _dtypes
from .autograd.graph import make_result
from .ops._util import as_tensor
from .tensor import Tensor, _check_dim

__all__ = [
    "irfft",
    "hfft",
    "fftfreq",
    "rfftfreq",
    "fftshift",
    "ifftshift",
    "fft",
    "ifft",
    "rfft",
    "ihfft",
    "fft2",
    "ifft2",
    "rfft2",
    "irfft2",
    "fftn",
    "ifftn",
    "rfftn",
    "irfftn",
    "hfft2",
    "ihfft2",
    "hfftn",
    "ihfftn",
]

_NORMS = (None, "backward", "ortho", "forward")


def _scale(norm, n):
    if norm not in _NORMS:
        raise ValueError(f"Invalid normalization mode: {norm!r}")
    if norm in (None, "backward"):
        return 1.0 / n
    return 1.0 / np.sqrt(n) if norm == "ortho" else 1.0


def _weights(n, m_full):
    c = np.full(m_full, 2.0)
    c[0] = 1.0
    if n % 2 == 0:
        c[-1] = 1.0
    return c


def _fit_last(a, m):
    """``a`` cut or zero-padded to ``m`` entries along its last axis."""
    k = a.shape[-1]
    if k >= m:
        return a[..., :m]
    pad = [(0, 0)] * (a.ndim - 1) + [(0, m - k)]
    return np.pad(a, pad)


def _real_irfft(x, n, scale, d):
    """y = s Σ c_k x_k cos(2πkt/n) along ``d`` of a real tensor (recorded with its adjoint)."""
    data = np.moveaxis(x._data, d, -1)
    m_full = n // 2 + 1
    spec = _fit_last(data, m_full)
    out = np.fft.irfft(spec, n, axis=-1, norm="forward") * scale
    out = np.moveaxis(out.astype(x._data.dtype, copy=False), -1, d)
    nd, m = x._data.ndim, x._data.shape[d]

    def backward(g):
        return (_real_irfft_adjoint(g, n, m, scale, d - nd),)

    return make_result(out, (x,), backward, "FftC2RBackward")


def _real_irfft_adjoint(g, n, m, scale, d):
    """g_x = s · c_k · Re(rfft(g))_k, fitted to ``m`` bins (d counted from the right)."""
    data = np.moveaxis(g._data, d, -1)
    m_full = n // 2 + 1
    gx = np.real(np.fft.rfft(data, n, axis=-1)) * _weights(n, m_full) * scale
    gx = np.moveaxis(_fit_last(gx, m).astype(g._data.dtype, copy=False), -1, d)

    def backward(gg):
        # The adjoint of the adjoint: the forward transform, from m bins to n samples.
        return (_real_irfft(gg, n, scale, d),)

    return make_result(gx, (g,), backward, "FftR2CBackward")


def _real_input(input, op):
    x = as_tensor(input, op)
    if x._data.dtype.kind == "c":  # pragma: no cover - tapegrad makes no complex tensors
        raise NotImplementedError(f"fft.{op}: complex tensors are not supported")
    if x._data.dtype.kind != "f":
        x = x._cast(_dtypes.get_default_dtype())
    if x._data.ndim == 0:
        raise IndexError(f"fft.{op}: expected a tensor with at least 1 dimension")
    return x


def irfft(input, n=None, dim=-1, norm=None):
    """The inverse of ``rfft``: ``n`` real samples (default 2·(m−1)) from the real
    half-spectrum ``input`` of m bins along ``dim``."""
    x = _real_input(input, "irfft")
    d = _check_dim(dim, x._data.ndim, "fft.irfft")
    n = 2 * (x._data.shape[d] - 1) if n is None else int(n)
    if n < 1:
        raise RuntimeError(f"Invalid number of data points ({n}) specified")
    return _real_irfft(x, n, _scale(norm, n), d)


def hfft(input, n=None, dim=-1, norm=None):
    """The FFT of a Hermitian-symmetric signal given by its real first half ``input``:
    ``n`` real values (default 2·(m−1))."""
    x = _real_input(input, "hfft")
    d = _check_dim(dim, x._data.ndim, "fft.hfft")
    n = 2 * (x._data.shape[d] - 1) if n is None else int(n)
    if n < 1:
        raise RuntimeError(f"Invalid number of data points ({n}) specified")
    swapped = {None: "forward", "backward": "forward", "forward": "backward", "ortho": "ortho"}
    if norm not in swapped:
        raise ValueError(f"Invalid normalization mode: {norm!r}")
    return _real_irfft(x, n, _scale(swapped[norm], n), d)


def fftfreq(n, d=1.0, *, dtype=None, requires_grad=False, device="cpu", **_):
    """Sample frequencies of an ``n``-point FFT with spacing ``d``."""
    out = Tensor._wrap(
        np.fft.fftfreq(n, d).astype(_dtypes.to_dtype(dtype) or _dtypes.get_default_dtype())
    )
    return out.requires_grad_(True) if requires_grad else out


def rfftfreq(n, d=1.0, *, dtype=None, requires_grad=False, device="cpu", **_):
    """Sample frequencies of an ``n``-point real FFT (the non-negative ones)."""
    out = Tensor._wrap(
        np.fft.rfftfreq(n, d).astype(_dtypes.to_dtype(dtype) or _dtypes.get_default_dtype())
    )
    return out.requires_grad_(True) if requires_grad else out


def _shift(input, dim, sign, op):
    x = as_tensor(input, op)
    nd = x._data.ndim
    dims = tuple(range(nd)) if dim is None else (dim if isinstance(dim, (tuple, list)) else (dim,))
    dims = tuple(_check_dim(d, nd, f"fft.{op}") for d in dims)
    if not dims:
        return x * 1
    shifts = tuple(sign * (x._data.shape[d] // 2) for d in dims)
    return x.roll(shifts, dims)


def fftshift(input, dim=None):
    """Move the zero frequency to the middle along ``dim`` (all dims when None)."""
    return _shift(input, dim, 1, "fftshift")


def ifftshift(input, dim=None):
    """The inverse of :func:`fftshift`."""
    x = as_tensor(input, "ifftshift")
    dims = tuple(range(x._data.ndim)) if dim is None else dim
    dims = dims if isinstance(dims, (tuple, list)) else (dims,)
    shifts = tuple(
        -(x._data.shape[_check_dim(d, x._data.ndim, "fft.ifftshift")] // 2) for d in dims
    )
    return x.roll(shifts, tuple(dims)) if dims else x * 1


def _complex_only(name):
    def fn(*args, **kwargs):
        raise NotImplementedError(
            f"tg.fft.{name}: the result is a complex tensor, and tapegrad has no complex dtype; "
            "only the real-to-real transforms (irfft, hfft) and the fftfreq/fftshift helpers "
            "exist"
        )

    fn.__name__ = name
    fn.__doc__ = f"Not available: ``torch.fft.{name}`` returns (or needs) complex tensors."
    return fn


fft = _complex_only("fft")
ifft = _complex_only("ifft")
rfft = _complex_only("rfft")
ihfft = _complex_only("ihfft")
fft2 = _complex_only("fft2")
ifft2 = _complex_only("ifft2")
rfft2 = _complex_only("rfft2")
irfft2 = _complex_only("irfft2")
fftn = _complex_only("fftn")
ifftn = _complex_only("ifftn")
rfftn = _complex_only("rfftn")
irfftn = _complex_only("irfftn")
hfft2 = _complex_only("hfft2")
ihfft2 = _complex_only("ihfft2")
hfftn = _complex_only("hfftn")
ihfftn = _complex_only("ihfftn")
