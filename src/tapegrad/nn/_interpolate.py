"""``F.interpolate`` (nearest, nearest-exact, linear, bilinear, bicubic, trilinear, area).

Every mode is separable: along each spatial dim the output is a constant (out, in)
matrix times the input, the matrix holding PyTorch's interpolation weights (coordinates
and clamping as ATen's upsample kernels). So the op is one GEMM per spatial dim, its
gradient the transposed GEMMs, and higher derivatives come for free.
"""

from __future__ import annotations

import math

import numpy as np

from ..ops._util import bfloat16_in_float32
from ..tensor import Tensor

__all__ = ["interpolate"]

_DIMS = {"linear": 1, "bilinear": 2, "bicubic": 2, "trilinear": 3}
_MODES = ("nearest", "nearest-exact", "linear", "bilinear", "bicubic", "trilinear", "area")
_A = -0.75  # the bicubic convolution constant


def _scale(n, o, scale, align_corners, cubic_or_linear):
    """The source-coordinate step: ATen's area_pixel_compute_scale."""
    if cubic_or_linear and align_corners:
        return (n - 1) / (o - 1) if o > 1 else 0.0
    return 1.0 / scale if scale is not None and scale > 0 else n / o


def _matrix(n, o, mode, align_corners, scale, dtype):
    m = np.zeros((o, n), np.float64)
    dst = np.arange(o)
    rows = np.arange(o)
    if mode in ("nearest", "nearest-exact"):
        s = np.float32(1.0 / scale if scale is not None and scale > 0 else n / o)
        pos = dst.astype(np.float32) + (np.float32(0.5) if mode == "nearest-exact" else 0)
        src = np.minimum(np.floor(pos * s).astype(np.int64), n - 1)
        m[rows, src] = 1.0
        return m.astype(dtype)
    if mode == "area":
        for i in range(o):
            lo, hi = (i * n) // o, -(-((i + 1) * n) // o)
            m[i, lo:hi] = 1.0 / (hi - lo)
        return m.astype(dtype)
    s = _scale(n, o, scale, align_corners, True)
    if align_corners:
        src = dst * s
    else:
        src = (dst + 0.5) * s - 0.5
    if mode == "bicubic":
        i0 = np.floor(src).astype(np.int64)
        t = src - i0
        w = [
            ((_A * (t + 1) - 5 * _A) * (t + 1) + 8 * _A) * (t + 1) - 4 * _A,
            ((_A + 2) * t - (_A + 3)) * t * t + 1,
            ((_A + 2) * (1 - t) - (_A + 3)) * (1 - t) * (1 - t) + 1,
            ((_A * (2 - t) - 5 * _A) * (2 - t) + 8 * _A) * (2 - t) - 4 * _A,
        ]
        for k in range(4):
            np.add.at(m, (rows, np.clip(i0 - 1 + k, 0, n - 1)), w[k])
        return m.astype(dtype)
    if not align_corners:
        src = np.maximum(src, 0.0)
    i0 = np.minimum(np.floor(src).astype(np.int64), n - 1)
    i1 = np.minimum(i0 + 1, n - 1)
    lam = src - i0
    np.add.at(m, (rows, i0), 1.0 - lam)
    np.add.at(m, (rows, i1), lam)
    return m.astype(dtype)


@bfloat16_in_float32
def interpolate(
    input,
    size=None,
    scale_factor=None,
    mode="nearest",
    align_corners=None,
    recompute_scale_factor=None,
    antialias=False,
):
    """Resize the spatial dims of (N, C, *spatial) input, as ``torch.nn.functional.interpolate``.

    >>> import tapegrad as tg
    >>> x = tg.randn(1, 2, 4, 4)
    >>> tg.nn.functional.interpolate(x, scale_factor=2, mode="bilinear").shape
    tapegrad.Size([1, 2, 8, 8])
    """
    if mode not in _MODES:
        raise NotImplementedError(
            f"Input Error: Only 3D, 4D and 5D input Tensors supported (got {input.ndim}D) for "
            f"the modes: nearest | linear | bilinear | bicubic | trilinear | area | "
            f"nearest-exact (got {mode})"
        )
    if antialias:
        raise NotImplementedError("interpolate: antialias=True is not supported")
    if align_corners is not None and mode not in _DIMS:
        raise ValueError(
            "align_corners option can only be set with the interpolating modes: "
            "linear | bilinear | bicubic | trilinear"
        )
    align_corners = bool(align_corners)
    k = input.ndim - 2
    if k < 1 or k > 3 or (mode in _DIMS and _DIMS[mode] != k):
        want = f"{_DIMS[mode] + 2}D" if mode in _DIMS else "3D, 4D or 5D"
        raise NotImplementedError(f"Got {input.ndim}D input, but {mode} mode needs {want} input")
    spatial = input.shape[2:]
    if (size is None) == (scale_factor is None):
        raise ValueError("only one of size or scale_factor should be defined")
    if size is not None:
        sizes = (size,) * k if isinstance(size, int) else tuple(size)
        if len(sizes) != k:
            raise ValueError(
                f"Input and output must have the same number of spatial dimensions, but got "
                f"input with spatial dimensions of {list(spatial)} and output size of {size}."
            )
        scales = (None,) * k
    else:
        scales = (
            (scale_factor,) * k
            if not isinstance(scale_factor, (tuple, list))
            else tuple(scale_factor)
        )
        if len(scales) != k:
            raise ValueError(
                f"Input and scale_factor must have the same number of spatial dimensions, but "
                f"got input with spatial dimensions of {list(spatial)} and scale_factor of "
                f"shape {scale_factor}."
            )
        sizes = tuple(int(math.floor(n * float(s))) for n, s in zip(spatial, scales))
        if recompute_scale_factor:
            scales = (None,) * k
    if min(sizes) <= 0:
        raise RuntimeError(f"interpolate: output size {list(sizes)} must be positive")
    if mode == "area":
        scales = (None,) * k
    dtype = input._data.dtype
    if dtype.kind != "f":
        raise NotImplementedError(f"interpolate: expected a floating input, got {dtype}")
    out = input
    for axis in range(k):
        n, o = spatial[axis], sizes[axis]
        if n == o and mode in ("nearest", "nearest-exact", "area") and scales[axis] in (None, 1):
            continue
        mat = Tensor._wrap(_matrix(n, o, mode, align_corners, scales[axis], dtype))
        d = axis - k  # counted from the right
        if d == -1:
            out = out @ mat.mT
        elif d == -2:
            out = mat @ out
        else:
            out = (out.transpose(d, -1) @ mat.mT).transpose(d, -1)
    return input.clone() if out is input else out  # a new tensor, as torch's copy
