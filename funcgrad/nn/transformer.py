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

__all__ = ["multi_head_attention_forward", "MultiheadAttention", "TransformerEncoderLayer", "TransformerEncoder",
           "TransformerDecoderLayer",
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


def multi_head_attention_forward(query, key, value, embed_dim_to_check: int, num_heads: int, in_proj_weight,
                                 in_proj_bias, bias_k, bias_v, add_zero_attn: bool, dropout_p: float, out_proj_weight,
                                 out_proj_bias, training: bool = True, key_padding_mask=None, need_weights: bool = True,
                                 attn_mask=None, use_separate_proj_weight: bool = False, q_proj_weight=None,
                                 k_proj_weight=None, v_proj_weight=None, static_k=None, static_v=None,
                                 average_attn_weights: bool = True, is_causal: bool = False, *, dropout_key=None):
    """torch.nn.functional.multi_head_attention_forward: inputs (L, N, E) and (S, N, kdim / vdim), or
    unbatched (L, E); returns (output, weights), the weights (after dropout) averaged over heads
    (N, L, S) or per head, None without need_weights. PyTorch's masks (True = not attended, or
    added). Dropout only when training with a dropout_key (funcgrad's rule: a key means training);
    is_causal is PyTorch's hint that attn_mask is causal, so attn_mask is still required."""
    query, key, value = (fnp.asarray(t) for t in (query, key, value))
    unbatched = query.ndim == 2
    if unbatched:
        query, key, value = (fnp.expand_dims(t, 1) for t in (query, key, value))
        if key_padding_mask is not None:
            key_padding_mask = fnp.expand_dims(fnp.asarray(key_padding_mask), 0)
    if query.ndim != 3 or key.ndim != 3 or value.ndim != 3:
        raise ValueError(f"multi_head_attention_forward: query, key and value must be all 3-D (L, N, E) or all 2-D, "
                         f"got shapes {query.shape}, {key.shape}, {value.shape}")
    length, batch, e = query.shape
    if e != embed_dim_to_check:
        raise ValueError(f"multi_head_attention_forward: query's embedding size {e} is not embed_dim "
                         f"{embed_dim_to_check}")
    if e % num_heads:
        raise ValueError(f"multi_head_attention_forward: embed_dim {e} must be divisible by num_heads {num_heads}")
    if key.shape[:2] != value.shape[:2] or key.shape[1] != batch:
        raise ValueError(f"multi_head_attention_forward: key {key.shape} and value {value.shape} do not fit query "
                         f"{query.shape} (same batch, key and value of one length)")
    if is_causal and attn_mask is None:
        raise ValueError("multi_head_attention_forward: is_causal is a hint that attn_mask is the causal mask; "
                         "pass attn_mask too")
    h, head = num_heads, e // num_heads
    if use_separate_proj_weight:
        weights_in = (q_proj_weight, k_proj_weight, v_proj_weight)
        if any(w is None for w in weights_in):
            raise ValueError("multi_head_attention_forward: use_separate_proj_weight needs q_, k_ and v_proj_weight")
    elif in_proj_weight is None:
        raise ValueError("multi_head_attention_forward: in_proj_weight is None; pass it, or use_separate_proj_weight "
                         "with q_, k_ and v_proj_weight")
    else:
        weights_in = tuple(in_proj_weight[i * e:(i + 1) * e] for i in range(3))
    biases_in = (None,) * 3 if in_proj_bias is None else tuple(in_proj_bias[i * e:(i + 1) * e] for i in range(3))
    q, k, v = (F.linear(t, w, b) for t, w, b in zip((query, key, value), weights_in, biases_in))
    mask = None if attn_mask is None else _additive(attn_mask, q, "attn_mask")
    padding = None if key_padding_mask is None else _additive(key_padding_mask, q, "key_padding_mask")
    if mask is not None and tuple(mask.shape) not in ((length, key.shape[0]), (batch * h, length, key.shape[0])):
        raise ValueError(f"multi_head_attention_forward: attn_mask of shape {tuple(mask.shape)} must be (L, S) = "
                         f"{(length, key.shape[0])} or (N * num_heads, L, S) = {(batch * h, length, key.shape[0])}")
    if padding is not None and tuple(padding.shape) != (batch, key.shape[0]):
        given, named, expected = ((tuple(padding.shape[1:]), "(S,)", (key.shape[0],)) if unbatched else
                                  (tuple(padding.shape), "(N, S)", (batch, key.shape[0])))
        raise ValueError(f"multi_head_attention_forward: key_padding_mask of shape {given} must be {named} = "
                         f"{expected}")

    def one_more_key(m):  # a mask grows a column where a key is appended (bias_k, the zero key)
        return None if m is None else fnp.pad(m, [(0, 0)] * (m.ndim - 1) + [(0, 1)])
    if bias_k is not None or bias_v is not None:
        if bias_k is None or bias_v is None or static_k is not None or static_v is not None:
            raise ValueError("multi_head_attention_forward: bias_k and bias_v go together, without static_k / static_v")
        k = fnp.concatenate([k, fnp.broadcast_to(fnp.reshape(bias_k, (1, 1, e)), (1, batch, e))], axis=0)
        v = fnp.concatenate([v, fnp.broadcast_to(fnp.reshape(bias_v, (1, 1, e)), (1, batch, e))], axis=0)
        mask, padding = one_more_key(mask), one_more_key(padding)

    def heads(t):  # (S, N, E) -> (N * H, S, E / H), PyTorch's order of batch and heads
        return fnp.swapaxes(fnp.reshape(t, (t.shape[0], batch * h, head)), 0, 1)
    q = heads(q)
    k = heads(k) if static_k is None else fnp.asarray(static_k)
    v = heads(v) if static_v is None else fnp.asarray(static_v)
    for name, t in (("static_k", k), ("static_v", v)):
        if t.ndim != 3 or t.shape[0] != batch * h or t.shape[2] != head:
            raise ValueError(f"multi_head_attention_forward: {name} of shape {tuple(t.shape)} must be "
                             f"(N * num_heads, S, E / num_heads) = {(batch * h, '_', head)}")
    if add_zero_attn:
        k = fnp.concatenate([k, fnp.zeros((batch * h, 1, head), k.dtype)], axis=1)
        v = fnp.concatenate([v, fnp.zeros((batch * h, 1, head), v.dtype)], axis=1)
        mask, padding = one_more_key(mask), one_more_key(padding)
    source = k.shape[1]
    scores = fnp.matmul(q * math.sqrt(1.0 / head), fnp.swapaxes(k, 1, 2))  # (N * H, L, S)
    if mask is not None:
        scores = scores + mask
    if padding is not None:
        scores = scores + fnp.reshape(fnp.broadcast_to(fnp.reshape(padding, (batch, 1, 1, source)),
                                                       (batch, h, 1, source)), (batch * h, 1, source))
    weights = F.softmax(scores, axis=-1)
    if training and dropout_p > 0.0 and dropout_key is not None:
        weights = F.dropout(weights, dropout_p, dropout_key)
    out = fnp.reshape(fnp.swapaxes(fnp.matmul(weights, v), 0, 1), (length, batch, e))
    out = F.linear(out, out_proj_weight, out_proj_bias)
    out = out[:, 0] if unbatched else out
    if not need_weights:
        return out, None
    weights = fnp.reshape(weights, (batch, h, length, source))
    weights = fnp.mean(weights, axis=1) if average_attn_weights else weights
    return out, weights[0] if unbatched else weights


class MultiheadAttention(Module):
    """torch.nn.MultiheadAttention: in_proj_weight (3E, E) and in_proj_bias, or q_, k_ and
    v_proj_weight when kdim or vdim differ from embed_dim; bias_k and bias_v with add_bias_kv; a
    zero key and value with add_zero_attn; out_proj. Inputs (L, N, E), or (N, L, E) with
    batch_first, or unbatched (L, E). Returns (output, weights): weights averaged over heads
    (N, L, S), per head with average_attn_weights=False, None without need_weights. Dropout on
    the weights when called with a key (training); is_causal alone makes the causal mask."""

    def __init__(self, embed_dim: int, num_heads: int, dropout: float = 0.0, bias: bool = True,
                 add_bias_kv: bool = False, add_zero_attn: bool = False, kdim: int | None = None,
                 vdim: int | None = None, batch_first: bool = False, *, key, dtype=dtypes.float32):
        if embed_dim % num_heads:
            raise ValueError(f"MultiheadAttention: embed_dim {embed_dim} must be divisible by num_heads {num_heads}")
        k_in, k_out, k_bias = random.split(key, 3)
        kdim, vdim = kdim or embed_dim, vdim or embed_dim
        self.embed_dim, self.num_heads, self.dropout, self.batch_first = embed_dim, num_heads, dropout, batch_first
        self.add_zero_attn = add_zero_attn
        if kdim == vdim == embed_dim:
            self.in_proj_weight = init.xavier_uniform(k_in, (3 * embed_dim, embed_dim), dtype)
            self.q_proj_weight = self.k_proj_weight = self.v_proj_weight = None
        else:
            kq, kk, kv = random.split(k_in, 3)
            self.in_proj_weight = None
            self.q_proj_weight = init.xavier_uniform(kq, (embed_dim, embed_dim), dtype)
            self.k_proj_weight = init.xavier_uniform(kk, (embed_dim, kdim), dtype)
            self.v_proj_weight = init.xavier_uniform(kv, (embed_dim, vdim), dtype)
        self.in_proj_bias = fnp.zeros((3 * embed_dim,), dtype) if bias else None
        if add_bias_kv:
            kb, vb = random.split(k_bias)
            self.bias_k = init.xavier_normal(kb, (1, 1, embed_dim), dtype)
            self.bias_v = init.xavier_normal(vb, (1, 1, embed_dim), dtype)
        else:
            self.bias_k = self.bias_v = None
        self.out_proj = Linear(embed_dim, embed_dim, bias, key=k_out, dtype=dtype)
        if bias:
            self.out_proj = self.out_proj.replace(bias=fnp.zeros((embed_dim,), dtype))

    def __call__(self, query, key_input=None, value=None, key_padding_mask=None, need_weights: bool = True,
                 attn_mask=None, average_attn_weights: bool = True, is_causal: bool = False, *, key=None):
        key_input = query if key_input is None else key_input
        value = key_input if value is None else value
        query, key_input, value = (fnp.asarray(t) for t in (query, key_input, value))
        if self.batch_first and query.ndim == 3:  # work in PyTorch's (L, N, E)
            query, key_input, value = (fnp.swapaxes(t, 0, 1) for t in (query, key_input, value))
        if is_causal and attn_mask is None:
            attn_mask = ~fnp.tri(query.shape[0], key_input.shape[0], dtype=dtypes.bool_, device=query.device)
        separate = self.in_proj_weight is None
        out, weights = multi_head_attention_forward(
            query, key_input, value, self.embed_dim, self.num_heads, self.in_proj_weight, self.in_proj_bias,
            self.bias_k, self.bias_v, self.add_zero_attn, self.dropout, self.out_proj.weight, self.out_proj.bias,
            training=key is not None, key_padding_mask=key_padding_mask, need_weights=need_weights,
            attn_mask=attn_mask, use_separate_proj_weight=separate,
            q_proj_weight=self.q_proj_weight, k_proj_weight=self.k_proj_weight, v_proj_weight=self.v_proj_weight,
            average_attn_weights=average_attn_weights, dropout_key=key)
        if self.batch_first and query.ndim == 3:
            out = fnp.swapaxes(out, 0, 1)
        return out, weights


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
            setattr(self, f"norm{i}", LayerNorm(d_model, eps=layer_norm_eps, bias=bias, dtype=dtype))
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
        self.self_attn = MultiheadAttention(d_model, nhead, dropout, bias, batch_first=batch_first, key=k_attn,
                                            dtype=dtype)
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
        attention = dict(dropout=dropout, bias=bias, batch_first=batch_first, dtype=dtype)
        self.self_attn = MultiheadAttention(d_model, nhead, key=k_self, **attention)
        self.multihead_attn = MultiheadAttention(d_model, nhead, key=k_cross, **attention)
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
                                          num_encoder_layers, LayerNorm(d_model, eps=layer_norm_eps, bias=bias,
                                                                        dtype=dtype))
        self.decoder = TransformerDecoder(TransformerDecoderLayer(d_model, nhead, key=k_dec, **options),
                                          num_decoder_layers, LayerNorm(d_model, eps=layer_norm_eps, bias=bias,
                                                                        dtype=dtype))
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
