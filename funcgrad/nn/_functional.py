"""The functional layers: activations (each a fused primitive: one stable pass forward, one rule
back), softmax, linear, normalisation, dropout, embedding and attention (convolution, pooling and
padding are in _convolution). funcgrad.nn.functional gathers these with the losses and the rest of
PyTorch's functional names."""
from __future__ import annotations

import math

import numpy as np

from .. import dtypes as fg_dtypes
from .. import errors as fg_errors
from .. import numpy as fnp
from .. import random
from ..array import ArrayBase
from ..ops import attention as A
from ..ops import elementwise as E
from ..ops import normalization as N
from ..ops import reductions as R
from ..numpy import linalg
from ..trace import bind


__all__ = [
    "tanh", "relu", "gelu", "sigmoid", "softplus", "silu", "leaky_relu", "elu", "celu", "selu", "hardtanh", "relu6",
    "hard_sigmoid", "hard_swish", "hardsigmoid", "hardswish", "log_sigmoid", "logsigmoid", "mish", "softsign",
    "normalize", "cosine_similarity", "softmax", "log_softmax", "linear", "layer_norm", "rms_norm", "group_norm",
    "dropout", "embedding", "one_hot", "scaled_dot_product_attention",
]

tanh = fnp.tanh


def relu(x):
    """max(x, 0), with gradient 0 at 0 (PyTorch's convention)."""
    return bind(E.relu_p, fnp._float_arg(x))


def gelu(x, approximate: bool | str = False):
    """Gaussian error linear unit: exact (erf) by default, as torch.nn.functional.gelu;
    approximate=True (or PyTorch's "tanh") uses the tanh formula, False or "none" the exact one."""
    if approximate not in (False, True, "none", "tanh"):
        raise ValueError(f"gelu: approximate must be 'none' or 'tanh' (or a bool), got {approximate!r}")
    return bind(E.gelu_p, fnp._float_arg(x), approximate=approximate in (True, "tanh"))


def sigmoid(x):
    return bind(E.sigmoid_p, fnp._float_arg(x))


def softplus(x, beta: float = 1.0, threshold: float = 20.0):
    """log(1 + exp(beta x)) / beta, computed without overflow, and x itself where beta x exceeds
    threshold, as torch.nn.functional.softplus."""
    x = fnp._float_arg(x)
    if beta == 1:
        return fnp.where(x > threshold, x, _softplus(x))
    scaled = x * beta
    return fnp.where(scaled > threshold, x, _softplus(scaled) / beta)


def _softplus(x):
    """log(1 + exp(x)) for x of a float dtype, with no threshold: the form the other activations use."""
    return bind(E.softplus_p, x)


def silu(x):
    """x * sigmoid(x) (also called swish)."""
    x = fnp._float_arg(x)
    return fnp.multiply(x, sigmoid(x))


def leaky_relu(x, negative_slope: float = 0.01):
    """x above 0, x * negative_slope from 0 down (so the slope at 0 is negative_slope, PyTorch's)."""
    x = fnp._float_arg(x)
    return fnp.where(x > 0, x, x * negative_slope)


def _non_positive(x):
    """x where x <= 0, else 0: the argument of elu's exponential (so it never overflows), whose
    derivative at 0 is 1, so elu's slope there is the negative side's (PyTorch's)."""
    return fnp.where(x > 0, 0.0, x)


def elu(x, alpha: float = 1.0):
    """x for x > 0, alpha * (exp(x) - 1) from 0 down (slope alpha at 0, as PyTorch's)."""
    x = fnp._float_arg(x)
    return fnp.where(x > 0, x, alpha * fnp.expm1(_non_positive(x)))


def celu(x, alpha: float = 1.0):
    x = fnp._float_arg(x)
    return fnp.where(x > 0, x, alpha * fnp.expm1(_non_positive(x) / alpha))


_SELU_ALPHA, _SELU_SCALE = 1.6732632423543772848170429916717, 1.0507009873554804934193349852946


def selu(x):
    return _SELU_SCALE * elu(x, _SELU_ALPHA)


def hardtanh(x, min_val: float = -1.0, max_val: float = 1.0):
    """x clipped to [min_val, max_val], with slope 0 at the ends as well as beyond them (PyTorch's
    hardtanh_backward; fnp.clip, like torch.clamp, has slope 1 at the ends)."""
    x = fnp._float_arg(x)
    return fnp.where((x > min_val) & (x < max_val), x, fnp.stop_gradient(fnp.clip(x, min_val, max_val)))


def relu6(x):
    return hardtanh(x, 0.0, 6.0)


def hard_sigmoid(x):
    """relu6(x + 3) / 6, as torch.nn.functional.hardsigmoid."""
    return relu6(fnp._float_arg(x) + 3.0) * (1.0 / 6.0)


def hard_swish(x):
    x = fnp._float_arg(x)
    return x * hard_sigmoid(x)


hardsigmoid, hardswish = hard_sigmoid, hard_swish


def log_sigmoid(x):
    """log(sigmoid(x)) = -softplus(-x), without overflow."""
    return -_softplus(-fnp._float_arg(x))


logsigmoid = log_sigmoid


def mish(x):
    x = fnp._float_arg(x)
    return x * fnp.tanh(_softplus(x))


def softsign(x):
    x = fnp._float_arg(x)
    return x / (1.0 + fnp.abs(x))


def _axis(axis, dim):
    """The axis, given as funcgrad's (and JAX's) `axis` or as PyTorch's `dim`."""
    return axis if dim is None else dim


def normalize(x, p: float = 2.0, axis: int = 1, eps: float = 1e-12, *, dim: int | None = None):
    """x / max(||x||_p, eps) along axis (torch.nn.functional.normalize; dim= as there)."""
    x, axis = fnp._float_arg(x), _axis(axis, dim)
    return x / fnp.maximum(linalg.vector_norm(x, p, axis=axis, keepdims=True), eps)


def cosine_similarity(x1, x2, axis: int = 1, eps: float = 1e-8, *, dim: int | None = None):
    """sum(x1 / max(||x1||, eps) * x2 / max(||x2||, eps)) along axis (or dim), as PyTorch's (each
    norm clamped alone: clamping their product turned small vectors' cosines toward 0)."""
    x1, x2 = fnp._common([fnp._float_arg(v) for v in fnp._arrays(x1, x2)])
    axis = _axis(axis, dim)
    # vector_norm's gradient at a zero vector is 0 (a plain sqrt's would be NaN there, not PyTorch's y / eps)
    unit1, unit2 = (x / fnp.maximum(fnp.linalg.vector_norm(x, axis=axis, keepdims=True), eps) for x in (x1, x2))
    return fnp.sum(unit1 * unit2, axis=axis)


def softmax(x, axis=-1, *, dim=None, where=None, dtype=None):
    """Softmax along axis (or PyTorch's dim); where= (jax.nn's) leaves the other entries out: they
    get 0, and so does a slice with none left; dtype= (PyTorch's) casts the input first."""
    x = fnp.autocast_to_float32(fnp._float_arg(x if dtype is None else fnp.astype(x, dtype)))
    axes = fnp._axes(_axis(axis, dim), x.ndim)
    if where is None:
        return bind(R.softmax_p, x, axes=axes)
    mask, shifted = _masked_shift(x, where, axes)
    exps = fnp.where(mask, fnp.exp(shifted), 0.0)
    total = fnp.sum(exps, axis=axes, keepdims=True)
    return exps / fnp.where(total > 0, total, 1.0)


def log_softmax(x, axis=-1, *, dim=None, where=None, dtype=None):
    """Log-softmax along axis (or PyTorch's dim); where= (jax.nn's) leaves the other entries out:
    they get -inf; dtype= (PyTorch's) casts the input first."""
    x = fnp.autocast_to_float32(fnp._float_arg(x if dtype is None else fnp.astype(x, dtype)))
    axes = fnp._axes(_axis(axis, dim), x.ndim)
    if where is None:
        return bind(R.log_softmax_p, x, axes=axes)
    mask, shifted = _masked_shift(x, where, axes)
    total = fnp.sum(fnp.where(mask, fnp.exp(shifted), 0.0), axis=axes, keepdims=True)
    return fnp.where(mask, shifted - fnp.log(fnp.where(total > 0, total, 1.0)), -np.inf)


def _masked_shift(x, where, axes):
    """(the mask broadcast to x, x minus its slices' largest kept entry): the left-out entries are
    set to that maximum before the subtraction, so neither their values nor an empty slice's -inf
    reach a gradient as NaN."""
    mask = fnp.broadcast_to(fnp.astype(fnp._arrays(x, where)[1], fg_dtypes.bool_), x.shape)
    peak = fnp.stop_gradient(fnp.max(fnp.where(mask, x, -np.inf), axis=axes, keepdims=True))
    peak = fnp.where(fnp.isfinite(peak), peak, 0.0)
    return mask, fnp.where(mask, x, peak) - peak


def _bias_like(bias, out):
    """Under autocast the bias joins the product's low dtype, so activations stay small (and a host
    bias goes to out's device)."""
    bias = bias if isinstance(bias, ArrayBase) else fnp._arrays(out, bias)[1]
    return fnp.astype(bias, out.dtype) if out.dtype in fg_dtypes.low_precision else bias


def _channel_bias(bias, out, fname: str, axis: int = 1):
    """A convolution's bias (C,), shaped to add over out's channel axis. Any other shape raises, as in
    PyTorch: reshaped, a (2, 2) bias would spread silently over 4 channels."""
    bias = _bias_like(bias, out)
    _check_shapes(fname, (out.shape[axis],), bias=bias)
    return fnp.reshape(bias, (-1,) + (1,) * (out.ndim - 1 - axis))


def linear(x, weight, bias=None):
    """x @ weight.T + bias, with PyTorch's (out_features, in_features) weight layout."""
    if not isinstance(weight, ArrayBase):  # a host weight goes to x's device (the common case skips this)
        x, weight = fnp._arrays(x, weight)
    out = fnp.matmul(x, fnp.swapaxes(weight, -1, -2))
    return out if bias is None else out + _bias_like(bias, out)


def layer_norm(x, normalized_shape, weight=None, bias=None, eps: float = 1e-5):
    """Normalise over the trailing `normalized_shape` axes (biased variance, as PyTorch). float16 and
    bfloat16 inputs are normalised in float32 and rounded once to their dtype, as PyTorch's (and
    rms_norm's, group_norm's and batch_norm's) are."""
    x = fnp.autocast_to_float32(fnp._float_arg(x))
    shape = (normalized_shape,) if isinstance(normalized_shape, int) else tuple(normalized_shape)
    if tuple(x.shape[x.ndim - len(shape):]) != shape:
        raise fg_errors.ShapeError(f"layer_norm over {shape} needs input ending in those axes, got {x.shape}")
    _check_shapes("layer_norm", shape, weight=weight, bias=bias)
    affine = weight is not None or bias is not None  # then in float32 too (the kernel rounds once itself)
    out = _normalized(fnp._widened(x) if affine else x, shape, eps, center=True)
    if weight is not None:
        out = out * weight
    if bias is not None:
        out = out + bias
    return fnp._narrowed(out, x.dtype) if affine else out


def rms_norm(x, normalized_shape, weight=None, eps: float | None = None):
    """x / sqrt(mean(x^2) + eps) over the trailing axes (torch.nn.functional.rms_norm; eps
    defaults to the dtype's machine epsilon, as there)."""
    x = fnp.autocast_to_float32(fnp._float_arg(x))
    shape = (normalized_shape,) if isinstance(normalized_shape, int) else tuple(normalized_shape)
    if tuple(x.shape[x.ndim - len(shape):]) != shape:
        raise fg_errors.ShapeError(f"rms_norm over {shape} needs input ending in those axes, got {x.shape}")
    _check_shapes("rms_norm", shape, weight=weight)
    eps = float(fnp.finfo(x.dtype).eps) if eps is None else eps
    if weight is None:  # the fused kernel computes half types in float32 and rounds once
        return _normalized(x, shape, eps, center=False)
    return fnp._narrowed(_normalized(fnp._widened(x), shape, eps, center=False) * weight, x.dtype)


def _check_shapes(fname: str, shape: tuple, **params) -> None:
    """A layer's parameters (a norm's weight and bias, a convolution's bias) have exactly `shape`, as
    PyTorch requires: broadcast instead, a (1,) weight would scale every feature alike without a word."""
    for name, p in params.items():
        if p is not None and tuple(np.shape(p)) != shape:
            raise fg_errors.ShapeError(f"{fname}: {name} must have shape {shape}, got {tuple(np.shape(p))}")


def _normalized(x, shape: tuple, eps: float, center: bool):
    """x normalised over its trailing `shape` axes: one fused primitive over them flattened."""
    if len(shape) == 1:
        return bind(N.norm_p, x, eps=float(eps), center=center)
    lead = tuple(x.shape[:x.ndim - len(shape)])
    flat = fnp.reshape(x, lead + (int(np.prod(shape, dtype=np.int64)),))
    return fnp.reshape(bind(N.norm_p, flat, eps=float(eps), center=center), x.shape)


def group_norm(x, num_groups: int, weight=None, bias=None, eps: float = 1e-5):
    """Normalise (N, C, ...) inputs over groups of C // num_groups channels and the spatial axes;
    weight and bias are per channel (torch.nn.functional.group_norm)."""
    x = fnp.autocast_to_float32(fnp._float_arg(x))
    if x.ndim < 2 or x.shape[1] % num_groups:
        raise fg_errors.ShapeError(f"group_norm: {num_groups} groups do not divide the channels of an input of "
                                   f"shape {x.shape} (channels on axis 1)")
    n, c = x.shape[0], x.shape[1]
    _check_shapes("group_norm", (c,), weight=weight, bias=bias)
    grouped = fnp.reshape(fnp._widened(x), (n, num_groups, -1))
    centered = grouped - fnp.mean(grouped, axis=2, keepdims=True)
    var = fnp.mean(centered * centered, axis=2, keepdims=True)
    out = fnp.reshape(centered * (1.0 / fnp.sqrt(var + eps)), x.shape)
    channel = (1, c) + (1,) * (x.ndim - 2)
    if weight is not None:
        out = out * fnp.reshape(fnp._arrays(x, weight)[1], channel)
    return fnp._narrowed(out if bias is None else out + fnp.reshape(fnp._arrays(x, bias)[1], channel), x.dtype)


def dropout(x, rate: float, key=None):
    """Multiply each element by 0 with probability `rate` and the rest by 1/(1 - rate), as
    PyTorch's (a dropped NaN or inf stays NaN, so a broken activation still shows); identity
    without a key (evaluation), so a model is in training mode exactly when given a key."""
    return _dropout(x, rate, key, None)


def _dropout(x, rate: float, key, mask_shape):
    """dropout with one keep-or-drop draw per element of mask_shape (broadcast over x; None: x's
    shape), so channel dropout drops whole channels."""
    if not 0.0 <= rate <= 1.0:
        raise ValueError(f"dropout rate must be in [0, 1], got {rate}")
    if key is None or rate == 0.0:
        return x
    x = fnp.asarray(x)
    if rate == 1.0:
        return x * 0.0
    keep = random.bernoulli(key, 1.0 - rate, x.shape if mask_shape is None else mask_shape)
    return x * fnp.where(keep, 1.0 / (1.0 - rate), 0.0)


def embedding(indices, weight, padding_idx: int | None = None, max_norm: float | None = None,
              norm_type: float = 2.0, scale_grad_by_freq: bool = False, sparse: bool = False):
    """weight's rows at indices (torch.nn.functional.embedding); the rows looked up at padding_idx
    pass no gradient back to the table, as PyTorch's. max_norm rescales each looked-up row whose
    norm_type-norm exceeds it to that norm (PyTorch's max_norm / (norm + 1e-7)); PyTorch also writes
    the rescaled rows back into its table, which an immutable table cannot do, and its gradient
    flows through the rescaling as through an identity, as here. scale_grad_by_freq divides each
    row's gradient by how often its index occurs in the batch. sparse is accepted for PyTorch's
    signature; the gradient is the same numbers, held dense."""
    weight = fnp.asarray(weight)
    if weight.ndim != 2:
        raise fg_errors.ShapeError(f"embedding: weight must be a (num_embeddings, embedding_dim) table, got shape "
                                   f"{weight.shape}")
    idx = fnp._index_array(indices, weight.device)
    known = fnp.concrete_or_none(idx)
    if known is not None and known.size and (known.min() < 0 or known.max() >= weight.shape[0]):
        raise IndexError(f"embedding index out of range: indices span [{known.min()}, {known.max()}] "
                         f"but the table has {weight.shape[0]} rows")
    out = fnp.take(weight, idx, axis=0)
    if max_norm is not None:
        norms = linalg.norm(fnp.stop_gradient(out), ord=norm_type, axis=-1, keepdims=True)
        rescaled = out * fnp.where(norms > max_norm, max_norm / (norms + 1e-7), 1.0).astype(out.dtype)
        out = out + fnp.stop_gradient(rescaled - out)
    if scale_grad_by_freq:
        counts = fnp.zeros(weight.shape[0], out.dtype, device=weight.device).at[fnp.ravel(idx)].add(1)
        frequency = fnp.expand_dims(fnp.take(counts, idx), -1)
        out = fnp.stop_gradient(out) + (out - fnp.stop_gradient(out)) / frequency
    return out if padding_idx is None else _frozen_padding(out, idx, _padding_index(padding_idx, weight.shape[0]))


def _frozen_padding(rows, indices, padding_idx: int):
    """rows looked up at indices, those at padding_idx passing no gradient back (PyTorch's)."""
    return fnp.where(fnp.expand_dims(indices == padding_idx, -1), fnp.stop_gradient(rows), rows)


def _padding_index(padding_idx: int, rows: int) -> int:
    """padding_idx as a row of a table of `rows` rows (a negative one counts from the end, as in
    PyTorch); an IndexError where there is no such row."""
    if isinstance(padding_idx, bool) or not isinstance(padding_idx, (int, np.integer)) or \
            not -rows <= padding_idx < rows:
        raise IndexError(f"embedding: padding_idx {padding_idx!r} is not a row of a table of {rows} rows")
    return int(padding_idx) % rows


def one_hot(labels, num_classes: int = -1, dtype=fg_dtypes.float32, axis: int = -1):
    """labels (integers) as one-hot vectors of num_classes along axis (jax.nn's; the last by
    default); -1 (PyTorch's default) takes the largest label + 1, which needs concrete labels
    (under jit, give num_classes). A label outside the classes raises, as in PyTorch (JAX gives an
    all-zero vector: mask such rows explicitly)."""
    idx = fnp._index_array(labels)
    known = fnp.concrete_or_none(idx)
    if num_classes == -1:
        if known is None:
            raise fg_errors.ConcretizationError("one_hot: num_classes=-1 reads the largest label, which is traced "
                                                "here; pass num_classes")
        num_classes = int(known.max()) + 1 if known.size else 0
    if known is not None and known.size and (known.min() < 0 or known.max() >= num_classes):
        raise IndexError(f"one_hot: labels span [{known.min()}, {known.max()}], outside the {num_classes} classes "
                         f"[0, {num_classes - 1}]")  # an all-zero row would be a silent wrong target
    out = fnp.astype(fnp.expand_dims(idx, -1) == fnp.arange(num_classes, device=idx.device), dtype)
    return out if axis == -1 else fnp.moveaxis(out, -1, axis)


def scaled_dot_product_attention(q, k, v, mask=None, is_causal: bool = False, scale: float | None = None, *,
                                 attn_mask=None, dropout_p: float = 0.0, enable_gqa: bool = False, key=None):
    """softmax(q k^T * scale + mask) v over (..., L, d) inputs, as
    torch.nn.functional.scaled_dot_product_attention: `mask` (or PyTorch's name, attn_mask) is
    boolean (True = attend) or additive, is_causal masks the keys after each query, scale defaults
    to 1 / sqrt(d); enable_gqa lets q have a multiple of k's and v's heads (axis -3), each key head
    serving that many query heads; dropout_p drops attention weights, given a PRNG key (as
    nn.dropout: no key, no dropout). ops/attention.py's fused primitive forms the scores a block of
    queries at a time and its backward pass recomputes them; on the CPU, where they are small and
    being differentiated, the weights are kept instead (and always with dropout)."""
    if not isinstance(is_causal, (bool, int, np.bool_, np.integer)):  # a float: PyTorch's dropout_p, by position
        raise TypeError(f"scaled_dot_product_attention: is_causal must be a bool, got {is_causal!r} (PyTorch's "
                        f"fifth argument is dropout_p, which funcgrad takes by name, with key=)")
    if attn_mask is not None:
        if mask is not None:
            raise TypeError("scaled_dot_product_attention: give the mask once, as mask or as attn_mask")
        mask = attn_mask
    q, k, v = fnp._common((q, k, v))
    q, k, v = (fnp._float_arg(x) for x in (q, k, v))
    if min(q.ndim, k.ndim, v.ndim) < 2:
        raise fg_errors.ShapeError(f"scaled_dot_product_attention: query, key and value need at least 2 dimensions "
                                   f"(..., L, E), got shapes {q.shape}, {k.shape}, {v.shape}")
    if enable_gqa:
        k, v = _shared_key_heads(q, k, "key"), _shared_key_heads(q, v, "value")
    mask = None if mask is None else fnp._arrays(q, mask)[1]
    if mask is not None and mask.dtype != fg_dtypes.bool_ and mask.dtype not in fg_dtypes.float_dtypes:
        raise TypeError(f"scaled_dot_product_attention: a mask is boolean (True = attend) or a float to add to the "
                        f"scores, not {mask.dtype} (as PyTorch: an integer 0/1 mask would be added, not applied)")
    leads = [q.shape[:-2], k.shape[:-2], v.shape[:-2]] + ([] if mask is None else [mask.shape[:-2]])
    try:
        lead = np.broadcast_shapes(*leads)
    except ValueError:
        raise fg_errors.ShapeError(
            f"scaled_dot_product_attention: the leading (batch, head) dimensions of query {q.shape}, key {k.shape}, "
            f"value {v.shape}" + ("" if mask is None else f" and the mask {mask.shape}") + " do not broadcast" +
            ("; query heads sharing key/value heads need enable_gqa=True" if _shares_heads(q, k) and not enable_gqa
             else "")) from None
    q, k, v = (fnp.broadcast_to(x, lead + x.shape[-2:]) for x in (q, k, v))
    bias = 0.0
    if mask is not None:
        bias = fnp.where(mask, 0.0, -np.inf).astype(q.dtype) if mask.dtype == fg_dtypes.bool_ else mask
    if scale is None:  # with no features the scores are empty sums, 0 at any scale: uniform weights, as PyTorch
        scale = 1.0 / math.sqrt(q.shape[-1]) if q.shape[-1] else 1.0
    scale = float(scale)
    if dropout_p and key is not None:
        weights = A.attention_weights_p(q, k, bias, scale=scale, causal=bool(is_causal))
        return fnp.matmul(dropout(weights, dropout_p, key), v)
    if not 0.0 <= dropout_p <= 1.0:
        raise ValueError(f"scaled_dot_product_attention: dropout_p must be in [0, 1], got {dropout_p}")
    return A.attention(q, k, v, bias, scale=scale, causal=bool(is_causal))


def _shares_heads(q, k) -> bool:
    """Whether k has fewer heads (axis -3) than q, a divisor of their count: grouped-query attention."""
    return q.ndim >= 3 and k.ndim >= 3 and 0 < k.shape[-3] < q.shape[-3] and q.shape[-3] % k.shape[-3] == 0


def _shared_key_heads(q, kv, name: str):
    """kv's heads (axis -3) repeated to q's count (PyTorch's enable_gqa: consecutive query heads share one)."""
    if q.ndim < 3 or kv.ndim < 3:
        raise fg_errors.ShapeError(f"scaled_dot_product_attention: enable_gqa needs heads on axis -3, got query "
                                   f"{q.shape} and {name} {kv.shape}")
    heads, kv_heads = q.shape[-3], kv.shape[-3]
    if kv_heads == 0 or heads % kv_heads:
        raise fg_errors.ShapeError(f"scaled_dot_product_attention: {heads} query heads do not split evenly over "
                                   f"{kv_heads} {name} heads")
    return fnp.repeat(kv, heads // kv_heads, axis=-3)


def dot_product_attention(query, key, value, bias=None, mask=None, *, scale: float | None = None,
                          is_causal: bool = False, query_seq_lengths=None, key_value_seq_lengths=None,
                          local_window_size=None, implementation=None, return_residual: bool = False):
    """jax.nn.dot_product_attention: heads in JAX's layout, query (B, T, N, H) or (T, N, H), key and
    value (B, S, K, H) with N a multiple of K (grouped-query attention; K = 1: multi-query); bias
    (additive) and mask (True = attend) broadcast to (B, N, T, S); sequence lengths mask the padded
    queries and keys; local_window_size (left, right) or one int limits each query to the keys
    t - left .. t + right. A query that may attend to nothing gives 0 (funcgrad's and PyTorch's
    convention for fully masked rows; XLA's path averages the values there). return_residual adds
    the rows' logsumexp, (B, T, N)."""
    if implementation not in (None, "xla"):
        raise ValueError(f"dot_product_attention: implementation must be None or 'xla', got {implementation!r}")
    q, k, v = fnp._common((query, key, value))
    unbatched = q.ndim == 3
    if unbatched:
        q, k, v = (fnp.expand_dims(x, 0) for x in (q, k, v))
    if q.ndim != 4 or k.ndim != 4 or k.shape != v.shape:
        raise ValueError(f"dot_product_attention: query (B, T, N, H) and key, value of one shape (B, S, K, H), got "
                         f"{tuple(query.shape)}, {tuple(key.shape)} and {tuple(value.shape)}")
    (b, t, n, h), (_, s, heads_kv, _) = q.shape, k.shape
    if n % heads_kv or k.shape[-1] != h or k.shape[0] != b:
        raise ValueError(f"dot_product_attention: query's {n} heads must be a multiple of key's {heads_kv}, with one "
                         f"batch and head size: shapes {tuple(q.shape)} and {tuple(k.shape)}")
    if heads_kv != n:  # each key/value head serves n // heads_kv query heads
        k, v = (fnp.repeat(x, n // heads_kv, axis=2) for x in (k, v))
    q, k, v = (fnp.transpose(x, (0, 2, 1, 3)) for x in (q, k, v))  # (B, N, T|S, H)
    allowed = None
    if mask is not None:
        allowed = fnp.asarray(mask, dtype=fg_dtypes.bool_)
    if query_seq_lengths is not None:
        rows = fnp.reshape(fnp.arange(t), (1, 1, t, 1)) < fnp.reshape(fnp.asarray(query_seq_lengths), (b, 1, 1, 1))
        allowed = rows if allowed is None else allowed & rows
    if key_value_seq_lengths is not None:
        cols = fnp.reshape(fnp.arange(s), (1, 1, 1, s)) < fnp.reshape(fnp.asarray(key_value_seq_lengths), (b, 1, 1, 1))
        allowed = cols if allowed is None else allowed & cols
    if local_window_size is not None:
        left, right = (local_window_size, local_window_size) if np.ndim(local_window_size) == 0 else local_window_size
        offset = np.arange(s)[None, :] - np.arange(t)[:, None]
        window = fnp.asarray((offset >= -int(left)) & (offset <= int(right)))
        allowed = window if allowed is None else allowed & window
    additive = None if bias is None else fnp.astype(fnp.asarray(bias), q.dtype)
    if allowed is not None:
        blocked = fnp.where(allowed, 0.0, -np.inf).astype(q.dtype)
        additive = blocked if additive is None else additive + blocked
    if additive is not None and additive.ndim == 3 and unbatched:
        additive = fnp.expand_dims(additive, 0)
    out = scaled_dot_product_attention(q, k, v, additive, is_causal=is_causal, scale=scale)
    out = fnp.transpose(out, (0, 2, 1, 3))
    out = out[0] if unbatched else out
    if not return_residual:
        return out
    scores = fnp.matmul(q, fnp.swapaxes(k, -1, -2)) * (1.0 / math.sqrt(h) if scale is None else float(scale))
    if additive is not None:
        scores = scores + additive
    if is_causal:
        scores = fnp.where(np.tril(np.ones((t, s), bool)), scores, -np.inf)
    residual = fnp.transpose(fnp.logsumexp(scores, axis=-1), (0, 2, 1))  # (B, T, N)
    return out, residual[0] if unbatched else residual
