"""Elementwise kernels: one generated kernel per (operation, operand dtypes, output dtype), for any
rank (numba specialises on the length of the shape tuple), NumPy broadcasting and any strides. A
step's source is its primitive's scalar expression (funcgrad.ops.scalar) in CUDA's dialect.

The output may itself be a strided view (a slice of a larger array): copies into concatenations and
paddings, and col2im's accumulation, are elementwise kernels too.
"""
from __future__ import annotations

import math
from functools import cache

import numpy as np

from ... import dtypes
from ...ops import scalar
from ..buffer import DeviceValue, empty
from ..runtime import launch, launch_shape
from .common import (HALF, INDEX, array_type, broadcast_strides, cast, collapse, compile_source, compute_dtype,
                     literal, narrow, round_to, scalar_type, tuple_type, widen)


class _Cuda(scalar.Dialect):
    """Scalar expressions as numba.cuda source: scalar.py's functions (libdevice on a GPU, NumPy's in
    the simulator), and NumPy's NaN-propagating maximum and minimum as comparisons."""
    NAMES = {"arctan": "atan", "arcsin": "asin", "arccos": "acos", "arcsinh": "asinh", "arccosh": "acosh",
             "arctanh": "atanh", "arctan2": "atan2"}

    def literal(self, value, dtype: np.dtype) -> str:
        return literal(value, dtype)

    def call(self, name: str, args: list[str], exprs: tuple) -> str:
        if name == "abs":
            return f"abs({args[0]})"
        if exprs[0].is_complex:
            return self._complex_call(name, args[0], exprs[0].dtype)
        if name in ("maximum", "minimum"):
            a, b = args
            return f"({a} if ({a} {'>=' if name == 'maximum' else '<='} {b} or {a} != {a}) else {b})"
        if name == "rint":  # round half to even, as NumPy
            return f"S.rint{exprs[0].dtype.itemsize * 8}({args[0]})"
        return f"S.{self.NAMES.get(name, name)}({', '.join(args)})"

    def _complex_call(self, name: str, z: str, dtype: np.dtype) -> str:
        """cmath's function of a complex operand (NumPy's in the simulator); cmath lacks expm1, log1p
        and log2, which are composed (without their special accuracy near 0 and 1)."""
        one = literal(1, dtype)
        composed = {"expm1": f"(S.c_exp({z}) - {one})", "log1p": f"S.c_log({one} + {z})",
                    "log2": f"(S.c_log({z}) / {literal(math.log(2), dtype)})"}
        if name in composed:
            return composed[name]
        return f"S.c_{self.NAMES.get(name, name)}({z})"


CUDA = _Cuda()


def copy(x):
    """The scalar expression of a copy (and of a fill, from a scalar operand)."""
    return x


def iota():
    """The element's flat index: arange, into a fresh contiguous output (chain_source spells it)."""


def scalar_of(op):
    """A step's scalar expression: a primitive's, or one of this module's own (copy, iota)."""
    return getattr(op, "scalar", op)


def _kind(x) -> object:
    """An operand's part of the kernel key: its dtype, or a Python scalar's type, or None."""
    if isinstance(x, DeviceValue):
        return x.dtype
    return None if x is None else type(x)


def _step_value(expr: str, dtype: np.dtype, consumed: bool) -> str:
    """A step's result as the kernel keeps it: in its dtype, or for half types in float32 (rounded
    to the half type first when a later step reads it, as the unfused program would)."""
    if dtype in HALF:
        return round_to(f"np.float32({expr})", dtype) if consumed else f"np.float32({expr})"
    return f"{cast(dtype)}({expr})"


@cache
def chain_source(kinds: tuple, steps: tuple, outputs: tuple) -> str:
    """One kernel for a chain of elementwise steps over a broadcast shape.

    kinds: each external operand's dtype (an array, read through its strides), Python scalar type,
    or None; steps: (scalar expression, params, refs, out dtype) with refs ("in", k) or ("t", j) for an earlier
    step; outputs: the steps whose values are stored, in the order of the output arguments."""
    args = ["n", "shape"] + [f"o{k}{suffix}" for k in range(len(outputs)) for suffix in ("", "_off", "_st")]
    hoisted, loads = [], []
    for k, kind in enumerate(kinds):
        if isinstance(kind, np.dtype):
            args += [f"a{k}", f"a{k}_off", f"a{k}_st"]
            loads.append(f"        x{k} = {widen(f'a{k}[S.element(i, shape, a{k}_st, a{k}_off)]', kind)}")
        elif kind is not None:
            args.append(f"a{k}")
            hoisted.append(f"    x{k} = a{k}")
    consumed = {r[1] for _, _, refs, _ in steps for r in refs if r[0] == "t"}
    body = []
    for j, (op, params, refs, out_dtype) in enumerate(steps):
        arg_kinds = tuple(kinds[r[1]] if r[0] == "in" else steps[r[1]][3] for r in refs)
        ct = compute_dtype(scalar.compute_dtype(list(arg_kinds), out_dtype))
        operands = []
        for ref, kind in zip(refs, arg_kinds):
            if kind is None:
                operands.append(None)
                continue
            # booleans stay booleans (a condition, a logical operand), complex operands of a real step
            # stay complex (real, imag, abs and casts take their parts); the rest compute in ct
            target = (np.dtype(np.bool_) if kind in (bool, dtypes.bool_) else
                      kind if kind in dtypes.complex_dtypes and not dtypes.is_complex(ct) else ct)
            source = f"x{ref[1]}" if ref[0] == "in" else f"t{ref[1]}"
            operands.append(scalar.operand(f"{cast(target)}({source})", target))
        fn = scalar_of(op)
        expr = "i" if fn is iota else CUDA.render(scalar.evaluate(fn, operands, dict(params)), ct)
        body.append(f"        t{j} = {_step_value(expr, out_dtype, j in consumed)}")
    stores = [f"        o{k}[S.element(i, shape, o{k}_st, o{k}_off)] = {narrow(f't{j}', steps[j][3])}"
              for k, j in enumerate(outputs)]
    lines = ["@cuda.jit(cache=True)", f"def kernel({', '.join(args)}):", *hoisted,
             "    for i in range(cuda.grid(1), n, cuda.gridsize(1)):", *loads, *body, *stores]
    return "\n".join(lines) + "\n"


def kernel_for(op, params: tuple, kinds: tuple, out_dtype: np.dtype):
    """The kernel of one step (op: a primitive, or copy / iota) over operands of these kinds."""
    step = (scalar_of(op), params, tuple(("in", k) for k in range(len(kinds))), np.dtype(out_dtype))
    return compile_source(chain_source(kinds, (step,), (0,)))


def chain_kernel(kinds: tuple, steps: tuple, outputs: tuple):
    return compile_source(chain_source(kinds, steps, outputs))


def as_operands(values: list) -> tuple[list, tuple]:
    """Values as run_chain takes them (a host 0-d array, which combines with device arrays, as a
    Python scalar) and their kinds."""
    values = [x.item() if isinstance(x, np.ndarray) else x for x in values]
    return values, tuple(_kind(x) for x in values)


def run_chain(kinds: tuple, steps: tuple, outputs: tuple, operands: list, shape: tuple,
              outs: list[DeviceValue]) -> list[DeviceValue]:
    """Launch chain_source's kernel: operands match kinds, outs (views of `shape`) match outputs."""
    n = int(np.prod(shape, dtype=np.int64))
    if n == 0:
        return outs
    arrays = [x for x in operands if isinstance(x, DeviceValue)]
    strides = [broadcast_strides(o, shape) for o in outs] + [broadcast_strides(x, shape) for x in arrays]
    cshape, cstrides = collapse(shape, *strides)
    args = [n, cshape]
    for o, st in zip(outs, cstrides):
        args += [o.data, o.offset, st]
    it = iter(cstrides[len(outs):])
    for x in operands:
        if isinstance(x, DeviceValue):
            args += [x.data, x.offset, next(it)]
        elif x is not None:
            args.append(x)
    launch(chain_kernel(kinds, steps, outputs), *launch_shape(n), *args)
    return outs


def apply(op, operands: list, out_dtype: np.dtype, params: dict | None = None,
          out: DeviceValue | None = None, shape: tuple | None = None) -> DeviceValue:
    """out = op(*operands), broadcasting; op is a primitive, or copy / iota; operands are
    DeviceValues, Python scalars or None. out may be a view that is also an operand (accumulation in
    place: col2im)."""
    params = params or {}
    operands, kinds = as_operands(operands)
    if shape is None:
        shape = np.broadcast_shapes(*(x.shape for x in operands if isinstance(x, DeviceValue)))
    if out is None:
        out = empty(shape, out_dtype)
    step = (scalar_of(op), tuple(sorted(params.items())), tuple(("in", k) for k in range(len(kinds))), out.dtype)
    return run_chain(kinds, (step,), (0,), operands, tuple(shape), [out])[0]


def ptx_signature(kinds: tuple, out_dtype, ndim: int) -> tuple:
    """The numba argument types of a kernel_for(..., kinds, out_dtype) launch at rank ndim."""
    return chain_signature(kinds, (0,), ((None, None, None, np.dtype(out_dtype)),), ndim)


def chain_signature(kinds: tuple, outputs: tuple, steps: tuple, ndim: int) -> tuple:
    """The numba argument types of a run_chain launch at rank ndim."""
    sig = [scalar_type(INDEX), tuple_type(ndim)]
    for j in outputs:
        sig += [array_type(steps[j][3]), scalar_type(INDEX), tuple_type(ndim)]
    for kind in kinds:
        if isinstance(kind, np.dtype):
            sig += [array_type(kind), scalar_type(INDEX), tuple_type(ndim)]
        elif kind is not None:
            sig.append(scalar_type({bool: np.bool_, int: np.int64, float: np.float64, complex: np.complex128}[kind]))
    return tuple(sig)
