"""Scaled dot-product attention on the CPU, a block of query rows at a time.

Each block's scores are one batched GEMM (q_block . k^T over every batch and head), turned into
probabilities in place by one numba pass (scale, bias, causal mask and softmax together), and
multiplied by v: the full (batch, Lq, Lk) score matrix exists only when it fits the block budget,
so long sequences take memory linear in Lq. The backward pass recomputes each block's
probabilities rather than storing them (as flash attention does), and returns the gradients of
q, k and v (and of the scores, for an additive bias that needs one) packed per batch element.

Arrays: q (B, Lq, D), k (B, Lk, D), v (B, Lk, Dv) with B the flattened batch (and head) dims;
bias (1 or B, Lq, Lk), possibly a broadcast view.
"""
from __future__ import annotations

import numpy as np

from .rows import row_kernels

BLOCK_BYTES = 8 << 20  # the scores of one block of query rows, over the whole batch


def _block_rows(batch: int, lq: int, lk: int, itemsize: int) -> int:
    return max(1, min(lq, BLOCK_BYTES // max(1, batch * lk * itemsize)))


def _probs(q, k_t, bias, scale, causal, r0, r1):
    s = np.matmul(q[:, r0:r1], k_t)
    row_kernels().attention_probs(s, bias, s.dtype.type(scale), causal, r0, s.dtype.type(0))
    return s


def attention(q, k, v, bias, scale: float, causal: bool) -> np.ndarray:
    batch, lq, _ = q.shape
    out = np.empty((batch, lq, v.shape[-1]), q.dtype)
    k_t = k.transpose(0, 2, 1)
    step = _block_rows(batch, lq, k.shape[1], q.itemsize)
    for r0 in range(0, lq, step):
        r1 = min(lq, r0 + step)
        np.matmul(_probs(q, k_t, bias, scale, causal, r0, r1), v, out=out[:, r0:r1])
    return out


def attention_grads(q, k, v, bias, out, g, scale: float, causal: bool, score_grad: bool) -> np.ndarray:
    """(B, n): per batch element dq, dk, dv flattened and concatenated, then the score gradient
    (Lq * Lk values) when score_grad."""
    batch, lq, _ = q.shape
    lk = k.shape[1]
    dq, dk, dv = np.empty_like(q), np.zeros_like(k), np.zeros_like(v)
    ds_all = np.empty((batch, lq, lk), q.dtype) if score_grad else None
    delta = np.einsum("bid,bid->bi", g, out)[..., None]  # rowsum(dP * P) = rowsum(g * out)
    k_t, v_t = k.transpose(0, 2, 1), v.transpose(0, 2, 1)
    step = _block_rows(batch, lq, lk, q.itemsize)
    for r0 in range(0, lq, step):
        r1 = min(lq, r0 + step)
        p = _probs(q, k_t, bias, scale, causal, r0, r1)
        dv += np.matmul(p.transpose(0, 2, 1), g[:, r0:r1])
        ds = p * (np.matmul(g[:, r0:r1], v_t) - delta[:, r0:r1])  # the softmax's Jacobian applied
        if score_grad:
            ds_all[:, r0:r1] = ds
        ds *= scale
        np.matmul(ds, k, out=dq[:, r0:r1])
        dk += np.matmul(ds.transpose(0, 2, 1), q[:, r0:r1])
    parts = [dq, dk, dv] + ([ds_all] if score_grad else [])
    return np.concatenate([p.reshape(batch, -1) for p in parts], axis=1)
