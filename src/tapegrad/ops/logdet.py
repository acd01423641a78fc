"""logdet: log det A of a (batch of) square matrices, from slogdet.

logdet = log|det A| where det A > 0, NaN where det A < 0, −inf where A is singular
(PyTorch's rule for real input); the gradient is slogdet's, g·A⁻ᵀ.
"""

from __future__ import annotations

import numpy as np

from ._registry import register
from .elementwise import where
from .solve import slogdet

__all__ = ["logdet"]


@register("logdet")
def logdet(input):
    """log(det(input)) for square matrices (..., n, n); NaN for a negative determinant."""
    shape = input._data.shape
    if len(shape) < 2 or shape[-1] != shape[-2]:
        raise RuntimeError(
            f"logdet: expected a square matrix or a batch of them (..., n, n), got shape "
            f"{list(shape)}"
        )
    sign, logabsdet = slogdet(input)
    return where(sign._data == -1, np.array(np.nan, logabsdet._data.dtype), logabsdet)
