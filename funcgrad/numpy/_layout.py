"""Reshaping, transposing, broadcasting, joining, splitting, padding and indexing along axes."""
from __future__ import annotations

import builtins
import operator
from typing import Sequence

import numpy as np

from .. import devices, dtypes
from ..array import Array, ArrayBase, parse_device
from ..dtypes import bool_
from ..errors import ShapeError
from ..ops import layout as Ly
from ..ops import prng
from ..ops import reductions as R
from ..ops import shape as S
from ..trace import bind
from ._creation import _axes, _common, _normalize_axis, _placed, _shape, asarray, astype
from ._elementwise import floor, multiply, round, where

__all__ = [
    "argsort", "broadcast_arrays", "broadcast_shapes", "broadcast_to", "concatenate", "expand_dims", "flip", "moveaxis",
    "pad", "ravel", "reshape", "rollaxis", "sort", "split", "squeeze", "stack", "swapaxes", "take", "take_along_axis",
    "transpose", "tri", "tril", "triu",
]


def _resolve_shape(shape, size: int, old_shape) -> tuple[int, ...]:
    shape = (shape,) if isinstance(shape, (int, np.integer)) else tuple(operator.index(d) for d in shape)
    unknown = [i for i, d in enumerate(shape) if d == -1]
    if len(unknown) > 1:
        raise ShapeError(f"reshape: only one dimension can be -1, got {shape}")
    known = int(np.prod([d for d in shape if d != -1], dtype=np.int64))
    if unknown:
        if known == 0 or size % known:
            raise ShapeError(f"cannot reshape an array of shape {old_shape} (size {size}) into {shape}")
        shape = tuple(size // known if d == -1 else d for d in shape)
    elif known != size:
        raise ShapeError(f"cannot reshape an array of shape {old_shape} (size {size}) into {shape}")
    return shape


def reshape(x, /, shape, *, copy: bool | None = None):
    """x in shape (one -1 inferred). copy=True gives a new array; arrays are immutable, so
    copy=False and None only skip it."""
    x = asarray(x)
    shape = _resolve_shape(shape, x.size, x.shape)
    out = x if shape == x.shape else bind(Ly.reshape_p, x, shape=shape)
    return asarray(out, copy=True) if copy and out is x else out


def ravel(x):
    return reshape(x, (-1,))


def transpose(x, axes=None):
    x = asarray(x)
    perm = tuple(reversed(range(x.ndim))) if axes is None else tuple(_normalize_axis(a, x.ndim) for a in axes)
    if sorted(perm) != list(range(x.ndim)):
        raise ShapeError(f"transpose: axes {axes} are not a permutation of the {x.ndim} axes")
    return x if perm == tuple(range(x.ndim)) else bind(Ly.transpose_p, x, perm=perm)


def rollaxis(x, axis: int, start: int = 0):
    """NumPy's older moveaxis: axis moves to sit before the axis now at start."""
    x = asarray(x)
    axis = _normalize_axis(axis, x.ndim)
    start = start + x.ndim if start < 0 else start
    if not 0 <= start <= x.ndim:
        raise ShapeError(f"rollaxis: start {start} is out of range for an array of rank {x.ndim}")
    order = [a for a in range(x.ndim) if a != axis]
    order.insert(start - 1 if axis < start else start, axis)
    return transpose(x, order)


def swapaxes(x, axis1: int, axis2: int):
    x = asarray(x)
    perm = list(range(x.ndim))
    a, b = _normalize_axis(axis1, x.ndim), _normalize_axis(axis2, x.ndim)
    perm[a], perm[b] = perm[b], perm[a]
    return transpose(x, perm)


def moveaxis(x, source, destination):
    x = asarray(x)
    src = [_normalize_axis(a, x.ndim) for a in np.atleast_1d(source)]
    dst = [_normalize_axis(a, x.ndim) for a in np.atleast_1d(destination)]
    if len(src) != len(dst):
        raise ShapeError("moveaxis: source and destination need the same number of axes")
    order = [a for a in range(x.ndim) if a not in src]
    for d, s in sorted(zip(dst, src)):
        order.insert(d, s)
    return transpose(x, order)


def expand_dims(x, axis):
    x = asarray(x)
    axes = (axis,) if isinstance(axis, int) else tuple(axis)
    ndim = x.ndim + len(axes)
    axes = sorted(_normalize_axis(a, ndim) for a in axes)
    shape = list(x.shape)
    for a in axes:
        shape.insert(a, 1)
    return bind(Ly.reshape_p, x, shape=tuple(shape))


def squeeze(x, axis=None):
    x = asarray(x)
    if axis is None:
        axes = tuple(i for i, d in enumerate(x.shape) if d == 1)
    else:
        axes = _axes(axis, x.ndim)
        for a in axes:
            if x.shape[a] != 1:
                raise ShapeError(f"cannot squeeze axis {a} of shape {x.shape}: its size is not 1")
    return reshape(x, tuple(d for i, d in enumerate(x.shape) if i not in axes))


def broadcast_to(x, shape):
    x = asarray(x)
    shape = (shape,) if isinstance(shape, int) else tuple(shape)
    try:
        if np.broadcast_shapes(x.shape, shape) != shape:
            raise ValueError
    except ValueError:
        raise ShapeError(f"cannot broadcast an array of shape {x.shape} to shape {shape}") from None
    return x if x.shape == shape else bind(Ly.broadcast_to_p, x, shape=shape)


def broadcast_shapes(*shapes) -> tuple:
    """The shape that arrays of these shapes (ints or tuples) broadcast to, as np.broadcast_shapes;
    a ShapeError naming them where they do not broadcast."""
    shapes = tuple((s,) if isinstance(s, int) else tuple(s) for s in shapes)
    try:
        return np.broadcast_shapes(*shapes)
    except ValueError:
        raise ShapeError(f"shapes {', '.join(map(str, shapes))} do not broadcast together") from None


def broadcast_arrays(*xs):
    shape = broadcast_shapes(*(_shape(asarray(x)) for x in xs))
    return [broadcast_to(x, shape) for x in xs]




def concatenate(arrays: Sequence, axis: int | None = 0):
    if not len(arrays):
        raise ValueError("concatenate needs at least one array")
    xs = _common(arrays)
    if axis is None:
        xs, axis = [ravel(x) for x in xs], 0
    ndim = xs[0].ndim
    if ndim == 0:
        raise ShapeError("zero-dimensional arrays cannot be concatenated")
    axis = _normalize_axis(axis, ndim)
    for x in xs[1:]:
        if x.ndim != ndim or builtins.any(a != b for i, (a, b) in enumerate(zip(x.shape, xs[0].shape)) if i != axis):
            raise ShapeError(f"concatenate along axis {axis}: shapes {[tuple(x.shape) for x in xs]} differ "
                             f"off that axis")
    return xs[0] if len(xs) == 1 else bind(S.concatenate_p, *xs, axis=axis)


def stack(arrays: Sequence, axis: int = 0):
    xs = _common(arrays) if len(arrays) else []
    if not xs:
        raise ValueError("stack needs at least one array")
    shapes = {tuple(x.shape) for x in xs}
    if len(shapes) > 1:
        raise ShapeError(f"stack needs arrays of one shape; got {sorted(shapes)}")
    axis = _normalize_axis(axis, xs[0].ndim + 1)
    return concatenate([expand_dims(x, axis) for x in xs], axis=axis)


def split(x, indices_or_sections, axis: int = 0) -> list:
    x = asarray(x)
    axis = _normalize_axis(axis, x.ndim)
    n = x.shape[axis]
    if isinstance(indices_or_sections, (int, np.integer)):
        sections = int(indices_or_sections)
        if sections <= 0 or n % sections:
            raise ShapeError(f"array split does not result in an equal division: axis {axis} has "
                             f"size {n}, asked for {sections} sections")
        bounds = [i * (n // sections) for i in range(sections + 1)]
    else:
        bounds = [0] + [builtins.min(builtins.max(int(i) if i >= 0 else n + int(i), 0), n)
                        for i in indices_or_sections] + [n]
    lead = (("s", None, None, None),) * axis
    return [bind(S.gather_p, x, spec=lead + (("s", lo, builtins.max(lo, hi), 1),))
            for lo, hi in zip(bounds[:-1], bounds[1:])]


def flip(x, axis=None):
    x = asarray(x)
    axes = _axes(axis, x.ndim)
    spec = tuple(("s", None, None, -1) if i in axes else ("s", None, None, None) for i in range(x.ndim))
    return bind(S.gather_p, x, spec=spec)


_INDEX_MODES = ("edge", "reflect", "symmetric", "wrap")  # pads that are elements of x
_STAT_MODES = ("maximum", "minimum", "mean", "median")  # pads that are a statistic of each end
_PAD_MODES = ("constant", "empty") + _INDEX_MODES + _STAT_MODES + ("linear_ramp",)


def pad(x, pad_width, mode: str = "constant", constant_values=0, *, stat_length=None, end_values=0,
        reflect_type: str = "even"):
    """NumPy's pad in every mode, all differentiable: constant (and empty, whose values NumPy leaves
    undefined: zeros); edge, reflect, symmetric and wrap (elements of x; reflect_type 'odd' reflects
    about the edge values instead); maximum, minimum, mean and median of the stat_length elements at
    each end (all by default; integers rounded half to even, as NumPy); linear_ramp from the edge to
    end_values. Axes are padded in turn, so later axes' statistics see earlier axes' pads (NumPy's
    order)."""
    x = asarray(x)
    widths = _per_axis(pad_width, x.ndim, "pad widths")
    if reflect_type not in ("even", "odd"):
        raise ValueError(f"pad: reflect_type must be 'even' or 'odd', got {reflect_type!r}")
    if mode in ("constant", "empty"):
        return bind(S.pad_p, x, widths=widths, value=constant_values if mode == "constant" else 0)
    if mode not in _PAD_MODES:
        raise ValueError(f"pad mode {mode!r} is not supported; use one of {_PAD_MODES}")
    lengths = None if stat_length is None else _per_axis(stat_length, x.ndim, "stat_length")
    ends = np.broadcast_to(np.asarray(end_values, np.float64), (x.ndim, 2))
    for axis, (lo, hi) in enumerate(widths):
        if not (lo or hi):
            continue
        if x.shape[axis] == 0:
            raise ValueError(f"pad: the empty axis {axis} can only be extended in mode 'constant', not {mode!r}")
        if reflect_type == "odd" and mode in ("reflect", "symmetric"):
            x = _odd_reflection(x, axis, lo, hi, mode)
            continue
        if mode in _INDEX_MODES:
            x = take(x, np.pad(np.arange(x.shape[axis]), (lo, hi), mode=mode), axis=axis)
            continue
        sides = []
        for width, before in ((lo, True), (hi, False)):
            if mode == "linear_ramp":
                sides.append(_ramp(x, axis, width, ends[axis][0 if before else 1], before))
            else:
                stat = _end_statistic(x, axis, x.shape[axis] if lengths is None else lengths[axis][1 - before],
                                      before, mode)
                sides.append(broadcast_to(stat, x.shape[:axis] + (width,) + x.shape[axis + 1:]))
        x = concatenate([sides[0], x, sides[1]], axis=axis)
    return x


def _odd_reflection(x, axis: int, lo: int, hi: int, mode: str):
    """x padded by its odd reflection (NumPy's reflect_type='odd'): 2 edge - x about each edge value,
    so the axis continues x's trend, each further period shifted by 2 (last - first). Position i is
    sign * x[j] + c_last * x[-1] + c_first * x[0], with integer coefficients that depend on i alone."""
    n = x.shape[axis]
    if n == 1:
        return take(x, np.zeros(lo + 1 + hi, np.int64), axis=axis)
    period = 2 * (n - 1) if mode == "reflect" else 2 * n
    turns, at = np.divmod(np.arange(-lo, n + hi), period)
    back = at >= n  # on the reflected half of a period
    source = np.where(back, period - at - (mode == "symmetric"), at)
    shape = (1,) * axis + (-1,) + (1,) * (x.ndim - axis - 1)
    coefficient = lambda c: _placed(Array(np.reshape(c, shape).astype(x.dtype)), x.device)  # noqa: E731
    return (multiply(take(x, source, axis=axis), coefficient(np.where(back, -1, 1)))
            + multiply(_span(x, axis, n - 1, n), coefficient(2 * back + 2 * turns))
            - multiply(_span(x, axis, 0, 1), coefficient(2 * turns)))


def _per_axis(values, ndim: int, name: str) -> tuple:
    """(before, after) non-negative ints for each of ndim axes, broadcast as NumPy's pad does."""
    pairs = np.broadcast_to(np.asarray(values, dtype=np.int64), (ndim, 2))
    if (pairs < 0).any():
        raise ValueError(f"{name} must be non-negative, got {values}")
    return tuple(tuple(int(v) for v in pair) for pair in pairs)


def _span(x, axis: int, lo: int, hi: int):
    """x[lo:hi] along axis."""
    return bind(S.gather_p, x, spec=(("s", None, None, None),) * axis + (("s", lo, hi, 1),))


def _end_statistic(x, axis: int, length: int, before: bool, mode: str):
    """The statistic of the `length` elements at one end of axis, kept as an axis of size 1."""
    if length == 0:
        raise ValueError(f"pad: stat_length 0 on axis {axis} leaves no values for mode {mode!r}")
    n = x.shape[axis]
    length = builtins.min(length, n)
    end = _span(x, axis, 0, length) if before else _span(x, axis, n - length, n)
    if mode in ("maximum", "minimum"):
        return bind(R.max_p if mode == "maximum" else R.min_p, end, axes=(axis,), keepdims=True)
    exact = end.dtype.kind in "fc"  # integers: a float64 statistic, rounded half to even
    values = end if exact else astype(end, dtypes.float64)
    if mode == "mean":
        stat = bind(Ly.sum_p, values, axes=(axis,), keepdims=True) / length
    else:
        ordered = sort(values, axis)
        middle = (length - 1) // 2
        stat = (_span(ordered, axis, middle, middle + 1) + _span(ordered, axis, length // 2, length // 2 + 1)) / 2
    return stat if exact else astype(round(stat), end.dtype)


def _ramp(x, axis: int, width: int, end_value: float, before: bool):
    """width values from end_value towards x's edge element (which it stops short of), as NumPy's
    linspace(end_value, edge, width, endpoint=False), reversed after x; integers floored."""
    n = x.shape[axis]
    edge = _span(x, axis, 0, 1) if before else _span(x, axis, n - 1, n)
    exact = edge.dtype.kind in "fc"
    edge = edge if exact else astype(edge, dtypes.float64)
    steps = np.arange(width, dtype=np.float64).reshape((1,) * axis + (width,) + (1,) * (x.ndim - axis - 1))
    step = (edge - end_value) / builtins.max(width, 1)
    ramp = _placed(Array(steps.astype(edge.dtype)), x.device) * step + end_value
    ramp = ramp if before else flip(ramp, axis)
    return ramp if exact else astype(floor(ramp), x.dtype)


_TAKE_MODES = ("raise", "wrap", "clip", "fill")


def take(a, indices, axis: int | None = None, mode: str | None = None, fill_value=None):
    """NumPy's take: an out-of-range index raises (mode 'raise', the default), wraps around ('wrap')
    or goes to the nearest end ('clip'); JAX's 'fill' gives fill_value there (NaN for floats, the
    dtype's lowest integer, True: JAX's defaults) after a negative index counts from the end."""
    a = asarray(a)
    if axis is None:
        a, axis = ravel(a), 0
    axis = _normalize_axis(axis, a.ndim)
    idx = _index_array(indices, a.device)
    mode = mode or "raise"
    if mode not in _TAKE_MODES:
        raise ValueError(f"take: mode must be one of {_TAKE_MODES}, got {mode!r}")
    if mode == "fill":
        n = a.shape[axis]
        fill = asarray(fill_for(a.dtype) if fill_value is None else fill_value, a.dtype)
        if n == 0:
            return broadcast_to(fill, a.shape[:axis] + idx.shape + a.shape[axis + 1:])
        idx = where(idx < 0, idx + n, idx)
        valid = (idx >= 0) & (idx < n)
        taken = take(a, where(valid, idx, 0), axis)
        return where(reshape(valid, (1,) * axis + valid.shape + (1,) * (a.ndim - axis - 1)), taken, fill)
    if mode != "raise":
        if a.shape[axis] == 0:
            raise IndexError(f"take: cannot {mode} indices into an empty axis {axis}")
        n = a.shape[axis]
        idx = idx % n if mode == "wrap" else where(idx < 0, 0, where(idx > n - 1, n - 1, idx))
    return bind(S.gather_p, a, idx, spec=(("s", None, None, None),) * axis + (("a",),))


def fill_for(dtype):
    """JAX's value for reads out of bounds: NaN for inexact dtypes, the lowest signed or highest
    unsigned integer, True."""
    dtype = np.dtype(dtype)
    if dtypes.is_inexact(dtype):
        return np.nan
    if dtype == np.bool_:
        return True
    info = np.iinfo(dtype)
    return info.min if dtype.kind == "i" else info.max


def take_along_axis(a, indices, axis: int | None = -1):
    """a's entries at indices along axis (axis None: of a flattened, with 1-D indices)."""
    a = asarray(a)
    if axis is None:
        a, axis = ravel(a), 0
    idx = _index_array(indices, a.device)
    axis = _normalize_axis(axis, a.ndim)
    if idx.ndim != a.ndim:
        raise ShapeError(f"take_along_axis: indices of rank {idx.ndim} for an array of rank {a.ndim}")
    arrays = []
    for d in range(a.ndim):
        if d == axis:
            arrays.append(idx)
        else:
            shape = [1] * a.ndim
            shape[d] = a.shape[d]
            arrays.append(reshape(devices.arange(a.shape[d], dtypes.int64, a.device), shape))
    return bind(S.gather_p, a, *arrays, spec=(("a",),) * a.ndim)


def _index_array(indices, device=None):
    """Integer indices as an Array (or a tracer, under jit); lists and NumPy arrays convert, and
    go to `device` (the indexed array's) when given: index constants follow the data."""
    idx = indices if isinstance(indices, ArrayBase) else _placed(asarray(np.asarray(indices)), device)
    if idx.dtype.kind not in "iu":
        raise IndexError(f"indices must be integers, got dtype {idx.dtype}")
    return idx


def _sort_axis(x, axis) -> tuple:
    x = asarray(x)
    return (reshape(x, (-1,)), 0) if axis is None else (x, _normalize_axis(axis, x.ndim))


_SORT_KINDS = (None, "quicksort", "mergesort", "heapsort", "stable")


def argsort(x, axis: int | None = -1, kind: str | None = None, *, descending: bool = False, stable: bool = True):
    """Indices that sort x along axis (None: of x flattened, as NumPy), always stable (equal elements
    keep their order, also when descending): every NumPy kind gives the stable order, which each
    of them may give."""
    if kind not in _SORT_KINDS:
        raise ValueError(f"sort kind must be one of {_SORT_KINDS[1:]}, got {kind!r}")
    x, axis = _sort_axis(x, axis)
    if not descending:
        return bind(prng.argsort_p, x, axis=axis)
    # the stable ascending order of x reversed, reversed again: ties stay in their first order
    reversed_order = flip(bind(prng.argsort_p, flip(x, axis), axis=axis), axis)
    return (x.shape[axis] - 1) - reversed_order


def sort(x, axis: int | None = -1, kind: str | None = None, *, descending: bool = False, stable: bool = True):
    """Sorted along axis (None: x flattened); stable; the gradient flows back through the permutation."""
    x, axis = _sort_axis(x, axis)
    return take_along_axis(x, argsort(x, axis, kind, descending=descending), axis)


def tri(n: int, m: int | None = None, k: int = 0, dtype=None, device=None) -> Array:
    """Ones at and below diagonal k (jnp.tri: the default float dtype, as NumPy's float64), built
    where it is used: on a GPU, from two index vectors made there."""
    m = n if m is None else m
    place = parse_device(device or "cpu")
    rows = reshape(devices.arange(n, dtypes.int64, place), (n, 1))
    cols = reshape(devices.arange(m, dtypes.int64, place), (1, m))
    return astype(rows + k >= cols, dtypes.default_float if dtype is None else dtype)


def _matrix_sides(x) -> tuple[int, int]:
    """The last two sides; a 1-D x is a row that tril and triu repeat into a square (NumPy's)."""
    if x.ndim == 0:
        raise ShapeError("tril and triu need an array of at least one axis")
    return (x.shape[-1], x.shape[-1]) if x.ndim == 1 else x.shape[-2:]


def tril(x, k: int = 0):
    x = asarray(x)
    mask = tri(*_matrix_sides(x), k, dtype=bool_, device=x.device)
    return where(mask, x, np.zeros((), x.dtype))


def triu(x, k: int = 0):
    x = asarray(x)
    mask = ~tri(*_matrix_sides(x), k - 1, dtype=bool_, device=x.device)
    return where(mask, x, np.zeros((), x.dtype))
