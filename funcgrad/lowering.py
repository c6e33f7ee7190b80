"""Lowering: from an optimised Program to what jit runs.

On the CPU, straight-line Python (generated source, one line per equation) that calls the NumPy
implementations directly, with each run of elementwise equations fused into one generated numba
kernel (a trailing or leading broadcast operand, like a bias, fuses too, as does a per-channel
one like a convolution's bias, and so does a sum of a fused value over its leading axes or over
all of a small one); intermediates are released after their last use and a kernel writes into a
dead intermediate's buffer, or a donated argument's, when one of its shape is free. On a GPU, an
interpreter of the program whose elementwise runs become generated CUDA kernels.
"""
from __future__ import annotations

import functools
from typing import Any, Callable

import numpy as np

from .arena import Arenas, BufferPlan, Recycler, nbytes_of, unplanned
from . import grouping
from .array import Array
from .cpu import fusion, threads
from .ops import layout, scalar
from .ops.core import aval
from .ops import linalg as L
from .program import (Const, Eqn, Program, Var, fold_broadcasts, fold_transposes, last_uses, optimize, schedule,
                      transpose_matmul_outputs)

__all__ = ["lower", "python_runner", "device_runner"]


# Results of at least this size go to planned buffers (arena.py) when the primitive can write into
# one; below it malloc's free lists serve without faults, and NumPy's own allocation is as cheap.
PLANNED_MIN_BYTES = 64 << 10


def lower(program: Program) -> Program:
    """The passes between tracing and code generation."""
    program = fold_transposes(transpose_matmul_outputs(optimize(program), L.matmul_p, layout.transpose_p), layout.transpose_p)
    program = fold_broadcasts(program, layout.broadcast_to_p, layout.reshape_p, lambda e: e.prim.scalar is not None)
    return schedule(program, grouping.fusion_key)


class _Codegen:
    """Emits the straight-line Python that runs a Program."""

    def __init__(self, program: Program, donated: set[int]):
        self.program = program
        self.namespace: dict[str, Any] = {"__name__": "funcgrad.program", "np": np, "_flat": _flat, "_scalar": _scalar,
                                          "_split": fusion.split_kernel, "_split_sums": fusion.split_summing_kernel,
                                          "_writable": _writable, "_is_array": _is_array}
        self.lines: list[str] = []
        self.names: dict[int, str] = {v.id: f"a{i}" for i, v in enumerate(program.in_vars)}
        self.donated = {program.in_vars[i].id for i in donated}
        self.last = last_uses(program)
        self.groups = grouping.fusion_groups(program.eqns)
        self.buffer_last, self.roots = self._buffer_lifetimes()
        # results that are a planned buffer or a view of an input: never overwritten in place (their
        # roots alone cannot say so where the input is a constant)
        self.maybe_views = {e.out.id for e in program.eqns if e.prim.writes_into and not e.prim.fresh}
        # What the program returns (or a view of it) must not live in a planned buffer.
        self.escaping = frozenset().union(*(self.roots.get(o.id, frozenset()) for o in program.outs
                                            if isinstance(o, Var)))
        self.plan = BufferPlan()
        self.planned: dict[int, int] = {}  # var id -> its planned value's index
        self.start = 0  # the position of the group being emitted
        self.out_ids = {o.id for o in program.outs if isinstance(o, Var)}
        self.recycled: list[tuple[str, tuple, np.dtype]] = []  # outputs' buffers from a Recycler
        # A program with a step that splits its work over the kernel threads runs with BLAS on one
        # thread, its GEMMs and large fused kernels split over those threads too (cpu/gemm.py), so
        # no BLAS worker spins on a core they need; other programs leave the GEMMs to BLAS's threads.
        self.owns_cores = threads.THREADS > 1 and any(
            e.prim.threaded is not None and e.prim.threaded(*(x.aval if isinstance(x, Var) else aval(x.value)
                                                             for x in e.inputs), **e.params) for e in program.eqns)

    def _buffer_lifetimes(self):
        """For each var, the buffers it may alias; for each owned buffer, its last reader. What a
        fused kernel computes (sums included) is in a buffer of its own."""
        roots: dict[int, frozenset] = {v.id: frozenset([v.id]) for v in self.program.in_vars}
        fused = {eqn.out.id for group in self.groups if len(group) >= 2 for eqn in group}
        for eqn in self.program.eqns:
            if eqn.prim.fresh or eqn.out.id in fused:
                roots[eqn.out.id] = frozenset([eqn.out.id])
            else:  # a view of its inputs, or (writes_into: a reshape that copies) its planned buffer
                roots[eqn.out.id] = frozenset().union(*(roots.get(x.id, frozenset()) for x in eqn.inputs
                                                        if isinstance(x, Var)),
                                                      [eqn.out.id] if eqn.prim.writes_into else [])
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
        name = self.name(eqn.out)
        # A result that may be a view of an input never takes an output's recycled buffer: kept for
        # the next call, it would be handed out as scratch while the input's owner still holds it.
        planned = self._planned_buffer(eqn.out) if eqn.prim.writes_into and \
            (eqn.prim.fresh or eqn.out.id not in self.out_ids) and \
            nbytes_of(eqn.out.aval.shape, eqn.out.aval.dtype) >= PLANNED_MIN_BYTES else None
        into = "" if planned is None else (", " if args else "") + f"out={planned}"
        self.lines.append(f"{name} = {fn}({args}{into})")

    def _planned_buffer(self, var: Var) -> str | None:
        """The expression of var's planned buffer; for what the program returns, a recycled one
        (or None where a view of var is returned)."""
        if var.id in self.out_ids:
            self.recycled.append((self.names[var.id], var.aval.shape, var.aval.dtype))
            return f"_reuse({len(self.recycled) - 1})"
        if var.id in self.escaping:
            return None
        self.planned[var.id] = self.plan.assign(var.aval.shape, var.aval.dtype, self.start,
                                                self.buffer_last.get(var.id, self.start))
        return f"B[{self.planned[var.id]}]"

    def emit_group(self, group: list[Eqn], end: int):
        """A run of fusable equations (and sums of their values) as one generated kernel call."""
        shape = group[0].out.aval.shape
        inputs, steps, members, sums, split = self._kernel_steps(group, shape)
        outputs = [i for i, e in enumerate(members) if self.last.get(e.out.id, -1) > end]
        kinds = [fusion.operand_layout(x.aval.shape if isinstance(x, Var) else np.shape(x.value), shape, split)
                 for x in inputs]
        in_refs = [self.const(np.ascontiguousarray(x.value).reshape(-1)) if isinstance(x, Const) else
                   f"_scalar({self.names[x.id]})" if kind == "scalar" else f"_flat({self.names[x.id]})"
                   for x, kind in zip(inputs, kinds)]
        out_names, in_place = self._output_buffers([members[i].out for i in outputs], inputs, in_refs, end)
        sum_names = self._sum_buffers(sums)
        elements = int(np.prod(shape, dtype=np.int64))
        parallel = self.owns_cores and elements >= (fusion.PARALLEL_SUM_ELEMENTS if sums else fusion.PARALLEL_ELEMENTS)
        size = [str(elements)] if sums and not parallel else []
        source = fusion.kernel_source(kinds, steps, outputs, in_place, sums=[(step, how) for _, step, how in sums],
                                      nested=split is not None, ranged=parallel)
        kernel = self.const(None)
        self.namespace[kernel] = _LazyKernel(source, self.namespace, kernel)
        inner = 1 if split is None else int(np.prod(shape[split:], dtype=np.int64))
        n_inner = [] if split is None else [str(inner)]
        if not parallel:
            self.lines.append(f"{kernel}({', '.join(in_refs + out_names + sum_names + size + n_inner)})")
            return
        work, tasks = elements * len(steps) * threads.ELEMENT_WORK, elements // max(1, inner)  # elements or outer rows
        if sums:  # each range sums into arrays of its own (fusion.split_summing_kernel)
            head, sum_refs, tail = ("(" + "".join(f"{ref}, " for ref in refs) + ")"
                                    for refs in (in_refs + out_names, sum_names, n_inner))
            rows = tuple(k for k, (_, _, how) in enumerate(sums) if how == "rows")
            self.lines.append(f"_split_sums({kernel}, {tasks}, {work}, {head}, {sum_refs}, {tail}, {rows})")
        else:
            self.lines.append(f"_split({kernel}, {tasks}, {work}, {', '.join(in_refs + out_names + n_inner)})")

    def _kernel_steps(self, group: list[Eqn], shape: tuple):
        """The kernel's external inputs (each read once), its steps as (source, dtype), the members
        that are steps, the sums as (eqn, summed step, how), and the loop split every step allows."""
        inputs: list[Var | Const] = []
        index: dict = {}
        steps, members, sums = [], [], []
        local: dict[int, str] = {}
        allowed = None
        for eqn in group:
            if eqn.prim.scalar is None:  # a sum of a member's value (grouping.fusion_groups)
                how, allowed = grouping.sum_kind(eqn, shape, allowed)
                sums.append((eqn, int(local[eqn.inputs[0].id][1:]), how))
                continue
            allowed = grouping.common_splits(allowed, grouping.fusable_splits(eqn))
            refs, dtypes = [], []
            for x in eqn.inputs:
                if isinstance(x, Const) and (x.value is None or np.ndim(x.value) == 0):
                    refs.append(None if x.value is None else x.value)  # a literal, typed below
                    weak = type(x.value) in (bool, int, float, complex)
                    dtypes.append(None if x.value is None else type(x.value) if weak else np.asarray(x.value).dtype)
                    continue
                if not (isinstance(x, Var) and x.id in local):
                    key = x.id if isinstance(x, Var) else ("c", id(x.value))
                    if key not in index:
                        index[key] = len(inputs)
                        inputs.append(x)
                refs.append(local[x.id] if isinstance(x, Var) and x.id in local else f"x{index[key]}")
                dtypes.append(x.aval.dtype if isinstance(x, Var) else np.asarray(x.value).dtype)
            dtype = eqn.out.aval.dtype
            literal_dtype = scalar.compute_dtype(dtypes, dtype)
            refs = [fusion.literal(r, literal_dtype) if r is not None and not isinstance(r, str) else r for r in refs]
            local[eqn.out.id] = f"t{len(steps)}"
            steps.append(fusion.step_source(eqn.prim, refs, dtypes, eqn.params, dtype, f"s{len(steps)}"))
            members.append(eqn)
        return inputs, steps, members, sums, None if allowed is None else min(allowed)

    def _output_buffers(self, outs: list[Var], inputs: list, in_refs: list[str], end: int):
        """Where each stored value goes: a new buffer, or a dead input of its shape that the kernel
        overwrites (then read and written through that input's parameter). Returns the output
        arguments and {output k: input i it overwrites}."""
        free = [x for x in inputs if isinstance(x, Var) and self._reusable(x, end)]
        out_names, in_place = [], {}
        for k, var in enumerate(outs):
            name = self.name(var)
            returned = var.id in self.escaping  # what the program returns never lives in a planned buffer
            buf = next((x for x in free if x.aval == var.aval and not (returned and x.id in self.planned)), None)
            if buf is None:
                planned = self._planned_buffer(var)
                self.lines.append(f"{name} = {planned}" if planned else
                                  f"{name} = np.empty({var.aval.shape!r}, {self.const(var.aval.dtype)})")
                out_names.append(f"{name}.reshape(-1)")
                continue
            free.remove(buf)
            if buf.id in self.planned:  # the output lives on in the input's planned buffer
                self.planned[var.id] = self.planned[buf.id]
                self.plan.extend(self.planned[var.id], self.buffer_last.get(var.id, end))
            src = self.names[buf.id]
            check = "_writable" if buf.id in self.donated else "_is_array"
            # The output overwrites the input it reads; a buffer we may not write is copied first.
            self.lines.append(f"{name} = {src} if {check}({src}) else np.array({src}, order='C')")
            in_place[k] = inputs.index(buf)
            in_refs[in_place[k]] = f"{name}.reshape(-1)"
        return out_names, in_place

    def _sum_buffers(self, sums) -> list[str]:
        """The sums' results: zeroed for sums over the leading axes (added row by row), else empty."""
        names = []
        for eqn, _, how in sums:
            name, aval = self.name(eqn.out), eqn.out.aval
            planned = self._planned_buffer(eqn.out)
            if planned is None:
                self.lines.append(f"{name} = {'np.zeros' if how == 'lead' else 'np.empty'}({aval.shape!r}, "
                                  f"{self.const(aval.dtype)})")
            else:
                self.lines.append(f"{name} = {planned}" + (f"; {name}.fill(0)" if how == "lead" else ""))
            names.append(f"{name}.reshape(-1)")
        return names

    def _reusable(self, x: Var, end: int) -> bool:
        owned = self.roots.get(x.id) == frozenset([x.id]) and x.id not in self.maybe_views and \
            (x.id in self.donated or x.id not in {v.id for v in self.program.in_vars})
        return owned and x.aval.shape != () and self.buffer_last.get(x.id, -1) <= end

    def release(self, first: int, last: int):
        dead = [self.names[i] for i, end in self.last.items()
                if first <= end <= last and i in self.names and self.names[i].startswith("v")]
        if dead:
            self.lines.append(f"del {', '.join(dead)}")

    def build(self) -> Callable:
        position = 0
        for group in self.groups:
            end = position + len(group) - 1
            self.start = position
            if len(group) >= 2 or self._single_kernel(group[0]):
                for part in grouping.kernel_parts(group, fusion.KERNEL_INPUTS):
                    self.emit_group(part, end)
            else:
                self.emit_eqn(group[0])
            self.release(position, end)
            position = end + 1
        outs = [self.ref(o) for o in self.program.outs]
        args = ", ".join(f"a{i}" for i in range(len(self.program.in_vars)))
        if self.recycled:  # the outputs' buffers, offered to later calls once the caller drops them
            recycler = Recycler([(shape, dtype) for _, shape, dtype in self.recycled])
            self.namespace.update(_reuse=recycler.take, _keep=recycler.keep)
            self.lines += [f"_keep({k}, {name})" for k, (name, _, _) in enumerate(self.recycled)]
        if self.plan.values:  # the planned buffers: taken for the call, given back however it ends
            arenas = Arenas(self.plan)
            self.namespace.update(_take=arenas.take, _give=arenas.give, _unplanned=unplanned)
            outs = [f"_unplanned({o}, B)" if o.startswith("v") else o for o in outs]
            body = ["B = _take()", "try:"] + [f"    {line}" for line in self.lines] + \
                [f"    return [{', '.join(outs)}]", "finally:", "    _give(B)"]
        else:
            body = self.lines + [f"return [{', '.join(outs)}]"]
        if self.owns_cores:
            self.namespace["_cores"] = threads.serial_blas
            body = ["with _cores:"] + [f"    {line}" for line in body]
        source = f"def run({args}):\n" + "".join(f"    {line}\n" for line in body)
        exec(compile(source, "<funcgrad.jit>", "exec"), self.namespace)  # noqa: S102  (our generated code)
        run = self.namespace["run"]
        run.source = source
        run.planned_bytes = self.plan.nbytes
        return run

    def _single_kernel(self, eqn: Eqn) -> bool:
        """A lone elementwise equation with a large result runs as a one-step kernel, which writes
        into a planned buffer (a NumPy call would allocate its result)."""
        return eqn.out.id not in self.escaping and grouping.fusable_splits(eqn) is not False and \
            nbytes_of(eqn.out.aval.shape, eqn.out.aval.dtype) >= PLANNED_MIN_BYTES


# On a GPU a sum joins its chain's kernel when one thread per kept element can walk the summed rows
# (a bias gradient over a batch, a loss over its rows): up to this many rows; larger sums run as split
# reductions of their own.
DEVICE_SUM_ROWS = 1024


def _device_groups(eqns: list[Eqn]) -> list[list[Eqn]]:
    """grouping.fusion_groups for a GPU: a group keeps its sums when they all sum the same leading
    axes of at most DEVICE_SUM_ROWS rows; other sums follow their group alone."""
    groups = []
    for group in grouping.fusion_groups(eqns):
        sums = [e for e in group[1:] if e.prim.scalar is None]
        if sums:
            shape, lead = group[0].out.aval.shape, len(sums[0].params["axes"])
            rows = int(np.prod(shape[:lead], dtype=np.int64))
            if rows > DEVICE_SUM_ROWS or any(sorted(a % len(shape) for a in e.params["axes"]) != list(range(lead))
                                             for e in sums):
                groups += [[e for e in group if e.prim.scalar is not None]] + [[e] for e in sums]
                continue
        groups.append(group)
    return groups


def _fused(group: list[Eqn]) -> bool:
    return len(group) > 1 or grouping.fusable_splits(group[0]) is not False


def _launches(groups: list[list[Eqn]]) -> list[list[list[Eqn]]]:
    """The groups each launch runs (horizontal fusion): a fused group joins the latest launch of
    fused groups when none of its inputs is made at or after that launch, so independent chains (an
    optimiser's update of each parameter) share one kernel; other equations launch alone."""
    launches: list[list[list[Eqn]]] = []
    open_launch, made_since = None, set()
    for group in groups:
        made = {e.out.id for e in group}
        if not _fused(group):
            launches.append([group])
        elif open_launch is not None and not any(isinstance(x, Var) and x.id in made_since
                                                 for e in group for x in e.inputs):
            open_launch.append(group)
        else:
            open_launch, made_since = [group], set()
            launches.append(open_launch)
        made_since |= made
    return launches


def _device_chain(group: list[Eqn], needed: set[int], device_const) -> Callable:
    """A fused group as one segment of a launch (elementwise.run_fused): its steps read the group's
    external inputs once per element and store only the values in needed; its sums are written by
    the thread of each kept element."""
    from .cuda.buffer import empty
    from .cuda.kernels import elementwise
    members = [e for e in group if e.prim.scalar is not None]
    produced = {eqn.out.id: j for j, eqn in enumerate(members)}
    externals, index, steps = [], {}, []
    for eqn in members:
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
        steps.append((eqn.prim.scalar, tuple(sorted(eqn.params.items())), tuple(refs), eqn.out.aval.dtype))
    steps = tuple(steps)
    outputs = tuple(j for j, eqn in enumerate(members) if eqn.out.id in needed)
    sum_eqns = [e for e in group if e.prim.scalar is None]
    sums = tuple(produced[e.inputs[0].id] for e in sum_eqns)
    shape = members[0].out.aval.shape
    lead = len(sum_eqns[0].params["axes"]) if sum_eqns else 0

    def chain(env):
        # kinds from the values: a 0-d input may be a host scalar beside the device arrays
        operands, kinds = elementwise.as_operands([env[x] if isinstance(x, Var) else x for x in externals])
        outs = [empty(shape, steps[j][3]) for j in outputs]
        sum_outs = [empty(shape[lead:], e.out.aval.dtype) for e in sum_eqns]
        env.update(zip((members[j].out for j in outputs), outs))
        env.update(zip((e.out for e in sum_eqns), sum_outs))
        return elementwise.Chain(kinds, steps, outputs, operands, shape, outs, sums, lead, sum_outs)
    return chain


def _device_launch(groups: list[list[Eqn]], needed: set[int], device_const) -> Callable:
    from .cuda.kernels import elementwise
    chains = [_device_chain(group, needed, device_const) for group in groups]

    def run(env):
        ready = [c for c in (chain(env) for chain in chains) if c.threads()]
        if ready:
            elementwise.run_fused(ready)
    return run


def device_runner(program: Program, platform: str) -> Callable:
    """Run a program on a GPU: runs of elementwise equations (with the sums of their values) fuse
    into generated kernels, independent ones share a launch, every other equation calls its
    primitive's kernels for that device (the arrays stay there). Host constants the trace captured
    are copied to the device once, here."""
    from .devices import device_put

    def device_const(x: Const):
        value = x.value
        if isinstance(value, np.ndarray) and value.ndim:
            return device_put(Array(value), platform)._value
        return value.item() if isinstance(value, (np.ndarray, np.generic)) else value

    launches = _launches(_device_groups(program.eqns))
    returned = {o.id for o in program.outs if isinstance(o, Var)}
    last_run: dict[int, int] = {}  # var id -> the launch that reads it last
    made_in: dict[int, int] = {}
    for r, groups in enumerate(launches):
        for eqn in (e for group in groups for e in group):
            made_in[eqn.out.id] = r
            last_run.update((x.id, r) for x in eqn.inputs if isinstance(x, Var))
    runs = []
    for r, groups in enumerate(launches):
        if _fused(groups[0]):
            needed = {e.out.id for g in groups for e in g if e.out.id in returned or last_run.get(e.out.id, -1) > r}
            runs.append(_device_launch(groups, needed, device_const))
        else:
            eqn = groups[0][0]
            impl = eqn.prim.impl_for(platform)
            inputs = [x if isinstance(x, Var) else device_const(x) for x in eqn.inputs]
            runs.append(lambda env, impl=impl, inputs=inputs, params=eqn.params, out=eqn.out: env.__setitem__(
                out, impl(*[env[x] if isinstance(x, Var) else x for x in inputs], **params)))
    # Each value is dropped after the launch that reads it last (or makes it, if nothing reads it), so
    # the caching allocator hands its block to the launches after: memory held is what is live.
    dead: list[list[Var]] = [[] for _ in runs]
    for var in list(program.in_vars) + [e.out for groups in launches for group in groups for e in group]:
        if var.id not in returned and runs:
            dead[last_run.get(var.id, made_in.get(var.id, 0))].append(var)
    steps = list(zip(runs, dead))

    def run(*values):
        env = dict(zip(program.in_vars, values))
        for step, dead in steps:
            step(env)
            for var in dead:  # the caching allocator takes the block back for the next launches
                env.pop(var, None)
        return [env[o] if isinstance(o, Var) else o.value for o in program.outs]
    return run


def python_runner(program: Program, donated: set[int]) -> Callable:
    """The generated Python function that runs program on the CPU; donated: input positions it may
    overwrite."""
    return _Codegen(program, donated).build()


class _LazyKernel:
    """Compiles its numba kernel on first call (so tracing and printing stay cheap), then puts the
    kernel in its place in the generated code's namespace, so later calls go to it directly."""
    __slots__ = ("source", "namespace", "name")

    def __init__(self, source: str, namespace: dict, name: str):
        self.source, self.namespace, self.name = source, namespace, name

    def __call__(self, *args):
        kernel = fusion.compile_kernel(self.source)
        self.namespace[self.name] = kernel
        return kernel(*args)


def _flat(x) -> np.ndarray:
    return np.ascontiguousarray(x).reshape(-1)


def _is_array(x) -> bool:
    return isinstance(x, np.ndarray) and x.flags.writeable and x.flags.c_contiguous

def _scalar(x) -> np.ndarray:
    return np.asarray(x).reshape(1)


def _writable(x) -> bool:
    return isinstance(x, np.ndarray) and x.flags.writeable and x.flags.c_contiguous and x.base is None
