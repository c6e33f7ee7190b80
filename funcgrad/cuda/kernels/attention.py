"""Scaled dot-product attention in three kernels: the forward pass, and the backward pass's query
side and key side (a fourth forms the weights alone, for ops/attention.py's kept-weights form).
The composition of einsum, scale, bias, mask and softmax took ~25 launches each way and wrote the
(batch, Lq, Lk) scores, probabilities and their gradient to device memory; these hold one query's
(or key's) scores at a time and never write a score matrix.

A block takes a query row (grid-stride over batch x Lq rows): its threads stride over the keys, a
thread computing a key's score q . k * scale + bias from q and k in device memory; the row's
maximum and then its sum of exponentials combine across the block as reduce.py's row reductions
do. The weighted sum of v runs a tile of keys at a time: each thread writes its key's probability
to shared memory, then each thread accumulates one column of the output over the tile (reads of v
along its contiguous axis). The statistics, p = exp(s - max) / sum and the NaN and -inf rules are
cpu/row_kernels.py's attention_probs. The query side of the backward pass recomputes the row's
statistics, forms dS = p (g . v - rowsum(g * out)) and dq = dS k * scale (and the scores' gradient
for an additive bias that needs one), and leaves the statistics per row for the key side, where a
block takes a key row and sums dv = p^T g and dk = dS^T q over the queries that see it. Causal
rows skip the keys after the query (their probability is 0), so no mask is read or formed.

Operands are strided views (a head split of a projection is read in place): each comes as data,
offset, the strides of its leading (batch, head) dims, and its row and column strides; a bias is a
broadcast view of the scores' shape (zero strides where it is shared). Results are contiguous:
attention's (..., Lq, Dv) and the backward pass's packing of ops/attention.py (dq, dk, dv and the
scores' gradient, flattened, per batch element).
"""
from __future__ import annotations

import math
from functools import cache

import numpy as np

from ... import dtypes
from ..buffer import DeviceValue, empty
from ..runtime import BLOCK, MAX_BLOCKS, launch
from . import elementwise
from .common import (INDEX, array_type, broadcast_strides, cast, compile_source, compute_dtype, literal, narrow,
                     scalar_type, tuple_type, widen)
from .copy import fill
from .reduce import SUM, block_combine, combine_source, softmax_statistics

FLOATS = (dtypes.float32, dtypes.float64, dtypes.float16, dtypes.bfloat16)


def _operand(name: str) -> str:
    """The parameters of a strided operand: its data (`{name}a`), offset, the strides of its leading
    dims, its row stride and its column stride."""
    return f"{name}a, {name}_off, {name}_lead, {name}_rs, {name}_cs"


def _score_source(dtype: np.dtype, bias: bool) -> str:
    """A device function: the score of query row qb (an element index) with key j of k's batch
    element kb, scaled, plus the bias (an array at row offset bb, or a number)."""
    c = cast(compute_dtype(dtype))
    q = f"{c}({widen('qa[qb + e * q_cs]', dtype)})"
    k = f"{c}({widen('ka[kb + j * k_rs + e * k_cs]', dtype)})"
    add = f"{c}({widen('ba[bb + j * b_cs]', dtype)})" if bias else "bias"
    return f"""@cuda.jit(device=True)
def score(qa, qb, q_cs, ka, kb, k_rs, k_cs, d, scale, ba, bb, b_cs, bias, j):
    total = {literal(0, compute_dtype(dtype))}
    for e in range(d):
        total += {q} * {k}
    return total * scale + {add}
"""


_ROW = ["    t = cuda.threadIdx.x",
        "    for row in range(cuda.blockIdx.x, nrows, cuda.gridDim.x):",
        "        b = row // lq",
        "        i = row - b * lq",
        "        qb = S.element(b, lshape, q_lead, q_off) + i * q_rs",
        "        kb = S.element(b, lshape, k_lead, k_off)",
        "        vb = S.element(b, lshape, v_lead, v_off)",
        "        bb = S.element(b, lshape, b_lead, b_off) + i * b_rs",
        "        n = min(lk, i + 1) if causal else lk"]
_SCORE = "score(qa, qb, q_cs, ka, kb, k_rs, k_cs, d, scale, ba, bb, b_cs, bias, {j})"


def _statistics(ct: np.dtype) -> list[str]:
    """Source (inside the row loop) leaving the row's shift m and 1 / sum of exp(s - m) in inv: 0
    where the sum is 0, every visible key masked (the row's weights are then 0, as PyTorch's)."""
    zero = literal(0, ct)
    return softmax_statistics(_SCORE.format(j="j"), "n", ct) + [
        f"inv = {literal(1, ct)} / total if total != {zero} else {zero}"]


def _tile_sum(weight: list[str], width: str, load: str, store: str, ct: np.dtype) -> list[str]:
    """Source for sum_j w_j x_j over the row's keys j < n, a tile of them at a time: `weight` (lines
    setting w from j, run where j < n) leaves each thread's key's weight in shared memory, then each
    thread accumulates one column e < width of the sum (`load`: x_j's element e, as x_(j0 + jj))
    and `store`s it (a statement of acc)."""
    return ["for e0 in range(0, " + width + ", cuda.blockDim.x):",
            "    e = e0 + t",
            f"    acc = {literal(0, ct)}",
            "    for j0 in range(0, n, cuda.blockDim.x):",
            "        j = j0 + t",
            "        if j < n:",
            *_indent(weight, 12),
            "            ps[t] = w",
            "        cuda.syncthreads()",
            "        if e < " + width + ":",
            "            for jj in range(min(cuda.blockDim.x, n - j0)):",
            f"                acc += ps[jj] * {load}",
            "        cuda.syncthreads()",
            "    if e < " + width + ":",
            "        " + store]


def _head(extra: str) -> list[str]:
    return ["@cuda.jit(cache=True)",
            f"def kernel({_operand('q')}, {_operand('k')}, {_operand('v')}, {_operand('b')}, bias, {extra}"
            "lshape, nrows, lq, lk, d, dv, scale, causal, out):"]


def _indent(lines: list[str], by: int = 8) -> list[str]:
    return [" " * by + line for line in lines]


def _query_row_kernel(dtype: np.dtype, bias: bool, extra: str, body: list[str]) -> str:
    """A kernel's source: the score function, the signature (extra parameters before the sizes),
    the block's shared arrays (sh for block sums, ps for a tile's weights) and body run per query row."""
    shared = f"cuda.shared.array({BLOCK}, np.{compute_dtype(dtype).name})"
    lines = [_score_source(dtype, bias)] + _head(extra) + [f"    sh = {shared}", f"    ps = {shared}"]
    return "\n".join(lines + _ROW + _indent(body)) + "\n"


@cache
def _forward_source(dtype: np.dtype, bias: bool) -> str:
    ct = compute_dtype(dtype)
    c = cast(ct)
    v = f"{c}({widen('va[vb + (j0 + jj) * v_rs + e * v_cs]', dtype)})"
    body = _statistics(ct) + _tile_sum([f"w = S.exp({_SCORE.format(j='j')} - m) * inv"], "dv", v,
                                       f"out[row * dv + e] = {narrow('acc', dtype)}", ct)
    return _query_row_kernel(dtype, bias, "", body)


@cache
def _weights_source(dtype: np.dtype, bias: bool) -> str:
    """The weights themselves: a query row's probabilities over every key (0 where it does not
    see one)."""
    ct = compute_dtype(dtype)
    body = _statistics(ct) + ["for j in range(t, lk, cuda.blockDim.x):",
                              f"    w = S.exp({_SCORE.format(j='j')} - m) * inv if j < n else {literal(0, ct)}",
                              f"    out[row * lk + j] = {narrow('w', dtype)}"]
    return _query_row_kernel(dtype, bias, "", body)


@cache
def _query_grads_source(dtype: np.dtype, bias: bool) -> str:
    """dq (and the scores' gradient) of a query row; stats[row] = m, inv, delta for the key side."""
    ct = compute_dtype(dtype)
    c = cast(ct)
    total = combine_source(SUM, ct)
    g = lambda e: f"{c}({widen(f'ga[gb + {e} * g_cs]', dtype)})"  # noqa: E731
    score_grad = ["p = S.exp(" + _SCORE.format(j="j") + " - m) * inv",  # dS_j = p_j (g . v_j - delta)
                  f"dp = {literal(0, ct)}", "for f in range(dv):",
                  f"    dp += {g('f')} * {c}({widen('va[vb + j * v_rs + f * v_cs]', dtype)})", "ds = p * (dp - delta)"]
    body = ["gb = S.element(b, lshape, g_lead, g_off) + i * g_rs",
            "ob = S.element(b, lshape, o_lead, o_off) + i * o_rs", "base = b * packed"]
    body += _statistics(ct)
    body += [f"v = {literal(0, ct)}", "for f in range(t, dv, cuda.blockDim.x):",
             f"    v += {g('f')} * {c}({widen('oa[ob + f * o_cs]', dtype)})"]
    body += block_combine(total, c)
    body += ["delta = sh[0]", "cuda.syncthreads()",
             "if t == 0:", "    stats[3 * row] = m", "    stats[3 * row + 1] = inv", "    stats[3 * row + 2] = delta",
             "if score_grad:",  # every key's entry: zero where the query does not see it
             "    for j in range(t, lk, cuda.blockDim.x):",
             "        if j < n:",
             *_indent(score_grad, 12),
             "        else:",
             f"            ds = {literal(0, ct)}",
             f"        out[base + scores + i * lk + j] = {narrow('ds', dtype)}"]
    k = f"{c}({widen('ka[kb + (j0 + jj) * k_rs + e * k_cs]', dtype)})"
    body += _tile_sum(score_grad + ["w = ds * scale"], "d", k, f"out[base + i * d + e] = {narrow('acc', dtype)}",
                      ct)  # dq = sum_j dS_j k_j * scale
    extra = f"{_operand('g')}, {_operand('o')}, packed, scores, score_grad, stats, "
    return _query_row_kernel(dtype, bias, extra, body)


@cache
def _key_grads_source(dtype: np.dtype, bias: bool) -> str:
    """dk and dv of a key row: sums over the queries that see it, with the query side's statistics."""
    ct = compute_dtype(dtype)
    c = cast(ct)
    body = [
        "b = row // lk",
        "j = row - b * lk",
        "qbase = S.element(b, lshape, q_lead, q_off)",
        "kb = S.element(b, lshape, k_lead, k_off)",
        "vb = S.element(b, lshape, v_lead, v_off)",
        "bbase = S.element(b, lshape, b_lead, b_off)",
        "gbase = S.element(b, lshape, g_lead, g_off)",
        "base = b * packed",
        "first = j if causal else 0",  # the first query that sees key j
        "for e0 in range(0, max(d, dv), cuda.blockDim.x):",
        "    e = e0 + t",
        f"    acc_k = {literal(0, ct)}",
        f"    acc_v = {literal(0, ct)}",
        "    for i0 in range(first, lq, cuda.blockDim.x):",
        "        i = i0 + t",
        "        if i < lq:",
        "            r = b * lq + i",
        "            qb = qbase + i * q_rs",
        "            bb = bbase + i * b_rs",
        "            gb = gbase + i * g_rs",
        "            p = S.exp(" + _SCORE.format(j="j") + " - stats[3 * r]) * stats[3 * r + 1]",
        f"            dp = {literal(0, ct)}",
        "            for f in range(dv):",
        f"                dp += {c}({widen('ga[gb + f * g_cs]', dtype)}) * "
        f"{c}({widen('va[vb + j * v_rs + f * v_cs]', dtype)})",
        "            ps[t] = p",
        "            ds[t] = p * (dp - stats[3 * r + 2]) * scale",
        "        cuda.syncthreads()",
        "        for ii in range(min(cuda.blockDim.x, lq - i0)):",
        "            if e < dv:",
        f"                acc_v += ps[ii] * {c}({widen('ga[gbase + (i0 + ii) * g_rs + e * g_cs]', dtype)})",
        "            if e < d:",
        f"                acc_k += ds[ii] * {c}({widen('qa[qbase + (i0 + ii) * q_rs + e * q_cs]', dtype)})",
        "        cuda.syncthreads()",
        "    if e < d:",
        f"        out[base + lq * d + j * d + e] = {narrow('acc_k', dtype)}",
        "    if e < dv:",
        f"        out[base + lq * d + lk * d + j * dv + e] = {narrow('acc_v', dtype)}"]
    lines = [_score_source(dtype, bias)] + _head(f"{_operand('g')}, packed, stats, ") + [
        f"    ps = cuda.shared.array({BLOCK}, np.{ct.name})", f"    ds = cuda.shared.array({BLOCK}, np.{ct.name})",
        "    t = cuda.threadIdx.x", "    for row in range(cuda.blockIdx.x, nrows, cuda.gridDim.x):"]
    return "\n".join(lines + _indent(body)) + "\n"


# ---- launching ------------------------------------------------------------------------------------
def _lead(shape: tuple) -> tuple:
    """The leading dims, at least one (a 2-d attention has a single batch element)."""
    return tuple(shape[:-2]) or (1,)


def _args(x: DeviceValue) -> tuple:
    """data, offset, leading strides (one 0 where there are none), row stride, column stride."""
    return (x.data, x.offset, tuple(x.strides[:-2]) or (0,), x.strides[-2], x.strides[-1])


def _bias_args(bias, dtype: np.dtype, scores: tuple, q: DeviceValue) -> tuple[tuple, bool]:
    """The bias operand (a broadcast view of the scores' shape) and a number to add (0), or, for a
    bias that is a number, q's arguments in the array's place (never read) and the number."""
    number = compute_dtype(dtype).type
    if isinstance(bias, DeviceValue):
        bias = _same_dtype(bias, dtype)
        return _args(bias.view(scores, broadcast_strides(bias, scores))) + (number(0),), True
    return _args(q) + (number(bias),), False


def _same_dtype(x: DeviceValue, dtype: np.dtype) -> DeviceValue:
    return x if x.dtype == dtype else elementwise.apply(elementwise.copy, [x], dtype)


def _grid(rows: int) -> tuple[int, int]:
    return max(1, min(MAX_BLOCKS, rows)), BLOCK


def attention(q: DeviceValue, k: DeviceValue, v: DeviceValue, bias, scale: float, causal: bool,
              dtype: np.dtype) -> DeviceValue:
    """softmax(q k^T * scale + bias, causal) v, (..., Lq, Dv) of dtype, in one launch."""
    q, k, v = (_same_dtype(x, dtype) for x in (q, k, v))
    lq, lk, d, dv = q.shape[-2], k.shape[-2], q.shape[-1], v.shape[-1]
    lead = _lead(q.shape)
    if lk == 0:  # no keys: the sum over them is empty (as p @ v with p of shape (Lq, 0))
        return fill(tuple(q.shape[:-1]) + (dv,), dtype, 0)
    out = empty(tuple(q.shape[:-1]) + (dv,), dtype)
    rows = math.prod(lead) * lq
    if rows == 0 or dv == 0:
        return out
    bias_args, has_bias = _bias_args(bias, dtype, tuple(q.shape[:-1]) + (lk,), q)
    ct = compute_dtype(dtype)
    launch(compile_source(_forward_source(dtype, has_bias)), *_grid(rows), *_args(q), *_args(k),
           *_args(v), *bias_args, lead, rows, lq, lk, d, dv, ct.type(scale), int(causal), out.data)
    return out


def weights(q: DeviceValue, k: DeviceValue, bias, scale: float, causal: bool, dtype: np.dtype) -> DeviceValue:
    """softmax(q k^T * scale + bias, causal), (..., Lq, Lk) of dtype, in one launch (the forward
    kernel's signature, with k's arguments in v's place: never read)."""
    q, k = (_same_dtype(x, dtype) for x in (q, k))
    lq, lk = q.shape[-2], k.shape[-2]
    out = empty(tuple(q.shape[:-1]) + (lk,), dtype)
    rows = math.prod(_lead(q.shape)) * lq
    if out.size == 0:
        return out
    bias_args, has_bias = _bias_args(bias, dtype, tuple(out.shape), q)
    ct = compute_dtype(dtype)
    launch(compile_source(_weights_source(dtype, has_bias)), *_grid(rows), *_args(q), *_args(k), *_args(k),
           *bias_args, _lead(q.shape), rows, lq, lk, q.shape[-1], lk, ct.type(scale), int(causal), out.data)
    return out


def attention_grads(q: DeviceValue, k: DeviceValue, v: DeviceValue, bias, out: DeviceValue, g: DeviceValue,
                    scale: float, causal: bool, score_grad: bool, dtype: np.dtype) -> DeviceValue:
    """ops/attention.py's packing (..., Lq*D + Lk*D + Lk*Dv [+ Lq*Lk]) of dq, dk, dv and the scores'
    gradient, in two launches."""
    q, k, v, out, g = (_same_dtype(x, dtype) for x in (q, k, v, out, g))
    lq, lk, d, dv = q.shape[-2], k.shape[-2], q.shape[-1], v.shape[-1]
    lead = _lead(q.shape)
    scores = lq * d + lk * d + lk * dv
    packed = scores + (lq * lk if score_grad else 0)
    result_shape = tuple(q.shape[:-2]) + (packed,)
    if lk == 0:  # dq sums over no keys; dk, dv are empty; so is the scores' gradient
        return fill(result_shape, dtype, 0)
    result = empty(result_shape, dtype)
    batch = math.prod(lead)
    if result.size == 0:
        return result
    bias_args, has_bias = _bias_args(bias, dtype, tuple(q.shape[:-1]) + (lk,), q)
    ct = compute_dtype(dtype)
    stats = empty((max(1, batch * lq) * 3,), ct)
    operands = (*_args(q), *_args(k), *_args(v), *bias_args, *_args(g))
    sizes = (lq, lk, d, dv, ct.type(scale), int(causal), result.data)
    if batch * lq:  # (with no queries the key side alone writes dk = dv = 0)
        launch(compile_source(_query_grads_source(dtype, has_bias)), *_grid(batch * lq), *operands, *_args(out),
               packed, scores, int(score_grad), stats.data, lead, batch * lq, *sizes)
    launch(compile_source(_key_grads_source(dtype, has_bias)), *_grid(batch * lk), *operands, packed, stats.data,
           lead, batch * lk, *sizes)
    return result


def ptx_cases():
    """The four kernels for every float dtype, with and without a bias array (two leading dims)."""
    i64 = scalar_type(INDEX)
    for dt in FLOATS:
        ct = compute_dtype(dt)
        operand = (array_type(dt), i64, tuple_type(2), i64, i64)
        head = operand * 4 + (scalar_type(ct),)
        tail = (tuple_type(2),) + (i64,) * 5 + (scalar_type(ct), i64, array_type(dt))
        for bias in (False, True):
            label = f"[{dt.name}{', bias' if bias else ''}]"
            yield f"attention{label}", compile_source(_forward_source(dt, bias)), head + tail
            yield f"attention weights{label}", compile_source(_weights_source(dt, bias)), head + tail
            yield (f"attention query grads{label}", compile_source(_query_grads_source(dt, bias)),
                   head + operand * 2 + (i64, i64, i64, array_type(ct)) + tail)
            yield (f"attention key grads{label}", compile_source(_key_grads_source(dt, bias)),
                   head + operand + (i64, array_type(ct)) + tail)
