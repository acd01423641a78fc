"""conv1d, conv3d, conv_transpose1d/2d: lowered onto the fused 2-D convolution of
``_conv_ops`` (a 1-D signal is a 2-D one of height 1; a 3-D convolution is a sum over the
kernel's depth of 2-D convolutions; a transposed convolution is the input gradient of a
convolution, which ``_conv_ops`` already provides with its own double backward)."""

from __future__ import annotations

import numpy as np

from ..ops import _dtype_errors
from ..ops._util import bfloat16_in_float32
from ..ops.joining import pad as _pad
from ..tensor import Tensor
from . import _conv_ops
from ._conv_ops import Geometry

__all__ = ["conv1d", "conv3d", "conv_transpose1d", "conv_transpose2d", "tuple_arg"]


def tuple_arg(v, n, op, name):
    if isinstance(v, (int, np.integer)):
        return (int(v),) * n
    if isinstance(v, (tuple, list)) and len(v) == n and all(isinstance(a, int) for a in v):
        return tuple(v)
    if isinstance(v, str):  # torch's argument parser: conv_transpose2d(padding='same')
        raise TypeError(f"{op}(): argument '{name}' must be tuple of ints, not str")
    raise RuntimeError(f"{op}: {name} must be an int or a tuple of {n} ints, got {v!r}")


def check_padding_string(op, padding, stride):
    """PyTorch's RuntimeErrors for a padding string: not 'valid'/'same', or 'same' with a
    stride (the nn.Conv modules raise ValueError at construction instead)."""
    if padding not in ("valid", "same"):
        raise RuntimeError(f"{op}: Invalid padding string: {padding!r}")
    if padding == "same" and any(s != 1 for s in stride):
        raise RuntimeError(
            f"{op}: padding='same' is not supported for strided convolutions "
            f"(stride={list(stride)})"
        )


def _check(op, x, weight, bias, n, groups, transposed=False):
    for name, t in (("input", x), ("weight", weight), ("bias", bias)):
        if not isinstance(t, Tensor) and (t is not None or name != "bias"):
            raise TypeError(f"{op}: {name} must be a Tensor, got {type(t).__name__}")
    if x.ndim not in (n + 1, n + 2):
        raise RuntimeError(
            f"{op}: Expected {n + 1}D (unbatched) or {n + 2}D (batched) input, but got input "
            f"of size: {list(x.shape)}"
        )
    if weight.ndim != n + 2:
        raise RuntimeError(f"{op}: weight must be {n + 2}-D, got shape {list(weight.shape)}")
    added = x.ndim == n + 1
    if added:
        x = x.unsqueeze(0)
    c = x.shape[1]
    if transposed:
        ok = weight.shape[0] == c and c % groups == 0
        out_c = weight.shape[1] * groups
    else:
        ok = groups >= 1 and c % groups == 0 and weight.shape[1] * groups == c
        ok = ok and weight.shape[0] % groups == 0
        out_c = weight.shape[0]
    if not ok:
        raise RuntimeError(
            f"{op}: input of shape {list(x.shape)}, weight of shape {list(weight.shape)} and "
            f"groups={groups} don't match"
        )
    if bias is not None and tuple(bias.shape) != (out_c,):
        raise RuntimeError(f"{op}: bias must have shape [{out_c}], got {list(bias.shape)}")
    _dtype_errors.conv_check(
        x._data, weight._data, None if bias is None else bias._data, transposed
    )
    return x, added


def conv1d(input, weight, bias=None, stride=1, padding=0, dilation=1, groups=1):
    """1-D convolution of (N, C, L) (or (C, L)) with weight (O, C/groups, k)."""
    from .functional import conv2d  # noqa: PLC0415 - functional imports this module

    x, added = _check("conv1d", input, weight, bias, 1, groups)
    (s,) = tuple_arg(stride, 1, "conv1d", "stride")
    (d,) = tuple_arg(dilation, 1, "conv1d", "dilation")
    if isinstance(padding, str):
        check_padding_string("conv1d", padding, (s,))
    pad = (
        padding if isinstance(padding, str) else (0, tuple_arg(padding, 1, "conv1d", "padding")[0])
    )
    out = conv2d(x.unsqueeze(2), weight.unsqueeze(2), bias, (1, s), pad, (1, d), groups)
    out = out.squeeze(2)
    return out.squeeze(0) if added else out


@bfloat16_in_float32  # a sum of 2-D convolutions: rounded once (Note [bfloat16 opmath])
def conv3d(input, weight, bias=None, stride=1, padding=0, dilation=1, groups=1):
    """3-D convolution of (N, C, D, H, W) with weight (O, C/groups, kd, kh, kw): for each
    kernel depth, one 2-D convolution over the matching input depth slices (batched)."""
    x, added = _check("conv3d", input, weight, bias, 3, groups)
    stride = tuple_arg(stride, 3, "conv3d", "stride")
    dilation = tuple_arg(dilation, 3, "conv3d", "dilation")
    kd, kh, kw = weight.shape[2:]
    if isinstance(padding, str):
        check_padding_string("conv3d", padding, stride)
        if padding == "valid":
            pads = ((0, 0),) * 3
        else:
            pads = tuple(
                (dd * (k - 1) // 2, dd * (k - 1) - dd * (k - 1) // 2)
                for k, dd in zip((kd, kh, kw), dilation)
            )
    else:
        p = tuple_arg(padding, 3, "conv3d", "padding")
        pads = tuple((q, q) for q in p)
    n, c, depth = x.shape[:3]
    if any(q for pair in pads[:1] for q in pair):
        x = _pad(x, [0, 0, 0, 0, pads[0][0], pads[0][1]])
    dp = depth + pads[0][0] + pads[0][1]
    d_out = (dp - dilation[0] * (kd - 1) - 1) // stride[0] + 1
    h_out = (x.shape[3] + sum(pads[1]) - dilation[1] * (kh - 1) - 1) // stride[1] + 1
    w_out = (x.shape[4] + sum(pads[2]) - dilation[2] * (kw - 1) - 1) // stride[2] + 1
    if min(d_out, h_out, w_out) < 1:
        raise RuntimeError(
            f"conv3d: input of shape {list(input.shape)} (padded by {list(pads)}) is smaller than "
            f"the dilated kernel {[kd, kh, kw]}"
        )
    geom = Geometry(stride[1:], pads[1:], dilation[1:], groups)
    total = None
    for t in range(kd):
        start = t * dilation[0]
        sl = x[:, :, start : start + (d_out - 1) * stride[0] + 1 : stride[0]]
        sl = sl.transpose(1, 2).reshape((n * d_out, c) + tuple(x.shape[3:]))
        part = _conv_ops.conv2d(sl, weight[:, :, t], None, geom)
        total = part if total is None else total + part
    o = weight.shape[0]
    out = total.reshape((n, d_out, o, h_out, w_out)).transpose(1, 2)
    if bias is not None:
        out = out + bias.reshape((o, 1, 1, 1))
    return out.squeeze(0) if added else out


@bfloat16_in_float32
def conv_transpose2d(
    input, weight, bias=None, stride=1, padding=0, output_padding=0, groups=1, dilation=1
):
    """Transposed 2-D convolution of (N, C_in, H, W) with weight (C_in, C_out/groups, kh, kw):
    the gradient of ``conv2d`` with respect to its input.

    H_out = (H − 1)·stride − 2·padding + dilation·(kh − 1) + output_padding + 1.
    """
    x, added = _check("conv_transpose2d", input, weight, bias, 2, groups, transposed=True)
    stride = tuple_arg(stride, 2, "conv_transpose2d", "stride")
    padding = tuple_arg(padding, 2, "conv_transpose2d", "padding")
    out_pad = tuple_arg(output_padding, 2, "conv_transpose2d", "output_padding")
    dilation = tuple_arg(dilation, 2, "conv_transpose2d", "dilation")
    for op_, s, d in zip(out_pad, stride, dilation):
        if op_ >= max(s, d):
            raise RuntimeError(
                "conv_transpose2d: output padding must be smaller than either stride or dilation,"
                f" but got output_padding={list(out_pad)}, stride={list(stride)}, "
                f"dilation={list(dilation)}"
            )
    k = weight.shape[2:]
    size = tuple(
        (n - 1) * s - 2 * p + d * (kk - 1) + op_ + 1
        for n, s, p, d, kk, op_ in zip(x.shape[2:], stride, padding, dilation, k, out_pad)
    )
    if min(size) < 1:
        raise RuntimeError(f"conv_transpose2d: the output size {list(size)} is too small")
    c_out = weight.shape[1] * groups
    # output_padding rows/cols are covered by no window: they get zeros (and no gradient)
    geom = Geometry(stride, tuple((p, p) for p in padding), dilation, groups)
    out = _conv_ops.conv2d_input_grad(x, weight, (x.shape[0], c_out) + size, geom)
    if bias is not None:  # (cast to the input's dtype, as torch's)
        out = out + bias.to(x.dtype).reshape((c_out, 1, 1))
    return out.squeeze(0) if added else out


def conv_transpose1d(
    input, weight, bias=None, stride=1, padding=0, output_padding=0, groups=1, dilation=1
):
    """Transposed 1-D convolution of (N, C_in, L) with weight (C_in, C_out/groups, k)."""
    x, added = _check("conv_transpose1d", input, weight, bias, 1, groups, transposed=True)

    def one(v, name):
        return (1, tuple_arg(v, 1, "conv_transpose1d", name)[0])

    out = conv_transpose2d(
        x.unsqueeze(2),
        weight.unsqueeze(2),
        bias,
        one(stride, "stride"),
        (0, tuple_arg(padding, 1, "conv_transpose1d", "padding")[0]),
        (0, tuple_arg(output_padding, 1, "conv_transpose1d", "output_padding")[0]),
        groups,
        one(dilation, "dilation"),
    ).squeeze(2)
    return out.squeeze(0) if added else out


# vmap dispatch (Note [vmap levels]); the batching rules are in tapegrad/_batch_rules_more.py.
from ..ops._registry import vmap_hooked as _vmap_hooked  # noqa: E402

for _name in ("conv1d", "conv3d", "conv_transpose1d", "conv_transpose2d"):
    globals()[_name] = _vmap_hooked(_name, globals()[_name])
