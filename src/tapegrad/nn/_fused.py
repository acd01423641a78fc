"""nn's fused ops: linear (one GEMM plus bias) and embedding (rows gathered, scattered back).

Each is one Node whose backward is written in tapegrad ops, so ``create_graph``
gives higher derivatives.
"""

from __future__ import annotations

import numpy as np

from ..autograd.graph import BATCH, batched_shape, fresh_grad, make_result
from ..grad_mode import STATE
from ..ops.indexing import scatter_back, take_index


def linear(x, w, b=None):
    """y = x @ wᵀ + b for x (*, in), w (out, in), b (out,).

    dx = g @ w,  dw = gᵀ @ x (over all leading dims),  db = Σ g.
    """
    xd, wd = x._data, w._data
    out = np.matmul(xd, wd.T)
    if b is not None:
        out += b._data
    need_x, need_w = x._rg, w._rg
    need_b = b is not None and b._rg
    x_shape = xd.shape
    n_in, n_out = wd.shape[1], wd.shape[0]

    def backward(g):
        gx = gw = gb = None
        if not STATE.enabled and not BATCH.prefix:
            return _linear_grads(g._data, xd, wd, need_x, need_w, need_b)
        if need_x:
            gx = g @ w
        if need_w or need_b:  # dims from the right: Note [Batched gradients]
            g2 = g.reshape(batched_shape((-1, n_out))) if len(x_shape) != 2 else g
            if need_w:
                x2 = x.reshape(-1, n_in) if len(x_shape) != 2 else x
                gw = g2.mT @ x2
            if need_b:
                gb = g2.sum(dim=-2)
        return gx, gw, gb

    saved = tuple(t for t, need in ((w, need_x), (x, need_w)) if need)
    return make_result(out, (x, w, b), backward, "AddmmBackward", saved=saved)


def _linear_grads(g, xd, wd, need_x, need_w, need_b):
    """linear's first-order gradients on arrays: what the rule above computes in tapegrad
    ops, without a Tensor op per product when nothing records (no create_graph, no batch
    prefix). Each is a new array, handed to the engine as such (Note [Fresh gradients]);
    the bias gradient is a column sum, not a GEMM with ones."""
    gx = fresh_grad(g @ wd) if need_x else None
    gw = gb = None
    if need_w or need_b:
        g2 = g.reshape(-1, g.shape[-1]) if g.ndim != 2 else g
        if need_w:
            x2 = xd.reshape(-1, xd.shape[-1]) if xd.ndim != 2 else xd
            gw = fresh_grad(g2.T @ x2)
        if need_b:
            gb = fresh_grad(g2.sum(axis=0))
    return gx, gw, gb


def embedding(idx, weight, padding_idx=None):
    """Rows ``weight[idx]``.  dweight = rows of g added at ``idx`` (none at ``padding_idx``):
    the core indexing op and its scatter-back, with the padding rows' gradient masked."""
    if padding_idx is None:
        return take_index(weight, (idx,), True, "EmbeddingBackward", "embedding")
    keep = (idx != padding_idx)[..., None]
    shape = weight._data.shape

    def backward(g):
        return (scatter_back(g * keep, shape, (idx,), True),)

    return make_result(weight._data[idx], (weight,), backward, "EmbeddingBackward")
