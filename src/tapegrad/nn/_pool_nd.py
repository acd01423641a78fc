"""N-d pooling by index: max_pool3d, avg_pool3d, the adaptive 3-D pools and max_unpool1d/2d/3d.

Note [Pooling by index]
Every max pool here finds, in NumPy, the flat position (into the input's spatial dims,
row-major, as PyTorch's ``return_indices``) of each window's first maximum (its last NaN,
as PyTorch's kernels), and takes the values
with a differentiable ``gather`` from the (N, C, prod(spatial)) input. The gradient is
then the gather's scatter-add at those positions and the double backward a gather again,
so derivatives of any order come from two existing ops. ``max_unpool`` is the transposed
op: a ``scatter`` of the values to the positions, whose gradient gathers. Average pooling
is linear: a sum of strided slices of the zero-padded input, one per kernel tap.

The 2-D pools keep their fused kernels (``_pool_ops``); these are for 3-D (and any rank).
"""

from __future__ import annotations

import itertools
import math

import numpy as np
from numpy.lib.stride_tricks import sliding_window_view

from .. import _trace
from ..ops.joining import pad as _pad
from ..tensor import Tensor
from ._pool_link import link_input
from ._pool_more import _avg_matrix, _sizes, _windows

__all__ = [
    "max_pool3d",
    "avg_pool3d",
    "adaptive_avg_pool3d",
    "adaptive_max_pool3d",
    "max_unpool1d",
    "max_unpool2d",
    "max_unpool3d",
]


def ntuple(v, k, op, name):
    """An int, a 1-sequence (repeated, as torch's int[k]) or a k-sequence, as k ints."""
    if isinstance(v, (tuple, list)) and len(v) == 1:
        v = v[0]
    if isinstance(v, (int, np.integer)):
        return (int(v),) * k
    if isinstance(v, (tuple, list)) and len(v) == k and all(isinstance(a, int) for a in v):
        return tuple(v)
    raise ValueError(f"{op}: {name} must be an int or a tuple of {k} ints, got {v!r}")


def batched(x, k, op):
    """(N, C, *spatial) view of an input with k spatial dims, and whether N was added."""
    if not isinstance(x, Tensor):
        raise TypeError(f"{op}: input must be a Tensor, got {type(x).__name__}")
    if x.ndim == k + 2:
        return x, False
    if x.ndim == k + 1:
        return x.unsqueeze(0), True
    raise RuntimeError(
        f"{op}: Expected {k + 1}D or {k + 2}D (batch mode) tensor for input, got shape "
        f"{list(x.shape)}"
    )


def _setup(op, x, k, kernel_size, stride, padding, dilation, ceil_mode):
    """kernel, stride, dilation, output sizes and ((before, after), ...) pads, as torch."""
    kernel = ntuple(kernel_size, k, op, "kernel_size")
    stride = kernel if stride is None or stride == [] else ntuple(stride, k, op, "stride")
    pad = ntuple(padding, k, op, "padding")
    dilation = ntuple(dilation, k, op, "dilation")
    if min(kernel) < 1 or min(stride) < 1 or min(dilation) < 1:
        raise RuntimeError(f"{op}: kernel_size, stride and dilation must be greater than zero")
    if min(pad) < 0:
        raise RuntimeError(f"{op}: pad must be non-negative, got padding={list(pad)}")
    out, pads = [], []
    for n, kk, s, d, p in zip(x.shape[2:], kernel, stride, dilation, pad, strict=True):
        if p > ((kk - 1) * d + 1) // 2:
            raise RuntimeError(
                f"{op}: pad should be at most half of effective kernel size, but got "
                f"pad={p}, kernel_size={kk} and dilation={d}"
            )
        span = n + 2 * p - d * (kk - 1) - 1
        size = (-(-span // s) if ceil_mode else span // s) + 1
        if ceil_mode and (size - 1) * s >= n + p:
            size -= 1  # the last window must start inside the input or the left padding
        if size < 1:
            raise RuntimeError(
                f"{op}: output size is too small for input of shape {list(x.shape)} "
                f"(kernel {list(kernel)}, stride {list(stride)}, padding {list(pad)})"
            )
        out.append(size)
        pads.append((p, max(p, (size - 1) * s + d * (kk - 1) + 1 - n - p)))
    return kernel, stride, dilation, tuple(out), tuple(pads)


def gather_flat(x, flat_idx):
    """``x`` (N, C, *S) at the flat spatial positions ``flat_idx`` (N, C, *O) (an array):
    differentiable in x (Note [Pooling by index])."""
    n, c = x.shape[:2]
    src = x.reshape((n, c, math.prod(x.shape[2:])))
    idx = Tensor._wrap(flat_idx.reshape(n, c, -1 if flat_idx.size else 0).astype(np.int64))
    return src.gather(2, idx).reshape(flat_idx.shape)


def window_argmax(values):
    """Index along the last axis of the first maximum, or of the last NaN where there is one
    (PyTorch's CPU kernels: ``if (val > max || isnan(val))``)."""
    best = values.argmax(axis=-1)
    nan = np.isnan(values)
    if _trace.recording() or nan.any():  # a recording may not branch on values
        last = values.shape[-1] - 1 - nan[..., ::-1].argmax(axis=-1)
        best = np.where(nan.any(axis=-1), last, best)
    return best


def _window_argmax(xd, kernel, stride, dilation, out, pads):
    """Flat spatial index of each window's first maximum (its last NaN), (N, C, *out)."""
    k = len(kernel)
    width = [(0, 0), (0, 0)] + [tuple(p) for p in pads]
    xp = np.pad(xd, width, constant_values=-np.inf) if any(sum(p) for p in pads) else xd
    eff = [(kk - 1) * d + 1 for kk, d in zip(kernel, dilation, strict=True)]
    win = sliding_window_view(xp, eff, axis=tuple(range(2, 2 + k)))
    key = (slice(None),) * 2
    key += tuple(slice(None, (o - 1) * s + 1, s) for o, s in zip(out, stride, strict=True))
    key += tuple(slice(None, None, d) for d in dilation)
    win = win[key]
    flat = win.reshape(win.shape[: 2 + k] + (math.prod(kernel),))
    taps = np.unravel_index(window_argmax(flat), kernel)
    index = np.zeros(flat.shape[:-1], np.int64)
    for axis in range(k):
        o = np.arange(out[axis]).reshape((-1,) + (1,) * (k - 1 - axis))
        pos = o * stride[axis] + taps[axis] * dilation[axis] - pads[axis][0]
        index = index * xd.shape[2 + axis] + pos
    return index


def max_pool_nd(op, k, input, kernel_size, stride, padding, dilation, ceil_mode, return_indices):
    x, added = batched(input, k, op)
    kernel, stride, dilation, out, pads = _setup(
        op, x, k, kernel_size, stride, padding, dilation, ceil_mode
    )
    index = _window_argmax(x._data, kernel, stride, dilation, out, pads)
    result = gather_flat(link_input(x), index)  # Note [Max-pool gradient takes the input]
    if added:
        result, index = result.squeeze(0), index[0]
    return (result, Tensor._wrap(index)) if return_indices else result


def max_pool3d(
    input, kernel_size, stride=None, padding=0, dilation=1, ceil_mode=False, return_indices=False
):
    """Max over windows of (N, C, D, H, W) or (C, D, H, W); ``return_indices`` also gives the
    flat D·H·W position of each window's first maximum (int64), as torch."""
    return max_pool_nd(
        "max_pool3d", 3, input, kernel_size, stride, padding, dilation, ceil_mode, return_indices
    )


def _avg_divisor(size, kernel, stride, out, pads, count_include_pad):
    """Per-output divisor, as torch counts it: with ``count_include_pad`` the declared padding
    counts, not the cells ``ceil_mode`` adds; otherwise only input cells."""
    div = np.ones((), np.int64)
    for n, kk, s, o, (before, _) in zip(size, kernel, stride, out, pads, strict=True):
        lo, hi = (0, n + 2 * before) if count_include_pad else (before, before + n)
        taps = np.arange(o)[:, None] * s + np.arange(kk)[None, :]
        div = np.multiply.outer(div, ((taps >= lo) & (taps < hi)).sum(axis=1))
    return div


def avg_pool_nd(
    op, k, input, kernel_size, stride, padding, ceil_mode, count_include_pad, divisor_override
):
    x, added = batched(input, k, op)
    kernel, stride, _, out, pads = _setup(op, x, k, kernel_size, stride, padding, 1, ceil_mode)
    widths = [w for before, after in reversed(pads) for w in (before, after)]
    xp = _pad(x, widths) if any(widths) else x
    total = None
    for tap in itertools.product(*(range(kk) for kk in kernel)):
        key = (slice(None),) * 2
        key += tuple(
            slice(t, t + (o - 1) * s + 1, s) for t, o, s in zip(tap, out, stride, strict=True)
        )
        total = xp[key] if total is None else total + xp[key]
    if divisor_override is not None:
        if divisor_override == 0:
            raise RuntimeError(f"{op}: divisor must be not zero")
        result = total / float(divisor_override)
    else:
        div = _avg_divisor(x.shape[2:], kernel, stride, out, pads, count_include_pad)
        result = total / Tensor._wrap(div.astype(x._data.dtype))
    return result.squeeze(0) if added else result


def avg_pool3d(
    input,
    kernel_size,
    stride=None,
    padding=0,
    ceil_mode=False,
    count_include_pad=True,
    divisor_override=None,
):
    """Mean over windows of (N, C, D, H, W) or (C, D, H, W); padding counts in the divisor
    when ``count_include_pad``; ``divisor_override`` replaces the divisor."""
    return avg_pool_nd(
        "avg_pool3d",
        3,
        input,
        kernel_size,
        stride,
        padding,
        ceil_mode,
        count_include_pad,
        divisor_override,
    )


def adaptive_avg_pool3d(input, output_size):
    """Average (N, C, D, H, W) over adaptive windows (separable: one averaging matrix per dim);
    ``output_size`` an int or a triple (None keeps that dim)."""
    sizes = _sizes("adaptive_avg_pool3d", input, output_size, 3)
    out = input
    for axis, o in zip((-3, -2, -1), sizes, strict=True):
        n = input.shape[axis]
        if o != n:
            a = _avg_matrix(n, o, input._data.dtype)
            out = (out.transpose(axis, -1) @ a.mT).transpose(axis, -1)
    return input.clone() if out is input else out  # a new tensor, as torch


def _adaptive_argmax(xd, out):
    """Flat spatial index of each adaptive window's first maximum, (N, C, *out)."""
    lead, size = xd.shape[: -len(out)], xd.shape[-len(out) :]
    index = np.zeros(lead + tuple(out), np.int64)
    cells = [list(enumerate(_windows(n, o))) for n, o in zip(size, out, strict=True)]
    for cell in itertools.product(*cells):
        box = tuple(slice(lo, hi) for _, (lo, hi) in cell)
        shape = tuple(hi - lo for _, (lo, hi) in cell)
        win = xd[(Ellipsis,) + box].reshape(lead + (math.prod(shape),))
        taps = np.unravel_index(window_argmax(win), shape)
        flat = np.zeros(lead, np.int64)
        for axis, (_, (lo, _)) in enumerate(cell):
            flat = flat * size[axis] + lo + taps[axis]
        index[(Ellipsis,) + tuple(i for i, _ in cell)] = flat
    return index


def adaptive_max_pool3d(input, output_size, return_indices=False):
    """Max of (N, C, D, H, W) over adaptive windows; indices are flat D·H·W positions."""
    sizes = _sizes("adaptive_max_pool3d", input, output_size, 3)
    x, added = batched(input, 3, "adaptive_max_pool3d")
    index = _adaptive_argmax(x._data, sizes)
    result = gather_flat(x, index)
    if added:
        result, index = result.squeeze(0), index[0]
    return (result, Tensor._wrap(index)) if return_indices else result


# -- max_unpool ------------------------------------------------------------------------------


def _unpool_size(op, x, k, kernel, stride, pad, output_size):
    default = [
        (n - 1) * s - 2 * p + kk
        for n, s, p, kk in zip(x.shape[2:], stride, pad, kernel, strict=True)
    ]
    if output_size is None:
        return tuple(default)
    size = [int(v) for v in output_size]
    if len(size) == k + 2:  # (N, C, *spatial); k + 1 entries raise, as torch
        size = size[-k:]
    if len(size) != k:
        raise ValueError(
            f"{op}: output_size should be a sequence containing {k} or {k + 2} elements, but "
            f"it has a length of '{len(size)}'"
        )
    for d, (v, want, s) in enumerate(zip(size, default, stride, strict=True)):
        if not want - s < v < want + s:
            raise ValueError(
                f"{op}: invalid output_size {size} (dim {d} must be between {want - s} and "
                f"{want + s})"
            )
    return tuple(size)


def max_unpool_nd(op, k, input, indices, kernel_size, stride, padding, output_size):
    x, added = batched(input, k, op)
    idx = indices._data if isinstance(indices, Tensor) else np.asarray(indices)
    if added:
        idx = idx[None]
    if idx.shape != tuple(x.shape) or idx.dtype != np.int64:
        raise RuntimeError(
            f"{op}: expected indices of dtype int64 and the input's shape {list(input.shape)}, "
            f"got {idx.dtype} of shape {list(indices.shape)}"
        )
    kernel = ntuple(kernel_size, k, op, "kernel_size")
    stride = kernel if stride is None or stride == [] else ntuple(stride, k, op, "stride")
    pad = ntuple(padding, k, op, "padding")
    size = _unpool_size(op, x, k, kernel, stride, pad, output_size)
    m = math.prod(size)
    if idx.size and (idx.min() < 0 or idx.max() >= m):
        raise RuntimeError(
            f"{op}: Found an invalid max index: {int(idx.max() if idx.max() >= m else idx.min())}"
            f" (output volumes are of size {'x'.join(map(str, size))})"
        )
    n, c = x.shape[:2]
    flat = x.reshape((n, c, math.prod(x.shape[2:])))
    zeros = Tensor._wrap(np.zeros((n, c, m), x._data.dtype))
    out = zeros.scatter(2, Tensor._wrap(idx.reshape(flat.shape)), flat)
    out = out.reshape((n, c) + size)
    return out.squeeze(0) if added else out


def max_unpool1d(input, indices, kernel_size, stride=None, padding=0, output_size=None):
    """The inverse of max_pool1d: values put back at their ``indices`` (positions in L), zeros
    elsewhere."""
    return max_unpool_nd(
        "max_unpool1d", 1, input, indices, kernel_size, stride, padding, output_size
    )


def max_unpool2d(input, indices, kernel_size, stride=None, padding=0, output_size=None):
    """The inverse of max_pool2d: values put back at their flat H·W ``indices``."""
    return max_unpool_nd(
        "max_unpool2d", 2, input, indices, kernel_size, stride, padding, output_size
    )


def max_unpool3d(input, indices, kernel_size, stride=None, padding=0, output_size=None):
    """The inverse of max_pool3d: values put back at their flat D·H·W ``indices``."""
    return max_unpool_nd(
        "max_unpool3d", 3, input, indices, kernel_size, stride, padding, output_size
    )


# vmap dispatch (Note [vmap levels]); the batching rules are in tapegrad/_batch_rules_more.py.
from ..ops._registry import vmap_hooked as _vmap_hooked  # noqa: E402

for _name in ("max_pool3d", "avg_pool3d", "adaptive_avg_pool3d", "adaptive_max_pool3d"):
    globals()[_name] = _vmap_hooked(_name, globals()[_name])
