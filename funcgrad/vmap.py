"""vmap: the batching transform. One rule per primitive says how to run it on a batch at once.

A BatchTracer carries a value and the axis of it that is the batch (None: not batched). Rules
move the batch axis to the front of their operands and return it at the front of the result,
so each rule only has to shift axes, prepend to shapes or add an index. Primitives without a
rule (none at present, see LOOPED) fall back to a Python loop over the batch.
"""
from __future__ import annotations

import functools
from typing import Any, Callable

import numpy as np

from .errors import ConcretizationError
from .ops import conv as C
from .ops import decompositions as D
from .ops import elementwise as E
from .ops import linalg as L
from .ops import prng
from .ops import reductions as R
from .ops import shape as S
from .ops.core import registry
from .trace import Trace, Tracer, bind
from .tree import tree_flatten, tree_structure

__all__ = ["vmap"]


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
    __slots__ = ("size",)

    def __init__(self, size: int):
        super().__init__("vmap")
        self.size = size

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
        if all(d is None for d in dims):
            return bind(prim, *vals, **params)
        rule = RULES.get(prim.name, _loop_rule)
        out, out_dim = rule(self.size, prim, vals, dims, **params)
        return BatchTracer(self, out, out_dim)

    def process_custom_vjp(self, fn, args):
        return fn.fun(*args)

    def process_checkpoint(self, fun, args):
        return fun(*args)


# ---- helpers ------------------------------------------------------------------------------------
def _ndim(x) -> int:
    return len(np.shape(x)) if not hasattr(x, "shape") else len(x.shape)


def _front(x, d, size: int):
    """x with its batch axis first; an unbatched x is broadcast to the batch."""
    if d is None:
        return S.broadcast_to_p(x, shape=(size,) + tuple(np.shape(x) if not hasattr(x, "shape") else x.shape))
    if d == 0:
        return x
    perm = (d,) + tuple(i for i in range(_ndim(x)) if i != d)
    return S.transpose_p(x, perm=perm)


def _align(x, d, rank: int):
    """A batched operand (batch axis moved first) padded with 1s to `rank` logical axes, so it
    broadcasts against unbatched operands as NumPy would have broadcast the unbatched values."""
    x = _front(x, d, 0)
    logical = tuple(x.shape[1:])
    if len(logical) == rank:
        return x
    return S.reshape_p(x, shape=(x.shape[0],) + (1,) * (rank - len(logical)) + logical)


def _logical_rank(vals, dims) -> int:
    return max((_ndim(v) - (d is not None) for v, d in zip(vals, dims) if v is not None), default=0)


# ---- rules: each returns (out, out_batch_dim) ----------------------------------------------------
def _elementwise_rule(size, prim, vals, dims, **params):
    rank = _logical_rank(vals, dims)
    moved = [v if d is None else _align(v, d, rank) for v, d in zip(vals, dims)]
    return prim(*moved, **params), 0


def _axes_rule(size, prim, vals, dims, axes, **params):
    x = _front(vals[0], dims[0], size)
    return prim(x, axes=tuple(a + 1 for a in axes), **params), 0


def _axis_rule(size, prim, vals, dims, axis, **params):
    x = _front(vals[0], dims[0], size)
    return prim(x, axis=axis + 1, **params), 0


def _reshape_rule(size, prim, vals, dims, shape):
    x = _front(vals[0], dims[0], size)
    return prim(x, shape=(x.shape[0],) + tuple(shape)), 0


def _broadcast_to_rule(size, prim, vals, dims, shape):
    x = _align(vals[0], dims[0], len(shape))
    return prim(x, shape=(x.shape[0],) + tuple(shape)), 0


def _transpose_rule(size, prim, vals, dims, perm):
    x = _front(vals[0], dims[0], size)
    return prim(x, perm=(0,) + tuple(p + 1 for p in perm)), 0


def _pad_rule(size, prim, vals, dims, widths, value):
    x = _front(vals[0], dims[0], size)
    return prim(x, widths=((0, 0),) + tuple(widths), value=value), 0


def _concatenate_rule(size, prim, vals, dims, axis):
    return prim(*(_front(v, d, size) for v, d in zip(vals, dims)), axis=axis + 1), 0


def _batched_index(size, vals, dims):
    """Index arrays for gather / scatter-add with a leading arange over the batch, so that the
    batch axis of the result comes first whatever the index mixes."""
    arrays = vals[1:]
    rank = max((_ndim(a) - (d is not None) for a, d in zip(arrays, dims[1:])), default=0)
    fixed = [a if d is None else _align(a, d, rank) for a, d in zip(arrays, dims[1:])]
    batch = np.arange(size).reshape((size,) + (1,) * rank)
    return [batch] + fixed


def _advanced_layout(spec, x_ndim: int):
    """How NumPy places the advanced-index dimensions of x[spec]: (adjacent, position of the first
    advanced entry, result dims before it). Integers count as advanced once an array is present."""
    advanced = [i for i, item in enumerate(spec) if item[0] == "a" or (item[0] == "i" and
                                                                      any(it[0] == "a" for it in spec))]
    if not advanced:
        return True, 0, 0
    consumed = sum(1 for item in spec if item[0] in "sia")
    before = 0
    for item in spec[:advanced[0]]:
        before += x_ndim - consumed if item[0] == "e" else 1
    return advanced == list(range(advanced[0], advanced[-1] + 1)), advanced[0], before


def _gather_rule(size, prim, vals, dims, spec):
    x = _front(vals[0], dims[0], size)
    arrays = vals[1:]
    if all(d is None for d in dims[1:]):  # only the operand is batched: a leading full slice
        adjacent, _, _ = _advanced_layout(spec, x.ndim - 1)
        out = prim(x, *arrays, spec=(("s", None, None, None),) + tuple(spec))
        adv_rank = max((_ndim(a) for a in arrays), default=0)
        return out, 0 if adjacent else adv_rank
    out = prim(x, *_batched_index(size, vals, dims), spec=(("a",),) + tuple(spec))
    adjacent, first, before = _advanced_layout(spec, x.ndim - 1)
    if adjacent and first > 0 and before:  # NumPy moved the advanced block in front of `before` dims
        k = max(_ndim(a) - (d is not None) for a, d in zip(arrays, dims[1:]))
        perm = (0,) + tuple(range(k + 1, k + 1 + before)) + tuple(range(1, k + 1)) + \
            tuple(range(k + 1 + before, _ndim(out)))
        out = S.transpose_p(out, perm=perm)
    return out, 0


def _scatter_add_rule(size, prim, vals, dims, spec, shape):
    """The transpose of _gather_rule: the cotangent is laid out as that rule's output was."""
    g, arrays = vals[0], vals[1:]
    adjacent, first, before = _advanced_layout(spec, len(shape))
    if all(d is None for d in dims[1:]):
        adv_rank = max((_ndim(a) for a in arrays), default=0)
        g = _to_axis(g, dims[0], 0 if adjacent else adv_rank, size)
        return prim(g, *arrays, spec=(("s", None, None, None),) + tuple(spec), shape=(size,) + tuple(shape)), 0
    g = _front(g, dims[0], size)
    if adjacent and first > 0 and before:
        k = max(_ndim(a) - (d is not None) for a, d in zip(arrays, dims[1:]))
        perm = (0,) + tuple(range(before + 1, before + 1 + k)) + tuple(range(1, before + 1)) + \
            tuple(range(before + 1 + k, _ndim(g)))
        g = S.transpose_p(g, perm=perm)
    return prim(g, *_batched_index(size, vals, dims), spec=(("a",),) + tuple(spec), shape=(size,) + tuple(shape)), 0


def _to_axis(x, d, axis: int, size: int):
    """x with its batch axis at position `axis`."""
    x = _front(x, d, size)
    if axis == 0:
        return x
    perm = tuple(range(1, axis + 1)) + (0,) + tuple(range(axis + 1, _ndim(x)))
    return S.transpose_p(x, perm=perm)


def _matmul_rule(size, prim, vals, dims, **params):
    rank = _logical_rank(vals, dims)
    moved = [v if d is None else _align(v, d, rank) for v, d in zip(vals, dims)]
    return prim(*moved, **params), 0


def _einsum_rule(size, prim, vals, dims, spec, **params):
    inputs, output = spec.split("->")
    letter = next(c for c in "zyxwvutsrqponmlkjihgfedcbaZYXWVUTSRQPONMLKJIHGFEDCBA" if c not in spec)
    subs = inputs.split(",")
    moved = []
    for i, (v, d) in enumerate(zip(vals, dims)):
        if d is None:
            moved.append(v)
        else:
            moved.append(_front(v, d, size))
            subs[i] = letter + subs[i]
    return prim(*moved, spec=",".join(subs) + "->" + letter + output, **params), 0


def _merge_batch(x):
    return S.reshape_p(x, shape=(x.shape[0] * x.shape[1],) + tuple(x.shape[2:]))


def _im2col_rule(size, prim, vals, dims, **params):
    x = _front(vals[0], dims[0], size)
    out = prim(_merge_batch(x), **params)
    return S.reshape_p(out, shape=(size, x.shape[1]) + tuple(out.shape[1:])), 0


def _col2im_rule(size, prim, vals, dims, image_shape, **params):
    cols = _front(vals[0], dims[0], size)
    out = prim(_merge_batch(cols), image_shape=(size * image_shape[0],) + tuple(image_shape[1:]), **params)
    return S.reshape_p(out, shape=(size,) + tuple(image_shape)), 0


def _threefry_rule(size, prim, vals, dims):
    key = _front(vals[0], dims[0], size)
    counters = [c if d is None else _front(c, d, size) for c, d in zip(vals[1:], dims[1:])]
    return prim(key, *counters), 0


def _leading_batch_rule(size, prim, vals, dims, **params):
    """Primitives that already map over leading axes (the decompositions): batch axis first."""
    return prim(_front(vals[0], dims[0], size), **params), 0


def _labels_rule(size, prim, vals, dims, **params):
    """pick / unpick map over the leading axes of both operands: batch axis first on each."""
    return prim(_front(vals[0], dims[0], size), _front(vals[1], dims[1], size), **params), 0


def _loop_rule(size, prim, vals, dims, **params):
    """The fallback: apply prim to each batch element and stack the results."""
    from . import numpy as fnp
    outs = []
    for i in range(size):
        sliced = [v if d is None else S.gather_p(v, spec=(("s", None, None, None),) * d + (("i", i),))
                  for v, d in zip(vals, dims)]
        outs.append(prim(*sliced, **params))
    return fnp.stack(outs), 0


RULES: dict[str, Callable] = {}
_ELEMENTWISE = [p.name for p in vars(E).values() if getattr(p, "impls", None) is not None] + [
    "stop_gradient", "bitcast"]
for _name in _ELEMENTWISE:
    RULES[_name] = _elementwise_rule
for _prim in (R.sum_p, R.max_p, R.min_p, R.prod_p, R.all_p, R.any_p, R.logsumexp_p, R.softmax_p, R.log_softmax_p):
    RULES[_prim.name] = _axes_rule
for _prim in (R.argmax_p, R.argmin_p, R.cumsum_p, prng.argsort_p):
    RULES[_prim.name] = _axis_rule
RULES.update({
    S.reshape_p.name: _reshape_rule, S.broadcast_to_p.name: _broadcast_to_rule,
    S.transpose_p.name: _transpose_rule, S.pad_p.name: _pad_rule, S.concatenate_p.name: _concatenate_rule,
    S.gather_p.name: _gather_rule, S.scatter_add_p.name: _scatter_add_rule,
    L.matmul_p.name: _matmul_rule, L.einsum_p.name: _einsum_rule,
    C.im2col_p.name: _im2col_rule, C.col2im_p.name: _col2im_rule, prng.threefry2x32_p.name: _threefry_rule,
    D.solve_p.name: _matmul_rule, D.slogdet_p.name: _leading_batch_rule, D.cholesky_p.name: _leading_batch_rule,
    D.eigh_p.name: _leading_batch_rule, R.pick_p.name: _labels_rule, R.unpick_p.name: _labels_rule,
})

LOOPED = sorted(set(registry) - set(RULES))  # primitives vmap runs one batch element at a time


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


def vmap(fun: Callable, in_axes: Any = 0, out_axes: Any = 0, axis_size: int | None = None) -> Callable:
    """Vectorise fun over a batch axis: in_axes (an int, None, or a pytree of them matching the
    arguments) says where each input's batch axis is; out_axes where the outputs get theirs.
    Keyword arguments are batched along axis 0 (as in JAX); axis_size gives the batch size when
    no argument is batched."""
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
        from .numpy import asarray
        with BatchTrace(size) as trace:
            boxed = [leaf if axis is None else BatchTracer(trace, asarray(leaf), axis % _ndim(leaf))
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
                    val, d = asarray(leaf), None
                results.append(_place(val, d, axis, size))
        return out_tree.unflatten(results)

    return batched


def _place(val, d, axis, size: int):
    if axis is None:
        if d is not None:
            raise ValueError("vmap: an output with out_axes=None depends on the batch")
        return val
    return _to_axis(val, d, axis % (_ndim(val) + (d is None)), size)
