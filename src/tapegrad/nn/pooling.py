"""MaxPool2d and AvgPool2d."""

from __future__ import annotations

from . import functional as F
from .module import Module

__all__ = ["MaxPool2d", "AvgPool2d"]


class _MaxPoolNd(Module):
    """torch's MaxPool{1,2,3}d: arguments, state and repr; ``_fn`` is the functional op."""

    _fn = None

    def __init__(
        self, kernel_size, stride=None, padding=0, dilation=1, return_indices=False, ceil_mode=False
    ):
        super().__init__()
        self.kernel_size = kernel_size
        self.stride = stride if stride is not None else kernel_size
        self.padding = padding
        self.dilation = dilation
        self.return_indices = return_indices
        self.ceil_mode = ceil_mode

    def forward(self, input):
        return type(self)._fn(
            input, self.kernel_size, self.stride, self.padding, self.dilation, self.ceil_mode,
            self.return_indices,
        )  # fmt: skip

    def extra_repr(self):
        return (
            f"kernel_size={self.kernel_size}, stride={self.stride}, padding={self.padding}, "
            f"dilation={self.dilation}, ceil_mode={self.ceil_mode}"
        )


class _AvgPoolNd(Module):
    """torch's AvgPool2d/3d: arguments, state and repr; ``_fn`` is the functional op."""

    _fn = None

    def __init__(
        self,
        kernel_size,
        stride=None,
        padding=0,
        ceil_mode=False,
        count_include_pad=True,
        divisor_override=None,
    ):
        super().__init__()
        self.kernel_size = kernel_size
        self.stride = stride if stride is not None else kernel_size
        self.padding = padding
        self.ceil_mode = ceil_mode
        self.count_include_pad = count_include_pad
        self.divisor_override = divisor_override

    def forward(self, input):
        return type(self)._fn(
            input, self.kernel_size, self.stride, self.padding, self.ceil_mode,
            self.count_include_pad, self.divisor_override,
        )  # fmt: skip

    def extra_repr(self):
        return f"kernel_size={self.kernel_size}, stride={self.stride}, padding={self.padding}"


class MaxPool2d(_MaxPoolNd):
    """Max over (dilated) windows; the gradient flows to each window's first maximum (a
    window holding NaN: its last NaN, as torch).

    >>> import tapegrad as tg
    >>> tg.nn.MaxPool2d(2)(tg.ones(1, 1, 4, 4)).shape
    tapegrad.Size([1, 1, 2, 2])
    """

    _fn = staticmethod(F.max_pool2d)


class AvgPool2d(_AvgPoolNd):
    """Mean over windows (``count_include_pad``: padding counts in the divisor)."""

    _fn = staticmethod(F.avg_pool2d)
