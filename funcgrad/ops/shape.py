"""Structural primitives: reshape, broadcast, transpose, padding, concatenation, indexing."""
from __future__ import annotations

import numpy as np

from . import elementwise as E
from . import reductions as R
from .core import Primitive, deflinear, defjvp, defvjp

reshape_p = Primitive("reshape", lambda x, shape: np.reshape(x, shape))
deflinear(reshape_p, lambda g, out, x, shape: reshape_p(g, shape=x.shape))

broadcast_to_p = Primitive("broadcast_to", lambda x, shape: np.broadcast_to(x, shape))
deflinear(broadcast_to_p, lambda g, out, x, shape: R.unbroadcast(g, x.shape))

transpose_p = Primitive("transpose", lambda x, perm: np.transpose(x, perm))
deflinear(transpose_p, lambda g, out, x, perm: transpose_p(g, perm=tuple(np.argsort(perm))))


# ---- padding -------------------------------------------------------------------------------
def _pad_impl(x, widths, value):
    return np.pad(x, widths, constant_values=np.asarray(value, x.dtype))


def _unpad(g, widths):
    return gather_p(g, spec=tuple(("s", lo, lo + n, 1)
                                  for (lo, _), n in zip(widths, _unpadded_shape(g.shape, widths))))


def _unpadded_shape(shape, widths):
    return tuple(d - lo - hi for d, (lo, hi) in zip(shape, widths))


pad_p = Primitive("pad", _pad_impl)
defvjp(pad_p, lambda g, out, x, widths, value: _unpad(g, widths))
defjvp(pad_p, lambda t, out, x, widths, value: pad_p(t, widths=widths, value=0))  # tangent pads with 0


# ---- concatenation --------------------------------------------------------------------------
def _concatenate_vjp(i, g, out, *xs, axis):
    start = sum(x.shape[axis] for x in xs[:i])
    spec = tuple(("s", None, None, None) for _ in range(axis)) + (("s", start, start + xs[i].shape[axis], 1),)
    return gather_p(g, spec=spec)


def _concatenate_jvp(tangents, out, *xs, axis):
    filled = [t if t is not None else broadcast_to_p(E.zero(out.dtype), shape=x.shape)
              for t, x in zip(tangents, xs)]
    return concatenate_p(*filled, axis=axis)


concatenate_p = Primitive("concatenate", lambda *xs, axis: np.concatenate(xs, axis=axis))
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


def _gather_impl(x, *arrays, spec):
    return x[build_index(spec, arrays)]


def _scatter_add_impl(g, *arrays, spec, shape):
    out = np.zeros(shape, g.dtype)
    index = build_index(spec, arrays)
    if arrays:
        np.add.at(out, index, g)  # repeated indices accumulate
    else:
        out[index] = g  # a basic index never repeats an element
    return out


gather_p = Primitive("gather", _gather_impl)
scatter_add_p = Primitive("scatter_add", _scatter_add_impl)
deflinear(gather_p, lambda g, out, x, *arrays, spec: scatter_add_p(g, *arrays, spec=spec, shape=x.shape))
deflinear(scatter_add_p, lambda g, out, x, *arrays, spec, shape: gather_p(g, *arrays, spec=spec))


def slice_last(x, start, stop):
    return gather_p(x, spec=(("e",), ("s", start, stop, 1)))


def flip_last(x):
    return gather_p(x, spec=(("e",), ("s", None, None, -1)))
