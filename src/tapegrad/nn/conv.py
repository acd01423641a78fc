"""Conv2d."""

from __future__ import annotations

import math

from . import functional as F
from . import init
from .functional import _pair
from .linear import empty_parameter
from .module import Module

__all__ = ["Conv2d"]


class Conv2d(Module):
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
    (2, 4, 8, 8)
    """

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
    ):
        super().__init__()
        if padding_mode != "zeros":
            raise NotImplementedError(
                f"Conv2d: padding_mode={padding_mode!r} is not supported yet (only 'zeros')"
            )
        if groups < 1 or in_channels % groups or out_channels % groups:
            raise ValueError("in_channels and out_channels must be divisible by groups")
        if isinstance(padding, str) and padding not in ("valid", "same"):
            raise ValueError(f"Invalid padding string {padding!r}, should be 'valid' or 'same'")
        self.in_channels = in_channels
        self.out_channels = out_channels
        self.kernel_size = _pair(kernel_size, "Conv2d", "kernel_size")
        self.stride = _pair(stride, "Conv2d", "stride")
        self.padding = padding if isinstance(padding, str) else _pair(padding, "Conv2d", "padding")
        self.dilation = _pair(dilation, "Conv2d", "dilation")
        self.groups = groups
        self.padding_mode = padding_mode
        self.weight = empty_parameter(
            (out_channels, in_channels // groups) + self.kernel_size, dtype, device
        )
        if bias:
            self.bias = empty_parameter((out_channels,), dtype, device)
        else:
            self.register_parameter("bias", None)
        self.reset_parameters()

    def reset_parameters(self):
        init.kaiming_uniform_(self.weight, a=math.sqrt(5))
        if self.bias is not None:
            fan_in = self.weight.shape[1] * self.kernel_size[0] * self.kernel_size[1]
            if fan_in:
                bound = 1 / math.sqrt(fan_in)
                init.uniform_(self.bias, -bound, bound)

    def forward(self, input):
        return F.conv2d(
            input, self.weight, self.bias, self.stride, self.padding, self.dilation, self.groups
        )

    def extra_repr(self):
        s = (
            f"{self.in_channels}, {self.out_channels}, kernel_size={self.kernel_size}, "
            f"stride={self.stride}"
        )
        if self.padding != (0, 0):
            s += (
                f", padding={self.padding!r}"
                if isinstance(self.padding, str)
                else f", padding={self.padding}"
            )
        if self.dilation != (1, 1):
            s += f", dilation={self.dilation}"
        if self.groups != 1:
            s += f", groups={self.groups}"
        if self.bias is None:
            s += ", bias=False"
        return s
