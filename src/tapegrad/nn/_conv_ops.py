"""Fused 2-D convolution: im2col on ``sliding_window_view`` plus one GEMM per group.

Three primitives close under differentiation, so gradients of any order exist:

    y  = conv(x, w)                 (+ bias)
    gx = conv_input_grad(g, w)      the adjoint of conv in x (a transposed convolution)
    gw = conv_weight_grad(x, g)     the adjoint of conv in w

conv is bilinear in (x, w), so each primitive's backward is made of the other two:
    conv:              dx = input_grad(g, w)      dw = weight_grad(x, g)
    conv_input_grad:   dg = conv(v, w)            dw = weight_grad(v, g)
    conv_weight_grad:  dx = input_grad(g, v)      dg = conv(x, v)

Layouts: ``cols`` is (G, Cg·kh·kw, N·Ho·Wo), so the forward is ``W (G, Og, K) @ cols``
and the weight gradient ``g (G, Og, P) @ colsᵀ``. col2im adds one strided slice per
kernel position (kh·kw slice-adds, no Python loop over batch or pixels).
"""

from __future__ import annotations

from typing import NamedTuple

import numpy as np
from numpy.lib.stride_tricks import sliding_window_view

from ..autograd.graph import make_result


class Geometry(NamedTuple):
    """Where windows sit: stride, (before, after) padding per spatial dim, dilation, groups."""

    stride: tuple
    pads: tuple  # ((top, bottom), (left, right))
    dilation: tuple
    groups: int = 1


def out_size(n, k, s, d, before, after):
    """Output length of a window of ``k`` taps (dilation ``d``) sliding by ``s``."""
    return (n + before + after - d * (k - 1) - 1) // s + 1


def pad_array(x, pads, value=0.0):
    """``x`` (N, C, H, W) padded with ``value`` on the spatial dims (no copy when pads are 0)."""
    (pt, pb), (pl, pr) = pads
    if not (pt or pb or pl or pr):
        return x
    out = np.full(x.shape[:2] + (x.shape[2] + pt + pb, x.shape[3] + pl + pr), value, x.dtype)
    out[:, :, pt : pt + x.shape[2], pl : pl + x.shape[3]] = x
    return out


def crop_array(xp, pads, shape):
    """Undo :func:`pad_array`: the (H, W) = ``shape[2:]`` interior of ``xp``."""
    (pt, _), (pl, _) = pads
    return xp[:, :, pt : pt + shape[2], pl : pl + shape[3]]


def window_slice(i, j, out_hw, geom):
    """The slices of a padded input that kernel tap (i, j) reads for every output pixel."""
    (sh, sw), (dh, dw) = geom.stride, geom.dilation
    ho, wo = out_hw
    return (
        slice(i * dh, i * dh + sh * (ho - 1) + 1, sh),
        slice(j * dw, j * dw + sw * (wo - 1) + 1, sw),
    )


def windows(xp, kernel, out_hw, geom):
    """Read-only view (N, C, Ho, Wo, kh, kw) of the windows of a padded input."""
    (kh, kw), (sh, sw), (dh, dw) = kernel, geom.stride, geom.dilation
    win = sliding_window_view(xp, ((kh - 1) * dh + 1, (kw - 1) * dw + 1), axis=(2, 3))
    return win[:, :, ::sh, ::sw, ::dh, ::dw][:, :, : out_hw[0], : out_hw[1]]


def _im2col(x, kernel, out_hw, geom):
    """(G, Cg·kh·kw, N·Ho·Wo) columns of ``x`` (one copy of the windows)."""
    n, c = x.shape[:2]
    g = geom.groups
    win = windows(pad_array(x, geom.pads), kernel, out_hw, geom)
    win = win.reshape(n, g, c // g, out_hw[0], out_hw[1], kernel[0], kernel[1])
    k = (c // g) * kernel[0] * kernel[1]
    return win.transpose(1, 2, 5, 6, 0, 3, 4).reshape(g, k, n * out_hw[0] * out_hw[1])


def _col2im(cols, x_shape, kernel, out_hw, geom):
    """Adjoint of :func:`_im2col`: sum columns back into an (N, C, H, W) array."""
    n, c, h, w = x_shape
    g = geom.groups
    (pt, pb), (pl, pr) = geom.pads
    kh, kw = kernel
    ho, wo = out_hw
    gc = cols.reshape(g, c // g, kh, kw, n, ho, wo)
    gxp = np.zeros((n, g, c // g, h + pt + pb, w + pl + pr), cols.dtype)
    for i in range(kh):
        for j in range(kw):
            rs, cs = window_slice(i, j, out_hw, geom)
            gxp[:, :, :, rs, cs] += gc[:, :, i, j].transpose(2, 0, 1, 3, 4)
    return crop_array(gxp.reshape(n, c, h + pt + pb, w + pl + pr), geom.pads, x_shape)


def _out_grad_matrix(g, groups):
    """g (N, O, Ho, Wo) as (G, Og, N·Ho·Wo)."""
    n, o, ho, wo = g.shape
    return g.reshape(n, groups, o // groups, ho * wo).transpose(1, 2, 0, 3).reshape(
        groups, o // groups, n * ho * wo
    )


def conv2d(x, w, b, geom):
    """y = conv(x, w) + b for x (N, C, H, W), w (O, C/G, kh, kw), b (O,) or None."""
    n, _, h, wd = x.data.shape
    o, _, kh, kw = w.data.shape
    (pt, pb), (pl, pr) = geom.pads
    out_hw = (
        out_size(h, kh, geom.stride[0], geom.dilation[0], pt, pb),
        out_size(wd, kw, geom.stride[1], geom.dilation[1], pl, pr),
    )
    groups = geom.groups
    cols = _im2col(x.data, (kh, kw), out_hw, geom)
    wm = w.data.reshape(groups, o // groups, -1)
    prod = np.matmul(wm, cols).reshape(groups, o // groups, n, out_hw[0], out_hw[1])
    prod = prod.transpose(2, 0, 1, 3, 4).reshape(n, o, out_hw[0], out_hw[1])
    if b is not None:
        prod = prod + b.data.reshape(1, o, 1, 1)
    elif not prod.flags.c_contiguous:
        prod = np.ascontiguousarray(prod)
    need_x, need_w = x._rg, w._rg
    need_b = b is not None and b._rg
    x_shape, w_shape = x.data.shape, w.data.shape
    cached = cols if need_w else None  # the weight gradient reuses the columns

    def backward(g):
        gx = conv2d_input_grad(g, w, x_shape, geom) if need_x else None
        gw = conv2d_weight_grad(x, g, w_shape, geom, cols=cached) if need_w else None
        gb = g.sum(dim=(0, 2, 3)) if need_b else None
        return gx, gw, gb

    saved = tuple(t for t, need in ((w, need_x), (x, need_w)) if need)
    return make_result(prod, (x, w, b), backward, "ConvolutionBackward", saved=saved)


def conv2d_input_grad(g, w, x_shape, geom):
    """gx = convᵀ(g, w): the gradient of conv with respect to its input."""
    o, _, kh, kw = w.data.shape
    groups = geom.groups
    gm = _out_grad_matrix(g.data, groups)
    wm = w.data.reshape(groups, o // groups, -1)
    gcols = np.matmul(wm.transpose(0, 2, 1), gm)
    out = _col2im(gcols, x_shape, (kh, kw), g.data.shape[2:], geom)
    need_g, need_w = g._rg, w._rg
    w_shape = w.data.shape

    def backward(v):
        gg = conv2d(v, w, None, geom) if need_g else None
        gw = conv2d_weight_grad(v, g, w_shape, geom) if need_w else None
        return gg, gw

    saved = tuple(t for t, need in ((w, need_g), (g, need_w)) if need)
    return make_result(out, (g, w), backward, "ConvolutionBackwardInput", saved=saved)


def conv2d_weight_grad(x, g, w_shape, geom, cols=None):
    """gw = Σ g ⊗ windows(x): the gradient of conv with respect to its weight.

    ``cols`` may pass the forward's im2col of ``x`` to skip recomputing it.
    """
    kernel = w_shape[2:]
    if cols is None:
        cols = _im2col(x.data, kernel, g.data.shape[2:], geom)
    gm = _out_grad_matrix(g.data, geom.groups)
    out = np.matmul(gm, cols.transpose(0, 2, 1)).reshape(w_shape)
    need_x, need_g = x._rg, g._rg
    x_shape = x.data.shape

    def backward(v):
        gx = conv2d_input_grad(g, v, x_shape, geom) if need_x else None
        gg = conv2d(x, v, None, geom) if need_g else None
        return gx, gg

    saved = tuple(t for t, need in ((g, need_x), (x, need_g)) if need)
    return make_result(out, (x, g), backward, "ConvolutionBackwardWeight", saved=saved)
