"""Batched matmul: shared-memory tiles with register blocking, for any strides and every shape.

A block computes a BM x BN tile of the output; each of its threads computes an RM x RN patch of it
in registers, so every value read from shared memory feeds several multiply-adds. Tiles of A and B
(BM x BK, BK x BN) are staged in shared memory per step along K; elements past the edges read as
zero, so sizes need not be multiples of the tile. Batch dimensions broadcast through strides.
Half-precision operands are widened to float32 and the result rounded once (float32
accumulation); an autocast `precision` rounds float32 operands to that dtype first.
"""
from __future__ import annotations

from functools import cache

import numpy as np

from ... import dtypes
from ..buffer import DeviceValue, empty
from ..runtime import MAX_GRID, SIMULATOR, launch
from .copy import fill
from .common import (INDEX, array_type, cast, compile_source, compute_dtype, narrow, round_to, scalar_type,
                     tuple_type, widen)

# Tile shape: (BM, BN, BK, RM, RN). The simulator runs a Python thread per GPU thread: tiny tiles there.
GPU_TILE = (64, 64, 16, 4, 4)
TILE = (4, 4, 4, 2, 2) if SIMULATOR else GPU_TILE


@cache
def _source(a_dtype: np.dtype, b_dtype: np.dtype, out_dtype: np.dtype, precision: np.dtype | None) -> str:
    bm, bn, bk, rm, rn = TILE
    acc = compute_dtype(np.result_type(a_dtype, b_dtype))
    if precision is not None:
        acc = np.dtype(np.float32)
    tx, ty = bn // rn, bm // rm

    def load(name, dtype, index):
        return round_to(f"{cast(acc)}({widen(f'{name}[{index}]', dtype)})", precision)

    lines = f"""@cuda.jit(cache=True)
def kernel(a, a_off, a_bst, a_sm, a_sk, b, b_off, b_bst, b_sk, b_sn, out, bshape, m, n, k, tiles_m, tiles_n, tiles):
    As = cuda.shared.array(({bk}, {bm}), np.{acc.name})
    Bs = cuda.shared.array(({bk}, {bn}), np.{acc.name})
    acc = cuda.local.array(({rm}, {rn}), np.{acc.name})
    ar = cuda.local.array({rm}, np.{acc.name})
    br = cuda.local.array({rn}, np.{acc.name})
    tcol = cuda.threadIdx.x
    trow = cuda.threadIdx.y
    tid = trow * {tx} + tcol
    for t in range(cuda.blockIdx.x, tiles, cuda.gridDim.x):
        n0 = (t % tiles_n) * {bn}
        m0 = (t // tiles_n % tiles_m) * {bm}
        batch = t // tiles_n // tiles_m
        a_base = S.element(batch, bshape, a_bst, a_off)
        b_base = S.element(batch, bshape, b_bst, b_off)
        for i in range({rm}):
            for j in range({rn}):
                acc[i, j] = 0
        for k0 in range(0, k, {bk}):
            for idx in range(tid, {bm * bk}, {tx * ty}):
                r = idx // {bk}
                c = idx % {bk}
                if m0 + r < m and k0 + c < k:
                    As[c, r] = {load("a", a_dtype, "a_base + (m0 + r) * a_sm + (k0 + c) * a_sk")}
                else:
                    As[c, r] = 0
            for idx in range(tid, {bk * bn}, {tx * ty}):
                r = idx // {bn}
                c = idx % {bn}
                if k0 + r < k and n0 + c < n:
                    Bs[r, c] = {load("b", b_dtype, "b_base + (k0 + r) * b_sk + (n0 + c) * b_sn")}
                else:
                    Bs[r, c] = 0
            cuda.syncthreads()
            for kk in range({bk}):
                for i in range({rm}):
                    ar[i] = As[kk, trow * {rm} + i]
                for j in range({rn}):
                    br[j] = Bs[kk, tcol * {rn} + j]
                for i in range({rm}):
                    for j in range({rn}):
                        acc[i, j] += ar[i] * br[j]
            cuda.syncthreads()
        out_base = batch * m * n
        for i in range({rm}):
            row = m0 + trow * {rm} + i
            if row < m:
                for j in range({rn}):
                    col = n0 + tcol * {rn} + j
                    if col < n:
                        out[out_base + row * n + col] = {narrow("acc[i, j]", out_dtype)}
"""
    return lines


def matmul(a: DeviceValue, b: DeviceValue, out_dtype: np.dtype, precision: np.dtype | None = None) -> DeviceValue:
    """a @ b for rank >= 2 operands with broadcastable batch dimensions (NumPy's matmul)."""
    m, k = a.shape[-2:]
    k2, n = b.shape[-2:]
    if k != k2:
        raise ValueError(f"matmul: the contracted dimensions differ: {a.shape} @ {b.shape}")
    bshape = np.broadcast_shapes(a.shape[:-2], b.shape[:-2])
    out = empty(bshape + (m, n), out_dtype)
    batch = int(np.prod(bshape, dtype=np.int64))
    if out.size == 0:
        return out
    if k == 0:
        return fill(out.shape, out.dtype, 0)

    def batch_strides(x):
        lead = len(bshape) - (x.ndim - 2)
        st = (0,) * lead + tuple(0 if d == 1 else s for s, d in zip(x.strides[:-2], x.shape[:-2]))
        return st or (0,)

    kernel = compile_source(_source(a.dtype, b.dtype, np.dtype(out_dtype), precision and np.dtype(precision)))
    grid, block, tiles = launch_config(m, n, batch)
    launch(kernel, grid, block, a.data, a.offset, batch_strides(a), a.strides[-2], a.strides[-1],
           b.data, b.offset, batch_strides(b), b.strides[-2], b.strides[-1],
           out.data, bshape or (1,), m, n, k, *tiles)
    return out


def launch_config(m: int, n: int, batch: int, tile: tuple = TILE) -> tuple[int, tuple[int, int], tuple]:
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
        yield f"matmul[{a_dt.name}->{out_dt.name}, precision={precision}]", compile_source(
            _source(np.dtype(a_dt), np.dtype(a_dt), np.dtype(out_dt), precision)), sig
