"""``F.multi_head_attention_forward``: torch's multi-head attention as one function.

Inputs are sequence-first, (L, N, E) or unbatched (L, E), as in PyTorch. With
``need_weights=False`` the heads go through the fused ``scaled_dot_product_attention``;
with ``need_weights=True`` the weights are built with differentiable ops (softmax,
dropout, bmm) so that they can be returned, as torch does.
"""

from __future__ import annotations

import math

import numpy as np

from ..ops.joining import cat
from ..tensor import Tensor
from ._attention import scaled_dot_product_attention
from ._fused import linear

__all__ = ["multi_head_attention_forward"]

_OP = "multi_head_attention_forward"


def _canonical_mask(mask, name, dtype):
    """A bool mask (True = masked out) as a float mask of ``dtype`` (−inf there, 0 elsewhere)."""
    if mask is None:
        return None
    if not isinstance(mask, Tensor):  # torch: TypeError from is_floating_point(mask)
        raise TypeError(f"{_OP}: {name} must be a Tensor, got {type(mask).__name__}")
    m = mask._data
    if m.dtype == np.bool_:
        return Tensor._wrap(np.where(m, dtype.type(-np.inf), dtype.type(0)))
    if m.dtype.kind != "f":
        raise AssertionError(f"only bool and floating types of {name} are supported")
    if m.dtype != dtype:  # torch fails later, in its matmul or attention: RuntimeError
        raise RuntimeError(
            f"{_OP}: a float {name} must have the query's dtype {dtype}, got {m.dtype}"
        )
    return mask


def _pad_last(mask):
    """Append one column of 0 (nothing masked) to a float mask."""
    if mask is None:
        return None
    zeros = Tensor._wrap(np.zeros(mask.shape[:-1] + (1,), mask._data.dtype))
    return cat([mask, zeros], -1)


def _in_projection(query, key, value, e, w, b, wq, wk, wv):
    """Project q, k, v; one GEMM for self-attention with a packed weight (the common case)."""
    if w is not None:
        if key is value and query is key:
            return linear(query, w, b).chunk(3, -1)
        bq = bk = bv = None
        if b is not None:
            bq, bk, bv = b[:e], b[e : 2 * e], b[2 * e :]
        if key is value:
            k, v = linear(key, w[e:], None if b is None else b[e:]).chunk(2, -1)
            return linear(query, w[:e], bq), k, v
        return (
            linear(query, w[:e], bq),
            linear(key, w[e : 2 * e], bk),
            linear(value, w[2 * e :], bv),
        )
    if wq is None or wk is None or wv is None:
        raise AssertionError(
            f"{_OP}: use_separate_proj_weight is True but q_proj_weight, k_proj_weight or "
            "v_proj_weight is None"
        )
    bq = bk = bv = None
    if b is not None:
        bq, bk, bv = b[:e], b[e : 2 * e], b[2 * e :]
    return linear(query, wq, bq), linear(key, wk, bk), linear(value, wv, bv)


def multi_head_attention_forward(
    query,
    key,
    value,
    embed_dim_to_check,
    num_heads,
    in_proj_weight,
    in_proj_bias,
    bias_k,
    bias_v,
    add_zero_attn,
    dropout_p,
    out_proj_weight,
    out_proj_bias,
    training=True,
    key_padding_mask=None,
    need_weights=True,
    attn_mask=None,
    use_separate_proj_weight=False,
    q_proj_weight=None,
    k_proj_weight=None,
    v_proj_weight=None,
    static_k=None,
    static_v=None,
    average_attn_weights=True,
    is_causal=False,
):
    """Multi-head attention, as ``torch.nn.functional.multi_head_attention_forward``.

    Masks: ``attn_mask`` (L, S) or (N·H, L, S) and ``key_padding_mask`` (N, S), bool
    (True = not attended) or float (added to the scores).

    Returns:
        ``(output (L, N, E), weights)``; weights are (N, L, S) averaged over heads, or
        (N, H, L, S), or None when ``need_weights`` is False.
    """
    if static_k is not None or static_v is not None:
        raise NotImplementedError(f"{_OP}: static_k/static_v are not supported")
    batched = query.ndim == 3
    if query.ndim not in (2, 3) or key.ndim != query.ndim or value.ndim != query.ndim:
        raise AssertionError(
            f"query, key and value should all be 2-D (unbatched) or 3-D (batched), got "
            f"{query.ndim}-D, {key.ndim}-D and {value.ndim}-D tensors"
        )
    if not batched:
        query, key, value = query.unsqueeze(1), key.unsqueeze(1), value.unsqueeze(1)
        if key_padding_mask is not None:
            key_padding_mask = key_padding_mask.unsqueeze(0)
    tgt_len, bsz, e = query.shape
    src_len = key.shape[0]
    if e != embed_dim_to_check:
        raise AssertionError(
            f"was expecting embedding dimension of {embed_dim_to_check}, but got {e}"
        )
    if e % num_heads:
        raise AssertionError(f"embed_dim {e} not divisible by num_heads {num_heads}")
    if key.shape[:2] != value.shape[:2]:
        raise AssertionError(
            f"key shape {list(key.shape)} does not match value shape {list(value.shape)}"
        )
    hd = e // num_heads
    dtype = query._data.dtype
    for name, t in (
        ("key", key),
        ("value", value),
        ("out_proj_weight", out_proj_weight),
        ("in_proj_weight", in_proj_weight),
        ("q_proj_weight", q_proj_weight),
    ):
        if t is not None and t._data.dtype != dtype:
            raise RuntimeError(
                f"{_OP}: query has dtype {dtype} but {name} has dtype {t._data.dtype}; "
                "convert the input or the module (module.to(dtype))"
            )
    key_padding_mask = _canonical_mask(key_padding_mask, "key_padding_mask", dtype)
    if is_causal and attn_mask is None:
        raise RuntimeError(
            "Need attn_mask if specifying the is_causal hint. You may use the Transformer "
            "module method `generate_square_subsequent_mask` to create this mask."
        )
    if is_causal and key_padding_mask is None and not need_weights:
        attn_mask = None  # the hint alone: sdpa builds the causal mask
    else:
        attn_mask = _canonical_mask(attn_mask, "attn_mask", dtype)
        if key_padding_mask is not None:
            is_causal = False

    packed = None if use_separate_proj_weight else in_proj_weight
    q, k, v = _in_projection(
        query, key, value, e, packed, in_proj_bias, q_proj_weight, k_proj_weight, v_proj_weight
    )
    if attn_mask is not None:
        if attn_mask.ndim == 2:
            if tuple(attn_mask.shape) != (tgt_len, src_len):
                raise RuntimeError(
                    f"The shape of the 2D attn_mask is {list(attn_mask.shape)}, but should be "
                    f"{[tgt_len, src_len]}."
                )
            attn_mask = attn_mask.unsqueeze(0)
        elif attn_mask.ndim == 3:
            if tuple(attn_mask.shape) != (bsz * num_heads, tgt_len, src_len):
                raise RuntimeError(
                    f"The shape of the 3D attn_mask is {list(attn_mask.shape)}, but should be "
                    f"{[bsz * num_heads, tgt_len, src_len]}."
                )
        else:
            kind = "batched (3-D)" if batched else "unbatched (2-D)"
            raise AssertionError(
                f"For {kind} `query`, expected `attn_mask` to be `None`, 2-D or 3-D but found "
                f"{attn_mask.ndim}-D tensor instead"
            )
    if bias_k is not None and bias_v is not None:
        k = cat([k, bias_k.expand(1, bsz, e)], 0)
        v = cat([v, bias_v.expand(1, bsz, e)], 0)
        attn_mask = _pad_last(attn_mask)
        key_padding_mask = _pad_last(key_padding_mask)
    elif (bias_k is None) != (bias_v is None):
        raise AssertionError("bias_k and bias_v must both be given or both be None")

    # (L, N, E) -> (N·H, L, hd)
    q = q.reshape(tgt_len, bsz * num_heads, hd).transpose(0, 1)
    k = k.reshape(k.shape[0], bsz * num_heads, hd).transpose(0, 1)
    v = v.reshape(v.shape[0], bsz * num_heads, hd).transpose(0, 1)
    if add_zero_attn:
        zeros = Tensor._wrap(np.zeros((bsz * num_heads, 1, hd), dtype))
        k = cat([k, zeros], 1)
        v = cat([v, zeros], 1)
        attn_mask = _pad_last(attn_mask)
        key_padding_mask = _pad_last(key_padding_mask)
    src_len = k.shape[1]
    if key_padding_mask is not None:
        if tuple(key_padding_mask.shape) != (bsz, src_len):
            raise AssertionError(
                f"expecting key_padding_mask shape of {[bsz, src_len]}, but got "
                f"{list(key_padding_mask.shape)}"
            )
        kpm = key_padding_mask.reshape(bsz, 1, 1, src_len).expand(bsz, num_heads, 1, src_len)
        kpm = kpm.reshape(bsz * num_heads, 1, src_len)
        attn_mask = kpm if attn_mask is None else attn_mask + kpm
    if not training:
        dropout_p = 0.0

    if need_weights:
        scores = (q * math.sqrt(1.0 / hd)) @ k.mT
        if attn_mask is not None:
            scores = scores + attn_mask
        w = scores.softmax(-1)
        if dropout_p > 0.0:
            from .functional import dropout  # noqa: PLC0415 - functional imports this module

            w = dropout(w, p=dropout_p)
        out = w @ v
        out = out.transpose(0, 1).reshape(tgt_len * bsz, e)
        out = linear(out, out_proj_weight, out_proj_bias).reshape(tgt_len, bsz, e)
        w = w.reshape(bsz, num_heads, tgt_len, src_len)
        if average_attn_weights:
            w = w.mean(dim=1)
        if not batched:
            out, w = out.squeeze(1), w.squeeze(0)
        return out, w

    if attn_mask is not None:
        if attn_mask.shape[0] == 1:
            attn_mask = attn_mask.unsqueeze(0)
        else:
            attn_mask = attn_mask.reshape(bsz, num_heads, -1, src_len)
    q = q.reshape(bsz, num_heads, tgt_len, hd)
    k = k.reshape(bsz, num_heads, src_len, hd)
    v = v.reshape(bsz, num_heads, src_len, hd)
    out = scaled_dot_product_attention(q, k, v, attn_mask, dropout_p, is_causal)
    out = out.permute(2, 0, 1, 3).reshape(bsz * tgt_len, e)
    out = linear(out, out_proj_weight, out_proj_bias).reshape(tgt_len, bsz, e)
    if not batched:
        out = out.squeeze(1)
    return out, None
