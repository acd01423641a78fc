"""GroupNorm, InstanceNorm1d/2d/3d, RMSNorm, LocalResponseNorm, PixelShuffle/Unshuffle,
Unflatten, Bilinear and EmbeddingBag, with torch's parameters, initialisation and repr."""

from __future__ import annotations

import math

import numpy as np

from .. import _dtypes
from ..tensor import Tensor
from . import _layers_functional as LF
from . import init
from .linear import empty_parameter
from .module import Module

__all__ = [
    "GroupNorm",
    "InstanceNorm1d",
    "InstanceNorm2d",
    "InstanceNorm3d",
    "RMSNorm",
    "LocalResponseNorm",
    "PixelShuffle",
    "PixelUnshuffle",
    "Unflatten",
    "Bilinear",
    "EmbeddingBag",
    "Upsample",
    "UpsamplingNearest2d",
    "UpsamplingBilinear2d",
    "Unfold",
    "Fold",
]


class GroupNorm(Module):
    """Normalise (N, C, *) over groups of channels; affine per channel.

    >>> import tapegrad as tg
    >>> tg.nn.GroupNorm(2, 4)(tg.randn(3, 4, 5)).shape
    (3, 4, 5)
    """

    def __init__(
        self, num_groups, num_channels, eps=1e-5, affine=True, device=None, dtype=None, *, bias=True
    ):
        super().__init__()
        if num_channels % num_groups:
            raise ValueError("num_channels must be divisible by num_groups")
        self.num_groups = num_groups
        self.num_channels = num_channels
        self.eps = eps
        self.affine = affine
        self.has_bias = affine and bias
        self.register_parameter("weight", None)
        self.register_parameter("bias", None)
        if affine:
            self.weight = empty_parameter((num_channels,), dtype, device)
            if bias:
                self.bias = empty_parameter((num_channels,), dtype, device)
        self.reset_parameters()

    def reset_parameters(self):
        if self.weight is not None:
            init.ones_(self.weight)
        if self.bias is not None:
            init.zeros_(self.bias)

    def forward(self, input):
        return LF.group_norm(input, self.num_groups, self.weight, self.bias, self.eps)

    def extra_repr(self):
        return (
            f"{self.num_groups}, {self.num_channels}, eps={self.eps}, affine={self.affine}, "
            f"bias={self.has_bias}"
        )


class _InstanceNorm(Module):
    _batched_dims = 3

    def __init__(
        self,
        num_features,
        eps=1e-5,
        momentum=0.1,
        affine=False,
        track_running_stats=False,
        device=None,
        dtype=None,
        *,
        bias=True,
    ):
        super().__init__()
        self.num_features = num_features
        self.eps = eps
        self.momentum = momentum
        self.affine = affine
        self.track_running_stats = track_running_stats
        self.has_bias = affine and bias
        self.register_parameter("weight", None)
        self.register_parameter("bias", None)
        if affine:
            self.weight = empty_parameter((num_features,), dtype, device)
            init.ones_(self.weight)
            if bias:
                self.bias = empty_parameter((num_features,), dtype, device)
                init.zeros_(self.bias)
        if track_running_stats:
            dt = _dtypes.to_dtype(dtype) or _dtypes.get_default_dtype()
            self.register_buffer("running_mean", Tensor._wrap(np.zeros(num_features, dt)))
            self.register_buffer("running_var", Tensor._wrap(np.ones(num_features, dt)))
            self.register_buffer("num_batches_tracked", Tensor._wrap(np.zeros((), np.int64)))
        else:
            self.register_buffer("running_mean", None)
            self.register_buffer("running_var", None)
            self.register_buffer("num_batches_tracked", None)

    def forward(self, input):
        nd = self._batched_dims
        if input.ndim not in (nd - 1, nd):
            raise ValueError(f"expected {nd - 1}D or {nd}D input (got {input.ndim}D input)")
        unbatched = input.ndim == nd - 1
        x = input.unsqueeze(0) if unbatched else input
        use_input_stats = self.training or not self.track_running_stats
        out = LF.instance_norm(
            x,
            self.running_mean,
            self.running_var,
            self.weight,
            self.bias,
            use_input_stats,
            self.momentum if self.momentum is not None else 0.0,
            self.eps,
        )
        return out.squeeze(0) if unbatched else out

    def extra_repr(self):
        return (
            f"{self.num_features}, eps={self.eps}, momentum={self.momentum}, "
            f"affine={self.affine}, bias={self.has_bias}, "
            f"track_running_stats={self.track_running_stats}"
        )


class InstanceNorm1d(_InstanceNorm):
    """Instance normalisation of (N, C, L) or (C, L)."""

    _batched_dims = 3


class InstanceNorm2d(_InstanceNorm):
    """Instance normalisation of (N, C, H, W) or (C, H, W)."""

    _batched_dims = 4


class InstanceNorm3d(_InstanceNorm):
    """Instance normalisation of (N, C, D, H, W) or (C, D, H, W)."""

    _batched_dims = 5


class RMSNorm(Module):
    """x / √(mean(x²) + eps) · weight over the trailing ``normalized_shape`` dims."""

    def __init__(
        self, normalized_shape, eps=None, elementwise_affine=True, device=None, dtype=None
    ):
        super().__init__()
        if isinstance(normalized_shape, int):
            normalized_shape = (normalized_shape,)
        self.normalized_shape = tuple(normalized_shape)
        self.eps = eps
        self.elementwise_affine = elementwise_affine
        if elementwise_affine:
            self.weight = empty_parameter(self.normalized_shape, dtype, device)
            init.ones_(self.weight)
        else:
            self.register_parameter("weight", None)

    def reset_parameters(self):
        if self.weight is not None:
            init.ones_(self.weight)

    def forward(self, x):
        return LF.rms_norm(x, self.normalized_shape, self.weight, self.eps)

    def extra_repr(self):
        return (
            f"{self.normalized_shape}, eps={self.eps}, elementwise_affine={self.elementwise_affine}"
        )


class LocalResponseNorm(Module):
    """Normalise by the squares of ``size`` neighbouring channels."""

    def __init__(self, size, alpha=1e-4, beta=0.75, k=1.0):
        super().__init__()
        self.size = size
        self.alpha = alpha
        self.beta = beta
        self.k = k

    def forward(self, input):
        return LF.local_response_norm(input, self.size, self.alpha, self.beta, self.k)

    def extra_repr(self):
        return f"{self.size}, alpha={self.alpha}, beta={self.beta}, k={self.k}"


class PixelShuffle(Module):
    """(*, C·r², H, W) → (*, C, H·r, W·r)."""

    def __init__(self, upscale_factor):
        super().__init__()
        self.upscale_factor = upscale_factor

    def forward(self, input):
        return LF.pixel_shuffle(input, self.upscale_factor)

    def extra_repr(self):
        return f"upscale_factor={self.upscale_factor}"


class PixelUnshuffle(Module):
    """(*, C, H·r, W·r) → (*, C·r², H, W)."""

    def __init__(self, downscale_factor):
        super().__init__()
        self.downscale_factor = downscale_factor

    def forward(self, input):
        return LF.pixel_unshuffle(input, self.downscale_factor)

    def extra_repr(self):
        return f"downscale_factor={self.downscale_factor}"


class Unflatten(Module):
    """Split dim ``dim`` into ``unflattened_size``."""

    def __init__(self, dim, unflattened_size):
        super().__init__()
        if not isinstance(unflattened_size, (tuple, list)):
            raise TypeError("unflattened_size must be tuple or list")
        self.dim = dim
        self.unflattened_size = unflattened_size

    def forward(self, input):
        return input.unflatten(self.dim, tuple(self.unflattened_size))

    def extra_repr(self):
        return f"dim={self.dim}, unflattened_size={self.unflattened_size}"


class Bilinear(Module):
    """y = x1ᵀ A x2 + b with A (out, in1, in2); init U(±1/√in1)."""

    def __init__(
        self, in1_features, in2_features, out_features, bias=True, device=None, dtype=None
    ):
        super().__init__()
        self.in1_features = in1_features
        self.in2_features = in2_features
        self.out_features = out_features
        self.weight = empty_parameter((out_features, in1_features, in2_features), dtype, device)
        if bias:
            self.bias = empty_parameter((out_features,), dtype, device)
        else:
            self.register_parameter("bias", None)
        self.reset_parameters()

    def reset_parameters(self):
        bound = 1 / math.sqrt(self.weight.shape[1])
        init.uniform_(self.weight, -bound, bound)
        if self.bias is not None:
            init.uniform_(self.bias, -bound, bound)

    def forward(self, input1, input2):
        return LF.bilinear(input1, input2, self.weight, self.bias)

    def extra_repr(self):
        return (
            f"in1_features={self.in1_features}, in2_features={self.in2_features}, "
            f"out_features={self.out_features}, bias={self.bias is not None}"
        )


class EmbeddingBag(Module):
    """Sums, means or maxima of bags of embeddings (weight ~ N(0, 1))."""

    def __init__(
        self,
        num_embeddings,
        embedding_dim,
        max_norm=None,
        norm_type=2.0,
        scale_grad_by_freq=False,
        mode="mean",
        sparse=False,
        _weight=None,
        include_last_offset=False,
        padding_idx=None,
        device=None,
        dtype=None,
    ):
        super().__init__()
        self.num_embeddings = num_embeddings
        self.embedding_dim = embedding_dim
        self.max_norm = max_norm
        self.norm_type = norm_type
        self.scale_grad_by_freq = scale_grad_by_freq
        if padding_idx is not None:
            if not -num_embeddings <= padding_idx < num_embeddings:
                raise AssertionError("padding_idx must be within num_embeddings")
            padding_idx %= num_embeddings
        self.padding_idx = padding_idx
        if _weight is None:
            self.weight = empty_parameter((num_embeddings, embedding_dim), dtype, device)
            self.reset_parameters()
        else:
            from .parameter import Parameter  # noqa: PLC0415

            self.weight = Parameter(_weight)
        self.mode = mode
        self.sparse = sparse
        self.include_last_offset = include_last_offset

    def reset_parameters(self):
        init.normal_(self.weight)
        if self.padding_idx is not None:
            self.weight._data[self.padding_idx] = 0

    def forward(self, input, offsets=None, per_sample_weights=None):
        return LF.embedding_bag(
            input,
            self.weight,
            offsets,
            self.max_norm,
            self.norm_type,
            self.scale_grad_by_freq,
            self.mode,
            self.sparse,
            per_sample_weights,
            self.include_last_offset,
            self.padding_idx,
        )

    def extra_repr(self):
        s = f"{self.num_embeddings}, {self.embedding_dim}"
        if self.max_norm is not None:
            s += f", max_norm={self.max_norm}"
        if self.norm_type != 2:
            s += f", norm_type={self.norm_type}"
        if self.scale_grad_by_freq is not False:
            s += f", scale_grad_by_freq={self.scale_grad_by_freq}"
        s += f", mode='{self.mode}'"
        if self.padding_idx is not None:
            s += f", padding_idx={self.padding_idx}"
        return s


class Upsample(Module):
    """Resize spatial dims with :func:`tapegrad.nn.functional.interpolate`."""

    def __init__(
        self,
        size=None,
        scale_factor=None,
        mode="nearest",
        align_corners=None,
        recompute_scale_factor=None,
    ):
        super().__init__()
        self.name = type(self).__name__
        self.size = size
        if isinstance(scale_factor, tuple):
            self.scale_factor = tuple(float(f) for f in scale_factor)
        else:
            self.scale_factor = float(scale_factor) if scale_factor else None
        self.mode = mode
        self.align_corners = align_corners
        self.recompute_scale_factor = recompute_scale_factor

    def forward(self, input):
        from ._interpolate import interpolate  # noqa: PLC0415

        return interpolate(
            input, self.size, self.scale_factor, self.mode, self.align_corners,
            recompute_scale_factor=self.recompute_scale_factor,
        )  # fmt: skip

    def extra_repr(self):
        if self.scale_factor is not None:
            info = "scale_factor=" + repr(self.scale_factor)
        else:
            info = "size=" + repr(self.size)
        return info + ", mode=" + repr(self.mode)


class UpsamplingNearest2d(Upsample):
    """Nearest-neighbour upsampling of (N, C, H, W)."""

    def __init__(self, size=None, scale_factor=None):
        super().__init__(size, scale_factor, mode="nearest")


class UpsamplingBilinear2d(Upsample):
    """Bilinear upsampling of (N, C, H, W) with align_corners=True."""

    def __init__(self, size=None, scale_factor=None):
        super().__init__(size, scale_factor, mode="bilinear", align_corners=True)


class Unfold(Module):
    """Sliding blocks of (N, C, H, W) as columns (N, C·kh·kw, L)."""

    def __init__(self, kernel_size, dilation=1, padding=0, stride=1):
        super().__init__()
        self.kernel_size = kernel_size
        self.dilation = dilation
        self.padding = padding
        self.stride = stride

    def forward(self, input):
        from ._fold import unfold  # noqa: PLC0415

        return unfold(input, self.kernel_size, self.dilation, self.padding, self.stride)

    def extra_repr(self):
        return (
            f"kernel_size={self.kernel_size}, dilation={self.dilation}, padding={self.padding}, "
            f"stride={self.stride}"
        )


class Fold(Module):
    """Sum columns (N, C·kh·kw, L) back into (N, C, *output_size)."""

    def __init__(self, output_size, kernel_size, dilation=1, padding=0, stride=1):
        super().__init__()
        self.output_size = output_size
        self.kernel_size = kernel_size
        self.dilation = dilation
        self.padding = padding
        self.stride = stride

    def forward(self, input):
        from ._fold import fold  # noqa: PLC0415

        return fold(
            input, self.output_size, self.kernel_size, self.dilation, self.padding, self.stride
        )

    def extra_repr(self):
        return (
            f"output_size={self.output_size}, kernel_size={self.kernel_size}, "
            f"dilation={self.dilation}, padding={self.padding}, stride={self.stride}"
        )
