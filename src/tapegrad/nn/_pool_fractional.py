"""Fractional max pooling (Graham, 2014): fractional_max_pool2d / fractional_max_pool3d.

Each output cell pools a ``kernel_size`` window whose start along a dim of input size n,
output size o and kernel k is PyTorch's pseudo-random sequence for a sample u in [0, 1):

    alpha = (n − k) / (o − 1);   start[i] = int((i + u)·alpha) − int(u·alpha)  (i < o − 1);
    start[o − 1] = n − k

with one u per (batch, channel, dim) taken from ``_random_samples`` (N, C, ndim), which is
drawn uniformly when not given. As in PyTorch's kernels, 2-D takes sample 0 for the width
and 1 for the height, 3-D sample 0 for the depth, 1 the height, 2 the width. Given the
same samples the result equals PyTorch's (tests/nn/test_pool_3d.py). The values are
gathered at each window's first maximum (Note [Pooling by index] in _pool_nd.py), so
gradients of any order follow.
"""

from __future__ import annotations

import itertools
import math

import numpy as np

from ..creation import rand
from ..tensor import Tensor
from ._pool_nd import batched, gather_flat, ntuple, window_argmax

__all__ = [
    "fractional_max_pool2d",
    "fractional_max_pool3d",
    "fractional_max_pool2d_with_indices",
    "fractional_max_pool3d_with_indices",
]


def _starts(u, n, o, k):
    """(..., o) window starts along a dim for samples ``u`` (...): PyTorch's sequence, computed
    in the samples' precision as its kernel does."""
    starts = np.empty(u.shape + (o,), np.int64)
    if o > 1:
        alpha = u.dtype.type(n - k) / u.dtype.type(o - 1)
        i = np.arange(o - 1, dtype=u.dtype)
        starts[..., :-1] = ((i + u[..., None]) * alpha).astype(np.int64) - (u * alpha).astype(
            np.int64
        )[..., None]
    if o > 0:
        starts[..., -1] = n - k
    return starts


def _fractional(op, k, input, kernel_size, output_size, output_ratio, return_indices, samples):
    if output_size is None and output_ratio is None:
        raise ValueError(f"{op} requires specifying either an output_size or an output_ratio")
    x, added = batched(input, k, op)
    kernel = ntuple(kernel_size, k, op, "kernel_size")
    spatial = tuple(x.shape[2:])
    if output_size is None:
        ratio = (
            (output_ratio,) * k if isinstance(output_ratio, (int, float)) else tuple(output_ratio)
        )
        if len(ratio) != k or not all(0 < r < 1 for r in ratio):
            raise RuntimeError(  # torch's type (its functional form fails on the pool size)
                f"{op}: output_ratio must be {k} numbers in (0, 1), got {output_ratio!r}"
            )
        out = tuple(int(n * r) for n, r in zip(spatial, ratio, strict=True))
    else:
        out = ntuple(output_size, k, op, "output_size")
    names = ("height", "width") if k == 2 else ("time", "height", "width")
    for name, n, o, kk in zip(names, spatial, out, kernel, strict=True):
        # PyTorch's checks: o + k - 1 <= n in 2-D, strictly below n in 3-D
        if o + kk - 1 > n or (k == 3 and o + kk - 1 == n):
            raise RuntimeError(
                f"{op}(): pool {name} {kk} too large relative to input {name} {n} (output size {o})"
            )
    n_batch, channels = x.shape[:2]
    if samples is None:
        samples = rand(n_batch, channels, k, dtype=x.dtype)
    u = samples._data if isinstance(samples, Tensor) else np.asarray(samples)
    if u.shape != (n_batch, channels, k):
        raise RuntimeError(
            f"{op}: expected _random_samples of shape {[n_batch, channels, k]}, got {list(u.shape)}"
        )
    # PyTorch's kernels: 2-D takes sample 0 for the width, 1 for the height; 3-D takes
    # sample 0 for the depth, 1 for the height, 2 for the width
    order = (1, 0) if k == 2 else (0, 1, 2)
    starts = [_starts(u[..., order[d]], spatial[d], out[d], kernel[d]) for d in range(k)]
    index = _window_argmax(x._data, starts, kernel)
    result = gather_flat(x, index)
    if added:
        result, index = result.squeeze(0), index[0]
    return (result, Tensor._wrap(index)) if return_indices else result


def _window_argmax(xd, starts, kernel):
    """Flat spatial index of the first maximum of each window (N, C, *out); ``starts[d]`` is
    the (N, C, out_d) start of the windows along spatial dim d."""
    k = len(kernel)
    size = xd.shape[2:]
    out = tuple(s.shape[-1] for s in starts)
    n, c = xd.shape[:2]
    flat = xd.reshape(n, c, math.prod(size))
    positions = np.zeros((n, c) + out + (math.prod(kernel),), np.int64)
    for t, tap in enumerate(itertools.product(*(range(kk) for kk in kernel))):
        pos = np.zeros((n, c) + out, np.int64)
        for d in range(k):
            shape = (n, c) + tuple(out[j] if j == d else 1 for j in range(k))
            pos = pos * size[d] + (starts[d] + tap[d]).reshape(shape)
        positions[..., t] = pos
    values = np.take_along_axis(flat, positions.reshape(n, c, math.prod(positions.shape[2:])), 2)
    values = values.reshape(positions.shape)
    best = window_argmax(values)
    return np.take_along_axis(positions, best[..., None], axis=-1)[..., 0]


def fractional_max_pool2d_with_indices(
    input, kernel_size, output_size=None, output_ratio=None, return_indices=False,
    _random_samples=None,
):  # fmt: skip
    """:func:`fractional_max_pool2d` returning ``(output, indices)``."""
    return _fractional(
        "fractional_max_pool2d", 2, input, kernel_size, output_size, output_ratio, True,
        _random_samples,
    )  # fmt: skip


def fractional_max_pool2d(
    input, kernel_size, output_size=None, output_ratio=None, return_indices=False,
    _random_samples=None,
):  # fmt: skip
    """Fractional max pooling of (N, C, H, W) or (C, H, W) to ``output_size`` (or
    ``output_ratio`` of the input size) with ``kernel_size`` windows at pseudo-random
    starts; ``_random_samples`` (N, C, 2) in [0, 1) fixes them (see the module docstring).
    With ``return_indices`` also the flat H·W position of each maximum."""
    return _fractional(
        "fractional_max_pool2d", 2, input, kernel_size, output_size, output_ratio,
        return_indices, _random_samples,
    )  # fmt: skip


def fractional_max_pool3d_with_indices(
    input, kernel_size, output_size=None, output_ratio=None, return_indices=False,
    _random_samples=None,
):  # fmt: skip
    """:func:`fractional_max_pool3d` returning ``(output, indices)``."""
    return _fractional(
        "fractional_max_pool3d", 3, input, kernel_size, output_size, output_ratio, True,
        _random_samples,
    )  # fmt: skip


def fractional_max_pool3d(
    input, kernel_size, output_size=None, output_ratio=None, return_indices=False,
    _random_samples=None,
):  # fmt: skip
    """Fractional max pooling of (N, C, D, H, W) or (C, D, H, W); ``_random_samples`` is
    (N, C, 3). See :func:`fractional_max_pool2d`."""
    return _fractional(
        "fractional_max_pool3d", 3, input, kernel_size, output_size, output_ratio,
        return_indices, _random_samples,
    )  # fmt: skip
