"""Reductions over any set of axes, and the softmax family.

The input is viewed as rows (the kept axes) by columns (the reduced axes), both through strides,
so no transpose is ever copied. Each block takes a row (grid-stride over rows); its threads stride
over the columns accumulating in registers (several elements per thread), then combine in a
shared-memory tree. Many short rows take a warp each instead, and a reduction whose kept elements
are contiguous (axis 0 of a matrix: a bias gradient) puts a block's threads along them, so that
each load of the block is one coalesced row segment. A few long rows split across blocks, and a second pass combines the partial
results (two passes, as CUB's device reduction). On a GPU the last 32 partial results combine with warp shuffles; the
simulator has no warp operations, so there the tree runs to the end in shared memory.
"""
from __future__ import annotations

import math
import operator
from functools import cache
from typing import Callable, NamedTuple

import numpy as np

from ... import dtypes
from ...ops import scalar
from ..buffer import DeviceValue, contiguous_strides, empty
from ..runtime import BLOCK, MAX_BLOCKS, SIMULATOR, launch
from .common import (INDEX, array_type, cast, compile_source, compute_dtype, literal, narrow, scalar_type,
                     tuple_type, widen)
from .elementwise import CUDA

class Monoid(NamedTuple):
    """A reduction: its identity, and how two partial results combine (a scalar expression, as an
    elementwise primitive's). logical: elements count as their truth (all, any)."""
    name: str
    identity: float
    combine: Callable
    logical: bool = False


SUM = Monoid("sum", 0, operator.add)
PROD = Monoid("prod", 1, operator.mul)
MAX = Monoid("max", -math.inf, scalar.maximum)
MIN = Monoid("min", math.inf, scalar.minimum)
ALL = Monoid("all", 1, operator.and_, logical=True)
ANY = Monoid("any", 0, operator.or_, logical=True)
MONOIDS = (SUM, PROD, MAX, MIN, ALL, ANY)


def accumulator_dtype(monoid: Monoid, out_dtype: np.dtype) -> np.dtype:
    """A type warp shuffles take (32- and 64-bit signed integers and floats) that holds every
    partial result: int32 for truths, 64-bit for integers of 4 bytes or more."""
    if monoid.logical:
        return np.dtype(np.int32)
    if out_dtype.kind in "biu":
        return np.dtype(np.int64 if out_dtype.itemsize >= 4 else np.int32)
    return compute_dtype(out_dtype)


def _identity(monoid: Monoid, acc: np.dtype) -> str:
    value = monoid.identity
    if math.isinf(value) and acc.kind != "f":
        info = np.iinfo(acc)
        value = info.min if value < 0 else info.max
    return literal(value, acc)


def combine_source(monoid: Monoid, acc: np.dtype) -> str:
    """The combine expression over {a} and {b}, for str.format."""
    expr = scalar.evaluate(monoid.combine, [scalar.operand("{a}", acc), scalar.operand("{b}", acc)], {})
    return CUDA.render(expr, acc)


def block_combine(combine: str, acc: str) -> list[str]:
    """Source (unindented) combining `v` across the block into sh[0]. Warp shuffles move 32- and
    64-bit words, so complex accumulators combine in shared memory down to the last pair."""
    lines = ["sh[t] = v", "cuda.syncthreads()"]
    shuffles = not SIMULATOR and "complex" not in acc
    stop = 32 if shuffles else 1
    lines += [f"s = {BLOCK // 2}", f"while s >= {stop}:", "    if t < s:",
              f"        sh[t] = {combine.format(a='sh[t]', b='sh[t + s]')}", "    cuda.syncthreads()",
              "    s //= 2"]
    if shuffles:  # the last warp: shuffles, no shared memory, no barriers
        # Every lane of the mask must reach the shuffle: it is taken once, before the combine,
        # whose conditional expression (max, min) would run a second one in some lanes only.
        lines += ["if t < 32:", "    v = sh[t]", "    w = 16", "    while w >= 1:",
                  f"        other = {acc}(cuda.shfl_down_sync(0xFFFFFFFF, v, w))",
                  f"        v = {combine.format(a='v', b='other')}",
                  "        w //= 2", "    if t == 0:", "        sh[0] = v", "cuda.syncthreads()"]
    return lines


_ROW_LOOP = ["    t = cuda.threadIdx.x",
             "    for row in range(cuda.blockIdx.x, nrows, cuda.gridDim.x):",
             "        base = S.element(row, kshape, kstrides, x_off)"]


def _indent(lines: list[str], by: int = 4) -> list[str]:
    return [" " * by + line for line in lines]


# Short rows: a group of ROW_THREADS threads (a warp) per row. Axis-0 style reductions (the kept
# axis contiguous, a bias gradient): COLUMN_BLOCK threads, x along kept elements (coalesced), y
# along the reduced ones. The simulator's blocks are tiny.
ROW_THREADS = 4 if SIMULATOR else 32
SHORT_COLUMNS = 8 * ROW_THREADS
COLUMN_BLOCK = (4, 2) if SIMULATOR else (32, 8)


@cache
def _reduce_source(monoid: Monoid, dtype: np.dtype, out_dtype: np.dtype, layout: str = "rows") -> str:
    """layout 'rows': a block per (row, split); 'warps': ROW_THREADS threads per row; 'columns': a
    block per (tile of COLUMN_BLOCK[0] rows, split). A split s of a row reduces its columns
    [s * chunk, (s + 1) * chunk) into out[row * splits + s]."""
    acc = accumulator_dtype(monoid, out_dtype)
    combine = combine_source(monoid, acc)
    value = widen("x[S.element(j, rshape, rstrides, base)]", dtype)
    if monoid.logical:
        value = f"np.int32({value} != 0)"
    fold = f"    v = {combine.format(a='v', b=f'{cast(acc)}({value})')}"
    head = ["@cuda.jit(cache=True)",
            "def kernel(x, x_off, kshape, kstrides, rshape, rstrides, nrows, ncols, out, splits, chunk):"]
    if layout == "warps":
        g = ROW_THREADS
        body = [f"v = {_identity(monoid, acc)}", "if row < nrows:",
                "    base = S.element(row, kshape, kstrides, x_off)",
                f"    for j in range(lane, ncols, {g}):", "    " + fold,
                "sh[t] = v", "cuda.syncthreads()", f"s = {g // 2}", "while s >= 1:", "    if lane < s:",
                f"        sh[t] = {combine.format(a='sh[t]', b='sh[t + s]')}", "    cuda.syncthreads()", "    s //= 2",
                "if lane == 0 and row < nrows:", f"    out[row] = {narrow('sh[t]', out_dtype)}", "cuda.syncthreads()"]
        lines = head + [f"    sh = cuda.shared.array({BLOCK}, np.{acc.name})", "    t = cuda.threadIdx.x",
                        f"    lane = t % {g}", f"    for first in range(cuda.blockIdx.x * {BLOCK // g}, nrows, "
                        f"cuda.gridDim.x * {BLOCK // g}):", f"        row = first + t // {g}", *_indent(body, 8)]
    elif layout == "columns":
        cx, cy = COLUMN_BLOCK
        body = ["tile = piece // splits", "row = tile * {cx} + tx".format(cx=cx), "start = (piece - tile * splits) * chunk",
                "stop = min(ncols, start + chunk)", f"v = {_identity(monoid, acc)}", "if row < nrows:",
                "    base = S.element(row, kshape, kstrides, x_off)", f"    for j in range(start + ty, stop, {cy}):",
                "    " + fold, "sh[ty, tx] = v", "cuda.syncthreads()", "if ty == 0 and row < nrows:",
                f"    for q in range(1, {cy}):", f"        v = {combine.format(a='v', b='sh[q, tx]')}",
                f"    out[row * splits + piece - tile * splits] = {narrow('v', out_dtype)}", "cuda.syncthreads()"]
        lines = head + [f"    sh = cuda.shared.array(({cy}, {cx}), np.{acc.name})", "    tx = cuda.threadIdx.x",
                        "    ty = cuda.threadIdx.y",
                        f"    for piece in range(cuda.blockIdx.x, (nrows + {cx - 1}) // {cx} * splits, cuda.gridDim.x):",
                        *_indent(body, 8)]
    else:
        body = [f"v = {_identity(monoid, acc)}", "for j in range(start + t, stop, cuda.blockDim.x):", fold]
        body += block_combine(combine, cast(acc))
        body += ["if t == 0:", f"    out[piece] = {narrow('sh[0]', out_dtype)}", "cuda.syncthreads()"]
        lines = head + [f"    sh = cuda.shared.array({BLOCK}, np.{acc.name})", "    t = cuda.threadIdx.x",
                        "    for piece in range(cuda.blockIdx.x, nrows * splits, cuda.gridDim.x):",
                        "        row = piece // splits", "        start = (piece - row * splits) * chunk",
                        "        stop = min(ncols, start + chunk)", "        base = S.element(row, kshape, kstrides, x_off)",
                        *_indent(body, 8)]
    return "\n".join(lines) + "\n"


def _layout(kshape: tuple, kstrides: tuple, nrows: int, ncols: int) -> str:
    """'columns' when the kept elements are contiguous (their innermost stride is 1: reducing axis 0
    of a matrix), 'warps' for many short rows, else 'rows'."""
    if kstrides[-1] == 1 and kshape[-1] > 1:
        return "columns"
    return "warps" if ncols <= SHORT_COLUMNS and nrows > 1 else "rows"


def rows_and_columns(shape: tuple, strides: tuple, axes: tuple) -> tuple:
    """(kept shape, kept strides, reduced shape, reduced strides), each at least rank 1."""
    kept = [d for d in range(len(shape)) if d not in axes]
    kshape = tuple(shape[d] for d in kept) or (1,)
    kstrides = tuple(strides[d] for d in kept) or (0,)
    rshape = tuple(shape[d] for d in axes) or (1,)
    rstrides = tuple(strides[d] for d in axes) or (0,)
    return kshape, kstrides, rshape, rstrides


def _grid(nrows: int) -> tuple[int, int]:
    return max(1, min(MAX_BLOCKS, nrows)), BLOCK


SPLIT_BLOCKS = 256  # below this many rows a reduction splits its rows, so every SM gets blocks
SPLIT_COLUMNS = 8 * BLOCK  # the fewest columns per split: each thread accumulates several


def _splits(nrows: int, ncols: int) -> tuple[int, int]:
    """(splits, chunk): a few long rows (a full sum, a loss, a global norm) become rows * splits
    blocks, whose partial results a second pass combines (the two-pass reduction)."""
    if nrows >= SPLIT_BLOCKS or ncols < 2 * SPLIT_COLUMNS:
        return 1, max(ncols, 1)
    splits = min(-(-SPLIT_BLOCKS // nrows), ncols // SPLIT_COLUMNS)
    chunk = -(-ncols // splits)
    return -(-ncols // chunk), chunk


def reduce(monoid: Monoid, x: DeviceValue, axes: tuple, out_shape: tuple, out_dtype: np.dtype) -> DeviceValue:
    out = empty(out_shape, out_dtype)
    kshape, kstrides, rshape, rstrides = rows_and_columns(x.shape, x.strides, axes)
    nrows = math.prod(kshape)
    ncols = math.prod(rshape)
    if nrows == 0 or out.size == 0:
        return out
    layout = _layout(kshape, kstrides, nrows, ncols)
    pieces = -(-nrows // COLUMN_BLOCK[0]) if layout == "columns" else nrows
    splits, chunk = _splits(pieces, ncols) if layout != "warps" else (1, max(ncols, 1))
    partial = out if splits == 1 else empty((nrows, splits), accumulator_dtype(monoid, np.dtype(out_dtype)))
    kernel = compile_source(_reduce_source(monoid, x.dtype, partial.dtype, layout))
    grid = {"columns": (min(MAX_BLOCKS, pieces * splits), COLUMN_BLOCK),
            "warps": (min(MAX_BLOCKS, -(-nrows // (BLOCK // ROW_THREADS))), BLOCK)}.get(layout, _grid(nrows * splits))
    launch(kernel, *grid, x.data, x.offset, kshape, kstrides, rshape, rstrides, nrows, ncols, partial.data, splits,
           chunk)
    if splits == 1:
        return out
    return reduce(monoid, partial, (1,), out_shape, out_dtype)  # the second pass: a row of partials each


# ---- argmax / argmin: (value, index) pairs; the first of equal values wins, NaN beats everything --
@cache
def _arg_source(op: str, dtype: np.dtype) -> str:
    ct = compute_dtype(dtype)
    wins = ">" if op == "argmax" else "<"
    better = (f"((av != av and (bv == bv or ai < bi)) or (bv == bv and (av {wins} bv or (av == bv and ai < bi))))"
              if ct.kind == "f" else f"(av {wins} bv or (av == bv and ai < bi))")
    lines = ["@cuda.jit(device=True)", "def better(av, ai, bv, bi):", f"    return {better}", "",
             "@cuda.jit(cache=True)",
             "def kernel(x, x_off, kshape, kstrides, rshape, rstrides, nrows, ncols, out):",
             f"    shv = cuda.shared.array({BLOCK}, np.{ct.name})",
             f"    shi = cuda.shared.array({BLOCK}, np.int64)", *_ROW_LOOP,
             "        v = " + cast(ct) + "(" + widen("x[S.element(0, rshape, rstrides, base)]", dtype) + ")",
             "        vi = np.int64(0)",
             "        for j in range(t, ncols, cuda.blockDim.x):",
             "            c = " + cast(ct) + "(" + widen("x[S.element(j, rshape, rstrides, base)]", dtype) + ")",
             "            if better(c, j, v, vi) or j == t:",
             "                v = c",
             "                vi = j",
             "        shv[t] = v",
             "        shi[t] = vi if t < ncols else ncols",
             "        cuda.syncthreads()",
             f"        s = {BLOCK // 2}",
             "        while s >= 1:",
             "            if t < s and shi[t + s] < ncols and (shi[t] >= ncols or better(shv[t + s], shi[t + s], shv[t], shi[t])):",
             "                shv[t] = shv[t + s]",
             "                shi[t] = shi[t + s]",
             "            cuda.syncthreads()",
             "            s //= 2",
             "        if t == 0:",
             "            out[row] = shi[0]",
             "        cuda.syncthreads()"]
    return "\n".join(lines) + "\n"


def arg_reduce(op: str, x: DeviceValue, axis: int, out_shape: tuple) -> DeviceValue:
    out = empty(out_shape, np.int64)
    if x.shape[axis] == 0:
        raise ValueError(f"attempt to get {op} of an empty sequence")
    kshape, kstrides, rshape, rstrides = rows_and_columns(x.shape, x.strides, (axis,))
    nrows = math.prod(kshape)
    if out.size == 0:
        return out
    kernel = compile_source(_arg_source(op, x.dtype))
    launch(kernel, *_grid(nrows), x.data, x.offset, kshape, kstrides, rshape, rstrides, nrows, x.shape[axis], out.data)
    return out


# ---- the softmax family: max, then sum of exp, then each element, one block per row ------------
def softmax_statistics(value: str, count: str, ct: np.dtype, infinite: bool = True) -> list[str]:
    """Source (in a block's row loop, `t` its thread) leaving the shift m of the row's values
    (`value`, an expression of j, for j < count: their maximum, 0 where that is infinite, or with
    infinite False only where it is -inf: ops/reductions.py's _stable_max rules, so an all -inf row
    gives 0 / 0 = NaN as NumPy's softmax) and total, the sum of exp(value - m)."""
    c, big = cast(ct), combine_source(MAX, ct)
    lines = [f"v = {literal(-np.inf, ct)}", f"for j in range(t, {count}, cuda.blockDim.x):",
             f"    v = {big.format(a='v', b=value)}"]
    lines += block_combine(big, c)
    test = "not S.isfinite(m)" if infinite else f"m == {literal(-np.inf, ct)}"
    lines += ["m = sh[0]", f"if {test}:", f"    m = {literal(0, ct)}", "cuda.syncthreads()",
              f"v = {literal(0, ct)}", f"for j in range(t, {count}, cuda.blockDim.x):", f"    v += S.exp({value} - m)"]
    lines += block_combine(combine_source(SUM, ct), c)
    return lines + ["total = sh[0]", "cuda.syncthreads()"]


@cache
def _softmax_source(mode: str, dtype: np.dtype) -> str:
    """mode: 'softmax', 'log_softmax' (write every element) or 'logsumexp' (one per row)."""
    ct = compute_dtype(dtype)
    c = cast(ct)
    load = f"{c}(" + widen("x[S.element(j, rshape, rstrides, base)]", dtype) + ")"
    lines = ["@cuda.jit(cache=True)",
             "def kernel(x, x_off, kshape, kstrides, rshape, rstrides, nrows, ncols, out, o_kstrides, o_rstrides):",
             f"    sh = cuda.shared.array({BLOCK}, np.{ct.name})", *_ROW_LOOP]
    body = softmax_statistics(load, "ncols", ct, infinite=mode == "logsumexp")
    if mode == "logsumexp":
        body += ["if t == 0:", "    out[S.element(row, kshape, o_kstrides, 0)] = " + narrow("S.log(total) + m", dtype)]
    else:
        expr = "S.exp(xv - m) / total" if mode == "softmax" else "xv - m - S.log(total)"
        body += ["ob = S.element(row, kshape, o_kstrides, 0)", "for j in range(t, ncols, cuda.blockDim.x):",
                 f"    xv = {load}", "    out[S.element(j, rshape, o_rstrides, ob)] = " + narrow(expr, dtype)]
    return "\n".join(lines + _indent(body, 8)) + "\n"


def softmax_family(mode: str, x: DeviceValue, axes: tuple, out_shape: tuple) -> DeviceValue:
    out = empty(out_shape, x.dtype)
    kshape, kstrides, rshape, rstrides = rows_and_columns(x.shape, x.strides, axes)
    if mode == "logsumexp":
        o_kstrides = contiguous_strides(kshape)
        o_rstrides = (0,) * len(rshape)
    else:
        _, o_kstrides, _, o_rstrides = rows_and_columns(x.shape, contiguous_strides(x.shape), axes)
    nrows = math.prod(kshape)
    ncols = math.prod(rshape)
    if out.size == 0 or nrows == 0:
        return out
    kernel = compile_source(_softmax_source(mode, x.dtype))
    launch(kernel, *_grid(nrows), x.data, x.offset, kshape, kstrides, rshape, rstrides, nrows, ncols, out.data,
           o_kstrides, o_rstrides)
    return out


# ---- layer / RMS normalisation over the last axis: a block per row, as the softmax rows --------
@cache
def _norm_source(dtype: np.dtype, center: bool, g_dtype: np.dtype | None = None) -> str:
    """out = (x - mean) * rstd per row (mean 0 uncentred; rstd = 1 / sqrt(biased variance + eps)),
    or with g_dtype the backward pass, out = rstd * (g - mean(g) - xhat * mean(g * xhat)), which
    recomputes the row's statistics: cpu/norm_kernels.py's formulas, in the compute dtype."""
    out_dtype = dtype if g_dtype is None else np.result_type(dtype, g_dtype)
    ct = compute_dtype(out_dtype)
    c, total = cast(ct), combine_source(SUM, ct)
    x = f"{c}(" + widen("x[S.element(j, rshape, rstrides, base)]", dtype) + ")"
    grad = g_dtype is not None
    g = f"{c}(" + widen("g[S.element(j, rshape, g_rstrides, gbase)]", g_dtype) + ")" if grad else ""

    def row_sum(term: str, name: str) -> list[str]:
        """name = the mean over the row of term (of xv, x's element, and gv, g's)."""
        return ([f"v = {literal(0, ct)}", "for j in range(t, ncols, cuda.blockDim.x):", f"    xv = {x}"] +
                ([f"    gv = {g}"] if "gv" in term else []) + [f"    v += {term}"] +
                block_combine(total, c) + [f"{name} = sh[0] / {c}(ncols)", "cuda.syncthreads()"])
    body = ["gbase = S.element(row, kshape, g_kstrides, g_off)"] if grad else []
    body += row_sum("xv", "mean") if center else [f"mean = {literal(0, ct)}"]
    body += row_sum("(xv - mean) * (xv - mean)", "var") + [f"rstd = {literal(1, ct)} / S.sqrt(var + eps)"]
    if grad:
        body += row_sum("gv * (xv - mean) * rstd", "projection")
        body += row_sum("gv", "g_mean") if center else [f"g_mean = {literal(0, ct)}"]
    value = "rstd * (gv - g_mean - (xv - mean) * rstd * projection)" if grad else "(xv - mean) * rstd"
    body += ["ob = S.element(row, kshape, o_kstrides, 0)", "for j in range(t, ncols, cuda.blockDim.x):",
             f"    xv = {x}", *([f"    gv = {g}"] if grad else []),
             f"    out[S.element(j, rshape, o_rstrides, ob)] = {narrow(value, out_dtype)}"]
    g_args = "g, g_off, g_kstrides, g_rstrides, " if grad else ""
    lines = ["@cuda.jit(cache=True)",
             f"def kernel(x, x_off, kshape, kstrides, rshape, rstrides, nrows, ncols, {g_args}out, o_kstrides, "
             "o_rstrides, eps):", f"    sh = cuda.shared.array({BLOCK}, np.{ct.name})", *_ROW_LOOP]
    return "\n".join(lines + _indent(body, 8)) + "\n"


def norm(x: DeviceValue, eps: float, center: bool, g: DeviceValue | None = None) -> DeviceValue:
    """Layer (center) or RMS normalisation of x's last axis in one launch; with g, its backward
    pass applied to the cotangent g (of x's shape)."""
    out_dtype = x.dtype if g is None else np.result_type(x.dtype, g.dtype)
    out = empty(x.shape, out_dtype)
    if out.size == 0:
        return out
    axes = (x.ndim - 1,)
    kshape, kstrides, rshape, rstrides = rows_and_columns(x.shape, x.strides, axes)
    _, o_kstrides, _, o_rstrides = rows_and_columns(x.shape, contiguous_strides(x.shape), axes)
    nrows = math.prod(kshape)
    g_args = () if g is None else (g.data, g.offset, *rows_and_columns(g.shape, g.strides, axes)[1::2])
    kernel = compile_source(_norm_source(x.dtype, center, None if g is None else g.dtype))
    launch(kernel, *_grid(nrows), x.data, x.offset, kshape, kstrides, rshape, rstrides, nrows, x.shape[-1],
           *g_args, out.data, o_kstrides, o_rstrides, compute_dtype(out_dtype).type(eps))
    return out


def ptx_cases():
    """(name, kernel, argument types) for every reduction kernel and dtype it supports."""
    floats = [dtypes.float32, dtypes.float64, dtypes.float16, dtypes.bfloat16]
    ints = [dtypes.int32, dtypes.int64, dtypes.uint8, dtypes.bool_]
    t1 = tuple_type(1)

    def head(dt):  # x, x_off, kshape, kstrides, rshape, rstrides, nrows, ncols
        return (array_type(dt), scalar_type(INDEX), t1, t1, tuple_type(2), tuple_type(2),
                scalar_type(INDEX), scalar_type(INDEX))
    for monoid in MONOIDS:
        for dt in floats + ints + ([dtypes.complex64, dtypes.complex128] if monoid in (SUM, PROD) else []):
            out_dt = np.dtype(np.bool_) if monoid.logical else (
                np.dtype(np.int64) if dt.kind in "biu" and monoid in (SUM, PROD) else dt)
            for layout in ("rows", "warps", "columns"):
                yield (f"{monoid.name}[{dt.name}{'' if layout == 'rows' else ', ' + layout}]",
                       compile_source(_reduce_source(monoid, dt, out_dt, layout)),
                       head(dt) + (array_type(out_dt), scalar_type(INDEX), scalar_type(INDEX)))
            acc = accumulator_dtype(monoid, out_dt)
            if acc != out_dt:  # a split reduction: partial results at the accumulator's type, combined
                for src, dst in ((dt, acc), (acc, out_dt)):
                    yield (f"{monoid.name}[{src.name} -> {dst.name}, split]",
                           compile_source(_reduce_source(monoid, src, dst)),
                           head(src) + (array_type(dst), scalar_type(INDEX), scalar_type(INDEX)))
    for op in ("argmax", "argmin"):
        for dt in floats + ints[:3]:
            yield f"{op}[{dt.name}]", compile_source(_arg_source(op, dt)), head(dt) + (array_type(INDEX),)
    for mode in ("softmax", "log_softmax", "logsumexp"):
        for dt in floats:
            yield (f"{mode}[{dt.name}]", compile_source(_softmax_source(mode, dt)),
                   head(dt) + (array_type(dt), t1, tuple_type(2)))
    for dt in floats:
        tail = (t1, tuple_type(2), scalar_type(compute_dtype(dt)))
        for center in (True, False):
            name = "layer_norm" if center else "rms_norm"
            yield f"{name}[{dt.name}]", compile_source(_norm_source(dt, center)), head(dt) + (array_type(dt),) + tail
            yield (f"{name} grad[{dt.name}]", compile_source(_norm_source(dt, center, dt)),
                   head(dt) + (array_type(dt), scalar_type(INDEX), t1, tuple_type(2), array_type(dt)) + tail)
