"""Fused losses: cross entropy on logits, and binary cross entropy on logits.

Note [Cross entropy as soft targets]
Every variant of cross entropy (class indices or probabilities, class weights,
label smoothing, ignore_index, mean/sum) is ``L = −Σ_{i,c} A[i,c]·log_softmax(x)[i,c]``
for a constant coefficient array ``A`` built by nn.functional. One Node then serves
them all, and its backward is the fused softmax rule:
    dL/dx[i,c] = g_i · (softmax(x)[i,c] · Σ_c A[i,c] − A[i,c]).
"""

from __future__ import annotations

import numpy as np

from ..autograd.graph import make_result
from ..grad_mode import STATE
from ..ops.softmax import softmax
from ..tensor import Tensor


def soft_cross_entropy(x, coef, dim, reduce, offset=None):
    """``−Σ_dim coef ⊙ log_softmax(x, dim)``, summed to a scalar when ``reduce``.

    ``offset``: an optional 0-d array added to the reduced value (no gradient).
    """
    xd = x._data
    shifted = xd - xd.max(axis=dim, keepdims=True)
    e = np.exp(shifted)
    s = e.sum(axis=dim, keepdims=True)
    with np.errstate(invalid="ignore"):
        terms = np.where(coef != 0, coef * (shifted - np.log(s)), 0)  # 0·(−inf) counts as 0
    per = -terms.sum(axis=dim)
    if reduce:
        per = per.sum() if offset is None else per.sum() + offset
    out = np.asanyarray(per, dtype=xd.dtype)
    prob = e / s
    asum = coef.sum(axis=dim, keepdims=True)

    def backward(g):
        gb = g if reduce else g.unsqueeze(dim)
        if STATE.enabled:  # create_graph: softmax as a function of x
            return (gb * (softmax(x, dim) * Tensor._wrap(asum) - Tensor._wrap(coef)),)
        return (gb * Tensor._wrap(prob * asum - coef),)

    return make_result(out, (x,), backward, "CrossEntropyBackward", saved=(x,))


def bce_with_logits(x, y, pos_weight=None):
    """Elementwise ``−[p·y·log σ(x) + (1 − y)·log(1 − σ(x))]``, stable for any |x|.

    Computed as ``(1 − y)·x + (1 + (p − 1)·y)·softplus(−x)`` with p = pos_weight (1 if None).
    dx = (1 − y) − (1 + (p − 1)·y)·σ(−x);  dy = −x + (p − 1)·softplus(−x).
    """
    xd, yd = x._data, y._data
    sp = np.logaddexp(0, -xd)  # softplus(−x) without overflow
    pw = 1.0 if pos_weight is None else pos_weight
    lw = 1.0 + (pw - 1.0) * yd if pos_weight is not None else 1.0
    out = ((1.0 - yd) * xd + lw * sp).astype(xd.dtype, copy=False)
    need_x, need_y = x._rg, y._rg

    def backward(g):
        if STATE.enabled:
            X, Y = x, y
            SP = -(X.sigmoid().log())
        else:
            X, Y, SP = Tensor._wrap(xd), Tensor._wrap(yd), Tensor._wrap(sp)
        gx = gy = None
        if need_x:
            LW = Y * (pw - 1.0) + 1.0 if pos_weight is not None else 1.0
            gx = g * ((1.0 - Y) - LW * (-X).sigmoid())
        if need_y:
            gy = g * (-X + SP * (pw - 1.0)) if pos_weight is not None else g * -X
        return gx, gy

    return make_result(out, (x, y), backward, "BinaryCrossEntropyWithLogitsBackward", saved=(x, y))
