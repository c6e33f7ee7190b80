"""vmap: the batching transform. Each primitive's batch_rule (funcgrad.ops) says how to run it on a
whole batch at once.

A BatchTracer carries a value and the axis of it that is the batch (None: not batched). The rules
move the batch axis to the front of their operands and return it at the front of the result.

vmap(f, axis_name="i") names its batch axis, as JAX's does: collectives over "i" (dist.psum,
all_gather, ppermute, axis_index, ...) then act across the batch members, as they would across
the processes of a mesh axis (funcgrad.dist.collectives, whose batch rules read vmap_axis).
"""
from __future__ import annotations

import functools
from typing import Any, Callable

import numpy as np

from .array import Array, ArrayBase, to_numpy
from .errors import ConcretizationError
from .ops.layout import batch_to
from .trace import Trace, Tracer, bind
from .tree import tree_flatten, tree_structure

__all__ = ["vmap", "axis_trace"]

_named: list["BatchTrace"] = []  # the live vmaps with an axis_name, innermost last


class BatchTracer(Tracer):
    __slots__ = ("val", "bdim")

    def __init__(self, trace, val, bdim):
        self._trace = trace
        self.val = val
        self.bdim = bdim

    def primal(self):
        return self.val

    @property
    def shape(self):
        s = tuple(self.val.shape)
        return s if self.bdim is None else s[:self.bdim] + s[self.bdim + 1:]

    dtype = property(lambda self: self.val.dtype)

    def concrete(self, what: str = "the value"):
        raise ConcretizationError(f"vmap: {what} of a batched value, which has no single concrete value; use "
                                  f"fnp.where or fg.cond instead of Python control flow on it")


class BatchTrace(Trace):
    __slots__ = ("size", "axis_name")

    def __init__(self, size: int, axis_name: str | None = None):
        super().__init__("vmap")
        self.size = size
        self.axis_name = axis_name

    def __enter__(self):
        if self.axis_name is not None:
            _named.append(self)
        return self

    def __exit__(self, *exc):
        if self.axis_name is not None:
            _named.remove(self)
        super().__exit__(*exc)

    def process(self, prim, args, params):
        self.check_alive()
        vals, dims = [], []
        for a in args:
            if type(a) is BatchTracer and a._trace is self:
                vals.append(a.val)
                dims.append(a.bdim)
            else:
                vals.append(a)
                dims.append(None)
        if self.axis_name is not None and self.axis_name in params.get("axis_name", ()):
            # a collective over this batch: it acts across the members, batched operand or not
            out, out_dim = prim.batch_rule(self.size, prim, vals, dims, vmap_axis=self.axis_name, **params)
            return out if out_dim is None else BatchTracer(self, out, out_dim)
        if all(d is None for d in dims):
            return bind(prim, *vals, **params)
        out, out_dim = prim.batch_rule(self.size, prim, vals, dims, **params)
        return BatchTracer(self, out, out_dim)

    def process_custom_vjp(self, fn, args):
        return fn.fun(*args)

    def box(self, val, bdim: int | None) -> BatchTracer:
        """val, made at a level below this trace, as this trace's value (bdim None: every member's)."""
        return BatchTracer(self, val, bdim)

    def process_checkpoint(self, fun, args):
        return fun(*args)


def axis_trace(name) -> BatchTrace | None:
    """The innermost live vmap whose axis_name is name, if any."""
    for trace in reversed(_named):
        if trace.axis_name == name:
            return trace
    return None


# ---- the transform ---------------------------------------------------------------------------------
def _broadcast_prefix(prefix, tree, what: str) -> list:
    """Per-leaf axes from an axis spec that is a prefix of tree (an int/None applies to a subtree)."""
    if prefix is None or isinstance(prefix, int):
        return [prefix] * len(tree_flatten(tree)[0])
    if isinstance(prefix, (list, tuple)) and isinstance(tree, (list, tuple)) and len(prefix) == len(tree):
        return [a for p, t in zip(prefix, tree) for a in _broadcast_prefix(p, t, what)]
    if isinstance(prefix, dict) and isinstance(tree, dict) and set(prefix) == set(tree):
        return [a for k in sorted(tree) for a in _broadcast_prefix(prefix[k], tree[k], what)]
    raise ValueError(f"vmap: {what} {prefix!r} does not match the structure {tree_structure(tree)}")


def vmap(fun: Callable, in_axes: Any = 0, out_axes: Any = 0, axis_size: int | None = None,
         axis_name: str | None = None) -> Callable:
    """Vectorise fun over a batch axis: in_axes (an int, None, or a pytree of them matching the
    arguments) says where each input's batch axis is; out_axes where the outputs get theirs.
    Keyword arguments are batched along axis 0 (as in JAX); axis_size gives the batch size when
    no argument is batched; axis_name names the batch axis for collectives inside fun."""
    if axis_name is not None and not (isinstance(axis_name, str) and axis_name):
        raise TypeError(f"vmap: axis_name must be a non-empty string, got {axis_name!r}")
    @functools.wraps(fun)
    def batched(*args, **kwargs):
        axes_spec = in_axes if not isinstance(in_axes, list) else tuple(in_axes)
        if isinstance(axes_spec, tuple) and len(axes_spec) != len(args):
            raise ValueError(f"vmap: in_axes has {len(axes_spec)} entries for {len(args)} arguments")
        leaves, treedef = tree_flatten((args, kwargs))
        axes = _broadcast_prefix(axes_spec, args, "in_axes") + [0] * (len(leaves) - len(tree_flatten(args)[0]))
        sizes = {}
        for i, (leaf, axis) in enumerate(zip(leaves, axes)):
            if axis is None:
                continue
            shape = np.shape(leaf) if not hasattr(leaf, "shape") else tuple(leaf.shape)
            if not -len(shape) <= axis < len(shape):
                raise ValueError(f"vmap: in_axes {axis} is out of range for an argument of shape {shape}")
            sizes.setdefault(shape[axis], i)
        if axis_size is not None:
            sizes.setdefault(int(axis_size), -1)
        if not sizes:
            raise ValueError("vmap: no argument is batched (every in_axes is None); pass axis_size to map anyway")
        if len(sizes) > 1:
            raise ValueError(f"vmap: batched arguments disagree on the batch size: {sorted(sizes)}")
        size = next(iter(sizes))
        with BatchTrace(size, axis_name) as trace:
            boxed = [leaf if axis is None else BatchTracer(trace, _as_array(leaf), axis % _ndim(leaf))
                     for leaf, axis in zip(leaves, axes)]
            call_args, call_kwargs = treedef.unflatten(boxed)
            out = fun(*call_args, **call_kwargs)
            out_leaves, out_tree = tree_flatten(out)
            out_axes_list = _broadcast_prefix(out_axes, out, "out_axes")
            results = []
            for leaf, axis in zip(out_leaves, out_axes_list):
                if type(leaf) is BatchTracer and leaf._trace is trace:
                    val, d = leaf.val, leaf.bdim
                else:
                    val, d = _as_array(leaf), None
                results.append(_place(val, d, axis, size))
        return out_tree.unflatten(results)

    return batched


def _ndim(x) -> int:
    return len(np.shape(x)) if not hasattr(x, "shape") else len(x.shape)


def _as_array(x):
    return x if isinstance(x, ArrayBase) else Array(to_numpy(x))


def _place(val, d, axis, size: int):
    if axis is None:
        if d is not None:
            raise ValueError("vmap: an output with out_axes=None depends on the batch")
        return val
    rank = _ndim(val) + (d is None)  # the batched output's
    if not -rank <= axis < rank:
        raise ValueError(f"vmap: out_axes {axis} is out of range for a batched output of rank {rank}")
    return batch_to(val, d, axis % rank, size)
