"""MaxPool1d, AvgPool1d and the adaptive pools, as torch (arguments and repr)."""

from __future__ import annotations

from . import _pool_more as P
from .module import Module
from .pooling import _MaxPoolNd

__all__ = [
    "MaxPool1d",
    "AvgPool1d",
    "AdaptiveAvgPool1d",
    "AdaptiveAvgPool2d",
    "AdaptiveMaxPool1d",
    "AdaptiveMaxPool2d",
]


class MaxPool1d(_MaxPoolNd):
    """Max over sliding windows of (N, C, L)."""

    _fn = staticmethod(P.max_pool1d)


def _single(v):
    return tuple(v) if isinstance(v, (tuple, list)) else (v,)


class AvgPool1d(Module):
    """Mean over sliding windows of (N, C, L)."""

    def __init__(
        self, kernel_size, stride=None, padding=0, ceil_mode=False, count_include_pad=True
    ):
        super().__init__()
        self.kernel_size = _single(kernel_size)
        self.stride = _single(stride if stride is not None else kernel_size)
        self.padding = _single(padding)
        self.ceil_mode = ceil_mode
        self.count_include_pad = count_include_pad

    def forward(self, input):
        return P.avg_pool1d(
            input, self.kernel_size, self.stride, self.padding, self.ceil_mode,
            self.count_include_pad,
        )  # fmt: skip

    def extra_repr(self):
        return f"kernel_size={self.kernel_size}, stride={self.stride}, padding={self.padding}"


class _Adaptive(Module):
    _fn = None

    def __init__(self, output_size):
        super().__init__()
        self.output_size = output_size

    def forward(self, input):
        return self._fn(input, self.output_size)

    def extra_repr(self):
        return f"output_size={self.output_size}"


class AdaptiveAvgPool1d(_Adaptive):
    """Average over ``output_size`` adaptive windows of (N, C, L)."""

    _fn = staticmethod(P.adaptive_avg_pool1d)


class AdaptiveAvgPool2d(_Adaptive):
    """Average over adaptive windows of (N, C, H, W) (``output_size`` int or (h, w)).

    >>> import tapegrad as tg
    >>> tg.nn.AdaptiveAvgPool2d((2, 3))(tg.randn(1, 4, 7, 8)).shape
    tapegrad.Size([1, 4, 2, 3])
    """

    _fn = staticmethod(P.adaptive_avg_pool2d)


class _AdaptiveMax(_Adaptive):
    def __init__(self, output_size, return_indices=False):
        super().__init__(output_size)
        self.return_indices = return_indices

    def forward(self, input):
        return self._fn(input, self.output_size, self.return_indices)


class AdaptiveMaxPool1d(_AdaptiveMax):
    """Max over adaptive windows of (N, C, L)."""

    _fn = staticmethod(P.adaptive_max_pool1d)


class AdaptiveMaxPool2d(_AdaptiveMax):
    """Max over adaptive windows of (N, C, H, W)."""

    _fn = staticmethod(P.adaptive_max_pool2d)
