"""Selecting by comparison: clamp (clip), maximum, minimum.

Gradients at the kinks follow PyTorch: clamp passes ``g`` to x where
min <= x <= max (bounds inclusive); a tensor bound gets ``g`` where x lies
beyond it (the lower bound only while min < max, since otherwise the upper one
wins). maximum/minimum split ``g`` half and half between tied operands.
"""

from __future__ import annotations

import numpy as np

from .._promotion import result_type_of
from ..autograd.graph import make_result
from ..tensor import Tensor
from ._int_scalars import fill_number
from ._mathutil import const
from ._registry import register
from ._util import as_tensor, as_tensor_or_scalar, broadcast_error, reduce_grad

__all__ = ["clamp", "clip", "maximum", "minimum"]


@register("clamp")
def clamp(input, min=None, max=None):
    """Limit ``input`` to [min, max]; each bound is a number, a tensor (broadcast) or None.

    Where min > max every element becomes max, as in PyTorch.

    d/dx = 1 where min <= x <= max, else 0; d/dmin = 1 where x < min (and min < max);
    d/dmax = 1 where x > max (or max < min).
    """
    if min is None and max is None:  # torch's type
        raise RuntimeError("clamp: at least one of 'min' or 'max' must not be None")
    x = as_tensor(input, "clamp")
    tlo, lo = (None, None) if min is None else as_tensor_or_scalar(min, "clamp")
    thi, hi = (None, None) if max is None else as_tensor_or_scalar(max, "clamp")
    xd = x._data
    if tlo is None:  # a number: torch's overflow check (Note [Numbers beyond an integer dtype])
        lo = fill_number(lo, xd)
    if thi is None:
        hi = fill_number(hi, xd)
    try:
        out = xd
        if lo is not None:
            out = np.maximum(out, lo)
        if hi is not None:
            out = np.minimum(out, hi)
    except ValueError:
        shapes = [np.shape(d) for d in (xd, lo, hi) if d is not None]
        raise broadcast_error("clamp", *shapes) from None
    out = np.asanyarray(out)  # a new array: at least one bound is given
    # PyTorch's promotion: a 0-d bound or a number does not widen a float input
    bounds = [b if t is None else t for t, b in ((tlo, lo), (thi, hi)) if b is not None]
    dt = result_type_of(x, *(b.item() if isinstance(b, np.generic) else b for b in bounds))
    if dt.kind == "b":
        _bool_scalar_bounds(min, max)
    if out.dtype != dt:
        out = out.astype(dt)
    nx = x._rg
    nlo = tlo is not None and tlo._rg
    nhi = thi is not None and thi._rg

    def backward(g):
        # Masks multiply g (as relu's rule does): a NumPy product is ~2x faster than where.
        # NOTE: so an inf/NaN upstream gradient becomes NaN (not 0) where x is clamped.
        xv = x._data
        gx = glo = ghi = None
        if nx:
            if lo is None:
                inside = xv <= hi
            elif hi is None:
                inside = xv >= lo
            else:
                inside = (xv >= lo) & (xv <= hi)
            gx = reduce_grad(g * const(inside), x)
        if nlo:
            below = xv < lo
            if hi is not None:
                below = below & (lo < hi)
            glo = reduce_grad(g * const(below), tlo)
        if nhi:
            above = xv > hi
            if lo is not None:
                above = above | (hi < lo)
            ghi = reduce_grad(g * const(above), thi)
        return gx, glo, ghi

    saved = tuple(t for t in (x, tlo, thi) if t is not None)
    return make_result(out, (x, tlo, thi), backward, "ClampBackward", saved=saved)


def _bool_scalar_bounds(min, max):
    """torch's error for a bool clamp with a Python bool bound: that call takes its Scalar
    overload (a 0-d tensor bound counts as a Scalar then), which has no bool kernel. Bool
    tensors as bounds (the Tensor overload) are computed."""
    given = [b for b in (min, max) if b is not None]
    if all(isinstance(b, Tensor) for b in given):
        return
    if any(isinstance(b, Tensor) and b._data.ndim for b in given):
        return
    if not all(isinstance(b, (bool, np.bool_, Tensor)) for b in given):  # promotes: no error here
        return
    stub = "clamp" if len(given) == 2 else ("clamp_min" if max is None else "clamp_max")
    raise NotImplementedError(f"clamp: \"{stub}_scalar_cpu\" not implemented for 'Bool'")


clip = clamp
Tensor.clip = clamp


def _binary_extremum(name, fn, loses, node):
    def extremum(input, other):
        a = as_tensor(input, name)
        b = as_tensor(other, name)
        if a._data.dtype.kind == "c" or b._data.dtype.kind == "c":  # torch's error
            raise RuntimeError(f"{name} not implemented for complex tensors.")
        try:
            out = fn(a._data, b._data)
        except ValueError:
            raise broadcast_error(name, a.shape, b.shape) from None
        out = np.asanyarray(out)
        dt = result_type_of(a, b)  # PyTorch's promotion: a 0-d operand is weaker
        if out.dtype != dt:
            out = out.astype(dt)
        na, nb = a._rg, b._rg

        def backward(g):
            ad, bd = a._data, b._data
            # Ties split the gradient evenly; the losing side gets nothing. A NaN operand
            # loses to nothing, so both sides get g there, as in PyTorch.
            tie = ad == bd
            dt = g._data.dtype
            ga = gb = None
            if na:
                share_a = np.where(tie, 0.5, ~loses(ad, bd)).astype(dt, copy=False)
                ga = reduce_grad(g * const(share_a), a)
            if nb:
                share_b = np.where(tie, 0.5, ~loses(bd, ad)).astype(dt, copy=False)
                gb = reduce_grad(g * const(share_b), b)
            return ga, gb

        return make_result(out, (a, b), backward, node, saved=(a, b))

    extremum.__name__ = name
    return extremum


maximum = register("maximum")(_binary_extremum("maximum", np.maximum, np.less, "MaximumBackward"))
maximum.__doc__ = """Elementwise maximum of two tensors, broadcasting; NaN propagates.

    d/da = 1 where a > b, 1/2 where a == b, else 0 (and symmetrically for b).
    """
minimum = register("minimum")(
    _binary_extremum("minimum", np.minimum, np.greater, "MinimumBackward")
)
minimum.__doc__ = """Elementwise minimum of two tensors, broadcasting; NaN propagates.

    d/da = 1 where a < b, 1/2 where a == b, else 0 (and symmetrically for b).
    """
