"""Fused 2-D convolution: im2col on a strided window view plus GEMMs.

Three primitives close under differentiation, so gradients of any order exist:

    y  = conv(x, w)                 (+ bias)
    gx = conv_input_grad(g, w)      the adjoint of conv in x (a transposed convolution)
    gw = conv_weight_grad(x, g)     the adjoint of conv in w

conv is bilinear in (x, w), so each primitive's backward is made of the other two:
    conv:              dx = input_grad(g, w)      dw = weight_grad(x, g)
    conv_input_grad:   dg = conv(v, w)            dw = weight_grad(v, g)
    conv_weight_grad:  dx = input_grad(g, v)      dg = conv(x, v)

Note [Channels-last convolution]
The arrays are laid out channels-last in memory (NHWC) while their shape stays
(N, C, H, W), as PyTorch's ``channels_last`` format. The columns of group k are
(P, kh·kw·Cg) with P = N·Ho·Wo, channel fastest, so im2col copies runs of
channels, the forward GEMM ``cols @ Wᵀ`` lands straight in NHWC order (no
transpose copy of the output), the output gradient of an NHWC result reshapes to
(P, O) for free, and col2im adds channel runs: kh·kw strided slice adds, no
Python loop over batch or pixels. Results are therefore non-contiguous views.

Note [Convolution memory]
The im2col columns are (P, kh·kw·C): kh·kw times the input. They are built a few
samples at a time into one reused block of ~512 KiB (equal blocks) (:func:`_column_blocks`), each
block multiplied as it is built; none is kept (but for small convolutions, Note [Kept
im2col columns]): the weight gradient rebuilds them
(a copy, cheap next to the GEMM), and the input gradient of an ungrouped conv never
needs them (one GEMM per kernel tap, each added straight into the padded input
gradient). Whole-batch columns cost megabytes per step, freshly allocated and
freed: once glibc hands such memory back to the OS, every step pays page faults to
touch it again (measured ~0.3 ms per materialisation of the demo's second conv's
columns).
"""

from __future__ import annotations

from typing import NamedTuple

import numpy as np
from numpy.lib.stride_tricks import as_strided

from .. import _parallel
from .._blas_threads import one_thread
from .._parallel import pair
from .._trace import opaque
from ..autograd.graph import make_result
from ..grad_mode import STATE
from ..tensor import Tensor
from . import _conv_grid, _conv_kept, _conv_taps


class Geometry(NamedTuple):
    """Where windows sit: stride, (before, after) padding per spatial dim, dilation, groups."""

    stride: tuple
    pads: tuple  # ((top, bottom), (left, right))
    dilation: tuple
    groups: int = 1


def out_size(n, k, s, d, before, after):
    """Output length of a window of ``k`` taps (dilation ``d``) sliding by ``s``."""
    return (n + before + after - d * (k - 1) - 1) // s + 1


def padded_shape(x_shape, geom):
    """NHWC shape of the padded input of an (N, C, H, W) ``x_shape``."""
    n, c, h, w = x_shape
    (pt, pb), (pl, pr) = geom.pads
    return (n, h + pt + pb, w + pl + pr, c)


def crop_nhwc(xp, pads, x_shape):
    """Undo :func:`padded_nhwc`: the interior of ``xp`` as an (N, C, H, W) view."""
    (pt, _), (pl, _) = pads
    return xp[:, pt : pt + x_shape[2], pl : pl + x_shape[3]].transpose(0, 3, 1, 2)


def window_slice(i, j, out_hw, geom):
    """The slices of a padded input that kernel tap (i, j) reads for every output pixel."""
    (sh, sw), (dh, dw) = geom.stride, geom.dilation
    ho, wo = out_hw
    return (
        slice(i * dh, i * dh + sh * (ho - 1) + 1, sh),
        slice(j * dw, j * dw + sw * (wo - 1) + 1, sw),
    )


def nhwc(x):
    """(N, C, H, W) array as an (N, H, W, C) view (a free view of a channels-last array)."""
    return x.transpose(0, 2, 3, 1)


def new_like(proto, shape, value=0, dtype=None):
    """A new C-ordered array of ``shape`` filled with ``value`` (left uninitialised when
    ``value`` is None), in ``proto``'s dtype by default. For the opaque kernels only
    (Note [Opaque kernels] in tapegrad/_trace.py): plain arrays, which a jit recording
    does not see."""
    dtype = proto.dtype if dtype is None else dtype
    if value is None:
        return np.empty(shape, dtype)
    if value == 0:
        return np.zeros(shape, dtype)
    return np.full(shape, value, dtype)


def padded_nhwc(x, pads, value=0.0):
    """(N, Hp, Wp, C) copy of ``x`` padded with ``value`` (a view of ``x`` when pads are 0)."""
    (pt, pb), (pl, pr) = pads
    xh = nhwc(x)
    if not (pt or pb or pl or pr):
        return xh
    n, h, w, c = xh.shape
    out = new_like(xh, (n, h + pt + pb, w + pl + pr, c), value)
    out[:, pt : pt + h, pl : pl + w] = xh
    return out


_BLOCK_BYTES = 1 << 19  # im2col columns per GEMM (Note [Convolution memory])

# A kernel of at least this many multiply-adds is split into two halves of its batch that
# run side by side (Note [Intra-op parallelism] in tapegrad/_parallel.py).
PAIR_MNK = 1 << 22


def _halves(n, mnk):
    """The sample ranges ``((0, h), (h, n))`` to run as a pair, or None when the work is too
    small, the batch has one sample, or no second core is free (then one whole-batch pass
    costs less than two halves run one after the other)."""
    if n < 2 or mnk < PAIR_MNK or not _parallel.may_split():
        return None
    return (0, n // 2), (n // 2, n)


def _windows(x, kernel, out_hw, geom):
    """The read-only (N, Ho, Wo, kh, kw, C) view of every window of the padded, channels-last
    ``x``: window (r, c) tap (i, j) is padded pixel (r·sh + i·dh, c·sw + j·dw).

    Built with ``as_strided`` (in bounds: ``out_size`` keeps the last tap inside the padding);
    ``sliding_window_view`` plus slicing gives the same view at several times the Python cost.
    Only called inside opaque kernels (Note [Opaque kernels] in tapegrad/_trace.py), where
    the arrays are plain.
    """
    (kh, kw), (sh, sw), (dh, dw) = kernel, geom.stride, geom.dilation
    xh = padded_nhwc(x, geom.pads)
    sn, sr, sc, sch = xh.strides
    shape = (xh.shape[0], out_hw[0], out_hw[1], kh, kw, xh.shape[3])
    strides = (sn, sr * sh, sc * sw, sr * dh, sc * dw, sch)
    if xh.flags.c_contiguous:  # the padded copy: a view made in ~1/4 of as_strided's time
        win = np.ndarray(shape, xh.dtype, xh, 0, strides)
        win.flags.writeable = False
        return win
    return as_strided(xh, shape, strides, writeable=False)


def _column_blocks(win, groups, ones=False):
    """Yield ``(rows, k, cols)``: the (len(rows), kh·kw·Cg [+1]) im2col columns of group ``k``
    for the output rows ``rows`` (a slice of the P = N·Ho·Wo rows), a few samples at a time;
    with ``ones`` a last column of ones carries the bias through the GEMM.

    Every block is copied into the same buffer, so a consumer must use ``cols`` before
    asking for the next block (Note [Convolution memory]).
    """
    n, ho, wo, kh, kw, c = win.shape
    cg = c // groups
    k = kh * kw * cg
    width = k + 1 if ones else k
    step = max(1, _BLOCK_BYTES // (ho * wo * width * win.itemsize))
    step = -(-n // -(-n // step))  # blocks of equal size: 64 samples as 22+21+21, not 28+28+8
    buf = new_like(win, (min(step, n) * ho * wo, width), None)
    if ones:
        buf[:, k] = 1
    for start in range(0, n, step):
        stop = min(start + step, n)
        rows = slice(start * ho * wo, stop * ho * wo)
        block = buf[: rows.stop - rows.start]
        for g in range(groups):
            part = win[start:stop, ..., g * cg : (g + 1) * cg]
            # copy=False: the block must be written in place (a view of ``buf``, never a copy)
            dest = (block[:, :k] if ones else block).reshape(part.shape, copy=False)
            np.copyto(dest, part)
            yield rows, g, block


def _weight_matrices(w, groups, b=None):
    """Per group, the (Og, kh·kw·Cg [+1]) weight matrix in the columns' (kh, kw, C) order, the
    group's bias as a last column when ``b`` is given (the columns' row of ones)."""
    wm = w.transpose(0, 2, 3, 1).reshape(w.shape[0], -1)
    if b is not None:
        wm = np.concatenate([wm, b[:, None]], axis=1)
    og = w.shape[0] // groups
    return [wm[k * og : (k + 1) * og] for k in range(groups)]


def _out_grad_matrix(g):
    """g (N, O, Ho, Wo) as the (P, O) matrix of its NHWC order: free when g is channels-last and
    dense, else one copy (a broadcast g, from ``sum().backward()``, would also send NumPy's
    matmul down its slow non-BLAS loop)."""
    n, o, ho, wo = g.shape
    gh = nhwc(g)
    if not gh.flags.c_contiguous:
        dense = new_like(gh, gh.shape, None)
        np.copyto(dense, gh)
        gh = dense
    return gh.reshape(n * ho * wo, o)


def _col2im(gcols, x_shape, kernel, out_hw, geom):
    """Adjoint of im2col: per-group (P, kh·kw·Cg) columns summed into (N, C, H, W)."""
    n, c = x_shape[:2]
    kh, kw = kernel
    ho, wo = out_hw
    cg = c // geom.groups
    gxp = new_like(gcols[0], padded_shape(x_shape, geom))
    for k, cols in enumerate(gcols):
        gc = cols.reshape(n, ho, wo, kh, kw, cg)
        target = gxp[..., k * cg : (k + 1) * cg] if geom.groups > 1 else gxp
        for i in range(kh):
            for j in range(kw):
                rs, cs = window_slice(i, j, out_hw, geom)
                target[:, rs, cs] += gc[:, :, :, i, j]
    return crop_nhwc(gxp, geom.pads, x_shape)


def _input_grad_by_taps(gm, w, x_shape, out_hw, geom):
    """convᵀ of an ungrouped conv, one GEMM per kernel tap: x_pad[tap (i, j)] += gm @ w[:, :, i, j].

    The same sum as ``gm @ W`` followed by :func:`_col2im`, without the (P, kh·kw·C)
    intermediate (Note [Convolution memory]); each product lands as a whole NHWC block.
    The two halves of a large batch run as a pair (Note [Intra-op parallelism]).
    """
    n = x_shape[0]
    gxp = new_like(gm, padded_shape(x_shape, geom))
    taps = w.transpose(2, 3, 0, 1).copy()  # (kh, kw, O, C)
    rows = out_hw[0] * out_hw[1]
    halves = _halves(n, gm.size * x_shape[1] * w.shape[2] * w.shape[3])
    if halves is None:
        _taps_into(gxp, gm, taps, out_hw, geom)
    else:
        (a, b), (c, d) = halves
        pair(
            lambda: _taps_into(gxp[a:b], gm[a * rows : b * rows], taps, out_hw, geom),
            lambda: _taps_into(gxp[c:d], gm[c * rows : d * rows], taps, out_hw, geom),
            parallel=True,  # _halves applied the size rule
        )
    return crop_nhwc(gxp, geom.pads, x_shape)


def _taps_into(gxp, gm, taps, out_hw, geom):
    """Add convᵀ of the (P, O) rows ``gm`` into the padded NHWC ``gxp`` of their samples."""
    c = taps.shape[3]
    prod = new_like(gm, (gm.shape[0], c), None)  # reused by every tap
    block = prod.reshape(gxp.shape[0], out_hw[0], out_hw[1], c)
    for i in range(taps.shape[0]):
        for j in range(taps.shape[1]):
            rs, cs = window_slice(i, j, out_hw, geom)
            np.matmul(gm, taps[i, j], out=prod)
            gxp[:, rs, cs] += block


def _bias_grad(g):
    """gb = Σ_{n,h,w} g, recorded (only the create_graph backward asks: the first-order one
    takes the bias gradient from :func:`_backward_kernel`)."""
    return g.sum(dim=(0, 2, 3))


def conv2d(x, w, b, geom):
    """y = conv(x, w) + b for x (N, C, H, W), w (O, C/G, kh, kw), b (O,) or None."""
    n, _, h, wd = x._data.shape
    o, _, kh, kw = w._data.shape
    (pt, pb), (pl, pr) = geom.pads
    out_hw = (
        out_size(h, kh, geom.stride[0], geom.dilation[0], pt, pb),
        out_size(wd, kw, geom.stride[1], geom.dilation[1], pl, pr),
    )
    bias = None if b is None else b._data
    need_x, need_w = x._rg, w._rg
    cols = None  # kept for the weight gradient (Notes [Tap-row im2col], [Kept im2col columns])
    if need_w and STATE.enabled and _conv_kept.keeps(x._data, w._data.shape, out_hw, geom):
        out, cols = opaque(_forward_kernel, x._data, w._data, bias, out_hw, geom, True)
    else:
        out = opaque(_forward_kernel, x._data, w._data, bias, out_hw, geom)
    need_b = b is not None and b._rg
    x_shape, w_shape = x._data.shape, w._data.shape

    def array_backward(g):  # Note [Array backward] in autograd/engine.py
        xd = x._data if need_w else None
        xs = x_shape if need_x else None
        return _backward_kernel(g, xd, w._data, xs, geom, need_b, cols)

    def backward(g):
        if not STATE.enabled:  # first order: one kernel, g made channels-last once
            xd = x._data if need_w else None
            xs = x_shape if need_x else None
            grads = opaque(_backward_kernel, g._data, xd, w._data, xs, geom, need_b, cols)
            return tuple(None if a is None else Tensor._wrap(a) for a in grads)
        gx = conv2d_input_grad(g, w, x_shape, geom) if need_x else None
        gw = conv2d_weight_grad(x, g, w_shape, geom) if need_w else None
        gb = _bias_grad(g) if need_b else None
        return gx, gw, gb

    saved = tuple(t for t, need in ((w, need_x), (x, need_w)) if need)
    return make_result(
        out,
        (x, w, b),
        backward,
        "ConvolutionBackward",
        saved=saved,
        array_backward=array_backward,
    )


def _forward_kernel(x, w, bias, out_hw, geom, keep=False):
    """The (N, O, Ho, Wo) result, channels-last in memory, of conv(x, w) + bias: an opaque
    kernel (Note [Opaque kernels] in tapegrad/_trace.py). ``keep`` (``_conv_kept.keeps``):
    ``(result, columns)``."""
    kh, kw = w.shape[2:]
    dtype = np.result_type(x, w)
    with one_thread(x.shape[0] * out_hw[0] * out_hw[1] * w[0].size * w.shape[0], log=False):
        if _conv_taps.use_tap_rows(x.shape, geom):
            (wm,) = _weight_matrices(w, 1)
            out, cols = _conv_taps.tap_rows_conv(x, wm, bias, (kh, kw), out_hw, geom)
            if keep:
                return out.transpose(0, 3, 1, 2), cols
        elif _conv_grid.use_grid(x.shape, (kh, kw), out_hw, geom):
            (wm,) = _weight_matrices(w, 1)
            xp = padded_nhwc(x, geom.pads)
            halves = _halves(x.shape[0], xp[..., :1].size * wm.size)
            out = _conv_grid.grid_conv(xp, wm, bias, (kh, kw), out_hw, geom.dilation, dtype, halves)
        else:
            out = _im2col_conv(x, w, bias, out_hw, geom, dtype, keep)
            if keep:
                return out[0].transpose(0, 3, 1, 2), out[1]
    if out.dtype != dtype:  # bfloat16: NumPy's GEMM gave float32; rounded once, as torch
        out = out.astype(dtype)
    return out.transpose(0, 3, 1, 2)


def _backward_kernel(g, x, w, x_shape, geom, need_b, cols=None):
    """First-order ``(gx, gw, gb)`` of conv for the output gradient ``g``: gx when x_shape is
    given, gw when ``x`` is (from the forward's tap rows ``cols`` when given), gb when
    ``need_b`` (None for the others); an opaque kernel. gx and gw run as a pair (Note
    [Intra-op parallelism])."""
    gm = _out_grad_matrix(g)
    out_hw = g.shape[2:]
    gx = gw = gb = None
    mnk = gm.size * w[0].size
    # One block for the whole kernel (each costs ~4 us on two OpenBLAS libraries); the
    # products inside nest in it (Note [Small GEMMs on one thread]).
    with one_thread(mnk, log=False):
        if need_b and x is not None and _conv_kept.has_ones(cols, gm.shape[0], w.shape):
            # the forward's columns end with the bias's ones: gb is the last column of gw's
            # product (Note [Kept im2col columns])
            gw, gb = _conv_kept.weight_and_bias_grad(gm, cols, w.shape)
            need_b = x = None
        if x_shape is not None and x is not None:
            gx, gw = pair(
                lambda: _input_grad_array(gm, w, x_shape, out_hw, geom),
                lambda: _weight_grad_array(x, gm, w.shape, out_hw, geom, cols),
                parallel=mnk >= PAIR_MNK and _parallel.may_split(),
            )
        elif x_shape is not None:
            gx = _input_grad_array(gm, w, x_shape, out_hw, geom)
        elif x is not None:
            gw = _weight_grad_array(x, gm, w.shape, out_hw, geom, cols)
        if need_b:
            ones = np.ones_like(gm, shape=gm.shape[0], order="C")
            with one_thread(gm.size, log=False):
                gb = ones @ gm
    return gx, gw, gb


def _im2col_conv(x, w, bias, out_hw, geom, dtype, keep=False):
    """(N, Ho, Wo, O) = im2col(x) @ Wᵀ (+ bias through a column of ones), block by block; the
    two halves of a large batch as a pair (Note [Intra-op parallelism]). ``keep``: the
    columns of the whole batch at once, returned too (Note [Kept im2col columns])."""
    n, o = x.shape[0], w.shape[0]
    wms = _weight_matrices(w, geom.groups, bias)
    rows = out_hw[0] * out_hw[1]
    win = _windows(x, w.shape[2:], out_hw, geom)
    halves = _halves(n, n * rows * o * w[0].size)
    if keep:
        prod, cols = _conv_kept.columns_conv(win, wms[0], bias is not None, dtype, halves)
        return prod.reshape(n, out_hw[0], out_hw[1], o), cols
    prod = new_like(x, (n * rows, o), None, dtype)
    if halves is None:
        _im2col_into(prod, win, wms, geom.groups, bias is not None)
    else:
        (a, b), (c, d) = halves
        ones = bias is not None
        pair(
            lambda: _im2col_into(prod[a * rows : b * rows], win[a:b], wms, geom.groups, ones),
            lambda: _im2col_into(prod[c * rows : d * rows], win[c:d], wms, geom.groups, ones),
            parallel=True,  # _halves applied the size rule
        )
    return prod.reshape(n, out_hw[0], out_hw[1], o)


def _im2col_into(prod, win, wms, groups, ones):
    """Write im2col(win) @ Wᵀ into the (P, O) rows ``prod`` of ``win``'s samples."""
    og = prod.shape[1] // groups
    for rows, k, cols in _column_blocks(win, groups, ones=ones):
        if groups == 1:
            np.matmul(cols, wms[0].T, out=prod[rows])
        else:
            prod[rows, k * og : (k + 1) * og] = cols @ wms[k].T


def conv2d_input_grad(g, w, x_shape, geom):
    """gx = convᵀ(g, w): the gradient of conv with respect to its input."""
    out = opaque(_input_grad_kernel, g._data, w._data, x_shape, geom)
    out_hw = g._data.shape[2:]
    need_g, need_w = g._rg, w._rg
    w_shape = w._data.shape

    def backward(v):
        gg = conv2d(v, w, None, geom) if need_g else None
        if gg is not None and gg._data.shape[2:] != tuple(out_hw):
            # output_padding at least the stride (conv_transpose2d) leaves room for windows
            # past g's last position: they belong to no entry of g
            gg = gg[:, :, : out_hw[0], : out_hw[1]]
        gw = conv2d_weight_grad(v, g, w_shape, geom) if need_w else None
        return gg, gw

    saved = tuple(t for t, need in ((w, need_g), (g, need_w)) if need)
    return make_result(out, (g, w), backward, "ConvolutionBackwardInput", saved=saved)


def _input_grad_kernel(g, w, x_shape, geom):
    """convᵀ(g, w) as an (N, C, H, W) view of a channels-last array; an opaque kernel."""
    out = _input_grad_array(_out_grad_matrix(g), w, x_shape, g.shape[2:], geom)
    dtype = np.result_type(g, w)
    return out if out.dtype == dtype else out.astype(dtype)  # bfloat16: rounded once


def _input_grad_array(gm, w, x_shape, out_hw, geom):
    """convᵀ of the (P, O) output gradient ``gm``: (N, C, H, W), channels-last in memory."""
    with one_thread(gm.size * x_shape[1], log=False):
        if geom.groups == 1:
            return _input_grad_by_taps(gm, w, x_shape, out_hw, geom)
        og = gm.shape[1] // geom.groups
        wms = _weight_matrices(w, geom.groups)
        gcols = [gm[:, k * og : (k + 1) * og] @ m for k, m in enumerate(wms)]
        return _col2im(gcols, x_shape, w.shape[2:], out_hw, geom)


def conv2d_weight_grad(x, g, w_shape, geom):
    """gw = Σ g ⊗ windows(x): the gradient of conv with respect to its weight."""
    out = opaque(_weight_grad_kernel, x._data, g._data, w_shape, geom)
    need_x, need_g = x._rg, g._rg
    x_shape = x._data.shape

    def backward(v):
        gx = conv2d_input_grad(g, v, x_shape, geom) if need_x else None
        gg = conv2d(x, v, None, geom) if need_g else None
        return gx, gg

    saved = tuple(t for t, need in ((g, need_x), (x, need_g)) if need)
    return make_result(out, (x, g), backward, "ConvolutionBackwardWeight", saved=saved)


def _weight_grad_kernel(x, g, w_shape, geom):
    """Σ g ⊗ windows(x) as a dense (O, C/G, kh, kw) array; an opaque kernel."""
    return _weight_grad_array(x, _out_grad_matrix(g), w_shape, g.shape[2:], geom)


def _weight_grad_array(x, gm, w_shape, out_hw, geom, cols=None):
    """The (O, C/G, kh, kw) weight gradient for the (P, O) output gradient ``gm`` (from the
    forward's tap rows ``cols`` when given); the two halves of a large batch as a pair,
    their sums added (Note [Intra-op parallelism])."""
    o, cg, kh, kw = w_shape
    if cols is not None:
        if _conv_taps.use_tap_rows(x.shape, geom):
            return _conv_taps.kept_weight_grad(gm, cols, w_shape)
        with one_thread(gm.size * cg * kh * kw, log=False):
            return _conv_kept.kept_weight_grad(gm, cols, w_shape)
    rows = out_hw[0] * out_hw[1]
    halves = _halves(x.shape[0], gm.size * cg * kh * kw)
    if halves is None:
        gw = _weight_grad_part(x, gm, w_shape, out_hw, geom)
    else:
        (a, b), (c, d) = halves
        gw, gw2 = pair(
            lambda: _weight_grad_part(x[a:b], gm[a * rows : b * rows], w_shape, out_hw, geom),
            lambda: _weight_grad_part(x[c:d], gm[c * rows : d * rows], w_shape, out_hw, geom),
            parallel=True,  # _halves applied the size rule
        )
        gw += gw2
    return gw.reshape(o, kh, kw, cg).transpose(0, 3, 1, 2).copy()


def _weight_grad_part(x, gm, w_shape, out_hw, geom):
    """Σ over the samples of ``x`` of g ⊗ windows(x), as an (O, kh·kw·C/G) array."""
    o, cg, kh, kw = w_shape
    with one_thread(gm.size * cg * kh * kw, log=False):
        if _conv_taps.use_tap_rows(x.shape, geom):
            return _conv_taps.tap_rows_weight_grad(x, gm, (kh, kw), out_hw, geom)
        if _conv_grid.use_grid(x.shape, (kh, kw), out_hw, geom):
            xp = padded_nhwc(x, geom.pads)
            gh = gm.reshape(x.shape[0], out_hw[0], out_hw[1], o)
            return _conv_grid.grid_weight_grad(xp, gh, (kh, kw), geom.dilation)
        og = o // geom.groups
        gw = new_like(gm, (o, kh * kw * cg))
        win = _windows(x, (kh, kw), out_hw, geom)
        for rows, k, cols in _column_blocks(win, geom.groups):
            gw[k * og : (k + 1) * og] += gm[rows, k * og : (k + 1) * og].T @ cols
        return gw
