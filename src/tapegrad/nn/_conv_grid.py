"""Stride-1 convolution of few input channels as one GEMM over the padded grid.

Note [Grid im2col]
For a stride-1 convolution, kernel tap (i, j) of the output pixel at flat position
p = (n·Hp + r)·Wp + c of the padded, channels-last input reads flat position
p + i·dh·Wp + j·dw. So if outputs are computed at *every* flat position of the padded
grid (L = N·Hp·Wp rows, the Ho·Wo real ones among them), tap (i, j)'s column of the
im2col matrix is one contiguous run of the flattened input, shifted: the columns
are built by kh·kw·C plain 1-D copies instead of N·Ho·Wo·kh short strided ones.
The rows whose column would run past the input's end (the last
Lv = L - offset(last tap)..L) are never computed; every real output lies before them
(its last tap is the grid's last cell at most). The GEMM does Hp·Wp / (Ho·Wo) times
the real work (1.56x for 8x8 images padded by 1), so the grid is used where the
ordinary im2col copies runs of few elements (C·kw small) and that waste is small:
for the digits CNN's first convolution (C = 1) im2col drops from 61 to 15 us and the
forward from ~100 to ~45 us.

Columns are kept transposed, (kh·kw·C [+1], L) with row t·C + c the flat input of
channel c shifted by tap t, so each row is written contiguously; the GEMM reads the
transpose for free. An extra row of ones carries the bias through the GEMM (a bias
added afterwards to an (L, O) result with O = 16 costs more than the GEMM). The
forward result is a view of the (N, Hp, Wp, O) grid: (N, Ho, Wo, O), channels-last.
The weight gradient multiplies the same columns by g placed on the grid with zeros
at the extra rows.
"""

from __future__ import annotations

import numpy as np

from .._parallel import pair

__all__ = ["use_grid", "grid_columns", "grid_conv", "grid_weight_grad"]

_MAX_RUN = 8  # C·kw at most: the ordinary im2col copies runs this short
_MAX_WASTE = 2.0  # Hp·Wp / (Ho·Wo) at most


def use_grid(x_shape, kernel, out_hw, geom):
    """Whether the grid path suits this geometry (Note [Grid im2col])."""
    if geom.groups != 1 or tuple(geom.stride) != (1, 1):
        return False
    _, c, h, w = x_shape
    (pt, pb), (pl, pr) = geom.pads
    grid = (h + pt + pb) * (w + pl + pr)
    return c * kernel[1] <= _MAX_RUN and grid <= _MAX_WASTE * out_hw[0] * out_hw[1]


def _empty(proto, shape, dtype=None):
    # plain: the grid runs inside the opaque conv kernels (Note [Opaque kernels])
    return np.empty(shape, proto.dtype if dtype is None else dtype)


def grid_columns(xp, kernel, dilation, ones):
    """``(cols, lv)``: the transposed (kh·kw·C [+1], L) columns of the padded channels-last
    ``xp`` (N, Hp, Wp, C), a bias row of ones last when ``ones``, and the number lv of
    leading columns that are filled (the rest are never read)."""
    (kh, kw), (dh, dw) = kernel, dilation
    n, hp, wp, c = xp.shape
    flat = xp.reshape(n * hp * wp, c)  # a copy only when unpadded and not channels-last
    length = flat.shape[0]
    lv = length - (kh - 1) * dh * wp - (kw - 1) * dw
    k = kh * kw * c
    cols = _empty(flat, (k + 1 if ones else k, length))
    t = 0
    for i in range(kh):
        for j in range(kw):
            off = i * dh * wp + j * dw
            np.copyto(cols[t : t + c, :lv], flat[off : off + lv].T)
            t += c
    if ones:
        cols[k, :lv] = 1
    return cols, lv


def grid_conv(xp, wm, bias, kernel, out_hw, dilation, dtype, halves=None):
    """Forward on the grid: the (N, Ho, Wo, O) channels-last result (a view of the grid),
    for ``xp`` the padded (N, Hp, Wp, C) input, ``wm`` the (O, kh·kw·C) weight and
    ``bias`` (O,) or None. ``halves``: two sample ranges to run as a pair (Note [Intra-op
    parallelism] in tapegrad/_parallel.py), each its own grid."""
    if bias is not None:
        wm = np.concatenate([wm, bias[:, None]], axis=1)
    n, hp, wp, _ = xp.shape
    o = wm.shape[0]
    prod = _empty(xp, (n * hp * wp, o), dtype)
    ones = bias is not None
    if halves is None:
        _grid_into(prod, xp, wm, kernel, dilation, ones)
    else:
        (a, b), (c, d) = halves
        cell = hp * wp
        pair(
            lambda: _grid_into(prod[a * cell : b * cell], xp[a:b], wm, kernel, dilation, ones),
            lambda: _grid_into(prod[c * cell : d * cell], xp[c:d], wm, kernel, dilation, ones),
            parallel=True,  # _halves applied the size rule
        )
    return prod.reshape(n, hp, wp, o)[:, : out_hw[0], : out_hw[1]]


def _grid_into(prod, xp, wm, kernel, dilation, ones):
    """Write the grid rows of ``xp``'s samples (the first lv of ``prod``'s rows)."""
    cols, lv = grid_columns(xp, kernel, dilation, ones)
    np.matmul(cols[:, :lv].T, wm.T, out=prod[:lv])


def grid_weight_grad(xp, gh, kernel, dilation):
    """The (O, kh·kw·C) weight gradient on the grid, ``gh`` the (N, Ho, Wo, O) output
    gradient: columns times g placed on the grid, zero at the extra rows."""
    cols, lv = grid_columns(xp, kernel, dilation, False)
    n, hp, wp, _ = xp.shape
    _, ho, wo, o = gh.shape
    grid = np.zeros_like(gh, shape=(n, hp, wp, o), order="C")
    grid[:, :ho, :wo] = gh
    return grid.reshape(n * hp * wp, o)[:lv].T @ cols[:, :lv].T
