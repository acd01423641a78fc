"""The fused attention op behind ``F.scaled_dot_product_attention``.

One Node for ``softmax(q kᵀ · scale + bias) [⊙ dropout] @ v``: the forward runs two
GEMMs and an in-place softmax on the score array; the backward reuses the saved
probabilities instead of rebuilding the chain of small ops. Note [Attention backward].
"""

from __future__ import annotations

import numpy as np

from ..autograd.graph import make_result
from ..grad_mode import STATE
from ..ops._registry import register
from ..ops._util import reduce_grad
from ..tensor import Tensor
from . import _attention_split as _split

__all__ = ["attention"]


def _probabilities(s):
    """Softmax over the last axis of the score array ``s``, in place.

    A row whose scores are all −inf (every key masked out) gets probabilities 0 and so
    an output of 0, as PyTorch's safe softmax. Returns ``(p, dead)``, ``dead`` the bool
    (…, L, 1) array of such rows. Branch-free (no value is read into Python), so that
    tapegrad.jit can record it.
    """
    m = np.max(s, axis=-1, keepdims=True, initial=-np.inf)
    dead = m == -np.inf
    s -= np.where(dead, 0.0, m).astype(s.dtype, copy=False)
    p = np.exp(s, out=s)
    den = _row_sums(p)
    p /= np.where(dead, 1.0, den).astype(s.dtype, copy=False)
    return p, dead


# Note [Attention backward]
# With P = softmax(S), S = q kᵀ·scale + bias, Pd = P ⊙ D (D the scaled dropout mask, or 1):
#   dv = Pdᵀ g,  dP = (g vᵀ) ⊙ D,  dS = P ⊙ (dP − Σ_keys dP ⊙ P),
#   dq = dS k · scale,  dk = dSᵀ q · scale,  dbias = dS.
# Without create_graph, P is the forward's saved array (no recomputation, one (…, L, S)
# array kept) and, as nothing is recorded then, the formulas run directly on arrays (with
# contiguous transposes: see _t). Under create_graph the same formulas run in tapegrad ops
# on P rebuilt from q and k, so that second derivatives see P's dependence on q and k. Dims
# are counted from the right and batch dims are summed back with reduce_grad, so the
# rule works under a batched backward (Note [Batched gradients]) and for broadcast
# (grouped-query) operands.
@register("_scaled_dot_product_attention", method=False, function=False)
def attention(q, k, v, bias=None, scale=1.0, dropout_mask=None):
    """softmax(q @ kᵀ · scale + bias) ⊙ dropout_mask @ v.

    Args:
        q: (…, L, E) queries; k: (…, S, E) keys; v: (…, S, Ev) values; batch dims broadcast.
        bias: None or a float Tensor broadcastable to (…, L, S) (−inf masks a key out);
            it receives a gradient when it requires one.
        scale: the factor on q kᵀ.
        dropout_mask: None or an array broadcastable to (…, L, S), already scaled by 1/(1−p).

    Returns:
        (…, L, Ev) Tensor.
    """
    split = _split.forward(  # Note [Intra-op parallelism]
        q._data, k._data, v._data, None if bias is None else bias._data, scale, dropout_mask
    )
    if split is not None:
        out, p, dead = split
    else:
        s = np.matmul(q._data, _scaled_t(k._data, scale))
        if bias is not None:
            s = np.add(
                s,
                bias._data,
                out=s if s.shape == np.broadcast_shapes(s.shape, bias.shape) else None,
            )
        p, dead = _probabilities(s)
        pd = p if dropout_mask is None else p * dropout_mask
        out = np.matmul(pd, v._data, out=_heads_last(q._data, pd.shape[:-1] + v.shape[-1:]))
        del pd
    need_q, need_k, need_v = q._rg, k._rg, v._rg
    need_b = bias is not None and bias._rg

    def backward(g):
        if not STATE.enabled:  # the hot path: the same formulas on the saved arrays
            return _backward_arrays(g._data, p, dropout_mask, q, k, v, bias, scale)
        # create_graph: P as a differentiable function of q and k
        sc = (q @ k.mT) * scale
        if bias is not None:
            sc = sc + bias
        sc = sc.masked_fill(dead, 0.0)
        P = sc.softmax(-1).masked_fill(dead, 0.0)
        D = None if dropout_mask is None else Tensor._wrap(dropout_mask)
        gq = gk = gv = gb = None
        if need_v:
            Pd = P if D is None else P * D
            gv = reduce_grad(Pd.mT @ g, v)
        if need_q or need_k or need_b:
            dP = g @ v.mT
            if D is not None:
                dP = dP * D
            dS = P * (dP - (dP * P).sum(-1, keepdim=True))
            if need_b:
                gb = reduce_grad(dS, bias)
            if need_q or need_k:
                dS = dS * scale
                if need_q:
                    gq = reduce_grad(dS @ k, q)
                if need_k:
                    gk = reduce_grad(dS.mT @ q, k)
        return gq, gk, gv, gb

    saved = tuple(t for t in (q, k, v, bias) if t is not None)
    return make_result(
        out, (q, k, v, bias), backward, "ScaledDotProductAttentionBackward", saved=saved
    )


_ONES: dict = {}


def _row_sums(a):
    """``a.sum(axis=-1, keepdims=True)`` as a GEMV against a column of ones: several times
    faster than NumPy's reduction over a short contiguous axis (the key axis here)."""
    n = a.shape[-1]
    if a.dtype.kind != "f" or a.dtype.itemsize < 4 or n == 0 or a.size == 0:
        return np.sum(a, axis=-1, keepdims=True)
    key = (n, a.dtype)
    ones = _ONES.get(key)
    if ones is None:
        ones = np.ones((n, 1), a.dtype)
        ones.flags.writeable = False
        _ONES[key] = ones
    if a.flags.c_contiguous:  # one GEMV over all rows
        return np.matmul(a.reshape(-1, n), ones).reshape(a.shape[:-1] + (1,))
    return np.matmul(a, ones)


def _scaled_t(a, scale):
    """``scale`` times the last two axes of ``a`` swapped, C-contiguous: the transposed copy
    that a strided kᵀ needs before the batched GEMM (:func:`_t`), with the scores' scale
    folded in (one pass where the copy and ``s *= scale`` were two, and a half-size one:
    (…, E, S) rather than (…, L, S))."""
    out = np.empty_like(a, shape=a.shape[:-2] + (a.shape[-1], a.shape[-2]), order="C")
    np.multiply(a.swapaxes(-1, -2), a.dtype.type(scale), out=out)
    return out


def _heads_last(like, shape):
    """An output for a (N, H, L, E) attention result laid out as (N, L, H, E) in memory
    (a swapped view of a C-contiguous array) when the query ``like`` is laid out so, or
    None (NumPy allocates C order) otherwise and for other ranks.

    PyTorch's CPU kernel gives its output the query's memory order: a query made by
    ``x.view(N, L, H, E).transpose(1, 2)`` gives an output whose ``transpose(1, 2)
    .reshape(N, L, H·E)`` is a view rather than a copy, and a contiguous query a
    contiguous output. The batched GEMM writes a strided output at the same speed. Made
    with ``empty_like`` of an input so that tapegrad.jit records the allocation."""
    if len(shape) != 4 or like.ndim != 4 or not all(shape) or not _heads_last_order(like):
        return None
    n, h, seq, e = shape
    return np.empty_like(like, shape=(n, seq, h, e), order="C").swapaxes(1, 2)


def _heads_last_order(x):
    """Whether the 4-d ``x`` (N, H, L, E) is stored as (N, L, H, E) and not C-contiguous."""
    if x.flags.c_contiguous:
        return False
    st = x.strides
    return st[0] >= st[2] >= st[1] >= st[3] > 0


def _t(a):
    """The last two axes swapped, as a C-contiguous copy: NumPy's batched matmul is about
    ten times slower on a transposed view than on contiguous memory."""
    return a.swapaxes(-1, -2).copy()  # .copy(): a method call tapegrad.jit's tracer sees


def _tv(a):
    """The last two axes of a C-contiguous array swapped, as a view: each matrix is then
    Fortran-ordered, which NumPy's matmul hands to BLAS with a transpose flag (faster than
    copying first: 92 against 160 us for the 16 x 2 x 64 x 64 probabilities of a small GPT,
    the same bits); a copy (:func:`_t`) for any other layout (a strided view's transpose
    is slow)."""
    if a.flags.c_contiguous:
        return a.swapaxes(-1, -2)
    return _t(a)


def _backward_arrays(gd, p, drop, q, k, v, bias, scale):
    """Note [Attention backward] on arrays (no graph is recorded without create_graph).

    The scale is applied to the (…, L, E) and (…, S, E) products dS·k and dSᵀ·q rather
    than to the (…, L, S) dS (half the elements here). Each gradient whose input has the
    gradient's shape is laid out as that input is (Note on _grad_like), so that the view
    ops between the input projection and attention give it back without copies."""
    if drop is None and q._rg and k._rg and v._rg and (bias is None or not bias._rg):
        split = _split.backward(gd, p, q._data, k._data, v._data, scale)
        if split is not None:  # Note [Intra-op parallelism]
            return tuple(Tensor._wrap(a) for a in split) + (None,)
    gq = gk = gv = gb = None
    if v._rg:
        pd = p if drop is None else p * drop
        gv = np.matmul(_tv(pd), gd, out=_grad_like(v._data, pd.shape[:-2], gd.shape[-1]))
        gv = reduce_grad(Tensor._wrap(gv), v)
    if q._rg or k._rg or (bias is not None and bias._rg):
        dp = np.matmul(gd, _t(v._data))
        if drop is not None:
            dp *= drop
        ds = dp
        ds -= _row_sums(dp * p)
        ds *= p
        if bias is not None and bias._rg:
            gb = reduce_grad(Tensor._wrap(ds.copy()), bias)
        batch = ds.shape[:-2]
        if q._rg:
            gq = np.matmul(ds, k._data, out=_grad_like(q._data, batch, k.shape[-1]))
            gq *= gq.dtype.type(scale)
            gq = reduce_grad(Tensor._wrap(gq), q)
        if k._rg:
            gk = np.matmul(_tv(ds), q._data, out=_grad_like(k._data, batch, q.shape[-1]))
            gk *= gk.dtype.type(scale)
            gk = reduce_grad(Tensor._wrap(gk), k)
    return gq, gk, gv, gb


def _grad_like(x, batch, last):
    """An output for the gradient of ``x`` (shape ``batch + (rows, last)``) with ``x``'s own
    memory order, or None (NumPy allocates C order).

    q, k and v usually are (N, H, L, E) views of one (N, L, 3·H·E) projection; a gradient
    laid out as (N, L, H, E) in memory makes the backward of ``.view(N, L, H, E)
    .transpose(1, 2)`` a view instead of a copy. Only for 4-d inputs whose shape the gradient
    has (nothing to sum over a broadcast) and whose strides put axis 2 outermost after 0."""
    shape = batch + x.shape[-2:-1] + (last,)
    if x.ndim != 4 or shape != x.shape or not x.size or not _heads_last_order(x):
        return None
    n, h, seq, e = shape
    return np.empty_like(x, shape=(n, seq, h, e), order="C").swapaxes(1, 2)
