"""Stable argsort along one axis by a bitonic sorting network over (key, position) pairs: a pair
sorts before another when its key is smaller, or equal with a smaller position, so the network
(not stable by itself) gives the stable order; NaN sorts last, as in NumPy. Rows are padded to a
power of two with pairs that sort after everything.

A row of up to LOCAL pairs sorts in one block's shared memory (one launch). Longer rows: each
LOCAL-sized chunk sorts in shared memory in the direction the network gives it, then each later
step of the network is one launch over the padded rows in global memory."""
from __future__ import annotations

import math
from functools import cache

import numpy as np

from ... import dtypes
from ..buffer import DeviceValue, contiguous_strides, empty
from ..runtime import BLOCK, MAX_BLOCKS, SIMULATOR, launch, launch_shape
from .copy import copy_into
from .common import INDEX, array_type, cast, compile_source, compute_dtype, scalar_type, tuple_type, widen
from .reduce import rows_and_columns

LOCAL = 16 if SIMULATOR else 2048  # pairs sorted in one block's shared memory (float64 keys: 32 KiB)


def _before(ct: np.dtype) -> str:
    """The device function: pair (a, ai) sorts before (b, bi) (positions >= n are padding)."""
    keys = ("(b != b and (a == a or ai < bi)) or (a == a and b == b and (a < b or (a == b and ai < bi)))"
            if ct.kind == "f" else "a < b or (a == b and ai < bi)")
    return f"""@cuda.jit(device=True)
def before(a, ai, b, bi, n):
    if ai >= n:
        return False
    if bi >= n:
        return True
    return {keys}
"""


@cache
def _local_source(dtype: np.dtype) -> str:
    """Sort each (row, chunk) of LOCAL pairs in shared memory through the network's steps up to
    size min(padded, LOCAL); write positions to out (the whole row fits) or pairs to the scratch."""
    ct = compute_dtype(dtype)
    load = f"{cast(ct)}({widen('x[base + p * stride]', dtype)})"
    return _before(ct) + f"""
@cuda.jit(cache=True)
def kernel(x, x_off, kshape, kstrides, stride, n, padded, nrows, out, o_kstrides, o_stride, keys, pos, final):
    sk = cuda.shared.array({LOCAL}, np.{ct.name})
    sp = cuda.shared.array({LOCAL}, np.int64)
    t = cuda.threadIdx.x
    width = min(padded, {LOCAL})
    chunks = padded // width
    for piece in range(cuda.blockIdx.x, nrows * chunks, cuda.gridDim.x):
        row = piece // chunks
        first = (piece - row * chunks) * width
        base = S.element(row, kshape, kstrides, x_off)
        for q in range(t, width, cuda.blockDim.x):
            p = first + q
            sp[q] = p
            sk[q] = {load} if p < n else {cast(ct)}(0)
        cuda.syncthreads()
        k = 2
        while k <= width:
            j = k // 2
            while j > 0:
                for q in range(t, width, cuda.blockDim.x):
                    l = q ^ j
                    if l > q:
                        up = ((first + q) & k) == 0
                        if before(sk[l], sp[l], sk[q], sp[q], n) == up:
                            a, ai = sk[q], sp[q]
                            sk[q], sp[q] = sk[l], sp[l]
                            sk[l], sp[l] = a, ai
                cuda.syncthreads()
                j //= 2
            k *= 2
        obase = S.element(row, kshape, o_kstrides, 0)
        for q in range(t, width, cuda.blockDim.x):
            if final:
                if q < n:
                    out[obase + q * o_stride] = sp[q]
            else:
                keys[row * padded + first + q] = sk[q]
                pos[row * padded + first + q] = sp[q]
        cuda.syncthreads()
"""


@cache
def _step_source(ct: np.dtype) -> str:
    """One step (k, j) of the network over every padded row in global memory."""
    return _before(ct) + """
@cuda.jit(cache=True)
def kernel(keys, pos, n, padded, total, k, j):
    for i in range(cuda.grid(1), total, cuda.gridsize(1)):
        q = i % padded
        l = q ^ j
        if l > q:
            r = i - q
            up = (q & k) == 0
            if before(keys[r + l], pos[r + l], keys[i], pos[i], n) == up:
                a, ai = keys[i], pos[i]
                keys[i], pos[i] = keys[r + l], pos[r + l]
                keys[r + l], pos[r + l] = a, ai
"""


def argsort(x: DeviceValue, axis: int) -> DeviceValue:
    out = empty(x.shape, INDEX)
    kshape, kstrides, _, (stride,) = rows_and_columns(x.shape, x.strides, (axis,))
    _, o_kstrides, _, (o_stride,) = rows_and_columns(x.shape, contiguous_strides(x.shape), (axis,))
    nrows, n = math.prod(kshape), x.shape[axis]
    if not out.size:
        return out
    padded = 1 << max(n - 1, 0).bit_length()
    final = padded <= LOCAL
    ct = compute_dtype(x.dtype)
    keys = empty((1,) if final else (nrows * padded,), ct)
    pos = empty((1,) if final else (nrows * padded,), INDEX)
    pieces = nrows * (padded // min(padded, LOCAL))
    launch(compile_source(_local_source(x.dtype)), min(pieces, MAX_BLOCKS), BLOCK, x.data, x.offset, kshape,
           kstrides, stride, n, padded, nrows, out.data, o_kstrides, o_stride, keys.data, pos.data, final)
    if final:
        return out
    step = compile_source(_step_source(ct))
    total, k = nrows * padded, 2 * LOCAL
    while k <= padded:
        j = k // 2
        while j > 0:
            launch(step, *launch_shape(total), keys.data, pos.data, n, padded, total, k, j)
            j //= 2
        k *= 2
    # each row's first n positions, placed along the axis
    src = pos.view(kshape + (n,), tuple(s * padded for s in contiguous_strides(kshape)) + (1,))
    copy_into(out.view(kshape + (n,), tuple(o_kstrides) + (o_stride,)), src)
    return out

def ptx_cases():
    i64 = scalar_type(INDEX)
    for dt in (dtypes.float32, dtypes.float64, dtypes.float16, dtypes.bfloat16, dtypes.int64, dtypes.int32, dtypes.uint32):
        ct = compute_dtype(np.dtype(dt))
        sig = (array_type(dt), i64, tuple_type(1), tuple_type(1), i64, i64, i64, i64, array_type(INDEX), tuple_type(1),
               i64, array_type(ct), array_type(INDEX), scalar_type(np.bool_))
        yield f"argsort local[{dt.name}]", compile_source(_local_source(np.dtype(dt))), sig
        yield f"argsort step[{dt.name}]", compile_source(_step_source(ct)), (
            array_type(ct), array_type(INDEX), i64, i64, i64, i64, i64)
