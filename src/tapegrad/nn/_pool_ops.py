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

Note [Tiled max pooling]
When windows tile the input (stride == kernel, no padding or dilation: the usual
``MaxPool2d(2)``), the NHWC input reshapes for free to (N, Ho, kh, Wo, kw, C) and
every input cell lies in exactly one window. Max pooling then keeps a one-hot
boolean ``mask`` of that shape (the first maximum of each window) instead of tap
indices: the gradient is one broadcast multiply ``g · mask`` (no scatter, no
zero-filled buffer), and its adjoint selects the masked taps back.
"""

from __future__ import annotations

import numpy as np

from .._trace import opaque
from ..autograd.graph import keeps_arrays, make_result
from . import _pool_2x2
from ._conv_ops import crop_nhwc, new_like, nhwc, padded_nhwc, padded_shape, window_slice
from ._pool_link import zero_input_grad


def _taps(kernel, out_hw, geom):
    """``(k, (row_slice, col_slice))`` for every kernel tap k = kw·i + j."""
    return [
        (i * kernel[1] + j, window_slice(i, j, out_hw, geom))
        for i in range(kernel[0])
        for j in range(kernel[1])
    ]


def max_pool2d(x, kernel, out_hw, geom, return_indices=False):
    """Max over each window: ``(out, idx)``, ``idx`` the (N, C, Ho, Wo) tap index kw·i + j
    of each window's maximum when ``return_indices``, else None."""
    if _tiles(kernel, geom):
        return _max_pool_tiled(x, kernel, out_hw, return_indices)
    best, idx = opaque(_max_pool_kernel, x._data, kernel, out_hw, geom)
    x_shape = x._data.shape

    def backward(g):
        return (_scatter(g, idx, x_shape, kernel, geom, x),)

    def array_backward(g):  # Note [Array backward] in autograd/engine.py
        return (_scatter_kernel(g, idx, x_shape, kernel, geom),)

    out = make_result(
        best, (x,), backward, "MaxPool2DWithIndicesBackward", array_backward=array_backward
    )
    keeps_arrays(out)
    return out, idx if return_indices else None


def _max_pool_kernel(x, kernel, out_hw, geom):
    """``(best, idx)`` of max pooling as (N, C, Ho, Wo) views of channels-last arrays; an
    opaque kernel (Note [Opaque kernels] in tapegrad/_trace.py)."""
    xh = padded_nhwc(x, geom.pads, -np.inf)
    taps = _taps(kernel, out_hw, geom)
    dtype = np.uint8 if len(taps) < 256 else np.intp
    _, (rs, cs) = taps[0]
    best = xh[:, rs, cs].copy()
    idx = new_like(best, best.shape, dtype=dtype)
    for k, (rs, cs) in taps[1:]:
        v = xh[:, rs, cs]
        np.copyto(idx, k, where=v > best)  # strict: ties keep the first maximum
        np.maximum(best, v, out=best)
    # NaN wins (np.maximum already put it in ``best``); idx names the LAST NaN tap, as
    # torch's kernel (``val > max || isnan(val)``) does.
    if np.isnan(best).any():
        for k, (rs, cs) in taps:
            np.copyto(idx, k, where=np.isnan(xh[:, rs, cs]))
    return best.transpose(0, 3, 1, 2), idx.transpose(0, 3, 1, 2)


def _gather(x, idx, kernel, geom):
    """The value of ``x``'s window at tap ``idx`` (max pooling with positions fixed)."""
    out = opaque(_gather_kernel, x._data, idx, kernel, geom)
    x_shape = x._data.shape

    def backward(g):
        return (_scatter(g, idx, x_shape, kernel, geom),)

    out = make_result(out, (x,), backward, "MaxPool2DGatherBackward")
    return keeps_arrays(out)


def _gather_kernel(x, idx, kernel, geom):
    xh = padded_nhwc(x, geom.pads, 0.0)
    ih = nhwc(idx)
    out = new_like(xh, ih.shape)
    for k, (rs, cs) in _taps(kernel, ih.shape[1:3], geom):
        np.copyto(out, xh[:, rs, cs], where=ih == k)
    return out.transpose(0, 3, 1, 2)


def _scatter(g, idx, x_shape, kernel, geom, x=None):
    """Adjoint of :func:`_gather`: g added into the tap each window selected (a function of
    the pooled input ``x`` too, with derivative 0: Note [Max-pool gradient takes the input])."""
    out = opaque(_scatter_kernel, g._data, idx, x_shape, kernel, geom)

    def backward(v):
        return _gather(v, idx, kernel, geom), zero_input_grad(x)

    return keeps_arrays(make_result(out, (g, x), backward, "MaxPool2DBackwardBackward"))


def _scatter_kernel(g, idx, x_shape, kernel, geom):
    gh = nhwc(g)
    ih = nhwc(idx)
    gxp = new_like(gh, padded_shape(x_shape, geom))
    zero = np.zeros((), gh.dtype)
    for k, (rs, cs) in _taps(kernel, gh.shape[1:3], geom):
        gxp[:, rs, cs] += np.where(ih == k, gh, zero)
    return crop_nhwc(gxp, geom.pads, x_shape)


def _tiles(kernel, geom):
    """Whether the windows tile the input (Note [Tiled max pooling])."""
    no_pad = not any(geom.pads[0] + geom.pads[1])
    return no_pad and tuple(geom.stride) == tuple(kernel) and tuple(geom.dilation) == (1, 1)


def _tiled(a, kernel, out_hw):
    """(N, C, H, W) array as its (N, Ho, kh, Wo, kw, C) windows: a view, rows/cols past the
    last whole window dropped."""
    (kh, kw), (ho, wo) = kernel, out_hw
    n, c = a.shape[:2]
    return nhwc(a)[:, : ho * kh, : wo * kw].reshape(n, ho, kh, wo, kw, c)


def _tap_views(a6):
    """The (N, Ho, Wo, C) views of a tiled array, one per kernel tap in row-major order."""
    return [a6[:, :, i, :, j] for i in range(a6.shape[2]) for j in range(a6.shape[4])]


def _max_pool_tiled(x, kernel, out_hw, return_indices):
    """Max pooling of tiling windows."""
    if _pool_2x2.is_2x2(kernel):  # Note [2x2 max pooling]
        return _pool_2x2.max_pool_2x2(x, out_hw, return_indices, _max_pool_tiled_kernel)
    best, mask = opaque(_max_pool_tiled_kernel, x._data, kernel, out_hw)
    x_shape = x._data.shape

    def backward(g):
        return (_scatter_tiled(g, mask, x_shape, x),)

    def array_backward(g):  # Note [Array backward] in autograd/engine.py
        return (_scatter_tiled_kernel(g, mask, x_shape),)

    out = make_result(
        best, (x,), backward, "MaxPool2DWithIndicesBackward", array_backward=array_backward
    )
    keeps_arrays(out)
    return out, opaque(_mask_indices, mask) if return_indices else None


def _max_pool_tiled_kernel(x, kernel, out_hw):
    """``(best, mask)``: the (N, C, Ho, Wo) maxima (a view of a channels-last array) and the
    one-hot (N, Ho, kh, Wo, kw, C) mask of each window's first maximum (the last NaN where
    the window holds one, as torch); an opaque kernel."""
    v = _tiled(x, kernel, out_hw)
    taps = _tap_views(v)
    best = taps[0].copy()
    for t in taps[1:]:
        np.maximum(best, t, out=best)
    mask = v == best[:, :, None, :, None]
    _keep_first(_tap_views(mask))  # ties keep the first maximum
    if np.isnan(best).any():
        nan = np.isnan(v)
        has_nan = _keep_first(_tap_views(nan)[::-1])  # a NaN wins: the last one, as torch
        np.copyto(mask, nan, where=has_nan[:, :, None, :, None])
    return best.transpose(0, 3, 1, 2), mask


def _keep_first(taps):
    """Each window's first True tap only (in ``taps`` order, in place); returns whether the
    window had one."""
    seen = taps[0].copy()
    for t in taps[1:]:
        np.greater(t, seen, out=t)  # t and not seen
        np.logical_or(seen, t, out=seen)
    return seen


def _mask_indices(mask):
    """(N, C, Ho, Wo) tap index of each window's True entry."""
    taps = _tap_views(mask)
    idx = new_like(taps[0], taps[0].shape, dtype=np.uint8 if len(taps) < 256 else np.intp)
    for k, t in enumerate(taps):
        np.copyto(idx, k, where=t)
    return idx.transpose(0, 3, 1, 2)


def _scatter_tiled(g, mask, x_shape, x=None):
    """Adjoint of :func:`_gather_tiled`: g placed at each window's masked tap, 0 elsewhere
    (Note [Max-pool gradient takes the input])."""
    out = opaque(_scatter_tiled_kernel, g._data, mask, x_shape)

    def backward(v):
        return _gather_tiled(v, mask), zero_input_grad(x)

    return keeps_arrays(make_result(out, (g, x), backward, "MaxPool2DBackwardBackward"))


def _scatter_tiled_kernel(g, mask, x_shape):
    n, c, h, w = x_shape
    gh = nhwc(g)[:, :, None, :, None]
    if np.isfinite(gh).all():
        g6 = np.multiply(gh, mask)
    else:  # inf · 0 would leave NaN off the maxima
        g6 = np.where(mask, gh, np.zeros((), gh.dtype))
    _, ho, kh, wo, kw, _ = mask.shape
    gx = g6.reshape(n, ho * kh, wo * kw, c)
    if (ho * kh, wo * kw) != (h, w):  # cells past the last window get no gradient
        gx = new_like(g6, (n, h, w, c))
        gx[:, : ho * kh, : wo * kw] = g6.reshape(n, ho * kh, wo * kw, c)
    return gx.transpose(0, 3, 1, 2)


def _gather_tiled(x, mask):
    """Each window's value at its masked tap (max pooling with the positions fixed)."""
    out = opaque(_gather_tiled_kernel, x._data, mask)
    x_shape = x._data.shape

    def backward(g):
        return (_scatter_tiled(g, mask, x_shape, x),)

    out = make_result(out, (x,), backward, "MaxPool2DGatherBackward")
    return keeps_arrays(out)


def _gather_tiled_kernel(x, mask):
    _, ho, kh, wo, kw, _ = mask.shape
    out = new_like(x, mask[:, :, 0, :, 0].shape)
    for t, m in zip(_tap_views(_tiled(x, (kh, kw), (ho, wo))), _tap_views(mask), strict=True):
        np.copyto(out, t, where=m)
    return out.transpose(0, 3, 1, 2)


def avg_pool2d(x, kernel, out_hw, geom, divisor):
    """Σ over each window / ``divisor`` (a scalar or an (Ho, Wo) array)."""
    out = opaque(_avg_pool_kernel, x._data, kernel, out_hw, geom, divisor)
    x_shape = x._data.shape

    def backward(g):
        return (_avg_pool_adjoint(g, x_shape, kernel, geom, divisor),)

    return make_result(out, (x,), backward, "AvgPool2DBackward")


def _avg_pool_kernel(x, kernel, out_hw, geom, divisor):
    xh = padded_nhwc(x, geom.pads, 0.0)
    out = np.zeros((xh.shape[0],) + tuple(out_hw) + (xh.shape[3],), xh.dtype)
    for _, (rs, cs) in _taps(kernel, out_hw, geom):
        out += xh[:, rs, cs]
    out /= _nhwc_divisor(divisor)
    return out.transpose(0, 3, 1, 2)


def _nhwc_divisor(divisor):
    return divisor[..., None] if isinstance(divisor, np.ndarray) else divisor


def _avg_pool_adjoint(g, x_shape, kernel, geom, divisor):
    out = opaque(_avg_adjoint_kernel, g._data, x_shape, kernel, geom, divisor)
    out_hw = g._data.shape[2:]

    def backward(v):
        return (avg_pool2d(v, kernel, out_hw, geom, divisor),)

    return make_result(out, (g,), backward, "AvgPool2DBackwardBackward")


def _avg_adjoint_kernel(g, x_shape, kernel, geom, divisor):
    gh = nhwc(g) / _nhwc_divisor(divisor)
    gxp = new_like(gh, padded_shape(x_shape, geom))
    for _, (rs, cs) in _taps(kernel, gh.shape[1:3], geom):
        gxp[:, rs, cs] += gh
    return crop_nhwc(gxp, geom.pads, x_shape)


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
