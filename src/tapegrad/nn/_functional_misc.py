"""Small nn.functional ops of PyTorch's op_db: channel_shuffle, the deprecated upsample
aliases of ``interpolate``, and the aten grid samplers (``torch.grid_sampler_2d`` & co.,
integer-coded modes) over ``grid_sample``. All are compositions of differentiable ops."""

from __future__ import annotations

import numbers

from ..ops._registry import register
from ..tensor import Tensor
from ._grid_sample import grid_sample
from ._interpolate import interpolate

__all__ = [
    "channel_shuffle",
    "native_channel_shuffle",
    "gumbel_softmax",
    "upsample",
    "upsample_bilinear",
    "upsample_nearest",
]


@register("channel_shuffle", method=False)
def channel_shuffle(input, groups):
    """Split the C channels of (N, C, *) into ``groups`` groups and interleave them: channel
    g·(C/groups) + i moves to i·groups + g (ShuffleNet). Same shape as ``input``.

    Raises:
        RuntimeError: input of fewer than 3 dims, groups not positive or not dividing C.
    """
    if not isinstance(input, Tensor):
        raise TypeError(f"channel_shuffle: input must be a Tensor, got {type(input).__name__}")
    if input.ndim <= 2:
        raise RuntimeError(
            f"channel_shuffle expects input with > 2 dims, but got input with sizes "
            f"{list(input.shape)}"
        )
    if isinstance(groups, bool) or not isinstance(groups, (int, numbers.Integral)):
        raise TypeError(
            f"channel_shuffle(): argument 'groups' (position 2) must be int, not "
            f"{type(groups).__name__}"
        )
    groups = int(groups)
    if groups <= 0:
        raise RuntimeError(
            f"Number of groups to divide channels in must be positive. Value of groups:{groups}"
        )
    n, c = input.shape[:2]
    if c % groups:
        raise RuntimeError(
            f"Number of channels must be divisible by groups. Got {c} channels and {groups} groups."
        )
    rest = tuple(input.shape[2:])
    out = input.reshape((n, groups, c // groups) + rest).transpose(1, 2)
    return out.reshape((n, c) + rest)


native_channel_shuffle = channel_shuffle  # torch.nn.functional's name for the same kernel


def upsample(input, size=None, scale_factor=None, mode="nearest", align_corners=None):
    """Deprecated alias of :func:`interpolate` (kept by PyTorch for old programs)."""
    return interpolate(input, size, scale_factor, mode, align_corners)


def upsample_nearest(input, size=None, scale_factor=None):
    """Deprecated: ``interpolate(input, size, scale_factor, mode='nearest')``."""
    return interpolate(input, size, scale_factor, mode="nearest")


def upsample_bilinear(input, size=None, scale_factor=None):
    """Deprecated: ``interpolate(input, size, scale_factor, mode='bilinear',
    align_corners=True)`` of a 4-D input."""
    if input.ndim != 4:
        raise NotImplementedError(f"Got {input.ndim}D input, but bilinear mode needs 4D input")
    return interpolate(input, size, scale_factor, mode="bilinear", align_corners=True)


_INTERPOLATION = ("bilinear", "nearest", "bicubic")
_PADDING = ("zeros", "border", "reflection")


def _grid_sampler(op, input, grid, interpolation_mode, padding_mode, align_corners, ndim=None):
    if ndim is not None and input.ndim != ndim:
        raise RuntimeError(
            f"{op}: expected {ndim}D input, but got input of shape {list(input.shape)}"
        )
    if interpolation_mode not in range(3) or padding_mode not in range(3):
        raise RuntimeError(
            f"{op}: interpolation_mode must be 0 (bilinear), 1 (nearest) or 2 (bicubic) and "
            f"padding_mode 0 (zeros), 1 (border) or 2 (reflection), got {interpolation_mode} "
            f"and {padding_mode}"
        )
    mode, pad = _INTERPOLATION[interpolation_mode], _PADDING[padding_mode]
    return grid_sample(input, grid, mode, pad, bool(align_corners))


@register("grid_sampler", method=False)
def grid_sampler(input, grid, interpolation_mode, padding_mode, align_corners):
    """aten's grid sampler: ``grid_sample`` with integer modes (interpolation 0 bilinear,
    1 nearest, 2 bicubic; padding 0 zeros, 1 border, 2 reflection); 4-D or 5-D input."""
    return _grid_sampler(
        "grid_sampler", input, grid, interpolation_mode, padding_mode, align_corners
    )


@register("grid_sampler_2d", method=False)
def grid_sampler_2d(input, grid, interpolation_mode, padding_mode, align_corners):
    """:func:`grid_sampler` of a 4-D input (N, C, H, W) at grid (N, Ho, Wo, 2)."""
    return _grid_sampler(
        "grid_sampler_2d", input, grid, interpolation_mode, padding_mode, align_corners, 4
    )


@register("grid_sampler_3d", method=False)
def grid_sampler_3d(input, grid, interpolation_mode, padding_mode, align_corners):
    """:func:`grid_sampler` of a 5-D input (N, C, D, H, W) at grid (N, Do, Ho, Wo, 3)."""
    return _grid_sampler(
        "grid_sampler_3d", input, grid, interpolation_mode, padding_mode, align_corners, 5
    )


def gumbel_softmax(logits, tau=1, hard=False, eps=1e-10, dim=-1):
    """A sample of the Gumbel-softmax distribution over ``dim``: ``softmax((logits + g) /
    tau)`` with Gumbel noise ``g = -log(Exp(1))``, as torch draws it; ``hard=True`` gives the
    one-hot of its argmax with the soft sample's gradient (straight-through). ``eps`` is
    unused, as in torch."""
    gumbels = -(logits.new_empty(logits.shape).exponential_().log())
    y_soft = ((logits + gumbels) / tau).softmax(dim)
    if not hard:
        return y_soft
    index = y_soft.max(dim, keepdim=True)[1]
    y_hard = logits.new_zeros(logits.shape).scatter_(dim, index, 1.0)
    return y_hard - y_soft.detach() + y_soft
