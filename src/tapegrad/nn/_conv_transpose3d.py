"""conv_transpose3d, lowered onto the 2-D transposed convolution.

A transposed convolution scatters every input position into the output: input depth i,
kernel depth t lands at output depth i·stride + t·dilation (before cropping the padding).
So for each kernel depth t, the 2-D transposed convolution (over H, W) of every input
depth slice with ``weight[:, :, t]`` is spread out along depth (stride − 1 zeros between
slices), shifted by t·dilation, and the kd results are summed; the padding is then cropped
and ``output_padding`` appends zeros. Every step is a differentiable op, so the gradients
(of any order) come from the 2-D kernel's rules.
"""

from __future__ import annotations

from ..ops._util import bfloat16_in_float32
from ..ops.joining import pad as _pad
from ._conv_more import _check, conv_transpose2d, tuple_arg

__all__ = ["conv_transpose3d"]


@bfloat16_in_float32
def conv_transpose3d(
    input, weight, bias=None, stride=1, padding=0, output_padding=0, groups=1, dilation=1
):
    """Transposed 3-D convolution of (N, C_in, D, H, W) (or unbatched (C_in, D, H, W)) with
    weight (C_in, C_out/groups, kd, kh, kw); bias (C_out,).

    D_out = (D − 1)·stride − 2·padding + dilation·(kd − 1) + output_padding + 1 (likewise H, W).
    """
    op = "conv_transpose3d"
    x, added = _check(op, input, weight, bias, 3, groups, transposed=True)
    stride = tuple_arg(stride, 3, op, "stride")
    padding = tuple_arg(padding, 3, op, "padding")
    out_pad = tuple_arg(output_padding, 3, op, "output_padding")
    dilation = tuple_arg(dilation, 3, op, "dilation")
    for o, s, d in zip(out_pad, stride, dilation, strict=True):
        if o >= max(s, d):
            raise RuntimeError(
                f"{op}: output padding must be smaller than either stride or dilation, but got "
                f"output_padding={list(out_pad)}, stride={list(stride)}, dilation={list(dilation)}"
            )
    n, c_in, depth, h, w = x.shape
    kd = weight.shape[2]
    size = [
        (m - 1) * s - 2 * p + d * (k - 1) + o + 1
        for m, s, p, d, k, o in zip(
            x.shape[2:], stride, padding, dilation, weight.shape[2:], out_pad, strict=True
        )
    ]
    if min(size) < 1:
        raise RuntimeError(f"{op}: the output size {size} is too small")
    sd, dd = stride[0], dilation[0]
    full = (depth - 1) * sd + dd * (kd - 1) + 1  # output depth before cropping the padding
    slices = x.transpose(1, 2).reshape((n * depth, c_in, h, w))
    total = None
    for t in range(kd):
        y = conv_transpose2d(
            slices, weight[:, :, t], None, stride[1:], padding[1:], out_pad[1:], groups,
            dilation[1:],
        )  # fmt: skip
        y = y.reshape((n, depth) + tuple(y.shape[1:]))  # (N, D, C_out, H_out, W_out)
        if sd > 1:  # stride - 1 zero slices after every slice, the trailing ones dropped
            y = _pad(y.unsqueeze(2), [0, 0, 0, 0, 0, 0, 0, sd - 1])
            y = y.reshape((n, depth * sd) + tuple(y.shape[3:]))[:, : (depth - 1) * sd + 1]
        y = _pad(y, [0, 0, 0, 0, 0, 0, t * dd, full - (depth - 1) * sd - 1 - t * dd])
        total = y if total is None else total + y
    # crop the padding before, and after it up to output_padding (negative widths crop)
    out = _pad(total, [0, 0, 0, 0, 0, 0, -padding[0], size[0] - full + padding[0]])
    out = out.transpose(1, 2)
    if bias is not None:
        out = out + bias.to(x.dtype).reshape((-1, 1, 1, 1))  # cast, as torch
    return out.squeeze(0) if added else out


# vmap dispatch (Note [vmap levels]); the batching rules are in tapegrad/_batch_rules_more.py.
from ..ops._registry import vmap_hooked as _vmap_hooked  # noqa: E402

for _name in ("conv_transpose3d",):
    globals()[_name] = _vmap_hooked(_name, globals()[_name])
