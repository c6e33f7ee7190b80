"""jit: trace a function once per signature into a Program, optimise it, and replay it.

On a call, the cache is keyed by the pytree structure of the arguments, each leaf's shape and
dtype, and the static arguments. On a miss the function runs once on abstract tracers (shapes
and dtypes, no values), which records a Program; constant folding, common-subexpression and
dead-code elimination simplify it (program.py), and lowering.py turns it into what runs on a
hit: straight-line Python calling the NumPy implementations and fused numba kernels directly
(no tracers, no dispatch), or on a GPU an interpreter whose elementwise runs are generated CUDA
kernels. Donated arguments' buffers may be overwritten, so a jitted optimiser step updates
parameters in place.
"""
from __future__ import annotations

import contextlib
import functools
import inspect
import logging
import sys
import types
from typing import Any, Callable, NamedTuple, Sequence

import numpy as np

from . import dtypes
from .array import CPU, Array, Device, ExternalValue, to_numpy
from .config import config
from .errors import ConcretizationError, DeviceMismatchError, NonFiniteError
from .lowering import device_runner, lower, python_runner
from .ops.core import ShapedArray, aval
from .program import Const, Eqn, Program, Var, fresh_var
from .trace import Trace, Tracer, annotate, impl_error, user_frame
from .tree import PyTreeDef, keystr, tree_flatten, tree_flatten_with_path, tree_map

log = logging.getLogger("funcgrad.jit")

__all__ = ["jit", "make_program"]

_KNOWN_TREES = 8  # argument structures a jitted function checks by their matchers before flattening


# ==== abstract tracing ==============================================================================
class JitTracer(Tracer):
    __slots__ = ("aval", "var", "origin")
    abstract = True

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


def abstract_eval(prim, inputs: list, params: dict) -> ShapedArray:
    """The output shape and dtype of prim on these inputs, by its shape rule."""
    avals = [x.aval if isinstance(x, Var) else aval(x.value) for x in inputs]
    try:
        return prim.shape_rule(*avals, **params)
    except (ValueError, IndexError, TypeError) as e:
        raise impl_error(prim, avals, e) from None


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



# ==== the public transform ============================================================================
def _platform(values) -> str:
    """Where a call's arrays live: 'cpu', or the GPU platform when any does (then all must, but
    0-d host scalars, which combine with any device as in PyTorch)."""
    for v in values:
        if isinstance(v, ExternalValue):
            device = v.device
            break
    else:
        return "cpu"
    for i, v in enumerate(values):
        if not isinstance(v, ExternalValue) and np.ndim(v):
            raise DeviceMismatchError(f"jit: argument leaf {i} is on cpu but others are on {device}; "
                                      f"move it with fg.device_put(x, '{device}')")
    return device.platform


class Signature(NamedTuple):
    """What a compiled program is specialised to, and so the cache key of a jitted function."""
    structure: Any    # the dynamic arguments' PyTreeDef; for a call of Arrays only, their count
    leaves: tuple     # (shape, dtype) of each array leaf
    statics: tuple    # (position or name, value) of each static argument
    platform: str     # 'cpu', or the GPU platform the arrays are on


class _Call:
    """One call taken apart: its signature, its array leaves and their values, and what tracing
    needs to call the function again with tracers in place of the dynamic arguments."""
    __slots__ = ("signature", "leaves", "values", "args", "kwargs", "in_tree", "static_nums", "dyn_args",
                 "dyn_kwargs")

    def __init__(self, signature: Signature, leaves: list, values: list, args, kwargs, in_tree, static_nums,
                 dyn_args, dyn_kwargs):
        self.signature, self.leaves, self.values = signature, leaves, values
        self.args, self.kwargs, self.in_tree, self.static_nums = args, kwargs, in_tree, static_nums
        self.dyn_args, self.dyn_kwargs = dyn_args, dyn_kwargs

    def avals(self) -> list[ShapedArray]:
        return [ShapedArray(shape, dtype) for shape, dtype in self.signature.leaves]

    def rebuild(self, fun: Callable) -> Callable:
        """tracers -> fun called with them in place of the dynamic arguments."""
        in_tree = self.in_tree or tree_flatten((self.dyn_args, self.dyn_kwargs))[1]

        def rebuilt(tracers):
            dyn_args, dyn_kwargs = in_tree.unflatten(tracers)
            it = iter(dyn_args)
            full = [self.args[i] if i in self.static_nums else next(it) for i in range(len(self.args))]
            return fun(*full, **{**self.kwargs, **dyn_kwargs})
        return rebuilt


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


def _other_references(values: list, i: int) -> int:
    """References to values[i] beyond its Array's and the list's own."""
    return sys.getrefcount(values[i]) - _SOLE_REFERENCES


def _sole_references() -> int:
    """sys.getrefcount of a buffer that only its Array and a values list hold, measured with the
    same expression as _other_references (interpreters differ in the references a call takes)."""
    kept = Array(np.empty(1))
    values = [kept._value]
    return sys.getrefcount(values[0])


_SOLE_REFERENCES = _sole_references()


class Jitted:
    """The callable fg.jit returns; `.lower(*args)` gives the optimised Program for those arguments."""

    def __init__(self, fun: Callable, static_argnums=(), static_argnames=(), donate_argnums=()):
        functools.update_wrapper(self, fun)
        self.fun = fun
        self.static_argnums = (static_argnums,) if isinstance(static_argnums, int) else tuple(static_argnums)
        self.static_argnames = (static_argnames,) if isinstance(static_argnames, str) else tuple(static_argnames)
        self.donate_argnums = (donate_argnums,) if isinstance(donate_argnums, int) else tuple(donate_argnums)
        self.cache: dict[Signature, _Compiled] = {}
        self.trees: list[PyTreeDef] = []  # argument structures seen, the latest first

    def _take_apart(self, args, kwargs) -> _Call | None:
        """The call's signature and leaves; None when an argument is being traced by another transform."""
        if not kwargs and not self.static_argnums and all(type(a) is Array for a in args):
            values = [a._value for a in args]  # the common case, keyed without flattening
            signature = Signature(len(args), tuple((v.shape, v.dtype) for v in values), (), _platform(values))
            return _Call(signature, list(args), values, args, kwargs, None, (), list(args), {})
        statics, dyn_args, dyn_kwargs, static_nums = self._split(args, kwargs)
        leaves, in_tree = self._flatten((dyn_args, dyn_kwargs))
        if any(isinstance(leaf, Tracer) for leaf in leaves):
            return None
        values = [leaf._value if type(leaf) is Array else to_numpy(leaf) for leaf in leaves]
        signature = Signature(in_tree, tuple([(v.shape, v.dtype) for v in values]), statics, _platform(values))
        return _Call(signature, leaves, values, args, kwargs, in_tree, static_nums, dyn_args, dyn_kwargs)

    def _split(self, args, kwargs):
        if not kwargs and not self.static_argnums:  # every argument is dynamic
            return (), list(args), {}, ()
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

    def _flatten(self, tree) -> tuple[list, PyTreeDef]:
        """tree_flatten, but a structure seen before is checked by its generated matcher and comes
        back as the same object, so the cache lookup compares it by identity."""
        for in_tree in self.trees:
            leaves = in_tree.match(tree)
            if leaves is not None:
                return leaves, in_tree
        leaves, in_tree = tree_flatten(tree)
        self.trees = [in_tree] + self.trees[:_KNOWN_TREES - 1]
        return leaves, in_tree

    def _trace(self, call: _Call):
        """(Program, output tree) of the function for this call's shapes and dtypes."""
        return trace_program(self.fun, call.avals(), call.rebuild(self.fun),
                             _leaf_origins(self.fun, call.dyn_args, call.dyn_kwargs), Device(call.signature.platform))

    def _compile(self, call: _Call) -> _Compiled | None:
        """Trace, optimise and lower the function for this call's signature, and cache it; None when
        the function reads a value another transform traces (it must then run eagerly, under it)."""
        if config.log_compiles:
            log.warning("jit: compiling %s for %s%s", getattr(self.fun, "__name__", "function"),
                        ", ".join(map(repr, call.avals())), self._retrace_reason(call.signature))
        with annotate(f"jit compile: {getattr(self.fun, '__name__', 'function')}"):  # apart from run time
            try:
                program, out_tree = self._trace(call)
            except _ClosedOverTracer:
                return None
            program = lower(program)
        platform = call.signature.platform
        if platform != "cpu":
            compiled = _Compiled(program, device_runner(program, platform), out_tree)
        else:
            donated = self._donated_leaves(call.args, call.static_nums)
            compiled = _Compiled(program, python_runner(program, donated), out_tree, frozenset(donated))
        self.cache[call.signature] = compiled
        return compiled

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

    def _retrace_reason(self, signature: Signature) -> str:
        same_tree = [k for k in self.cache if k.structure == signature.structure]
        if not self.cache:
            return " (first call)"
        if not same_tree:
            return " (retrace: the argument structure changed)"
        old = same_tree[-1]
        for i, (a, b) in enumerate(zip(old.leaves, signature.leaves)):
            if a != b:
                return f" (retrace: leaf {i} changed from {ShapedArray(*a)!r} to {ShapedArray(*b)!r})"
        if old.platform != signature.platform:
            return f" (retrace: the arrays are now on {signature.platform}, not {old.platform})"
        return f" (retrace: static arguments changed from {old.statics!r} to {signature.statics!r})"

    def _donate(self, call: _Call, donated: frozenset) -> list:
        """The values the program may overwrite: a donated buffer that anything else still reads (a
        view of it, another argument, the caller's own NumPy array) is copied first, so no other
        array changes behind its owner's back. The donated Arrays are deleted (as in JAX)."""
        values = call.values
        for i in donated:
            if _other_references(values, i) > 0:
                if config.log_compiles:
                    log.warning("jit: %s: donated argument leaf %d is also used elsewhere (a view, another "
                                "argument); copying it instead of reusing it", getattr(self.fun, "__name__", "?"), i)
                values[i] = values[i].copy()
        for i in donated:
            if type(call.leaves[i]) is Array:
                call.leaves[i].delete("it was donated to a jitted function (donate_argnums), which may reuse its "
                                      "buffer; use the function's outputs instead")
        return values

    def __call__(self, *args, **kwargs):
        if config.disable_jit:
            return self.fun(*args, **kwargs)
        call = self._take_apart(args, kwargs)
        compiled = None if call is None else self.cache.get(call.signature) or self._compile(call)
        if compiled is None:  # called under another transform: trace through it
            return self.fun(*args, **kwargs)
        if config.debug_nans:
            return self._checked_call(compiled, call)
        values = self._donate(call, compiled.donated) if compiled.donated else call.values
        with annotate(f"jit:{getattr(self.fun, '__name__', 'function')}"):
            outs = compiled.run(*values)
        return compiled.out_tree.builder()([Array(o) if isinstance(o, (np.ndarray, np.generic, ExternalValue)) else o
                                            for o in outs])

    def _checked_call(self, compiled: _Compiled, call: _Call):
        """debug_nans under jit (JAX's way): the compiled program runs (donating nothing) and its
        outputs are checked; if one holds a NaN the function runs again op by op, where the first
        primitive that makes a NaN raises NonFiniteError naming itself and the user's line."""
        outs = [Array(o) if isinstance(o, (np.ndarray, np.generic, ExternalValue)) else o
                for o in compiled.run(*[v.copy() if i in compiled.donated else v for i, v in enumerate(call.values)])]
        for k, out in enumerate(outs):
            if isinstance(out, Array) and dtypes.is_inexact(out.dtype) and np.isnan(out.numpy()).any():
                with disable_jit():
                    self.fun(*call.args, **call.kwargs)
                raise NonFiniteError(f"jit: output {k} of {getattr(self.fun, '__name__', 'function')} holds NaN "
                                     f"(debug_nans is on), though running it op by op made none")
        return compiled.out_tree.builder()(outs)

    def __get__(self, instance, owner=None):
        """Defined in a class, a jitted function binds as a method: the instance is its first
        argument (traced when it is a pytree, such as a Module; static_argnums=0 for a plain
        object), as jax.jit's."""
        return self if instance is None else types.MethodType(self, instance)

    def lower(self, *args, **kwargs) -> Program:
        """The optimised Program jit runs for these arguments."""
        call = self._take_apart(args, kwargs)
        compiled = None if call is None else self.cache.get(call.signature) or self._compile(call)
        if compiled is None:
            raise TypeError("lower needs concrete arguments, not tracers")
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
    call = jitted._take_apart(args, kwargs)
    if call is None:
        raise TypeError("tracing a program needs concrete arguments, not tracers")
    return jitted._trace(call)


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
