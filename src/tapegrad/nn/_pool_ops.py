"""Fused 2-D pooling over windows of a padded input (geometry shared with _conv_ops).

Max pooling picks, per window, the first position holding the maximum (row-major
over the kernel, as PyTorch; NaN wins), and routes the gradient there only. The
pair gather/scatter at fixed positions closes under differentiation:
    max_pool:  dx = scatter(g, idx)     scatter: dg = gather(v, idx)     gather: dx = scatter(g, idx)

Average pooling is linear: y = Σ_taps x_pad[tap] / divisor, so its adjoint adds
g / divisor back into every tap, and the adjoint's adjoint is the pooling again.
Both loop over the kh·kw kernel taps only (strided slice adds).
"""

from __future__ import annotations

import numpy as np

from ..autograd.graph import make_result
from ._conv_ops import crop_array, pad_array, window_slice, windows


def _padded_shape(shape, geom):
    (pt, pb), (pl, pr) = geom.pads
    return shape[:2] + (shape[2] + pt + pb, shape[3] + pl + pr)


def max_pool2d(x, kernel, out_hw, geom):
    """Max over each window; returns ``(out, idx)`` with ``idx`` the tap index kh·i + j."""
    xp = pad_array(x.data, geom.pads, -np.inf)
    idx, out = _argmax_windows(xp, kernel, out_hw, geom)
    x_shape = x.data.shape

    def backward(g):
        return (_scatter(g, idx, x_shape, kernel, geom),)

    return make_result(out, (x,), backward, "MaxPool2DWithIndicesBackward"), idx


def _argmax_windows(xp, kernel, out_hw, geom):
    n, c = xp.shape[:2]
    flat = windows(xp, kernel, out_hw, geom).reshape(n, c, out_hw[0], out_hw[1], -1)
    idx = flat.argmax(axis=-1)
    out = np.take_along_axis(flat, idx[..., None], axis=-1)[..., 0]
    return idx, out


def _gather(x, idx, kernel, geom):
    """The value of ``x``'s window at tap ``idx`` (max pooling with positions fixed)."""
    xp = pad_array(x.data, geom.pads, 0.0)
    n, c = xp.shape[:2]
    flat = windows(xp, kernel, idx.shape[2:], geom).reshape(n, c, idx.shape[2], idx.shape[3], -1)
    out = np.take_along_axis(flat, idx[..., None], axis=-1)[..., 0]
    x_shape = x.data.shape

    def backward(g):
        return (_scatter(g, idx, x_shape, kernel, geom),)

    return make_result(out, (x,), backward, "MaxPool2DGatherBackward")


def _scatter(g, idx, x_shape, kernel, geom):
    """Adjoint of :func:`_gather`: g added into the tap each window selected."""
    gd = g.data
    gxp = np.zeros(_padded_shape(x_shape, geom), gd.dtype)
    kh, kw = kernel
    zero = np.zeros((), gd.dtype)
    for i in range(kh):
        for j in range(kw):
            rs, cs = window_slice(i, j, gd.shape[2:], geom)
            gxp[:, :, rs, cs] += np.where(idx == i * kw + j, gd, zero)
    out = np.ascontiguousarray(crop_array(gxp, geom.pads, x_shape))

    def backward(v):
        return (_gather(v, idx, kernel, geom),)

    return make_result(out, (g,), backward, "MaxPool2DBackwardBackward")


def avg_pool2d(x, kernel, out_hw, geom, divisor):
    """Σ over each window / ``divisor`` (a scalar or an (Ho, Wo) array)."""
    xd = x.data
    xp = pad_array(xd, geom.pads, 0.0)
    kh, kw = kernel
    out = np.zeros(xd.shape[:2] + tuple(out_hw), xd.dtype)
    for i in range(kh):
        for j in range(kw):
            rs, cs = window_slice(i, j, out_hw, geom)
            out += xp[:, :, rs, cs]
    out /= divisor
    x_shape = xd.shape

    def backward(g):
        return (_avg_pool_adjoint(g, x_shape, kernel, geom, divisor),)

    return make_result(out, (x,), backward, "AvgPool2DBackward")


def _avg_pool_adjoint(g, x_shape, kernel, geom, divisor):
    gd = g.data / divisor
    gxp = np.zeros(_padded_shape(x_shape, geom), gd.dtype)
    for i in range(kernel[0]):
        for j in range(kernel[1]):
            rs, cs = window_slice(i, j, gd.shape[2:], geom)
            gxp[:, :, rs, cs] += gd
    out = np.ascontiguousarray(crop_array(gxp, geom.pads, x_shape))
    out_hw = gd.shape[2:]

    def backward(v):
        return (avg_pool2d(v, kernel, out_hw, geom, divisor),)

    return make_result(out, (g,), backward, "AvgPool2DBackwardBackward")


def avg_divisor(size, kernel, out_hw, geom, count_include_pad):
    """Per-output divisor of average pooling, as PyTorch counts it.

    With ``count_include_pad`` a window counts the declared padding but not the
    extra rows/columns that ``ceil_mode`` adds; otherwise only real input cells.
    """
    counts = []
    for axis in range(2):
        n, k, s = size[axis], kernel[axis], geom.stride[axis]
        before, after = geom.pads[axis]
        d = geom.dilation[axis]
        lo, hi = (0, n + 2 * before) if count_include_pad else (before, before + n)
        taps = np.arange(out_hw[axis])[:, None] * s + np.arange(k)[None, :] * d
        counts.append(((taps >= lo) & (taps < hi)).sum(axis=1))
    return np.outer(counts[0], counts[1])
