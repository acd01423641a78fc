"""Max pooling of 2x2 tiling windows (``MaxPool2d(2)``) as a tournament.

Note [2x2 max pooling]
Each window is reduced in two rounds on the channels-last (N, Ho, 2, Wo, 2, C) view:
first the two columns of each window row (``gt1 = right > left``, a max), then the two
row maxima (``gt2 = lower > upper``, a max). Strict comparisons keep the first maximum
in row-major order on ties, as torch. The pair (gt1, gt2) names each window's tap (row
gt2, column gt1[row]) in 3/4 of a byte per output instead of the four bytes of the
one-hot mask of Note [Tiled max pooling], and costs two fewer passes to build than
mask and first-maximum filter: on the digits CNN's pool (64 x 16 x 8 x 8) forward
136 -> 67 us and forward + backward 180 -> 130 us (one core, busy machine). A window
holding a NaN takes the NaN (the last one, as torch): those windows are rare, so the
kernel then runs the one-hot path of _pool_ops and reads its choice into (gt1, gt2).
The gradient routes g with two multiplies per row (``g·gt2``, ``g − g·gt2``) when g is
finite, and with ``where`` otherwise (inf · 0 would put NaN off the maxima). Both
directions move the windows' columns as whole channel runs (Note [Interleaving channel
runs]): forward 92 -> 46 us, backward 54 -> 49 us (best of 15, one core, loaded machine).
"""

from __future__ import annotations

import numpy as np

from .._trace import opaque
from ..autograd.graph import keeps_arrays, make_result
from ._conv_ops import nhwc
from ._pool_link import zero_input_grad


def is_2x2(kernel):
    return tuple(kernel) == (2, 2)


def _view(a, out_hw):
    """(N, C, H, W) array as its (N, Ho, 2, Wo, 2, C) windows (a view)."""
    ho, wo = out_hw
    n, c = a.shape[:2]
    return nhwc(a)[:, : 2 * ho, : 2 * wo].reshape(n, ho, 2, wo, 2, c)


def max_pool_2x2(x, out_hw, return_indices, tiled_kernel):
    """``(out, idx)`` of 2x2 max pooling; ``tiled_kernel`` is the one-hot kernel for NaNs."""
    best, gt1, gt2 = opaque(_forward_kernel, x._data, out_hw, tiled_kernel)
    x_shape = x._data.shape

    def backward(g):
        return (_scatter(g, gt1, gt2, x_shape, x),)

    def array_backward(g):  # Note [Array backward] in autograd/engine.py
        return (_scatter_kernel(g, gt1, gt2, x_shape),)

    out = make_result(
        best, (x,), backward, "MaxPool2DWithIndicesBackward", array_backward=array_backward
    )
    keeps_arrays(out)
    return out, opaque(_indices_kernel, gt1, gt2) if return_indices else None


def _forward_kernel(x, out_hw, tiled_kernel):
    """``(best, gt1, gt2)``: the (N, C, Ho, Wo) maxima (a view of a channels-last array),
    (N, Ho, 2, Wo, C) column choices per window row and (N, Ho, Wo, C) row choices."""
    left, right, owned = _columns(x, out_hw)
    gt1 = np.greater(right, left)
    rows = np.maximum(left, right, out=left if owned else None)
    gt2 = np.greater(rows[:, :, 1], rows[:, :, 0])
    best = np.maximum(rows[:, :, 0], rows[:, :, 1])
    if np.isnan(best).any():  # rare: torch's NaN rule through the one-hot kernel
        best, mask = tiled_kernel(x, (2, 2), out_hw)
        gt2 = mask[:, :, 1, :, 0] | mask[:, :, 1, :, 1]
        gt1 = mask[:, :, :, :, 1]
        return best, np.ascontiguousarray(gt1), gt2
    return best.transpose(0, 3, 1, 2), gt1, gt2


def _columns(x, out_hw):
    """``(left, right, owned)``: the (N, Ho, 2, Wo, C) left and right columns of every
    window, new dense arrays (``owned``) when ``x`` is channels-last (Note [Interleaving
    channel runs]: a ufunc reading them in place walks runs of C elements), else views."""
    ho, wo = out_hw
    n, c = x.shape[:2]
    xh = nhwc(x)[:, : 2 * ho, : 2 * wo]
    if c < 2 or xh.strides[3] != x.itemsize:
        v = xh.reshape(n, ho, 2, wo, 2, c)
        return v[:, :, :, :, 0], v[:, :, :, :, 1], False
    unit = np.dtype((np.void, c * x.itemsize))
    taps = xh.view(unit)[..., 0].reshape(n, ho, 2, wo, 2)
    left = np.empty((n, ho, 2, wo), unit)
    right = np.empty((n, ho, 2, wo), unit)
    left[...] = taps[..., 0]
    right[...] = taps[..., 1]
    shape = (n, ho, 2, wo, c)
    return left.view(x.dtype).reshape(shape), right.view(x.dtype).reshape(shape), True


def _indices_kernel(gt1, gt2):
    """(N, C, Ho, Wo) tap index 2·row + column of each window's choice."""
    col = np.where(gt2, gt1[:, :, 1], gt1[:, :, 0])
    idx = gt2.astype(np.uint8)
    idx *= 2
    idx += col
    return idx.transpose(0, 3, 1, 2)


def _scatter(g, gt1, gt2, x_shape, x=None):
    """g placed at each window's chosen tap, 0 elsewhere: (N, C, H, W) (a function of the
    pooled input ``x`` too: Note [Max-pool gradient takes the input] in _pool_link.py)."""
    out = opaque(_scatter_kernel, g._data, gt1, gt2, x_shape)

    def backward(v):
        return _gather(v, gt1, gt2), zero_input_grad(x)

    return keeps_arrays(make_result(out, (g, x), backward, "MaxPool2DBackwardBackward"))


def _scatter_kernel(g, gt1, gt2, x_shape):
    n, c, h, w = x_shape
    gh = nhwc(g)
    _, ho, wo, _ = gh.shape
    rows = np.empty((n, ho, 2, wo, c), gh.dtype)  # g routed to the chosen row of its window
    if np.isfinite(gh).all():
        np.multiply(gh, gt2, out=rows[:, :, 1])
        np.subtract(gh, rows[:, :, 1], out=rows[:, :, 0])
        right = np.multiply(rows, gt1)
        left = np.subtract(rows, right, out=rows)
    else:  # inf · 0 would leave NaN off the maxima
        zero = np.zeros((), gh.dtype)
        np.copyto(rows[:, :, 1], np.where(gt2, gh, zero))
        np.copyto(rows[:, :, 0], np.where(gt2, zero, gh))
        right = np.where(gt1, rows, zero)
        left = np.where(gt1, zero, rows)
    out = _interleave(left, right)
    if (2 * ho, 2 * wo) != (h, w):  # cells past the last window get no gradient
        padded = np.zeros((n, h, w, c), gh.dtype)
        padded[:, : 2 * ho, : 2 * wo] = out
        out = padded
    return out.transpose(0, 3, 1, 2)


def _interleave(left, right):
    """The dense (N, 2·Ho, 2·Wo, C) array whose window taps (row a, column 0/1) are
    ``left[:, :, a]`` / ``right[:, :, a]``, both dense (N, Ho, 2, Wo, C).

    Note [Interleaving channel runs]
    Writing a tap's values into the channels-last result moves runs of C elements (a
    stride of 2·C between them), and NumPy pays its inner-loop overhead per run whatever
    the ufunc: on the digits CNN's pool (64 x 16 x 8 x 8) four such float copies cost more
    than all the arithmetic of the gradient. Viewed as one void element of C·itemsize
    bytes per run, the same moves are two plain copies of (N, Ho, 2, Wo) elements.
    """
    n, ho, _, wo, c = left.shape
    unit = np.dtype((np.void, c * left.itemsize))
    out = np.empty((n, ho, 2, wo, 2), unit)
    out[..., 0] = left.view(unit)[..., 0]
    out[..., 1] = right.view(unit)[..., 0]
    return out.view(left.dtype).reshape(n, 2 * ho, 2 * wo, c)


def _gather(x, gt1, gt2):
    """Each window's value at its chosen tap (max pooling with the positions fixed)."""
    out = opaque(_gather_kernel, x._data, gt1, gt2)
    x_shape = x._data.shape

    def backward(g):
        return (_scatter(g, gt1, gt2, x_shape),)

    return keeps_arrays(make_result(out, (x,), backward, "MaxPool2DGatherBackward"))


def _gather_kernel(x, gt1, gt2):
    v = _view(x, gt2.shape[1:3])
    rows = [np.where(gt1[:, :, i], v[:, :, i, :, 1], v[:, :, i, :, 0]) for i in range(2)]
    return np.where(gt2, rows[1], rows[0]).transpose(0, 3, 1, 2)
