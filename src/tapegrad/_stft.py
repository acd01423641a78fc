"""``tg.stft``: the short-time Fourier transform, composed of reflect padding, ``unfold``,
the window product and ``tg.fft.rfft``/``fft`` (so its gradients are theirs, to any order);
``tg.istft``, its inverse, composed the other way: ``irfft``/``ifft`` of each frame, the
window product, overlap-add (shifted sums) and the division by the overlap-added squared
window, as torch's.

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
from ._warn import warn
from .nn import functional as F
from .ops._registry import register
from .ops._util import as_tensor
from .ops.complex_ops import view_as_complex, view_as_real
from .tensor import Tensor

__all__ = ["istft", "stft"]


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


def _istft_context(spec, n_fft, hop, win, window, center, normalized, onesided, length,
                   return_complex):  # fmt: skip
    """torch's prefix for istft's errors: the call's arguments."""
    kind = {"complex64": "ComplexFloat", "complex128": "ComplexDouble"}.get(
        spec._data.dtype.name, spec._data.dtype.name
    )
    shown = "None" if window is None else f"[{window.shape[0]}]"
    return (
        f"istft(CPU{kind}Type{list(spec.shape)}, n_fft={n_fft}, hop_length={hop}, "
        f"win_length={win}, window={shown}, center={int(center)}, "
        f"normalized={int(normalized)}, "
        f"onesided={onesided if onesided is None else int(onesided)}, length={length}, "
        f"return_complex={int(return_complex)}) "
    )


@register("istft")
def istft(
    input,
    n_fft,
    hop_length=None,
    win_length=None,
    window=None,
    center=True,
    normalized=False,
    onesided=None,
    length=None,
    return_complex=False,
):
    """The inverse of :func:`stft`: a complex (B?, n_fft // 2 + 1 or n_fft, n_frames)
    spectrogram back to the (B?, L) signal, with the window ``stft`` used (default ones,
    with torch's warning).

    Raises:
        RuntimeError: a real input, a frequency size that does not match ``n_fft`` and
            ``onesided``, ``hop_length`` not in (0, win_length], a window of the wrong
            size, or frames whose overlap-added squared window is ~0 somewhere (the
            inversion is undefined there), as torch.
    """
    spec = as_tensor(input, "istft")
    if spec._data.dtype.kind != "c":
        raise RuntimeError(
            "istft requires a complex-valued input tensor matching the output from stft "
            "with return_complex=True."
        )
    hop = n_fft // 4 if hop_length is None else int(hop_length)
    win = n_fft if win_length is None else int(win_length)
    ctx = _istft_context(spec, n_fft, hop, win, window, center, normalized, onesided, length,
                         return_complex)  # fmt: skip
    if spec._data.ndim not in (2, 3):
        raise RuntimeError(f"{ctx}: expected a tensor with 2 or 3 dimensions of complex dtype, "
                           f"but got {spec._data.ndim}")  # fmt: skip
    batched = spec._data.ndim == 3
    n_freq, n_frames = spec._data.shape[-2:]
    if onesided is None:
        onesided = n_freq != n_fft
    if onesided and n_freq != n_fft // 2 + 1:
        raise RuntimeError(
            f"{ctx}: expected the frequency dimension (3rd to the last) of the input tensor to "
            f"match n_fft / 2 + 1 when onesided=True, but got {n_freq}"
        )
    if not onesided and n_freq != n_fft:
        raise RuntimeError(
            f"{ctx}: expected the frequency dimension (3rd to the last) of the input tensor to "
            f"match n_fft when onesided=False, but got {n_freq}"
        )
    if not 0 < hop <= win:
        raise RuntimeError(f"{ctx}: expected 0 < hop_length <= win_length")
    if not 0 < win <= n_fft:
        raise RuntimeError(f"{ctx}: expected 0 < win_length <= n_fft")
    if window is None:
        warn(
            "A window was not provided. A rectangular window will be applied.Please provide "
            "the same window used by stft to make the inversion lossless.To suppress this "
            "warning and use a rectangular window, explicitly set "
            "`window=torch.ones(n_fft, device=<device>)`."
        )
        window = Tensor._wrap(np.ones(win, spec._data.real.dtype))
    if tuple(window.shape) != (win,):
        raise RuntimeError(f"{ctx}: expected a 1D window tensor of size equal to win_length="
                           f"{win}, but got window with size {list(window.shape)}")  # fmt: skip
    if win < n_fft:
        left = (n_fft - win) // 2
        window = F.pad(window, (left, n_fft - win - left))
    if return_complex and onesided:
        raise RuntimeError("Cannot have onesided output if window or input is complex")
    x = spec if batched else spec.unsqueeze(0)
    x = x.transpose(-1, -2)  # (B, n_frames, n_freq)
    norm = "ortho" if normalized else "backward"
    if return_complex:
        frames = _fft.ifft(x, n=n_fft, dim=-1, norm=norm)
    else:
        if window.is_complex():
            raise RuntimeError("Complex windows are incompatible with return_complex=False")
        if not onesided:
            x = x[..., : n_fft // 2 + 1]
        frames = _fft.irfft(x, n=n_fft, dim=-1, norm=norm)
    frames = frames * window  # (B, n_frames, n_fft)
    total = n_fft + hop * (n_frames - 1)

    def overlap_add(blocks):  # (B, n_frames, n_fft) -> (B, total)
        if blocks.is_complex():  # fold's gradient is real: the two parts as a batch of 2B
            b = blocks.shape[0]
            parts = view_as_real(blocks).permute(3, 0, 1, 2).reshape(2 * b, n_frames, n_fft)
            out = overlap_add(parts).reshape(2, b, total).permute(1, 2, 0).contiguous()
            return view_as_complex(out)
        # frame t's k-th hop-long chunk lands at (t + k) * hop: one shifted sum per chunk
        # (pads and adds, whose backward rules batch, unlike fold's: Note [Batched gradients])
        b, chunks = blocks.shape[0], -(-n_fft // hop)
        blocks = F.pad(blocks, (0, chunks * hop - n_fft)).reshape(b, n_frames, chunks, hop)
        out = None
        for k in range(chunks):
            piece = F.pad(
                blocks[:, :, k].reshape(b, n_frames * hop), (k * hop, (chunks - 1 - k) * hop)
            )
            out = piece if out is None else out + piece
        return out[:, :total]

    y = overlap_add(frames)
    envelope = overlap_add((window * window.conj() if window.is_complex() else window * window)
                           .expand(1, n_frames, n_fft))  # fmt: skip
    start = n_fft // 2 if center else 0
    end = start + length if length is not None else (total - n_fft // 2 if center else total)
    y, envelope = y[:, start:end], envelope[:, start:end]
    if envelope._data.size and np.abs(envelope._data).min() < 1e-11:
        raise RuntimeError(f"{ctx}window overlap add min: {np.abs(envelope._data).min():g}")
    y = y / envelope
    if not batched:
        y = y.squeeze(0)
    if end > total:
        warn(
            "The length of signal is shorter than the length parameter. Result is being padded "
            "with zeros in the tail. Please check your center and hop_length settings."
        )
        y = F.pad(y, (0, end - total))
    return y
