"""cumsum along one axis as a block scan: a block per row walks it in tiles of BLOCK * ITEMS
elements; each thread sums its ITEMS consecutive elements, the block scans those totals in shared
memory (Hillis-Steele), and each thread then writes its running sums from the exclusive prefix,
the tile's total carried to the next. Half types accumulate in float32, integers and bools in
int64. Float sums group differently from NumPy's left-to-right order (as PyTorch's CUDA scan)."""
from __future__ import annotations

import math
from functools import cache

import numpy as np

from ... import dtypes
from ..buffer import DeviceValue, contiguous_strides, empty
from ..runtime import BLOCK, MAX_BLOCKS, SIMULATOR, launch
from .common import INDEX, array_type, cast, compile_source, compute_dtype, narrow, scalar_type, tuple_type, widen
from .reduce import SUM, accumulator_dtype, rows_and_columns

ITEMS = 2 if SIMULATOR else 8  # consecutive elements per thread and tile


@cache
def _source(dtype: np.dtype, out_dtype: np.dtype) -> str:
    acc = accumulator_dtype(SUM, np.dtype(np.int64)) if dtype.kind in "biu" else compute_dtype(dtype)
    zero, load = f"{cast(acc)}(0)", f"{cast(acc)}({widen('x[base + j * stride]', dtype)})"
    return f"""@cuda.jit(cache=True)
def kernel(x, x_off, kshape, kstrides, stride, out, o_kstrides, o_stride, nrows, length, reverse):
    sh = cuda.shared.array({BLOCK}, np.{acc.name})
    t = cuda.threadIdx.x
    for row in range(cuda.blockIdx.x, nrows, cuda.gridDim.x):
        base = S.element(row, kshape, kstrides, x_off)
        obase = S.element(row, kshape, o_kstrides, 0)
        carry = {zero}
        for tile in range(0, length, {BLOCK * ITEMS}):
            first = tile + t * {ITEMS}
            total = {zero}
            for p in range(first, min(first + {ITEMS}, length)):
                j = length - 1 - p if reverse else p
                total += {load}
            sh[t] = total
            cuda.syncthreads()
            s = 1
            while s < {BLOCK}:
                v = sh[t - s] if t >= s else {zero}
                cuda.syncthreads()
                sh[t] += v
                cuda.syncthreads()
                s *= 2
            run = carry + (sh[t - 1] if t > 0 else {zero})
            for p in range(first, min(first + {ITEMS}, length)):
                j = length - 1 - p if reverse else p
                run += {load}
                out[obase + j * o_stride] = {narrow("run", out_dtype)}
            carry += sh[{BLOCK - 1}]
            cuda.syncthreads()
"""


def cumsum(x: DeviceValue, axis: int, reverse: bool, out_dtype: np.dtype) -> DeviceValue:
    out = empty(x.shape, out_dtype)
    kshape, kstrides, _, (stride,) = rows_and_columns(x.shape, x.strides, (axis,))
    _, o_kstrides, _, (o_stride,) = rows_and_columns(x.shape, contiguous_strides(x.shape), (axis,))
    nrows = math.prod(kshape)
    if out.size:
        kernel = compile_source(_source(x.dtype, np.dtype(out_dtype)))
        launch(kernel, min(nrows, MAX_BLOCKS), BLOCK, x.data, x.offset, kshape, kstrides, stride, out.data,
               o_kstrides, o_stride, nrows, x.shape[axis], reverse)
    return out


def ptx_cases():
    i64 = scalar_type(INDEX)
    for dt, out_dt in ((dtypes.float32,) * 2, (dtypes.float64,) * 2, (dtypes.float16,) * 2, (dtypes.bfloat16,) * 2,
                       (dtypes.int64,) * 2, (dtypes.int32, dtypes.int64), (dtypes.bool_, dtypes.int64),
                       (dtypes.complex64,) * 2, (dtypes.complex128,) * 2):
        sig = (array_type(dt), i64, tuple_type(1), tuple_type(1), i64, array_type(out_dt), tuple_type(1), i64, i64, i64,
               scalar_type(np.bool_))
        yield f"cumsum[{dt.name}]", compile_source(_source(np.dtype(dt), np.dtype(out_dt))), sig
