"""Conv2d, and _ConvNd: torch's convolution modules' parameters, init and repr (the
other sizes and the transposed convolutions are in conv_more.py)."""

from __future__ import annotations

import math

from . import _conv_more as C
from . import functional as F
from . import init
from .linear import empty_parameter
from .module import Module

__all__ = ["Conv2d"]


class _ConvNd(Module):
    _n = 1
    _transposed = False

    def __init__(
        self,
        in_channels,
        out_channels,
        kernel_size,
        stride=1,
        padding=0,
        dilation=1,
        groups=1,
        bias=True,
        padding_mode="zeros",
        device=None,
        dtype=None,
        output_padding=0,
    ):
        super().__init__()
        name = type(self).__name__
        n = self._n
        if padding_mode != "zeros":
            raise NotImplementedError(
                f"{name}: padding_mode={padding_mode!r} is not supported yet (only 'zeros')"
            )
        if groups < 1 or in_channels % groups or out_channels % groups:
            raise ValueError("in_channels and out_channels must be divisible by groups")
        if isinstance(padding, str):
            if padding not in ("valid", "same"):
                raise ValueError(
                    f"Invalid padding string {padding!r}, should be one of {{'valid', 'same'}}"
                )
            if self._transposed:
                raise ValueError(f"{name}: padding strings are not supported")
            if padding == "same" and any(s != 1 for s in C.tuple_arg(stride, n, name, "stride")):
                raise ValueError("padding='same' is not supported for strided convolutions")
        self.in_channels = in_channels
        self.out_channels = out_channels
        self.kernel_size = C.tuple_arg(kernel_size, n, name, "kernel_size")
        self.stride = C.tuple_arg(stride, n, name, "stride")
        self.padding = (
            padding if isinstance(padding, str) else C.tuple_arg(padding, n, name, "padding")
        )
        self.dilation = C.tuple_arg(dilation, n, name, "dilation")
        self.output_padding = C.tuple_arg(output_padding, n, name, "output_padding")
        self.groups = groups
        self.padding_mode = padding_mode
        if self._transposed:
            shape = (in_channels, out_channels // groups) + self.kernel_size
        else:
            shape = (out_channels, in_channels // groups) + self.kernel_size
        self.weight = empty_parameter(shape, dtype, device)
        if bias:
            self.bias = empty_parameter((out_channels,), dtype, device)
        else:
            self.register_parameter("bias", None)
        self.reset_parameters()

    def reset_parameters(self):
        init.kaiming_uniform_(self.weight, a=math.sqrt(5))
        if self.bias is not None:
            fan_in = self.weight.shape[1] * math.prod(self.kernel_size)
            if fan_in:
                bound = 1 / math.sqrt(fan_in)
                init.uniform_(self.bias, -bound, bound)

    def extra_repr(self):
        n = self._n
        s = (
            f"{self.in_channels}, {self.out_channels}, kernel_size={self.kernel_size}, "
            f"stride={self.stride}"
        )
        if self.padding != (0,) * n:
            s += f", padding={self.padding}"
        if self.dilation != (1,) * n:
            s += f", dilation={self.dilation}"
        if self.output_padding != (0,) * n:
            s += f", output_padding={self.output_padding}"
        if self.groups != 1:
            s += f", groups={self.groups}"
        if self.bias is None:
            s += ", bias=False"
        return s


class Conv2d(_ConvNd):
    """2-D convolution over (N, C, H, W) inputs, as ``torch.nn.Conv2d``.

    Args:
        in_channels, out_channels: channel counts (both divisible by ``groups``).
        kernel_size, stride, dilation: int or pair.
        padding: int, pair, ``'valid'`` or ``'same'``.
        groups: split channels into this many independent convolutions.
        bias: add a learnable bias per output channel.
        padding_mode: only ``'zeros'``.

    >>> import tapegrad as tg
    >>> tg.nn.Conv2d(1, 4, 3, padding=1)(tg.ones(2, 1, 8, 8)).shape
    tapegrad.Size([2, 4, 8, 8])
    """

    _n = 2

    def forward(self, input):
        return F.conv2d(
            input, self.weight, self.bias, self.stride, self.padding, self.dilation, self.groups
        )
