"""cumsum along one axis: a thread per row walks it in order, accumulating in float32 for half types
(NumPy's order of additions, so results match it exactly in float32 and float64)."""
from __future__ import annotations

from functools import cache

import numpy as np

from ... import dtypes
from ..buffer import DeviceValue, contiguous_strides, empty
from ..runtime import launch, launch_shape
from .common import INDEX, array_type, cast, compile_source, compute_dtype, narrow, scalar_type, tuple_type, widen
from .reduce import SUM, accumulator_dtype, rows_and_columns


@cache
def _source(dtype: np.dtype, out_dtype: np.dtype) -> str:
    acc = accumulator_dtype(SUM, np.dtype(np.int64)) if dtype.kind in "biu" else compute_dtype(dtype)
    return f"""@cuda.jit(cache=True)
def kernel(x, x_off, kshape, kstrides, stride, out, o_kstrides, o_stride, nrows, length, reverse):
    for row in range(cuda.grid(1), nrows, cuda.gridsize(1)):
        base = S.element(row, kshape, kstrides, x_off)
        obase = S.element(row, kshape, o_kstrides, 0)
        total = {cast(acc)}(0)
        for step in range(length):
            j = length - 1 - step if reverse else step
            total += {cast(acc)}({widen("x[base + j * stride]", dtype)})
            out[obase + j * o_stride] = {narrow("total", out_dtype)}
"""


def cumsum(x: DeviceValue, axis: int, reverse: bool, out_dtype: np.dtype) -> DeviceValue:
    out = empty(x.shape, out_dtype)
    kshape, kstrides, _, (stride,) = rows_and_columns(x.shape, x.strides, (axis,))
    _, o_kstrides, _, (o_stride,) = rows_and_columns(x.shape, contiguous_strides(x.shape), (axis,))
    nrows = int(np.prod(kshape, dtype=np.int64))
    if out.size:
        kernel = compile_source(_source(x.dtype, np.dtype(out_dtype)))
        launch(kernel, *launch_shape(nrows), x.data, x.offset, kshape, kstrides, stride, out.data, o_kstrides,
               o_stride, nrows, x.shape[axis], reverse)
    return out


def ptx_cases():
    i64 = scalar_type(INDEX)
    for dt, out_dt in ((dtypes.float32,) * 2, (dtypes.float64,) * 2, (dtypes.float16,) * 2, (dtypes.bfloat16,) * 2,
                       (dtypes.int64,) * 2, (dtypes.int32, dtypes.int64), (dtypes.bool_, dtypes.int64),
                       (dtypes.complex64,) * 2, (dtypes.complex128,) * 2):
        sig = (array_type(dt), i64, tuple_type(1), tuple_type(1), i64, array_type(out_dt), tuple_type(1), i64, i64, i64,
               scalar_type(np.bool_))
        yield f"cumsum[{dt.name}]", compile_source(_source(np.dtype(dt), np.dtype(out_dt))), sig
