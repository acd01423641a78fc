"""Batching rules for pooling, convolutions, embedding, attention and the index family
(gather/scatter/index_*), so that vmap runs them in one call, not a per-element loop
(Note [vmap levels] in _batched.py; the nn functions reach vmap through
``ops._registry.vmap_hooked``). Every rule only calls ops (``_call``/``op``), so the
graph it records is ordinary and vmap(grad) differentiates it as is.

* pooling (max/avg/adaptive, 1-3-D): the vmap batch folded into the images' batch dim;
  an unbatched (C, *spatial) input needs nothing, its physical value is a batch;
* conv1d/2d/3d and conv_transpose1d/2d/3d: the batch folded into the images; a batched
  weight or bias (per-sample gradients of a convolution) becomes a grouped convolution
  with ``groups * B`` groups (not for the transposed ones: they loop);
* embedding: batched indices index the table at once; a batched table (B, V, D) is
  flattened to (B·V, D) and each element's indices offset by b·V (checked against V
  first: an index of one element must never reach another's rows);
* scaled_dot_product_attention: q, k, v, mask broadcast over leading dims already, so
  the batched ones get their logical ranks aligned and the call runs on the physical
  values (dropout_p > 0 loops, so that randomness='same' holds);
* gather/scatter/scatter_add/scatter_reduce/take_along_dim/index_add/index_copy/
  index_fill/index_select: every tensor argument expanded (stride 0) to the batch and
  ``dim`` shifted by one; a batched 1-D ``index`` of the index_* ops becomes the
  matching gather/scatter index.
"""

from __future__ import annotations

import numpy as np

from ._batch_rules import _any_at, _at, _bind, _call, _pad, _shift
from ._batched import RULES, BatchedTensor, op, wrap, wrap_out
from .tensor import Tensor

__all__ = ["install"]


def _n(level, *items) -> int:
    return next(a._bval.shape[0] for a in items if _at(a, level))


def _full(t, level, n):
    """The physical value of ``t`` at ``level``: its own, or ``t`` expanded to the batch."""
    if _at(t, level):
        return t._bval
    return op("expand", op("unsqueeze", t, 0), (n, *tuple(t.shape)))


def _unfold(out, n):
    """Results of a call on (n·N, ...) images back to (n, N, ...)."""
    if isinstance(out, Tensor):
        return op("reshape", out, (n, -1, *tuple(out.shape)[1:]))
    return type(out)(_unfold(o, n) for o in out)


# -- pooling and convolutions ---------------------------------------------------------------


def _images(core):
    """Pooling of ``core``-dim inputs (C, *spatial), or core+1 with an image batch."""

    def rule(name, fn, level, args, kwargs):
        if not args or not _at(args[0], level) or _any_at(args[1:], level):
            return NotImplemented
        if _any_at(kwargs.values(), level):
            return NotImplemented
        x = args[0]
        v = x._bval
        if x.ndim == core:
            return wrap_out(_call(name, fn, (v, *args[1:]), kwargs), level)
        if x.ndim != core + 1:
            return NotImplemented
        n = tuple(v.shape)[0]
        flat = op("reshape", v, (-1, *tuple(v.shape)[2:]))
        return wrap_out(_unfold(_call(name, fn, (flat, *args[1:]), kwargs), n), level)

    return rule


def _conv(k, transposed=False):
    """conv{k}d / conv_transpose{k}d: images folded; a batched weight as grouped conv."""
    fold = _images(k + 1)

    def rule(name, fn, level, args, kwargs):
        a = _bind(fn, args, kwargs)
        x, w, b = a["input"], a["weight"], a["bias"]
        rest = {key: val for key, val in a.items() if key not in ("input", "weight", "bias")}
        if _any_at(rest.values(), level) or w.ndim != k + 2:
            return NotImplemented
        if not _at(w, level) and not _at(b, level):
            return fold(name, fn, level, (x, w, b, *rest.values()), {})
        if transposed or x.ndim not in (k + 1, k + 2):
            return NotImplemented
        n = _n(level, x, w, b)
        single = x.ndim == k + 1
        xv = _full(x, level, n)  # (n, [N,] C, *sp)
        if single:
            xv = op("unsqueeze", xv, 1)
        sp = tuple(xv.shape)[3:]
        N, C = tuple(xv.shape)[1:3]
        xv = op("reshape", op("movedim", xv, 0, 1), (N, n * C, *sp))
        wv = _full(w, level, n)
        O = tuple(wv.shape)[1]
        wv = op("reshape", wv, (n * O, *tuple(wv.shape)[2:]))
        bv = None
        if b is not None:
            bv = op("reshape", _full(b, level, n), (n * O,))
        rest["groups"] = rest["groups"] * n
        out = _call(name, fn, (xv, wv, bv, *rest.values()), {})  # positional: any rule
        out = op("reshape", out, (N, n, O, *tuple(out.shape)[2:]))
        out = op("movedim", out, 1, 0)
        if single:
            out = op("squeeze", out, 1)
        return wrap(out, level)

    return rule


# -- embedding and attention ----------------------------------------------------------------


def _embedding(name, fn, level, args, kwargs):
    a = _bind(fn, args, kwargs)
    idx, w, pad = a["input"], a["weight"], a["padding_idx"]
    if isinstance(pad, Tensor) or (w is not None and w.ndim != 2):
        return NotImplemented
    if not _at(w, level):
        if not _at(idx, level):
            return NotImplemented
        return wrap(_call(name, fn, (idx._bval, w, pad), {}), level)
    if not isinstance(idx, Tensor) or idx.dtype.kind not in "iu":
        return NotImplemented
    wv = w._bval
    n, V, D = (tuple(wv.shape)[0], *w.shape)
    if pad is not None and not -V <= pad < V:
        return NotImplemented  # the loop gives the op's own error
    from .nn._fused import check_embedding_indices  # noqa: PLC0415 - nn sits above

    inner = idx
    while type(inner) is BatchedTensor:
        inner = inner._bval
    check_embedding_indices(inner._data, V)  # before the offsets can hide a bad index
    iv = _full(idx, level, n)
    offsets = Tensor._wrap(np.arange(n, dtype=inner._data.dtype) * inner._data.dtype.type(V))
    iv = op("add", iv, op("reshape", offsets, (n,) + (1,) * idx.ndim))
    out = _call(name, fn, (iv, op("reshape", wv, (n * V, D)), None), {})
    if pad is not None:  # padding_idx changes the gradient only: its rows get none
        hit = op("unsqueeze", op("eq", _full(idx, level, n), pad % V), -1)
        out = op("where", hit, out.detach(), out)
    return wrap(out, level)


def _attention(name, fn, level, args, kwargs):
    a = _bind(fn, args, kwargs)
    q, k, v, mask = a["query"], a["key"], a["value"], a["attn_mask"]
    if a["dropout_p"] or isinstance(a["scale"], Tensor):
        return NotImplemented  # dropout: the loop keeps randomness="same" exact
    parts = [t for t in (q, k, v, mask) if isinstance(t, Tensor)]
    rank = max(t.ndim for t in (q, k, v))
    if min(t.ndim for t in (q, k, v)) < 2 or (mask is not None and mask.ndim > rank):
        return NotImplemented
    if a["enable_gqa"] and min(t.ndim for t in (q, k, v)) < 3:
        return NotImplemented  # the batch dim would be taken for the heads
    if not _any_at(parts, level):
        return NotImplemented

    # Unbatched arguments broadcast from the right, so only batched ones of a lower
    # logical rank need size-1 dims after their batch dim.
    def phys(t):
        return _pad(t._bval, rank - t.ndim) if _at(t, level) else t

    a.update(query=phys(q), key=phys(k), value=phys(v))
    if mask is not None:
        a["attn_mask"] = phys(mask)
    return wrap(_call(name, fn, (), a), level)


# -- the index family -----------------------------------------------------------------------


def _dim_of(a, x):
    return _shift(a["dim"], x.ndim)


def _expanded_call(name, fn, level, a, tensors, extra=()):
    """``fn`` with every tensor argument in ``tensors`` expanded to the batch, dim shifted."""
    x = a["input"]
    if x.ndim == 0 or _any_at([a[key] for key in extra], level):
        return NotImplemented
    nd = _dim_of(a, x)
    if nd is None:
        return NotImplemented
    n = _n(level, *[a.get(key) for key in tensors])
    call = dict(a)
    call["dim"] = nd
    for key in tensors:
        if isinstance(a.get(key), Tensor):
            call[key] = _full(a[key], level, n)
    return wrap(_call(name, fn, (), call), level)


def _gather(name, fn, level, args, kwargs):
    a = _bind(fn, args, kwargs)
    if not isinstance(a["index"], Tensor) or a["index"].ndim != a["input"].ndim:
        return NotImplemented
    return _expanded_call(name, fn, level, a, ("input", "index"))


def _scatter(name, fn, level, args, kwargs):
    a = _bind(fn, args, kwargs)
    x, index = a["input"], a["index"]
    src = a.get("src")
    if not isinstance(index, Tensor) or index.ndim != x.ndim:
        return NotImplemented
    if isinstance(src, Tensor) and src.ndim != x.ndim:
        return NotImplemented
    extra = tuple(key for key in ("value", "reduce", "include_self") if key in a)
    return _expanded_call(name, fn, level, a, ("input", "index", "src"), extra)


def _take_along_dim(name, fn, level, args, kwargs):
    a = _bind(fn, args, kwargs)
    x, index = a["input"], a["indices"]
    if not isinstance(index, Tensor):
        return NotImplemented
    n = _n(level, x, index)
    if a["dim"] is None:
        xv = op("reshape", _full(x, level, n), (n, -1))
        iv = op("reshape", _full(index, level, n), (n, -1))
        return wrap(_call(name, fn, (xv, iv, 1), {}), level)
    if x.ndim != index.ndim or x.ndim == 0:
        return NotImplemented
    nd = _shift(a["dim"], x.ndim)
    if nd is None:
        return NotImplemented
    return wrap(_call(name, fn, (_full(x, level, n), _full(index, level, n), nd), {}), level)


def _index_as_full(index, level, n, nd, shape):
    """A 1-D ``index`` (batched: (n, k)) as a gather/scatter index of physical ``shape``
    (the batch first, ``k`` at physical dim ``nd``)."""
    iv = _full(index, level, n)
    k = tuple(iv.shape)[1]
    view = [n] + [1] * (len(shape) - 1)
    view[nd] = k
    full = list(shape)
    full[nd] = k
    return op("expand", op("reshape", iv, tuple(view)), tuple(full))


def _index_op(kind):
    """index_add/index_copy/index_fill/index_select: an unbatched index keeps the op (dim
    shifted); a batched 1-D index turns it into scatter_add/scatter/scatter/gather."""

    def rule(name, fn, level, args, kwargs):
        a = _bind(fn, args, kwargs)
        x, index = a["input"], a["index"]
        source = a.get("source")
        value = a.get("value")
        if not isinstance(index, Tensor) or x.ndim == 0:
            return NotImplemented
        if _at(value, level) and (kind != "fill" or value.ndim != 0 or index.ndim != 1):
            return NotImplemented
        if isinstance(source, Tensor) and source.ndim != x.ndim:
            return NotImplemented
        if not _at(index, level) and not _at(value, level):
            if kind == "select":
                return NotImplemented
            extra = ("alpha",) if "alpha" in a else ()
            return _expanded_call(name, fn, level, a, ("input", "source"), extra)
        if index.ndim != 1 or _any_at([a.get("alpha")], level):
            return NotImplemented
        nd = _shift(a["dim"], x.ndim)
        if nd is None:
            return NotImplemented
        n = _n(level, x, index, source, value)
        xv = _full(x, level, n)
        if kind == "select":
            shape = tuple(xv.shape)
            return wrap(op("gather", xv, nd, _index_as_full(index, level, n, nd, shape)), level)
        if kind == "fill":
            shape = list(xv.shape)
            shape[nd] = tuple(index.shape)[0]
            full = _index_as_full(index, level, n, nd, tuple(shape))
            if isinstance(value, Tensor):  # 0-d, maybe batched: one value per element
                vv = op("reshape", _full(value, level, n), (n,) + (1,) * x.ndim)
                vv = op("_cast", op("expand", vv, tuple(full.shape)), xv.dtype)
                return wrap(op("scatter", xv, nd, full, vv), level)
            return wrap(op("scatter", xv, nd, full, value=value), level)
        sv = _full(source, level, n)
        full = _index_as_full(index, level, n, nd, tuple(sv.shape))
        if kind == "add":
            alpha = a.get("alpha", 1)
            if alpha != 1:
                sv = op("mul", sv, alpha)
            return wrap(op("scatter_add", xv, nd, full, sv), level)
        return wrap(op("scatter", xv, nd, full, sv), level)

    return rule


def _first_of(*candidates):
    def rule(name, fn, level, args, kwargs):
        for cand in candidates:
            out = cand(name, fn, level, args, kwargs)
            if out is not NotImplemented:
                return out
        return NotImplemented

    return rule


def install(rules=RULES) -> None:
    """Register this file's rules (called by _batch_rules._install)."""
    for k in (1, 2, 3):
        for kind in ("max_pool", "avg_pool", "adaptive_avg_pool", "adaptive_max_pool"):
            rules[f"{kind}{k}d"] = _images(k + 1)
        if k != 2:
            rules[f"conv{k}d"] = _conv(k)
        rules[f"conv_transpose{k}d"] = _conv(k, transposed=True)
    # conv2d: its own rule (_batch_rules_linalg.py) first, this one for what it leaves
    rules["conv2d"] = _first_of(rules["conv2d"], _conv(2))
    rules["embedding"] = _embedding
    rules["scaled_dot_product_attention"] = _attention
    rules["gather"] = _gather
    for name in ("scatter", "scatter_add", "scatter_reduce"):
        rules[name] = _scatter
    rules["take_along_dim"] = _take_along_dim
    select_unbatched = rules.get("index_select")

    select = _index_op("select")

    def index_select(name, fn, level, args, kwargs):
        index = args[2] if len(args) > 2 else kwargs.get("index")
        if _at(index, level):
            return select(name, fn, level, args, kwargs)
        return select_unbatched(name, fn, level, args, kwargs)

    rules["index_select"] = index_select
    rules["index_add"] = _index_op("add")
    rules["index_copy"] = _index_op("copy")
    rules["index_fill"] = _index_op("fill")
    from . import _batch_rules_ext  # noqa: PLC0415 - copies, solves, addmm, RNN cells

    _batch_rules_ext.install(rules)
