"""Power-average pooling, ``F.lp_pool1d/2d/3d``: ``(Σ_window x^p)^(1/p)``, written as torch
writes it (an average pool of ``x^p`` times the window's size, its sign kept through a
relu of its magnitude, to the power ``1/p``), so values and gradients follow torch's."""

from __future__ import annotations

import math

from . import functional as F

__all__ = ["lp_pool1d", "lp_pool2d", "lp_pool3d"]


def _lp_pool(pool, n, input, norm_type, kernel_size, stride, ceil_mode):
    kernel = (kernel_size,) * n if isinstance(kernel_size, int) else tuple(kernel_size)
    powered = input.pow(norm_type)
    if stride is not None:
        out = pool(powered, kernel_size, stride, 0, ceil_mode)
    else:
        out = pool(powered, kernel_size, padding=0, ceil_mode=ceil_mode)
    return (out.sign() * F.relu(out.abs())).mul(math.prod(kernel)).pow(1.0 / norm_type)


def lp_pool1d(input, norm_type, kernel_size, stride=None, ceil_mode=False):
    """Power-average pooling over (N, C, L) or (C, L) inputs."""
    return _lp_pool(F.avg_pool1d, 1, input, norm_type, kernel_size, stride, ceil_mode)


def lp_pool2d(input, norm_type, kernel_size, stride=None, ceil_mode=False):
    """Power-average pooling over (N, C, H, W) or (C, H, W) inputs."""
    return _lp_pool(F.avg_pool2d, 2, input, norm_type, kernel_size, stride, ceil_mode)


def lp_pool3d(input, norm_type, kernel_size, stride=None, ceil_mode=False):
    """Power-average pooling over (N, C, D, H, W) or (C, D, H, W) inputs."""
    return _lp_pool(F.avg_pool3d, 3, input, norm_type, kernel_size, stride, ceil_mode)
