"""Transformer, TransformerEncoder/Decoder and their layers, as PyTorch (same submodule
names, so state_dict keys match)."""

from __future__ import annotations

import copy

import numpy as np

from ..tensor import Tensor
from . import functional as F
from . import init
from .attention import MultiheadAttention
from .container import ModuleList
from .dropout import Dropout
from .linear import Linear
from .module import Module
from .normalization import LayerNorm

__all__ = [
    "Transformer",
    "TransformerEncoder",
    "TransformerDecoder",
    "TransformerEncoderLayer",
    "TransformerDecoderLayer",
]


def _activation(activation):
    if callable(activation):
        return activation
    if activation == "relu":
        return F.relu
    if activation == "gelu":
        return F.gelu
    raise RuntimeError(f"activation should be relu/gelu, not {activation}")


def _clones(module, n):
    return ModuleList([copy.deepcopy(module) for _ in range(n)])


def _generate_square_subsequent_mask(sz, device=None, dtype=None):
    from .. import _dtypes  # noqa: PLC0415

    dt = _dtypes.to_dtype(dtype) or _dtypes.get_default_dtype()
    return Tensor._wrap(np.triu(np.full((sz, sz), -np.inf, dt), 1))


def _causal_hint(mask, is_causal, size):
    """torch's _detect_is_causal_mask: the hint, or True when ``mask`` is exactly causal."""
    if is_causal is None and mask is not None:
        m = mask._data if isinstance(mask, Tensor) else np.asarray(mask)
        if m.shape == (size, size):
            causal = _generate_square_subsequent_mask(size, dtype=m.dtype)._data
            if m.dtype == np.bool_:
                causal = causal != 0
            return bool(np.array_equal(m, causal))
    return bool(is_causal)  # False for a mask of another shape (is_causal is None there)


class _TransformerLayer(Module):
    """What the encoder and decoder layers share: attention blocks, the feed-forward block,
    one LayerNorm and one Dropout per residual branch, created in torch's order so
    ``state_dict`` keys and ``parameters()`` order match."""

    def _build(self, attentions, d_model, nhead, dim_feedforward, dropout, activation,
               layer_norm_eps, batch_first, norm_first, bias, kw):  # fmt: skip
        for name in attentions:
            attn = MultiheadAttention(
                d_model, nhead, dropout=dropout, bias=bias, batch_first=batch_first, **kw
            )
            setattr(self, name, attn)
        self.linear1 = Linear(d_model, dim_feedforward, bias=bias, **kw)
        self.dropout = Dropout(dropout)
        self.linear2 = Linear(dim_feedforward, d_model, bias=bias, **kw)
        self.norm_first = norm_first
        branches = range(1, len(attentions) + 2)
        for i in branches:
            setattr(self, f"norm{i}", LayerNorm(d_model, eps=layer_norm_eps, bias=bias, **kw))
        for i in branches:
            setattr(self, f"dropout{i}", Dropout(dropout))
        self.activation = _activation(activation)

    def _residual(self, x, norm, block, *args):
        """``x + block(norm(x))`` with ``norm_first``, else ``norm(x + block(x))``."""
        if self.norm_first:
            return x + block(norm(x), *args)
        return norm(x + block(x, *args))

    @staticmethod
    def _attend(attn, x, mem, attn_mask, key_padding_mask, is_causal, dropout):
        out = attn(
            x,
            mem,
            mem,
            attn_mask=attn_mask,
            key_padding_mask=key_padding_mask,
            need_weights=False,
            is_causal=is_causal,
        )[0]
        return dropout(out)

    def _sa_block(self, x, attn_mask, key_padding_mask, is_causal=False):
        return self._attend(
            self.self_attn, x, x, attn_mask, key_padding_mask, is_causal, self.dropout1
        )

    def _ff_block(self, x):
        x = self.linear2(self.dropout(self.activation(self.linear1(x))))
        return self._ff_dropout(x)


class TransformerEncoderLayer(_TransformerLayer):
    """Self-attention and a feed-forward block, each with a residual and a LayerNorm
    (after the residual, or before the block with ``norm_first``)."""

    def __init__(
        self,
        d_model,
        nhead,
        dim_feedforward=2048,
        dropout=0.1,
        activation=F.relu,
        layer_norm_eps=1e-5,
        batch_first=False,
        norm_first=False,
        bias=True,
        device=None,
        dtype=None,
    ):
        super().__init__()
        self._build(("self_attn",), d_model, nhead, dim_feedforward, dropout, activation,
                    layer_norm_eps, batch_first, norm_first, bias,
                    {"device": device, "dtype": dtype})  # fmt: skip

    @property
    def _ff_dropout(self):
        return self.dropout2

    def forward(self, src, src_mask=None, src_key_padding_mask=None, is_causal=False):
        x = self._residual(
            src, self.norm1, self._sa_block, src_mask, src_key_padding_mask, is_causal
        )
        return self._residual(x, self.norm2, self._ff_block)


class TransformerDecoderLayer(_TransformerLayer):
    """Self-attention, attention to the encoder's memory and a feed-forward block."""

    def __init__(
        self,
        d_model,
        nhead,
        dim_feedforward=2048,
        dropout=0.1,
        activation=F.relu,
        layer_norm_eps=1e-5,
        batch_first=False,
        norm_first=False,
        bias=True,
        device=None,
        dtype=None,
    ):
        super().__init__()
        self._build(("self_attn", "multihead_attn"), d_model, nhead, dim_feedforward, dropout,
                    activation, layer_norm_eps, batch_first, norm_first, bias,
                    {"device": device, "dtype": dtype})  # fmt: skip

    @property
    def _ff_dropout(self):
        return self.dropout3

    def forward(
        self,
        tgt,
        memory,
        tgt_mask=None,
        memory_mask=None,
        tgt_key_padding_mask=None,
        memory_key_padding_mask=None,
        tgt_is_causal=False,
        memory_is_causal=False,
    ):
        x = self._residual(
            tgt, self.norm1, self._sa_block, tgt_mask, tgt_key_padding_mask, tgt_is_causal
        )
        x = self._residual(
            x,
            self.norm2,
            self._mha_block,
            memory,
            memory_mask,
            memory_key_padding_mask,
            memory_is_causal,
        )
        return self._residual(x, self.norm3, self._ff_block)

    def _mha_block(self, x, mem, attn_mask, key_padding_mask, is_causal=False):
        return self._attend(
            self.multihead_attn, x, mem, attn_mask, key_padding_mask, is_causal, self.dropout2
        )


class TransformerEncoder(Module):
    """``num_layers`` deep copies of ``encoder_layer`` (``layers.0`` …), then ``norm``."""

    def __init__(
        self, encoder_layer, num_layers, norm=None, enable_nested_tensor=True, mask_check=True
    ):
        super().__init__()
        self.layers = _clones(encoder_layer, num_layers)
        self.num_layers = num_layers
        self.norm = norm
        self.enable_nested_tensor = enable_nested_tensor
        self.mask_check = mask_check

    def forward(self, src, mask=None, src_key_padding_mask=None, is_causal=None):
        seq_len = src.shape[1 if self.layers[0].self_attn.batch_first else 0]
        if src.ndim == 2:
            seq_len = src.shape[0]
        is_causal = _causal_hint(mask, is_causal, seq_len)
        out = src
        for mod in self.layers:
            out = mod(
                out, src_mask=mask, is_causal=is_causal, src_key_padding_mask=src_key_padding_mask
            )
        if self.norm is not None:
            out = self.norm(out)
        return out


class TransformerDecoder(Module):
    """``num_layers`` deep copies of ``decoder_layer``, then ``norm``."""

    def __init__(self, decoder_layer, num_layers, norm=None):
        super().__init__()
        self.layers = _clones(decoder_layer, num_layers)
        self.num_layers = num_layers
        self.norm = norm

    def forward(
        self,
        tgt,
        memory,
        tgt_mask=None,
        memory_mask=None,
        tgt_key_padding_mask=None,
        memory_key_padding_mask=None,
        tgt_is_causal=None,
        memory_is_causal=False,
    ):
        seq_len = tgt.shape[1 if self.layers[0].self_attn.batch_first else 0]
        if tgt.ndim == 2:
            seq_len = tgt.shape[0]
        tgt_is_causal = _causal_hint(tgt_mask, tgt_is_causal, seq_len)
        out = tgt
        for mod in self.layers:
            out = mod(
                out,
                memory,
                tgt_mask=tgt_mask,
                memory_mask=memory_mask,
                tgt_key_padding_mask=tgt_key_padding_mask,
                memory_key_padding_mask=memory_key_padding_mask,
                tgt_is_causal=tgt_is_causal,
                memory_is_causal=memory_is_causal,
            )
        if self.norm is not None:
            out = self.norm(out)
        return out


class Transformer(Module):
    """The encoder-decoder model of "Attention Is All You Need", as ``torch.nn.Transformer``.

    >>> import tapegrad as tg
    >>> model = tg.nn.Transformer(16, 2, 1, 1, dim_feedforward=32, batch_first=True)
    >>> model(tg.randn(2, 5, 16), tg.randn(2, 3, 16)).shape
    tapegrad.Size([2, 3, 16])
    """

    def __init__(
        self,
        d_model=512,
        nhead=8,
        num_encoder_layers=6,
        num_decoder_layers=6,
        dim_feedforward=2048,
        dropout=0.1,
        activation=F.relu,
        custom_encoder=None,
        custom_decoder=None,
        layer_norm_eps=1e-5,
        batch_first=False,
        norm_first=False,
        bias=True,
        device=None,
        dtype=None,
    ):
        super().__init__()
        kw = {"device": device, "dtype": dtype}
        layer_kw = dict(
            dim_feedforward=dim_feedforward,
            dropout=dropout,
            activation=activation,
            layer_norm_eps=layer_norm_eps,
            batch_first=batch_first,
            norm_first=norm_first,
            bias=bias,
            **kw,
        )
        if custom_encoder is not None:
            self.encoder = custom_encoder
        else:
            layer = TransformerEncoderLayer(d_model, nhead, **layer_kw)
            norm = LayerNorm(d_model, eps=layer_norm_eps, bias=bias, **kw)
            self.encoder = TransformerEncoder(layer, num_encoder_layers, norm)
        if custom_decoder is not None:
            self.decoder = custom_decoder
        else:
            layer = TransformerDecoderLayer(d_model, nhead, **layer_kw)
            norm = LayerNorm(d_model, eps=layer_norm_eps, bias=bias, **kw)
            self.decoder = TransformerDecoder(layer, num_decoder_layers, norm)
        self._reset_parameters()
        self.d_model = d_model
        self.nhead = nhead
        self.batch_first = batch_first

    def _reset_parameters(self):
        for p in self.parameters():
            if p.ndim > 1:
                init.xavier_uniform_(p)

    def forward(
        self,
        src,
        tgt,
        src_mask=None,
        tgt_mask=None,
        memory_mask=None,
        src_key_padding_mask=None,
        tgt_key_padding_mask=None,
        memory_key_padding_mask=None,
        src_is_causal=None,
        tgt_is_causal=None,
        memory_is_causal=False,
    ):
        batched = src.ndim == 3
        if not self.batch_first and src.shape[1] != tgt.shape[1] and batched:
            raise RuntimeError("the batch number of src and tgt must be equal")
        if self.batch_first and src.shape[0] != tgt.shape[0] and batched:
            raise RuntimeError("the batch number of src and tgt must be equal")
        if src.shape[-1] != self.d_model or tgt.shape[-1] != self.d_model:
            raise RuntimeError("the feature number of src and tgt must be equal to d_model")
        memory = self.encoder(
            src, mask=src_mask, src_key_padding_mask=src_key_padding_mask, is_causal=src_is_causal
        )
        return self.decoder(
            tgt,
            memory,
            tgt_mask=tgt_mask,
            memory_mask=memory_mask,
            tgt_key_padding_mask=tgt_key_padding_mask,
            memory_key_padding_mask=memory_key_padding_mask,
            tgt_is_causal=tgt_is_causal,
            memory_is_causal=memory_is_causal,
        )

    @staticmethod
    def generate_square_subsequent_mask(sz, device=None, dtype=None):
        """A float (sz, sz) mask: −inf above the diagonal, 0 on and below it."""
        return _generate_square_subsequent_mask(sz, device, dtype)
