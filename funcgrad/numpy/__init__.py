"""funcgrad.numpy: the jax.numpy of this project (import funcgrad.numpy as fnp).

Functions take Arrays, NumPy arrays, lists and Python scalars; they promote dtypes as PyTorch
does (Python scalars are weak: x_float32 * 2.5 stays float32) and bind primitives. Everything
here is composed from the primitives in funcgrad.ops, so it is differentiable where math allows.
"""
from __future__ import annotations

import builtins
import operator
import string
from typing import Any, Sequence

import numpy as np

from .. import dtypes
from .. import devices
from ..array import Array, ArrayBase, parse_device, to_numpy
from ..devices import device_put
from ..config import autocast_state
from ..dtypes import (bfloat16, bool_, float16, float32, float64, int8, int16, int32,  # noqa: F401
                     int64, uint8, uint32, uint64)
from ..errors import ConcretizationError, ShapeError
from ..ops import elementwise as E
from ..ops import linalg as L
from ..ops import reductions as R
from ..ops import shape as S
from ..ops import prng, stop_gradient_p
from ..trace import bind

pi, e, inf, nan, newaxis = np.pi, np.e, np.inf, np.nan, None


# ==== conversion and promotion =====================================================================
def asarray(x: Any, dtype=None) -> Array:
    """x as an Array (no copy when it already is one of the right dtype)."""
    if isinstance(x, ArrayBase):
        return x if dtype is None else astype(x, dtype)
    return Array(to_numpy(x, dtype=dtype))


def array(x: Any, dtype=None, copy: bool = True) -> Array:
    """A new Array holding a copy of x (Python floats become float32, ints int64). An Array is
    copied too (as np.array and jnp.array do), so donating one never invalidates the other."""
    if isinstance(x, ArrayBase):
        out = asarray(x, dtype)
        if not copy or out is not x or type(x) is not Array:  # a conversion already made a new array
            return out
        value = x._value
        return Array(value.copy()) if isinstance(value, np.ndarray) else bind(E.convert_p, x, dtype=x.dtype)
    return Array(to_numpy(x, dtype=dtype, copy=copy))


def astype(x, dtype) -> Array:
    x = asarray(x)
    dtype = dtypes.canonicalize(dtype)
    return x if x.dtype == dtype else E.convert_p(x, dtype=dtype)


def _is_scalar(x) -> bool:
    return isinstance(x, (bool, int, float, np.bool_, np.integer, np.floating)) and not isinstance(x, ArrayBase)


def _weak(s, dtype):
    """A Python scalar next to an array of `dtype`: it takes the array's dtype if its category
    (bool < int < float) is no higher, as in PyTorch."""
    s = s.item() if isinstance(s, np.generic) else s
    if dtypes.scalar_category(s) > dtypes._category(dtype):
        return None
    return np.asarray(s, dtype) if dtype in dtypes.low_precision or dtype.kind == "u" else s


_NATIVE_WEAK = {float: frozenset({float32, float64}),
                int: frozenset({float32, float64, int32, int64})}  # NumPy already treats these weakly


def _pair(x, y):
    """Operands of a binary op, promoted to one dtype (scalars stay weak)."""
    if isinstance(x, ArrayBase):
        native = _NATIVE_WEAK.get(type(y))
        if native is not None and x.dtype in native:
            return x, y
        if isinstance(y, ArrayBase):
            dx, dy = x.dtype, y.dtype
            if dx == dy:
                return x, y
            d = dtypes.promote(dx, dy)
            return (x if dx == d else E.convert_p(x, dtype=d)), (y if dy == d else E.convert_p(y, dtype=d))
        if _is_scalar(y):
            w = _weak(y, x.dtype)
            if w is not None:
                return x, w
            return astype(x, dtypes.scalar_dtype(y.item() if isinstance(y, np.generic) else y)), y
        return _pair(x, asarray(y))
    if isinstance(y, ArrayBase):
        b, a = _pair(y, x)
        return a, b
    return _pair(asarray(x), y)


def _float_arg(x):
    """Math functions of integers compute in the default float dtype (PyTorch: exp(int) -> float32)."""
    if isinstance(x, ArrayBase) and x.dtype in dtypes.float_dtypes:
        return x
    x = asarray(x)
    return x if dtypes.is_float(x.dtype) else E.convert_p(x, dtype=dtypes.default_float)


def _shape(x):
    return x.shape if hasattr(x, "shape") else ()


def _precision(*operands) -> dict:
    """Under autocast, contractions of float32 (or already low) operands compute in the low dtype:
    {"precision": dtype}; the operands are then rounded inside the kernel, not copied first."""
    low = autocast_state.dtype
    if low is None or not builtins.all(asarray(x).dtype in (dtypes.float32, low) for x in operands):
        return {}
    return {"precision": low}


def autocast_to_float32(x):
    """Under autocast, low-precision inputs of reductions, norms and losses widen to float32."""
    if autocast_state.dtype is not None and isinstance(x, ArrayBase) and x.dtype in dtypes.low_precision:
        return E.convert_p(x, dtype=dtypes.float32)
    return x


def _normalize_axis(axis: int, ndim: int) -> int:
    a = operator.index(axis)
    if not -ndim <= a < ndim:
        raise ShapeError(f"axis {axis} is out of range for an array of rank {ndim}")
    return a % ndim


def _axes(axis, ndim: int) -> tuple[int, ...]:
    if axis is None:
        return tuple(range(ndim))
    if isinstance(axis, (tuple, list)):
        out = tuple(_normalize_axis(a, ndim) for a in axis)
        if len(set(out)) != len(out):
            raise ShapeError(f"repeated axis in {tuple(axis)}")
        return tuple(sorted(out))
    return (_normalize_axis(axis, ndim),)


# ==== elementwise ===================================================================================
def _binary_fn(prim, name):
    def fn(x, y):
        return bind(prim, *_pair(x, y))
    fn.__name__ = name
    fn.__doc__ = f"Elementwise {name} with NumPy broadcasting."
    return fn


def _unary_float_fn(prim, name):
    def fn(x):
        return bind(prim, _float_arg(x))
    fn.__name__ = name
    fn.__doc__ = f"Elementwise {name}; integer inputs compute in float32."
    return fn


def _unary_fn(prim, name):
    def fn(x):
        return bind(prim, asarray(x))
    fn.__name__ = name
    return fn


add = _binary_fn(E.add_p, "add")
subtract = _binary_fn(E.sub_p, "subtract")
multiply = _binary_fn(E.mul_p, "multiply")
maximum = _binary_fn(E.maximum_p, "maximum")
minimum = _binary_fn(E.minimum_p, "minimum")
floor_divide = _binary_fn(E.floor_divide_p, "floor_divide")
remainder = mod = _binary_fn(E.remainder_p, "remainder")
equal = _binary_fn(E.eq_p, "equal")
not_equal = _binary_fn(E.ne_p, "not_equal")
less = _binary_fn(E.lt_p, "less")
less_equal = _binary_fn(E.le_p, "less_equal")
greater = _binary_fn(E.gt_p, "greater")
greater_equal = _binary_fn(E.ge_p, "greater_equal")
logical_and = _binary_fn(E.and_p, "logical_and")
logical_or = _binary_fn(E.or_p, "logical_or")
logical_xor = _binary_fn(E.xor_p, "logical_xor")
bitwise_and = _binary_fn(E.bitwise_and_p, "bitwise_and")
bitwise_or = _binary_fn(E.bitwise_or_p, "bitwise_or")
bitwise_xor = _binary_fn(E.bitwise_xor_p, "bitwise_xor")
left_shift = _binary_fn(E.left_shift_p, "left_shift")
right_shift = _binary_fn(E.right_shift_p, "right_shift")

negative = _unary_fn(E.neg_p, "negative")
abs = absolute = _unary_fn(E.abs_p, "abs")  # noqa: A001
sign = _unary_fn(E.sign_p, "sign")
square = _unary_fn(E.square_p, "square")
logical_not = _unary_fn(E.not_p, "logical_not")
invert = _unary_fn(E.invert_p, "invert")
isnan = _unary_fn(E.isnan_p, "isnan")
isinf = _unary_fn(E.isinf_p, "isinf")
isfinite = _unary_fn(E.isfinite_p, "isfinite")
floor = _unary_float_fn(E.floor_p, "floor")
ceil = _unary_float_fn(E.ceil_p, "ceil")
trunc = _unary_float_fn(E.trunc_p, "trunc")
exp = _unary_float_fn(E.exp_p, "exp")
expm1 = _unary_float_fn(E.expm1_p, "expm1")
log = _unary_float_fn(E.log_p, "log")
log1p = _unary_float_fn(E.log1p_p, "log1p")
log2 = _unary_float_fn(E.log2_p, "log2")
log10 = _unary_float_fn(E.log10_p, "log10")
sqrt = _unary_float_fn(E.sqrt_p, "sqrt")
reciprocal = _unary_float_fn(E.reciprocal_p, "reciprocal")
sin = _unary_float_fn(E.sin_p, "sin")
cos = _unary_float_fn(E.cos_p, "cos")
tan = _unary_float_fn(E.tan_p, "tan")
tanh = _unary_float_fn(E.tanh_p, "tanh")
sinh = _unary_float_fn(E.sinh_p, "sinh")
cosh = _unary_float_fn(E.cosh_p, "cosh")
arctan = _unary_float_fn(E.arctan_p, "arctan")
arcsin = _unary_float_fn(E.arcsin_p, "arcsin")
arccos = _unary_float_fn(E.arccos_p, "arccos")
arcsinh = _unary_float_fn(E.arcsinh_p, "arcsinh")
arccosh = _unary_float_fn(E.arccosh_p, "arccosh")
arctanh = _unary_float_fn(E.arctanh_p, "arctanh")


def divide(x, y):
    """True division; integers divide in float32 (as PyTorch)."""
    x, y = _pair(x, y)
    if not dtypes.is_float(_dtype(x)) and not dtypes.is_float(_dtype(y)):
        x, y = _float_arg(x), (float(y) if _is_scalar(y) else _float_arg(y))
    return bind(E.div_p, x, y)


true_divide = divide


def _dtype(x):
    return x.dtype if hasattr(x, "dtype") else dtypes.scalar_dtype(x)


def power(x, y):
    if _is_scalar(y) and isinstance(x, ArrayBase):
        y = y.item() if isinstance(y, np.generic) else y
        if dtypes.scalar_category(y) <= dtypes._category(x.dtype) or isinstance(y, int):
            if isinstance(y, int) and not dtypes.is_float(x.dtype) and y < 0:
                raise ValueError("integers to negative integer powers are not allowed")
            return bind(E.pow_p, x, y)  # an exponent that keeps x's dtype
    return bind(E.pow_p, *_pair(x, y))


def arctan2(y, x):
    y, x = _pair(_float_arg(y), x)
    return bind(E.arctan2_p, y, _float_arg(x) if isinstance(x, ArrayBase) else x)


def round(x, decimals: int = 0):  # noqa: A001
    x = asarray(x)
    if decimals == 0:
        return bind(E.round_p, x)
    scale = 10.0 ** decimals
    return divide(bind(E.round_p, multiply(x, scale)), scale)


def where(condition, x=None, y=None):
    """where(c, x, y) selects elementwise; where(c) returns the indices of the true elements."""
    if x is None and y is None:
        return tuple(Array(i) for i in np.nonzero(np.asarray(condition)))
    if x is None or y is None:
        raise TypeError("where takes either one argument or three")
    c = astype(condition, bool_)
    x, y = _pair(x, y)
    return bind(E.select_p, c, x, y)


def clip(x, min=None, max=None):  # noqa: A002
    """Clamp to [min, max]; the gradient flows where min <= x <= max (PyTorch's clamp)."""
    x = asarray(x)
    if min is None and max is None:
        return x
    lo = None if min is None else _pair(x, min)[1]
    hi = None if max is None else _pair(x, max)[1]
    if isinstance(lo, ArrayBase) and lo.dtype != x.dtype or isinstance(hi, ArrayBase) and hi.dtype != x.dtype:
        x = astype(x, dtypes.promote(x.dtype, (lo if isinstance(lo, ArrayBase) else hi).dtype))
    return bind(E.clip_p, x, lo, hi)


def stop_gradient(x):
    """x, with a zero derivative under every transform (jax.lax.stop_gradient, torch .detach())."""
    from ..tree import tree_map
    return tree_map(lambda leaf: bind(stop_gradient_p, asarray(leaf)), x)


# ==== reductions ======================================================================================
def _reduce(prim, x, axis, keepdims):
    x = autocast_to_float32(asarray(x))
    return bind(prim, x, axes=_axes(axis, x.ndim), keepdims=bool(keepdims))


def sum(x, axis=None, keepdims: bool = False, dtype=None):  # noqa: A001
    x = asarray(x) if dtype is None else astype(x, dtype)
    return _reduce(R.sum_p, x, axis, keepdims)


def prod(x, axis=None, keepdims: bool = False, dtype=None):
    x = asarray(x) if dtype is None else astype(x, dtype)
    return _reduce(R.prod_p, x, axis, keepdims)


def max(x, axis=None, keepdims: bool = False):  # noqa: A001
    x = asarray(x)
    if x.size == 0 and (axis is None or builtins.any(x.shape[a] == 0 for a in _axes(axis, x.ndim))):
        raise ShapeError(f"max of an empty selection (shape {x.shape}) has no identity")
    return _reduce(R.max_p, x, axis, keepdims)


def min(x, axis=None, keepdims: bool = False):  # noqa: A001
    x = asarray(x)
    if x.size == 0 and (axis is None or builtins.any(x.shape[a] == 0 for a in _axes(axis, x.ndim))):
        raise ShapeError(f"min of an empty selection (shape {x.shape}) has no identity")
    return _reduce(R.min_p, x, axis, keepdims)


amax, amin = max, min


def all(x, axis=None, keepdims: bool = False):  # noqa: A001
    return _reduce(R.all_p, x, axis, keepdims)


def any(x, axis=None, keepdims: bool = False):  # noqa: A001
    return _reduce(R.any_p, x, axis, keepdims)


def _count(x, axes) -> int:
    return int(np.prod([x.shape[a] for a in axes], dtype=np.int64))


def mean(x, axis=None, keepdims: bool = False, dtype=None):
    x = autocast_to_float32(_float_arg(x)) if dtype is None else astype(x, dtype)
    axes = _axes(axis, x.ndim)
    total = bind(R.sum_p, x, axes=axes, keepdims=bool(keepdims))
    n = _count(x, axes)
    return multiply(total, 1.0 / n) if n else divide(total, 0.0)


def var(x, axis=None, ddof: int = 0, keepdims: bool = False, correction=None):
    """Variance with NumPy's default ddof=0 (torch.var's default is correction=1)."""
    x = _float_arg(x)
    ddof = ddof if correction is None else correction
    axes = _axes(axis, x.ndim)
    centered = subtract(x, mean(x, axes, keepdims=True))
    n = _count(x, axes)
    return divide(sum(square(centered), axes, keepdims=keepdims), float(builtins.max(n - ddof, 0)))


def std(x, axis=None, ddof: int = 0, keepdims: bool = False, correction=None):
    return sqrt(var(x, axis, ddof=ddof, keepdims=keepdims, correction=correction))


def logsumexp(x, axis=None, keepdims: bool = False):
    return _reduce(R.logsumexp_p, _float_arg(x), axis, keepdims)


def _arg_reduce(prim, x, axis, keepdims):
    x = asarray(x)
    if x.size == 0:
        raise ShapeError(f"{prim.name} of an empty array (shape {x.shape})")
    if axis is None:
        out = bind(prim, S.reshape_p(x, shape=(-1,)), axis=0, keepdims=False)
        return reshape(out, (1,) * x.ndim) if keepdims else out
    return bind(prim, x, axis=_normalize_axis(axis, x.ndim), keepdims=bool(keepdims))


def argmax(x, axis=None, keepdims: bool = False):
    return _arg_reduce(R.argmax_p, x, axis, keepdims)


def argmin(x, axis=None, keepdims: bool = False):
    return _arg_reduce(R.argmin_p, x, axis, keepdims)


def cumsum(x, axis=None, dtype=None):
    x = asarray(x) if dtype is None else astype(x, dtype)
    if axis is None:
        x, axis = ravel(x), 0
    return bind(R.cumsum_p, x, axis=_normalize_axis(axis, x.ndim), reverse=False)


# ==== shapes =========================================================================================
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


def reshape(x, shape, *more):
    x = asarray(x)
    if more:
        shape = (shape,) + more
    shape = _resolve_shape(shape, x.size, x.shape)
    return x if shape == x.shape else bind(S.reshape_p, x, shape=shape)


def ravel(x):
    return reshape(x, (-1,))


def transpose(x, axes=None):
    x = asarray(x)
    perm = tuple(reversed(range(x.ndim))) if axes is None else tuple(_normalize_axis(a, x.ndim) for a in axes)
    if sorted(perm) != list(range(x.ndim)):
        raise ShapeError(f"transpose: axes {axes} are not a permutation of the {x.ndim} axes")
    return x if perm == tuple(range(x.ndim)) else bind(S.transpose_p, x, perm=perm)


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
    return bind(S.reshape_p, x, shape=tuple(shape))


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
    return x if x.shape == shape else bind(S.broadcast_to_p, x, shape=shape)


def broadcast_arrays(*xs):
    shape = np.broadcast_shapes(*(_shape(asarray(x)) for x in xs))
    return [broadcast_to(x, shape) for x in xs]


def _common(xs: Sequence) -> list:
    xs = [asarray(x) for x in xs]
    dtype = xs[0].dtype
    for x in xs[1:]:
        dtype = dtypes.promote(dtype, x.dtype)
    return [astype(x, dtype) for x in xs]


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


def pad(x, pad_width, mode: str = "constant", constant_values=0):
    """NumPy's pad for modes constant, edge, reflect, symmetric and wrap (all differentiable)."""
    x = asarray(x)
    widths = tuple(tuple(int(v) for v in w) for w in np.broadcast_to(np.asarray(pad_width, dtype=np.int64),
                                                                       (x.ndim, 2)))
    if builtins.any(v < 0 for w in widths for v in w):
        raise ValueError(f"pad widths must be non-negative, got {widths}")
    if mode == "constant":
        return bind(S.pad_p, x, widths=widths, value=constant_values)
    if mode not in ("edge", "reflect", "symmetric", "wrap"):
        raise ValueError(f"pad mode {mode!r} is not supported; use constant, edge, reflect, symmetric or wrap")
    for axis, (lo, hi) in enumerate(widths):
        if lo or hi:
            source = np.pad(np.arange(x.shape[axis]), (lo, hi), mode=mode)
            x = take(x, source, axis=axis)
    return x


def take(a, indices, axis: int | None = None):
    a = asarray(a)
    if axis is None:
        a, axis = ravel(a), 0
    axis = _normalize_axis(axis, a.ndim)
    idx = _index_array(indices, a.device)
    return bind(S.gather_p, a, idx, spec=(("s", None, None, None),) * axis + (("a",),))


def take_along_axis(a, indices, axis: int):
    a = asarray(a)
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


def concrete_or_none(x):
    """x's NumPy value, or None when it is only known abstractly (inside jit) or lives on a GPU
    (reading it back would stall the device: checks of values there are skipped)."""
    if isinstance(x, ArrayBase) and x.device.platform != "cpu":
        return None
    try:
        return np.asarray(x)
    except ConcretizationError:
        return None


def argsort(x, axis: int = -1):
    x = asarray(x)
    return bind(prng.argsort_p, x, axis=_normalize_axis(axis, x.ndim))


def sort(x, axis: int = -1):
    """Sorted along axis (stable); the gradient flows back through the permutation."""
    x = asarray(x)
    return take_along_axis(x, argsort(x, axis), axis)


def tri(n: int, m: int | None = None, k: int = 0, dtype=bool_, device=None) -> Array:
    """Ones at and below diagonal k (jnp.tri), built where it is used: on a GPU, from two
    index vectors made there."""
    m = n if m is None else m
    place = parse_device(device or "cpu")
    rows = reshape(devices.arange(n, dtypes.int64, place), (n, 1))
    cols = reshape(devices.arange(m, dtypes.int64, place), (1, m))
    return astype(rows + k >= cols, dtype)


def tril(x, k: int = 0):
    x = asarray(x)
    mask = tri(x.shape[-2], x.shape[-1], k, device=x.device)
    return where(mask, x, np.zeros((), x.dtype))


def triu(x, k: int = 0):
    x = asarray(x)
    mask = ~tri(x.shape[-2], x.shape[-1], k - 1, device=x.device)
    return where(mask, x, np.zeros((), x.dtype))


# ==== contractions =======================================================================================
def matmul(a, b):
    """NumPy's matmul: 1-D operands are promoted to matrices, batch dimensions broadcast."""
    precision = _precision(a, b)
    a, b = (asarray(a), asarray(b)) if precision else _common((a, b))
    if a.ndim == 0 or b.ndim == 0:
        raise ShapeError(f"matmul needs operands of rank >= 1, got shapes {a.shape} and {b.shape}")
    if a.shape[-1] != b.shape[-2 if b.ndim > 1 else 0]:
        raise ShapeError(f"matmul: shapes {a.shape} and {b.shape} do not line up "
                         f"({a.shape[-1]} != {b.shape[-2 if b.ndim > 1 else 0]})")
    a2 = reshape(a, (1,) + a.shape) if a.ndim == 1 else a
    b2 = reshape(b, b.shape + (1,)) if b.ndim == 1 else b
    try:
        np.broadcast_shapes(a2.shape[:-2], b2.shape[:-2])
    except ValueError:
        raise ShapeError(f"matmul: batch dimensions of {a.shape} and {b.shape} do not broadcast") from None
    out = bind(L.matmul_p, a2, b2, **precision)
    if a.ndim == 1:
        out = squeeze(out, -2)
    if b.ndim == 1:
        out = squeeze(out, -1)
    return out


def einsum(subscripts: str, *operands):
    """Einstein summation (NumPy's notation, including '...' and implicit output)."""
    precision = _precision(*operands)
    xs = [asarray(x) for x in operands] if precision else _common(operands)
    spec = _explicit_einsum(subscripts, [x.shape for x in xs])
    return bind(L.einsum_p, *xs, spec=spec, **precision)


def _explicit_einsum(subscripts: str, shapes) -> str:
    subscripts = subscripts.replace(" ", "")
    inputs, arrow, output = subscripts.partition("->")
    subs = inputs.split(",")
    if len(subs) != len(shapes):
        raise ValueError(f"einsum: {subscripts!r} names {len(subs)} operands but {len(shapes)} were given")
    free = [c for c in string.ascii_letters if c not in subscripts]
    n_ell = builtins.max((len(s) - len(sub.replace("...", "")) for sub, s in zip(subs, shapes) if "..." in sub),
                         default=0)
    ell = "".join(free[:n_ell])
    expanded = []
    for sub, shape in zip(subs, shapes):
        if "..." in sub:
            k = len(shape) - len(sub.replace("...", ""))
            sub = sub.replace("...", ell[n_ell - k:] if k else "")
        if len(sub) != len(shape):
            raise ShapeError(f"einsum: subscripts {sub!r} name {len(sub)} axes but the operand has shape {shape}")
        expanded.append(sub)
    dims: dict[str, int] = {}
    for sub, shape in zip(expanded, shapes):
        for c, d in zip(sub, shape):
            if dims.setdefault(c, d) != d:
                raise ShapeError(f"einsum: index {c!r} has sizes {dims[c]} and {d} in {subscripts!r}")
    if arrow:
        out = output.replace("...", ell)
    else:
        joined = "".join(expanded)
        out = ell + "".join(sorted(c for c in set(joined) if joined.count(c) == 1 and c not in ell))
    return ",".join(expanded) + "->" + out


def tensordot(a, b, axes=2):
    a, b = asarray(a), asarray(b)
    if isinstance(axes, int):
        axes_a, axes_b = list(range(a.ndim - axes, a.ndim)), list(range(axes))
    else:
        axes_a, axes_b = [np.atleast_1d(v).tolist() for v in axes]
    axes_a = [_normalize_axis(x, a.ndim) for x in axes_a]
    axes_b = [_normalize_axis(x, b.ndim) for x in axes_b]
    letters = iter(string.ascii_letters)
    sa = [next(letters) for _ in range(a.ndim)]
    sb = [next(letters) for _ in range(b.ndim)]
    for i, j in zip(axes_a, axes_b):
        sb[j] = sa[i]
    out = [c for i, c in enumerate(sa) if i not in axes_a] + [c for j, c in enumerate(sb) if j not in axes_b]
    return einsum("".join(sa) + "," + "".join(sb) + "->" + "".join(out), a, b)


def dot(a, b):
    a, b = asarray(a), asarray(b)
    if a.ndim == 0 or b.ndim == 0:
        return multiply(a, b)
    if a.ndim <= 2 and b.ndim <= 2:
        return matmul(a, b)
    return tensordot(a, b, ((a.ndim - 1,), (builtins.max(b.ndim - 2, 0),)))


def outer(a, b):
    return multiply(reshape(ravel(a), (-1, 1)), reshape(ravel(b), (1, -1)))


def inner(a, b):
    return tensordot(a, b, ((-1,), (-1,)))


def vdot(a, b):
    return sum(multiply(ravel(a), ravel(b)))


# ==== constructors ======================================================================================
def _shape_arg(shape) -> tuple[int, ...]:
    return (operator.index(shape),) if np.ndim(shape) == 0 else tuple(operator.index(d) for d in shape)


def _placed(x: Array, device) -> Array:
    return x if device is None else device_put(x, device)


def zeros(shape, dtype=float32, device=None) -> Array:
    """device: 'cpu' (default) or 'cuda'; on a GPU the fill runs there, with no host copy."""
    return full(shape, 0, dtype, device)


def ones(shape, dtype=float32, device=None) -> Array:
    return full(shape, 1, dtype, device)


def full(shape, fill_value, dtype=None, device=None) -> Array:
    value = to_numpy(fill_value, dtype=dtype)
    return devices.full(_shape_arg(shape), value, value.dtype, parse_device(device or "cpu"))


def _device_like(x, device):
    return device if device is not None else (x.device if isinstance(x, ArrayBase) else None)


def zeros_like(x, dtype=None, device=None) -> Array:
    """On x's device unless told otherwise (as torch.zeros_like)."""
    return zeros(_shape(x), dtype or asarray(x).dtype, _device_like(x, device))


def ones_like(x, dtype=None, device=None) -> Array:
    return ones(_shape(x), dtype or asarray(x).dtype, _device_like(x, device))


def full_like(x, fill_value, dtype=None, device=None) -> Array:
    return full(_shape(x), fill_value, dtype or asarray(x).dtype, _device_like(x, device))


def arange(start, stop=None, step=1, dtype=None, device=None) -> Array:
    if stop is None:
        start, stop = 0, start
    if dtype is None:
        is_int = builtins.all(isinstance(v, (int, np.integer)) for v in (start, stop, step))
        dtype = dtypes.default_int if is_int else dtypes.default_float
    return _placed(Array(np.arange(start, stop, step, dtype=dtypes.canonicalize(dtype))), device)


def linspace(start, stop, num: int = 50, endpoint: bool = True, dtype=float32, device=None) -> Array:
    return _placed(Array(np.linspace(start, stop, num, endpoint=endpoint).astype(dtypes.canonicalize(dtype))), device)


def eye(n: int, m: int | None = None, k: int = 0, dtype=float32, device=None) -> Array:
    return _placed(Array(np.eye(n, m, k, dtype=dtypes.canonicalize(dtype))), device)


def shape(x) -> tuple[int, ...]:
    return tuple(_shape(asarray(x)))


def ndim(x) -> int:
    return len(shape(x))


def size(x) -> int:
    return int(np.prod(shape(x), dtype=np.int64))


def allclose(a, b, rtol: float = 1e-5, atol: float = 1e-8) -> bool:
    return bool(np.allclose(np.asarray(asarray(a)), np.asarray(asarray(b)), rtol=rtol, atol=atol))


# the rest of jax.numpy's surface, composed from the functions above
from ._shapes import *  # noqa: E402,F401,F403
from ._math import *  # noqa: E402,F401,F403
from ._statistics import *  # noqa: E402,F401,F403
from ._signal import *  # noqa: E402,F401,F403
from .. import _methods  # noqa: E402,F401  (attaches operators and methods to Array and tracers)
from . import linalg  # noqa: E402,F401  (fnp.linalg)

# What `from funcgrad.numpy import *` brings: the array API, not the modules and helpers used to build it.
_INTERNAL = {"E", "L", "R", "S", "builtins", "devices", "dtypes", "np", "operator", "prng", "string", "annotations",
             "autocast_state", "Any", "Sequence", "ArrayBase", "ConcretizationError", "ShapeError", "bind",
             "concrete_or_none", "autocast_to_float32", "device_put", "parse_device", "to_numpy", "stop_gradient_p"}
__all__ = sorted(name for name in dir() if not name.startswith("_") and name not in _INTERNAL)
