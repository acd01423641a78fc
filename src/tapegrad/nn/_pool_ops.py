"""Fused 2-D pooling over windows of a padded input (geometry shared with _conv_ops).

Max pooling picks, per window, the first position holding the maximum (row-major
over the kernel, as PyTorch; NaN wins), and routes the gradient there only. The
pair gather/scatter at fixed positions closes under differentiation:
    max_pool: dx = scatter(g, idx)    scatter: dg = gather(v, idx)    gather: dx = scatter(g, idx)

Average pooling is linear: y = Σ_taps x_pad[tap] / divisor, so its adjoint adds
g / divisor back into every tap, and the adjoint's adjoint is the pooling again.

All loops run over the kh·kw kernel taps only, each a strided slice of the padded
input in channels-last order (Note [Channels-last convolution] in _conv_ops.py):
results are channels-last views, so a following convolution reads them for free.
"""

from __future__ import annotations

import numpy as np
from numpy.lib.stride_tricks import sliding_window_view

from .. import _trace
from ..autograd.graph import make_result
from ._conv_ops import crop_nhwc, new_like, nhwc, padded_nhwc, padded_shape, window_slice


def _taps(kernel, out_hw, geom):
    """``(k, (row_slice, col_slice))`` for every kernel tap k = kw·i + j."""
    return [(i * kernel[1] + j, window_slice(i, j, out_hw, geom))
            for i in range(kernel[0]) for j in range(kernel[1])]


def max_pool2d(x, kernel, out_hw, geom):
    """Max over each window; returns ``(out, idx)`` with ``idx`` the tap index kw·i + j."""
    xh = padded_nhwc(x.data, geom.pads, -np.inf)
    taps = _taps(kernel, out_hw, geom)
    dtype = np.uint8 if len(taps) < 256 else np.intp
    _, (rs, cs) = taps[0]
    best = xh[:, rs, cs].copy()
    idx = new_like(best, best.shape, dtype=dtype)
    for k, (rs, cs) in taps[1:]:
        v = xh[:, rs, cs]
        np.copyto(idx, k, where=v > best)  # strict: ties keep the first maximum
        np.maximum(best, v, out=best)
    # NaN wins (np.maximum already put it in ``best``); idx must name the first NaN tap.
    if _trace.recording():  # no Python branch on values (tapegrad._trace)
        for k, (rs, cs) in reversed(taps):
            np.copyto(idx, k, where=np.isnan(xh[:, rs, cs]))
    elif np.isnan(best).any():
        idx, best = _argmax_windows(xh, kernel, out_hw, geom)
    idx = idx.transpose(0, 3, 1, 2)
    x_shape = x.data.shape

    def backward(g):
        return (_scatter(g, idx, x_shape, kernel, geom),)

    out = best.transpose(0, 3, 1, 2)
    return make_result(out, (x,), backward, "MaxPool2DWithIndicesBackward"), idx


def _argmax_windows(xh, kernel, out_hw, geom):
    (kh, kw), (sh, sw), (dh, dw) = kernel, geom.stride, geom.dilation
    win = sliding_window_view(xh, ((kh - 1) * dh + 1, (kw - 1) * dw + 1), axis=(1, 2))
    win = win[:, ::sh, ::sw, :, ::dh, ::dw][:, : out_hw[0], : out_hw[1]]
    flat = win.reshape(win.shape[:4] + (-1,))
    idx = flat.argmax(axis=-1)
    return idx, np.take_along_axis(flat, idx[..., None], axis=-1)[..., 0]


def _gather(x, idx, kernel, geom):
    """The value of ``x``'s window at tap ``idx`` (max pooling with positions fixed)."""
    xh = padded_nhwc(x.data, geom.pads, 0.0)
    ih = nhwc(idx)
    out = new_like(xh, ih.shape)
    for k, (rs, cs) in _taps(kernel, ih.shape[1:3], geom):
        np.copyto(out, xh[:, rs, cs], where=ih == k)
    x_shape = x.data.shape

    def backward(g):
        return (_scatter(g, idx, x_shape, kernel, geom),)

    return make_result(out.transpose(0, 3, 1, 2), (x,), backward, "MaxPool2DGatherBackward")


def _scatter(g, idx, x_shape, kernel, geom):
    """Adjoint of :func:`_gather`: g added into the tap each window selected."""
    gh = nhwc(g.data)
    ih = nhwc(idx)
    gxp = new_like(gh, padded_shape(x_shape, geom))
    zero = np.zeros((), gh.dtype)
    for k, (rs, cs) in _taps(kernel, gh.shape[1:3], geom):
        gxp[:, rs, cs] += np.where(ih == k, gh, zero)

    def backward(v):
        return (_gather(v, idx, kernel, geom),)

    out = crop_nhwc(gxp, geom.pads, x_shape)
    return make_result(out, (g,), backward, "MaxPool2DBackwardBackward")


def avg_pool2d(x, kernel, out_hw, geom, divisor):
    """Σ over each window / ``divisor`` (a scalar or an (Ho, Wo) array)."""
    xh = padded_nhwc(x.data, geom.pads, 0.0)
    out = np.zeros((xh.shape[0],) + tuple(out_hw) + (xh.shape[3],), xh.dtype)
    for _, (rs, cs) in _taps(kernel, out_hw, geom):
        out += xh[:, rs, cs]
    out /= _nhwc_divisor(divisor)
    x_shape = x.data.shape

    def backward(g):
        return (_avg_pool_adjoint(g, x_shape, kernel, geom, divisor),)

    return make_result(out.transpose(0, 3, 1, 2), (x,), backward, "AvgPool2DBackward")


def _nhwc_divisor(divisor):
    return divisor[..., None] if isinstance(divisor, np.ndarray) else divisor


def _avg_pool_adjoint(g, x_shape, kernel, geom, divisor):
    gh = nhwc(g.data) / _nhwc_divisor(divisor)
    gxp = new_like(gh, padded_shape(x_shape, geom))
    out_hw = gh.shape[1:3]
    for _, (rs, cs) in _taps(kernel, out_hw, geom):
        gxp[:, rs, cs] += gh

    def backward(v):
        return (avg_pool2d(v, kernel, out_hw, geom, divisor),)

    out = crop_nhwc(gxp, geom.pads, x_shape)
    return make_result(out, (g,), backward, "AvgPool2DBackwardBackward")


def avg_divisor(size, kernel, out_hw, geom, count_include_pad):
    """Per-output divisor of average pooling, as PyTorch counts it.

    With ``count_include_pad`` a window counts the declared padding but not the
    extra rows/columns that ``ceil_mode`` adds; otherwise only real input cells.
    """
    counts = []
    for axis in range(2):
        n, k, s = size[axis], kernel[axis], geom.stride[axis]
        before = geom.pads[axis][0]
        d = geom.dilation[axis]
        lo, hi = (0, n + 2 * before) if count_include_pad else (before, before + n)
        taps = np.arange(out_hw[axis])[:, None] * s + np.arange(k)[None, :] * d
        counts.append(((taps >= lo) & (taps < hi)).sum(axis=1))
    return np.outer(counts[0], counts[1])
