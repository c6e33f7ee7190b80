"""Indexing on the device: NumPy's basic indexing as a view, advanced (integer-array) indexing as
a gather kernel, and its transpose, a scatter-add with atomics (repeated indices accumulate).

The spec is the one funcgrad.ops.shape uses: ("s", start, stop, step) · ("i", n) · ("n",) · ("e",)
· ("a",) for an integer array. Out-of-range array indices cannot raise inside a kernel: they are
clamped, as JAX does on every device.
"""
from __future__ import annotations

import math
from functools import cache

import numpy as np

from ... import dtypes
from ...ops.elementwise import complex_p, convert_p, imag_p, real_p
from ..buffer import DeviceValue, empty
from ..runtime import launch, launch_shape
from . import elementwise
from .copy import compact, fill
from .common import (INDEX, array_type, broadcast_strides, compile_source, scalar_type, tuple_type,
                     widen)


def basic_view(x: DeviceValue, index: tuple) -> DeviceValue:
    """x[index] for slices, ints, None and Ellipsis: NumPy computes the view's shape, strides and
    offset on a stand-in array of one-byte elements whose strides are x's (no memory is read)."""
    probe = np.lib.stride_tricks.as_strided(np.zeros(1, np.uint8), shape=x.shape, strides=x.strides)
    if not any(item is Ellipsis for item in index):
        index = index + (Ellipsis,)  # so integers alone give a 0-d view, not a copied scalar
    view = probe[index]
    start = probe.__array_interface__["data"][0]
    return x.view(view.shape, view.strides, x.offset + view.__array_interface__["data"][0] - start)


def _expand(spec: tuple, ndim: int) -> list:
    """The spec with Ellipsis (or the implicit trailing one) expanded into full slices."""
    used = sum(1 for item in spec if item[0] in "sia")
    out = []
    for item in spec:
        if item[0] == "e":
            out += [("s", None, None, None)] * (ndim - used)
        else:
            out.append(item)
    if not any(item[0] == "e" for item in spec):
        out += [("s", None, None, None)] * (ndim - used)
    return out


class AdvancedIndex:
    """The layout of x[index] with integer arrays: which output dimensions walk x, which walk the
    broadcast index arrays, and x's stride for each array."""

    def __init__(self, x: DeviceValue, spec: tuple, arrays: list):
        items = _expand(spec, x.ndim)
        basic, positions, adv_dims, arr_iter = [], [], [], iter(arrays)
        self.arrays, dim = [], 0
        for pos, item in enumerate(items):
            kind = item[0]
            if kind == "s":
                basic.append(slice(item[1], item[2], item[3]))
                dim += 1
            elif kind == "n":
                basic.append(None)
            else:  # an array, or an int that joins the broadcast as a 0-d array
                basic.append(slice(None))
                self.arrays.append(next(arr_iter) if kind == "a" else int(item[1]))
                positions.append(pos)
                adv_dims.append(dim)
                dim += 1
        base = basic_view(x, tuple(basic))  # every index entry now owns one dimension of base
        self.bshape = np.broadcast_shapes(*(np.shape(a) for a in self.arrays))
        adjacent = positions == list(range(positions[0], positions[0] + len(positions)))
        adv_base = positions  # the index entries' positions are their dimensions of base
        self.sizes = [base.shape[d] for d in adv_base]
        self.adv_strides = [base.strides[d] for d in adv_base]
        rest = [d for d in range(base.ndim) if d not in adv_base]
        nb = len(self.bshape)
        if adjacent:
            before = [d for d in rest if d < adv_base[0]]
            after = [d for d in rest if d > adv_base[0]]
        else:
            before, after = [], rest
        self.shape = tuple(base.shape[d] for d in before) + self.bshape + tuple(base.shape[d] for d in after)
        self.x_strides = tuple(base.strides[d] for d in before) + (0,) * nb + tuple(base.strides[d] for d in after)
        self.b_at = len(before)  # output dimensions [b_at, b_at + nb) walk the index arrays
        self.base = base
        for a, size, d in zip(self.arrays, self.sizes, adv_dims):
            if isinstance(a, int) and not -size <= a < size:
                raise IndexError(f"index {a} is out of bounds for axis {d} with size {size}")
            if size == 0 and math.prod(self.shape):
                raise IndexError(f"cannot take elements from axis {d} of size 0")

    def index_strides(self, a) -> tuple:
        """An index array's strides over the output dimensions (0 outside the broadcast part)."""
        st = broadcast_strides(a, self.bshape) if isinstance(a, DeviceValue) else (0,) * len(self.bshape)
        return (0,) * self.b_at + st + (0,) * (len(self.shape) - self.b_at - len(self.bshape))


def accumulator(dtype: np.dtype) -> np.dtype:
    """The dtype a scatter-add of dtype accumulates in: CUDA has atomic adds only for 32- and
    64-bit integers and floats, so half floats add in float32 and bool and narrow integers in
    32-bit ones, converted back at the end (wrapping, or true where any was, as NumPy adds)."""
    if dtype in (dtypes.float16, dtypes.bfloat16):
        return dtypes.float32
    if dtype == dtypes.bool_ or dtype.kind in "iu" and dtype.itemsize < 4:
        return dtypes.uint32 if dtype.kind == "u" else dtypes.int32
    return dtype


@cache
def _source(mode: str, x_dtype: np.dtype, kinds: tuple) -> str:
    """mode 'gather': out[i] = x[at(i)]; 'scatter': out[at(i)] += g[i] atomically. kinds: each index
    operand's dtype, or None for a constant int."""
    args = ["n", "shape", "x", "x_off", "x_st", "out"]
    lines = []
    for k, kind in enumerate(kinds):
        if kind is None:
            args += [f"c{k}", f"size{k}", f"stride{k}"]
        else:
            args += [f"ix{k}", f"ix{k}_off", f"ix{k}_st", f"size{k}", f"stride{k}"]
    lines += ["@cuda.jit(cache=True)", f"def kernel({', '.join(args)}):",
              "    for i in range(cuda.grid(1), n, cuda.gridsize(1)):",
              "        at = S.element(i, shape, x_st, x_off)"]
    for k, kind in enumerate(kinds):
        value = f"np.int64(c{k})" if kind is None else f"np.int64(ix{k}[S.element(i, shape, ix{k}_st, ix{k}_off)])"
        lines += [f"        j = {value}", "        if j < 0:", f"            j += size{k}",
                  f"        j = min(max(j, 0), size{k} - 1)", f"        at += j * stride{k}"]
    if mode == "gather":
        lines.append("        out[i] = x[at]")
    else:  # x is the cotangent (read at i), out the accumulator (written at `at`)
        acc = accumulator(x_dtype)
        value = widen("x[i]", x_dtype) if acc.kind == "f" else f"np.{acc.name}(x[i])"
        lines.append(f"        cuda.atomic.add(out, at, {value})")
    return "\n".join(lines) + "\n"


def _kinds(arrays) -> tuple:
    return tuple(a.dtype if isinstance(a, DeviceValue) else None for a in arrays)


def _index_args(layout: AdvancedIndex) -> list:
    args = []
    for a, size, stride in zip(layout.arrays, layout.sizes, layout.adv_strides):
        if isinstance(a, DeviceValue):
            args += [a.data, a.offset, layout.index_strides(a)]
        else:
            args.append(a)
        args += [size, stride]
    return args


def gather(x: DeviceValue, spec: tuple, arrays: list) -> DeviceValue:
    """x[index] with at least one integer array in the index (basic indexing is basic_view)."""
    layout = AdvancedIndex(x, spec, arrays)
    out = empty(layout.shape, x.dtype)
    n = out.size
    if n:
        base = layout.base
        kernel = compile_source(_source("gather", x.dtype, _kinds(layout.arrays)))
        launch(kernel, *launch_shape(n), n, layout.shape or (1,), base.data, base.offset, layout.x_strides or (0,),
               out.data, *_index_args(layout))
    return out


def scatter_add(g: DeviceValue, spec: tuple, arrays: list, shape: tuple) -> DeviceValue:
    """zeros(shape) with g added at the positions x[index] reads, for an index with arrays. CUDA has
    no complex atomics: a complex g adds its real and imaginary parts apart."""
    if dtypes.is_complex(g.dtype):
        part = dtypes.real_dtype(g.dtype)
        sums = [scatter_add(elementwise.apply(prim, [g], part, {}), spec, arrays, shape) for prim in (real_p, imag_p)]
        return elementwise.apply(complex_p, sums, g.dtype, {})
    acc_dtype = accumulator(g.dtype)
    acc = fill(shape, acc_dtype, 0)
    layout = AdvancedIndex(acc, spec, arrays)
    if layout.shape != g.shape:
        raise ValueError(f"scatter_add: the update has shape {g.shape}, the index selects {layout.shape}")
    g = compact(g)
    n = g.size
    if n:
        kernel = compile_source(_source("scatter", g.dtype, _kinds(layout.arrays)))
        base = layout.base
        launch(kernel, *launch_shape(n), n, layout.shape or (1,), g.data, base.offset, layout.x_strides or (0,),
               base.data, *_index_args(layout))
    if acc_dtype == g.dtype:
        return acc
    return elementwise.apply(convert_p, [acc], g.dtype, {"dtype": g.dtype})


@cache
def _rows_source(mode: str, index_dtype: np.dtype) -> str:
    """Row-wise indexing along the last axis in one launch (no index vector of row numbers):
    'take': out[r, j] = x[r, index[r, j]] (take_along_axis: pick, a pool's gather); 'put':
    out[r, c] = x[r] where c == index[r], else 0 (pick's transpose: every element written once, so
    no zero fill and no atomics). Indices wrap once and clamp, as gather's."""
    index = "ix[ix_off + r * ix_rs + j * ix_cs]" if mode == "take" else "ix[ix_off + r * ix_rs]"
    store = ("out[i] = x[x_off + r * x_rs + k * x_cs]" if mode == "take" else
             "if j == k:\n            out[i] = x[x_off + r * x_rs]\n        else:\n            out[i] = 0")
    return f"""@cuda.jit(cache=True)
def kernel(n, cols, x, x_off, x_rs, x_cs, ix, ix_off, ix_rs, ix_cs, width, out):
    for i in range(cuda.grid(1), n, cuda.gridsize(1)):
        r = i // cols
        j = i % cols
        k = np.int64({index})
        if k < 0:
            k += width
        k = min(max(k, 0), width - 1)
        {store}
"""


def take_along_rows(x: DeviceValue, index: DeviceValue) -> DeviceValue:
    """out[r, j] = x[r, index[r, j]] for a 2-d x and index of as many rows."""
    out = empty(index.shape, x.dtype)
    if out.size:
        if x.shape[1] == 0:
            raise IndexError("cannot take elements from axis 1 of size 0")
        _rows("take", x, index, x.shape[1], out)
    return out


def put_along_rows(x: DeviceValue, index: DeviceValue, width: int) -> DeviceValue:
    """zeros((rows, width)) with x[r] at column index[r] of each row (x and index: (rows,))."""
    out = empty((x.shape[0], width), x.dtype)
    if out.size:
        _rows("put", x.view((x.shape[0], 1), (x.strides[0], 0)), index.view((index.shape[0], 1), (index.strides[0], 0)),
              width, out)
    return out


def _rows(mode: str, x: DeviceValue, index: DeviceValue, width: int, out: DeviceValue) -> None:
    launch(compile_source(_rows_source(mode, index.dtype)), *launch_shape(out.size), out.size, out.shape[1],
           x.data, x.offset, *x.strides, index.data, index.offset, *index.strides, width, out.data)


def ptx_cases():
    """Gather and scatter-add for every dtype an Array may have, with int64 and int32 index arrays,
    then every other integer index dtype once."""
    i64 = scalar_type(INDEX)
    every = sorted(dtypes._supported, key=str)
    cases = [(dt, ix) for dt in every for ix in (dtypes.int64, dtypes.int32)]
    cases += [(dtypes.float32, ix) for ix in every if ix.kind in "iu" and ix not in (dtypes.int64, dtypes.int32)]
    for mode in ("gather", "scatter"):
        for dt, ix in cases:
            if mode == "scatter" and dtypes.is_complex(dt):
                continue  # scatter_add adds the parts, real cases
            out = accumulator(dt) if mode == "scatter" else dt
            sig = (i64, tuple_type(2), array_type(dt), i64, tuple_type(2), array_type(out),
                   array_type(ix), i64, tuple_type(2), i64, i64, i64, i64, i64)
            yield f"{mode}[{dt.name}, index {ix.name}, int]", compile_source(_source(mode, dt, (ix, None))), sig
    for mode in ("take", "put"):
        for dt, ix in cases:
            sig = (i64, i64, array_type(dt), i64, i64, i64, array_type(ix), i64, i64, i64, i64, array_type(dt))
            yield f"{mode} along rows[{dt.name}, index {ix.name}]", compile_source(_rows_source(mode, ix)), sig
