"""``F.affine_grid`` and ``F.grid_sample`` (4-D input: bilinear or nearest; padding
zeros, border or reflection; align_corners), composed from differentiable ops.

Note [grid_sample as gathers]
The sample position ``ix`` is an affine function of the grid value; border and
reflection padding fold it back into range with a per-element sign and offset
(constants computed in NumPy) and a clamp, so ``d ix / d grid`` is PyTorch's. Bilinear
sampling gathers the four neighbours from the flattened input (a differentiable
gather: the input's gradient is a scatter-add) and weights them by
``1 − |ix − x_k|`` written as ``ix − x0`` / ``x0 + 1 − ix``, so gradients reach both
the input and the grid. Corners outside the input count as zero (a constant mask).
"""

from __future__ import annotations

import numpy as np

from ..ops.joining import stack
from ..tensor import Tensor

__all__ = ["affine_grid", "grid_sample"]


def _base_coords(n, align_corners, dtype):
    if n <= 1:
        return np.zeros(max(n, 0), dtype)
    base = np.linspace(-1.0, 1.0, n)
    if not align_corners:
        base = base * (n - 1) / n
    return base.astype(dtype)


def affine_grid(theta, size, align_corners=None):
    """Sampling grid (N, H, W, 2) for ``theta`` (N, 2, 3) and ``size`` (N, C, H, W), or
    (N, D, H, W, 3) for theta (N, 3, 4) and size (N, C, D, H, W).

    Raises:
        ValueError: theta's shape does not fit ``size``.
    """
    align_corners = bool(align_corners)
    size = [int(s) for s in size]
    if not isinstance(theta, Tensor) or not theta.is_floating_point():
        raise ValueError(f"Expected theta to have floating point type, but got {theta!r}")
    dtype = theta._data.dtype
    if len(size) == 4:
        if theta.ndim != 3 or tuple(theta.shape[-2:]) != (2, 3):
            raise ValueError(
                "Expected a batch of 2D affine matrices of shape Nx2x3 for size "
                f"{size}. Got {list(theta.shape)}."
            )
        n, _, h, w = size
        xs, ys = _base_coords(w, align_corners, dtype), _base_coords(h, align_corners, dtype)
        base = np.stack(np.broadcast_arrays(xs[None, :], ys[:, None], np.ones((1, 1), dtype)), -1)
        spatial = (h, w)
    elif len(size) == 5:
        if theta.ndim != 3 or tuple(theta.shape[-2:]) != (3, 4):
            raise ValueError(
                "Expected a batch of 3D affine matrices of shape Nx3x4 for size "
                f"{size}. Got {list(theta.shape)}."
            )
        n, _, d, h, w = size
        xs, ys = _base_coords(w, align_corners, dtype), _base_coords(h, align_corners, dtype)
        zs = _base_coords(d, align_corners, dtype)
        parts = np.broadcast_arrays(
            xs[None, None, :], ys[None, :, None], zs[:, None, None], np.ones((1, 1, 1), dtype)
        )
        base = np.stack(parts, -1)
        spatial = (d, h, w)
    else:
        raise NotImplementedError(
            f"affine_grid only supports 4D and 5D sizes, for 2D and 3D affine transforms, "
            f"respectively. Got size {size}."
        )
    if min(size) <= 0:
        raise ValueError(f"Expected non-zero, positive output size. Got {size}")
    if theta.shape[0] != n:
        raise ValueError(f"affine_grid: theta batch {theta.shape[0]} does not match size {size}")
    flat = Tensor._wrap(base.reshape(1, -1, base.shape[-1]))
    grid = flat @ theta.transpose(1, 2)
    return grid.reshape(n, *spatial, len(spatial))


def _unnormalize(coord, size, align_corners):
    if align_corners:
        return (coord + 1) * ((size - 1) / 2)
    return ((coord + 1) * size - 1) / 2


def _reflect(coord, lo2, hi2):
    """Fold ``coord`` into [lo2/2, hi2/2] by reflection: returns sign·coord + offset with
    constant sign and offset (so the gradient is ±1, as PyTorch's)."""
    c = coord._data
    if lo2 == hi2:
        return coord * 0.0
    lo, span = lo2 / 2, (hi2 - lo2) / 2
    x = np.abs(c - lo)
    flips = np.floor(x / span)
    extra = np.fmod(x, span)
    even = (flips % 2) == 0
    # value = lo + extra (even) or lo + span − extra (odd), with x = |c − lo|
    sgn_x = np.where(c >= lo, 1.0, -1.0)
    sign = np.where(even, sgn_x, -sgn_x).astype(c.dtype)
    target = np.where(even, extra + lo, span - extra + lo)
    offset = (target - sign * c).astype(c.dtype)
    return coord * Tensor._wrap(sign) + Tensor._wrap(offset)


def _source_index(coord, size, padding_mode, align_corners):
    ix = _unnormalize(coord, size, align_corners)
    if padding_mode == "border":
        ix = ix.clamp(0, size - 1)
    elif padding_mode == "reflection":
        ix = _reflect(ix, 0, 2 * (size - 1)) if align_corners else _reflect(ix, -1, 2 * size - 1)
        ix = ix.clamp(0, size - 1)
    return ix


def grid_sample(input, grid, mode="bilinear", padding_mode="zeros", align_corners=None):
    """Sample ``input`` (N, C, H, W) at ``grid`` (N, Ho, Wo, 2) positions in [-1, 1]
    (x indexes width, y height); returns (N, C, Ho, Wo). See Note [grid_sample as gathers].

    Raises:
        ValueError: an unknown mode or padding mode.
        RuntimeError: shapes or dtypes that do not fit.
    """
    if mode not in ("bilinear", "nearest", "bicubic"):
        raise ValueError(
            f"nn.functional.grid_sample(): expected mode to be 'bilinear', 'nearest' or "
            f"'bicubic', but got: '{mode}'"
        )
    if padding_mode not in ("zeros", "border", "reflection"):
        raise ValueError(
            "nn.functional.grid_sample(): expected padding_mode to be 'zeros', 'border', or "
            f"'reflection', but got: '{padding_mode}'"
        )
    if mode == "bicubic":
        raise NotImplementedError("grid_sample: mode='bicubic' is not implemented in tapegrad")
    if input.ndim != 4:
        raise NotImplementedError(
            f"grid_sample: only 4-D inputs (N, C, H, W) are supported, got {list(input.shape)}"
        )
    if grid.ndim != 4 or grid.shape[-1] != 2 or grid.shape[0] != input.shape[0]:
        raise RuntimeError(
            f"grid_sampler(): expected grid of shape [{input.shape[0]}, H, W, 2] for input of "
            f"shape {list(input.shape)}, but got grid of shape {list(grid.shape)}"
        )
    if input._data.dtype != grid._data.dtype:
        raise RuntimeError(
            "grid_sampler(): expected input and grid to have same dtype, but input has "
            f"{input.dtype} and grid has {grid.dtype}"
        )
    align_corners = bool(align_corners)
    n, c, h, w = input.shape
    ho, wo = grid.shape[1], grid.shape[2]
    ix = _source_index(grid[..., 0], w, padding_mode, align_corners)
    iy = _source_index(grid[..., 1], h, padding_mode, align_corners)
    flat = input.reshape(n, c, h * w)

    def gather(xi, yi):
        """Values at integer positions (N, Ho, Wo) -> (N, C, Ho, Wo), zero outside."""
        inside = (xi >= 0) & (xi < w) & (yi >= 0) & (yi < h)
        idx = np.where(inside, yi * w + xi, 0).astype(np.int64).reshape(n, 1, ho * wo)
        idx = np.broadcast_to(idx, (n, c, ho * wo))
        vals = flat.gather(2, Tensor._wrap(np.ascontiguousarray(idx))).reshape(n, c, ho, wo)
        return vals * Tensor._wrap(inside[:, None].astype(input._data.dtype))

    if mode == "nearest":
        xi = np.rint(ix._data).astype(np.int64)
        yi = np.rint(iy._data).astype(np.int64)
        return gather(xi, yi)
    x0 = np.floor(ix._data)
    y0 = np.floor(iy._data)
    wx1 = (ix - Tensor._wrap(x0)).unsqueeze(1)
    wy1 = (iy - Tensor._wrap(y0)).unsqueeze(1)
    wx0, wy0 = 1 - wx1, 1 - wy1
    x0i, y0i = x0.astype(np.int64), y0.astype(np.int64)
    corners = [
        gather(x0i, y0i) * (wx0 * wy0),
        gather(x0i + 1, y0i) * (wx1 * wy0),
        gather(x0i, y0i + 1) * (wx0 * wy1),
        gather(x0i + 1, y0i + 1) * (wx1 * wy1),
    ]
    return stack(corners).sum(0)
