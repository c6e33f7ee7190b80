"""funcgrad.lax: jax.lax's control flow and the lax functions JAX code reaches for.

The loops and scan run in Python and unroll under jit (see funcgrad.control); everything else is
funcgrad.numpy under its lax name or composed from it, with lax's semantics where they differ
from NumPy's (div truncates and rem takes the dividend's sign, round goes half away from zero,
dynamic_slice clamps its start so the slice fits, pad takes interior and negative padding).
"""
from __future__ import annotations

import builtins
import enum
import math

import numpy as np

from .. import numpy as fnp
from ..control import cond, fori_loop, map, scan, switch, while_loop  # noqa: A004
from .. import dtypes
from ..array import ArrayBase
from ..errors import ShapeError
from ..numpy import stop_gradient
from ..ops import elementwise as E
from ..ops import prng
from ..trace import bind
from ..scipy import special as _special
from ..tree import tree_flatten
from ._arrays import (approx_max_k, approx_min_k, broadcast_shapes, broadcast_to_rank,  # noqa: F401
                      broadcasted_iota, empty, index_take, optimization_barrier, split, stack, tile, top_k, unstack)
from ._fft import FftType, fft  # noqa: F401
from ._gather import (GatherDimensionNumbers, GatherScatterMode, ScatterDimensionNumbers, gather, scatter,  # noqa: F401
                      scatter_add, scatter_apply, scatter_max, scatter_min, scatter_mul, scatter_sub)
from ._bits import bitcast_convert_type, clz, mulhi, population_count, reduce_precision, reduce_xor  # noqa: F401
from ._padding import pad
from ._solvers import custom_linear_solve, custom_root  # noqa: F401
from ._windows import (ConvDimensionNumbers, conv, conv_dimension_numbers, conv_general_dilated,  # noqa: F401
                       conv_general_dilated_patches,
                       conv_general_permutations, conv_transpose, conv_with_general_padding, padtype_to_pads,
                       reduce, reduce_window)
from . import _arrays, _bits, _gather, _windows, linalg  # noqa: F401  (jax.lax.linalg)

__all__ = ["cond", "switch", "fori_loop", "while_loop", "scan", "map", "stop_gradient", "select", "select_n", "rsqrt",
           "square", "integer_pow", "exp", "exp2", "expm1", "log", "log1p", "tanh", "logistic", "erf", "max", "min",
           "abs", "sign", "dot", "dot_general", "batch_matmul", "concatenate", "broadcast", "broadcast_in_dim",
           "expand_dims", "clamp", "top_k", "complex", "real", "imag", "conj", "add", "sub", "mul", "div", "rem",
           "neg", "pow", "sqrt", "cbrt", "sin", "cos", "tan", "asin", "acos", "atan", "atan2", "sinh", "cosh",
           "asinh", "acosh", "atanh", "floor", "ceil", "round", "nextafter", "is_finite", "eq", "ne", "lt", "le", "gt",
           "ge", "bitwise_and", "bitwise_or", "bitwise_xor", "bitwise_not", "shift_left", "shift_right_logical",
           "shift_right_arithmetic", "convert_element_type", "iota", "full", "full_like", "reshape", "transpose",
           "squeeze", "rev", "collapse", "slice", "slice_in_dim", "index_in_dim", "dynamic_slice",
           "dynamic_slice_in_dim", "dynamic_index_in_dim", "dynamic_update_slice", "dynamic_update_slice_in_dim",
           "dynamic_update_index_in_dim", "pad", "reduce_sum", "reduce_prod", "reduce_max", "reduce_min", "reduce_and",
           "reduce_or", "argmax", "argmin", "cumsum", "cumprod", "cummax", "cummin", "cumlogsumexp", "sort",
           "sort_key_val", "associative_scan", "lgamma", "digamma", "polygamma", "erfc", "erf_inv", "igamma",
           "igammac", "igamma_grad_a", "random_gamma_grad", "betainc", *_windows.__all__, "psum", "pmean", "pmax",
           "pmin", "all_gather", "psum_scatter", "ppermute", "all_to_all", "axis_index", "axis_size", "pvary",
           "pshuffle", "pswapaxes", *_arrays.__all__, *_bits.__all__, "reciprocal", "zeta", "bessel_i0e", "bessel_i1e",
           "custom_linear_solve", "custom_root", "conv_general_dilated_patches", "FftType", "fft",
           *_gather.__all__]


erf, erfc, erf_inv = _special.erf, _special.erfc, _special.erfinv
lgamma, digamma, polygamma = _special.gammaln, _special.digamma, _special.polygamma
igamma, igammac, igamma_grad_a, random_gamma_grad = (_special.gammainc, _special.gammaincc, _special.igamma_grad_a,
                                                     _special.random_gamma_grad)
betainc, zeta, bessel_i0e, bessel_i1e = _special.betainc, _special.zeta, _special.i0e, _special.i1e


def complex(x, y):  # noqa: A001  (lax's name; torch.complex)
    """x + i y from two real arrays (broadcast), differentiable in both: complex64 from float32
    parts, complex128 from float64."""
    re, im = fnp._float_pair(x, y)
    if not (dtypes.is_float(re.dtype) and dtypes.is_float(im.dtype)):
        raise TypeError(f"complex takes real parts, not {re.dtype} and {im.dtype}")
    return bind(E.complex_p, re, im)


real, imag, conj = fnp.real, fnp.imag, fnp.conj


def select(pred, on_true, on_false):
    return fnp.where(pred, on_true, on_false)


def rsqrt(x):
    return fnp.reciprocal(fnp.sqrt(x))


def integer_pow(x, y: int):
    return fnp.power(x, int(y))


def logistic(x):
    """1 / (1 + exp(-x)), the sigmoid primitive (lax sits below nn, which names it sigmoid)."""
    return bind(E.sigmoid_p, fnp._float_arg(x))


def clamp(min, x, max):  # noqa: A002  (lax's argument order)
    return fnp.clip(x, min, max)


def concatenate(operands, dimension: int):
    return fnp.concatenate(operands, axis=dimension)


def broadcast_in_dim(operand, shape, broadcast_dimensions):
    """operand's axes placed at broadcast_dimensions of the new shape, then broadcast."""
    operand = fnp.asarray(operand)
    expanded = [1] * len(shape)
    for axis, size in zip(broadcast_dimensions, operand.shape):
        expanded[axis] = size
    return fnp.broadcast_to(fnp.reshape(operand, tuple(expanded)), tuple(shape))


square, exp, log, tanh, abs, sign = fnp.square, fnp.exp, fnp.log, fnp.tanh, fnp.abs, fnp.sign  # noqa: A001
max, min, dot, expand_dims = fnp.maximum, fnp.minimum, fnp.dot, fnp.expand_dims  # noqa: A001
batch_matmul, reciprocal = fnp.matmul, fnp.reciprocal


# ---- elementwise, under lax's names ----------------------------------------------------------------
add, sub, mul, neg, pow, sqrt, cbrt = (fnp.add, fnp.subtract, fnp.multiply, fnp.negative, fnp.power,  # noqa: A001
                                       fnp.sqrt, fnp.cbrt)
sin, cos, tan, asin, acos, atan, atan2 = fnp.sin, fnp.cos, fnp.tan, fnp.arcsin, fnp.arccos, fnp.arctan, fnp.arctan2
sinh, cosh, asinh, acosh, atanh = fnp.sinh, fnp.cosh, fnp.arcsinh, fnp.arccosh, fnp.arctanh
exp2, expm1, log1p, floor, ceil, nextafter = fnp.exp2, fnp.expm1, fnp.log1p, fnp.floor, fnp.ceil, fnp.nextafter
is_finite, eq, ne, lt, le, gt, ge = (fnp.isfinite, fnp.equal, fnp.not_equal, fnp.less, fnp.less_equal, fnp.greater,
                                     fnp.greater_equal)
bitwise_and, bitwise_or, bitwise_xor, bitwise_not = fnp.bitwise_and, fnp.bitwise_or, fnp.bitwise_xor, fnp.invert
shift_left, shift_right_arithmetic = fnp.left_shift, fnp.right_shift


def shift_right_logical(x, y):
    """x >> y filling with zeros (a signed x is shifted as its unsigned bits)."""
    x = fnp.asarray(x)
    if x.dtype.kind != "i":
        return fnp.right_shift(x, y)
    unsigned = np.dtype(f"uint{x.dtype.itemsize * 8}")
    return bind(prng.bitcast_p, fnp.right_shift(bind(prng.bitcast_p, x, dtype=unsigned), fnp.astype(y, unsigned)),
                dtype=x.dtype)


def div(x, y):
    """x / y; for integers rounded toward zero (C's division, not NumPy's floor)."""
    x, y = fnp._pair(x, y)
    if isinstance(x, ArrayBase) != isinstance(y, ArrayBase):  # a weak scalar takes the array's dtype
        x, y = (x, fnp.asarray(y, x.dtype)) if isinstance(x, ArrayBase) else (fnp.asarray(x, y.dtype), y)
    x, y = fnp.asarray(x), fnp.asarray(y)
    if fnp.result_type(x, y).kind not in "iu":
        return fnp.divide(x, y)
    q = fnp.floor_divide(x, y)
    return fnp.where((fnp.remainder(x, y) != 0) & ((x < 0) != (y < 0)), q + 1, q)


def rem(x, y):
    """The remainder of div: the dividend's sign (C's fmod, not NumPy's remainder)."""
    return fnp.fmod(x, y)


class RoundingMethod(enum.IntEnum):
    """lax.round's rounding_method (JAX's names and values)."""
    AWAY_FROM_ZERO = 0
    TO_NEAREST_EVEN = 1


def round(x, rounding_method: int = RoundingMethod.AWAY_FROM_ZERO):  # noqa: A001
    """Round half away from zero (lax's default, rounding_method 0), or half to even (1)."""
    x = fnp._float_arg(x)
    if int(rounding_method) == 1:
        return fnp.round(x)
    if int(rounding_method) != 0:
        raise ValueError(f"round: rounding_method is 0 (away from zero) or 1 (to nearest even), got {rounding_method}")
    whole = fnp.trunc(x)
    return fnp.where(fnp.abs(x - whole) >= 0.5, whole + fnp.sign(x), whole)


def select_n(which, *cases):
    """cases[which] elementwise: which is boolean (two cases) or an integer index."""
    if not cases:
        raise ValueError("select_n needs at least one case")
    which = fnp.asarray(which)
    if which.dtype == dtypes.bool_:
        if len(cases) != 2:
            raise ValueError(f"select_n with a boolean selector takes 2 cases, got {len(cases)}")
        return fnp.where(which, cases[1], cases[0])
    out = cases[0]
    for i, case in enumerate(cases[1:], 1):
        out = fnp.where(which == i, case, out)
    return out


def convert_element_type(operand, new_dtype):
    """astype with XLA's float-to-integer rule: truncation toward zero that saturates at the
    integer type's range, NaN to 0 (NumPy and PyTorch leave out-of-range values undefined; in
    practice they wrap). Other conversions are astype's."""
    x, target = fnp.asarray(operand), np.dtype(dtypes.canonicalize(new_dtype))
    if not (dtypes.is_float(x.dtype) and target.kind in "iu"):
        return fnp.astype(x, target)
    info = np.iinfo(target)
    low, high = float(info.min), float(info.max) + 1.0  # 0 or powers of two: exact in every float dtype
    out = fnp.astype(fnp.where((x >= low) & (x < high), x, 0), target)  # NaN fails both tests: 0
    out = fnp.where(x >= high, np.asarray(info.max, target), out)
    return fnp.where(x < low, np.asarray(info.min, target), out)


# ---- shapes ------------------------------------------------------------------------------------------
def iota(dtype, size: int, dimension: int = 0, shape=None):
    """0, 1, ..., size - 1 (or, with shape, counting along dimension)."""
    if shape is None:
        return fnp.arange(int(size), dtype=dtype)
    shape = tuple(shape)
    counts = fnp.arange(shape[dimension], dtype=dtype)
    return broadcast_in_dim(counts, shape, (dimension,))


def full(shape, fill_value, dtype=None):
    return fnp.full(tuple(shape), fill_value, dtype)


def full_like(x, fill_value, dtype=None, shape=None):
    x = fnp.asarray(x)
    return fnp.full(x.shape if shape is None else tuple(shape), fill_value, x.dtype if dtype is None else dtype,
                    device=x.device)


def broadcast(operand, sizes):
    """operand with new leading axes of the given sizes."""
    operand = fnp.asarray(operand)
    return fnp.broadcast_to(operand, tuple(sizes) + tuple(operand.shape))


def reshape(operand, new_sizes, dimensions=None):
    """operand (first transposed by dimensions, where given) in the new shape."""
    operand = fnp.asarray(operand)
    if dimensions is not None:
        operand = fnp.transpose(operand, tuple(dimensions))
    return fnp.reshape(operand, tuple(new_sizes))


def _with_axes(fn, name: str):
    """fn(operand, axes) under lax's name, the axes given as any sequence (lax takes tuples)."""
    def lax_fn(operand, axes):
        return fn(operand, tuple(axes))
    lax_fn.__name__ = lax_fn.__qualname__ = name
    return lax_fn


transpose, squeeze, rev = (_with_axes(fnp.transpose, "transpose"), _with_axes(fnp.squeeze, "squeeze"),
                           _with_axes(fnp.flip, "rev"))


def collapse(operand, start_dimension: int, stop_dimension: int | None = None):
    """Axes start..stop-1 merged into one."""
    operand = fnp.asarray(operand)
    stop = operand.ndim if stop_dimension is None else stop_dimension
    merged = math.prod(operand.shape[start_dimension:stop])
    return fnp.reshape(operand, operand.shape[:start_dimension] + (merged,) + operand.shape[stop:])


def slice(operand, start_indices, limit_indices, strides=None):  # noqa: A001
    """operand[start:limit:stride] on every axis (static bounds)."""
    operand = fnp.asarray(operand)
    if not len(start_indices) == len(limit_indices) == operand.ndim:
        raise ValueError(f"slice: {operand.ndim} axes need {operand.ndim} start and limit indices, got "
                         f"{len(start_indices)} and {len(limit_indices)}")
    strides = (1,) * operand.ndim if strides is None else tuple(strides)
    return operand[tuple(builtins.slice(a, b, c) for a, b, c in zip(start_indices, limit_indices, strides))]


def slice_in_dim(operand, start_index, limit_index, stride: int = 1, axis: int = 0):
    operand = fnp.asarray(operand)
    axis = fnp._normalize_axis(axis, operand.ndim)
    n = operand.shape[axis]
    start = 0 if start_index is None else start_index + n if start_index < 0 else start_index
    limit = n if limit_index is None else limit_index + n if limit_index < 0 else limit_index
    index = [builtins.slice(None)] * operand.ndim
    index[axis] = builtins.slice(start, limit, stride)
    return operand[tuple(index)]


def index_in_dim(operand, index: int, axis: int = 0, keepdims: bool = True):
    out = slice_in_dim(operand, index, index + 1 if index != -1 else None, 1, axis)
    return out if keepdims else fnp.squeeze(out, axis)


def _clamped_starts(operand, start_indices, sizes):
    """Each start (static or traced; negative counts from the end, as JAX's) clamped to
    [0, dim - size], as XLA does, so the window fits."""
    if len(start_indices) != operand.ndim or len(sizes) != operand.ndim:
        raise ValueError(f"dynamic slicing of rank {operand.ndim}: got {len(start_indices)} start indices and "
                         f"{len(sizes)} sizes")
    for size, dim in zip(sizes, operand.shape):
        if not 0 <= size <= dim:
            raise ValueError(f"dynamic slicing: a window of size {size} does not fit an axis of {dim}")
    # a negative start counts from the end first; a start known here stays a host number, which
    # follows the operand to its device, a traced one is clamped where it lives
    return [fnp.clip(fnp.where(s < 0, s + dim, s), 0, dim - size) if isinstance(s, ArrayBase) else
            builtins.min(builtins.max(int(s) + dim if int(s) < 0 else int(s), 0), dim - size)
            for s, size, dim in zip(start_indices, sizes, operand.shape)]


def _window(operand, starts, sizes):
    """The index arrays of the window at starts (an open grid, one array per axis): NumPy arrays
    for starts known here (host constants follow the operand), Arrays for traced ones."""
    grid = []
    for axis, (start, size) in enumerate(zip(starts, sizes)):
        shape = [1] * operand.ndim
        shape[axis] = size
        positions = start + np.arange(size)
        grid.append(fnp.reshape(positions, shape) if isinstance(positions, ArrayBase) else positions.reshape(shape))
    return tuple(grid)


def dynamic_slice(operand, start_indices, slice_sizes):
    """operand's window of slice_sizes at start_indices (which may be traced), each start clamped
    so the window fits (XLA's rule)."""
    operand = fnp.asarray(operand)
    sizes = tuple(int(s) for s in slice_sizes)
    return operand[_window(operand, _clamped_starts(operand, start_indices, sizes), sizes)]


def dynamic_update_slice(operand, update, start_indices):
    """operand with update written at start_indices (clamped so update fits)."""
    operand, update = (fnp.asarray(v) for v in fnp.follow(operand, update))
    if update.ndim != operand.ndim:
        raise ValueError(f"dynamic_update_slice: an update of rank {update.ndim} for an operand of rank {operand.ndim}")
    sizes = tuple(update.shape)
    index = _window(operand, _clamped_starts(operand, start_indices, sizes), sizes)
    return operand.at[index].set(fnp.astype(update, operand.dtype))


def _starts_on(operand, axis: int, start_index):
    """(operand, axis, start indices): start_index on axis, 0 on the others."""
    operand = fnp.asarray(operand)
    axis = fnp._normalize_axis(axis, operand.ndim)
    starts = [0] * operand.ndim
    starts[axis] = start_index
    return operand, axis, starts


def dynamic_slice_in_dim(operand, start_index, slice_size: int, axis: int = 0):
    operand, axis, starts = _starts_on(operand, axis, start_index)
    sizes = list(operand.shape)
    sizes[axis] = slice_size
    return dynamic_slice(operand, starts, sizes)


def dynamic_index_in_dim(operand, index, axis: int = 0, keepdims: bool = True):
    out = dynamic_slice_in_dim(operand, index, 1, axis)
    return out if keepdims else fnp.squeeze(out, axis)


def dynamic_update_slice_in_dim(operand, update, start_index, axis: int):
    operand, axis, starts = _starts_on(operand, axis, start_index)
    return dynamic_update_slice(operand, update, starts)


def dynamic_update_index_in_dim(operand, update, index, axis: int):
    update = fnp.asarray(update)
    operand = fnp.asarray(operand)
    if update.ndim == operand.ndim - 1:
        update = fnp.expand_dims(update, axis)
    return dynamic_update_slice_in_dim(operand, update, index, axis)


# ---- reductions and scans -----------------------------------------------------------------------------
reduce_sum, reduce_prod, reduce_max, reduce_min, reduce_and, reduce_or = (
    _with_axes(fn, name) for fn, name in ((fnp.sum, "reduce_sum"), (fnp.prod, "reduce_prod"), (fnp.max, "reduce_max"),
                                          (fnp.min, "reduce_min"), (fnp.all, "reduce_and"), (fnp.any, "reduce_or")))


def argmax(operand, axis: int, index_dtype=dtypes.int32):
    return fnp.astype(fnp.argmax(operand, axis), index_dtype)


def argmin(operand, axis: int, index_dtype=dtypes.int32):
    return fnp.astype(fnp.argmin(operand, axis), index_dtype)


def _cumulative(combine, operand, axis: int, reverse: bool):
    operand = fnp.asarray(operand)
    axis = fnp._normalize_axis(axis, operand.ndim)
    if reverse:
        return fnp.flip(associative_scan(combine, fnp.flip(operand, axis), axis=axis), axis)
    return associative_scan(combine, operand, axis=axis)


def cumsum(operand, axis: int = 0, reverse: bool = False):
    operand = fnp.asarray(operand)
    return fnp.flip(fnp.cumsum(fnp.flip(operand, axis), axis), axis) if reverse else fnp.cumsum(operand, axis)


def cumprod(operand, axis: int = 0, reverse: bool = False):
    operand = fnp.asarray(operand)
    return fnp.flip(fnp.cumprod(fnp.flip(operand, axis), axis), axis) if reverse else fnp.cumprod(operand, axis)


def cummax(operand, axis: int = 0, reverse: bool = False):
    return _cumulative(fnp.maximum, operand, axis, reverse)


def cummin(operand, axis: int = 0, reverse: bool = False):
    return _cumulative(fnp.minimum, operand, axis, reverse)


def cumlogsumexp(operand, axis: int = 0, reverse: bool = False):
    return _cumulative(fnp.logaddexp, fnp._float_arg(operand), axis, reverse)


def associative_scan(fn, elems, reverse: bool = False, axis: int = 0):
    """The inclusive scan of elems (a pytree of arrays sharing the axis) under the associative fn,
    in O(log n) rounds of fn on whole slices (jax.lax.associative_scan's even/odd recursion)."""
    leaves, structure = tree_flatten(elems)
    if not leaves:
        return elems
    leaves = [fnp.asarray(leaf) for leaf in leaves]
    axis = fnp._normalize_axis(axis, leaves[0].ndim)
    n = leaves[0].shape[axis]
    if any(leaf.shape[axis] != n for leaf in leaves):
        raise ValueError(f"associative_scan: the leaves' axis {axis} lengths differ: {[x.shape[axis] for x in leaves]}")
    if reverse:
        leaves = [fnp.flip(leaf, axis) for leaf in leaves]

    def combine(a, b):
        out = fn(structure.unflatten(a), structure.unflatten(b))
        return [fnp.asarray(leaf) for leaf in tree_flatten(out)[0]]

    def take(xs, start, stop=None, step=1):
        return [slice_in_dim(x, start, stop, step, axis) for x in xs]

    def scan(xs):
        length = xs[0].shape[axis]
        if length < 2:
            return xs
        pairs = combine(take(xs, 0, -1 if length % 2 else None, 2), take(xs, 1, None, 2))  # x0+x1, x2+x3, ...
        odd = scan(pairs)  # prefixes ending at positions 1, 3, 5, ...
        even = combine(take(odd, 0, -1 if length % 2 == 0 else None), take(xs, 2, None, 2)) if length > 2 else []
        even = [fnp.concatenate([first, rest], axis) for first, rest in zip(take(xs, 0, 1), even)] if even else \
            take(xs, 0, 1)
        return [_interleave(e, o, axis) for e, o in zip(even, odd)]

    out = scan(leaves)
    if reverse:
        out = [fnp.flip(leaf, axis) for leaf in out]
    return structure.unflatten(out)


def _interleave(even, odd, axis: int):
    """e0, o0, e1, o1, ... along axis (even has the same length as odd or one more)."""
    n = even.shape[axis] + odd.shape[axis]
    order = np.empty(n, np.int64)
    order[0::2] = np.arange(even.shape[axis])
    order[1::2] = even.shape[axis] + np.arange(odd.shape[axis])
    return fnp.take(fnp.concatenate([even, odd], axis), order, axis=axis)


def sort(operand, dimension: int = -1, is_stable: bool = True, num_keys: int = 1):
    """operand sorted along dimension; a tuple of operands is sorted together by the first
    num_keys of them (lexicographically), as lax.sort."""
    if not isinstance(operand, (tuple, list)):
        return fnp.sort(operand, dimension)
    operands = [fnp.asarray(o) for o in operand]
    order = None
    for key in reversed(operands[:num_keys]):  # least significant key first, each sort stable
        keyed = key if order is None else fnp.take_along_axis(key, order, dimension)
        step = fnp.argsort(keyed, axis=dimension)
        order = step if order is None else fnp.take_along_axis(order, step, dimension)
    return tuple(fnp.take_along_axis(o, order, dimension) for o in operands)


def sort_key_val(keys, values, dimension: int = -1):
    return sort((keys, values), dimension, num_keys=1)


def dot_general(lhs, rhs, dimension_numbers, precision=None, preferred_element_type=None):
    """XLA's DotGeneral: ((lhs_contract, rhs_contract), (lhs_batch, rhs_batch)); the result is the
    batch axes, then lhs's free axes, then rhs's (as einsum writes it)."""
    (lc, rc), (lb, rb) = dimension_numbers
    lhs, rhs = fnp.asarray(lhs), fnp.asarray(rhs)
    for kind, li, ri in (("contracting", lc, rc), ("batch", lb, rb)):
        if [lhs.shape[i] for i in li] != [rhs.shape[j] for j in ri]:  # exact, as XLA's (einsum broadcasts 1s)
            raise ShapeError(f"dot_general requires {kind} dimensions to have the same shape, got "
                             f"{tuple(lhs.shape[i] for i in li)} and {tuple(rhs.shape[j] for j in ri)}")
    letters = iter("abcdefghijklmnopqrstuvwxyzABCDEFGHIJKLMNOPQRSTUVWXYZ")
    lhs_sub, rhs_sub = [None] * lhs.ndim, [None] * rhs.ndim
    for i, j in zip(lb, rb):
        lhs_sub[i] = rhs_sub[j] = next(letters)
    for i, j in zip(lc, rc):
        lhs_sub[i] = rhs_sub[j] = next(letters)
    lhs_sub = [c or next(letters) for c in lhs_sub]
    rhs_sub = [c or next(letters) for c in rhs_sub]
    out = [lhs_sub[i] for i in lb] + [c for i, c in enumerate(lhs_sub) if i not in lb and i not in lc] + \
        [c for i, c in enumerate(rhs_sub) if i not in rb and i not in rc]
    result = fnp.einsum(f"{''.join(lhs_sub)},{''.join(rhs_sub)}->{''.join(out)}", lhs, rhs)
    return result if preferred_element_type is None else fnp.astype(result, preferred_element_type)


_COLLECTIVES = ("psum", "pmean", "pmax", "pmin", "all_gather", "psum_scatter", "ppermute", "all_to_all", "axis_index",
                "axis_size", "pvary", "pshuffle", "pswapaxes")


def __getattr__(name: str):
    """jax.lax's collectives, over mesh axes or a vmap's axis_name (funcgrad.dist.collectives),
    imported on first use so that `import funcgrad` does not load the process machinery."""
    if name in _COLLECTIVES:
        from ..dist import collectives
        return getattr(collectives, name)
    raise AttributeError(f"module 'funcgrad.lax' has no attribute {name!r}")
