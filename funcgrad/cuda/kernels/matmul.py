"""Batched matmul of the design that reaches most of cuBLAS in published CUDA work, for any strides
and every shape.

A block of 256 threads computes a 128 x 128 tile of the output; each thread an 8 x 8 patch of it in
registers, so every value read from shared memory feeds eight multiply-adds. The patch is
interleaved (rows trow + 16 i, columns tcol + 16 j): a warp's reads of a shared-memory row hit 16
consecutive words, free of bank conflicts, and its stores to the output are coalesced. Tiles of A
and B (128 x 8, 8 x 128) are staged in shared memory, padded by a word per row against conflicts
on the transposing stores, and double buffered: the next tile is read from global memory into
registers while the current one is multiplied, so one barrier per step along K suffices. Each
operand is loaded along its contiguous stride (a row-major A along K, the `W.T` every Linear passes
along its rows): a kernel is generated for each of the four layouts. Elements past the edges read as zero,
so sizes need not be multiples of the tile; batch dimensions broadcast through strides. Half
precision operands are widened to float32 and the result rounded once (float32 accumulation); an
autocast `precision` rounds float32 operands to that dtype first. Accumulators wider than 4 bytes
(float64, int64, complex) take 64 x 64 tiles with 4 x 4 patches: their 8 x 8 patches need more
than the 255 registers a thread may have. Each step along K is unrolled over the patch in the source
and reads shared memory at constant offsets from two per-thread bases, indexed unsigned (numba wraps
a signed index around: a compare and a select per read): a float32 step is 64 multiply-adds, 16
shared loads and about 10 integer instructions, where indexing the patch's arrays took about 90
64-bit ones (numba widens integer operations to 64 bits, which the global loads' index arithmetic
still is). `python -m funcgrad.cuda.ptx --resources` reports registers and shared memory.
"""
from __future__ import annotations

import math
from functools import cache

import numpy as np

from ... import dtypes
from ...ops.layout import broadcast_shapes
from ..buffer import DeviceValue, empty
from ..runtime import MAX_GRID, SIMULATOR, launch
from .copy import fill
from .common import (INDEX, array_type, cast, compile_source, compute_dtype, narrow, round_to, scalar_type,
                     tuple_type, widen)

# Tile shape: (BM, BN, BK, RM, RN). The simulator runs a Python thread per GPU thread: tiny tiles there.
GPU_TILE = (128, 128, 8, 8, 8)
GPU_WIDE_TILE = (64, 64, 8, 4, 4)  # for 16-byte accumulators
SIM_TILE = (4, 4, 4, 2, 2)
PAD = 1  # words added to each shared-memory row


def tile_for(acc: np.dtype) -> tuple:
    if SIMULATOR:
        return SIM_TILE
    return GPU_WIDE_TILE if np.dtype(acc).itemsize > 4 else GPU_TILE


def _accumulator(a_dtype: np.dtype, b_dtype: np.dtype, precision: np.dtype | None) -> np.dtype:
    return np.dtype(np.float32) if precision is not None else compute_dtype(np.result_type(a_dtype, b_dtype))


def _loads(name: str, rows: int, cols: int, threads: int, along_rows: bool) -> list[str]:
    """Source placing thread tid's loads in a rows x cols tile: its q-th element is at row
    {name}r + q * {name}dr, column {name}c + q * {name}dc. Consecutive threads take consecutive
    columns when along_rows (the operand's column stride is 1), else consecutive rows; the block's
    threads are a multiple of the tile's columns and of its rows."""
    if along_rows:
        return [f"    {name}r, {name}c = tid // {cols}, tid % {cols}", f"    {name}dr, {name}dc = {threads // cols}, 0"]
    return [f"    {name}r, {name}c = tid % {rows}, tid // {rows}", f"    {name}dr, {name}dc = 0, {threads // rows}"]


@cache
def _source(a_dtype: np.dtype, b_dtype: np.dtype, out_dtype: np.dtype, precision: np.dtype | None,
            a_along_k: bool = True, b_along_n: bool = True) -> str:
    """The kernel for these dtypes, loading A along K (its rows contiguous) or along M, and B along
    N or along K (the transposed weight of a Linear)."""
    acc = _accumulator(a_dtype, b_dtype, precision)
    bm, bn, bk, rm, rn = tile_for(acc)
    tx, ty = bn // rn, bm // rm
    threads = tx * ty
    la, lb = bm * bk // threads, bk * bn // threads
    zero = f"{cast(acc)}(0)"

    def load(name, dtype, index):
        return round_to(f"{cast(acc)}({widen(f'{name}[{index}]', dtype)})", precision)

    def fetch(k0: str) -> list[str]:
        """Global tile at k0 into the registers ga*, gb* (zero past the edges)."""
        lines = []
        for q in range(la):
            r, c = f"m0 + ar + {q} * adr", f"{k0} + ac + {q} * adc"
            lines += [f"ga{q} = {zero}", f"if {r} < m and {c} < k:",
                      f"    ga{q} = {load('a', a_dtype, f'a_base + ({r}) * a_sm + ({c}) * a_sk')}"]
        for q in range(lb):
            r, c = f"{k0} + br + {q} * bdr", f"n0 + bc + {q} * bdc"
            lines += [f"gb{q} = {zero}", f"if {r} < k and {c} < n:",
                      f"    gb{q} = {load('b', b_dtype, f'b_base + ({r}) * b_sk + ({c}) * b_sn')}"]
        return lines

    sa, sb = bm + PAD, bn + PAD  # shared rows: As[buffer][kk][row of A], Bs[buffer][kk][column of B]

    def stash(buf: str) -> list[str]:
        return [f"As[({buf}) * {bk * sa} + (ac + {q} * adc) * {sa} + ar + {q} * adr] = ga{q}" for q in range(la)] + \
               [f"Bs[({buf}) * {bk * sb} + (br + {q} * bdr) * {sb} + bc + {q} * bdc] = gb{q}" for q in range(lb)]

    def multiply() -> list[str]:
        """One step along K with the patch unrolled: every shared-memory read at a constant offset
        from pa or pb, so no index arithmetic runs between the multiply-adds."""
        return ([f"ra{i} = As[pa + np.uint64({i * ty})]" for i in range(rm)] +
                [f"rb{j} = Bs[pb + np.uint64({j * tx})]" for j in range(rn)] +
                [f"c{i}_{j} += ra{i} * rb{j}" for i in range(rm) for j in range(rn)] +
                [f"pa += np.uint64({sa})", f"pb += np.uint64({sb})"])

    def store() -> list[str]:
        lines = []
        for i in range(rm):
            lines += [f"row = m0 + trow + {i * ty}", "if row < m:"]
            for j in range(rn):
                lines += [f"    col = n0 + tcol + {j * tx}", "    if col < n:",
                          f"        out[out_base + row * n + col] = {narrow(f'c{i}_{j}', out_dtype)}"]
        return lines

    def indent(lines, by):
        return [" " * by + line for line in lines]

    body = [
        "@cuda.jit(cache=True)",
        "def kernel(a, a_off, a_bst, a_sm, a_sk, b, b_off, b_bst, b_sk, b_sn, out, bshape, m, n, k, tiles_m, tiles_n, tiles):",
        f"    As = cuda.shared.array({2 * bk * sa}, np.{acc.name})",
        f"    Bs = cuda.shared.array({2 * bk * sb}, np.{acc.name})",
        "    tcol = cuda.threadIdx.x",
        "    trow = cuda.threadIdx.y",
        f"    tid = trow * {tx} + tcol",
        *_loads("a", bm, bk, threads, a_along_k),
        *_loads("b", bk, bn, threads, b_along_n),
        "    for t in range(cuda.blockIdx.x, tiles, cuda.gridDim.x):",
        f"        n0 = (t % tiles_n) * {bn}",
        f"        m0 = (t // tiles_n % tiles_m) * {bm}",
        "        batch = t // tiles_n // tiles_m",
        "        a_base = S.element(batch, bshape, a_bst, a_off)",
        "        b_base = S.element(batch, bshape, b_bst, b_off)",
        *indent([f"c{i}_{j} = {zero}" for i in range(rm) for j in range(rn)], 8),
        *indent(fetch("0"), 8),
        *indent(stash("0"), 8),
        "        cuda.syncthreads()",
        f"        for k0 in range(0, k, {bk}):",
        f"            cur = (k0 // {bk}) % 2",
        f"            more = k0 + {bk} < k",
        "            if more:",
        *indent(fetch(f"k0 + {bk}"), 16),
        f"            pa = np.uint64(cur * {bk * sa} + trow)",  # unsigned: no negative-index wraparound
        f"            pb = np.uint64(cur * {bk * sb} + tcol)",
        f"            for kk in range({bk}):",
        *indent(multiply(), 16),
        "            if more:",
        *indent(stash("1 - cur"), 16),
        "            cuda.syncthreads()",
        "        out_base = batch * m * n",
        *indent(store(), 8),
    ]
    return "\n".join(body) + "\n"


def matmul(a: DeviceValue, b: DeviceValue, out_dtype: np.dtype, precision: np.dtype | None = None) -> DeviceValue:
    """a @ b for rank >= 2 operands with broadcastable batch dimensions (NumPy's matmul)."""
    m, k = a.shape[-2:]
    k2, n = b.shape[-2:]
    if k != k2:
        raise ValueError(f"matmul: the contracted dimensions differ: {a.shape} @ {b.shape}")
    bshape = broadcast_shapes(a.shape[:-2], b.shape[:-2])
    out = empty(bshape + (m, n), out_dtype)
    batch = math.prod(bshape)
    if out.size == 0:
        return out
    if k == 0:
        return fill(out.shape, out.dtype, 0)

    def batch_strides(x):
        lead = len(bshape) - (x.ndim - 2)
        st = (0,) * lead + tuple(0 if d == 1 else s for s, d in zip(x.strides[:-2], x.shape[:-2]))
        return st or (0,)

    precision = precision and np.dtype(precision)
    kernel = compile_source(_source(a.dtype, b.dtype, np.dtype(out_dtype), precision, a.strides[-1] == 1 or a.shape[-1] == 1,
                                    b.strides[-1] == 1 or b.shape[-1] == 1))
    grid, block, tiles = launch_config(m, n, batch, tile_for(_accumulator(a.dtype, b.dtype, precision)))
    launch(kernel, grid, block, a.data, a.offset, batch_strides(a), a.strides[-2], a.strides[-1],
           b.data, b.offset, batch_strides(b), b.strides[-2], b.strides[-1],
           out.data, bshape or (1,), m, n, k, *tiles)
    return out


def launch_config(m: int, n: int, batch: int, tile: tuple) -> tuple[int, tuple[int, int], tuple]:
    """(blocks, threads per block, (row tiles, column tiles, all tiles)): the output tiles of every
    batch element in one grid dimension (x allows 2**31 - 1 blocks; y and z only 65535, too few for
    the rows of a large convolution's matmul or a batch of 70,000), each block looping over tiles
    when there are more."""
    tiles_m, tiles_n = -(-m // tile[0]), -(-n // tile[1])
    tiles = tiles_m * tiles_n * batch
    return min(tiles, MAX_GRID[0]), (tile[1] // tile[4], tile[0] // tile[3]), (tiles_m, tiles_n, tiles)


def ptx_cases():
    i64 = scalar_type(INDEX)
    cases = [(dtypes.float32, dtypes.float32, None), (dtypes.float64, dtypes.float64, None),
             (dtypes.float16, dtypes.float16, None), (dtypes.bfloat16, dtypes.bfloat16, None),
             (dtypes.float32, dtypes.bfloat16, dtypes.bfloat16), (dtypes.float32, dtypes.float16, dtypes.float16),
             (dtypes.float32, dtypes.float32, dtypes.bfloat16), (dtypes.int64, dtypes.int64, None),
             (dtypes.complex64, dtypes.complex64, None), (dtypes.complex128, dtypes.complex128, None)]
    for a_dt, out_dt, precision in cases:
        sig = (array_type(a_dt), i64, tuple_type(1), i64, i64, array_type(a_dt), i64, tuple_type(1), i64, i64,
               array_type(out_dt), tuple_type(1), i64, i64, i64, i64, i64, i64)
        for along in ((True, True), (True, False), (False, True)):  # x @ W, x @ W.T, x.T @ g
            yield f"matmul[{a_dt.name}->{out_dt.name}, precision={precision}, along={along}]", compile_source(
                _source(np.dtype(a_dt), np.dtype(a_dt), np.dtype(out_dt), precision, *along)), sig
