"""nn's fused ops: linear (one GEMM plus bias) and embedding (rows gathered, scattered back).

Each is one Node whose backward is written in tapegrad ops, so ``create_graph``
gives higher derivatives.
"""

from __future__ import annotations

import numpy as np

from .. import _trace
from ..autograd.graph import (
    OWNED,
    arrays_of,
    batched_shape,
    fresh_array,
    fresh_grad,
    keeps_arrays,
    make_result,
)
from ..grad_mode import STATE
from ..ops.indexing import _scatter_add_array as scatter_add_array
from ..ops.indexing import scatter_back, take_index
from ..ops.linalg import matmul_array
from ..tensor import Tensor
from . import _linear_split


def linear(x, w, b=None):
    """y = x @ wᵀ + b for x (*, in), w (out, in), b (out,).

    dx = g @ w,  dw = gᵀ @ x (over all leading dims),  db = Σ g.
    """
    xd, wd = x._data, w._data
    out = None
    if _linear_split.STEP[0]:  # Note [One pool per step]
        out = _linear_split.forward(xd, wd, None if b is None else b._data)
    if out is None:
        out = matmul_array(xd, wd.T)
        if b is not None:
            out += b._data
    need_x, need_w = x._rg, w._rg
    need_b = b is not None and b._rg
    if not (STATE.enabled and (need_x or need_w or need_b)):
        return Tensor._wrap(out)  # nothing to record: skip building the rule
    x_shape = xd.shape
    n_in, n_out = wd.shape[1], wd.shape[0]
    out_shape = out.shape

    def backward(g):
        if not STATE.enabled and g._data.shape == out_shape and _arrays_ok(x._data, w._data):
            gx, gw, gb = _linear_grads(g._data, x._data, w._data, need_x, need_w, need_b, None)
            return _fresh(gx), _fresh(gw), _fresh(gb)  # Note [Fresh gradients]
        gx = gw = gb = None
        if need_x:
            gx = g @ w
        if need_w or need_b:  # dims from the right: Note [Batched gradients]
            g2 = g.reshape(batched_shape((-1, n_out))) if len(x_shape) != 2 else g
            if need_w:
                rows = int(np.prod(x_shape[:-1]))  # not -1: ambiguous when n_in == 0
                x2 = x.reshape(rows, n_in) if len(x_shape) != 2 else x
                gw = g2.mT @ x2
            if need_b:
                gb = g2.sum(dim=-2)
        return gx, gw, gb

    def array_backward(gd):  # Note [Array backward] in autograd/engine.py
        xd, wd = x._data, w._data
        if gd.shape == out_shape and _arrays_ok(xd, wd):  # new arrays: Note [Fresh gradients]
            return _linear_grads(gd, xd, wd, need_x, need_w, need_b, OWNED.current)
        return arrays_of(backward(Tensor._wrap(gd)))  # empty, float16 or mixed dtypes

    if need_x:
        saved = (w, x) if need_w else (w,)
    else:
        saved = (x,) if need_w else None
    return make_result(
        out, (x, w, b), backward, "AddmmBackward", saved=saved, array_backward=array_backward
    )


def _fresh(a):
    return None if a is None else fresh_grad(a)


def _arrays_ok(xd, wd) -> bool:
    """Whether the first-order rule may run on arrays (same float dtype of 32 bits or
    more, nothing empty); else the rule in Tensor ops."""
    dtype = xd.dtype
    ok = xd.size and wd.shape[0] and dtype == wd.dtype and dtype.kind == "f"
    return bool(ok) and dtype.itemsize >= 4


def check_embedding_indices(idx, n):
    """IndexError unless every index lies in [0, n), tested without reading values into
    Python, so that ``tg.jit.cache`` replays the check (Note in tapegrad._trace)."""
    if idx.size:
        _trace.raise_if((idx < 0) | (idx >= n), _embedding_range_error, n)


def _embedding_range_error(n):
    return IndexError(f"embedding: index out of range in self (num_embeddings={n})")


def _linear_grads(gd, xd, wd, need_x, need_w, need_b, owned):
    """The first-order rule on arrays (nothing is recorded without create_graph): the
    leading dims folded into one GEMM each, the bias gradient as a GEMV against ones. Each
    is a new array, handed to the engine as such (Note [Fresh gradients]): into the running
    backward's ``owned`` (graph.fresh_array inlined) when given, else by the caller."""
    n_out = wd.shape[0]
    g2 = gd.reshape(-1, n_out)
    gx = gw = gb = None
    split = None
    if need_x and need_w and _linear_split.STEP[0]:  # Note [One pool per step]
        split = _linear_split.grads(g2, wd, xd.reshape(-1, wd.shape[1]))
    if split is not None:
        gx, gw = split
        gx = gx.reshape(gd.shape[:-1] + wd.shape[1:])
        if owned is not None:
            owned[id(gx)] = gx
            owned[id(gw)] = gw
    elif need_x:
        gx = _linear_split.grad_input(g2, wd) if _linear_split.STEP[0] else None
        if gx is None:  # (Note [One pool per step])
            gx = np.matmul(g2, wd)
        gx = gx.reshape(gd.shape[:-1] + wd.shape[1:])
        if owned is not None:
            owned[id(gx)] = gx
    if need_w and split is None:
        x2 = xd.reshape(-1, wd.shape[1])
        gw = _linear_split.grad_weight(g2, x2) if _linear_split.STEP[0] else None
        if gw is None:
            gw = np.matmul(g2.T, x2)
        if owned is not None:
            owned[id(gw)] = gw
    if need_b:
        rows = g2.shape[0]
        gb = g2.sum(axis=0) if rows == 0 else np.matmul(_ones_row(rows, gd.dtype), g2)
        gb = gb.reshape(n_out)
        if owned is not None:
            owned[id(gb)] = gb
    return gx, gw, gb


_ONES_ROWS: dict = {}


def _ones_row(n, dtype):
    key = (n, dtype)
    v = _ONES_ROWS.get(key)
    if v is None:
        if len(_ONES_ROWS) > 64:
            _ONES_ROWS.clear()
        v = np.ones((1, n), dtype)
        v.flags.writeable = False
        _ONES_ROWS[key] = v
    return v


def embedding(idx, weight, padding_idx=None, scale_grad_by_freq=False):
    """Rows ``weight[idx]``.  dweight = rows of g added at ``idx`` (none at ``padding_idx``):
    the core indexing op and its scatter-back, with the padding rows' gradient masked and,
    with ``scale_grad_by_freq``, each position's row divided by its index's count in idx."""
    if padding_idx is None and not scale_grad_by_freq:
        if idx.ndim and weight._data.ndim == 2:
            return _take_rows(idx, weight)
        return take_index(weight, (idx,), True, "EmbeddingBackward", "embedding")
    keep = np.ones(idx.shape + (1,), weight._data.dtype)
    if padding_idx is not None:
        keep[idx == padding_idx] = 0
    if scale_grad_by_freq:
        _, where, counts = np.unique(idx, return_inverse=True, return_counts=True)
        keep /= counts[where.reshape(idx.shape)][..., None].astype(keep.dtype)
    shape = weight._data.shape

    def backward(g):
        return (scatter_back(g * keep, shape, (idx,), True),)

    def array_backward(g):  # Note [Array backward] in autograd/engine.py: the same kernels
        return (fresh_array(scatter_add_array(np.multiply(g, keep), shape, (idx,), True)),)

    return make_result(
        weight._data[idx], (weight,), backward, "EmbeddingBackward", array_backward=array_backward
    )


def _take_rows(idx, weight):
    """``weight[idx]`` as ``np.take(weight, idx, axis=0)``: the same rows, 2-3x faster than
    NumPy's fancy indexing for an embedding lookup (16 x 64 indices into a 96 x 64 table:
    6.6 against 16.3 us), with the same scatter-back rule as ``take_index`` (and its array
    rule, Note [Array backward]). The indices were checked against the table
    (``check_embedding_indices``)."""
    wd = weight._data
    shape = wd.shape
    key = (idx,)

    def backward(g):
        return (scatter_back(g, shape, key, True),)

    def array_backward(g):
        return (fresh_array(scatter_add_array(g, shape, key, True)),)

    out = np.take(wd, idx, axis=0)
    return keeps_arrays(
        make_result(out, (weight,), backward, "EmbeddingBackward", array_backward=array_backward)
    )
