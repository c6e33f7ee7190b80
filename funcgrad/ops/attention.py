"""Scaled dot-product attention: softmax(q k^T * scale + bias, causal) v, in one of two forms.

attention_p computes it a block of query rows at a time (cpu/attention.py; on a GPU a query row
per thread block, cuda/kernels/attention.py), never holding the whole score matrix of a long
sequence, and its reverse rule is attention_grads_p, the fused backward pass that recomputes the
probabilities rather than storing them. That pair is first-order only;
where a rule's operands are themselves being differentiated (grad of grad, jvp of grad), the
rules use the composition of matmul and softmax instead, which differentiates to any order. So
derivatives of every order come out right, and the common first-order pass is the fused one.

`attention` picks the form. On the CPU, where the operands are being differentiated and the
weights are small (no larger than one block of the fused pass), it keeps them instead:
attention_weights_p (the scores, mask and softmax in one pass) times v, whose backward pass is
four GEMMs and the softmax's Jacobian, with nothing recomputed (the GPT-128 step: 0.93x). On a
GPU the fused kernels launch fewer kernels each way, and long sequences keep the fused form's
linear memory.

Operands: q (..., Lq, D), k (..., Lk, D), v (..., Lk, Dv) with equal leading (batch, head) dims;
bias a float array broadcastable to (..., Lq, Lk), or 0.0. Parameters: scale, causal (key j
masked out for query i when j > i, PyTorch's is_causal). A query whose every key is masked (-inf)
gets weights 0, so an output of 0 and zero gradients, as PyTorch's attention (since 2.5); a plain
softmax of such a row is NaN, in PyTorch too.
"""
from __future__ import annotations

import math

import numpy as np

from .. import dtypes
from ..cpu import attention as cpu_attention
from ..cpu.workspace import deliver, target
from ..trace import is_differentiated
from . import elementwise as E
from .core import Primitive, ShapedArray, shape_of
from .layout import batch_first, reshape_p, transpose_p, unbroadcast
from .linalg import matmul_p
from .reductions import max_p, softmax_p, sum_p
from .shape import gather_p


def _check(q, k, v, bias):
    """(The dtype, the scores' shape), or a clear error; v is None for the weights alone."""
    if v is None:
        aligned = len(q.shape) >= 2 and len(k.shape) == len(q.shape) and q.shape[:-2] == k.shape[:-2]
        if not aligned or q.shape[-1] != k.shape[-1]:
            raise ValueError(f"attention weights take q (..., Lq, D), k (..., Lk, D) with the same leading dims, got "
                             f"shapes {q.shape}, {k.shape}")
        v = k
    if len(q.shape) < 2 or not (q.shape[:-2] == k.shape[:-2] == v.shape[:-2]) or len(k.shape) != len(q.shape) or \
            len(v.shape) != len(q.shape) or q.shape[-1] != k.shape[-1] or k.shape[-2] != v.shape[-2]:
        raise ValueError(f"attention takes q (..., Lq, D), k (..., Lk, D), v (..., Lk, Dv) with the same leading "
                         f"dims, got shapes {q.shape}, {k.shape}, {v.shape}")
    scores = tuple(q.shape[:-1]) + (k.shape[-2],)
    if not isinstance(bias, (int, float)):
        if np.broadcast_shapes(tuple(bias.shape), scores) != scores:
            raise ValueError(f"attention: a bias (mask) of shape {bias.shape} does not broadcast to the scores "
                             f"{scores}")
    dtype = np.result_type(q.dtype, k.dtype, v.dtype)
    if dtype not in dtypes.float_dtypes:
        raise TypeError(f"attention needs floating-point q, k, v, got {q.dtype}, {k.dtype}, {v.dtype}")
    return dtype, scores


def _attention_shape(q, k, v, bias, *, scale, causal):
    dtype, _ = _check(q, k, v, bias)
    return ShapedArray(tuple(q.shape[:-1]) + (v.shape[-1],), dtype)


def _grad_sizes(q, k, v):
    """The lengths of dq, dk, dv (and of the score gradient) per batch element, in packing order."""
    per = lambda x: math.prod(x.shape[-2:])  # noqa: E731
    return per(q), per(k), per(v), q.shape[-2] * k.shape[-2]


def _grads_shape(q, k, v, bias, out, g, *, scale, causal, score_grad):
    dtype, _ = _check(q, k, v, bias)
    sizes = _grad_sizes(q, k, v)
    return ShapedArray(tuple(q.shape[:-2]) + (sum(sizes[:3]) + (sizes[3] if score_grad else 0),), dtype)


def _operands(q, k, v, bias, *rest):
    """NumPy operands in the compute dtype (float32 for half types), their leading dims as they
    come, and the bias as (1 or B, Lq, Lk) with B the leading dims' product (a broadcast view where
    it is shared across the batch)."""
    dtype = np.result_type(q, k, v)
    work = np.dtype(np.float32) if dtype in dtypes.low_precision else dtype
    batch, lq, lk = math.prod(q.shape[:-2]), q.shape[-2], k.shape[-2]
    arrays = [np.asarray(x, work) for x in (q, k, v) + rest]
    bias = np.asarray(bias, work)
    if math.prod(bias.shape[:-2]) == 1:
        bias = np.broadcast_to(bias.reshape(bias.shape[-2:]) if bias.ndim >= 2 else bias, (lq, lk))[None]
    else:
        bias = np.ascontiguousarray(np.broadcast_to(bias, q.shape[:-1] + (lk,))).reshape(batch, lq, lk)
    return arrays, bias, dtype


def _attention_impl(q, k, v, bias, scale, causal, out=None):
    _check(q, k, v, bias)  # eager calls reach here without the shape rule
    (q2, k2, v2), bias2, dtype = _operands(q, k, v, bias)
    result = cpu_attention.attention(q2, k2, v2, bias2, scale, causal, target(out, q2.dtype))
    return deliver(result.astype(dtype, copy=False), out)


def _grads_impl(q, k, v, bias, y, g, scale, causal, score_grad, out=None):
    """y: attention's output; out: where the packed gradients go (jit's planned buffer)."""
    (q2, k2, v2, y2, g2), bias2, dtype = _operands(q, k, v, bias, y, g)
    packed = cpu_attention.attention_grads(q2, k2, v2, bias2, y2, g2, scale, causal, score_grad,
                                           target(out, q2.dtype))
    return deliver(packed.astype(dtype, copy=False), out)


def _weights_shape(q, k, bias, *, scale, causal):
    dtype, scores = _check(q, k, None, bias)
    return ShapedArray(scores, dtype)


def _weights_impl(q, k, bias, scale, causal, out=None):
    _check(q, k, None, bias)
    (q2, k2, _), bias2, dtype = _operands(q, k, k, bias)
    return deliver(cpu_attention.weights(q2, k2, bias2, scale, causal, target(out, q2.dtype)).astype(dtype, copy=False),
                   out)


def _batch_rule(bias_index: int):
    """The vmapped axis joins the leading dims; an unbatched bias broadcasts as it is, a batched
    one of fewer dims than the scores gets ones after its batch axis (each example's (Lq, Lk) mask
    broadcasts over that example's heads, not over the batch)."""
    def rule(size, prim, vals, dims, **params):
        moved = [v if i == bias_index and d is None else batch_first(v, d, size)
                 for i, (v, d) in enumerate(zip(vals, dims))]
        bias, missing = moved[bias_index], len(moved[0].shape) - len(shape_of(moved[bias_index]))
        if dims[bias_index] is not None and missing > 0:
            moved[bias_index] = reshape_p(bias, shape=(size,) + (1,) * missing + tuple(bias.shape[1:]))
        return prim(*moved, **params), 0
    return rule


attention_p = Primitive("attention", _attention_impl, shape_rule=_attention_shape, batch_rule=_batch_rule(3),
                        cuda="attention", fresh=True, writes_into=True)
# Bound only where nothing is being differentiated (attention_p's rule checks), so it needs no rules.
attention_grads_p = Primitive("attention_grads", _grads_impl, shape_rule=_grads_shape, batch_rule=_batch_rule(3),
                              cuda="attention_grads", fresh=True, writes_into=True, differentiable=False)
# softmax(q k^T * scale + bias, causal), (..., Lq, Lk): the weights, where they are kept.
attention_weights_p = Primitive("attention_weights", _weights_impl, shape_rule=_weights_shape,
                                batch_rule=_batch_rule(2), cuda="attention_weights", fresh=True, writes_into=True)


# The largest weights kept: one block of the fused pass (where they would be formed whole anyway).
KEEP_WEIGHTS_BYTES = cpu_attention.BLOCK_BYTES


def attention(q, k, v, bias, *, scale: float, causal: bool):
    """softmax(q k^T * scale + bias, causal) v, in the form these operands run fastest in (above)."""
    if _keeps_weights(q, k, v, bias):
        return matmul_p(attention_weights_p(q, k, bias, scale=scale, causal=causal), v)
    return attention_p(q, k, v, bias, scale=scale, causal=causal)


def _keeps_weights(q, k, v, bias) -> bool:
    dtype = np.result_type(q.dtype, k.dtype, v.dtype)
    on_cpu = getattr(getattr(q, "device", None), "platform", "cpu") == "cpu"
    small = math.prod(q.shape[:-1]) * k.shape[-2] * dtype.itemsize <= KEEP_WEIGHTS_BYTES
    # half types run in float32 inside the fused form; kept weights would be rounded to them
    return on_cpu and small and dtype in (dtypes.float32, dtypes.float64) and \
        any(is_differentiated(x) for x in (q, k, v, bias))


# ---- the composition, for derivatives of any order (and the JVP) ----------------------------------
def _swap(x):
    n = len(x.shape)
    return transpose_p(x, perm=tuple(range(n - 2)) + (n - 1, n - 2))


def _softmax_jacobian(t, p):
    """The softmax Jacobian (at probabilities p, over the last axis) applied to t."""
    total = sum_p(E.mul_p(t, p), axes=(len(p.shape) - 1,), keepdims=True)
    return E.mul_p(p, E.sub_p(t, total))


def probabilities(q, k, bias, scale, causal):
    scores = E.mul_p(matmul_p(q, _swap(k)), scale)
    if not isinstance(bias, (int, float)) or bias:
        scores = E.add_p(scores, bias)
    if causal:
        scores = E.select_p(np.tri(q.shape[-2], k.shape[-2], dtype=bool), scores, -np.inf)
    # a row whose every key is masked (all -inf) has weights 0, as PyTorch's attention: it goes
    # through the softmax as zeros, so no NaN reaches the derivatives either
    axis = len(q.shape) - 1
    if not k.shape[-2]:  # no keys: nothing to take a maximum of, and no weights
        return softmax_p(scores, axes=(axis,))
    hidden = E.eq_p(max_p(scores, axes=(axis,), keepdims=True), -np.inf)
    return E.select_p(hidden, 0.0, softmax_p(E.select_p(hidden, 0.0, scores), axes=(axis,)))


def composed_grads(g, q, k, v, bias, scale, causal):
    """dq, dk, dv and the scores' gradient, from the probabilities recomputed."""
    p = probabilities(q, k, bias, scale, causal)
    ds = _softmax_jacobian(matmul_p(g, _swap(v)), p)
    return E.mul_p(matmul_p(ds, k), scale), E.mul_p(matmul_p(_swap(ds), q), scale), matmul_p(_swap(p), g), ds


def _fused_grads(g, out, q, k, v, bias, scale, causal, score_grad):
    packed = attention_grads_p(q, k, v, bias, out, g, scale=scale, causal=causal, score_grad=score_grad)
    lead, start, parts = tuple(q.shape[:-2]), 0, []
    shapes = [q.shape[-2:], k.shape[-2:], v.shape[-2:]] + ([(q.shape[-2], k.shape[-2])] if score_grad else [])
    for shape in shapes:
        n = math.prod(shape)
        piece = gather_p(packed, spec=tuple(("s", 0, d, 1) for d in lead) + (("s", start, start + n, 1),))
        parts.append(reshape_p(piece, shape=lead + tuple(shape)))
        start += n
    return parts + [None] * (4 - len(parts))


def _vjp(g, out, q, k, v, bias, *, wanted, scale, causal):
    score_grad = 3 in wanted
    if any(is_differentiated(x) for x in (g, out, q, k, v, bias)):
        dq, dk, dv, ds = composed_grads(g, q, k, v, bias, scale, causal)
    else:
        dq, dk, dv, ds = _fused_grads(g, out, q, k, v, bias, scale, causal, score_grad)
    return [dq, dk, dv, unbroadcast(ds, shape_of(bias)) if score_grad else None]


def _weights_tangent(tq, tk, tb, p, q, k, scale):
    """The tangent of the weights p: the softmax's Jacobian applied to the scores' tangent (None
    where q, k and the bias have none)."""
    terms = ([E.mul_p(matmul_p(tq, _swap(k)), scale)] if tq is not None else []) + \
        ([E.mul_p(matmul_p(q, _swap(tk)), scale)] if tk is not None else []) + \
        ([tb] if tb is not None else [])
    if not terms:
        return None
    d_scores = terms[0]
    for term in terms[1:]:
        d_scores = E.add_p(d_scores, term)
    return _softmax_jacobian(d_scores, p)


def _jvp(tangents, out, q, k, v, bias, scale, causal):
    """d out = dP v + P dv."""
    tq, tk, tv, tb = tangents
    p = probabilities(q, k, bias, scale, causal)
    dp = _weights_tangent(tq, tk, tb, p, q, k, scale)
    results = ([matmul_p(dp, v)] if dp is not None else []) + ([matmul_p(p, tv)] if tv is not None else [])
    return results[0] if len(results) == 1 else E.add_p(*results) if results else None


def _weights_vjp(g, p, q, k, bias, *, wanted, scale, causal):
    """The scores' gradient ds is the softmax's Jacobian applied to g; q and k get ds k and ds^T q,
    scaled (on the (L, D) products rather than on ds), the bias ds itself. Written with
    differentiable primitives, so derivatives of any order follow."""
    ds = _softmax_jacobian(g, p)
    scaled = (lambda x: x) if scale == 1 else (lambda x: E.mul_p(x, scale))  # noqa: E731
    return [scaled(matmul_p(ds, k)) if 0 in wanted else None, scaled(matmul_p(_swap(ds), q)) if 1 in wanted else None,
            unbroadcast(ds, shape_of(bias)) if 2 in wanted else None]


attention_p.vjp_joint = _vjp
attention_p.jvp_joint = _jvp
attention_weights_p.vjp_joint = _weights_vjp
attention_weights_p.jvp_joint = lambda tangents, p, q, k, bias, scale, causal: _weights_tangent(*tangents, p, q, k,
                                                                                                 scale)
