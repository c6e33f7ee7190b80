"""Max pooling's window argmax: a thread per output element scans its window in the input plane,
skipping padding, and records where the first maximum lies (a NaN is the maximum, as in PyTorch).
Its gather and scatter are indexing kernels (indexing.py)."""
from __future__ import annotations

from functools import cache

import numpy as np

from ... import dtypes
from ..buffer import DeviceValue, empty
from ..runtime import launch, launch_shape
from .common import INDEX, array_type, compile_source, scalar_type, widen
from .copy import compact


@cache
def _source(dtype: np.dtype) -> str:
    value = widen("x[plane + r * w + q]", dtype)
    return f"""@cuda.jit(cache=True)
def kernel(x, out, total, h, w, ho, wo, kh, kw, sh, sw, ph, pw, dh, dw):
    for k in range(cuda.grid(1), total, cuda.gridsize(1)):
        z = k % wo
        y = (k // wo) % ho
        plane = (k // (wo * ho)) * h * w
        best = {widen("x[plane]", dtype)}
        where = -1
        for i in range(kh):
            r = y * sh - ph + i * dh
            if r >= 0 and r < h:
                for j in range(kw):
                    q = z * sw - pw + j * dw
                    if q >= 0 and q < w:
                        v = {value}
                        if where < 0 or v > best or (v != v and best == best):
                            best = v
                            where = r * w + q
        out[k] = where
"""


def window_argmax(x: DeviceValue, kernel, stride, padding, dilation, out_hw) -> DeviceValue:
    """int64 (N, C, Ho, Wo): the flat position in each (H, W) plane of x of each window's first
    maximum (the functional layer keeps every window partly inside the plane)."""
    x = compact(x)
    out = empty(x.shape[:2] + tuple(out_hw), INDEX)
    if out.size:
        launch(compile_source(_source(x.dtype)), *launch_shape(out.size), x.data, out.data, out.size, *x.shape[2:],
               *out_hw, *kernel, *stride, padding[0][0], padding[1][0], *dilation)
    return out


def ptx_cases():
    i64 = scalar_type(INDEX)
    for dt in (dtypes.float32, dtypes.float64, dtypes.float16, dtypes.bfloat16, dtypes.int64, dtypes.int32):
        yield f"window_argmax[{dt.name}]", compile_source(_source(np.dtype(dt))), \
            (array_type(dt), array_type(INDEX)) + (i64,) * 13
