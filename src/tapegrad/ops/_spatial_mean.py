"""``mean(dim=(2, 3))`` of a channels-last image batch: a GEMV, and a channels-last gradient.

Note [Spatial mean of channels-last]
A CNN's global average pool, ``h.mean(dim=(2, 3))``, reads a convolution's output, which
is channels-last in memory (Note [Channels-last convolution]). NumPy reduces an (N, C,
H, W) array stored as (N, H, W, C) over its middle axes with a strided pairwise loop:
25 us for the digits CNN's 64 x 32 x 4 x 4 (one core), where the (N, H·W, C) view times
a vector of ones is a GEMV per sample, 6.5 us, then one division by H·W. The gradient
was worse: g / (H·W) broadcast over (N, C, H, W) came out C-ordered (NCHW), so the ReLU
backward after it multiplied two arrays of different layouts and the convolution's
backward copied the result to channels-last again (relu + mean backward: 127 us). The
first-order gradient here is written straight in the input's channels-last layout.

Both are opaque kernels (Note [Opaque kernels] in tapegrad/_trace.py). The sum is
BLAS's dot product instead of NumPy's pairwise sum: the same value up to float
rounding (PyTorch sums in yet another order). Other layouts, dtypes and dims keep
NumPy's mean.
"""

from __future__ import annotations

import numpy as np

__all__ = ["applies", "spatial_mean_kernel", "spatial_grad_kernel"]

_FLOATS = frozenset(np.dtype(t) for t in (np.float32, np.float64))


def applies(data, dims) -> bool:
    """Whether ``data`` is a dense channels-last (N, C, H, W) float array reduced over H, W."""
    # isinstance: a tapegrad.jit recording's traced arrays (views of the same memory) too
    if dims != (2, 3) or not isinstance(data, np.ndarray) or data.ndim != 4:
        return False
    if data.dtype not in _FLOATS or not data.size:
        return False
    n, c, h, w = data.shape
    s = data.itemsize
    return data.strides == (h * w * c * s, s, w * c * s, c * s)


_ONES: dict = {}


def _ones(n, dtype):
    key = (n, dtype)
    v = _ONES.get(key)
    if v is None:
        if len(_ONES) > 64:
            _ONES.clear()
        v = np.ones(n, dtype)
        v.flags.writeable = False
        _ONES[key] = v
    return v


def spatial_mean_kernel(data, keepdim):
    """The (N, C) (or (N, C, 1, 1)) mean over H, W of the channels-last ``data``."""
    n, c, h, w = data.shape
    rows = data.transpose(0, 2, 3, 1).reshape(n, h * w, c)  # a view: dense channels-last
    with np.errstate(invalid="ignore"):  # inf - inf: NaN without a warning, as np.mean here
        out = np.matmul(_ones(h * w, data.dtype), rows)
    np.divide(out, h * w, out=out)
    return out.reshape(n, c, 1, 1) if keepdim else out


def spatial_grad_kernel(g, in_shape):
    """g / (H·W) broadcast to ``in_shape``, as a channels-last array (a new one)."""
    n, c, h, w = in_shape
    out = np.empty((n, h, w, c), g.dtype)
    np.divide(g.reshape(n, 1, 1, c), h * w, out=out)
    return out.transpose(0, 3, 1, 2)
