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

from ..autograd.graph import fresh_grad, make_result
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


# Logit arrays smaller than this subtract a dense one-hot in the backward (np.zeros and a
# scatter: ~5 us for 64 x 10); larger ones gather, decrement and scatter the target column
# (~9 us of along-axis overhead, but no N x C fill or pass: 27 against 35 us for 1024 x 96,
# and no constant copied under tapegrad.jit: 33 against 150 us in a GPT step's replay).
_DENSE_ONEHOT_BELOW = 4096


def index_cross_entropy_mean(x, t, valid):
    """Cross entropy of logits ``x`` (N, C) with class indices ``t`` (N,), averaged over the
    samples where ``valid`` (no class weights, no smoothing): the MLP's case, one Node and
    a handful of array ops (the general path builds a dense coefficient array first).

    ``t`` is in range where ``valid``; every sample ignored gives NaN, as PyTorch. The
    gradient is ``g · (softmax(x) − onehot(t)) · valid / Σ valid``.
    """
    xd = x._data
    # The ufuncs' reduce, not the methods: the same reductions without the Python wrappers.
    shifted = xd - np.maximum.reduce(xd, axis=1, keepdims=True)
    e = np.exp(shifted)
    s = np.add.reduce(e, axis=1, keepdims=True)
    w = valid.astype(xd.dtype)
    count = np.add.reduce(w, axis=None)
    w /= np.maximum(count, 1)  # all zeros when every sample is ignored
    # Along-axis gathers and writes, not fancy indexing with np.arange: no constant index
    # array for the graph cache to mistake for a copy of a traced one, and every write
    # into a fresh array is seen by its tracer.
    column = t[:, None]
    picked = np.where(valid, np.take_along_axis(shifted, column, 1)[:, 0] - np.log(s[:, 0]), 0)
    # No Python branch on values (the graph cache records this): NaN added when count is 0.
    nan = np.where(count == 0, np.nan, 0).astype(xd.dtype)
    out = np.asanyarray(nan - (picked * w).sum(), dtype=xd.dtype)

    def backward(g):
        if STATE.enabled:  # create_graph: softmax as a function of x
            onehot = np.zeros(xd.shape, xd.dtype)
            np.put_along_axis(onehot, column, 1, 1)
            coef = Tensor._wrap(w[:, None])
            return (g * ((softmax(x, 1) - Tensor._wrap(onehot)) * coef),)
        prob = e / s
        if prob.size < _DENSE_ONEHOT_BELOW:  # a few calls, each cheap at this size
            onehot = np.zeros(xd.shape, xd.dtype)
            np.put_along_axis(onehot, column, 1, 1)
            prob -= onehot
        else:
            # 1 taken off the target column of each row in place: a dense one-hot cost a
            # fill (a constant's copy under tapegrad.jit), a scatter and a full pass
            at_target = np.take_along_axis(prob, column, 1)
            at_target -= 1
            np.put_along_axis(prob, column, at_target, 1)
        prob *= w[:, None]
        gd = g._data
        if gd.ndim == 0:  # (not batched): scaled in place, a fresh array (Note [Fresh gradients])
            prob *= gd
            return (fresh_grad(prob),)
        return (g * Tensor._wrap(prob),)

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
