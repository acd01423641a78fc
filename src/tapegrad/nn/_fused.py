"""nn's fused ops: linear (one GEMM plus bias) and embedding (rows gathered, scattered back).

Each is one Node whose backward is written in tapegrad ops, so ``create_graph``
gives higher derivatives.
"""

from __future__ import annotations

import numpy as np

from ..autograd.graph import make_result
from ..tensor import Tensor


def linear(x, w, b=None):
    """y = x @ wᵀ + b for x (*, in), w (out, in), b (out,).

    dx = g @ w,  dw = gᵀ @ x (over all leading dims),  db = Σ g.
    """
    xd, wd = x.data, w.data
    out = np.matmul(xd, wd.T)
    if b is not None:
        out += b.data
    need_x, need_w = x._rg, w._rg
    need_b = b is not None and b._rg
    x_shape = xd.shape
    n_in, n_out = wd.shape[1], wd.shape[0]

    def backward(g):
        gx = gw = gb = None
        if need_x:
            gx = g @ w
        if need_w or need_b:
            g2 = g.reshape(-1, n_out) if len(x_shape) != 2 else g
            if need_w:
                x2 = x.reshape(-1, n_in) if len(x_shape) != 2 else x
                gw = g2.mT @ x2
            if need_b:
                gb = g2.sum(dim=0)
        return gx, gw, gb

    saved = tuple(t for t, need in ((w, need_x), (x, need_w)) if need)
    return make_result(out, (x, w, b), backward, "AddmmBackward", saved=saved)


def embedding(idx, weight, padding_idx=None):
    """Rows ``weight[idx]``.  dweight = rows of g added at ``idx`` (none at ``padding_idx``)."""
    out = weight.data[idx]
    n_rows = weight.data.shape[0]

    def backward(g):
        return (_embedding_backward(g, idx, n_rows, padding_idx),)

    return make_result(out, (weight,), backward, "EmbeddingBackward")


def _embedding_backward(g, idx, n_rows, padding_idx):
    gd = g.data
    dim = gd.shape[-1]
    flat_idx = idx.reshape(-1)
    flat_g = gd.reshape(-1, dim)
    if padding_idx is not None:
        keep = flat_idx != padding_idx
        flat_idx, flat_g = flat_idx[keep], flat_g[keep]
    out = np.zeros((n_rows, dim), gd.dtype)
    np.add.at(out, flat_idx, flat_g)

    def backward(v):
        if padding_idx is not None:  # the padding row received no gradient
            keep = (np.arange(n_rows) != padding_idx)[:, None].astype(gd.dtype)
            v = v * Tensor._wrap(keep)
        return (embedding(idx, v),)

    return make_result(out, (g,), backward, "EmbeddingBackwardBackward")
