"""Convolution of a one-channel input with transposed ("tap-row") im2col columns.

Note [Tap-row im2col]
For C = 1 the ordinary im2col copies runs of one element (channel fastest), and the grid
(Note [Grid im2col]) computes Hp·Wp / (Ho·Wo) times the real rows (1.56x for 8x8 images
padded by 1) and returns a strided view of its grid, which every following elementwise
op then walks slowly. Here the columns are kept transposed, (kh·kw [+1], P) with
P = N·Ho·Wo: row t is kernel tap t's window of the padded input over every output
pixel, one strided copy per tap with runs of Wo elements, and a last row of ones
carries the bias. The forward GEMM ``colsᵀ @ Wᵀ`` then lands as a dense (P, O), i.e.
(N, Ho, Wo, O) channels-last, and the weight gradient is ``gmᵀ @ colsᵀ`` over the same
P rows. On the digits CNN's first convolution (64 x 1 x 8 x 8, 16 filters of 3x3):
forward 74 -> 53 us, the ReLU after it 35 -> 26 us (a dense input), weight gradient
66 -> 48 us (one core, busy machine).

When the weight needs a gradient and the columns are no larger than the output (O >
kh·kw), the forward keeps them for the weight gradient instead of building them again
(:func:`keeps_columns`): building them (a padded copy and kh·kw strided copies of runs
of Wo elements) took 36 us of the 70 us weight-and-bias gradient of the digits CNN's
first convolution, twice the GEMM.
"""

from __future__ import annotations

import numpy as np

from .._blas_threads import one_thread

__all__ = [
    "use_tap_rows",
    "keeps_columns",
    "tap_rows",
    "tap_rows_conv",
    "tap_rows_weight_grad",
    "kept_weight_grad",
]


def use_tap_rows(x_shape, geom):
    """Whether the tap-row path suits this convolution: one input channel, no groups."""
    return x_shape[1] == 1 and geom.groups == 1


def keeps_columns(x_shape, o, taps, geom):
    """Whether the forward keeps its tap rows for the weight gradient: the tap-row path,
    and the (taps + 1, P) columns no larger than the (P, O) output."""
    return use_tap_rows(x_shape, geom) and o > taps


def tap_rows(x, kernel, out_hw, geom, ones):
    """The (kh·kw [+1], P) columns of the (N, 1, H, W) ``x``: row i·kw + j holds tap (i, j)
    of every output pixel in (n, r, q) order; a row of ones last when ``ones``."""
    (kh, kw), (sh, sw), (dh, dw) = kernel, geom.stride, geom.dilation
    (pt, pb), (pl, pr) = geom.pads
    n, _, h, w = x.shape
    ho, wo = out_hw
    xs = x.reshape(n, h, w)
    if pt or pb or pl or pr:
        xp = np.zeros((n, h + pt + pb, w + pl + pr), x.dtype)
        xp[:, pt : pt + h, pl : pl + w] = xs
    else:
        xp = xs
    k = kh * kw
    cols = np.empty((k + 1 if ones else k, n, ho, wo), x.dtype)
    for i in range(kh):
        for j in range(kw):
            rows = slice(i * dh, i * dh + sh * (ho - 1) + 1, sh)
            cols[i * kw + j] = xp[:, rows, slice(j * dw, j * dw + sw * (wo - 1) + 1, sw)]
    if ones:
        cols[k] = 1
    return cols.reshape(cols.shape[0], n * ho * wo)


def tap_rows_conv(x, wm, bias, kernel, out_hw, geom):
    """``(out, cols)``: the (N, Ho, Wo, O) dense channels-last conv(x, w) + bias, ``wm`` the
    (O, kh·kw) weight, and the tap rows it multiplied."""
    cols = tap_rows(x, kernel, out_hw, geom, bias is not None)
    if bias is not None:
        wm = np.concatenate([wm, bias[:, None]], axis=1)
    out = cols.T @ wm.T
    return out.reshape(x.shape[0], out_hw[0], out_hw[1], wm.shape[0]), cols


def tap_rows_weight_grad(x, gm, kernel, out_hw, geom):
    """The (O, kh·kw) weight gradient for the (P, O) output gradient ``gm``."""
    cols = tap_rows(x, kernel, out_hw, geom, False)
    return gm.T @ cols.T


def kept_weight_grad(gm, cols, w_shape):
    """The (O, 1, kh, kw) weight gradient from the forward's tap rows ``cols`` (a bias row
    of ones last, unused here) and the (P, O) output gradient ``gm``."""
    o, _, kh, kw = w_shape
    with one_thread(gm.size * kh * kw, log=False):
        gw = gm.T @ cols[: kh * kw].T
    return gw.reshape(w_shape)
