"""Programs: what jit records. A flat list of equations over variables (a jaxpr, in JAX's words),
the passes that simplify it, and the pretty-printer behind fg.make_program.
"""
from __future__ import annotations

import bisect
import itertools
import math
from typing import Any, Callable

import numpy as np

from .array import ExternalValue
from .ops.core import Primitive, ShapedArray, short_dtype


class Var:
    __slots__ = ("id", "aval")

    def __init__(self, id_: int, aval: ShapedArray):
        self.id = id_
        self.aval = aval

    def __repr__(self) -> str:
        return f"v{self.id}"


def _var_name(i: int) -> str:
    """0 -> a, 25 -> z, 26 -> ba, ... (the names printed programs use)."""
    letters = "abcdefghijklmnopqrstuvwxyz"
    name = letters[i % 26]
    while i >= 26:
        i = i // 26 - 1
        name = letters[i % 26] + name
    return name


class Const:
    """A value fixed at trace time: an array captured from outside, a Python scalar, None."""
    __slots__ = ("value",)

    def __init__(self, value: Any):
        self.value = value

    def __repr__(self) -> str:
        v = self.value
        if isinstance(v, np.ndarray) and v.size > 6:
            return f"const:{short_dtype(v.dtype)}[{','.join(map(str, v.shape))}]"
        return repr(v.tolist() if isinstance(v, np.ndarray) else v)


class Eqn:
    __slots__ = ("prim", "inputs", "params", "out")

    def __init__(self, prim: Primitive, inputs: list, params: dict, out: Var):
        self.prim = prim
        self.inputs = inputs
        self.params = params
        self.out = out

    def render(self, name) -> str:
        params = ", ".join(f"{k}={_param_repr(v)}" for k, v in self.params.items())
        head = f"{self.prim.name}[{params}]" if params else self.prim.name
        args = " ".join(name(x) if isinstance(x, Var) else repr(x) for x in self.inputs)
        return f"{name(self.out)}:{self.out.aval!r} = {head} {args}"


def _param_repr(v) -> str:
    if isinstance(v, np.dtype):
        return short_dtype(v)
    if callable(v) and hasattr(v, "__name__"):
        return v.__name__
    return repr(v)


class Program:
    """in_vars -> eqns -> outs; outs are Vars or Consts."""

    def __init__(self, in_vars: list[Var], eqns: list[Eqn], outs: list):
        self.in_vars = in_vars
        self.eqns = eqns
        self.outs = outs

    def __repr__(self) -> str:
        names: dict[int, str] = {}

        def name(var: Var) -> str:
            if var.id not in names:
                names[var.id] = _var_name(len(names))
            return names[var.id]

        ins = " ".join(f"{name(v)}:{v.aval!r}" for v in self.in_vars)
        body = "\n".join(f"    {e.render(name)}" for e in self.eqns)
        outs = ", ".join(name(o) if isinstance(o, Var) else repr(o) for o in self.outs)
        return f"{{ lambda {ins} .\n  let\n{body}\n  in ({outs},) }}"


# ---- passes ------------------------------------------------------------------------------------
def fold_constants(program: Program) -> Program:
    """Evaluate every equation whose inputs are all constants, now (not a collective: it must run
    with the other processes, at each call)."""
    known: dict[int, Const] = {}
    eqns = []
    for eqn in program.eqns:
        inputs = [known.get(x.id, x) if isinstance(x, Var) else x for x in eqn.inputs]
        if not eqn.prim.ordered and all(isinstance(x, Const) for x in inputs):
            values = [x.value for x in inputs]
            device = next((v.device for v in values if isinstance(v, ExternalValue)), None)
            impl = eqn.prim.impl_for("cpu" if device is None else device.platform)
            with np.errstate(all="ignore"):
                known[eqn.out.id] = Const(impl(*values, **eqn.params))
            continue
        eqns.append(Eqn(eqn.prim, inputs, eqn.params, eqn.out))
    outs = [known.get(o.id, o) if isinstance(o, Var) else o for o in program.outs]
    return Program(program.in_vars, eqns, outs)


def _hashable(value):
    try:
        hash(value)
    except TypeError:
        return None
    return value


def eliminate_common_subexpressions(program: Program) -> Program:
    """Replace an equation by an earlier identical one (same primitive, inputs and params); every
    collective runs (the other processes expect each one)."""
    seen: dict[Any, Var] = {}
    alias: dict[int, Var] = {}
    eqns = []
    for eqn in program.eqns:
        inputs = [alias.get(x.id, x) if isinstance(x, Var) else x for x in eqn.inputs]
        params_key = _hashable(tuple(sorted(eqn.params.items())))
        key = None
        if params_key is not None and not eqn.prim.ordered:
            key = (eqn.prim, params_key, tuple(("v", x.id) if isinstance(x, Var) else ("c", id(x.value), _hashable(x.value))
                                               for x in inputs))
        if key is not None and key in seen:
            alias[eqn.out.id] = seen[key]
            continue
        if key is not None:
            seen[key] = eqn.out
        eqns.append(Eqn(eqn.prim, inputs, eqn.params, eqn.out))
    outs = [alias.get(o.id, o) if isinstance(o, Var) else o for o in program.outs]
    return Program(program.in_vars, eqns, outs)


def eliminate_dead_code(program: Program) -> Program:
    """Drop equations nothing reads, except collectives (the other processes wait for them)."""
    live = {o.id for o in program.outs if isinstance(o, Var)}
    kept = []
    for eqn in reversed(program.eqns):
        if eqn.out.id in live or eqn.prim.ordered:
            kept.append(eqn)
            live.update(x.id for x in eqn.inputs if isinstance(x, Var))
    return Program(program.in_vars, kept[::-1], program.outs)


def optimize(program: Program) -> Program:
    return eliminate_dead_code(eliminate_common_subexpressions(fold_constants(program)))


def last_uses(program: Program) -> dict[int, int]:
    """var id -> index of the last equation reading it (len(eqns) for program outputs)."""
    last: dict[int, int] = {}
    for i, eqn in enumerate(program.eqns):
        for x in eqn.inputs:
            if isinstance(x, Var):
                last[x.id] = i
    for o in program.outs:
        if isinstance(o, Var):
            last[o.id] = len(program.eqns)
    return last


_ids = itertools.count()


def fresh_var(aval: ShapedArray) -> Var:
    return Var(next(_ids), aval)


def schedule(program: Program, group_key) -> Program:
    """Reorder equations (keeping every dependency) so that ones with equal group_key(eqn) run
    next to each other. Collectives stay where they are: the equations between two of them are
    reordered among themselves only, so no work moves across a collective."""
    order: list[Eqn] = []
    segment: list[Eqn] = []
    for eqn in program.eqns:
        if eqn.prim.ordered:
            order += _list_schedule(segment, group_key)
            order.append(eqn)
            segment = []
        else:
            segment.append(eqn)
    order += _list_schedule(segment, group_key)
    return Program(program.in_vars, order, program.outs)


def _list_schedule(eqns: list[Eqn], group_key) -> list[Eqn]:
    """A list scheduler that prefers a ready equation of the current group. group_key returns
    None for equations that fuse with nothing."""
    producer = {e.out.id: i for i, e in enumerate(eqns)}
    users: list[list[int]] = [[] for _ in eqns]
    pending = [0] * len(eqns)
    for i, e in enumerate(eqns):
        deps = {producer[x.id] for x in e.inputs if isinstance(x, Var) and x.id in producer}
        pending[i] = len(deps)
        for d in deps:
            users[d].append(i)
    keys = [group_key(e) for e in eqns]
    scalar = [e.out.aval.shape == () and keys[i] is None for i, e in enumerate(eqns)]
    ready = sorted(i for i in range(len(eqns)) if pending[i] == 0)
    order, current = [], None
    while ready:
        # scalar bookkeeping (a step count, a bias correction) first, so that it never splits a group
        pick = next((i for i in ready if scalar[i]), None)
        if pick is None:
            pick = next((i for i in ready if current is not None and keys[i] == current), ready[0])
        ready.remove(pick)
        order.append(eqns[pick])
        current = keys[pick] if not scalar[pick] else current
        for u in users[pick]:
            pending[u] -= 1
            if pending[u] == 0:
                bisect.insort(ready, u)
    return order


def transpose_matmul_outputs(program: Program, matmul, transpose) -> Program:
    """transpose(matmul(a, b)) over the last two axes -> matmul(b^T, a^T): the product comes out
    contiguous in the layout it is used in (weight gradients of x @ W.T, for one)."""
    eqns = list(program.eqns)
    producer = {e.out.id: i for i, e in enumerate(eqns)}
    uses: dict[int, int] = {}
    for e in eqns:
        for x in e.inputs:
            if isinstance(x, Var):
                uses[x.id] = uses.get(x.id, 0) + 1
    for o in program.outs:
        if isinstance(o, Var):
            uses[o.id] = uses.get(o.id, 0) + 1
    for i, e in enumerate(eqns):
        if e.prim is not transpose or not isinstance(e.inputs[0], Var):
            continue
        src = producer.get(e.inputs[0].id)
        perm = e.params["perm"]
        n = len(perm)
        if src is None or eqns[src].prim is not matmul or uses[e.inputs[0].id] != 1 or n < 2 or \
                perm != tuple(range(n - 2)) + (n - 1, n - 2):
            continue
        a, b = eqns[src].inputs
        if not all(isinstance(x, Var) and len(x.aval.shape) == n for x in (a, b)):
            continue
        swapped = []
        for x in (b, a):
            t = fresh_var(ShapedArray(x.aval.shape[:-2] + x.aval.shape[-2:][::-1], x.aval.dtype))
            swapped.append((Eqn(transpose, [x], {"perm": perm}, t), t))
        params = eqns[src].params
        eqns[src] = None
        eqns[i] = [swapped[0][0], swapped[1][0], Eqn(matmul, [swapped[0][1], swapped[1][1]], params, e.out)]
    flat = []
    for e in eqns:
        if isinstance(e, list):
            flat.extend(e)
        elif e is not None:
            flat.append(e)
    return Program(program.in_vars, flat, program.outs)


def fold_transposes(program: Program, transpose) -> Program:
    """transpose(transpose(x, p1), p2) -> transpose(x, p1 composed with p2), and x itself when that
    is the identity (backward passes transpose weights back and forth). The first transpose is
    left to dead-code elimination."""
    source: dict[int, tuple] = {}  # var id -> (the var it transposes, perm)
    alias: dict[int, Var] = {}
    eqns = []
    for e in program.eqns:
        inputs = [alias.get(x.id, x) if isinstance(x, Var) else x for x in e.inputs]
        if e.prim is transpose and isinstance(inputs[0], Var) and inputs[0].id in source:
            inner, first = source[inputs[0].id]
            perm = tuple(first[int(i)] for i in e.params["perm"])
            if perm == tuple(range(len(perm))):
                alias[e.out.id] = inner
                continue
            e = Eqn(transpose, [inner], {"perm": perm}, e.out)
        else:
            e = Eqn(e.prim, inputs, e.params, e.out)
        if e.prim is transpose and isinstance(e.inputs[0], Var):
            source[e.out.id] = (e.inputs[0], tuple(int(i) for i in e.params["perm"]))
        eqns.append(e)
    outs = [alias.get(o.id, o) if isinstance(o, Var) else o for o in program.outs]
    return eliminate_dead_code(Program(program.in_vars, eqns, outs))


def fold_broadcasts(program: Program, broadcast, reshape, elementwise: Callable[[Eqn], bool]) -> Program:
    """An elementwise equation reads x where it read broadcast(x), or a reshape of a one-element x:
    it broadcasts its operands itself, so the broadcast array need not be made (a gradient of a
    mean is a scalar broadcast to the summed shape). Only where the operands left still give the
    output its shape."""
    origin: dict[int, Var] = {}  # var id -> the smaller var it broadcasts
    eqns = []
    for e in program.eqns:
        x = e.inputs[0] if e.inputs else None
        if isinstance(x, Var) and (e.prim is broadcast or (e.prim is reshape and math.prod(x.aval.shape) == 1)):
            origin[e.out.id] = origin.get(x.id, x)
        elif elementwise(e) and any(isinstance(x, Var) and x.id in origin for x in e.inputs):
            inputs = list(e.inputs)
            for i, x in enumerate(e.inputs):
                if isinstance(x, Var) and x.id in origin:
                    trial = inputs[:i] + [origin[x.id]] + inputs[i + 1:]
                    if _broadcast_shape(trial) == e.out.aval.shape:
                        inputs = trial
            e = Eqn(e.prim, inputs, e.params, e.out)
        eqns.append(e)
    return eliminate_dead_code(Program(program.in_vars, eqns, program.outs))


def _broadcast_shape(operands: list) -> tuple | None:
    try:
        return np.broadcast_shapes(*(x.aval.shape if isinstance(x, Var) else np.shape(x.value) for x in operands))
    except ValueError:
        return None
