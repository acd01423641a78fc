"""MultiheadAttention, with PyTorch's parameter names, initialisation and masks."""

from __future__ import annotations

from . import init
from ._mha import multi_head_attention_forward
from .linear import Linear, empty_parameter
from .module import Module

__all__ = ["MultiheadAttention"]


class NonDynamicallyQuantizableLinear(Linear):
    """torch's name for MultiheadAttention's output projection (a plain Linear)."""


class MultiheadAttention(Module):
    """Attention over ``num_heads`` heads of width ``embed_dim // num_heads``.

    Parameters as PyTorch: ``in_proj_weight`` (3E, E) and ``in_proj_bias`` (3E,) when
    key and value have the embedding width (else ``q_proj_weight``, ``k_proj_weight``,
    ``v_proj_weight``), ``out_proj`` (a Linear), and ``bias_k``/``bias_v`` (1, 1, E) with
    ``add_bias_kv``.

    >>> import tapegrad as tg
    >>> mha = tg.nn.MultiheadAttention(8, 2, batch_first=True)
    >>> x = tg.randn(3, 5, 8)
    >>> out, w = mha(x, x, x)
    >>> out.shape, w.shape
    (tapegrad.Size([3, 5, 8]), tapegrad.Size([3, 5, 5]))
    """

    def __init__(
        self,
        embed_dim,
        num_heads,
        dropout=0.0,
        bias=True,
        add_bias_kv=False,
        add_zero_attn=False,
        kdim=None,
        vdim=None,
        batch_first=False,
        device=None,
        dtype=None,
    ):
        if embed_dim <= 0 or num_heads <= 0:
            raise ValueError(
                f"embed_dim and num_heads must be greater than 0, got embed_dim={embed_dim} "
                f"and num_heads={num_heads} instead"
            )
        super().__init__()
        self.embed_dim = embed_dim
        self.kdim = kdim if kdim is not None else embed_dim
        self.vdim = vdim if vdim is not None else embed_dim
        self._qkv_same_embed_dim = self.kdim == embed_dim and self.vdim == embed_dim
        self.num_heads = num_heads
        self.dropout = dropout
        self.batch_first = batch_first
        self.head_dim = embed_dim // num_heads
        if self.head_dim * num_heads != embed_dim:
            raise AssertionError("embed_dim must be divisible by num_heads")
        if not self._qkv_same_embed_dim:
            self.q_proj_weight = empty_parameter((embed_dim, embed_dim), dtype, device)
            self.k_proj_weight = empty_parameter((embed_dim, self.kdim), dtype, device)
            self.v_proj_weight = empty_parameter((embed_dim, self.vdim), dtype, device)
            self.register_parameter("in_proj_weight", None)
        else:
            self.in_proj_weight = empty_parameter((3 * embed_dim, embed_dim), dtype, device)
            self.register_parameter("q_proj_weight", None)
            self.register_parameter("k_proj_weight", None)
            self.register_parameter("v_proj_weight", None)
        if bias:
            self.in_proj_bias = empty_parameter((3 * embed_dim,), dtype, device)
        else:
            self.register_parameter("in_proj_bias", None)
        self.out_proj = NonDynamicallyQuantizableLinear(
            embed_dim, embed_dim, bias=bias, device=device, dtype=dtype
        )
        if add_bias_kv:
            self.bias_k = empty_parameter((1, 1, embed_dim), dtype, device)
            self.bias_v = empty_parameter((1, 1, embed_dim), dtype, device)
        else:
            self.bias_k = self.bias_v = None
        self.add_zero_attn = add_zero_attn
        self._reset_parameters()

    def _reset_parameters(self):
        if self._qkv_same_embed_dim:
            init.xavier_uniform_(self.in_proj_weight)
        else:
            init.xavier_uniform_(self.q_proj_weight)
            init.xavier_uniform_(self.k_proj_weight)
            init.xavier_uniform_(self.v_proj_weight)
        if self.in_proj_bias is not None:
            init.constant_(self.in_proj_bias, 0.0)
            init.constant_(self.out_proj.bias, 0.0)
        if self.bias_k is not None:
            init.xavier_normal_(self.bias_k)
        if self.bias_v is not None:
            init.xavier_normal_(self.bias_v)

    def forward(
        self,
        query,
        key,
        value,
        key_padding_mask=None,
        need_weights=True,
        attn_mask=None,
        average_attn_weights=True,
        is_causal=False,
    ):
        """Attend ``query`` (L, N, E) to ``key`` (S, N, kdim) / ``value`` (S, N, vdim)
        ((N, L, E) etc. with ``batch_first``; unbatched (L, E) too).

        Returns:
            ``(output, weights)``: output like query; weights (N, L, S) (averaged over
            heads) or (N, H, L, S), or None when ``need_weights`` is False.
        """
        batched = query.ndim == 3
        if self.batch_first and batched:
            if key is value:
                if query is key:
                    query = key = value = query.transpose(1, 0)
                else:
                    query, key = query.transpose(1, 0), key.transpose(1, 0)
                    value = key
            else:
                query, key, value = (x.transpose(1, 0) for x in (query, key, value))
        out, weights = multi_head_attention_forward(
            query,
            key,
            value,
            self.embed_dim,
            self.num_heads,
            self.in_proj_weight,
            self.in_proj_bias,
            self.bias_k,
            self.bias_v,
            self.add_zero_attn,
            self.dropout,
            self.out_proj.weight,
            self.out_proj.bias,
            training=self.training,
            key_padding_mask=key_padding_mask,
            need_weights=need_weights,
            attn_mask=attn_mask,
            use_separate_proj_weight=not self._qkv_same_embed_dim,
            q_proj_weight=self.q_proj_weight,
            k_proj_weight=self.k_proj_weight,
            v_proj_weight=self.v_proj_weight,
            average_attn_weights=average_attn_weights,
            is_causal=is_causal,
        )
        if self.batch_first and batched:
            out = out.transpose(1, 0)
        return out, weights
