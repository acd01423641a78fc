"""``tg.fft``: PyTorch's discrete Fourier transforms over ``numpy.fft``, with gradients.

Every transform is built from three recorded primitives (g is the incoming gradient;
s is the norm's scale: 1, 1/√n or 1/n):

* ``_c2c(x, dims, s, sign)``: y = s · Σ x e^{sign·2πi k t/n} over ``dims`` (the FFT for
  sign = −1, the unscaled inverse for +1). Its adjoint is the same with −sign:
  g_x = _c2c(g, dims, s, −sign) (PyTorch's ``_fft_c2c`` rule).
* ``_r2c(x, dims, s)``: the one-sided FFT of a real x (last dim n → n//2 + 1 bins).
  g_x = Re(_c2c(g zero-padded to n bins, dims, s, +1)) (``fft_r2c_backward``).
* ``_c2r(x, dims, s, n)``: the real inverse of a one-sided spectrum (n samples on the last
  dim). g_x = _r2c(g, dims, s) with bins 1 … n − (n//2 + 1) doubled
  (``fft_c2r_backward``).

Each rule is written with these primitives, so gradients of any order exist. ``n``/``s``
first cut or zero-pad the input (``_resize``, whose adjoint is the opposite resize). The
Hermitian transforms are the real ones of the conjugate with the norm swapped, as in
PyTorch: ``hfftn(x) = irfftn(conj(x))`` and ``ihfftn(x) = conj(rfftn(x))``.

Dtypes follow PyTorch: a float32 (or integer, via the default dtype) input gives complex64,
float64 gives complex128; ``rfft*``/``ihfft*`` take real input only.

>>> import tapegrad as tg
>>> tg.fft.fft(tg.tensor([1.0, 0.0, 0.0, 0.0]))
tensor([1.+0.j, 1.+0.j, 1.+0.j, 1.+0.j])
>>> tg.fft.irfft(tg.tensor([4.0, 0.0, 0.0]))
tensor([1., 1., 1., 1.])
"""

from __future__ import annotations

import math

import numpy as np

from . import _dtypes
from .autograd.graph import make_result
from .ops._util import as_tensor
from .tensor import Tensor, _check_dim

__all__ = [
    "fft",
    "ifft",
    "fft2",
    "ifft2",
    "fftn",
    "ifftn",
    "rfft",
    "irfft",
    "rfft2",
    "irfft2",
    "rfftn",
    "irfftn",
    "hfft",
    "ihfft",
    "hfft2",
    "ihfft2",
    "hfftn",
    "ihfftn",
    "fftfreq",
    "rfftfreq",
    "fftshift",
    "ifftshift",
]

_NORMS = (None, "backward", "ortho", "forward")
_SWAPPED = {None: "forward", "backward": "forward", "ortho": "ortho", "forward": "backward"}
_COMPLEX_OF = {_dtypes.float32: _dtypes.complex64, _dtypes.float64: _dtypes.complex128}
_REAL_OF = {v: k for k, v in _COMPLEX_OF.items()}


# -- the recorded primitives -------------------------------------------------------------


def _c2c(x: Tensor, dims: tuple, scale: float, sign: int) -> Tensor:
    data = x._data
    if sign < 0:
        out = np.fft.fftn(data, axes=dims, norm="backward")
    else:
        out = np.fft.ifftn(data, axes=dims, norm="forward")
    if scale != 1.0:
        out *= scale
    out = out.astype(data.dtype, copy=False)
    nd = data.ndim

    def backward(g):
        return (_c2c(g, _from_right(dims, nd), scale, -sign),)

    return make_result(out, (x,), backward, "FftC2CBackward")


def _r2c(x: Tensor, dims: tuple, scale: float) -> Tensor:
    data = x._data
    n = data.shape[dims[-1]]
    out = np.fft.rfftn(data, axes=dims, norm="backward")
    if scale != 1.0:
        out *= scale
    out = out.astype(_COMPLEX_OF[data.dtype], copy=False)
    nd = data.ndim

    def backward(g):
        d = _from_right(dims, nd)
        full = _resize(g, d[-1:], (n,))
        return (_c2c(full, d, scale, 1).real,)

    return make_result(out, (x,), backward, "FftR2CBackward")


def _c2r(x: Tensor, dims: tuple, scale: float, n: int) -> Tensor:
    data = x._data
    sizes = [data.shape[d] for d in dims[:-1]] + [n]
    out = np.fft.irfftn(data, s=sizes, axes=dims, norm="forward")
    if scale != 1.0:
        out *= scale
    out = out.astype(_REAL_OF[data.dtype], copy=False)
    nd = data.ndim
    m = data.shape[dims[-1]]  # n // 2 + 1

    def backward(g):
        d = _from_right(dims, nd)
        gx = _r2c(g, d, scale)
        double = n - m
        if double > 0:
            w = np.ones(m, _REAL_OF[data.dtype])
            w[1 : 1 + double] = 2.0
            shape = [1] * nd
            shape[d[-1]] = m
            gx = gx * Tensor._wrap(w.reshape(shape))
        return (gx,)

    return make_result(out, (x,), backward, "FftC2RBackward")


def _resize(x: Tensor, dims: tuple, sizes: tuple) -> Tensor:
    """``x`` cut or zero-padded to ``sizes`` along ``dims`` (the adjoint of the reverse)."""
    data = x._data
    old = tuple(data.shape[d] for d in dims)
    if old == tuple(sizes):
        return x
    cut = [slice(None)] * data.ndim
    pad = [(0, 0)] * data.ndim
    for d, k in zip(dims, sizes):
        cut[d] = slice(0, k)
        pad[d] = (0, max(k - data.shape[d], 0))
    out = np.pad(data[tuple(cut)], pad)
    nd = data.ndim

    def backward(g):
        return (_resize(g, _from_right(dims, nd), old),)

    return make_result(out, (x,), backward, "FftResizeBackward")


def _from_right(dims, nd):
    """``dims`` counted from the right, so rules hold under a batch prefix
    (Note [Batched gradients])."""
    return tuple(d - nd if d >= 0 else d for d in dims)


# -- argument handling -------------------------------------------------------------------


def _scale(norm, n: int, forward: bool) -> float:
    if norm not in _NORMS:
        raise RuntimeError(f'Invalid normalization mode: "{norm}"')
    if norm == "ortho":
        return 1.0 / math.sqrt(n) if n else 1.0
    inverse_scaled = norm in (None, "backward")
    if forward == inverse_scaled:
        return 1.0
    return 1.0 / n if n else 1.0


def _input(input, op, real_only=False):
    x = as_tensor(input, f"fft.{op}")
    kind = x._data.dtype.kind
    if real_only and kind == "c":
        raise RuntimeError(f"{op} expects a real input tensor, but got {x._data.dtype}")
    if kind not in "fc":
        x = x._cast(_dtypes.get_default_dtype())
    elif kind == "f" and x._data.dtype not in _COMPLEX_OF:  # float16, bfloat16
        raise RuntimeError(f"fft.{op}: unsupported dtype {x._data.dtype}")
    return x


def _dims_and_sizes(x, s, dim, op, default_dims=None):
    """``(dims, sizes)``: the transformed dims and the signal size along each (None: the
    input's), as PyTorch reads ``s``/``dim`` (``s`` alone: the last len(s) dims)."""
    nd = x._data.ndim
    if dim is None and s is not None:
        s = tuple(s)
        dims = tuple(range(nd - len(s), nd))
    elif dim is None:
        dims = tuple(range(nd)) if default_dims is None else default_dims
    else:
        dims = (dim,) if isinstance(dim, (int, np.integer)) else tuple(dim)
    if nd == 0 and dims:
        raise IndexError(f"fft.{op}: Dimension specified as {dims[0]} but tensor has no dimensions")
    dims = tuple(_check_dim(d, nd, f"fft.{op}") for d in dims)
    if len(set(dims)) != len(dims):
        raise RuntimeError(f"fft.{op}: dims must be unique, got {list(dims)}")
    if s is None:
        return dims, (None,) * len(dims)
    s = tuple(s)
    if len(s) != len(dims):
        raise RuntimeError("When given, dim and shape arguments must have the same length")
    for k in s:
        if k != -1 and k < 1:
            raise RuntimeError(f"Invalid number of data points ({k}) specified")
    return dims, tuple(None if k == -1 else int(k) for k in s)


def _one(n, dim):
    return (None if n is None else (n,)), dim


# -- complex-to-complex ------------------------------------------------------------------


def _fftn(input, s, dim, norm, op, sign, default_dims=None):
    x = _input(input, op)
    dims, sizes = _dims_and_sizes(x, s, dim, op, default_dims)
    sizes = tuple(x._data.shape[d] if k is None else k for d, k in zip(dims, sizes))
    if x._data.dtype.kind != "c":
        x = x._cast(_COMPLEX_OF[x._data.dtype])
    x = _resize(x, dims, sizes)
    if not dims:
        return x * 1
    return _c2c(x, dims, _scale(norm, math.prod(sizes), sign < 0), sign)


def fft(input, n=None, dim=-1, norm=None):
    """The 1-D FFT along ``dim``, cut or zero-padded to ``n`` points; complex result."""
    return _fftn(input, *_one(n, dim), norm, "fft", -1)


def ifft(input, n=None, dim=-1, norm=None):
    """The 1-D inverse FFT along ``dim``."""
    return _fftn(input, *_one(n, dim), norm, "ifft", 1)


def fft2(input, s=None, dim=(-2, -1), norm=None):
    """The 2-D FFT over ``dim`` (the last two by default)."""
    return _fftn(input, s, dim, norm, "fft2", -1)


def ifft2(input, s=None, dim=(-2, -1), norm=None):
    """The 2-D inverse FFT over ``dim``."""
    return _fftn(input, s, dim, norm, "ifft2", 1)


def fftn(input, s=None, dim=None, norm=None):
    """The N-D FFT over ``dim`` (all dims, or the last len(s), by default)."""
    return _fftn(input, s, dim, norm, "fftn", -1)


def ifftn(input, s=None, dim=None, norm=None):
    """The N-D inverse FFT over ``dim``."""
    return _fftn(input, s, dim, norm, "ifftn", 1)


# -- real-to-complex and back ------------------------------------------------------------


def _rfftn(input, s, dim, norm, op, default_dims=None):
    x = _input(input, op, real_only=True)
    dims, sizes = _dims_and_sizes(x, s, dim, op, default_dims)
    if not dims:
        raise RuntimeError(f"fft.{op}: must transform at least one axis")
    sizes = tuple(x._data.shape[d] if k is None else k for d, k in zip(dims, sizes))
    x = _resize(x, dims, sizes)
    return _r2c(x, dims, _scale(norm, math.prod(sizes), True))


def _irfftn(input, s, dim, norm, op, default_dims=None):
    x = _input(input, op)
    dims, sizes = _dims_and_sizes(x, s, dim, op, default_dims)
    if not dims:
        raise RuntimeError(f"fft.{op}: must transform at least one axis")
    last = sizes[-1]
    n = 2 * (x._data.shape[dims[-1]] - 1) if last is None else last
    if n < 1:
        raise RuntimeError(f"Invalid number of data points ({n}) specified")
    sizes = tuple(x._data.shape[d] if k is None else k for d, k in zip(dims[:-1], sizes[:-1]))
    if x._data.dtype.kind != "c":
        x = x._cast(_COMPLEX_OF[x._data.dtype])
    x = _resize(x, dims, sizes + (n // 2 + 1,))
    return _c2r(x, dims, _scale(norm, math.prod(sizes) * n, False), n)


def rfft(input, n=None, dim=-1, norm=None):
    """The FFT of a real signal along ``dim``: its n//2 + 1 non-negative frequencies."""
    return _rfftn(input, *_one(n, dim), norm, "rfft")


def irfft(input, n=None, dim=-1, norm=None):
    """The inverse of ``rfft``: ``n`` real samples (default 2·(m−1)) from m bins."""
    return _irfftn(input, *_one(n, dim), norm, "irfft")


def rfft2(input, s=None, dim=(-2, -1), norm=None):
    """The 2-D FFT of a real signal (one-sided along the last of ``dim``)."""
    return _rfftn(input, s, dim, norm, "rfft2")


def irfft2(input, s=None, dim=(-2, -1), norm=None):
    """The inverse of ``rfft2``."""
    return _irfftn(input, s, dim, norm, "irfft2")


def rfftn(input, s=None, dim=None, norm=None):
    """The N-D FFT of a real signal (one-sided along the last of ``dim``)."""
    return _rfftn(input, s, dim, norm, "rfftn")


def irfftn(input, s=None, dim=None, norm=None):
    """The inverse of ``rfftn``."""
    return _irfftn(input, s, dim, norm, "irfftn")


# -- Hermitian: the real transforms of the conjugate, with the norm swapped --------------


def _check_norm(norm):
    if norm not in _NORMS:
        raise RuntimeError(f'Invalid normalization mode: "{norm}"')
    return _SWAPPED[norm]


def _conj(x):
    return x.conj() if x._data.dtype.kind == "c" else x


def hfft(input, n=None, dim=-1, norm=None):
    """The FFT of a Hermitian-symmetric signal given by its first half: ``n`` real values."""
    x = _input(input, "hfft")
    return _irfftn(_conj(x), *_one(n, dim), _check_norm(norm), "hfft")


def ihfft(input, n=None, dim=-1, norm=None):
    """The inverse of ``hfft``: the one-sided spectrum of a real signal."""
    return _rfftn(input, *_one(n, dim), _check_norm(norm), "ihfft").conj()


def hfft2(input, s=None, dim=(-2, -1), norm=None):
    """The 2-D ``hfft`` (Hermitian along the last of ``dim``)."""
    x = _input(input, "hfft2")
    return _irfftn(_conj(x), s, dim, _check_norm(norm), "hfft2")


def ihfft2(input, s=None, dim=(-2, -1), norm=None):
    """The inverse of ``hfft2``."""
    return _rfftn(input, s, dim, _check_norm(norm), "ihfft2").conj()


def hfftn(input, s=None, dim=None, norm=None):
    """The N-D ``hfft``."""
    x = _input(input, "hfftn")
    return _irfftn(_conj(x), s, dim, _check_norm(norm), "hfftn")


def ihfftn(input, s=None, dim=None, norm=None):
    """The inverse of ``hfftn``."""
    return _rfftn(input, s, dim, _check_norm(norm), "ihfftn").conj()


# -- frequencies and shifts --------------------------------------------------------------


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
    return _shift(input, dim, -1, "ifftshift")
