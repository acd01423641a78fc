"""Finite differences and quadrature: diff, gradient, trapezoid (trapz), cumulative_trapezoid.

Each is composed of differentiable slicing and arithmetic, following PyTorch's formulas
(aten ReduceOps.cpp / Integration.cpp) term for term, so values round as torch's do and
gradients of every order come from the pieces.

diff:      out = x[1:] − x[:-1] along ``dim``, ``n`` times (``!=`` for bool)
gradient:  central differences inside, one-sided (edge_order 1 or 2) at the ends
trapezoid: Σ (y[1:] + y[:-1]) · Δx / 2
"""

from __future__ import annotations

import numbers

import numpy as np

from .. import _dtypes
from ..tensor import Tensor, _check_dim
from ._registry import add_alias, register
from ._util import as_tensor
from .joining import cat

__all__ = ["diff", "gradient", "trapezoid", "cumulative_trapezoid"]


def _slice(t, d, start=None, stop=None):
    """``t[start:stop]`` along dim ``d`` (a differentiable view)."""
    return t[(slice(None),) * d + (slice(start, stop),)]


@register("diff")
def diff(input, n=1, dim=-1, prepend=None, append=None):
    """The ``n``-th forward difference along ``dim``, after joining ``prepend`` and
    ``append`` to ``input`` along it (they must have ``input``'s number of dims)."""
    if input._data.ndim == 0:
        raise RuntimeError("diff expects input to be at least one-dimensional")
    if n < 0:
        raise RuntimeError(f"diff: order must be non-negative but got {n}")
    d = _check_dim(dim, input._data.ndim, "diff")
    parts = []
    for name, extra in (("prepend", prepend), (None, input), ("append", append)):
        if extra is None:
            continue
        extra = as_tensor(extra, "diff")
        if name and extra._data.ndim != input._data.ndim:
            raise RuntimeError(
                f"diff expects {name} or append to be the same dimension as input "
                f"(got {extra._data.ndim}-d {name} for a {input._data.ndim}-d input)"
            )
        parts.append(extra)
    x = cat(parts, d) if len(parts) > 1 else input
    for _ in range(n):
        hi, lo = _slice(x, d, 1), _slice(x, d, None, -1)
        x = hi != lo if x._data.dtype == np.bool_ else hi - lo
    return x


def _spacing_list(spacing, dims, ndim):
    """``spacing`` as one entry per dim: a Python number or a 1-D coordinate Tensor."""
    if spacing is None:
        return [1.0] * len(dims)
    if isinstance(spacing, (numbers.Number, np.generic)):
        return [spacing] * len(dims)
    if isinstance(spacing, Tensor) and spacing._data.ndim == 0:
        return [spacing.item()] * len(dims)
    spacing = list(spacing) if isinstance(spacing, (list, tuple)) else [spacing]
    if len(spacing) != len(dims):
        raise RuntimeError(
            "torch.gradient expected spacing to be unspecified, a scalar or it's spacing and "
            f"dim arguments to have the same length, but got a spacing argument of length "
            f"{len(spacing)} and a dim argument of length {len(dims)}."
        )
    out = []
    for s in spacing:
        if isinstance(s, Tensor) and s._data.ndim == 0:
            raise RuntimeError(
                "torch.gradient expected each element of spacing to have one dimension, but got "
                "an element with 0 dimensions!"
            )
        out.append(s)
    return out


@register("gradient", method=False)
def gradient(input, *, spacing=1, dim=None, edge_order=1):
    """Estimated derivative of ``input`` along each of ``dim`` (all dims when None): one
    tensor per dim, in a tuple.

    ``spacing`` is a number (uniform step for every dim), a list of numbers (one step per
    dim) or a list of 1-D coordinate tensors (one per dim, as long as that dim).
    ``edge_order`` (1 or 2) is the accuracy of the one-sided differences at the ends.
    """
    ndim = input._data.ndim
    if dim is None:
        dims = list(range(ndim))
    elif isinstance(dim, (int, np.integer)):
        dims = [_check_dim(dim, ndim, "gradient")]
    else:
        dims = [_check_dim(d, ndim, "gradient") for d in dim]
    if edge_order not in (1, 2):
        raise RuntimeError(
            f"torch.gradient only supports edge_order=1 and edge_order=2, got {edge_order}"
        )
    for d in dims:
        if input._data.shape[d] < edge_order + 1:
            raise RuntimeError(
                "torch.gradient expected each dimension size to be at least edge_order+1 "
                f"(dim {d} of a tensor of shape {list(input._data.shape)} has size "
                f"{input._data.shape[d]})"
            )
    # An integer input stays integer: torch takes its differences exactly, in the input's
    # dtype, and only the division by the spacing makes them floating (uint8, which would
    # wrap, it refuses).
    if input._data.dtype == np.uint8:
        raise RuntimeError("torch.gradient does not support uint8 input.")
    spacings = _spacing_list(spacing, dims, ndim)
    return tuple(_gradient_along(input, d, s, edge_order, ndim) for d, s in zip(dims, spacings))


def _gradient_along(f, d, h, edge_order, ndim):
    s = lambda start, stop=None: _slice(f, d, start, stop)  # noqa: E731
    if isinstance(h, Tensor):  # coordinates: non-uniform differences
        if h._data.ndim != 1 or h._data.shape[0] != f._data.shape[d]:
            raise RuntimeError(
                f"torch.gradient expected each tensor to be on the same device and to have "
                f"as many elements as dim {d} of the input ({f._data.shape[d]}), got a "
                f"coordinate tensor of shape {list(h._data.shape)}"
            )
        dx = diff(h)
        shape = [1] * ndim
        shape[d] = -1
        dx1, dx2 = _slice(dx, 0, None, -1), _slice(dx, 0, 1)
        a = (-dx2 / (dx1 * (dx1 + dx2))).reshape(shape)
        b = ((dx2 - dx1) / (dx1 * dx2)).reshape(shape)
        c = (dx1 / (dx2 * (dx1 + dx2))).reshape(shape)
        center = a * s(0, -2) + b * s(1, -1) + c * s(2)
        if edge_order == 1:
            first = (s(1, 2) - s(0, 1)) / dx[0]
            last = (s(-1) - s(-2, -1)) / dx[-1]
        else:
            d0, d1, dm1, dm2 = dx[0], dx[1], dx[-1], dx[-2]
            first = (
                -(2.0 * d0 + d1) / (d0 * (d0 + d1)) * s(0, 1)
                + (d0 + d1) / (d0 * d1) * s(1, 2)
                + (-d0) / (d1 * (d0 + d1)) * s(2, 3)
            )
            last = (
                dm1 / (dm2 * (dm1 + dm2)) * s(-3, -2)
                - (dm1 + dm2) / (dm1 * dm2) * s(-2, -1)
                + (2 * dm1 + dm2) / (dm1 * (dm1 + dm2)) * s(-1)
            )
        return cat([first, center, last], d)
    center = (s(2) - s(0, -2)) / h
    if edge_order == 1:
        first = (s(1, 2) - s(0, 1)) / h
        last = (s(-1) - s(-2, -1)) / h
    else:
        first = (-1.5 * s(0, 1) + 2 * s(1, 2) - 0.5 * s(2, 3)) / h
        last = (0.5 * s(-3, -2) - 2 * s(-2, -1) + 1.5 * s(-1)) / h
    return cat([first, center / 2, last], d)


def _zeros_without(y, d):
    # torch keeps y's dtype here, whatever it is (an int or bool sum over nothing included)
    shape = tuple(n for i, n in enumerate(y._data.shape) if i != d)
    return Tensor._wrap(np.zeros(shape, y._data.dtype))


def _dx(x, y, d, op):
    """Δx along dim ``d`` for coordinates ``x`` (1-D, or ``y``'s shape/broadcastable)."""
    x = as_tensor(x, op)
    if x._data.ndim == 1:
        if x._data.shape[0] != y._data.shape[d]:
            raise RuntimeError(
                f"{op}: There must be one `x` value for each sample point (got {x._data.shape[0]}"
                f" x values for {y._data.shape[d]} samples along dim {d})"
            )
        shape = [1] * y._data.ndim
        shape[d] = -1
        return diff(x).reshape(shape)
    if x._data.ndim < y._data.ndim:
        x = x.reshape((1,) * (y._data.ndim - x._data.ndim) + tuple(x._data.shape))
    return diff(x, dim=d - y._data.ndim)


def _trapezoid_args(y, x, dx, dim, op):
    if x is not None and dx is not None:
        raise TypeError(f"{op}: pass either x or dx, not both")
    if isinstance(x, (numbers.Number, np.generic)):
        x, dx = None, x
    if y._data.ndim == 0:
        raise IndexError(f"{op}: Dimension specified as {dim} but tensor has no dimensions")
    return _check_dim(dim, y._data.ndim, op), x, 1 if dx is None else dx


@register("trapezoid", method=False)
def trapezoid(y, x=None, *, dx=None, dim=-1):
    """The trapezoid rule along ``dim``: Σ (y[i] + y[i+1]) Δx_i / 2, with sample points ``x``
    (a 1-D tensor or one of ``y``'s shape) or a uniform spacing ``dx`` (default 1)."""
    d, x, dx = _trapezoid_args(y, x, dx, dim, "trapezoid")
    if y._data.shape[d] == 0:
        return _zeros_without(y, d)
    if x is not None:
        return ((_slice(y, d, None, -1) + _slice(y, d, 1)) * _dx(x, y, d, "trapezoid")).sum(d) / 2.0
    ends = y.select(d, 0) + y.select(d, -1)
    return (y.sum(d) - ends * 0.5) * dx


add_alias("trapz", "trapezoid")  # NumPy's older name


@register("cumulative_trapezoid", method=False)
def cumulative_trapezoid(y, x=None, *, dx=None, dim=-1):
    """The running trapezoid rule along ``dim`` (one element shorter than ``y`` there)."""
    d, x, dx = _trapezoid_args(y, x, dx, dim, "cumulative_trapezoid")
    if y._data.shape[d] == 0:
        return y.to(_dtypes.get_default_dtype()) if y._data.dtype.kind not in "fc" else y * 1
    pairs = _slice(y, d, None, -1) + _slice(y, d, 1)
    if x is not None:
        return (pairs * _dx(x, y, d, "cumulative_trapezoid")).cumsum(d) / 2.0
    return (dx / 2.0 * pairs).cumsum(d)
