"""``tg.stft``: the short-time Fourier transform, composed of reflect padding, ``unfold``,
the window product and ``tg.fft.rfft``/``fft`` (so its gradients are theirs, to any order).

For a signal x (L,) or (B, L): frames of ``n_fft`` samples every ``hop_length`` (default
n_fft // 4), each times ``window`` (default ones; a shorter window is zero-padded to n_fft,
centred), transformed along the frame; the result is (B,) + (n_fft // 2 + 1 or n_fft,
n_frames), complex (``return_complex=False``: ``view_as_real`` of it). ``center`` pads
n_fft // 2 on both sides with ``pad_mode``; ``normalized`` scales by n_fft^(-1/2).

>>> import tapegrad as tg
>>> tg.stft(tg.ones(16), 8, return_complex=True).shape
tapegrad.Size([5, 9])
"""

from __future__ import annotations

import numpy as np

from . import fft as _fft
from .nn import functional as F
from .ops._registry import register
from .ops._util import as_tensor
from .ops.complex_ops import view_as_real
from .tensor import Tensor

__all__ = ["stft"]


@register("stft")
def stft(
    input,
    n_fft,
    hop_length=None,
    win_length=None,
    window=None,
    center=True,
    pad_mode="reflect",
    normalized=False,
    onesided=None,
    return_complex=None,
):
    """The short-time Fourier transform (see the module docstring for shapes)."""
    x = as_tensor(input, "stft")
    cx = x._data.dtype.kind == "c" or (window is not None and window._data.dtype.kind == "c")
    if return_complex is None:
        if not cx:
            raise RuntimeError(
                "stft requires the return_complex parameter be given for real inputs, and will "
                "further require that return_complex=True in a future PyTorch release."
            )
        return_complex = True
    if x._data.ndim not in (1, 2):
        raise RuntimeError(f"stft: expected a 1D or 2D tensor, got shape {list(x.shape)}")
    if x._data.dtype.kind not in "fc":
        raise RuntimeError(f"stft: expected a floating point or complex input, got {x.dtype}")
    if x._data.size == 0:  # PyTorch's reflect padding refuses empty signals and batches
        raise RuntimeError(f"stft: expected a non-empty signal, got shape {list(x.shape)}")
    batched = x._data.ndim == 2
    if not batched:
        x = x.unsqueeze(0)
    hop = n_fft // 4 if hop_length is None else int(hop_length)
    win = n_fft if win_length is None else int(win_length)
    if center:
        pad = n_fft // 2
        x = F.pad(x.unsqueeze(1), (pad, pad), mode=pad_mode).squeeze(1)
    length = x._data.shape[-1]
    if not 0 < n_fft <= length:
        raise RuntimeError(
            f"stft: expected 0 < n_fft <= {length} (the padded signal length), got n_fft={n_fft}"
        )
    if hop <= 0:
        raise RuntimeError(f"stft: expected hop_length > 0, but got hop_length={hop}")
    if not 0 < win <= n_fft:
        raise RuntimeError(f"stft: expected 0 < win_length <= n_fft, but got win_length={win}")
    frames = x.unfold(-1, n_fft, hop)  # (B, n_frames, n_fft)
    if window is not None:
        if tuple(window.shape) != (win,):
            raise RuntimeError(
                f"stft: expected a 1D window tensor of size equal to win_length={win}, but got "
                f"window with size {list(window.shape)}"
            )
        left = (n_fft - win) // 2
        if win < n_fft:
            window = F.pad(window, (left, n_fft - win - left))
        frames = frames * window
    elif win < n_fft:
        left = (n_fft - win) // 2
        ones = np.zeros(n_fft, x._data.real.dtype)
        ones[left : left + win] = 1
        frames = frames * Tensor._wrap(ones)
    if onesided is None:
        onesided = not cx
    if onesided and cx:
        raise RuntimeError("Cannot have onesided output if window or input is complex")
    norm = "ortho" if normalized else "backward"
    spec = _fft.rfft(frames, dim=-1, norm=norm) if onesided else _fft.fft(frames, norm=norm)
    spec = spec.transpose(-1, -2)
    if not batched:
        spec = spec.squeeze(0)
    return spec if return_complex else view_as_real(spec)
