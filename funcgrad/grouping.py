"""Which equations of a program one generated kernel runs (lowering.py emits the kernels): the
loop splits an elementwise equation fuses at, the sums a kernel computes beside its chain, the runs
of consecutive fusable equations of one shape, and the kernels a run is cut into.
"""
from __future__ import annotations

from typing import Any

import numpy as np

from .cpu import fusion
from .ops import layout
from .program import Eqn, Var


def _operand_shapes(eqn: Eqn) -> list[tuple] | None:
    """The shapes of eqn's operands if all have dtypes a fused kernel handles, else None."""
    shapes = []
    for x in eqn.inputs:
        if isinstance(x, Var):
            if x.aval.dtype not in fusion.FUSABLE_DTYPES:
                return None
            shapes.append(x.aval.shape)
        elif x.value is not None:
            v = x.value if hasattr(x.value, "dtype") else np.asarray(x.value)
            if v.dtype not in fusion.FUSABLE_DTYPES and v.dtype.kind != "f":
                return None
            shapes.append(v.shape)
    return shapes


def fusable_splits(eqn: Eqn):
    """The loop splits eqn can fuse at (fusion.loop_splits), or False if it cannot fuse."""
    shape = eqn.out.aval.shape
    if eqn.prim.scalar is None or eqn.out.aval.dtype not in fusion.FUSABLE_DTYPES:
        return False
    shapes = _operand_shapes(eqn)
    if shapes is None:
        return False
    splits = fusion.loop_splits(shapes, shape)
    return False if splits == frozenset() else splits


def common_splits(a, b):
    """Splits two parts of a group both allow (None: no constraint); an empty set: none."""
    return b if a is None else a if b is None else a & b


# A fused kernel also sums one of its values: over every element for groups up to this size (the
# float64 sum is serial), over the leading axes (NumPy's row-by-row order, vectorised) at any size,
# or over all but a run of middle axes (a convolution's bias gradient, summed over N, H and W) through
# float64 accumulators, one per kept element and inner position, up to this many.
SUM_ALL_MAX = 4096
SUM_CYCLE_MAX = 1 << 20


def sum_kind(eqn: Eqn, shape: tuple, allowed) -> tuple[str, Any] | None:
    """('all', 'lead', 'cycle' or 'rows', the splits the group allows with it) if eqn sums a value
    of a group of this shape in a way its kernel can, else None."""
    x = eqn.inputs[0] if eqn.prim is layout.sum_p else None
    if not isinstance(x, Var) or x.aval.shape != shape or x.aval.dtype not in (np.float32, np.float64) \
            or eqn.out.aval.dtype != x.aval.dtype:
        return None
    axes = tuple(sorted(a % len(shape) for a in eqn.params["axes"])) if shape else ()
    if axes == tuple(range(len(shape))):
        return ("all", allowed) if 0 < int(np.prod(shape, dtype=np.int64)) <= SUM_ALL_MAX else None
    if axes == tuple(range(len(axes))):
        how, split = "lead", len(axes)
    elif axes == tuple(range(len(shape) - len(axes), len(shape))):  # each outer row over its inner positions
        how, split = "rows", len(shape) - len(axes)
    else:  # kept axes [first, split) between summed leading and trailing ones: each outer row o adds
        kept = [a for a in range(len(shape)) if a not in axes]  # into kept element o % their count
        how, split = "cycle", kept[-1] + 1
        if kept != list(range(kept[0], split)) or int(np.prod(shape[kept[0]:], dtype=np.int64)) > SUM_CYCLE_MAX:
            return None
    allowed = common_splits(allowed, frozenset([split]))
    return None if allowed == frozenset() else (how, allowed)


def fusion_groups(eqns: list[Eqn], scalars: bool = True, sums: bool = True) -> list[list[Eqn]]:
    """Runs of consecutive fusable equations of one output shape whose operands one loop can read
    (fusion.loop_splits), and with sums=True the sums of their values (sum_kind) that nothing
    later in the run reads; other equations stand alone. scalars: whether 0-d equations fuse too
    (on the CPU a chain of them, an optimiser's bias corrections, is one kernel call instead of a
    NumPy call each)."""
    groups: list[list[Eqn]] = []
    current: list[Eqn] = []
    allowed = None
    produced: set[int] = set()
    summed: set[int] = set()  # sums are complete only after the loop: no member may read one
    for eqn in eqns:
        splits = fusable_splits(eqn) if scalars or eqn.out.aval.shape != () else False
        reads_sum = any(isinstance(x, Var) and x.id in summed for x in eqn.inputs)
        if splits is not False and current and eqn.out.aval.shape == current[0].out.aval.shape \
                and common_splits(allowed, splits) != frozenset() and not reads_sum:
            current.append(eqn)
            produced.add(eqn.out.id)
            allowed = common_splits(allowed, splits)
            continue
        how = sum_kind(eqn, current[0].out.aval.shape, allowed) if sums and current else None
        if how is not None and eqn.inputs[0].id in produced:
            current.append(eqn)
            summed.add(eqn.out.id)
            allowed = how[1]
            continue
        if current:
            groups.append(current)
            current = []
        if splits is not False:
            current, allowed, produced, summed = [eqn], splits, {eqn.out.id}, set()
        else:
            groups.append([eqn])
    if current:
        groups.append(current)
    return groups


def kernel_parts(group: list[Eqn], most: int) -> list[list[Eqn]]:
    """group as kernels that each read at most `most` arrays of more than one element where it can
    be cut so: its independent chains (joined where one reads another's value or both read one
    array, which a kernel may overwrite in place), packed in order. The scheduler puts equations of
    one shape side by side, so an optimiser's update of every parameter of a shape is one group."""
    producer = {e.out.id: i for i, e in enumerate(group)}
    parent = list(range(len(group)))

    def root(i: int) -> int:
        while parent[i] != i:
            parent[i] = parent[parent[i]]
            i = parent[i]
        return i
    outside = [_arrays_read(eqn) - producer.keys() for eqn in group]  # the arrays each reads from outside
    first_reader: dict = {}
    for i, eqn in enumerate(group):
        for x in eqn.inputs:
            if isinstance(x, Var) and x.id in producer:
                parent[root(i)] = root(producer[x.id])
        for key in outside[i]:
            parent[root(i)] = root(first_reader.setdefault(key, i))
    chains: dict[int, list[int]] = {}
    for i in range(len(group)):
        chains.setdefault(root(i), []).append(i)
    reads = {r: set().union(*(outside[i] for i in chain)) for r, chain in chains.items()}
    parts, members, arrays = [], [], set()
    for r, chain in chains.items():
        if members and len(arrays | reads[r]) > most:
            parts.append(members)
            members, arrays = [], set()
        members, arrays = members + chain, arrays | reads[r]
    parts.append(members)
    return [[group[i] for i in sorted(part)] for part in parts]


def _arrays_read(eqn: Eqn) -> set:
    """The arrays of more than one element an equation reads (a var's id, a constant's object; 0-d
    ones a kernel reads once, before its loop)."""
    return {x.id if isinstance(x, Var) else ("const", id(x.value)) for x in eqn.inputs
            if (x.aval.shape if isinstance(x, Var) else np.shape(x.value)) != ()}


def fusion_key(eqn: Eqn):
    if fusable_splits(eqn) is not False:
        return eqn.out.aval.shape
    shape = eqn.inputs[0].aval.shape if eqn.prim is layout.sum_p and isinstance(eqn.inputs[0], Var) else None
    return shape if shape is not None and sum_kind(eqn, shape, None) is not None else None
