"""``F.unfold`` / ``F.fold`` (im2col and its adjoint) as grouped convolutions with a
constant one-hot weight: unfold is ``conv2d`` of each channel with the kh·kw unit
kernels, fold is the transposed convolution with the same weight. Both therefore reuse
the fused convolution and its double backward."""

from __future__ import annotations

import numpy as np

from ..tensor import Tensor
from . import _conv_ops
from ._conv_more import tuple_arg
from ._conv_ops import Geometry

__all__ = ["unfold", "fold"]


def _eye_weight(c, kh, kw, dtype):
    k = kh * kw
    w = np.zeros((c * k, 1, kh, kw), dtype)
    taps = np.arange(k)
    w[np.arange(c * k), 0, np.tile(taps // kw, c), np.tile(taps % kw, c)] = 1
    return Tensor._wrap(w)


def _args(op, kernel_size, dilation, padding, stride):
    return (
        tuple_arg(kernel_size, 2, op, "kernel_size"),
        tuple_arg(dilation, 2, op, "dilation"),
        tuple_arg(padding, 2, op, "padding"),
        tuple_arg(stride, 2, op, "stride"),
    )


def unfold(input, kernel_size, dilation=1, padding=0, stride=1):
    """Sliding blocks of (N, C, H, W) (or (C, H, W)) as columns: (N, C·kh·kw, L)."""
    k, d, p, s = _args("unfold", kernel_size, dilation, padding, stride)
    if input.ndim not in (3, 4):
        raise RuntimeError(
            f"Input Error: Only 3D or 4D input Tensors are supported (got {input.ndim}D)"
        )
    added = input.ndim == 3
    x = input.unsqueeze(0) if added else input
    n, c, h, w = x.shape
    oh = (h + 2 * p[0] - d[0] * (k[0] - 1) - 1) // s[0] + 1
    ow = (w + 2 * p[1] - d[1] * (k[1] - 1) - 1) // s[1] + 1
    if oh < 1 or ow < 1:
        raise RuntimeError(
            f"unfold: input of shape {list(input.shape)} is too small for kernel {list(k)} "
            f"(dilation {list(d)}, padding {list(p)})"
        )
    geom = Geometry(s, ((p[0], p[0]), (p[1], p[1])), d, c)
    cols = _conv_ops.conv2d(x, _eye_weight(c, *k, x._data.dtype), None, geom)
    out = cols.reshape((n, c * k[0] * k[1], oh * ow))
    return out.squeeze(0) if added else out


def fold(input, output_size, kernel_size, dilation=1, padding=0, stride=1):
    """Sum columns (N, C·kh·kw, L) back into (N, C, H, W), the adjoint of :func:`unfold`."""
    k, d, p, s = _args("fold", kernel_size, dilation, padding, stride)
    size = tuple_arg(output_size, 2, "fold", "output_size")
    if input.ndim not in (2, 3):
        raise RuntimeError(
            f"Input Error: Only unbatched (2D) or batched (3D) input Tensors are supported "
            f"(got {input.ndim}D)"
        )
    added = input.ndim == 2
    y = input.unsqueeze(0) if added else input
    n, ck, length = y.shape
    kk = k[0] * k[1]
    if ck % kk:
        raise RuntimeError(
            "Expected size of input's dimension 1 to be divisible by the product of "
            f"kernel_size, but got input.size(1)={ck} and kernel_size={k}"
        )
    oh = (size[0] + 2 * p[0] - d[0] * (k[0] - 1) - 1) // s[0] + 1
    ow = (size[1] + 2 * p[1] - d[1] * (k[1] - 1) - 1) // s[1] + 1
    if oh * ow != length:
        raise RuntimeError(
            f"Given output_size={size}, kernel_size={k}, dilation={d}, padding={p}, "
            f"stride={s}, expected size of input's dimension 2 to match the calculated number "
            f"of sliding blocks {oh} * {ow} = {oh * ow}, but got input.size(2)={length}."
        )
    c = ck // kk
    geom = Geometry(s, ((p[0], p[0]), (p[1], p[1])), d, c)
    out = _conv_ops.conv2d_input_grad(
        y.reshape((n, ck, oh, ow)), _eye_weight(c, *k, y._data.dtype), (n, c) + size, geom
    )
    return out.squeeze(0) if added else out
