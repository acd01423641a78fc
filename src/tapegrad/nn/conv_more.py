"""Conv1d, Conv3d, ConvTranspose1d and ConvTranspose2d, as torch (parameters, init, repr)."""

from __future__ import annotations

import math

from . import _conv_more as C
from . import init
from .linear import empty_parameter
from .module import Module

__all__ = ["Conv1d", "Conv3d", "ConvTranspose1d", "ConvTranspose2d"]


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


class Conv1d(_ConvNd):
    """1-D convolution over (N, C, L) or (C, L).

    >>> import tapegrad as tg
    >>> tg.nn.Conv1d(2, 4, 3, padding=1)(tg.randn(5, 2, 7)).shape
    (5, 4, 7)
    """

    _n = 1

    def forward(self, input):
        return C.conv1d(
            input, self.weight, self.bias, self.stride, self.padding, self.dilation, self.groups
        )


class Conv3d(_ConvNd):
    """3-D convolution over (N, C, D, H, W) or (C, D, H, W)."""

    _n = 3

    def forward(self, input):
        return C.conv3d(
            input, self.weight, self.bias, self.stride, self.padding, self.dilation, self.groups
        )


class _ConvTransposeNd(_ConvNd):
    _transposed = True

    def __init__(
        self,
        in_channels,
        out_channels,
        kernel_size,
        stride=1,
        padding=0,
        output_padding=0,
        groups=1,
        bias=True,
        dilation=1,
        padding_mode="zeros",
        device=None,
        dtype=None,
    ):
        super().__init__(
            in_channels, out_channels, kernel_size, stride, padding, dilation, groups, bias,
            padding_mode, device, dtype, output_padding,
        )  # fmt: skip

    def _output_padding(self, input, output_size):
        if output_size is None:
            return self.output_padding
        n = self._n
        want = tuple(output_size)[-n:]
        out = []
        for i in range(n):
            lo = (
                (input.shape[-n + i] - 1) * self.stride[i]
                - 2 * self.padding[i]
                + self.dilation[i] * (self.kernel_size[i] - 1)
                + 1
            )
            extra = want[i] - lo
            if not 0 <= extra < max(self.stride[i], self.dilation[i]):
                raise ValueError(
                    f"requested an output size of {list(want)}, but valid sizes range from "
                    f"{lo} to {lo + max(self.stride[i], self.dilation[i]) - 1} in dim {i}"
                )
            out.append(extra)
        return tuple(out)


class ConvTranspose1d(_ConvTransposeNd):
    """Transposed 1-D convolution (the gradient of Conv1d with respect to its input)."""

    _n = 1

    def forward(self, input, output_size=None):
        return C.conv_transpose1d(
            input, self.weight, self.bias, self.stride, self.padding,
            self._output_padding(input, output_size), self.groups, self.dilation,
        )  # fmt: skip


class ConvTranspose2d(_ConvTransposeNd):
    """Transposed 2-D convolution (the gradient of Conv2d with respect to its input).

    >>> import tapegrad as tg
    >>> tg.nn.ConvTranspose2d(4, 2, 3, stride=2)(tg.randn(1, 4, 5, 5)).shape
    (1, 2, 11, 11)
    """

    _n = 2

    def forward(self, input, output_size=None):
        return C.conv_transpose2d(
            input, self.weight, self.bias, self.stride, self.padding,
            self._output_padding(input, output_size), self.groups, self.dilation,
        )  # fmt: skip
