"""Fused normalisation (batch norm in training, layer norm): one Node for stats + affine.

    x̂ = (x − mean) / √(var + eps)   (mean, biased var over ``axes``)
    y  = x̂ ⊙ w + b
    dx = invstd ⊙ (ĝ − mean(ĝ) − x̂ ⊙ mean(ĝ ⊙ x̂)),  ĝ = g ⊙ w   (means over ``axes``)
    dw = Σ g ⊙ x̂,  db = Σ g                                        (sums over ``param_axes``)

The first-order backward reuses the forward's x̂ and invstd. Under ``create_graph``
they are recomputed from ``x`` with differentiable ops, so second derivatives
are exact rather than treating the statistics as constants.
"""

from __future__ import annotations

import numpy as np

from ..autograd.graph import make_result
from ..grad_mode import STATE
from ..tensor import Tensor


def normalize(x, weight, bias, axes, param_axes, view, eps):
    """Normalise ``x`` over ``axes`` and apply the affine ``weight``/``bias`` (or None).

    Args:
        axes: axes the statistics are taken over.
        param_axes: axes that ``weight``/``bias`` do not cover (their gradients sum over them).
        view: the shape ``weight``/``bias`` take to broadcast against ``x``.

    Returns:
        ``(y, mean, var)``: the result Tensor and the batch statistics as arrays
        (``mean`` and biased ``var``, with the reduced axes kept).
    """
    xd = x._data
    mean = xd.mean(axis=axes, keepdims=True)
    xc = xd - mean
    var = np.mean(xc * xc, axis=axes, keepdims=True)
    invstd = 1.0 / np.sqrt(var + eps)
    xhat = xc * invstd
    out = xhat
    if weight is not None:
        out = out * weight._data.reshape(view)
    if bias is not None:
        out = out + bias._data.reshape(view)
    if out is xhat:
        out = xhat.copy()  # x̂ stays private to the backward
    need_x, need_w = x._rg, weight is not None and weight._rg
    need_b = bias is not None and bias._rg
    # dims counted from the right: g may carry a batch prefix (Note [Batched gradients])
    g_axes = tuple(a - xd.ndim for a in axes)
    g_param_axes = tuple(a - xd.ndim for a in param_axes)

    def backward(g):
        if STATE.enabled:  # create_graph: statistics as functions of x
            xc_t = x - x.mean(dim=axes, keepdim=True)
            inv = ((xc_t * xc_t).mean(dim=axes, keepdim=True) + eps) ** -0.5
            xh = xc_t * inv
        else:
            xh, inv = Tensor._wrap(xhat), Tensor._wrap(invstd)
        gx = gw = gb = None
        if need_x:
            gh = g * weight.reshape(view) if weight is not None else g
            gx = inv * (
                gh
                - gh.mean(dim=g_axes, keepdim=True)
                - xh * (gh * xh).mean(dim=g_axes, keepdim=True)
            )
        if need_w:
            gw = (g * xh).sum(dim=g_param_axes)
        if need_b:
            gb = g.sum(dim=g_param_axes)
        return gx, gw, gb

    saved = tuple(t for t in (x, weight) if t is not None and (need_x or need_w))
    y = make_result(out, (x, weight, bias), backward, "NativeNormBackward", saved=saved)
    return y, mean, var
