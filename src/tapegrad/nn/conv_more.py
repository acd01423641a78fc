"""Conv1d, Conv3d, ConvTranspose1d and ConvTranspose2d, as torch (parameters, init, repr)."""

from __future__ import annotations

from .._device import Size
from . import _conv_more as C
from .conv import _ConvNd

__all__ = ["Conv1d", "Conv3d", "ConvTranspose1d", "ConvTranspose2d"]


class Conv1d(_ConvNd):
    """1-D convolution over (N, C, L) or (C, L).

    >>> import tapegrad as tg
    >>> tg.nn.Conv1d(2, 4, 3, padding=1)(tg.randn(5, 2, 7)).shape
    tapegrad.Size([5, 4, 7])
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
        want = output_size[-n:]  # its own type: torch's message prints it as given
        lo = [
            (input.shape[-n + i] - 1) * self.stride[i]
            - 2 * self.padding[i]
            + self.dilation[i] * (self.kernel_size[i] - 1)
            + 1
            for i in range(n)
        ]
        hi = [lo[i] + self.stride[i] - 1 for i in range(n)]  # torch's bound: the stride only
        for i in range(n):
            if not lo[i] <= want[i] <= hi[i]:
                raise ValueError(
                    f"requested an output size of {want}, but valid sizes range from {lo} to "
                    f"{hi} (for an input of {Size(input.shape[2:])})"
                )
        return tuple(want[i] - lo[i] for i in range(n))


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
    tapegrad.Size([1, 2, 11, 11])
    """

    _n = 2

    def forward(self, input, output_size=None):
        return C.conv_transpose2d(
            input, self.weight, self.bias, self.stride, self.padding,
            self._output_padding(input, output_size), self.groups, self.dilation,
        )  # fmt: skip
