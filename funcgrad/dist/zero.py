"""ZeRO and FSDP over a data-parallel mesh axis (from funcgrad.dist import zero).

Each of the axis's n processes keeps 1/n of what data parallelism replicates: a leaf is
flattened, padded to a multiple of n and split into n equal shards, the i-th held by the
process at axis_index i.

    opt = zero.zero(optim.adamw(1e-3), stage=2, axis="dp")   # an optax-style transformation
    state = opt.init(params)                                 # this process's shards of AdamW's state
    updates, state = opt.update(grads, state, params)        # grads: this process's own gradients
    params = optim.apply_updates(params, updates)            # the same full update on every process

Stage 1 shards the optimiser state: the gradients are all-reduced (averaged), each process updates
its shards, and the updates are all-gathered. Stage 2 also shards the gradients: a reduce-scatter
gives each process the average of its shards only. Stage 3 shards the parameters too (FSDP):
`model = zero.shard(model, "dp")` makes every TransformerBlock (and the rest of the model) a
Sharded unit whose parameters are gathered when it is called and let go after (its backward
pass gathers them again), and the gradients arrive as shards, already summed over the axis by
all_gather's transpose. In every stage the update equals the unsharded optimiser's on the
averaged gradients; statistics over all gradients (clip_by_global_norm, apply_if_finite) are
summed over the shards (optim.sharded).
"""
from __future__ import annotations

import math
from typing import Any, NamedTuple, Sequence

from .. import numpy as fnp
from .. import optim
from ..custom import checkpoint
from ..nn.layers import TransformerBlock
from ..nn.module import Module, rebuilt
from ..tree import tree_flatten, tree_leaves, tree_map
from . import collectives as C

__all__ = ["zero", "ZeroState", "Sharded", "shard", "unshard", "shards_of"]


class ZeroState(NamedTuple):
    inner: Any  # the wrapped optimiser's state for this process's shards


def zero(inner: optim.GradientTransformation, stage: int = 1, axis: str = "dp") -> optim.GradientTransformation:
    """inner (an optimiser or chain) with its state, and from stage 2 its gradients, sharded over
    axis; at stage 3 the parameters and gradients given to it are shards (zero.shard's model)."""
    if stage not in (1, 2, 3):
        raise ValueError(f"ZeRO stage must be 1, 2 or 3, got {stage!r}")

    def init(params):
        if stage == 3:
            _check_sharded(params, axis)
            return ZeroState(inner.init(params))
        return ZeroState(inner.init(shards_of(params, axis)))

    def update(grads, state, params=None):
        if not isinstance(state, ZeroState):
            raise TypeError("zero's update needs the state zero's init returned (a ZeroState), got "
                            f"{type(state).__name__}")
        n = C.axis_size(axis)
        with optim.sharded(lambda x: C.psum(x, axis)):
            if stage == 3:
                _check_sharded(grads, axis)
                mean = tree_map(lambda g: g / n, grads)  # all_gather's transpose summed the processes' gradients
                updates, inner_state = inner.update(mean, state.inner, params)
                return updates, ZeroState(inner_state)
            mine = _reduced_shards(grads, axis, scatter=stage == 2)
            updates, inner_state = inner.update(mine, state.inner, None if params is None else shards_of(params, axis))
        return _gathered(updates, grads, axis), ZeroState(inner_state)

    return optim.GradientTransformation(init, update)


# ---- flat shards of leaves ------------------------------------------------------------------------
def _shard_size(size: int, n: int) -> int:
    return max(1, math.ceil(size / n))


def _padded(x, n: int):
    """x flattened and padded with zeros to n equal rows: shape (n, k)."""
    flat = fnp.reshape(x, (-1,))
    k = _shard_size(flat.shape[0], n)
    if n * k > flat.shape[0]:
        flat = fnp.concatenate([flat, fnp.zeros((n * k - flat.shape[0],), flat.dtype)])
    return fnp.reshape(flat, (n, k))


def shards_of(tree, axis: str = "dp"):
    """This process's flat shard of every leaf of tree (a leaf of 10 over 4 processes: 3 each, the
    last padded with zeros)."""
    n, i = C.axis_size(axis), int(C.axis_index(axis))
    return tree_map(lambda x: _padded(x, n)[i], tree)


def _reduced_shards(grads, axis: str, scatter: bool):
    """The average over the axis of every gradient, this process's shard of each: one collective
    for all the leaves of a dtype (all-reduce at stage 1, reduce-scatter at stage 2)."""
    n, i = C.axis_size(axis), int(C.axis_index(axis))
    leaves, treedef = tree_flatten(grads)
    out = [None] * len(leaves)
    for indices in _by_dtype(leaves):
        rows = [_padded(leaves[j], n) for j in indices]
        packed = fnp.concatenate(rows, axis=1)  # row r: every leaf's shard r
        if scatter:
            mine = C.psum_scatter(packed, axis, scatter_dimension=0) / n
        else:
            mine = (C.psum(packed, axis) / n)[i]
        for j, piece in zip(indices, _split_columns(mine, [r.shape[1] for r in rows])):
            out[j] = piece
    return treedef.unflatten(out)


def _gathered(shards, like, axis: str):
    """The whole of every leaf of like from every process's shard (one all-gather per dtype)."""
    leaves, treedef = tree_flatten(like)
    parts = tree_leaves(shards)
    out = [None] * len(leaves)
    for indices in _by_dtype(parts):
        rows = C.all_gather(fnp.concatenate([parts[j] for j in indices]), axis)  # (n, K)
        for j, block in zip(indices, _split_columns(rows, [parts[j].shape[0] for j in indices], axis=1)):
            size = math.prod(leaves[j].shape)
            out[j] = fnp.reshape(fnp.reshape(block, (-1,))[:size], leaves[j].shape)
    return treedef.unflatten(out)


def _by_dtype(leaves) -> list[list[int]]:
    groups: dict = {}
    for j, leaf in enumerate(leaves):
        groups.setdefault(leaf.dtype, []).append(j)
    return list(groups.values())


def _split_columns(x, widths: Sequence[int], axis: int = -1) -> list:
    bounds = [0]
    for w in widths:
        bounds.append(bounds[-1] + w)
    index = [slice(None)] * len(x.shape)
    pieces = []
    for a, b in zip(bounds[:-1], bounds[1:]):
        index[axis] = slice(a, b)
        pieces.append(x[tuple(index)])
    return pieces


# ---- stage 3: sharded modules (FSDP) ------------------------------------------------------------------
class Sharded(Module):
    """A module of which this process holds a flat shard of every parameter (its Sharded submodules
    hold their own). Called, it all-gathers them, runs the module and lets the whole go; its
    backward pass gathers them again (remat), and the parameters' gradients arrive as shards."""
    static_fields = ("axis", "hollow", "shapes")

    def __init__(self, module: Module, axis: str = "dp"):
        units: list[Sharded] = []

        def slot(node):  # a Sharded submodule keeps its own shards: a placeholder stands for it
            if isinstance(node, Sharded):
                units.append(node)
                return _Slot(len(units) - 1)
            return None
        leaves, self.hollow = tree_flatten(rebuilt(module, slot))
        n, i = C.axis_size(axis), int(C.axis_index(axis))
        self.axis, self.units = axis, units
        self.shapes = tuple(tuple(x.shape) for x in leaves)
        self.shards = [_padded(x, n)[i] for x in leaves]

    def __repr__(self) -> str:
        held = sum(math.prod(x.shape) for x in self.shards)
        return (f"Sharded({self.hollow.node_type.__name__}, "
                f"{len(self.shards)} parameters in shards of {held} elements here, {len(self.units)} units, "
                f"axis={self.axis!r})")

    def module(self) -> Module:
        """The module with its own parameters whole (gathered: every process of the axis calls it)."""
        return self._rebuilt(self.shards, self.units)

    def _rebuilt(self, shards, units) -> Module:
        leaves = [fnp.reshape(fnp.reshape(C.all_gather(x, self.axis, tiled=True), (-1,))[:math.prod(shape)], shape)
                  for x, shape in zip(shards, self.shapes)]
        return rebuilt(self.hollow.unflatten(leaves), lambda node: units[node.index] if isinstance(node, _Slot) else None)

    def __call__(self, *args, **kwargs):
        run = checkpoint(lambda shards, units, *args: self._rebuilt(shards, units)(*args, **kwargs))
        return run(self.shards, self.units, *args)


class _Slot(Module):
    """Where a Sharded submodule sits in its parent's module (no parameters of its own)."""

    def __init__(self, index: int):
        self.index = index


def shard(model: Module, axis: str = "dp", wrap: tuple[type, ...] = (TransformerBlock,)) -> Sharded:
    """This process's ZeRO-3 form of model: every module of a type in wrap becomes a Sharded unit,
    and the model around them one more (torch FSDP with an auto-wrap policy). Every process of
    the axis passes the same model."""
    def unit(node):
        if isinstance(node, wrap):
            return Sharded(node.replace(**{name: rebuilt(value, unit) for name, value in vars(node).items()}), axis)
        return None
    return Sharded(rebuilt(model, lambda node: None if node is model else unit(node)), axis)


def unshard(model: Sharded) -> Module:
    """The ordinary model (every parameter whole, on every process of the axis)."""
    return rebuilt(model.module(), lambda node: unshard(node) if isinstance(node, Sharded) else None)


def _check_sharded(tree, axis: str) -> None:
    modules = [m for top in tree_leaves(tree, is_leaf=lambda x: isinstance(x, Module)) if isinstance(top, Module)
               for m in top.modules()]
    if not any(isinstance(m, Sharded) for m in modules):
        raise ValueError(f"ZeRO stage 3 takes the parameters of a model made by zero.shard(model, {axis!r}) (and "
                         f"their gradients); got a {type(tree).__name__} with no Sharded unit")
