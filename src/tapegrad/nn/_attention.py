"""``F.scaled_dot_product_attention``: argument checks, masks, GQA and dropout around the
fused op of ``_attention_ops``."""

from __future__ import annotations

import math

import numpy as np

from ..creation import default_generator
from ..ops._dtype_errors import cpp as _cpp
from ..ops._util import bfloat16_in_float32
from ..tensor import Tensor
from ._attention_ops import attention

__all__ = ["scaled_dot_product_attention"]

_OP = "scaled_dot_product_attention"


def _mask_bias(attn_mask, dtype, op=_OP):
    """A float Tensor to add to the scores (−inf where a bool mask is False), or None."""
    if attn_mask is None:
        return None
    if not isinstance(attn_mask, Tensor):
        raise TypeError(f"{op}: attn_mask must be a Tensor, not {type(attn_mask).__name__}")
    m = attn_mask._data
    if m.dtype == np.bool_:
        return Tensor._wrap(np.where(m, dtype.type(0), dtype.type(-np.inf)))
    if m.dtype.kind != "f":
        raise RuntimeError(
            f"{op}: attn_mask must be a bool or floating tensor, got dtype {m.dtype}"
        )
    if m.dtype != dtype:  # torch takes float32 masks, or masks of the query's dtype
        if attn_mask._rg or m.dtype != np.float32:
            raise RuntimeError(
                f"{op}: Expected attn_mask dtype to be bool or float or to match query dtype, "
                f"got attn_mask.dtype: {m.dtype} and query.dtype: {dtype}"
            )
        return Tensor._wrap(m.astype(dtype))
    return attn_mask


@bfloat16_in_float32
def scaled_dot_product_attention(
    query,
    key,
    value,
    attn_mask=None,
    dropout_p=0.0,
    is_causal=False,
    scale=None,
    enable_gqa=False,
):
    """softmax(Q Kᵀ · scale + mask) V, as ``torch.nn.functional.scaled_dot_product_attention``.

    Args:
        query: (N, …, Hq, L, E); key: (N, …, H, S, E); value: (N, …, H, S, Ev).
        attn_mask: bool (True = take part) or float (added to the scores) tensor
            broadcastable to (N, …, Hq, L, S).
        dropout_p: dropout probability on the attention weights (always applied, as torch:
            pass 0.0 in evaluation).
        is_causal: a lower-triangular (top-left aligned) mask; excludes ``attn_mask``.
        scale: factor on Q Kᵀ; default 1/√E.
        enable_gqa: allow H < Hq (grouped-query attention): each key/value head serves
            Hq / H consecutive query heads.

    Returns:
        (N, …, Hq, L, Ev). A query row whose keys are all masked out gets zeros.

    >>> import tapegrad as tg
    >>> q = tg.randn(2, 4, 8, 16)
    >>> tg.nn.functional.scaled_dot_product_attention(q, q, q, is_causal=True).shape
    tapegrad.Size([2, 4, 8, 16])
    """
    for name, t in (("query", query), ("key", key), ("value", value)):
        if not isinstance(t, Tensor):
            raise TypeError(f"{_OP}: {name} must be a Tensor, got {type(t).__name__}")
        if t.ndim < 2:
            raise RuntimeError(f"{_OP}: {name} must be at least 2-D, got shape {list(t.shape)}")
    dtype = query._data.dtype
    if key._data.dtype != dtype or value._data.dtype != dtype:
        raise RuntimeError(
            "Expected query, key, and value to have the same dtype, but got query.dtype: "
            f"{_cpp(dtype)} key.dtype: {_cpp(key._data.dtype)} and value.dtype: "
            f"{_cpp(value._data.dtype)} instead."
        )
    if dtype.kind != "f":
        raise RuntimeError(f"{_OP}: expected floating query, key and value, got {dtype}")
    L, E = query.shape[-2:]
    S = key.shape[-2]
    if key.shape[-1] != E or value.shape[-2] != S:
        raise RuntimeError(
            f"{_OP}: query {list(query.shape)}, key {list(key.shape)} and value "
            f"{list(value.shape)} don't fit (need query.shape[-1] == key.shape[-1] and "
            "key.shape[-2] == value.shape[-2])"
        )
    if not 0.0 <= dropout_p <= 1.0:
        raise RuntimeError(f"dropout probability has to be between 0 and 1, but got {dropout_p}")
    if is_causal and attn_mask is not None:
        raise RuntimeError(
            "_scaled_dot_product_attention: Explicit attn_mask should not be set when "
            "is_causal=True"
        )
    bias = _mask_bias(attn_mask, dtype)
    if is_causal:
        bias = Tensor._wrap(_causal_bias(L, S, dtype))
    scale = 1.0 / math.sqrt(E) if scale is None else float(scale)

    grouped = 0
    hq = query.shape[-3] if query.ndim >= 3 else 1
    hk = key.shape[-3] if key.ndim >= 3 else 1
    if enable_gqa and query.ndim >= 3 and hk != hq:
        if key.shape[-3] != value.shape[-3] or hq % hk:
            raise RuntimeError(
                f"{_OP}: with enable_gqa the number of query heads ({hq}) must be a multiple "
                f"of the number of key/value heads (key {key.shape[-3]}, value "
                f"{value.shape[-3]})"
            )
        grouped = hq // hk
    batch = _batch_shape(query, key, value, grouped)
    if bias is not None:
        full = batch[:-1] + (hq,) if grouped else batch
        try:
            np.broadcast_shapes(bias.shape, full + (L, S))
        except ValueError:
            raise RuntimeError(
                f"{_OP}: attn_mask of shape {list(bias.shape)} cannot be broadcast to the "
                f"attention weights' shape {list(full + (L, S))}"
            ) from None

    if grouped:
        lead = query.shape[:-3]
        q = query.reshape(lead + (hk, grouped, L, E))
        k, v = key.unsqueeze(-3), value.unsqueeze(-3)
        if bias is not None and bias.ndim >= 3:
            bias = bias.expand(np.broadcast_shapes(bias.shape, lead + (hq, L, S)))
            bias = bias.reshape(bias.shape[:-3] + (hk, grouped, L, S))
    else:
        q, k, v = query, key, value

    drop = None
    if dropout_p > 0.0:
        shape = np.broadcast_shapes(q.shape[:-2], k.shape[:-2]) + (L, S)
        keep = default_generator.numpy.random(shape, dtype=np.float32) >= dropout_p
        factor = 0.0 if dropout_p == 1.0 else 1.0 / (1.0 - dropout_p)
        drop = keep.astype(dtype) * dtype.type(factor)
    out = attention(q, k, v, bias, scale, drop)
    if grouped:
        out = out.reshape(out.shape[:-4] + (hq, L, value.shape[-1]))
    return out


_CAUSAL = {}


def _causal_bias(L, S, dtype):
    """The (L, S) top-left causal bias (0 on and below the diagonal, −inf above), one
    read-only array per (L, S, dtype): every layer and step adds the same constant, which
    tapegrad.jit then records once rather than as a new array per call."""
    key = (L, S, dtype.str)
    bias = _CAUSAL.get(key)
    if bias is None:
        if len(_CAUSAL) >= 64:
            _CAUSAL.clear()
        bias = np.triu(np.full((L, S), -np.inf, dtype), 1)
        bias.flags.writeable = False
        _CAUSAL[key] = bias
    return bias


def _batch_shape(query, key, value, grouped):
    """The broadcast batch shape of q, k, v (heads included), or a RuntimeError naming them."""
    qb, kb, vb = query.shape[:-2], key.shape[:-2], value.shape[:-2]
    try:
        if grouped:
            kv = np.broadcast_shapes(kb[:-1], vb[:-1])
            return np.broadcast_shapes(qb[:-1], kv) + (qb[-1],)
        return np.broadcast_shapes(qb, kb, vb)
    except ValueError:
        raise RuntimeError(
            f"{_OP}: the batch dims of query {list(query.shape)}, key {list(key.shape)} and "
            f"value {list(value.shape)} cannot be broadcast together"
        ) from None


# vmap dispatch (Note [vmap levels]); the batching rules are in tapegrad/_batch_rules_more.py.
from ..ops._registry import vmap_hooked as _vmap_hooked  # noqa: E402

for _name in ("scaled_dot_product_attention",):
    globals()[_name] = _vmap_hooked(_name, globals()[_name])
