"""max_pool1d / avg_pool1d (the 2-D pools on a height-1 signal) and the adaptive pools.

Adaptive average pooling is separable: along each pooled dim it is a product with a
constant (out, in) averaging matrix, so the whole op is one or two GEMMs (and its
gradient the transposed products). Adaptive max pooling is separable too (a max over a
rectangle is the max over rows of the max over columns): one window max per output
position along each dim.
"""

from __future__ import annotations

import numpy as np

from ..ops.joining import stack
from ..tensor import Tensor

__all__ = [
    "max_pool1d",
    "avg_pool1d",
    "adaptive_avg_pool1d",
    "adaptive_avg_pool2d",
    "adaptive_max_pool1d",
    "adaptive_max_pool2d",
]


def _one(v, op, name):
    if isinstance(v, (tuple, list)):
        if len(v) != 1:
            raise RuntimeError(f"{op}: {name} must be an int or a 1-tuple, got {v!r}")
        v = v[0]
    return int(v)


def _check_1d(op, x):
    if not isinstance(x, Tensor):
        raise TypeError(f"{op}: input must be a Tensor, got {type(x).__name__}")
    if x.ndim not in (2, 3):
        raise RuntimeError(f"{op}: Expected 2D or 3D input, got shape {list(x.shape)}")


def max_pool1d(
    input, kernel_size, stride=None, padding=0, dilation=1, ceil_mode=False, return_indices=False
):
    """Max over windows of (N, C, L) or (C, L); indices (with ``return_indices``) index L."""
    from .functional import max_pool2d  # noqa: PLC0415 - functional imports this module

    _check_1d("max_pool1d", input)
    k = _one(kernel_size, "max_pool1d", "kernel_size")
    s = k if stride is None or stride == [] else _one(stride, "max_pool1d", "stride")
    p = _one(padding, "max_pool1d", "padding")
    d = _one(dilation, "max_pool1d", "dilation")
    res = max_pool2d(input.unsqueeze(-2), (1, k), (1, s), (0, p), (1, d), ceil_mode, return_indices)
    if return_indices:
        out, idx = res
        return out.squeeze(-2), idx.squeeze(-2)
    return res.squeeze(-2)


def avg_pool1d(input, kernel_size, stride=None, padding=0, ceil_mode=False, count_include_pad=True):
    """Mean over windows of (N, C, L) or (C, L)."""
    from .functional import avg_pool2d  # noqa: PLC0415

    _check_1d("avg_pool1d", input)
    k = _one(kernel_size, "avg_pool1d", "kernel_size")
    s = k if stride is None or stride == [] else _one(stride, "avg_pool1d", "stride")
    p = _one(padding, "avg_pool1d", "padding")
    out = avg_pool2d(input.unsqueeze(-2), (1, k), (1, s), (0, p), ceil_mode, count_include_pad)
    return out.squeeze(-2)


def _windows(n, out):
    """torch's adaptive windows: [floor(i·n/out), ceil((i+1)·n/out))."""
    return [((i * n) // out, -(-((i + 1) * n) // out)) for i in range(out)]


def _sizes(op, x, output_size, k):
    if x.ndim not in (k + 1, k + 2):
        raise RuntimeError(
            f"{op}: Expected {k + 1}D or {k + 2}D tensor, but got input of shape {list(x.shape)}"
        )
    if isinstance(output_size, (int, np.integer)) or output_size is None:
        output_size = (output_size,) * k
    output_size = tuple(output_size)
    if len(output_size) != k:
        raise RuntimeError(f"{op}: output_size must be {k} ints, got {output_size!r}")
    spatial = x.shape[-k:]
    sizes = tuple(int(n if o is None else o) for o, n in zip(output_size, spatial))
    for n, o in zip(spatial, sizes):
        if o < 0 or (n == 0 and o):
            raise RuntimeError(f"{op}: invalid output size {list(sizes)} for input {list(x.shape)}")
    return sizes


def _avg_matrix(n, out, dtype):
    a = np.zeros((out, n), dtype)
    for i, (lo, hi) in enumerate(_windows(n, out)):
        a[i, lo:hi] = 1.0 / (hi - lo)
    return Tensor._wrap(a)


def adaptive_avg_pool1d(input, output_size):
    """Average (N, C, L) over ``output_size`` adaptive windows."""
    (o,) = _sizes("adaptive_avg_pool1d", input, output_size, 1)
    return input @ _avg_matrix(input.shape[-1], o, input._data.dtype).mT


def adaptive_avg_pool2d(input, output_size):
    """Average (N, C, H, W) over adaptive windows; ``output_size`` an int or (h, w)
    (None keeps that dim)."""
    oh, ow = _sizes("adaptive_avg_pool2d", input, output_size, 2)
    h, w = input.shape[-2:]
    dt = input._data.dtype
    if (oh, ow) == (1, 1):
        return input.mean(dim=(-2, -1), keepdim=True)
    out = input
    if ow != w:
        out = out @ _avg_matrix(w, ow, dt).mT
    if oh != h:
        out = _avg_matrix(h, oh, dt) @ out
    return input.clone() if out is input else out  # a new tensor, as torch


def _max_along(x, dim, out):
    n = x.shape[dim]
    if out == n:
        return x
    if out == 0:  # no window: an empty result, as torch (stack would have no parts)
        return x.narrow(dim, 0, 0)
    parts = [x.narrow(dim, lo, hi - lo).amax(dim) for lo, hi in _windows(n, out)]
    return stack(parts, dim % x.ndim)


def _max_indices(xd, oh, ow):
    """Flat H·W index of each adaptive window's first maximum (as torch)."""
    h, w = xd.shape[-2:]
    idx = np.empty(xd.shape[:-2] + (oh, ow), np.int64)
    for i, (r0, r1) in enumerate(_windows(h, oh)):
        for j, (c0, c1) in enumerate(_windows(w, ow)):
            win = xd[..., r0:r1, c0:c1].reshape(xd.shape[:-2] + (-1,))
            k = np.argmax(win, axis=-1)
            idx[..., i, j] = (r0 + k // (c1 - c0)) * w + c0 + k % (c1 - c0)
    return idx


def adaptive_max_pool2d(input, output_size, return_indices=False):
    """Max of (N, C, H, W) over adaptive windows (indices: flat H·W positions)."""
    oh, ow = _sizes("adaptive_max_pool2d", input, output_size, 2)
    out = _max_along(_max_along(input, -1, ow), -2, oh)
    out = input.clone() if out is input else out  # a new tensor, as torch
    if return_indices:
        return out, Tensor._wrap(_max_indices(input._data, oh, ow))
    return out


def adaptive_max_pool1d(input, output_size, return_indices=False):
    """Max of (N, C, L) over adaptive windows."""
    (o,) = _sizes("adaptive_max_pool1d", input, output_size, 1)
    out = _max_along(input, -1, o)
    out = input.clone() if out is input else out  # a new tensor, as torch
    if return_indices:
        idx = _max_indices(input._data[..., None, :], 1, o)[..., 0, :]
        return out, Tensor._wrap(idx)
    return out


# vmap dispatch (Note [vmap levels]); the batching rules are in tapegrad/_batch_rules_more.py.
from ..ops._registry import vmap_hooked as _vmap_hooked  # noqa: E402

for _name in __all__:
    globals()[_name] = _vmap_hooked(_name, globals()[_name])
