"""fill: a tensor of ``input``'s shape and dtype holding one value (torch.fill, the
out-of-place form of ``Tensor.fill_``).

d/dinput = 0 (every element is overwritten); d/dvalue = Σ g when ``value`` is a 0-d tensor.
"""

from __future__ import annotations

import numpy as np

from ..autograd.graph import make_result
from ..creation import zeros_like
from ..tensor import Tensor
from ._registry import register

__all__ = ["fill"]


@register("fill", method=False)
def fill(input, value):
    """A new tensor like ``input`` with every element ``value`` (a number or a 0-d tensor),
    cast to ``input``'s dtype."""
    tv = None
    if isinstance(value, Tensor):
        if value._data.ndim:
            raise RuntimeError(
                "fill_ only supports 0-dimension value tensor but got tensor with "
                f"{value._data.ndim} dimensions."
            )
        tv, value = value, value._data
    dtype = input._data.dtype
    out = np.full(input._data.shape, value).astype(dtype, copy=False)
    differentiable = dtype.kind in "fV"  # V: bfloat16

    nd = out.ndim

    def backward(g):
        gi = zeros_like(g) if input._rg else None  # (not g * 0: NaN/inf stay out)
        gv = None
        if tv is not None and tv._rg:  # Σ over the output's dims, from the right (batched)
            gv = (g.sum(dim=tuple(range(-nd, 0))) if nd else g).to(tv._data.dtype)
        return gi, gv

    if not differentiable:
        return Tensor._wrap(out)
    return make_result(out, (input, tv), backward, "FillBackward")
