"""PyTorch's attention and transformer layers with its arguments, masks, parameter names and
initialisation, so torch code and torch state_dicts carry over: MultiheadAttention (torch.nn's;
funcgrad's own MultiHeadAttention takes (batch, length, dim) and a boolean keep-mask), the encoder
and decoder layers (post- or pre-norm), their stacks, and Transformer.

PyTorch's masks say what to drop: a boolean attn_mask or key_padding_mask is True where a query
may NOT attend (the opposite of scaled_dot_product_attention's), a float one is added to the
scores."""
from __future__ import annotations

import math

from .. import dtypes
from .. import numpy as fnp
from .. import random
from . import _functional as F
from . import init
from .layers import LayerNorm, Linear, _split
from .module import Module

__all__ = ["MultiheadAttention", "TransformerEncoderLayer", "TransformerEncoder", "TransformerDecoderLayer",
           "TransformerDecoder", "Transformer"]


def _additive(mask, scores, name: str):
    """A PyTorch mask as scores to add (in scores' dtype, on their device): True (drop) -> -inf, a
    float mask as it is."""
    dtype = scores.dtype
    mask = fnp.asarray(fnp.follow(scores, mask)[1])
    if mask.dtype == dtypes.bool_:
        return fnp.astype(fnp.where(mask, -fnp.inf, 0.0), dtype)
    if mask.dtype.kind != "f":
        raise TypeError(f"MultiheadAttention: {name} must be boolean (True = not attended) or float (added), "
                        f"not {mask.dtype}")
    return fnp.astype(mask, dtype)


class MultiheadAttention(Module):
    """torch.nn.MultiheadAttention (kdim = vdim = embed_dim): in_proj_weight (3E, E) and
    in_proj_bias, out_proj; inputs (L, N, E), or (N, L, E) with batch_first, or unbatched (L, E).
    Returns (output, weights): weights averaged over heads (N, L, S), per head with
    average_attn_weights=False, None without need_weights. Dropout on the weights when called with
    a key (training)."""

    def __init__(self, embed_dim: int, num_heads: int, dropout: float = 0.0, bias: bool = True,
                 batch_first: bool = False, *, key, dtype=dtypes.float32):
        if embed_dim % num_heads:
            raise ValueError(f"MultiheadAttention: embed_dim {embed_dim} must be divisible by num_heads {num_heads}")
        k_in, k_out = random.split(key)
        self.embed_dim, self.num_heads, self.dropout, self.batch_first = embed_dim, num_heads, dropout, batch_first
        self.in_proj_weight = init.xavier_uniform(k_in, (3 * embed_dim, embed_dim), dtype)
        self.in_proj_bias = fnp.zeros((3 * embed_dim,), dtype) if bias else None
        self.out_proj = Linear(embed_dim, embed_dim, bias, key=k_out, dtype=dtype)
        if bias:
            self.out_proj = self.out_proj.replace(bias=fnp.zeros((embed_dim,), dtype))

    def __call__(self, query, key_input=None, value=None, key_padding_mask=None, need_weights: bool = True,
                 attn_mask=None, average_attn_weights: bool = True, is_causal: bool = False, *, key=None):
        key_input = query if key_input is None else key_input
        value = key_input if value is None else value
        query, key_input, value = (fnp.asarray(t) for t in (query, key_input, value))
        unbatched = query.ndim == 2
        if unbatched:
            query, key_input, value = (fnp.expand_dims(t, 1) for t in (query, key_input, value))
        elif self.batch_first:  # work in PyTorch's (L, N, E)
            query, key_input, value = (fnp.swapaxes(t, 0, 1) for t in (query, key_input, value))
        if query.ndim != 3 or query.shape[-1] != self.embed_dim:
            raise ValueError(f"MultiheadAttention({self.embed_dim}): query of shape {query.shape}")
        if key_input.shape[:2] != value.shape[:2] or key_input.shape[1] != query.shape[1]:
            raise ValueError(f"MultiheadAttention: key {key_input.shape} and value {value.shape} do not fit query "
                             f"{query.shape} (same batch, key and value of one length)")
        e, h = self.embed_dim, self.num_heads
        w, b = self.in_proj_weight, self.in_proj_bias
        q, k, v = (F.linear(t, w[i * e:(i + 1) * e], None if b is None else b[i * e:(i + 1) * e])
                   for i, t in enumerate((query, key_input, value)))
        length, batch, source = q.shape[0], q.shape[1], k.shape[0]

        def heads(t):  # (L, N, E) -> (N, H, L, E / H)
            return fnp.transpose(fnp.reshape(t, (t.shape[0], batch, h, e // h)), (1, 2, 0, 3))

        q, k, v = heads(q), heads(k), heads(v)
        scores = fnp.einsum("nhld,nhsd->nhls", q, k) * (1.0 / math.sqrt(e // h))
        if is_causal and attn_mask is None:
            attn_mask = ~fnp.tri(length, source, dtype=dtypes.bool_, device=scores.device)
        if attn_mask is not None:
            mask = _additive(attn_mask, scores, "attn_mask")
            if tuple(mask.shape) not in ((length, source), (batch * h, length, source)):
                raise ValueError(f"MultiheadAttention: attn_mask of shape {tuple(mask.shape)} must be (L, S) = "
                                 f"{(length, source)} or (N * num_heads, L, S) = {(batch * h, length, source)}")
            scores = scores + (fnp.reshape(mask, (batch, h, length, source)) if mask.ndim == 3 else mask)
        if key_padding_mask is not None:
            padding = _additive(key_padding_mask, scores, "key_padding_mask")
            expected = (source,) if unbatched else (batch, source)
            if tuple(padding.shape) != expected:
                named = "(S,)" if unbatched else "(N, S)"
                raise ValueError(f"MultiheadAttention: key_padding_mask of shape {tuple(padding.shape)} must be "
                                 f"{named} = {expected}")
            scores = scores + fnp.reshape(padding, (batch, 1, 1, source))
        weights = F.softmax(scores, axis=-1)
        if key is not None and self.dropout:
            weights = F.dropout(weights, self.dropout, key)
        out = fnp.einsum("nhls,nhsd->lnhd", weights, v)
        out = self.out_proj(fnp.reshape(out, (length, batch, e)))
        out = out[:, 0] if unbatched else fnp.swapaxes(out, 0, 1) if self.batch_first else out
        if not need_weights:
            return out, None
        weights = fnp.mean(weights, axis=1) if average_attn_weights else weights
        return out, weights[0] if unbatched else weights


_ACTIVATIONS = {"relu": F.relu, "gelu": F.gelu}


class _Sublayers(Module):
    """What the encoder and decoder layers share: a feed-forward block (linear1, activation,
    linear2) and `count` norms, each sublayer added back with dropout and normalised after
    (PyTorch's default) or before it (norm_first)."""

    def _build(self, d_model, dim_feedforward, dropout, activation, layer_norm_eps, norm_first, bias, count, keys,
               dtype):
        if isinstance(activation, str) and activation not in _ACTIVATIONS:
            raise ValueError(f"activation should be 'relu' or 'gelu' (or a function), not {activation!r}")
        self.linear1 = Linear(d_model, dim_feedforward, bias, key=keys[0], dtype=dtype)
        self.linear2 = Linear(dim_feedforward, d_model, bias, key=keys[1], dtype=dtype)
        for i in range(1, count + 1):
            setattr(self, f"norm{i}", LayerNorm(d_model, eps=layer_norm_eps, dtype=dtype))
        self.dropout, self.norm_first = dropout, norm_first
        self.activation = _ACTIVATIONS[activation] if isinstance(activation, str) else activation

    def _feed_forward(self, x, keys):
        hidden = F.dropout(self.activation(self.linear1(x)), self.dropout, keys[0])
        return F.dropout(self.linear2(hidden), self.dropout, keys[1])

    def _residual(self, x, norm, sublayer):
        """x + sublayer(norm(x)) with norm_first, else norm(x + sublayer(x))."""
        return x + sublayer(norm(x)) if self.norm_first else norm(x + sublayer(x))


class TransformerEncoderLayer(_Sublayers):
    """torch.nn.TransformerEncoderLayer: self-attention, then the feed-forward block."""

    def __init__(self, d_model: int, nhead: int, dim_feedforward: int = 2048, dropout: float = 0.1,
                 activation="relu", layer_norm_eps: float = 1e-5, batch_first: bool = False, norm_first: bool = False,
                 bias: bool = True, *, key, dtype=dtypes.float32):
        k_attn, k1, k2 = random.split(key, 3)
        self.self_attn = MultiheadAttention(d_model, nhead, dropout, bias, batch_first, key=k_attn, dtype=dtype)
        self._build(d_model, dim_feedforward, dropout, activation, layer_norm_eps, norm_first, bias, 2, (k1, k2), dtype)

    def __call__(self, src, src_mask=None, src_key_padding_mask=None, is_causal: bool = False, *, key=None):
        k_attn, k_out, *k_ff = _split(key, 4)

        def attention(x):
            out, _ = self.self_attn(x, x, x, src_key_padding_mask, False, src_mask, is_causal=is_causal, key=k_attn)
            return F.dropout(out, self.dropout, k_out)

        x = self._residual(fnp.asarray(src), self.norm1, attention)
        return self._residual(x, self.norm2, lambda h: self._feed_forward(h, k_ff))


class TransformerDecoderLayer(_Sublayers):
    """torch.nn.TransformerDecoderLayer: self-attention over the target, attention to the encoder's
    memory (multihead_attn), then the feed-forward block."""

    def __init__(self, d_model: int, nhead: int, dim_feedforward: int = 2048, dropout: float = 0.1,
                 activation="relu", layer_norm_eps: float = 1e-5, batch_first: bool = False, norm_first: bool = False,
                 bias: bool = True, *, key, dtype=dtypes.float32):
        k_self, k_cross, k1, k2 = random.split(key, 4)
        self.self_attn = MultiheadAttention(d_model, nhead, dropout, bias, batch_first, key=k_self, dtype=dtype)
        self.multihead_attn = MultiheadAttention(d_model, nhead, dropout, bias, batch_first, key=k_cross, dtype=dtype)
        self._build(d_model, dim_feedforward, dropout, activation, layer_norm_eps, norm_first, bias, 3, (k1, k2), dtype)

    def __call__(self, tgt, memory, tgt_mask=None, memory_mask=None, tgt_key_padding_mask=None,
                 memory_key_padding_mask=None, tgt_is_causal: bool = False, memory_is_causal: bool = False, *,
                 key=None):
        k_self, k_self_out, k_cross, k_cross_out, *k_ff = _split(key, 6)

        def self_attention(x):
            out, _ = self.self_attn(x, x, x, tgt_key_padding_mask, False, tgt_mask, is_causal=tgt_is_causal,
                                    key=k_self)
            return F.dropout(out, self.dropout, k_self_out)

        def cross_attention(x):
            out, _ = self.multihead_attn(x, memory, memory, memory_key_padding_mask, False, memory_mask,
                                         is_causal=memory_is_causal, key=k_cross)
            return F.dropout(out, self.dropout, k_cross_out)

        x = self._residual(fnp.asarray(tgt), self.norm1, self_attention)
        x = self._residual(x, self.norm2, cross_attention)
        return self._residual(x, self.norm3, lambda h: self._feed_forward(h, k_ff))


class TransformerEncoder(Module):
    """torch.nn.TransformerEncoder: num_layers copies of encoder_layer (starting equal, as
    PyTorch's deep copies do, and trained apart), then an optional final norm."""

    def __init__(self, encoder_layer: TransformerEncoderLayer, num_layers: int, norm=None):
        self.layers = [encoder_layer] * num_layers
        self.norm = norm

    def __call__(self, src, mask=None, src_key_padding_mask=None, is_causal: bool = False, *, key=None):
        x = src
        for layer, k in zip(self.layers, _split(key, len(self.layers))):
            x = layer(x, mask, src_key_padding_mask, is_causal, key=k)
        return x if self.norm is None else self.norm(x)


class TransformerDecoder(Module):
    """torch.nn.TransformerDecoder: num_layers copies of decoder_layer, then an optional norm."""

    def __init__(self, decoder_layer: TransformerDecoderLayer, num_layers: int, norm=None):
        self.layers = [decoder_layer] * num_layers
        self.norm = norm

    def __call__(self, tgt, memory, tgt_mask=None, memory_mask=None, tgt_key_padding_mask=None,
                 memory_key_padding_mask=None, tgt_is_causal: bool = False, memory_is_causal: bool = False, *,
                 key=None):
        x = tgt
        for layer, k in zip(self.layers, _split(key, len(self.layers))):
            x = layer(x, memory, tgt_mask, memory_mask, tgt_key_padding_mask, memory_key_padding_mask, tgt_is_causal,
                      memory_is_causal, key=k)
        return x if self.norm is None else self.norm(x)


class Transformer(Module):
    """torch.nn.Transformer: an encoder and a decoder stack, each with a final LayerNorm."""

    def __init__(self, d_model: int = 512, nhead: int = 8, num_encoder_layers: int = 6, num_decoder_layers: int = 6,
                 dim_feedforward: int = 2048, dropout: float = 0.1, activation="relu", layer_norm_eps: float = 1e-5,
                 batch_first: bool = False, norm_first: bool = False, bias: bool = True, *, key,
                 dtype=dtypes.float32):
        k_enc, k_dec = random.split(key)
        options = dict(dim_feedforward=dim_feedforward, dropout=dropout, activation=activation,
                       layer_norm_eps=layer_norm_eps, batch_first=batch_first, norm_first=norm_first, bias=bias,
                       dtype=dtype)
        self.encoder = TransformerEncoder(TransformerEncoderLayer(d_model, nhead, key=k_enc, **options),
                                          num_encoder_layers, LayerNorm(d_model, eps=layer_norm_eps, dtype=dtype))
        self.decoder = TransformerDecoder(TransformerDecoderLayer(d_model, nhead, key=k_dec, **options),
                                          num_decoder_layers, LayerNorm(d_model, eps=layer_norm_eps, dtype=dtype))
        self.d_model, self.nhead, self.batch_first = d_model, nhead, batch_first

    def __call__(self, src, tgt, src_mask=None, tgt_mask=None, memory_mask=None, src_key_padding_mask=None,
                 tgt_key_padding_mask=None, memory_key_padding_mask=None, src_is_causal: bool = False,
                 tgt_is_causal: bool = False, memory_is_causal: bool = False, *, key=None):
        k_enc, k_dec = _split(key, 2)
        memory = self.encoder(src, src_mask, src_key_padding_mask, src_is_causal, key=k_enc)
        return self.decoder(tgt, memory, tgt_mask, memory_mask, tgt_key_padding_mask, memory_key_padding_mask,
                            tgt_is_causal, memory_is_causal, key=k_dec)

    @staticmethod
    def generate_square_subsequent_mask(size: int, dtype=dtypes.float32):
        """The causal mask as PyTorch makes it: -inf above the diagonal, 0 elsewhere (added to scores)."""
        return fnp.astype(fnp.where(fnp.tri(size, dtype=dtypes.bool_), 0.0, -fnp.inf), dtype)
