"""jit: trace a function once per signature into a Program, optimise it, and replay it.

On a call, the cache is keyed by the pytree structure of the arguments, each leaf's shape and
dtype, and the static arguments. On a miss the function runs once on abstract tracers (shapes
and dtypes, no values), which records a Program; constant folding, common-subexpression and
dead-code elimination simplify it, and chains of elementwise equations fuse into generated
numba kernels. What runs on a hit is straight-line Python calling the NumPy implementations and
the fused kernels directly: no tracers, no dispatch. For arrays on a GPU the same elementwise
groups become generated CUDA kernels and every other equation calls its CUDA implementation. Intermediates are released after their
last use, and a fused kernel writes into a dead intermediate's buffer (or a donated argument's)
when one of the right shape is free, so a jitted optimiser step updates parameters in place.
"""
from __future__ import annotations

import contextlib
import functools
import inspect
import logging
from typing import Any, Callable, NamedTuple, Sequence

import numpy as np

from . import dtypes
from .array import CPU, Array, Device, ExternalValue, to_numpy
from .config import config
from .cpu import fusion
from .errors import ConcretizationError, DeviceMismatchError
from .ops import linalg as L
from .ops import shape as S
from .program import (Const, Eqn, Program, ShapedArray, Var, fold_transposes, fresh_var, last_uses, optimize,
                      schedule, transpose_matmul_outputs)
from .trace import Trace, Tracer, annotate, impl_error, user_frame
from .tree import keystr, tree_flatten, tree_flatten_with_path, tree_map

log = logging.getLogger("funcgrad.jit")

__all__ = ["jit", "make_program"]


# ==== abstract tracing ==============================================================================
class JitTracer(Tracer):
    __slots__ = ("aval", "var", "origin")

    def __init__(self, trace, aval: ShapedArray, var: Var, origin: str):
        self._trace = trace
        self.aval = aval
        self.var = var
        self.origin = origin

    shape = property(lambda self: self.aval.shape)
    dtype = property(lambda self: self.aval.dtype)
    device = property(lambda self: self._trace.device)

    def concrete(self, what: str = "the value"):
        raise ConcretizationError(
            f"jit: {what} of a traced array (derived from {self.origin}) at {user_frame()}. Inside jit only "
            f"shapes and dtypes are known, not values: mark the argument static (static_argnums / "
            f"static_argnames), or replace the Python branch with fnp.where or fg.cond")

    def primal(self):
        return self.concrete()

    def __repr__(self):
        return f"JitTracer({self.aval!r}, from {self.origin})"


class _ClosedOverTracer(Exception):
    """The function reads a value traced by an outer transform: run it eagerly instead."""


def _dummy(aval: ShapedArray) -> np.ndarray:
    """A stand-in value for abstract evaluation: ones for floats (no 0/0), zeros for indices."""
    return (np.ones if dtypes.is_float(aval.dtype) else np.zeros)(aval.shape, aval.dtype)


def abstract_eval(prim, inputs: list, params: dict) -> ShapedArray:
    """The output shape and dtype of prim, by running its implementation on stand-in values."""
    if prim.shape_rule is not None:
        shape, dtype = prim.shape_rule(*[(x.aval.shape, x.aval.dtype) if isinstance(x, Var) else
                                         (tuple(x.value.shape), x.value.dtype) if hasattr(x.value, "dtype") else
                                         (np.shape(x.value), np.asarray(x.value).dtype) for x in inputs], **params)
        return ShapedArray(tuple(shape), np.dtype(dtype))
    values = [_dummy(x.aval) if isinstance(x, Var) else
              _dummy(ShapedArray(x.value.shape, x.value.dtype)) if isinstance(x.value, ExternalValue) else x.value
              for x in inputs]
    try:
        with np.errstate(all="ignore"):
            out = prim.impl(*values, **params)
    except (ValueError, IndexError, TypeError) as e:
        raise impl_error(prim, [v if not isinstance(x, Var) else x.aval for v, x in zip(values, inputs)], e) from None
    out = np.asarray(out)
    return ShapedArray(out.shape, out.dtype)


class JitTrace(Trace):
    __slots__ = ("eqns", "device")

    def __init__(self, device: Device = CPU):
        super().__init__("jit")
        self.eqns: list[Eqn] = []
        self.device = device  # where the traced arrays live: constants made while tracing go there too

    def process(self, prim, args, params):
        self.check_alive()
        inputs, origin = [], None
        for a in args:
            if type(a) is JitTracer and a._trace is self:
                inputs.append(a.var)
                origin = origin or a.origin
            elif isinstance(a, Tracer):
                raise _ClosedOverTracer
            elif type(a) is Array:
                inputs.append(Const(a._value))
            else:
                inputs.append(Const(a))
        out = fresh_var(abstract_eval(prim, inputs, params))
        self.eqns.append(Eqn(prim, inputs, params, out))
        return JitTracer(self, out.aval, out, origin or "a constant")

    def process_custom_vjp(self, fn, args):
        return fn.fun(*args)  # nothing is differentiated at this level: trace the plain function

    def process_checkpoint(self, fun, args):
        return fun(*args)


def _arg_names(fun: Callable, n: int) -> list[str]:
    try:
        names = [p.name for p in inspect.signature(fun).parameters.values()
                 if p.kind in (p.POSITIONAL_ONLY, p.POSITIONAL_OR_KEYWORD)]
    except (TypeError, ValueError):
        names = []
    return [repr(names[i]) if i < len(names) else f"#{i}" for i in range(n)]


def _leaf_origins(fun, dyn_args, dyn_kwargs) -> list[str]:
    names = _arg_names(fun, len(dyn_args))
    origins = []
    for i, arg in enumerate(dyn_args):
        with_path, _ = tree_flatten_with_path(arg)
        origins += [f"argument {names[i]}" + (f" at {keystr(p)}" if p else "") for p, _ in with_path]
    for k in sorted(dyn_kwargs):
        with_path, _ = tree_flatten_with_path(dyn_kwargs[k])
        origins += [f"argument {k!r}" + (f" at {keystr(p)}" if p else "") for p, _ in with_path]
    return origins


def trace_program(fun: Callable, avals: Sequence[ShapedArray], rebuild: Callable, origins: Sequence[str],
                  device: Device = CPU):
    """Run fun on abstract tracers: (Program, output treedef)."""
    with JitTrace(device) as trace:
        in_vars = [fresh_var(a) for a in avals]
        tracers = [JitTracer(trace, a, v, o) for a, v, o in zip(avals, in_vars, origins)]
        out = rebuild(tracers)
        out_leaves, out_tree = tree_flatten(out)
        outs = []
        for leaf in out_leaves:
            if type(leaf) is JitTracer and leaf._trace is trace:
                outs.append(leaf.var)
            elif isinstance(leaf, Tracer):
                raise _ClosedOverTracer
            else:
                outs.append(Const(leaf._value if type(leaf) is Array else leaf))
        return Program(in_vars, trace.eqns, outs), out_tree


# ==== code generation ================================================================================
# Primitives whose output is always a fresh buffer (never a view of an input), so it may be overwritten
# once dead. Everything else is assumed to alias its inputs.
_FRESH = frozenset(set(fusion.TEMPLATES) - {"stop_gradient", "convert"}) | {
    "matmul", "softmax", "log_softmax", "concatenate", "pad", "scatter_add", "col2im", "cumsum", "threefry2x32"}


def _fusable(eqn: Eqn) -> bool:
    if eqn.prim.name not in fusion.TEMPLATES or eqn.out.aval.dtype not in fusion.FUSABLE_DTYPES:
        return False
    shape = eqn.out.aval.shape
    for x in eqn.inputs:
        if isinstance(x, Var):
            if x.aval.shape not in (shape, ()) or x.aval.dtype not in fusion.FUSABLE_DTYPES:
                return False
        elif x.value is not None:
            v = x.value if hasattr(x.value, "dtype") else np.asarray(x.value)
            if v.shape not in (shape, ()) or (v.dtype not in fusion.FUSABLE_DTYPES and v.dtype.kind != "f"):
                return False
    return shape != ()


def _groups(eqns: list[Eqn]) -> list[list[Eqn]]:
    """Runs of consecutive fusable equations of one output shape; other equations stand alone."""
    groups: list[list[Eqn]] = []
    current: list[Eqn] = []
    for eqn in eqns:
        if _fusable(eqn) and (not current or eqn.out.aval.shape == current[0].out.aval.shape):
            current.append(eqn)
            continue
        if current:
            groups.append(current)
            current = []
        if _fusable(eqn):
            current.append(eqn)
        else:
            groups.append([eqn])
    if current:
        groups.append(current)
    return groups


def _fusion_key(eqn: Eqn):
    return eqn.out.aval.shape if _fusable(eqn) else None


def _lower(program: Program) -> Program:
    """The passes between tracing and code generation."""
    program = fold_transposes(transpose_matmul_outputs(optimize(program), L.matmul_p, S.transpose_p), S.transpose_p)
    return schedule(program, _fusion_key)


class _Codegen:
    """Emits the straight-line Python that runs a Program."""

    def __init__(self, program: Program, donated: set[int]):
        self.program = program
        self.namespace: dict[str, Any] = {"np": np, "_flat": _flat, "_scalar": _scalar, "_writable": _writable,
                                          "_is_array": _is_array}
        self.lines: list[str] = []
        self.names: dict[int, str] = {v.id: f"a{i}" for i, v in enumerate(program.in_vars)}
        self.donated = {program.in_vars[i].id for i in donated}
        self.last = last_uses(program)
        self.buffer_last, self.roots = self._buffer_lifetimes()

    def _buffer_lifetimes(self):
        """For each var, the buffers it may alias; for each owned buffer, its last reader."""
        roots: dict[int, frozenset] = {v.id: frozenset([v.id]) for v in self.program.in_vars}
        for eqn in self.program.eqns:
            if eqn.prim.name in _FRESH:
                roots[eqn.out.id] = frozenset([eqn.out.id])
            else:
                roots[eqn.out.id] = frozenset().union(*(roots.get(x.id, frozenset()) for x in eqn.inputs
                                                        if isinstance(x, Var)))
        buffer_last: dict[int, int] = {}
        for var_id, rs in roots.items():
            for r in rs:
                buffer_last[r] = max(buffer_last.get(r, -1), self.last.get(var_id, -1))
        return buffer_last, roots

    def const(self, value) -> str:
        name = f"c{len(self.namespace)}"
        self.namespace[name] = value
        return name

    def ref(self, x) -> str:
        return self.names[x.id] if isinstance(x, Var) else self.const(x.value)

    def name(self, var: Var) -> str:
        self.names[var.id] = f"v{var.id}"
        return self.names[var.id]

    def emit_eqn(self, eqn: Eqn):
        fn = self.const(functools.partial(eqn.prim.impl, **eqn.params) if eqn.params else eqn.prim.impl)
        args = ", ".join(self.ref(x) for x in eqn.inputs)
        self.lines.append(f"{self.name(eqn.out)} = {fn}({args})")

    def emit_group(self, group: list[Eqn], end: int):
        inputs: list[Var | Const] = []
        index: dict = {}
        steps = []
        local: dict[int, str] = {}
        for eqn in group:
            refs, none_consts = [], []
            # a literal takes its operands' dtype; select's branches take the output's (its first
            # operand is the boolean condition)
            operand_dtype = eqn.out.aval.dtype if eqn.prim.name == "select" else next(
                (x.aval.dtype for x in eqn.inputs if isinstance(x, Var)), eqn.out.aval.dtype)
            for x in eqn.inputs:
                none_consts.append(isinstance(x, Const) and x.value is None)
                if isinstance(x, Var) and x.id in local:
                    refs.append(local[x.id])
                elif isinstance(x, Const) and (x.value is None or np.ndim(x.value) == 0):
                    refs.append("None" if x.value is None else fusion.literal(x.value, operand_dtype))
                else:
                    key = x.id if isinstance(x, Var) else ("c", id(x.value))
                    if key not in index:
                        index[key] = len(inputs)
                        inputs.append(x)
                    refs.append(f"x{index[key]}")
            local[eqn.out.id] = f"t{len(steps)}"
            dtype = eqn.out.aval.dtype
            steps.append((fusion.TEMPLATES[eqn.prim.name](refs, eqn.params, none_consts, dtype), dtype))
        outputs = [i for i, e in enumerate(group) if self.last.get(e.out.id, -1) > end]
        shape = group[0].out.aval.shape
        scalar = [isinstance(x, Var) and x.aval.shape == () for x in inputs]
        in_refs = [self.const(np.ascontiguousarray(x.value).reshape(-1)) if isinstance(x, Const) else
                   f"_scalar({self.names[x.id]})" if is_scalar else f"_flat({self.names[x.id]})"
                   for x, is_scalar in zip(inputs, scalar)]
        free = [x for x in inputs if isinstance(x, Var) and self._reusable(x, end)]
        out_names, in_place = [], {}
        for k, i in enumerate(outputs):
            var = group[i].out
            name = self.name(var)
            buf = next((x for x in free if x.aval == var.aval), None)
            if buf is None:
                self.lines.append(f"{name} = np.empty({var.aval.shape!r}, {self.const(var.aval.dtype)})")
                out_names.append(f"{name}.reshape(-1)")
                continue
            free.remove(buf)
            src = self.names[buf.id]
            check = "_writable" if buf.id in self.donated else "_is_array"
            # The output overwrites the input it reads; a buffer we may not write is copied first.
            self.lines.append(f"{name} = {src} if {check}({src}) else np.array({src}, order='C')")
            in_place[k] = inputs.index(buf)
            in_refs[in_place[k]] = f"{name}.reshape(-1)"
        parallel = int(np.prod(shape, dtype=np.int64)) >= fusion.PARALLEL_MIN_SIZE
        kernel = self.const(_LazyKernel(fusion.kernel_source(scalar, steps, outputs, parallel, in_place)))
        self.lines.append(f"{kernel}({', '.join(in_refs + out_names)})")

    def _reusable(self, x: Var, end: int) -> bool:
        owned = self.roots.get(x.id) == frozenset([x.id]) and (x.id in self.donated or x.id not in
                                                              {v.id for v in self.program.in_vars})
        return owned and x.aval.shape != () and self.buffer_last.get(x.id, -1) <= end

    def release(self, first: int, last: int):
        dead = [self.names[i] for i, end in self.last.items()
                if first <= end <= last and i in self.names and self.names[i].startswith("v")]
        if dead:
            self.lines.append(f"del {', '.join(dead)}")

    def build(self) -> Callable:
        position = 0
        for group in _groups(self.program.eqns):
            end = position + len(group) - 1
            if len(group) >= 2:
                self.emit_group(group, end)
            else:
                self.emit_eqn(group[0])
            self.release(position, end)
            position = end + 1
        outs = ", ".join(self.ref(o) for o in self.program.outs)
        args = ", ".join(f"a{i}" for i in range(len(self.program.in_vars)))
        source = f"def run({args}):\n" + "".join(f"    {line}\n" for line in self.lines) + f"    return [{outs}]\n"
        exec(compile(source, "<funcgrad.jit>", "exec"), self.namespace)  # noqa: S102  (our generated code)
        run = self.namespace["run"]
        run.source = source
        return run


def _device_group(group: list[Eqn], needed: set[int], device_const) -> Callable:
    """A fused elementwise group as one generated CUDA kernel: its steps read the group's external
    inputs once per element and store only the values used after the group."""
    from .cuda.buffer import empty
    from .cuda.kernels import elementwise
    produced = {eqn.out.id: j for j, eqn in enumerate(group)}
    externals, index, steps = [], {}, []
    for eqn in group:
        refs = []
        for x in eqn.inputs:
            if isinstance(x, Var) and x.id in produced:
                refs.append(("t", produced[x.id]))
                continue
            key = ("v", x.id) if isinstance(x, Var) else ("c", id(x))
            if key not in index:
                index[key] = len(externals)
                externals.append(x if isinstance(x, Var) else device_const(x))
            refs.append(("in", index[key]))
        steps.append((eqn.prim.name, tuple(sorted(eqn.params.items())), tuple(refs), eqn.out.aval.dtype))
    outputs = tuple(j for j, eqn in enumerate(group) if eqn.out.id in needed)
    shape = group[0].out.aval.shape

    def kind(x):
        if isinstance(x, Var):
            return x.aval.dtype
        return x.dtype if isinstance(x, ExternalValue) else (None if x is None else type(x))
    kinds = tuple(kind(x) for x in externals)

    def run(env):
        operands = [env[x] if isinstance(x, Var) else x for x in externals]
        outs = [empty(shape, steps[j][3]) for j in outputs]
        elementwise.run_chain(kinds, tuple(steps), outputs, operands, shape, outs)
        for j, out in zip(outputs, outs):
            env[group[j].out] = out
    return run


def _device_interpreter(program: Program, platform: str) -> Callable:
    """Run a program on a GPU: runs of elementwise equations fuse into one generated kernel each,
    every other equation calls its primitive's kernels for that device (the arrays stay there).
    Host constants the trace captured are copied to the device once, here."""
    from .devices import device_put

    def device_const(x: Const):
        value = x.value
        if isinstance(value, np.ndarray) and value.ndim:
            return device_put(Array(value), platform)._value
        return value.item() if isinstance(value, (np.ndarray, np.generic)) else value

    used_later: dict[int, int] = {}
    for position, eqn in enumerate(program.eqns):
        for x in eqn.inputs:
            if isinstance(x, Var):
                used_later[x.id] = position
    outs = {o.id for o in program.outs if isinstance(o, Var)}
    runs, position = [], 0
    for group in _groups(program.eqns):
        end = position + len(group)
        if len(group) >= 2:
            needed = {e.out.id for e in group if e.out.id in outs or used_later.get(e.out.id, -1) >= end}
            runs.append(_device_group(group, needed, device_const))
        else:
            eqn = group[0]
            impl = eqn.prim.impls[platform]
            inputs = [x if isinstance(x, Var) else device_const(x) for x in eqn.inputs]
            runs.append(lambda env, impl=impl, inputs=inputs, params=eqn.params, out=eqn.out: env.__setitem__(
                out, impl(*[env[x] if isinstance(x, Var) else x for x in inputs], **params)))
        position = end

    def run(*values):
        env = dict(zip(program.in_vars, values))
        for step in runs:
            step(env)
        return [env[o] if isinstance(o, Var) else o.value for o in program.outs]
    return run


class _LazyKernel:
    """Compiles its numba kernel on first call (so tracing and printing stay cheap)."""
    __slots__ = ("source", "kernel")

    def __init__(self, source: str):
        self.source, self.kernel = source, None

    def __call__(self, *args):
        if self.kernel is None:
            self.kernel = fusion.compile_kernel(self.source)
        return self.kernel(*args)


def _flat(x) -> np.ndarray:
    return np.ascontiguousarray(x).reshape(-1)


def _is_array(x) -> bool:
    return isinstance(x, np.ndarray) and x.flags.writeable and x.flags.c_contiguous

def _scalar(x) -> np.ndarray:
    return np.asarray(x).reshape(1)


def _writable(x) -> bool:
    return isinstance(x, np.ndarray) and x.flags.writeable and x.flags.c_contiguous and x.base is None


# ==== the public transform ============================================================================
def _platform(values) -> str:
    """Where a call's arrays live: 'cpu', or the GPU platform when any does (then all must, but
    0-d host scalars, which combine with any device as in PyTorch)."""
    device = next((v.device for v in values if isinstance(v, ExternalValue)), None)
    if device is None:
        return "cpu"
    for i, v in enumerate(values):
        if not isinstance(v, ExternalValue) and np.ndim(v):
            raise DeviceMismatchError(f"jit: argument leaf {i} is on cpu but others are on {device}; "
                                      f"move it with fg.device_put(x, '{device}')")
    return device.platform



class _Donated:
    """What a donated Array holds once its buffer belongs to the jitted function."""

    def __getattr__(self, name):
        raise RuntimeError("this array was donated to a jitted function (donate_argnums), which may have "
                           "reused its buffer; use the function's outputs instead")

    def __array__(self, *args, **kwargs):
        self.__getattr__("data")


class _Compiled:
    """A program, the function that runs it, the output structure and the donated leaf positions."""
    __slots__ = ("program", "run", "out_tree", "donated")

    def __init__(self, program: Program, run: Callable, out_tree, donated: frozenset = frozenset()):
        self.program, self.run, self.out_tree, self.donated = program, run, out_tree, donated


def _normalize(nums, n: int, what: str) -> tuple[int, ...]:
    nums = (nums,) if isinstance(nums, int) else tuple(nums)
    for a in nums:
        if not -n <= a < n:
            raise ValueError(f"jit: {what} {a} is out of range for a call with {n} positional arguments")
    return tuple(sorted(a % n for a in nums))


def _rebuilder(fun, args, kwargs, in_tree, static_nums) -> Callable:
    """tracers -> fun called with them in place of the dynamic arguments."""
    def rebuild(tracers):
        dyn_args, dyn_kwargs = in_tree.unflatten(tracers)
        it = iter(dyn_args)
        full = [args[i] if i in static_nums else next(it) for i in range(len(args))]
        return fun(*full, **{**kwargs, **dyn_kwargs})
    return rebuild


class Jitted:
    """The callable fg.jit returns; `.lower(*args)` gives the optimised Program for those arguments."""

    def __init__(self, fun: Callable, static_argnums=(), static_argnames=(), donate_argnums=()):
        functools.update_wrapper(self, fun)
        self.fun = fun
        self.static_argnums = (static_argnums,) if isinstance(static_argnums, int) else tuple(static_argnums)
        self.static_argnames = (static_argnames,) if isinstance(static_argnames, str) else tuple(static_argnames)
        self.donate_argnums = (donate_argnums,) if isinstance(donate_argnums, int) else tuple(donate_argnums)
        self.cache: dict[Any, _Compiled] = {}

    def _split(self, args, kwargs):
        static_nums = _normalize(self.static_argnums, len(args), "static_argnums")
        statics = tuple((i, args[i]) for i in static_nums) + tuple(
            (k, kwargs[k]) for k in sorted(kwargs) if k in self.static_argnames)
        for where, value in statics:
            try:
                hash(value)
            except TypeError:
                raise TypeError(f"jit: static argument {where!r} must be hashable, got {type(value).__name__}") from None
        dyn_args = [a for i, a in enumerate(args) if i not in static_nums]
        dyn_kwargs = {k: v for k, v in kwargs.items() if k not in self.static_argnames}
        return statics, dyn_args, dyn_kwargs, static_nums

    def _prepare(self, args, kwargs):
        if not kwargs and not self.static_argnums and all(type(a) is Array for a in args):
            values = [a._value for a in args]  # the common case, keyed without flattening
            key = (len(args), tuple((v.shape, v.dtype) for v in values), (), _platform(values))
            return key, list(args), values, None, (), (), list(args), {}
        statics, dyn_args, dyn_kwargs, static_nums = self._split(args, kwargs)
        leaves, in_tree = tree_flatten((dyn_args, dyn_kwargs))
        if any(isinstance(leaf, Tracer) for leaf in leaves):
            return None
        values = [leaf._value if type(leaf) is Array else to_numpy(leaf) for leaf in leaves]
        key = (in_tree, tuple((v.shape, v.dtype) for v in values), statics, _platform(values))
        return key, leaves, values, in_tree, statics, static_nums, dyn_args, dyn_kwargs

    def _compile(self, key, args, kwargs, in_tree, static_nums, dyn_args, dyn_kwargs) -> _Compiled:
        avals = tuple(ShapedArray(shape, dtype) for shape, dtype in key[1])
        if in_tree is None:
            in_tree = tree_flatten((dyn_args, dyn_kwargs))[1]
        if config.log_compiles:
            log.warning("jit: compiling %s for %s%s", getattr(self.fun, "__name__", "function"),
                        ", ".join(map(repr, avals)), self._retrace_reason(key))

        rebuild = _rebuilder(self.fun, args, kwargs, in_tree, static_nums)
        platform = key[3]
        program, out_tree = trace_program(self.fun, avals, rebuild, _leaf_origins(self.fun, dyn_args, dyn_kwargs),
                                          Device(platform))
        program = _lower(program)
        if platform != "cpu":
            return _Compiled(program, _device_interpreter(program, platform), out_tree)
        donated = self._donated_leaves(args, static_nums)
        return _Compiled(program, _Codegen(program, donated).build(), out_tree, frozenset(donated))

    def _donated_leaves(self, args, static_nums) -> set[int]:
        if not self.donate_argnums:
            return set()
        donate = _normalize(self.donate_argnums, len(args), "donate_argnums")
        positions, offset = set(), 0
        for i, arg in enumerate(args):
            if i in static_nums:
                continue
            n = len(tree_flatten(arg)[0])
            if i in donate:
                positions.update(range(offset, offset + n))
            offset += n
        return positions

    def _retrace_reason(self, key) -> str:
        same_tree = [k for k in self.cache if k[0] == key[0]]
        if not self.cache:
            return " (first call)"
        if not same_tree:
            return " (retrace: the argument structure changed)"
        old = same_tree[-1]
        for i, (a, b) in enumerate(zip(old[1], key[1])):
            if a != b:
                return (f" (retrace: leaf {i} changed from {ShapedArray(*a)!r} to {ShapedArray(*b)!r})")
        if old[3] != key[3]:
            return f" (retrace: the arrays are now on {key[3]}, not {old[3]})"
        return f" (retrace: static arguments changed from {old[2]!r} to {key[2]!r})"

    def __call__(self, *args, **kwargs):
        if config.disable_jit:
            return self.fun(*args, **kwargs)
        prepared = self._prepare(args, kwargs)
        if prepared is None:  # called under another transform: trace through it
            return self.fun(*args, **kwargs)
        key, leaves, values, in_tree, statics, static_nums, dyn_args, dyn_kwargs = prepared
        compiled = self.cache.get(key)
        if compiled is None:
            try:
                compiled = self._compile(key, args, kwargs, in_tree, static_nums, dyn_args, dyn_kwargs)
            except _ClosedOverTracer:
                return self.fun(*args, **kwargs)
            self.cache[key] = compiled
        donated = compiled.donated  # the cache key fixes the structure, so the positions are the compiled ones
        if donated:  # a buffer passed twice (mu and nu both zeros_like(p), say) must not be written
            counts: dict[int, int] = {}
            for v in values:
                counts[id(v)] = counts.get(id(v), 0) + 1
            values = [v.copy() if i in donated and counts[id(v)] > 1 else v for i, v in enumerate(values)]
        with annotate(f"jit:{getattr(self.fun, '__name__', 'function')}"):
            outs = compiled.run(*values)
        for i in donated:
            if type(leaves[i]) is Array:
                leaves[i]._value = _Donated()
        return compiled.out_tree.unflatten([Array(o) if isinstance(o, (np.ndarray, np.generic, ExternalValue)) else o
                                            for o in outs])

    def lower(self, *args, **kwargs) -> Program:
        """The optimised Program jit runs for these arguments."""
        prepared = self._prepare(args, kwargs)
        if prepared is None:
            raise TypeError("lower needs concrete arguments, not tracers")
        key, leaves, values, in_tree, statics, static_nums, dyn_args, dyn_kwargs = prepared
        compiled = self.cache.get(key) or self._compile(key, args, kwargs, in_tree, static_nums, dyn_args, dyn_kwargs)
        self.cache[key] = compiled
        return compiled.program


def jit(fun: Callable | None = None, *, static_argnums: int | Sequence[int] = (),
        static_argnames: str | Sequence[str] = (), donate_argnums: int | Sequence[int] = ()):
    """Compile fun: trace once per argument signature, then replay the optimised program.

    static_argnums / static_argnames: arguments that are Python values (flags, sizes), part of the
    cache key. donate_argnums: arguments whose buffers the function may reuse for its outputs
    (the caller must not use them afterwards)."""
    if fun is None:
        return lambda f: jit(f, static_argnums=static_argnums, static_argnames=static_argnames,
                             donate_argnums=donate_argnums)
    return Jitted(fun, static_argnums, static_argnames, donate_argnums)


def _trace_abstractly(fun: Callable, static_argnums, args, kwargs):
    """(Program, output tree) of fun for these arguments' shapes and dtypes."""
    jitted = Jitted(fun, static_argnums)
    prepared = jitted._prepare(args, kwargs)
    if prepared is None:
        raise TypeError("tracing a program needs concrete arguments, not tracers")
    key, _, _, in_tree, _, static_nums, dyn_args, dyn_kwargs = prepared
    in_tree = in_tree or tree_flatten((dyn_args, dyn_kwargs))[1]
    rebuild = _rebuilder(fun, args, kwargs, in_tree, static_nums)
    avals = [ShapedArray(shape, dtype) for shape, dtype in key[1]]
    return trace_program(fun, avals, rebuild, _leaf_origins(fun, dyn_args, dyn_kwargs), Device(key[3]))


def make_program(fun: Callable, static_argnums: int | Sequence[int] = (), optimized: bool = False) -> Callable:
    """fun -> a function of fun's arguments returning the Program jit records (like jax.make_jaxpr)."""
    def program_of(*args, **kwargs):
        if optimized:
            return jit(fun, static_argnums=static_argnums).lower(*args, **kwargs)
        return _trace_abstractly(fun, static_argnums, args, kwargs)[0]
    return program_of


class ShapeDtypeStruct(NamedTuple):
    """An array's shape and dtype without its values (jax.ShapeDtypeStruct)."""
    shape: tuple
    dtype: np.dtype

    @classmethod
    def of(cls, shape, dtype) -> "ShapeDtypeStruct":
        return cls(tuple(int(d) for d in shape), dtypes.canonicalize(dtype))


def eval_shape(fun: Callable, *args, **kwargs):
    """The shapes and dtypes fun returns for these arguments (arrays or ShapeDtypeStructs), as
    ShapeDtypeStructs, found by abstract tracing: nothing is computed."""
    def stand_in(x):  # a zero-strided view: no memory, whatever the shape
        if isinstance(x, ShapeDtypeStruct):
            return Array(np.broadcast_to(np.zeros((), dtypes.canonicalize(x.dtype)), tuple(x.shape)))
        return x
    is_struct = lambda x: isinstance(x, ShapeDtypeStruct)  # noqa: E731
    args, kwargs = tree_map(stand_in, (args, kwargs), is_leaf=is_struct)
    program, out_tree = _trace_abstractly(fun, (), args, kwargs)
    return out_tree.unflatten([ShapeDtypeStruct.of(o.aval.shape, o.aval.dtype) if isinstance(o, Var) else
                               ShapeDtypeStruct.of(np.shape(o.value), getattr(o.value, "dtype", None) or
                                                   np.asarray(o.value).dtype) for o in program.outs])


@contextlib.contextmanager
def disable_jit(disable: bool = True):
    """Inside this block jitted functions run eagerly, op by op (for print and pdb debugging)."""
    previous, config.disable_jit = config.disable_jit, disable
    try:
        yield
    finally:
        config.disable_jit = previous
