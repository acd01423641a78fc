"""MaxPool3d, AvgPool3d, the adaptive 3-D pools, MaxUnpool1d/2d/3d and FractionalMaxPool2d/3d,
as torch (arguments and repr); the arithmetic is in _pool_nd and _pool_fractional."""

from __future__ import annotations

from . import _pool_fractional as PF
from . import _pool_nd as P
from .module import Module
from .pooling import _AvgPoolNd, _MaxPoolNd
from .pooling_more import _Adaptive, _AdaptiveMax

__all__ = [
    "MaxPool3d",
    "AvgPool3d",
    "AdaptiveAvgPool3d",
    "AdaptiveMaxPool3d",
    "MaxUnpool1d",
    "MaxUnpool2d",
    "MaxUnpool3d",
    "FractionalMaxPool2d",
    "FractionalMaxPool3d",
]


class MaxPool3d(_MaxPoolNd):
    """Max over sliding windows of (N, C, D, H, W) or (C, D, H, W).

    >>> import tapegrad as tg
    >>> tg.nn.MaxPool3d(2)(tg.randn(1, 2, 4, 4, 6)).shape
    tapegrad.Size([1, 2, 2, 2, 3])
    """

    _fn = staticmethod(P.max_pool3d)


class AvgPool3d(_AvgPoolNd):
    """Mean over sliding windows of (N, C, D, H, W) or (C, D, H, W)."""

    _fn = staticmethod(P.avg_pool3d)


class AdaptiveAvgPool3d(_Adaptive):
    """Average over adaptive windows of (N, C, D, H, W) (``output_size`` int or a triple)."""

    _fn = staticmethod(P.adaptive_avg_pool3d)


class AdaptiveMaxPool3d(_AdaptiveMax):
    """Max over adaptive windows of (N, C, D, H, W)."""

    _fn = staticmethod(P.adaptive_max_pool3d)


class _MaxUnpoolNd(Module):
    _n = 1
    _fn = None

    def __init__(self, kernel_size, stride=None, padding=0):
        super().__init__()
        n, name = self._n, type(self).__name__
        self.kernel_size = P.ntuple(kernel_size, n, name, "kernel_size")
        self.stride = P.ntuple(stride if stride is not None else kernel_size, n, name, "stride")
        self.padding = P.ntuple(padding, n, name, "padding")

    def forward(self, input, indices, output_size=None):
        return type(self)._fn(
            input, indices, self.kernel_size, self.stride, self.padding, output_size
        )

    def extra_repr(self):
        return f"kernel_size={self.kernel_size}, stride={self.stride}, padding={self.padding}"


class MaxUnpool1d(_MaxUnpoolNd):
    """The inverse of MaxPool1d: ``forward(input, indices, output_size=None)``."""

    _n = 1
    _fn = staticmethod(P.max_unpool1d)


class MaxUnpool2d(_MaxUnpoolNd):
    """The inverse of MaxPool2d: ``forward(input, indices, output_size=None)``.

    >>> import tapegrad as tg
    >>> x = tg.randn(1, 1, 4, 4)
    >>> y, idx = tg.nn.MaxPool2d(2, return_indices=True)(x)
    >>> tg.nn.MaxUnpool2d(2)(y, idx).shape
    tapegrad.Size([1, 1, 4, 4])
    """

    _n = 2
    _fn = staticmethod(P.max_unpool2d)


class MaxUnpool3d(_MaxUnpoolNd):
    """The inverse of MaxPool3d: ``forward(input, indices, output_size=None)``."""

    _n = 3
    _fn = staticmethod(P.max_unpool3d)


class _FractionalMaxPoolNd(Module):
    _fn = None

    def __init__(
        self, kernel_size, output_size=None, output_ratio=None, return_indices=False,
        _random_samples=None,
    ):  # fmt: skip
        super().__init__()
        if output_size is None and output_ratio is None:
            raise ValueError(
                f"{type(self).__name__} requires specifying either an output size, or a pooling "
                "ratio"
            )
        if output_size is not None and output_ratio is not None:
            raise ValueError("only one of output_size and output_ratio may be specified")
        self.kernel_size = kernel_size
        self.output_size = output_size
        self.output_ratio = output_ratio
        self.return_indices = return_indices
        self.register_buffer("_random_samples", _random_samples)

    def forward(self, input):
        return type(self)._fn(
            input, self.kernel_size, self.output_size, self.output_ratio, self.return_indices,
            _random_samples=self._random_samples,
        )  # fmt: skip


class FractionalMaxPool2d(_FractionalMaxPoolNd):
    """Fractional max pooling of (N, C, H, W) (Graham, 2014): see
    ``tapegrad.nn.functional.fractional_max_pool2d``."""

    _fn = staticmethod(PF.fractional_max_pool2d)


class FractionalMaxPool3d(_FractionalMaxPoolNd):
    """Fractional max pooling of (N, C, D, H, W): see
    ``tapegrad.nn.functional.fractional_max_pool3d``."""

    _fn = staticmethod(PF.fractional_max_pool3d)
