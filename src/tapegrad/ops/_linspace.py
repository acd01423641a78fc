"""PyTorch's linspace kernel on arrays, for code that must reproduce torch's float32 values
(window functions, histogram bin edges): the step in the target dtype, the first half of the
points counted from ``start`` and the second half from ``end``."""

from __future__ import annotations

import numpy as np

__all__ = ["linspace_values"]


def linspace_values(start, end, steps: int, dtype) -> np.ndarray:
    """``steps`` points from ``start`` to ``end`` (both included) as torch computes them."""
    dtype = np.dtype(dtype)
    start, end = dtype.type(start), dtype.type(end)
    if steps == 1:
        return np.full(1, start, dtype)
    step = (end - start) / dtype.type(max(steps - 1, 1))
    i = np.arange(steps).astype(dtype)
    out = np.where(i < steps // 2, start + step * i, end - step * (dtype.type(steps - 1) - i))
    return out.astype(dtype, copy=False)
