"""Structural primitives: padding, concatenation, and indexing (one gather for every kind of index,
whose transpose is a scatter-add)."""
from __future__ import annotations

import numpy as np

from ..cpu import rows
from .core import Primitive, ShapedArray, deflinear, defjvp, defvjp
from .layout import aligned, batch_first, batch_to, broadcast_to_p, transpose_p


# ---- padding -------------------------------------------------------------------------------------
def _pad_impl(x, widths, value):
    return np.pad(x, widths, constant_values=np.asarray(value, x.dtype))


def _pad_shape(x, *, widths, value):
    if len(widths) != len(x.shape) or any(int(lo) < 0 or int(hi) < 0 for lo, hi in widths):
        raise ValueError(f"pad widths {tuple(widths)} do not give a non-negative (before, after) pair for each "
                         f"of the {len(x.shape)} axes of shape {x.shape}")
    return ShapedArray(tuple(d + int(lo) + int(hi) for d, (lo, hi) in zip(x.shape, widths)), x.dtype)


def _pad_batch(size, prim, vals, dims, widths, value):
    return prim(batch_first(vals[0], dims[0], size), widths=((0, 0),) + tuple(widths), value=value), 0


def _unpad(g, widths):
    return gather_p(g, spec=tuple(("s", lo, lo + n, 1)
                                  for (lo, _), n in zip(widths, _unpadded_shape(g.shape, widths))))


def _unpadded_shape(shape, widths):
    return tuple(d - lo - hi for d, (lo, hi) in zip(shape, widths))


pad_p = Primitive("pad", _pad_impl, shape_rule=_pad_shape, batch_rule=_pad_batch, cuda="pad", fresh=True)
defvjp(pad_p, lambda g, out, x, widths, value: _unpad(g, widths))
defjvp(pad_p, lambda t, out, x, widths, value: pad_p(t, widths=widths, value=0))  # tangent pads with 0


# ---- concatenation -----------------------------------------------------------------------------------
def _concatenate_shape(*xs, axis):
    if not xs:
        raise ValueError("need at least one array to concatenate")
    first = xs[0]
    if any(not isinstance(x, ShapedArray) for x in xs) or not first.shape:
        raise ValueError("zero-dimensional arrays cannot be concatenated")
    ndim = len(first.shape)
    if not -ndim <= axis < ndim:
        raise ValueError(f"axis {axis} is out of bounds for array of dimension {ndim}")
    axis %= ndim
    for x in xs[1:]:
        if len(x.shape) != ndim or any(a != b for d, (a, b) in enumerate(zip(x.shape, first.shape)) if d != axis):
            raise ValueError(f"all the input array dimensions except for the concatenation axis must match "
                             f"exactly: {first.shape} and {x.shape} along axis {axis}")
    shape = first.shape[:axis] + (sum(x.shape[axis] for x in xs),) + first.shape[axis + 1:]
    return ShapedArray(shape, np.result_type(*(x.dtype for x in xs)))


def _concatenate_vjp(i, g, out, *xs, axis):
    start = sum(x.shape[axis] for x in xs[:i])
    spec = tuple(("s", None, None, None) for _ in range(axis)) + (("s", start, start + xs[i].shape[axis], 1),)
    return gather_p(g, spec=spec)


def _concatenate_jvp(tangents, out, *xs, axis):
    filled = [t if t is not None else broadcast_to_p(np.zeros((), out.dtype), shape=x.shape)
              for t, x in zip(tangents, xs)]
    return concatenate_p(*filled, axis=axis)


def _concatenate_batch(size, prim, vals, dims, axis):
    ndim = _ndim(vals[0]) - (dims[0] is not None)
    return prim(*(batch_first(v, d, size) for v, d in zip(vals, dims)), axis=axis % ndim + 1), 0


concatenate_p = Primitive("concatenate", lambda *xs, axis: np.concatenate(xs, axis=axis),
                          shape_rule=_concatenate_shape, batch_rule=_concatenate_batch, cuda="concatenate", fresh=True)
concatenate_p.vjp_argnum = _concatenate_vjp
concatenate_p.jvp_joint = _concatenate_jvp


# ---- indexing: one gather for every kind of index, its transpose is a scatter-add ----------------
# An index is a static spec (hashable, so jit can key on it) plus the integer arrays it uses:
#   ("s", start, stop, step) slice · ("i", n) integer · ("n",) None · ("e",) Ellipsis · ("a",) array
def build_index(spec, arrays):
    it = iter(arrays)
    out = []
    for item in spec:
        kind = item[0]
        if kind == "s":
            out.append(slice(item[1], item[2], item[3]))
        elif kind == "i":
            out.append(item[1])
        elif kind == "n":
            out.append(None)
        elif kind == "e":
            out.append(Ellipsis)
        else:
            out.append(next(it))
    return tuple(out)


def advanced_layout(spec, x_ndim: int):
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


_ADVANCED = object()  # where the advanced-index dimensions go, while the result shape is built


def _gather_shape(x, *arrays, spec):
    """NumPy's indexing rules: slices keep an axis, integers drop it, None adds one, the broadcast
    shape of the index arrays replaces their axes (in place if they are adjacent, else in front)."""
    ndim = len(x.shape)
    consumed = sum(1 for item in spec if item[0] in "sia")
    if consumed > ndim:
        raise IndexError(f"too many indices for array: array is {ndim}-dimensional, but {consumed} were indexed")
    if sum(1 for item in spec if item[0] == "e") > 1:
        raise IndexError("an index can only have a single ellipsis ('...')")
    for a in arrays:
        if not isinstance(a, ShapedArray) or a.dtype.kind not in "iu":
            raise IndexError("arrays used as indices must be of integer type")
    has_arrays = bool(arrays)
    index_shapes, out, axis, it = [], [], 0, iter(arrays)
    for item in spec:
        kind = item[0]
        if kind == "n":
            out.append(1)
        elif kind == "e":
            out.extend(x.shape[axis:axis + ndim - consumed])
            axis += ndim - consumed
        elif kind == "s":
            out.append(len(range(*slice(item[1], item[2], item[3]).indices(x.shape[axis]))))
            axis += 1
        else:
            if kind == "i" and not -x.shape[axis] <= item[1] < x.shape[axis]:
                raise IndexError(f"index {item[1]} is out of bounds for axis {axis} with size {x.shape[axis]}")
            if kind == "a" or has_arrays:
                index_shapes.append(next(it).shape if kind == "a" else ())
                out.append(_ADVANCED)
            axis += 1
    out.extend(x.shape[axis:])
    if index_shapes:
        try:
            advanced = np.broadcast_shapes(*index_shapes)
        except ValueError:
            raise IndexError(f"shape mismatch: indexing arrays could not be broadcast together with shapes "
                             f"{' '.join(map(str, index_shapes))}") from None
        adjacent = advanced_layout(spec, ndim)[0]
        first = out.index(_ADVANCED)
        basic = [d for d in out if d is not _ADVANCED]
        out = basic[:first] + list(advanced) + basic[first:] if adjacent else list(advanced) + basic
    return ShapedArray(tuple(out), x.dtype)


def _scatter_add_shape(g, *arrays, spec, shape):
    target = _gather_shape(ShapedArray(shape, g.dtype), *arrays, spec=spec).shape
    if np.broadcast_shapes(g.shape, target) != target:
        raise ValueError(f"scatter_add: values of shape {g.shape} do not fit the indexed shape {target}")
    return ShapedArray(shape, g.dtype)


def _gather_impl(x, *arrays, spec):
    return x[build_index(spec, arrays)]


def _scatter_add_impl(g, *arrays, spec, shape):
    if tuple(spec) == (("a",),):  # rows of a table (an embedding's gradient)
        index = np.asarray(arrays[0])
        if index.dtype.kind in "iu" and np.shape(g) == index.shape + tuple(shape[1:]):
            fast = rows.add_rows(np.asarray(g), index, tuple(shape))
            if fast is not None:
                return fast
    out = np.zeros(shape, g.dtype)
    index = build_index(spec, arrays)
    if arrays:
        np.add.at(out, index, g)  # repeated indices accumulate
    else:
        out[index] = g  # a basic index never repeats an element
    return out


def _ndim(x) -> int:
    return len(x.shape) if hasattr(x, "shape") else np.ndim(x)


def _batched_index(size, vals, dims):
    """Index arrays for gather / scatter-add with a leading arange over the batch, so that the
    batch axis of the result comes first whatever the index mixes."""
    arrays = vals[1:]
    rank = max((_ndim(a) - (d is not None) for a, d in zip(arrays, dims[1:])), default=0)
    fixed = [a if d is None else aligned(a, d, rank) for a, d in zip(arrays, dims[1:])]
    batch = np.arange(size).reshape((size,) + (1,) * rank)
    return [batch] + fixed


def _gather_batch(size, prim, vals, dims, spec):
    x = batch_first(vals[0], dims[0], size)
    arrays = vals[1:]
    if all(d is None for d in dims[1:]):  # only the operand is batched: a leading full slice
        adjacent, _, _ = advanced_layout(spec, _ndim(x) - 1)
        out = prim(x, *arrays, spec=(("s", None, None, None),) + tuple(spec))
        adv_rank = max((_ndim(a) for a in arrays), default=0)
        return out, 0 if adjacent else adv_rank
    out = prim(x, *_batched_index(size, vals, dims), spec=(("a",),) + tuple(spec))
    adjacent, first, before = advanced_layout(spec, _ndim(x) - 1)
    if adjacent and first > 0 and before:  # NumPy moved the advanced block in front of `before` dims
        k = max(_ndim(a) - (d is not None) for a, d in zip(arrays, dims[1:]))
        perm = (0,) + tuple(range(k + 1, k + 1 + before)) + tuple(range(1, k + 1)) + \
            tuple(range(k + 1 + before, _ndim(out)))
        out = transpose_p(out, perm=perm)
    return out, 0


def _scatter_add_batch(size, prim, vals, dims, spec, shape):
    """The transpose of _gather_batch: the cotangent is laid out as that rule's output was."""
    g, arrays = vals[0], vals[1:]
    adjacent, first, before = advanced_layout(spec, len(shape))
    if all(d is None for d in dims[1:]):
        adv_rank = max((_ndim(a) for a in arrays), default=0)
        g = batch_to(g, dims[0], 0 if adjacent else adv_rank, size)
        return prim(g, *arrays, spec=(("s", None, None, None),) + tuple(spec), shape=(size,) + tuple(shape)), 0
    g = batch_first(g, dims[0], size)
    if adjacent and first > 0 and before:
        k = max(_ndim(a) - (d is not None) for a, d in zip(arrays, dims[1:]))
        perm = (0,) + tuple(range(before + 1, before + 1 + k)) + tuple(range(1, before + 1)) + \
            tuple(range(before + 1 + k, _ndim(g)))
        g = transpose_p(g, perm=perm)
    return prim(g, *_batched_index(size, vals, dims), spec=(("a",),) + tuple(spec), shape=(size,) + tuple(shape)), 0


gather_p = Primitive("gather", _gather_impl, shape_rule=_gather_shape, batch_rule=_gather_batch, cuda="gather")
scatter_add_p = Primitive("scatter_add", _scatter_add_impl, shape_rule=_scatter_add_shape,
                          batch_rule=_scatter_add_batch, cuda="scatter_add", fresh=True)
deflinear(gather_p, lambda g, out, x, *arrays, spec: scatter_add_p(g, *arrays, spec=spec, shape=x.shape))
deflinear(scatter_add_p, lambda g, out, x, *arrays, spec, shape: gather_p(g, *arrays, spec=spec))


def slice_last(x, start, stop):
    return gather_p(x, spec=(("e",), ("s", start, stop, 1)))


def flip_last(x):
    return gather_p(x, spec=(("e",), ("s", None, None, -1)))
