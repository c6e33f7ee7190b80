"""Stable argsort along one axis by ranking: element j of a row goes to position
#(elements that sort before it) + #(equal elements before it). A thread per element, O(n) work
each: simple and exactly stable; NaN sorts last, as in NumPy."""
from __future__ import annotations

from functools import cache

import numpy as np

from ... import dtypes
from ..buffer import DeviceValue, contiguous_strides, empty
from ..runtime import launch, launch_shape
from .common import INDEX, array_type, cast, compile_source, compute_dtype, scalar_type, tuple_type, widen
from .reduce import rows_and_columns


@cache
def _source(dtype: np.dtype) -> str:
    ct = compute_dtype(dtype)
    load = f"{cast(ct)}({widen('x[base + {j} * stride]', dtype)})"
    before = "(b < a or (a != a and b == b))" if ct.kind == "f" else "(b < a)"
    same = "(b == a or (a != a and b != b))" if ct.kind == "f" else "(b == a)"
    return f"""@cuda.jit(cache=True)
def kernel(x, x_off, kshape, kstrides, stride, out, o_kstrides, o_stride, nrows, length):
    for i in range(cuda.grid(1), nrows * length, cuda.gridsize(1)):
        row = i // length
        j = i % length
        base = S.element(row, kshape, kstrides, x_off)
        a = {load.format(j="j")}
        rank = 0
        for m in range(length):
            b = {load.format(j="m")}
            if {before} or (m < j and {same}):
                rank += 1
        out[S.element(row, kshape, o_kstrides, 0) + rank * o_stride] = j
"""


def argsort(x: DeviceValue, axis: int) -> DeviceValue:
    out = empty(x.shape, INDEX)
    kshape, kstrides, _, (stride,) = rows_and_columns(x.shape, x.strides, (axis,))
    _, o_kstrides, _, (o_stride,) = rows_and_columns(x.shape, contiguous_strides(x.shape), (axis,))
    nrows, length = int(np.prod(kshape, dtype=np.int64)), x.shape[axis]
    if out.size:
        kernel = compile_source(_source(x.dtype))
        launch(kernel, *launch_shape(out.size), x.data, x.offset, kshape, kstrides, stride, out.data, o_kstrides,
               o_stride, nrows, length)
    return out


def ptx_cases():
    i64 = scalar_type(INDEX)
    for dt in (dtypes.float32, dtypes.float64, dtypes.float16, dtypes.bfloat16, dtypes.int64, dtypes.int32, dtypes.uint32):
        sig = (array_type(dt), i64, tuple_type(1), tuple_type(1), i64, array_type(INDEX), tuple_type(1), i64, i64, i64)
        yield f"argsort[{dt.name}]", compile_source(_source(np.dtype(dt))), sig
