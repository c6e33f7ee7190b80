"""Elementwise kernels: one generated kernel per (operation, operand dtypes, output dtype), for any
rank (numba specialises on the length of the shape tuple), NumPy broadcasting and any strides.

The output may itself be a strided view (a slice of a larger array): copies into concatenations and
paddings, and col2im's accumulation, are elementwise kernels too.
"""
from __future__ import annotations

import math
from functools import cache

import numpy as np

from ... import dtypes
from ..buffer import DeviceValue, empty
from ..runtime import launch_shape
from .common import (HALF, INDEX, array_type, broadcast_strides, cast, collapse, compile_source, compute_dtype,
                     literal, narrow, round_to, scalar_type, tuple_type, widen)


def _op(symbol):
    return lambda a, p, ct: f"({a[0]} {symbol} {a[1]})"


def _call(fn):
    return lambda a, p, ct: f"S.{fn}({', '.join(a)})"


def _float_only(fn, otherwise):
    """fn for floats; for integers and booleans, `otherwise(arg)`."""
    return lambda a, p, ct: f"S.{fn}({a[0]})" if ct.kind == "f" else otherwise(a[0])


def _sign(a, p, ct):
    x = a[0]
    if ct.kind == "f":
        return f"({literal(1, ct)} if {x} > 0 else ({literal(-1, ct)} if {x} < 0 else {x}))"
    return f"(({x} > 0) - ({x} < 0))"


def _gelu(a, p, ct):
    x = a[0]
    if p["approximate"]:
        c = literal(math.sqrt(2 / math.pi), ct)
        return f"({literal(0.5, ct)} * {x} * ({literal(1, ct)} + S.tanh({c} * ({x} + {literal(0.044715, ct)} * {x} * {x} * {x}))))"
    return f"({literal(0.5, ct)} * {x} * ({literal(1, ct)} + S.erf({x} * {literal(1 / math.sqrt(2), ct)})))"


def _clip(a, p, ct):
    x, lo, hi = a
    if lo != "None":
        x = f"({lo} if {x} < {lo} else {x})"
    if hi != "None":
        x = f"({hi} if {x} > {hi} else {x})"
    return x


def _sigmoid(a, p, ct):
    x, one = a[0], literal(1, ct)
    return f"({one} / ({one} + S.exp(-{x})) if {x} >= 0 else S.exp({x}) / ({one} + S.exp({x})))"


# name -> expression(args as compute-typed source, params, compute dtype). NaN propagates as in NumPy.
TEMPLATES = {
    "add": _op("+"), "sub": _op("-"), "mul": _op("*"), "div": _op("/"), "pow": _op("**"),
    "remainder": _op("%"), "floor_divide": _op("//"),
    "maximum": lambda a, p, ct: f"({a[0]} if ({a[0]} >= {a[1]} or {a[0]} != {a[0]}) else {a[1]})",
    "minimum": lambda a, p, ct: f"({a[0]} if ({a[0]} <= {a[1]} or {a[0]} != {a[0]}) else {a[1]})",
    "arctan2": _call("atan2"),
    "eq": _op("=="), "ne": _op("!="), "lt": _op("<"), "le": _op("<="), "gt": _op(">"), "ge": _op(">="),
    "and": lambda a, p, ct: f"(({a[0]} != 0) & ({a[1]} != 0))",
    "or": lambda a, p, ct: f"(({a[0]} != 0) | ({a[1]} != 0))",
    "xor": lambda a, p, ct: f"(({a[0]} != 0) ^ ({a[1]} != 0))",
    "bitwise_and": _op("&"), "bitwise_or": _op("|"), "bitwise_xor": _op("^"),
    "left_shift": _op("<<"), "right_shift": _op(">>"),
    "not": lambda a, p, ct: f"({a[0]} == 0)",
    "invert": lambda a, p, ct: f"({a[0]} == 0)" if ct == dtypes.bool_ else f"(~{a[0]})",
    "neg": lambda a, p, ct: f"(-{a[0]})", "abs": lambda a, p, ct: f"abs({a[0]})", "sign": _sign,
    "isnan": _float_only("isnan", lambda x: "False"), "isinf": _float_only("isinf", lambda x: "False"),
    "isfinite": _float_only("isfinite", lambda x: "True"),
    "floor": _float_only("floor", lambda x: x), "ceil": _float_only("ceil", lambda x: x),
    "trunc": _float_only("trunc", lambda x: x),
    "round": lambda a, p, ct: (f"S.rint{ct.itemsize * 8}({a[0]})" if ct.kind == "f" else a[0]),
    "square": lambda a, p, ct: f"({a[0]} * {a[0]})",
    "reciprocal": lambda a, p, ct: f"({literal(1, ct)} / {a[0]})",
    **{name: _call(fn) for name, fn in [
        ("exp", "exp"), ("expm1", "expm1"), ("log", "log"), ("log1p", "log1p"), ("log2", "log2"),
        ("log10", "log10"), ("sqrt", "sqrt"), ("sin", "sin"), ("cos", "cos"), ("tan", "tan"), ("tanh", "tanh"),
        ("sinh", "sinh"), ("cosh", "cosh"), ("arctan", "atan"), ("arcsin", "asin"), ("arccos", "acos"),
        ("arcsinh", "asinh"), ("arccosh", "acosh"), ("arctanh", "atanh"), ("erf", "erf")]},
    "relu": lambda a, p, ct: f"({a[0]} if ({a[0]} > 0 or {a[0]} != {a[0]}) else {literal(0, ct)})",
    "sigmoid": _sigmoid,
    "softplus": lambda a, p, ct: (f"(({a[0]} if {a[0]} > 0 else {literal(0, ct)}) + "
                                  f"S.log1p(S.exp(-abs({a[0]}))))"),
    "gelu": _gelu, "clip": _clip,
    "select": lambda a, p, ct: f"({a[1]} if {a[0]} else {a[2]})",
    "convert": lambda a, p, ct: f"({a[0]} != 0)" if p["dtype"] == dtypes.bool_ else a[0],
    "copy": lambda a, p, ct: a[0],
    "stop_gradient": lambda a, p, ct: a[0],
    "iota": lambda a, p, ct: "i",  # the element's flat index (arange, into a fresh contiguous output)
}
# Operands keep their own dtype here; elsewhere they are cast to one compute dtype first.
_OWN_DTYPE = {"convert", "copy", "and", "or", "xor", "not", "isnan", "isinf", "isfinite",
              "left_shift", "right_shift"}


def _kind(x) -> object:
    """An operand's part of the kernel key: its dtype, or a Python scalar's type, or None."""
    if isinstance(x, DeviceValue):
        return x.dtype
    return None if x is None else type(x)


def _compute_dtype(name: str, kinds: tuple, out_dtype: np.dtype) -> np.dtype:
    """Operands are cast to the output's dtype (widened), except for tests and comparisons,
    which compare in the operands' common dtype."""
    if out_dtype != dtypes.bool_ or name in ("select", "clip", "convert", "copy", "iota"):
        return compute_dtype(out_dtype)
    arrays = [k for k in kinds if isinstance(k, np.dtype)]
    weak = [{bool: False, int: 0, float: 0.0}[k] for k in kinds if isinstance(k, type)]
    return compute_dtype(np.result_type(*arrays, *weak))


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
    or None; steps: (name, params, refs, out dtype) with refs ("in", k) or ("t", j) for an earlier
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
    for j, (name, params, refs, out_dtype) in enumerate(steps):
        arg_kinds = tuple(kinds[r[1]] if r[0] == "in" else steps[r[1]][3] for r in refs)
        ct = _compute_dtype(name, arg_kinds, out_dtype)
        names = []
        for pos, (ref, kind) in enumerate(zip(refs, arg_kinds)):
            if kind is None:
                names.append("None")
                continue
            source = f"x{ref[1]}" if ref[0] == "in" else f"t{ref[1]}"
            own = name in _OWN_DTYPE or (name == "select" and pos == 0)
            target = (kind if isinstance(kind, np.dtype) else np.result_type(kind(0))) if own else ct
            names.append(f"{cast(compute_dtype(target))}({source})")
        body.append(f"        t{j} = {_step_value(TEMPLATES[name](names, dict(params), ct), out_dtype, j in consumed)}")
    stores = [f"        o{k}[S.element(i, shape, o{k}_st, o{k}_off)] = {narrow(f't{j}', steps[j][3])}"
              for k, j in enumerate(outputs)]
    lines = ["@cuda.jit(cache=True)", f"def kernel({', '.join(args)}):", *hoisted,
             "    for i in range(cuda.grid(1), n, cuda.gridsize(1)):", *loads, *body, *stores]
    return "\n".join(lines) + "\n"


def _source(name: str, params: tuple, kinds: tuple, out_dtype: np.dtype) -> str:
    return chain_source(kinds, ((name, params, tuple(("in", k) for k in range(len(kinds))), out_dtype),), (0,))


def kernel_for(name: str, params: tuple, kinds: tuple, out_dtype: np.dtype):
    return compile_source(_source(name, params, kinds, np.dtype(out_dtype)))


def chain_kernel(kinds: tuple, steps: tuple, outputs: tuple):
    return compile_source(chain_source(kinds, steps, outputs))


def _scalar_value(x):
    if isinstance(x, np.ndarray):
        return x.item()
    return x


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
    chain_kernel(kinds, steps, outputs)[launch_shape(n)](*args)
    return outs


def apply(name: str, operands: list, out_dtype: np.dtype, params: dict | None = None,
          out: DeviceValue | None = None, shape: tuple | None = None) -> DeviceValue:
    """out = op(*operands), broadcasting; operands are DeviceValues, Python scalars or None.
    out may be a view that is also an operand (accumulation in place: col2im)."""
    params = params or {}
    operands = [_scalar_value(x) for x in operands]
    if shape is None:
        shape = np.broadcast_shapes(*(x.shape for x in operands if isinstance(x, DeviceValue)))
    if out is None:
        out = empty(shape, out_dtype)
    kinds = tuple(_kind(x) for x in operands)
    step = (name, tuple(sorted(params.items())), tuple(("in", k) for k in range(len(kinds))), out.dtype)
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
            sig.append(scalar_type({bool: np.bool_, int: np.int64, float: np.float64}[kind]))
    return tuple(sig)
