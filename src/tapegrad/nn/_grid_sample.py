"""``F.affine_grid`` and ``F.grid_sample`` (4-D inputs: bilinear, nearest or bicubic;
5-D: trilinear or nearest; padding zeros, border or reflection; align_corners),
composed from differentiable ops.

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

import itertools

import numpy as np

from ..ops.joining import stack
from ..ops.products import _zeros_from
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
        got = theta.dtype if isinstance(theta, Tensor) else type(theta).__name__
        raise ValueError(f"Expected theta to have floating point type, but got {got}")
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
        raise RuntimeError(f"affine_grid: theta batch {theta.shape[0]} does not match size {size}")
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
    (x indexes width, y height), giving (N, C, Ho, Wo); or a volume (N, C, D, H, W) at
    (N, Do, Ho, Wo, 3) positions (x, y, z), giving (N, C, Do, Ho, Wo). 'bilinear' is
    trilinear on volumes. See Note [grid_sample as gathers].

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
    if mode == "bicubic" and input.ndim != 4:
        raise RuntimeError("grid_sampler(): bicubic interpolation only supports 4D input")
    if input.ndim not in (4, 5):
        raise RuntimeError(
            f"grid_sampler(): expected 4D or 5D input, but got input of shape {list(input.shape)}"
        )
    k = input.ndim - 2
    if grid.ndim != input.ndim or grid.shape[-1] != k or grid.shape[0] != input.shape[0]:
        raise RuntimeError(
            f"grid_sampler(): expected grid of shape [{input.shape[0]}, {', '.join(['*'] * k)}, "
            f"{k}] for input of shape {list(input.shape)}, but got grid of shape "
            f"{list(grid.shape)}"
        )
    if input._data.dtype != grid._data.dtype:
        raise RuntimeError(
            "grid_sampler(): expected input and grid to have same dtype, but input has "
            f"{input.dtype} and grid has {grid.dtype}"
        )
    align_corners = bool(align_corners)
    n, c = input.shape[:2]
    sizes = tuple(input.shape[2:])  # (H, W) or (D, H, W)
    out_spatial = tuple(grid.shape[1:-1])
    count = int(np.prod(out_spatial))
    # grid[..., 0] indexes the last dim (width), grid[..., 1] the one before, ...
    coords = [
        _source_index(grid[..., i], sizes[k - 1 - i], padding_mode, align_corners) for i in range(k)
    ][::-1]  # now in input-dim order: (y, x) or (z, y, x)
    flat = input.reshape(n, c, int(np.prod(sizes)))
    strides = [int(np.prod(sizes[d + 1 :])) for d in range(k)]

    def gather(ints):
        """Values at integer positions (one array per dim) -> (N, C, *out), zero outside."""
        inside = np.ones(ints[0].shape, bool)
        index = np.zeros(ints[0].shape, np.int64)
        for pos, size, stride in zip(ints, sizes, strides, strict=True):
            inside &= (pos >= 0) & (pos < size)
            index = index + pos * stride
        idx = np.where(inside, index, 0).astype(np.int64).reshape(n, 1, count)
        idx = np.ascontiguousarray(np.broadcast_to(idx, (n, c, count)))
        vals = flat.gather(2, Tensor._wrap(idx)).reshape(n, c, *out_spatial)
        return vals * Tensor._wrap(inside[:, None].astype(input._data.dtype))

    if mode == "nearest":
        out = gather([np.rint(co._data).astype(np.int64) for co in coords])
        if grid.requires_grad:  # PyTorch's grid gradient is zeros here, not "unused"
            out = out + _zeros_from(grid).sum()
        return out
    if mode == "bicubic":
        return _bicubic(grid, sizes, padding_mode, align_corners, gather)
    lows = [np.floor(co._data) for co in coords]
    highs_w = [(co - Tensor._wrap(lo)).unsqueeze(1) for co, lo in zip(coords, lows, strict=True)]
    lows_w = [1 - w for w in highs_w]
    lows_i = [lo.astype(np.int64) for lo in lows]
    terms = []
    for corner in itertools.product((0, 1), repeat=k):
        weight = None
        for d, bit in enumerate(corner):
            w = highs_w[d] if bit else lows_w[d]
            weight = w if weight is None else weight * w
        terms.append(gather([lo + bit for lo, bit in zip(lows_i, corner, strict=True)]) * weight)
    return stack(terms).sum(0)


_CUBIC_A = -0.75  # as PyTorch (and OpenCV)


def _cubic_weights(t):
    """The four cubic-convolution weights for taps at -1, 0, 1, 2 of fractional offset t."""
    a = _CUBIC_A

    def near(x):  # |x| <= 1
        return ((a + 2) * x - (a + 3)) * x * x + 1

    def far(x):  # 1 < |x| < 2
        return ((a * x - 5 * a) * x + 8 * a) * x - 4 * a

    return [far(t + 1.0), near(t), near(1.0 - t), far(2.0 - t)]


def _tap_position(pos, size, padding_mode, align_corners):
    """Where an integer tap reads from after padding (torch's compute_coordinates)."""
    if padding_mode == "border":
        return np.clip(pos, 0, size - 1)
    if padding_mode == "reflection":
        lo2, hi2 = (0, 2 * (size - 1)) if align_corners else (-1, 2 * size - 1)
        return np.clip(_reflect(Tensor._wrap(pos), lo2, hi2)._data, 0, size - 1)
    return pos


def _bicubic(grid, sizes, padding_mode, align_corners, gather):
    """Bicubic sampling: 4 x 4 taps around floor(ix), floor(iy) of the unpadded source
    position, each tap folded by the padding mode; the grid's gradient flows through
    the cubic weights of the fractional offsets (as PyTorch)."""
    h, w = sizes
    ix = _unnormalize(grid[..., 0], w, align_corners)
    iy = _unnormalize(grid[..., 1], h, align_corners)
    x0, y0 = np.floor(ix._data), np.floor(iy._data)
    wx = [c.unsqueeze(1) for c in _cubic_weights(ix - Tensor._wrap(x0))]
    wy = [c.unsqueeze(1) for c in _cubic_weights(iy - Tensor._wrap(y0))]
    rows = []
    for i in range(4):
        yi = _tap_position(y0 - 1 + i, h, padding_mode, align_corners)
        taps = []
        for j in range(4):
            xj = _tap_position(x0 - 1 + j, w, padding_mode, align_corners)
            taps.append(gather([yi.astype(np.int64), xj.astype(np.int64)]) * wx[j])
        rows.append(stack(taps).sum(0) * wy[i])
    return stack(rows).sum(0)
