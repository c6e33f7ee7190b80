"""Scaled dot-product attention on the CPU, a block of query rows at a time.

Each block's scores are one batched GEMM (q_block . k^T over every batch and head), turned into
probabilities in place by one numba pass (scale, bias, causal mask and softmax together), and
multiplied by v: the full (batch, Lq, Lk) score matrix exists only when it fits the block budget,
so long sequences take memory linear in Lq. The backward pass recomputes each block's
probabilities rather than storing them (as flash attention does), and returns the gradients of
q, k and v (and of the scores, for an additive bias that needs one) packed per batch element.

Arrays: q (..., Lq, D), k (..., Lk, D), v (..., Lk, Dv) with the same leading (batch, head) dims,
taken as they come (a head-split view of a projection is read in place: np.matmul walks strided
leading dims, and flattening them would copy); bias (1 or B, Lq, Lk), possibly a broadcast view,
with B the leading dims' product.
"""
from __future__ import annotations

import math

import numpy as np

from . import gemm
from .rows import row_kernels
from .workspace import scratch

BLOCK_BYTES = 8 << 20  # the scores of one block of query rows, over the whole batch


def _block_rows(batch: int, lq: int, lk: int, itemsize: int) -> int:
    return max(1, min(lq, BLOCK_BYTES // max(1, batch * lk * itemsize)))


def _probs(q, k_t, bias, scale, causal, r0, r1):
    """The probabilities of query rows r0 .. r1, (..., r1 - r0, Lk) in scratch memory."""
    s = scratch("attention scores", q.shape[:-2] + (r1 - r0, k_t.shape[-1]), np.result_type(q, k_t))
    return _softmax_of_scores(s, q[..., r0:r1, :], k_t, bias, scale, causal, r0)


def _softmax_of_scores(s, q, k_t, bias, scale, causal, r0):
    """s (C-contiguous) = the probabilities of q's rows, query rows r0 onwards of the bias and mask."""
    gemm.matmul(q, k_t, out=s)
    zero = bias.size == 0 or (not any(bias.strides) and bias.flat[0] == 0)  # the broadcast 0 of no bias
    row_kernels().attention_probs(s.reshape(_batch(q), q.shape[-2], k_t.shape[-1]), bias, not zero,
                                  s.dtype.type(scale), causal, r0, s.dtype.type(0))
    return s


def weights(q, k, bias, scale: float, causal: bool, out: np.ndarray | None = None) -> np.ndarray:
    """The attention weights themselves, (..., Lq, Lk) (into out, C-contiguous, where one is given):
    kept for the backward pass where they are small (ops/attention.py)."""
    out = np.empty(q.shape[:-1] + (k.shape[-2],), q.dtype) if out is None else out
    return _softmax_of_scores(out, q, _transposed(k, "attention keys transposed"), bias, scale, causal, 0)


def _transposed(x, name: str) -> np.ndarray:
    """x with its last two axes swapped, C-contiguous (in scratch memory): q k^T and g v^T become
    GEMMs of untransposed operands, which OpenBLAS runs 1.7x as fast on a 64 x 32 head view (0.16
    against 0.27 ms for the GPT-128 step's 64 heads; the copy costs 0.05)."""
    t = np.swapaxes(x, -1, -2)
    if t.flags.c_contiguous:
        return t
    out = scratch(name, t.shape, t.dtype)
    np.copyto(out, t)
    return out


def _batch(q) -> int:
    return math.prod(q.shape[:-2])


def attention(q, k, v, bias, scale: float, causal: bool, out: np.ndarray | None = None) -> np.ndarray:
    """(Into out, a C-contiguous array of the result's shape and q's dtype, where one is given.)"""
    lq = q.shape[-2]
    out = np.empty(q.shape[:-1] + (v.shape[-1],), q.dtype) if out is None else out
    k_t = _transposed(k, "attention keys transposed")
    step = _block_rows(_batch(q), lq, k.shape[-2], q.itemsize)
    for r0 in range(0, lq, step):
        r1 = min(lq, r0 + step)
        gemm.matmul(_probs(q, k_t, bias, scale, causal, r0, r1), v, out=out[..., r0:r1, :])
    return out


def attention_grads(q, k, v, bias, out, g, scale: float, causal: bool, score_grad: bool,
                    into: np.ndarray | None = None) -> np.ndarray:
    """(..., n): per batch element dq, dk, dv flattened and concatenated, then the score gradient
    (Lq * Lk values) when score_grad (into `into`, C-contiguous, where one is given)."""
    lead, lq, lk = q.shape[:-2], q.shape[-2], k.shape[-2]
    shapes = [q.shape[-2:], k.shape[-2:], v.shape[-2:]] + ([(lq, lk)] if score_grad else [])
    packed = np.empty(lead + (sum(a * b for a, b in shapes),), q.dtype) if into is None else into
    views, start = [], 0  # dq, dk, dv (and the score gradient): written in place in the packed result
    for a, b in shapes:
        views.append(packed[..., start:start + a * b].reshape(lead + (a, b)))
        start += a * b
    dq, dk, dv = views[:3]
    if lq == 0:  # no query sees a key: dk and dv are sums over nothing (the loop below writes none)
        packed.fill(0)
    delta = np.einsum("...id,...id->...i", g, out)  # rowsum(dP * P) = rowsum(g * out)
    k_t, v_t = _transposed(k, "attention keys transposed"), _transposed(v, "attention values transposed")
    step = _block_rows(_batch(q), lq, lk, q.itemsize)
    for r0 in range(0, lq, step):
        r1 = min(lq, r0 + step)
        p = _probs(q, k_t, bias, scale, causal, r0, r1)
        _into(gemm.matmul, np.swapaxes(p, -1, -2), g[..., r0:r1, :], dv, accumulate=r0 > 0)
        ds = scratch("attention score gradient", p.shape, p.dtype)
        gemm.matmul(g[..., r0:r1, :], v_t, out=ds)
        rows = (_batch(q), r1 - r0, lk)  # named sizes: -1 cannot be solved for when there are no keys
        row_kernels().attention_score_grads(ds.reshape(rows), p.reshape(rows), delta[..., r0:r1].reshape(rows[:2]),
                                            ds.dtype.type(1 if score_grad else scale))
        if score_grad:  # the gradient of the scores as the bias sees them, then scaled for q and k
            views[3][..., r0:r1, :] = ds
            ds *= scale
        gemm.matmul(ds, k, out=dq[..., r0:r1, :])
        _into(gemm.matmul, np.swapaxes(ds, -1, -2), q[..., r0:r1, :], dk, accumulate=r0 > 0)
    return packed


def _into(op, a, b, out, accumulate: bool) -> None:
    """out = op(a, b), or out += op(a, b) through scratch memory (blocks after the first)."""
    if not accumulate:
        op(a, b, out=out)
        return
    partial = scratch("attention partial", out.shape, out.dtype)
    op(a, b, out=partial)
    out += partial
