"""x[index] for every NumPy index kind, and the functional update x.at[index].set / .add."""
from __future__ import annotations

import operator

import numpy as np

from . import devices
from .array import ArrayBase
from .errors import ConcretizationError
from .ops import shape as S
from .trace import bind


def _concrete(x):
    return np.asarray(x.concrete() if hasattr(x, "concrete") else x)


def _spec(index, ndim: int):
    """(static spec, integer index arrays) for gather_p; boolean masks become integer arrays."""
    if not isinstance(index, tuple):
        index = (index,)
    spec, arrays = [], []
    for item in index:
        if item is None:
            spec.append(("n",))
        elif item is Ellipsis:
            spec.append(("e",))
        elif isinstance(item, slice):
            spec.append(("s",) + tuple(None if v is None else operator.index(v)
                                      for v in (item.start, item.stop, item.step)))
        elif isinstance(item, bool):
            raise IndexError("a Python bool is not a valid index; use a boolean array mask")
        elif isinstance(item, (int, np.integer)):
            spec.append(("i", int(item)))
        elif isinstance(item, ArrayBase) and item.dtype.kind in "iu":
            spec.append(("a",))  # may be traced: only its shape matters here
            arrays.append(item)
        else:
            arr = _concrete(item)
            if arr.dtype == np.bool_:
                for axis_index in np.nonzero(arr):  # a data-dependent shape: needs concrete values
                    spec.append(("a",))
                    arrays.append(axis_index)
            elif arr.dtype.kind in "iu":
                spec.append(("a",))
                arrays.append(arr)
            else:
                raise IndexError(f"only integers, slices, None, Ellipsis and integer or boolean "
                                 f"arrays are valid indices; got {type(item).__name__} of dtype {arr.dtype}")
    if sum(1 for s in spec if s[0] == "e") > 1:
        raise IndexError("an index can only have a single ellipsis ('...')")
    used = sum(1 for s in spec if s[0] in "sia")
    if used > ndim:
        raise IndexError(f"too many indices for an array of rank {ndim}: {used} were given")
    return tuple(spec), arrays


def getitem(x, index):
    x, index, _ = _scalar_masks(x, index)
    spec, arrays = _spec(index, x.ndim)
    return bind(S.gather_p, x, *arrays, spec=spec)


def _is_scalar_mask(item) -> bool:
    return (isinstance(item, bool) or isinstance(item, np.bool_) or
            getattr(item, "dtype", None) == np.bool_ and getattr(item, "ndim", None) == 0)


def _scalar_masks(x, index):
    """NumPy's 0-d boolean index (x[True], x[mask0d, 1:]): a new axis of length 1, or 0 when
    false, where it stands. Done as a new axis of x indexed by [0] or []: returns (x with the new
    axes, the index, the new axes' positions)."""
    items = index if isinstance(index, tuple) else (index,)
    if not any(_is_scalar_mask(item) for item in items):
        return x, index, ()
    from . import numpy as fnp
    consumed = [0 if item is None or item is Ellipsis or _is_scalar_mask(item) else
                _concrete(item).ndim if getattr(item, "dtype", None) == np.bool_ else 1 for item in items]
    rest = x.ndim - sum(consumed)
    out, axis, inserted = [], 0, []
    for item, used in zip(items, consumed):
        if _is_scalar_mask(item):
            x = fnp.expand_dims(x, axis)
            out.append(np.arange(1 if bool(_concrete(item)) else 0))
            inserted.append(axis)
            axis += 1
        else:
            out.append(item)
            axis += rest if item is Ellipsis else used
    return x, tuple(out), tuple(inserted)


def _values_for(x, values):
    """Update values in x's dtype; host constants (scalars too) follow x to its device."""
    from . import numpy as fnp
    if not isinstance(values, ArrayBase):
        values = fnp.asarray(values, x.dtype)
        return values if x.device.platform == "cpu" else devices.device_put(values, x.device)
    return fnp.astype(values, x.dtype)


def _target_keys(shape: tuple, spec: tuple, arrays: list, selected_shape: tuple) -> np.ndarray | None:
    """The flat key of each selected element's target position (C order over the selection), or
    None when no index array is there to repeat a position or the index arrays are traced. Keys
    come from two small helper arrays that encode the coordinates along the array-indexed axes and
    along the others (zero strides elsewhere), so the cost is that of the selection, not of x."""
    if not arrays or any(isinstance(a, ArrayBase) and a.device.platform != "cpu" for a in arrays):
        return None  # slices and integers never repeat; device indices would have to be copied back
    try:
        concrete = [_concrete(a) for a in arrays]
    except ConcretizationError:  # a traced index (jit, or batched under vmap): its values are unknown
        return None
    indexed = _indexed_axes(spec, len(shape))
    codes = []
    for group in (indexed, [d for d in range(len(shape)) if d not in indexed]):
        sizes = [shape[d] for d in group]
        ids = np.arange(int(np.prod(sizes, dtype=np.int64)), dtype=np.int64)
        strides = [0] * len(shape)
        step = ids.itemsize
        for d in reversed(group):
            strides[d] = step
            step *= shape[d]
        helper = np.lib.stride_tricks.as_strided(ids, shape=shape, strides=strides, writeable=False)
        codes.append((helper[S.build_index(spec, concrete)], int(ids.size)))
    (first, _), (second, n_second) = codes
    return np.broadcast_to(first * max(n_second, 1) + second, selected_shape).ravel()


def _last_writes(shape: tuple, spec: tuple, arrays: list, selected_shape: tuple):
    """Where x.at[index] repeats a position: a boolean mask over the selected elements marking
    each position's last write (C order), or None when nothing repeats or the index arrays are
    traced."""
    key = _target_keys(shape, spec, arrays, selected_shape)
    if key is None:
        return None
    _, last_from_end = np.unique(key[::-1], return_index=True)
    if last_from_end.size == key.size:
        return None
    keep = np.zeros(key.size, bool)
    keep[key.size - 1 - last_from_end] = True
    return keep.reshape(selected_shape)


def _indexed_axes(spec: tuple, ndim: int) -> list[int]:
    """The axes of x that integer arrays and integers index."""
    axes, d = [], 0
    for item in spec:
        if item[0] == "e":
            d += ndim - sum(1 for it in spec if it[0] in "sia")
        elif item[0] in "ia":
            axes.append(d)
            d += 1
        elif item[0] == "s":
            d += 1
    return axes


_MODES = (None, "promise_in_bounds", "clip", "drop", "fill")


def _axes_taken(item) -> int:
    """How many of x's axes an index item consumes."""
    if item is None or item is Ellipsis or _is_scalar_mask(item):
        return 0
    return _concrete(item).ndim if getattr(item, "dtype", None) == np.bool_ else 1


def _bounded(x, index, mode: str):
    """JAX's out-of-bounds modes as an ordinary index: (index', the axes given a spare slot). 'clip'
    moves each integer index into its axis; 'drop' and 'fill' give every integer-indexed axis one
    spare slot past its end and send the indices outside there, so updates land in the slot cut
    off afterwards and reads find the fill. A negative index counts from the end first (once), as
    in JAX."""
    from . import numpy as fnp
    items = list(index) if isinstance(index, tuple) else [index]
    rest = x.ndim - sum(_axes_taken(item) for item in items)
    spared, axis = [], 0
    for i, item in enumerate(items):
        integer = isinstance(item, (int, np.integer)) and not isinstance(item, (bool, np.bool_))
        is_array = not integer and _axes_taken(item) == 1 and not isinstance(item, slice)
        if (integer or is_array) and axis < x.ndim:
            n = x.shape[axis]
            if mode == "clip" and n == 0:
                raise IndexError(f"cannot clip an index into the empty axis {axis}")
            if integer:
                k = int(item) + n if int(item) < 0 else int(item)
                items[i] = min(max(k, 0), n - 1) if mode == "clip" else (k if 0 <= k < n else n)
            else:
                k = fnp.asarray(item)
                k = fnp.where(k < 0, k + n, k)
                items[i] = fnp.clip(k, 0, n - 1) if mode == "clip" else fnp.where((k >= 0) & (k < n), k, n)
            if mode != "clip":
                spared.append(axis)
        axis += rest if item is Ellipsis else _axes_taken(item)
    return tuple(items), spared


def _with_modes(update):
    """An update method taking JAX's mode= (and its indices_are_sorted / unique_indices hints,
    which change nothing here): out-of-bounds indices raise (the default: NumPy's and PyTorch's
    IndexError), are clipped, or are dropped."""
    def method(self, *args, mode: str | None = None, indices_are_sorted: bool = False,
               unique_indices: bool = False):
        if mode not in _MODES:
            raise ValueError(f"at[...].{update.__name__}: mode must be one of {_MODES}, got {mode!r}")
        if mode in (None, "promise_in_bounds"):
            return update(self, *args)
        from . import numpy as fnp
        x = fnp.asarray(self.array)
        index, spared = _bounded(x, self.index, mode)
        if not spared:
            return update(_IndexUpdate(x, index), *args)
        widths = [(0, int(d in spared)) for d in range(x.ndim)]
        return update(_IndexUpdate(fnp.pad(x, widths), index), *args)[tuple(slice(0, n) for n in x.shape)]
    method.__name__, method.__doc__ = update.__name__, update.__doc__
    return method


class _IndexUpdate:
    __slots__ = ("array", "index")

    def __init__(self, array, index):
        self.array, self.index = array, index

    def get(self, *, mode: str | None = None, fill_value=None, indices_are_sorted: bool = False,
            unique_indices: bool = False):
        """x[index]; with mode 'fill' (or 'drop') an index out of bounds reads fill_value (JAX's
        defaults: NaN, the lowest signed or highest unsigned integer, True), with 'clip' the
        nearest end."""
        if mode not in _MODES:
            raise ValueError(f"at[...].get: mode must be one of {_MODES}, got {mode!r}")
        if mode in (None, "promise_in_bounds"):
            return getitem(self.array, self.index)
        from . import numpy as fnp
        from .numpy._layout import fill_for
        x = fnp.asarray(self.array)
        index, spared = _bounded(x, self.index, mode)
        if spared:
            fill = fnp.asarray(fill_for(x.dtype) if fill_value is None else fill_value, x.dtype)
            x = fnp.pad(x, [(0, int(d in spared)) for d in range(x.ndim)], constant_values=fill)
        return getitem(x, index)

    @_with_modes
    def add(self, values):
        """x with values added at index; repeated indices accumulate."""
        from . import numpy as fnp
        x, index, inserted = _scalar_masks(self.array, self.index)
        if inserted:  # on x with the 0-d masks' axes, which then go again
            return fnp.squeeze(_IndexUpdate(x, index).add(values), axis=inserted)
        spec, arrays = _spec(self.index, x.ndim)
        selected = getitem(x, self.index)
        values = fnp.broadcast_to(_values_for(x, values), selected.shape)
        return fnp.add(x, bind(S.scatter_add_p, values, *arrays, spec=spec, shape=x.shape))

    @_with_modes
    def set(self, values):  # noqa: A003
        """x with index replaced by values. Where an index repeats, the last write wins, as in
        NumPy, when the indices are host values; traced indices (jit arguments, batched under
        vmap) and indices on a GPU are not read back, and there repeated positions get the sum of their values (JAX
        leaves which write wins undefined)."""
        from . import numpy as fnp
        x, index, inserted = _scalar_masks(self.array, self.index)
        if inserted:
            return fnp.squeeze(_IndexUpdate(x, index).set(values), axis=inserted)
        spec, arrays = _spec(self.index, x.ndim)
        selected_shape = getitem(x, self.index).shape
        values = fnp.broadcast_to(_values_for(x, values), selected_shape)
        last = _last_writes(x.shape, spec, arrays, selected_shape)
        if last is None:
            writes = devices.full(selected_shape, 1, np.float32, x.device)
        else:  # only each position's last write takes part
            writes = devices.device_put(fnp.asarray(last.astype(np.float32)), x.device)
            values = fnp.where(writes > 0, values, fnp.zeros((), x.dtype, device=x.device))
        hit = bind(S.scatter_add_p, writes, *arrays, spec=spec, shape=x.shape)
        placed = bind(S.scatter_add_p, values, *arrays, spec=spec, shape=x.shape)
        return fnp.where(hit > 0, placed, x)

    @_with_modes
    def multiply(self, values):
        """x with its entries at index multiplied by values; repeated indices multiply by each."""
        return self._combine(values, lambda a, b: a * b)

    mul = multiply

    def divide(self, values, **modes):
        from . import numpy as fnp
        return self.multiply(fnp.reciprocal(fnp._float_arg(values)), **modes)

    @_with_modes
    def power(self, values):
        """x with its entries at index raised to values; where an index repeats, to each in turn
        (NumPy's np.power.at, JAX's): (x ** a) ** b = x ** (a * b), so each position's exponent is
        the product of its values, which also differentiates (JAX's scatter_pow does not)."""
        from . import numpy as fnp
        x = fnp.asarray(self.array)
        exponents = _IndexUpdate(fnp.ones_like(x), self.index).multiply(values)
        hit = _IndexUpdate(fnp.zeros(x.shape, bool, device=x.device), self.index).set(True)
        base = fnp.where(hit, x, fnp.ones((), x.dtype, device=x.device))  # no NaN slope from x ** 1 off the index
        return fnp.where(hit, fnp.power(base, exponents), x)

    @_with_modes
    def apply(self, func):
        """x with the unary ufunc func applied to its entries at index, once per occurrence of a
        position (NumPy's ufunc.at, JAX's). Traced indices (jit arguments, vmap) cannot be counted:
        there func applies once per occurrence to the original entries, combined as set combines
        repeated writes."""
        from . import numpy as fnp
        x = fnp.asarray(self.array)
        spec, arrays = _spec(self.index, x.ndim)
        selected_shape = getitem(x, self.index).shape
        key = _target_keys(x.shape, spec, arrays, selected_shape)
        rounds = 1 if key is None or key.size == 0 else int(np.unique(key, return_counts=True)[1].max())
        if rounds == 1:
            return self.set(func(getitem(x, self.index)))
        counts = _IndexUpdate(fnp.zeros(x.shape, np.int32, device=x.device), self.index).add(1)
        for done in range(rounds):
            x = fnp.where(counts > done, _IndexUpdate(x, self.index).set(func(getitem(x, self.index))), x)
        return x

    @_with_modes
    def min(self, values):  # noqa: A003  (JAX's names)
        """x with its entries at index replaced by the least of themselves and their values."""
        from . import numpy as fnp
        return self._combine(values, fnp.minimum)

    @_with_modes
    def max(self, values):  # noqa: A003
        """x with its entries at index replaced by the greatest of themselves and their values."""
        from . import numpy as fnp
        return self._combine(values, fnp.maximum)

    def _combine(self, values, op):
        """x where each position an index reaches becomes op(x, v1, v2, ...) of the values sent
        there, in any order (op is associative and commutative): the updates sorted by their flat
        target, folded within each run of equal targets by a segmented associative scan, and
        each run's result (at its end, a unique position) placed. Static shapes, so it runs
        under jit and vmap, and differentiates through the sort, the scan and op."""
        from . import lax
        from . import numpy as fnp
        x = fnp.asarray(self.array)
        targets = getitem(fnp.reshape(devices.arange(x.size, np.int64, x.device), x.shape), self.index)
        values = fnp.broadcast_to(_values_for(x, values), targets.shape)
        targets, values = fnp.ravel(targets), fnp.ravel(values)
        if targets.shape[0] == 0:
            return x
        order = fnp.argsort(targets)
        targets, values = fnp.take(targets, order), fnp.take(values, order)
        first = fnp.concatenate([fnp.ones(1, bool, device=x.device), targets[1:] != targets[:-1]])
        last = fnp.concatenate([targets[1:] != targets[:-1], fnp.ones(1, bool, device=x.device)])
        _, folded = lax.associative_scan(lambda a, b: (a[0] | b[0], fnp.where(b[0], b[1], op(a[1], b[1]))),
                                         (first, values))
        slot = fnp.where(last, targets, x.size)  # runs' ends are unique; the rest share a spare slot
        zero = fnp.zeros((), x.dtype, device=x.device)
        placed = fnp.zeros(x.size + 1, x.dtype, device=x.device).at[slot].add(fnp.where(last, folded, zero))[:-1]
        hit = fnp.zeros(x.size + 1, np.int64, device=x.device).at[slot].add(fnp.astype(last, np.int64))[:-1]
        flat = fnp.ravel(x)
        return fnp.reshape(fnp.where(hit > 0, op(flat, placed), flat), x.shape)


class _At:
    __slots__ = ("array",)

    def __init__(self, array):
        self.array = array

    def __getitem__(self, index) -> _IndexUpdate:
        return _IndexUpdate(self.array, index)


def at(x: ArrayBase) -> _At:
    return _At(x)
