"""Elementwise kernels: one generated kernel per (operation, operand dtypes, output dtype), for any
rank (numba specialises on the length of the shape tuple), NumPy broadcasting and any strides. A
step's source is its primitive's scalar expression (funcgrad.ops.scalar) in CUDA's dialect.

The output may itself be a strided view (a slice of a larger array): copies into concatenations and
paddings, and col2im's accumulation, are elementwise kernels too.
"""
from __future__ import annotations

import math
from functools import cache
from typing import NamedTuple

import numpy as np

from ... import dtypes
from ...ops import scalar
from ...ops.layout import broadcast_shapes
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
        if name in scalar.LOOPS:
            return self.loop_call("S", name, args)
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
    return narrow(expr, dtype)


@cache
def chain_source(kinds: tuple, steps: tuple, outputs: tuple) -> str:
    """One kernel for a chain of elementwise steps over a broadcast shape.

    kinds: each external operand's dtype (an array, read through its strides), Python scalar type,
    or None; steps: (scalar expression, params, refs, out dtype) with refs ("in", k) or ("t", j) for an earlier
    step; outputs: the steps whose values are stored, in the order of the output arguments."""
    return fused_source(((kinds, steps, outputs, (), False),))


@cache
def fused_source(segments: tuple) -> str:
    """One kernel for several independent chains (horizontal fusion: an optimiser's update of every
    parameter in one launch, as PyTorch's multi-tensor apply). A segment is (kinds, steps, outputs,
    sums, whole): chain_source's chain, and the steps `sums` whose values it also sums over leading
    axes of its shape (over all of them if whole). A chain without sums takes a thread per element;
    one with sums a thread per kept element (column), which walks the summed rows in order (NumPy's
    order for a bias gradient) and evaluates the chain at each; a whole sum (one column) is
    compensated (Kahan), as accurate as the CPU's float64 one. The grid's threads are dealt to the
    segments in turn. Sums are of float32 or float64 values (grouping.sum_kind)."""
    if len(segments) == 1 and not segments[0][3]:
        args, hoisted, lines = _segment("", *segments[0][:4], "        ")
        return _kernel(["n", "shape"] + args, hoisted,
                       ["    for i in range(cuda.grid(1), n, cuda.gridsize(1)):", *lines])
    args, hoisted, lines = ["total"], [], ["    for g in range(cuda.grid(1), total, cuda.gridsize(1)):"]
    for s, (kinds, steps, outputs, sums, whole) in enumerate(segments):
        start = "0" if s == 0 else f"e{s - 1}"
        args += [f"e{s}", f"shape{s}"] + ([f"rows{s}"] if sums else [])
        seg_args, seg_hoisted, body = _segment(f"{s}_", kinds, steps, outputs, sums,
                                               "                " if sums else "            ")
        args += seg_args
        hoisted += seg_hoisted
        lines.append(f"        {'if' if s == 0 else 'elif'} g < e{s}:")
        if not sums:
            lines += [f"            i = g - {start}", *body]
            continue
        lines += [f"            c = g - {start}", f"            cols = e{s} - {start}"]
        for m, j in enumerate(sums):
            zero = f"{cast(steps[j][3])}(0)"
            lines += [f"            acc{s}_{m} = {zero}"] + ([f"            err{s}_{m} = {zero}"] if whole else [])
        lines += [f"            for r in range(rows{s}):", "                i = r * cols + c", *body]
        for m, j in enumerate(sums):
            if whole:  # Kahan's compensated sum: float64's accuracy without float64 arithmetic
                lines += [f"                y = t{s}_{j} - err{s}_{m}", f"                z = acc{s}_{m} + y",
                          f"                err{s}_{m} = (z - acc{s}_{m}) - y", f"                acc{s}_{m} = z"]
            else:
                lines.append(f"                acc{s}_{m} += t{s}_{j}")
        lines += [f"            q{s}_{m}[c] = {narrow(f'acc{s}_{m}', steps[j][3])}" for m, j in enumerate(sums)]
        args += [f"q{s}_{m}" for m in range(len(sums))]
    return _kernel(args, hoisted, lines)


def _kernel(args: list, hoisted: list, lines: list) -> str:
    return "\n".join(["@cuda.jit(cache=True)", f"def kernel({', '.join(args)}):", *hoisted, *lines]) + "\n"


def _segment(p: str, kinds: tuple, steps: tuple, outputs: tuple, sums: tuple, indent: str):
    """(arguments, hoisted lines, loop body) of one chain whose element index is `i`; names carry
    the prefix p (the segment's number) so that segments share a kernel."""
    shape = f"shape{p[:-1]}" if p else "shape"
    args = [f"o{p}{k}{suffix}" for k in range(len(outputs)) for suffix in ("", "_off", "_st")]
    hoisted, body = [], []
    for k, kind in enumerate(kinds):
        if isinstance(kind, np.dtype):
            args += [f"a{p}{k}", f"a{p}{k}_off", f"a{p}{k}_st"]
            body.append(f"x{p}{k} = {widen(f'a{p}{k}[S.element(i, {shape}, a{p}{k}_st, a{p}{k}_off)]', kind)}")
        elif kind is not None:
            args.append(f"a{p}{k}")
            hoisted.append(f"    x{p}{k} = a{p}{k}")
    consumed = {r[1] for _, _, refs, _ in steps for r in refs if r[0] == "t"} | set(sums)
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
            source = f"x{p}{ref[1]}" if ref[0] == "in" else f"t{p}{ref[1]}"
            operands.append(scalar.operand(narrow(source, target), target))
        fn = scalar_of(op)
        shared, expr = ([], "i") if fn is iota else \
            CUDA.render_lines(scalar.evaluate(fn, operands, dict(params)), ct, f"s{p}{j}_")
        body += shared
        body.append(f"t{p}{j} = {_step_value(expr, out_dtype, j in consumed)}")
    body += [f"o{p}{k}[S.element(i, {shape}, o{p}{k}_st, o{p}{k}_off)] = {narrow(f't{p}{j}', steps[j][3])}"
             for k, j in enumerate(outputs)]
    return args, hoisted, [indent + line for line in body]


def kernel_for(op, params: tuple, kinds: tuple, out_dtype: np.dtype):
    """The kernel of one step (op: a primitive, or copy / iota) over operands of these kinds."""
    step = (scalar_of(op), params, tuple(("in", k) for k in range(len(kinds))), np.dtype(out_dtype))
    return compile_source(chain_source(kinds, (step,), (0,)))


def chain_kernel(kinds: tuple, steps: tuple, outputs: tuple):
    return compile_source(chain_source(kinds, steps, outputs))


def fused_kernel(segments: tuple):
    return compile_source(fused_source(segments))


def as_operands(values: list) -> tuple[list, tuple]:
    """Values as run_chain takes them (a host 0-d array, which combines with device arrays, as a
    Python scalar) and their kinds."""
    values = [x.item() if isinstance(x, np.ndarray) else x for x in values]
    return values, tuple(_kind(x) for x in values)


def run_chain(kinds: tuple, steps: tuple, outputs: tuple, operands: list, shape: tuple,
              outs: list[DeviceValue]) -> list[DeviceValue]:
    """Launch chain_source's kernel: operands match kinds, outs (views of `shape`) match outputs."""
    if math.prod(shape):
        run_fused([Chain(kinds, steps, outputs, operands, shape, outs)])
    return outs


class Chain(NamedTuple):
    """One segment of a fused launch (fused_source) with its values: operands match kinds, outs
    (views of `shape`) match outputs, and sum_outs (fresh, of shape[lead:]) match sums."""
    kinds: tuple
    steps: tuple
    outputs: tuple
    operands: list
    shape: tuple
    outs: list
    sums: tuple = ()
    lead: int = 0
    sum_outs: tuple = ()

    def key(self) -> tuple:
        return self.kinds, self.steps, self.outputs, self.sums, bool(self.sums) and self.lead == len(self.shape)

    def threads(self) -> int:
        return math.prod(self.shape[self.lead:] if self.sums else self.shape)


def run_fused(chains: list[Chain]) -> None:
    """Launch fused_source's kernel for these chains (none of them empty)."""
    args, end = [], 0
    for chain in chains:
        arrays = [x for x in chain.operands if isinstance(x, DeviceValue)]
        strides = [broadcast_strides(o, chain.shape) for o in chain.outs] + \
                  [broadcast_strides(x, chain.shape) for x in arrays]
        cshape, cstrides = collapse(chain.shape, *strides)
        end += chain.threads()
        args += [end, cshape]
        if chain.sums:
            args.append(math.prod(chain.shape[:chain.lead]))
        for o, st in zip(chain.outs, cstrides):
            args += [o.data, o.offset, st]
        it = iter(cstrides[len(chain.outs):])
        for x in chain.operands:
            if isinstance(x, DeviceValue):
                args += [x.data, x.offset, next(it)]
            elif x is not None:
                args.append(x)
        args += [q.data for q in chain.sum_outs]
    if len(chains) > 1 or chains[0].sums:
        args.insert(0, end)  # the total (chain_source's kernel starts with its own n)
    launch(fused_kernel(tuple(c.key() for c in chains)), *launch_shape(end), *args)


def apply(op, operands: list, out_dtype: np.dtype, params: dict | None = None,
          out: DeviceValue | None = None, shape: tuple | None = None) -> DeviceValue:
    """out = op(*operands), broadcasting; op is a primitive, or copy / iota; operands are
    DeviceValues, Python scalars or None. out may be a view that is also an operand (accumulation in
    place: col2im)."""
    params = params or {}
    operands, kinds = as_operands(operands)
    if shape is None:
        shape = broadcast_shapes(*(x.shape for x in operands if isinstance(x, DeviceValue)))
    if out is None:
        out = empty(shape, out_dtype)
    step = (scalar_of(op), tuple(sorted(params.items())), tuple(("in", k) for k in range(len(kinds))), out.dtype)
    return run_chain(kinds, (step,), (0,), operands, tuple(shape), [out])[0]


def ptx_signature(kinds: tuple, out_dtype, ndim: int) -> tuple:
    """The numba argument types of a kernel_for(..., kinds, out_dtype) launch at rank ndim."""
    return chain_signature(kinds, (0,), ((None, None, None, np.dtype(out_dtype)),), ndim)


def chain_signature(kinds: tuple, outputs: tuple, steps: tuple, ndim: int) -> tuple:
    """The numba argument types of a run_chain launch at rank ndim."""
    return (scalar_type(INDEX), tuple_type(ndim)) + _segment_signature(kinds, outputs, steps, ndim)


def fused_signature(segments: tuple, ndim: int) -> tuple:
    """The numba argument types of a run_fused launch of segments (fused_source's) at rank ndim."""
    sig = [scalar_type(INDEX)]
    for kinds, steps, outputs, sums, _ in segments:
        sig += [scalar_type(INDEX), tuple_type(ndim)] + ([scalar_type(INDEX)] if sums else [])
        sig += _segment_signature(kinds, outputs, steps, ndim) + tuple(array_type(steps[j][3]) for j in sums)
    return tuple(sig)


def _segment_signature(kinds: tuple, outputs: tuple, steps: tuple, ndim: int) -> tuple:
    sig = []
    for j in outputs:
        sig += [array_type(steps[j][3]), scalar_type(INDEX), tuple_type(ndim)]
    for kind in kinds:
        if isinstance(kind, np.dtype):
            sig += [array_type(kind), scalar_type(INDEX), tuple_type(ndim)]
        elif kind is not None:
            sig.append(scalar_type({bool: np.bool_, int: np.int64, float: np.float64, complex: np.complex128}[kind]))
    return tuple(sig)
