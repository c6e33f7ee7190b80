"""Collectives over mesh axes as differentiable primitives, with jax.lax's names and semantics:
each process runs the same function on its own shard (shard_map / pmap style), and the function
being differentiated is the sum over the axis's processes of each one's result. So the rules are
the true transposes: psum's cotangent is psummed, all_gather's transpose is psum_scatter (and
back), ppermute's is the inverse permutation, all_to_all's swaps its axes.

    mesh = dist.make_mesh({"dp": 2, "tp": 2})
    y = dist.psum(x @ w_shard, "tp")            # jax.lax.psum
    g = fg.grad(lambda w: loss(dist.all_gather(w, "tp", axis=1, tiled=True)))(w_shard)

A value every process of the axis computes identically (replicated) is counted once per process
by that objective; funcgrad.nn.parallel's layers place the collectives so the gradients are the
unsplit model's. Each is one Primitive: jit keeps them in the program, in order (never folded,
merged, dropped or fused across), vmap batches them, and on a GPU the operands are staged
through the host, where the transports are. An axis name may also be a vmap's axis_name: the
collective then acts across that vmap's batch members (funcgrad/dist/vmap_axis.py), as in JAX.
"""
from __future__ import annotations

import math
from time import perf_counter_ns
from typing import Sequence

import numpy as np

from .. import dtypes
from .. import numpy as fnp
from ..array import Array
from ..ops import elementwise as E
from ..ops.core import Primitive, ShapedArray, deflinear, defjvp, defvjp
from ..ops.layout import batch_first
from ..trace import Tracer, bind, hooks
from ..tree import tree_map
from ..vmap import axis_trace
from . import mesh as M
from . import vmap_axis as V

__all__ = ["psum", "pmean", "pmax", "pmin", "all_gather", "psum_scatter", "ppermute", "pshuffle", "pswapaxes",
           "all_to_all", "axis_index",
           "axis_size", "pvary", "psum_invariant", "all_gather_invariant"]

def _names(axis_name) -> tuple[str, ...]:
    """A hashable, checked spelling of axis_name (a primitive parameter): live vmap axis names, and
    the current mesh's."""
    names = (axis_name,) if isinstance(axis_name, str) else tuple(axis_name)
    on_mesh = tuple(name for name in names if axis_trace(name) is None)
    if on_mesh:
        M.current().axis_names(on_mesh)
    if len(set(names)) != len(names):
        raise ValueError(f"axis names {list(names)} repeat an axis")
    return names


def _group(axis_name: tuple[str, ...]):
    for name in axis_name:
        if axis_trace(name) is not None:
            raise ValueError(f"a collective over the vmap axis {name!r} of a value that is the same for every "
                             f"member, reached through a transform nested inside that vmap: the members would "
                             f"get different results, which that transform cannot hold; apply the collective "
                             f"to a value that depends on the vmapped arguments (or pvary it first)")
    return M.current().group(axis_name)


def _level(x) -> int:
    return x._trace.level if isinstance(x, Tracer) else 0


def _named_bind(prim, x, **params):
    """bind, with x first lifted into each live vmap whose axis the collective names and below
    which x was made (a constant, an outer transform's value), so that vmap's rule runs it."""
    traces = sorted((t for t in map(axis_trace, params["axis_name"]) if t is not None), key=lambda t: t.level)
    for trace in traces:
        if _level(x) < trace.level:
            x = trace.box(x, None)
    return bind(prim, x, **params)


class _Collective(Primitive):
    """A collective primitive: called, it lifts its operand into the vmaps its axes name."""
    __slots__ = ()
    __call__ = _named_bind


def _batching(unnamed, named, mixes: bool = False):
    """A collective's batch rule: unnamed for a vmap the collective does not name (each member runs
    it), named for the vmap it names (across the members); with several axes, the reductions (mixes)
    take the vmap's first and then the others, the rest refuse."""
    def rule(size, prim, vals, dims, vmap_axis=None, **params):
        if vmap_axis is None:
            return unnamed(size, prim, vals, dims, **params)
        rest = tuple(name for name in params["axis_name"] if name != vmap_axis)
        if rest and not mixes:
            raise ValueError(f"{prim.name} over the axes {list(params['axis_name'])}, of which {vmap_axis!r} is a "
                             f"vmap's: over a vmap axis it takes that axis alone (nest one {prim.name} per axis)")
        out, d = named(size, prim, vals[0], dims[0], **dict(params, axis_name=(vmap_axis,)))
        return (prim(out, **dict(params, axis_name=rest)) if rest else out), d
    return rule


def _moved(name: str, axis_name: tuple[str, ...], start: int, nbytes: int) -> None:
    """Record the collective with the bytes of this process's data it sent to others (none on an
    axis of one process), while a profiler records."""
    prof = hooks.profiler
    if prof is not None:
        alone = M.current().axis_size(axis_name) == 1
        prof.record_comm(f"{name}[{','.join(axis_name)}]", start, perf_counter_ns(), 0 if alone else nbytes)


def _check_numeric(name: str, x) -> None:
    if np.dtype(x.dtype) == np.bool_ or not (dtypes.is_float(x.dtype) or np.issubdtype(x.dtype, np.integer)):
        kind = "complex arrays travel as their .real and .imag" if dtypes.is_complex(x.dtype) else "not booleans"
        raise TypeError(f"{name} needs an array of real numbers (floats or integers), got {np.dtype(x.dtype).name}; "
                        f"{kind}")


def _same_shape(x, **params) -> ShapedArray:
    return ShapedArray(x.shape, x.dtype)


def _keep_batch(size, prim, vals, dims, **params):
    return prim(vals[0], **params), dims[0]


# ---- psum, pmax, pmin -----------------------------------------------------------------------------
def _reducer(op: str):
    def impl(x, axis_name):
        x = np.asarray(x)
        _check_numeric(f"p{op}", x)
        sizes = [t.size for t in map(axis_trace, axis_name) if t is not None]
        if sizes:  # reached below a vmap over some of the axes (through a transform inside it): x is every member's
            x = x * math.prod(sizes) if op == "sum" else x.copy()
            axis_name = tuple(name for name in axis_name if axis_trace(name) is None)
            if not axis_name:
                return x
        start = perf_counter_ns()
        out = np.asarray(_group(axis_name).all_reduce(x, op))
        _moved(f"p{op}", axis_name, start, x.nbytes)
        return out
    return impl


def _reducer_shape(name: str):
    def rule(x, *, axis_name):
        _check_numeric(name, x)
        return ShapedArray(x.shape, x.dtype)
    return rule


_extremes = {"max": fnp.max, "min": fnp.min}


def _reduction(op: str) -> Primitive:
    name = f"p{op}"
    named = V.psum if op == "sum" else V.extreme(_extremes[op])
    return _Collective(name, _reducer(op), shape_rule=_reducer_shape(name),
                       batch_rule=_batching(_keep_batch, named, True), cuda="through_host", fresh=True, ordered=True)


psum_p, pmax_p, pmin_p = _reduction("sum"), _reduction("max"), _reduction("min")
deflinear(psum_p, lambda g, out, x, axis_name: psum_p(g, axis_name=axis_name))


def _chosen(out, x, axis_name):
    """Where this process holds the extreme, shared evenly among tied processes (as max's ties)."""
    hits = E.convert_p(E.eq_p(x, out), dtype=out.dtype)
    return E.div_p(hits, psum_p(hits, axis_name=axis_name))


for _extreme in (pmax_p, pmin_p):
    defvjp(_extreme, lambda g, out, x, axis_name: E.mul_p(psum_p(g, axis_name=axis_name), _chosen(out, x, axis_name)))
    defjvp(_extreme, lambda t, out, x, axis_name: psum_p(E.mul_p(t, _chosen(out, x, axis_name)),
                                                           axis_name=axis_name))


# ---- all_gather and psum_scatter: each the other's transpose ---------------------------------------
def _axis(axis: int, ndim: int, name: str, what: str = "axis") -> int:
    if not -ndim <= axis < ndim:
        raise ValueError(f"{name}: {what} {axis} is out of range for {ndim} dimensions")
    return axis % ndim


def _gather_shape(x, *, axis_name, axis, tiled):
    n = axis_size(axis_name)
    if tiled:
        a = _axis(axis, len(x.shape), "all_gather")
        return ShapedArray(x.shape[:a] + (x.shape[a] * n,) + x.shape[a + 1:], x.dtype)
    a = _axis(axis, len(x.shape) + 1, "all_gather")
    return ShapedArray(x.shape[:a] + (n,) + x.shape[a:], x.dtype)


def _gather_impl(x, axis_name, axis, tiled):
    x = np.asarray(x)
    _gather_shape(x, axis_name=axis_name, axis=axis, tiled=tiled)
    start = perf_counter_ns()
    stacked = np.asarray(_group(axis_name).all_gather(x))
    _moved("all_gather", axis_name, start, x.nbytes)
    if tiled:
        return np.concatenate(list(stacked), axis=axis)
    return np.moveaxis(stacked, 0, axis)


def _scatter_shape(x, *, axis_name, scatter_dimension, tiled):
    n = axis_size(axis_name)
    d = _axis(scatter_dimension, len(x.shape), "psum_scatter", "scatter_dimension")
    _check_numeric("psum_scatter", x)
    if tiled:
        if x.shape[d] % n:
            raise ValueError(f"psum_scatter: dimension {d} of shape {x.shape} does not split into {n} equal tiles "
                             f"(the size of axis {list(axis_name)})")
        return ShapedArray(x.shape[:d] + (x.shape[d] // n,) + x.shape[d + 1:], x.dtype)
    if x.shape[d] != n:
        raise ValueError(f"psum_scatter: dimension {d} of shape {x.shape} must equal {n}, the size of axis "
                         f"{list(axis_name)} (or pass tiled=True)")
    return ShapedArray(x.shape[:d] + x.shape[d + 1:], x.dtype)


def _scatter_impl(x, axis_name, scatter_dimension, tiled):
    x = np.asarray(x)
    _scatter_shape(x, axis_name=axis_name, scatter_dimension=scatter_dimension, tiled=tiled)  # eager calls check too
    group = _group(axis_name)
    d = scatter_dimension % x.ndim
    start = perf_counter_ns()
    part = np.asarray(group.reduce_scatter(np.moveaxis(x, d, 0), "sum"))  # this rank's tile, leading
    _moved("psum_scatter", axis_name, start, x.nbytes)
    return np.moveaxis(part, 0, d) if tiled else part[0]


def _gather_batch(size, prim, vals, dims, axis_name, axis, tiled):
    x = batch_first(vals[0], dims[0], size)
    out_rank = x.ndim - 1 + (not tiled)  # the unbatched output's rank, which axis counts in
    return prim(x, axis_name=axis_name, axis=axis % out_rank + 1, tiled=tiled), 0


def _scatter_batch(size, prim, vals, dims, axis_name, scatter_dimension, tiled):
    x = batch_first(vals[0], dims[0], size)
    return prim(x, axis_name=axis_name, scatter_dimension=scatter_dimension % (x.ndim - 1) + 1, tiled=tiled), 0


all_gather_p = _Collective("all_gather", _gather_impl, shape_rule=_gather_shape,
                           batch_rule=_batching(_gather_batch, V.all_gather),
                         cuda="through_host", fresh=True, ordered=True)
psum_scatter_p = _Collective("psum_scatter", _scatter_impl, shape_rule=_scatter_shape,
                             batch_rule=_batching(_scatter_batch, V.psum_scatter),
                           cuda="through_host", fresh=True, ordered=True)
deflinear(all_gather_p, lambda g, out, x, axis_name, axis, tiled: psum_scatter_p(
    g, axis_name=axis_name, scatter_dimension=axis, tiled=tiled))
deflinear(psum_scatter_p, lambda g, out, x, axis_name, scatter_dimension, tiled: all_gather_p(
    g, axis_name=axis_name, axis=scatter_dimension, tiled=tiled))


# ---- ppermute and all_to_all: point to point ---------------------------------------------------------
def _exchange(group, x: np.ndarray, dst: int | None, src: int | None, send_first: bool, like: np.ndarray):
    """Send x to dst and receive from src (either may be None), in the order that cannot
    deadlock: along each cycle of the permutation one process sends first, the others receive
    first (the transfers are blocking)."""
    received = None
    if send_first and dst is not None:
        group.send(x, dst)
    if src is not None:
        received = np.asarray(group.recv(src, like))
    if not send_first and dst is not None:
        group.send(x, dst)
    return received


def _sends_first(me: int, send_to: dict[int, int]) -> bool:
    """Follow the permutation from me: a chain's head, or the lowest index of a cycle, sends first."""
    seen, at = [me], send_to.get(me)
    while at is not None and at != me:
        seen.append(at)
        at = send_to.get(at)
    return at is None and me not in send_to.values() or at == me and me == min(seen)


def _checked_perm(perm, n: int) -> tuple[tuple[int, int], ...]:
    pairs = tuple((int(s), int(d)) for s, d in perm)
    for s, d in pairs:
        if not (0 <= s < n and 0 <= d < n):
            raise ValueError(f"ppermute: pair {(s, d)} names an index outside the axis of size {n}")
    for which, values in (("source", [s for s, _ in pairs]), ("destination", [d for _, d in pairs])):
        if len(set(values)) != len(values):
            raise ValueError(f"ppermute: perm {list(pairs)} has a repeated {which} (it must be a permutation)")
    return pairs


def _ppermute_shape(x, *, axis_name, perm):
    _checked_perm(perm, axis_size(axis_name))
    return ShapedArray(x.shape, x.dtype)


def _ppermute_impl(x, axis_name, perm):
    x = np.ascontiguousarray(x)
    _ppermute_shape(x, axis_name=axis_name, perm=perm)
    group = _group(axis_name)
    me, send_to = group.rank, dict(perm)
    src = next((s for s, d in perm if d == me), None)
    dst = send_to.get(me)
    start = perf_counter_ns()
    if dst == me:
        received = x.copy()
    else:
        received = _exchange(group, x, dst, src, _sends_first(me, send_to), x)
    _moved("ppermute", axis_name, start, x.nbytes if dst not in (None, me) else 0)
    return received if received is not None else np.zeros_like(x)


ppermute_p = _Collective("ppermute", _ppermute_impl, shape_rule=_ppermute_shape,
                         batch_rule=_batching(_keep_batch, V.ppermute),
                       cuda="through_host", fresh=True, ordered=True)
deflinear(ppermute_p, lambda g, out, x, axis_name, perm: ppermute_p(
    g, axis_name=axis_name, perm=tuple((d, s) for s, d in perm)))


def _all_to_all_shape(x, *, axis_name, split_axis, concat_axis, tiled):
    n = axis_size(axis_name)
    s = _axis(split_axis, len(x.shape), "all_to_all", "split_axis")
    shape = list(x.shape)
    if tiled:
        c = _axis(concat_axis, len(x.shape), "all_to_all", "concat_axis")
        if shape[s] % n:
            raise ValueError(f"all_to_all: split_axis {s} of shape {x.shape} does not split into {n} equal tiles")
        shape[s] //= n
        shape[c] *= n
        return ShapedArray(shape, x.dtype)
    if shape[s] != n:
        raise ValueError(f"all_to_all: split_axis {s} of shape {x.shape} must equal {n}, the size of axis "
                         f"{list(axis_name)} (or pass tiled=True)")
    del shape[s]
    c = _axis(concat_axis, len(shape) + 1, "all_to_all", "concat_axis")
    return ShapedArray(shape[:c] + [n] + shape[c:], x.dtype)


def _all_to_all_impl(x, axis_name, split_axis, concat_axis, tiled):
    x = np.asarray(x)
    _all_to_all_shape(x, axis_name=axis_name, split_axis=split_axis, concat_axis=concat_axis, tiled=tiled)
    group = _group(axis_name)
    n, me = group.world_size, group.rank
    if tiled:
        chunks = [np.ascontiguousarray(c) for c in np.split(x, n, axis=split_axis)]
    else:
        chunks = [np.ascontiguousarray(np.take(x, i, axis=split_axis)) for i in range(n)]
    received = [None] * n
    received[me] = chunks[me]
    start = perf_counter_ns()
    for shift in range(1, n):  # a shift by k is a permutation of gcd(n, k) cycles
        dst, src = (me + shift) % n, (me - shift) % n
        received[src] = _exchange(group, chunks[dst], dst, src, me < np.gcd(n, shift), chunks[src])
    _moved("all_to_all", axis_name, start, x.nbytes - chunks[me].nbytes)
    return np.concatenate(received, axis=concat_axis) if tiled else np.stack(received, axis=concat_axis)


def _all_to_all_batch(size, prim, vals, dims, axis_name, split_axis, concat_axis, tiled):
    x = batch_first(vals[0], dims[0], size)
    rank = x.ndim - 1  # of the unbatched operand and output alike
    return prim(x, axis_name=axis_name, split_axis=split_axis % rank + 1, concat_axis=concat_axis % rank + 1,
                tiled=tiled), 0


all_to_all_p = _Collective("all_to_all", _all_to_all_impl, shape_rule=_all_to_all_shape,
                           batch_rule=_batching(_all_to_all_batch, V.all_to_all),
                         cuda="through_host", fresh=True, ordered=True)
deflinear(all_to_all_p, lambda g, out, x, axis_name, split_axis, concat_axis, tiled: all_to_all_p(
    g, axis_name=axis_name, split_axis=concat_axis, concat_axis=split_axis, tiled=tiled))


# ---- values held alike by every process: one value, not one per process --------------------------
# Megatron's tensor parallelism differentiates one replicated loss, not the sum of n copies. These
# three follow JAX shard_map's rules for values invariant over an axis: pvary turns one into a
# per-process value (identity; its transpose sums the processes' cotangents), psum_invariant and
# all_gather_invariant make one (their transposes take this process's part, summing nothing).
def _identity_impl(x, axis_name):
    return x


pvary_p = _Collective("pvary", _identity_impl, shape_rule=_same_shape, batch_rule=_batching(_keep_batch, V.pvary, True),
                      cuda="identity")
psum_invariant_p = _Collective("psum_invariant", _reducer("sum"), shape_rule=_reducer_shape("psum_invariant"),
                               batch_rule=_batching(_keep_batch, V.psum, True), cuda="through_host", fresh=True,
                               ordered=True)
deflinear(pvary_p, lambda g, out, x, axis_name: psum_invariant_p(g, axis_name=axis_name))
deflinear(psum_invariant_p, lambda g, out, x, axis_name: pvary_p(g, axis_name=axis_name))


def _own_part(g, axis_name, axis, tiled):
    """This process's part of an all_gather's output: its transpose where the output is one value."""
    i, n = axis_index(axis_name), axis_size(axis_name)
    if not tiled:
        return fnp.take(g, i, axis=axis)
    k = g.shape[axis] // n
    return fnp.take(g, i * k + fnp.arange(k, dtype=i.dtype), axis=axis)


all_gather_invariant_p = _Collective("all_gather_invariant", _gather_impl, shape_rule=_gather_shape,
                                     batch_rule=_batching(_gather_batch, V.all_gather), cuda="through_host",
                                     fresh=True, ordered=True)
deflinear(all_gather_invariant_p, lambda g, out, x, axis_name, axis, tiled: pvary_p(
    _own_part(g, axis_name, axis, tiled), axis_name=axis_name))


# ---- the functions --------------------------------------------------------------------------------
def _array(x):
    return x if hasattr(x, "shape") and hasattr(x, "dtype") else fnp.asarray(x)


def psum(x, axis_name):
    """The sum over the processes of the mesh axis (or tuple of axes), on each; x may be a pytree."""
    names = _names(axis_name)
    return tree_map(lambda leaf: psum_p(_array(leaf), axis_name=names), x)


def pmean(x, axis_name):
    """The mean over the processes of the axis; x may be a pytree."""
    names = _names(axis_name)
    n = axis_size(names)
    return tree_map(lambda leaf: E.div_p(psum_p(_array(leaf), axis_name=names), n), x)


def pmax(x, axis_name):
    names = _names(axis_name)
    return tree_map(lambda leaf: pmax_p(_array(leaf), axis_name=names), x)


def pmin(x, axis_name):
    names = _names(axis_name)
    return tree_map(lambda leaf: pmin_p(_array(leaf), axis_name=names), x)


def all_gather(x, axis_name, *, axis: int = 0, tiled: bool = False):
    """Every process's x along the axis, stacked at `axis` (tiled: concatenated along it)."""
    return all_gather_p(_array(x), axis_name=_names(axis_name), axis=int(axis), tiled=bool(tiled))


def psum_scatter(x, axis_name, *, scatter_dimension: int = 0, tiled: bool = False):
    """psum, of which each process keeps its own slice of scatter_dimension (its axis_index-th)."""
    return psum_scatter_p(_array(x), axis_name=_names(axis_name), scatter_dimension=int(scatter_dimension), tiled=bool(tiled))


def ppermute(x, axis_name, perm: Sequence[tuple[int, int]]):
    """x sent from source to destination index for each (source, destination) pair of perm; a
    process nothing is sent to gets zeros."""
    names = _names(axis_name)
    return ppermute_p(_array(x), axis_name=names, perm=_checked_perm(perm, axis_size(names)))


def pshuffle(x, axis_name, perm: Sequence[int]):
    """Each index i receives x from index perm[i] (jax.lax.pshuffle: ppermute by a full permutation)."""
    perm = [int(p) for p in perm]
    if sorted(perm) != list(range(axis_size(_names(axis_name)))):
        raise ValueError(f"pshuffle: perm {perm} is not a permutation of the axis's {axis_size(_names(axis_name))} "
                         f"indices")
    return ppermute(x, axis_name, [(src, dst) for dst, src in enumerate(perm)])


def pswapaxes(x, axis_name, axis: int, *, axis_index_groups=None):
    """x's axis swapped with the mesh (or vmap) axis: all_to_all with that axis split and
    concatenated (jax.lax.pswapaxes); its length must be the axis size."""
    if axis_index_groups is not None:
        raise ValueError("pswapaxes: axis_index_groups is not supported; make a mesh axis of the groups instead")
    return all_to_all(x, axis_name, axis, axis)


def all_to_all(x, axis_name, split_axis: int, concat_axis: int, *, tiled: bool = False):
    """Split x along split_axis into one chunk per process, send chunk i to process i, and put
    the chunks received together along concat_axis (jax.lax.all_to_all)."""
    return all_to_all_p(_array(x), axis_name=_names(axis_name), split_axis=int(split_axis), concat_axis=int(concat_axis),
                        tiled=bool(tiled))


def pvary(x, axis_name):
    """x, held alike by the axis's processes, as each process's own value (jax.lax.pvary): the
    identity; its gradient is the sum of the processes' gradients (Megatron's 'copy to the
    tensor-parallel region')."""
    return pvary_p(_array(x), axis_name=_names(axis_name))


def psum_invariant(x, axis_name):
    """psum whose result is one value held alike by the processes: its gradient is this process's
    cotangent, summed with nothing (Megatron's 'reduce from the tensor-parallel region')."""
    return psum_invariant_p(_array(x), axis_name=_names(axis_name))


def all_gather_invariant(x, axis_name, *, axis: int = 0, tiled: bool = False):
    """all_gather whose result is one value held alike: its gradient is this process's part."""
    return all_gather_invariant_p(_array(x), axis_name=_names(axis_name), axis=int(axis), tiled=bool(tiled))


def axis_index(axis_name) -> Array:
    """This process's index along the mesh axis (row-major over a tuple of axes), an int32 scalar;
    along a vmap's axis, each member's index."""
    index = None
    for name in _names(axis_name):
        trace, size = axis_trace(name), axis_size(name)
        own = (trace.box(Array(np.arange(size, dtype=np.int32)), 0) if trace is not None
               else Array(np.asarray(M.current().axis_index(name), np.int32)))
        index = own if index is None else index * size + own
    return index


def axis_size(axis_name) -> int:
    """The number of processes (or vmap members) along the axis, or the product over a tuple."""
    names = (axis_name,) if isinstance(axis_name, str) else tuple(axis_name)
    on_mesh = tuple(name for name in names if axis_trace(name) is None)
    return math.prod(axis_trace(name).size for name in names if name not in on_mesh) * (
        M.current().axis_size(on_mesh) if on_mesh else 1)
