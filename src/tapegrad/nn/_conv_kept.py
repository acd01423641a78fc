"""Small convolutions keep their im2col columns from the forward for the weight gradient.

Note [Kept im2col columns]
Note [Convolution memory] builds the columns a few samples at a time and keeps none:
the weight gradient builds them again. For a small convolution that second build is a
fifth of the weight gradient: on the digits CNN's second convolution (64 x 16 x 4 x 4,
32 filters of 3x3) the (1024, 145) columns cost ~34 us to copy plus the Python of the
block loop, against ~125 us for the GEMM. Where the columns of the whole batch take at
most :data:`KEEP_BYTES` (ungrouped, the im2col path, the weight needing a gradient,
grad mode on), the forward writes them once into one array, multiplies it, and hands
it to the backward, which multiplies the output gradient by it: no second copy. At
this size the allocation is heap memory (below the mmap threshold of tapegrad/_malloc.py),
reused by malloc from step to step, so the page faults that Note [Convolution memory]
avoids do not arise. The two halves of the batch still run as a pair when the rules
allow (Note [Intra-op parallelism]): each half copies and multiplies its own rows.
"""

from __future__ import annotations

import numpy as np

from .._parallel import pair
from . import _conv_grid, _conv_taps

__all__ = [
    "KEEP_BYTES",
    "keeps",
    "columns_conv",
    "kept_weight_grad",
    "has_ones",
    "weight_and_bias_grad",
]

#: The largest whole-batch im2col columns (bytes) a forward keeps for its backward.
KEEP_BYTES = 1 << 20


def keeps(x, w_shape, out_hw, geom) -> bool:
    """Whether the forward of conv(x, w) keeps its columns for the weight gradient: the tap
    rows (Note [Tap-row im2col]) or the im2col columns (Note [Kept im2col columns])."""
    if _conv_taps.use_tap_rows(x.shape, geom):
        return _conv_taps.keeps_columns(x.shape, w_shape[0], w_shape[2] * w_shape[3], geom)
    if geom.groups != 1 or _conv_grid.use_grid(x.shape, w_shape[2:], out_hw, geom):
        return False
    n, c = x.shape[:2]
    _, _, kh, kw = w_shape
    return n * out_hw[0] * out_hw[1] * (kh * kw * c + 1) * x.itemsize <= KEEP_BYTES


def columns_conv(win, wm, ones, dtype, halves):
    """``(prod, cols)``: the (P, O) product of the (P, kh·kw·C [+1]) columns of the window
    view ``win`` (N, Ho, Wo, kh, kw, C) with the (O, kh·kw·C [+1]) weight matrix ``wm``
    (a bias column last when ``ones``), and the columns. ``halves``: two sample ranges to
    run as a pair, or None."""
    n, ho, wo, kh, kw, c = win.shape
    k = kh * kw * c
    rows = ho * wo
    cols = np.empty((n * rows, k + 1 if ones else k), win.dtype)
    if ones:
        cols[:, k] = 1
    prod = np.empty((n * rows, wm.shape[0]), dtype)
    wt = wm.T

    def piece(a, b):
        block = cols[a * rows : b * rows]
        # copy=False: written in place (a view of ``cols``, never a copy)
        np.copyto(block[:, :k].reshape(win[a:b].shape, copy=False), win[a:b])
        np.matmul(block, wt, out=prod[a * rows : b * rows])

    if halves is None:
        piece(0, n)
    else:
        (a, b), (c2, d) = halves
        pair(lambda: piece(a, b), lambda: piece(c2, d), parallel=True)  # the rule was applied
    return prod, cols


def kept_weight_grad(gm, cols, w_shape):
    """The (O, C, kh, kw) weight gradient from the (P, O) output gradient ``gm`` and the
    forward's columns (channel fastest, a bias column of ones last when present)."""
    o, c, kh, kw = w_shape
    k = kh * kw * c
    gw = gm.T @ cols[:, :k]
    return gw.reshape(o, kh, kw, c).transpose(0, 3, 1, 2).copy()


def has_ones(cols, p, w_shape) -> bool:
    """Whether ``cols`` are the kept columns of a forward with a bias, for ``p`` output rows
    and an (O, C, kh, kw) weight: the tap rows' (kh·kw + 1, P) when C = 1 (Note [Tap-row
    im2col]), else im2col's (P, C·kh·kw + 1), the ones last."""
    if cols is None:
        return False
    _, c, kh, kw = w_shape
    k = c * kh * kw
    return cols.shape == ((k + 1, p) if c == 1 else (p, k + 1))


def weight_and_bias_grad(gm, cols, w_shape):
    """``(gw, gb)`` in one GEMM: the (P, O) output gradient ``gm`` times the kept columns
    (:func:`has_ones`), whose ones give the bias gradient Σ_p gm[p] as the last column."""
    o, c, kh, kw = w_shape
    k = kh * kw * c
    full = gm.T @ (cols.T if c == 1 else cols)  # (O, k + 1)
    gb = full[:, k].copy()
    if c == 1:  # tap rows: (kh, kw) order
        return full[:, :k].reshape(w_shape), gb
    return full[:, :k].reshape(o, kh, kw, c).transpose(0, 3, 1, 2).copy(), gb
