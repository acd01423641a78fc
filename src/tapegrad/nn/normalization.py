"""BatchNorm1d, BatchNorm2d and LayerNorm."""

from __future__ import annotations

import numpy as np

from .. import _dtypes
from ..tensor import Tensor
from . import functional as F
from . import init
from .linear import empty_parameter
from .module import Module

__all__ = ["BatchNorm1d", "BatchNorm2d", "LayerNorm"]


class _NormBase(Module):
    """Shared by the batch and instance norms (torch's ``_NormBase``): affine parameters,
    running statistics buffers, their reset and the repr."""

    def __init__(
        self,
        num_features,
        eps=1e-5,
        momentum=0.1,
        affine=True,
        track_running_stats=True,
        device=None,
        dtype=None,
        *,
        bias=True,
    ):
        super().__init__()
        self.num_features = num_features
        self.has_bias = affine and bias
        self.eps = eps
        self.momentum = momentum
        self.affine = affine
        self.track_running_stats = track_running_stats
        if affine:
            self.weight = empty_parameter((num_features,), dtype, device)
            if bias:
                self.bias = empty_parameter((num_features,), dtype, device)
            else:
                self.register_parameter("bias", None)
        else:
            self.register_parameter("weight", None)
            self.register_parameter("bias", None)
        if track_running_stats:
            dt = _dtypes.to_dtype(dtype) or _dtypes.get_default_dtype()
            self.register_buffer("running_mean", Tensor._wrap(np.zeros(num_features, dt)))
            self.register_buffer("running_var", Tensor._wrap(np.ones(num_features, dt)))
            self.register_buffer("num_batches_tracked", Tensor._wrap(np.zeros((), np.int64)))
        else:
            self.register_buffer("running_mean", None)
            self.register_buffer("running_var", None)
            self.register_buffer("num_batches_tracked", None)
        self.reset_parameters()

    def reset_running_stats(self):
        if self.track_running_stats:
            if self.running_mean.device == "meta":  # no values to reset (torch: no-op)
                return
            self.running_mean._data[...] = 0
            self.running_var._data[...] = 1
            self.num_batches_tracked._data[...] = 0

    def reset_parameters(self):
        self.reset_running_stats()
        if self.affine:
            init.ones_(self.weight)
            if self.bias is not None:
                init.zeros_(self.bias)

    def extra_repr(self):
        return (
            f"{self.num_features}, eps={self.eps}, momentum={self.momentum}, "
            f"affine={self.affine}, bias={self.has_bias}, "
            f"track_running_stats={self.track_running_stats}"
        )


class _BatchNorm(_NormBase):
    """Shared by BatchNorm1d/2d: the forward over the batch (and spatial) dims."""

    _expected_dims: tuple = ()

    def forward(self, input):
        if input.ndim not in self._expected_dims:
            dims = " or ".join(f"{d}D" for d in self._expected_dims)
            raise ValueError(f"expected {dims} input (got {input.ndim}D input)")
        factor = 0.0 if self.momentum is None else self.momentum
        if self.training and self.track_running_stats:
            if self.momentum is None and self.num_batches_tracked.device == "meta":
                self.num_batches_tracked.item()  # torch's float() of the count: RuntimeError
            self.num_batches_tracked._data += 1
            self.num_batches_tracked._vc.bump("batch_norm")
            if self.momentum is None:  # cumulative moving average
                # A 0-d array, not a Python float: the count never reaches Python, so
                # tapegrad.jit replays this with the current count.
                factor = 1.0 / self.num_batches_tracked._data
        use_batch_stats = self.training or self.running_mean is None
        track = not self.training or self.track_running_stats
        return F.batch_norm(
            input,
            self.running_mean if track else None,
            self.running_var if track else None,
            self.weight,
            self.bias,
            use_batch_stats,
            factor,
            self.eps,
        )


class BatchNorm1d(_BatchNorm):
    """Batch normalisation of (N, C) or (N, C, L) inputs over N (and L).

    >>> import tapegrad as tg
    >>> tg.nn.BatchNorm1d(3)(tg.randn(4, 3)).shape
    tapegrad.Size([4, 3])
    """

    _expected_dims = (2, 3)


class BatchNorm2d(_BatchNorm):
    """Batch normalisation of (N, C, H, W) inputs over N, H, W; running statistics in eval."""

    _expected_dims = (4,)


class BatchNorm3d(_BatchNorm):
    """Batch normalisation of (N, C, D, H, W) inputs over N, D, H, W."""

    _expected_dims = (5,)


class LayerNorm(Module):
    """Normalise over the trailing ``normalized_shape`` dims, then an elementwise affine."""

    def __init__(
        self,
        normalized_shape,
        eps=1e-5,
        elementwise_affine=True,
        bias=True,
        device=None,
        dtype=None,
    ):
        super().__init__()
        if isinstance(normalized_shape, int):
            normalized_shape = (normalized_shape,)
        self.normalized_shape = tuple(normalized_shape)
        self.eps = eps
        self.elementwise_affine = elementwise_affine
        self.has_bias = bias
        if elementwise_affine:
            self.weight = empty_parameter(self.normalized_shape, dtype, device)
            if bias:
                self.bias = empty_parameter(self.normalized_shape, dtype, device)
            else:
                self.register_parameter("bias", None)
        else:
            self.register_parameter("weight", None)
            self.register_parameter("bias", None)
        self.reset_parameters()

    def reset_parameters(self):
        if self.weight is not None:
            init.ones_(self.weight)
        if self.bias is not None:
            init.zeros_(self.bias)

    def forward(self, input):
        return F.layer_norm(input, self.normalized_shape, self.weight, self.bias, self.eps)

    def extra_repr(self):
        return (
            f"{self.normalized_shape}, eps={self.eps}, "
            f"elementwise_affine={self.elementwise_affine}, bias={self.bias is not None}"
        )
