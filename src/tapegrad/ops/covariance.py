"""Covariance and correlation matrices: cov (with frequency and analytic weights), corrcoef.

Composed of differentiable ops in the order of PyTorch's Correlation.cpp, so values round as
torch's do and the gradient reaches the input and ``aweights`` alike:

cov:       avg = Σ w·x / Σ w;  C = (x − avg)(w·(x − avg))ᵀ / (Σ w − correction·Σ w·a / Σ w)
corrcoef:  C_ij / √(C_ii C_jj), clipped to [−1, 1]
"""

from __future__ import annotations

import functools

import numpy as np

from .. import _warn
from ..tensor import Tensor
from ._registry import register
from ._util import as_tensor

__all__ = ["cov", "corrcoef"]


def _check_weights(w, kind, n, integral):
    w = as_tensor(w, "cov")
    if w._data.ndim > 1:
        raise RuntimeError(
            f"cov(): expected {kind} to have one or fewer dimensions but got {kind} with "
            f"{w._data.ndim} dimensions"
        )
    if integral and w._data.dtype.kind not in "iu":
        raise RuntimeError(
            f"cov(): expected fweights to have integral dtype but got fweights with "
            f"{w._data.dtype} dtype"
        )
    if not integral and w._data.dtype.kind not in "fV":  # V: bfloat16
        raise RuntimeError(
            f"cov(): expected aweights to have floating point dtype but got aweights with "
            f"{w._data.dtype} dtype"
        )
    if w._data.size != n:
        raise RuntimeError(
            f"cov(): expected {kind} to have the same numel as there are observations in the "
            f"input but got {w._data.size} != {n}"
        )
    if n and w._data.min() < 0:
        raise RuntimeError(f"cov(): {kind} cannot be negative")
    return w


def _quiet(fn):
    """Run ``fn`` with NumPy's divide/invalid warnings off: a covariance with no degrees of
    freedom is NaN/inf by definition (torch warns once, in its own words, below)."""

    @functools.wraps(fn)
    def op(*args, **kwargs):
        with np.errstate(divide="ignore", invalid="ignore"):
            return fn(*args, **kwargs)

    return op


@register("cov")
@_quiet
def cov(input, *, correction=1, fweights=None, aweights=None):
    """Covariance matrix of the variables in the rows of ``input`` (observations in the
    columns; a 1-D input is one variable, giving a 0-d result).

    Args:
        input: a 0-, 1- or 2-D tensor (variables × observations).
        correction: subtracted from the (weighted) number of observations; 1 is Bessel's.
        fweights: integer repeat counts, one per observation.
        aweights: float importance weights, one per observation.
    """
    if input._data.ndim > 2:
        raise RuntimeError(
            "cov(): expected input to have two or fewer dimensions but got an input with "
            f"{input._data.ndim} dimensions"
        )
    if input._data.dtype == np.bool_:
        raise RuntimeError("cov(): bool dtype is not supported for input")
    x = input.reshape(1, -1) if input._data.ndim < 2 else input
    n = x._data.shape[1]
    w = None
    if fweights is not None:
        w = _check_weights(fweights, "fweights", n, True)
    if aweights is not None:
        aweights = _check_weights(aweights, "aweights", n, False)
        w = aweights if w is None else w * aweights
    if w is None:
        w_sum = Tensor._wrap(np.array(n, np.int64))
    else:
        w_sum = w.sum()
        if not w_sum._data.all():
            raise RuntimeError("cov(): weights sum to zero, can't be normalized")
    avg = (x if w is None else x * w).sum(1) / w_sum
    if w is not None and aweights is not None and correction != 0:
        norm_factor = w_sum - correction * (w * aweights).sum() / w_sum
    else:
        norm_factor = w_sum - correction
    if (norm_factor._data <= 0).all():
        _warn.warn(
            "cov(): degrees of freedom is <= 0. Correction should be strictly less than the "
            "number of observations.",
        )
        norm_factor = norm_factor * 0
    centered = x - avg.unsqueeze(1)
    c = centered @ (centered if w is None else centered * w).t()
    return (c / norm_factor).squeeze()


@register("corrcoef")
@_quiet
def corrcoef(input):
    """Pearson correlation coefficients of the rows of ``input`` (see :func:`cov`)."""
    if input._data.ndim > 2:
        raise RuntimeError(
            "corrcoef(): expected input to have two or fewer dimensions but got an input with "
            f"{input._data.ndim} dimensions"
        )
    c = cov(input)
    if c._data.ndim == 0:
        return c / c  # NaN for a 0, inf or NaN variance, else 1
    stddev = c.diagonal().sqrt()
    c = c / stddev.reshape(-1, 1)
    c = c / stddev.reshape(1, -1)
    return c.clip(-1, 1)
