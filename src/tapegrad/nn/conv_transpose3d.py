"""ConvTranspose3d, as torch (parameters, init, repr)."""

from __future__ import annotations

from ._conv_transpose3d import conv_transpose3d
from .conv_more import _ConvTransposeNd

__all__ = ["ConvTranspose3d"]


class ConvTranspose3d(_ConvTransposeNd):
    """Transposed 3-D convolution (the gradient of Conv3d with respect to its input).

    >>> import tapegrad as tg
    >>> tg.nn.ConvTranspose3d(4, 2, 3, stride=2)(tg.randn(1, 4, 2, 3, 3)).shape
    tapegrad.Size([1, 2, 5, 7, 7])
    """

    _n = 3

    def forward(self, input, output_size=None):
        return conv_transpose3d(
            input, self.weight, self.bias, self.stride, self.padding,
            self._output_padding(input, output_size), self.groups, self.dilation,
        )  # fmt: skip
