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
from ._attention_ops import _row_sums


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
        # Note [Batched gradients]: g may carry a batch prefix; align it from the right.
        if not reduce:
            gb = g.unsqueeze(dim - xd.ndim)
        elif g._data.ndim:
            gb = g.reshape(tuple(g.shape) + (1,) * xd.ndim)
        else:
            gb = g
        if STATE.enabled:  # create_graph: softmax as a function of x
            return (gb * (softmax(x, dim) * Tensor._wrap(asum) - Tensor._wrap(coef)),)
        return (gb * Tensor._wrap(prob * asum - coef),)

    return make_result(out, (x,), backward, "CrossEntropyBackward", saved=(x,))


_REDUCE_INITIAL = {np.dtype(np.float32), np.dtype(np.float64)}
_ROW_OFFSETS: dict = {}


def _row_offsets(n, c):
    """``arange(n)·c`` (int64, read-only, one per (n, c)): row i's start in the flattened
    (n, c) logits, so that row i's class t_i is element ``t_i + i·c``. A flat gather or
    write costs ~2 us where ``take_along_axis`` costs ~15 (it builds broadcast index
    arrays), and one cached constant is recorded once by tapegrad.jit (a new array per
    call would be a new constant per step)."""
    key = (n, c)
    off = _ROW_OFFSETS.get(key)
    if off is None:
        if len(_ROW_OFFSETS) >= 64:
            _ROW_OFFSETS.clear()
        off = np.arange(n, dtype=np.int64) * c
        off.flags.writeable = False
        _ROW_OFFSETS[key] = off
    return off


def index_cross_entropy_mean(x, t, valid):
    """Cross entropy of logits ``x`` (N, C) with class indices ``t`` (N,), averaged over the
    samples where ``valid`` (no class weights, no smoothing): the MLP's case, one Node and
    a handful of array ops (the general path builds a dense coefficient array first).

    ``t`` is in range everywhere (0 where not ``valid``); every sample ignored gives NaN,
    as PyTorch. The gradient is ``g · (softmax(x) − onehot(t)) · valid / Σ valid``.
    """
    xd = x._data
    n, c = xd.shape
    # The ufuncs' reduce, not the methods: the same reductions without the Python wrappers;
    # with ``initial`` NumPy's max over a short contiguous axis runs 30% faster (NaN still
    # propagates), and the row sums are a GEMV against ones (5x faster than the reduction).
    if xd.dtype in _REDUCE_INITIAL:
        top = np.maximum.reduce(xd, axis=1, keepdims=True, initial=-np.inf)
    else:
        top = np.maximum.reduce(xd, axis=1, keepdims=True)
    shifted = xd - top
    del top
    e = np.exp(shifted)
    s = _row_sums(e)[:, 0]
    w = valid.astype(xd.dtype)
    count = np.add.reduce(w, axis=None)
    w /= np.maximum(count, 1)  # all zeros when every sample is ignored
    # the target logit of each row by a flat gather (Note on _row_offsets)
    flat = t + _row_offsets(n, c)
    picked = np.where(valid, shifted.reshape(-1)[flat] - np.log(s), 0)
    # No Python branch on values (the graph cache records this): NaN added when count is 0.
    nan = np.where(count == 0, np.nan, 0).astype(xd.dtype)
    out = np.asanyarray(nan - (picked * w).sum(), dtype=xd.dtype)

    def backward(g):
        gd = g._data
        if STATE.enabled:  # create_graph: softmax as a function of x
            onehot = np.zeros(xd.shape, xd.dtype)
            onehot.reshape(-1)[flat] = 1
            coef = Tensor._wrap(w[:, None])
            if gd.ndim:  # a batch prefix (Note [Batched gradients])
                g = g.reshape(tuple(g.shape) + (1, 1))
            return (g * ((softmax(x, 1) - Tensor._wrap(onehot)) * coef),)
        if gd.ndim == 0:
            # One pass: e · (g·w/s) row by row, then g·w taken off each target logit (a
            # fresh array, Note [Fresh gradients]). torch's softmax − onehot, then the scaling,
            # within a rounding.
            gw = w * gd
            prob = np.multiply(e, (gw / s)[:, None])
            pf = prob.reshape(-1)
            pf[flat] -= gw
            return (fresh_grad(prob),)
        # A batch prefix (Note [Batched gradients]): (B..., 1, 1) times the (N, C) rule.
        prob = e / s[:, None]
        prob.reshape(-1)[flat] -= 1
        prob *= w[:, None]
        return (Tensor._wrap(gd.reshape(gd.shape + (1, 1)) * prob),)

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
