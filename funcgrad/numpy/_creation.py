"""Making arrays, converting values, and the dtype promotion every function applies (PyTorch's
rule: Python scalars are weak, x_float32 * 2.5 stays float32)."""
from __future__ import annotations

import builtins
import functools
import operator
from typing import Any, Sequence

import numpy as np

from .. import devices, dtypes
from ..array import Array, ArrayBase, parse_device, to_numpy
from ..config import autocast_state
from ..devices import device_put
from ..dtypes import (bfloat16, bool_, complex64, complex128, float16, float32, float64, int8, int16,  # noqa: F401
                      int32, int64, uint8, uint16, uint32, uint64)
from ..errors import AxisError, ConcretizationError, ShapeError
from ..ops import elementwise as E
from ..ops import layout as Ly
from ..ops import shape as S
from ..trace import Tracer, bind

pi, e, inf, nan, newaxis, euler_gamma = np.pi, np.e, np.inf, np.nan, None, np.euler_gamma

__all__ = [
    "allclose", "arange", "array", "asarray", "astype", "bfloat16", "bool_", "complex64", "complex128",
    "e", "euler_gamma", "eye", "float16", "float32", "float64", "full", "full_like", "inf", "int16",
    "int32", "int64", "int8", "linspace", "nan", "ndim", "newaxis", "ones", "ones_like", "pi", "shape", "size",
    "uint16", "uint32", "uint64", "uint8", "zeros", "zeros_like",
]


def asarray(x: Any, dtype=None, *, device=None, copy: bool | None = None) -> Array:
    """x as an Array (no copy when it already is one of the right dtype). Host data is copied, as
    jnp.asarray copies it to the device: an Array is immutable, so writing to the NumPy array it
    came from must not change it. A list holding arrays (or values being differentiated) is stacked
    with primitives, so gradients flow through it. The Array API's keywords: copy=True always
    copies, copy=False shares a NumPy array's memory (writing to it then shows through) and raises
    where a copy would be needed, device places the result."""
    if copy is None and device is None:
        if isinstance(x, ArrayBase):
            return x if dtype is None else astype(x, dtype)
        if isinstance(x, (list, tuple)) and _holds_arrays(x):
            return _stacked(x, dtype)
        return Array(to_numpy(x, dtype=dtype, copy=True))
    if copy:
        return _placed(array(x, dtype), device)
    if copy is None:
        return _placed(asarray(x, dtype), device)
    out = asarray(x, dtype) if isinstance(x, (ArrayBase, list, tuple)) else Array(to_numpy(x, dtype=dtype))
    shares = out is x or (isinstance(x, np.ndarray) and out.dtype == x.dtype)
    if not shares or device is not None and parse_device(device) != out.device:
        raise ValueError(f"asarray(copy=False): a {type(x).__name__} of dtype "
                         f"{getattr(x, 'dtype', type(x).__name__)} cannot become this array without a copy")
    return _placed(out, device)


def follow(*operands) -> tuple:
    """operands, with the host constants among them (NumPy arrays, lists) made Arrays on the device
    of their first Array: as in JAX and PyTorch, constants follow the data. Python scalars stay
    weak scalars, and Arrays on two devices remain an error (bind names them)."""
    anchor = next((a for a in operands if isinstance(a, ArrayBase)), None)
    if anchor is None:
        return operands
    device = anchor.device
    return tuple(a if a is None or isinstance(a, ArrayBase) or _is_scalar(a) else
                 asarray(a) if device.platform == "cpu" else device_put(asarray(a), device) for a in operands)


def _holds_arrays(seq) -> bool:
    return builtins.any(isinstance(e, ArrayBase) or isinstance(e, (list, tuple)) and _holds_arrays(e) for e in seq)


def _stacked(seq, dtype=None):
    """A (nested) sequence of arrays and scalars as one array, by reshape and concatenate: its dtype
    is the elements' promoted one (Python scalars weak, as in jax.numpy) unless dtype is given."""
    items = [_stacked(e) if isinstance(e, (list, tuple)) and _holds_arrays(e) else
             e if isinstance(e, ArrayBase) else Array(to_numpy(e)) if isinstance(e, (list, tuple)) else e
             for e in seq]
    if dtype is not None:
        common = dtypes.canonicalize(dtype)
    else:
        common = functools.reduce(dtypes.promote, [e.dtype for e in items if isinstance(e, ArrayBase)])
        for e in items:
            if not isinstance(e, ArrayBase) and dtypes.scalar_category(e) > dtypes._category(common):
                common = dtypes.promote(common, dtypes.scalar_dtype(e))
    parts = [astype(e, common) if isinstance(e, ArrayBase) else Array(to_numpy(e, dtype=common)) for e in items]
    shapes = sorted({tuple(p.shape) for p in parts})
    if len(shapes) > 1:
        raise ShapeError(f"cannot make an array from a sequence whose elements have the shapes {shapes} "
                         f"(they must all have one shape)")
    return bind(S.concatenate_p, *[bind(Ly.reshape_p, p, shape=(1,) + tuple(p.shape)) for p in parts], axis=0)


def array(x: Any, dtype=None, copy: bool = True) -> Array:
    """A new Array holding a copy of x (Python floats become float32, ints int64). An Array is
    copied too (as np.array and jnp.array do), so donating one never invalidates the other."""
    if isinstance(x, ArrayBase):
        out = asarray(x, dtype)
        if not copy or out is not x or type(x) is not Array:  # a conversion already made a new array
            return out
        value = x._value
        return Array(value.copy()) if isinstance(value, np.ndarray) else bind(E.convert_p, x, dtype=x.dtype)
    if isinstance(x, (list, tuple)) and _holds_arrays(x):
        return _stacked(x, dtype)
    return Array(to_numpy(x, dtype=dtype, copy=copy))


def astype(x, dtype, /, *, copy: bool = False, device=None) -> Array:
    """x in dtype; the same array when it already is, unless copy=True (the Array API's default is
    True, but funcgrad arrays are immutable, so a copy is only ever asked for, never needed). A
    Python float goes to a float or complex dtype directly, not through the default float32."""
    dtype = dtypes.canonicalize(dtype)
    exact = isinstance(x, (float, complex)) and (dtypes.is_float(dtype) or dtypes.is_complex(dtype))
    x = asarray(x, dtype=dtype) if exact else asarray(x)
    out = x if x.dtype == dtype else E.convert_p(x, dtype=dtype)
    if copy and out is x:
        out = array(x)
    return _placed(out, device)


def _is_scalar(x) -> bool:
    return isinstance(x, (bool, int, float, complex, np.bool_, np.number)) and not isinstance(x, ArrayBase)


def _weak(s, dtype):
    """A Python scalar next to an array of `dtype`: it takes the array's dtype if its category
    (bool < int < float < complex) is no higher, as in PyTorch."""
    s = s.item() if isinstance(s, np.generic) else s
    if dtypes.scalar_category(s) > dtypes._category(dtype):
        return None
    return np.asarray(s, dtype) if dtype in dtypes.low_precision or dtype.kind == "u" else s


def _scalar_result_dtype(s, dtype):
    """The dtype of an array of `dtype` with a Python scalar of a higher category: the scalar's
    default, except that a complex scalar keeps a float64 array's precision (PyTorch)."""
    if isinstance(s, complex) and dtypes.is_float(dtype):
        return dtypes.complex_dtype(dtype)
    return dtypes.scalar_dtype(s)


_NATIVE_WEAK = {float: frozenset({float32, float64, complex64, complex128}),
                complex: frozenset({complex64, complex128}),
                int: frozenset({float32, float64, int32, int64, complex64, complex128})}
# (NumPy already treats these weakly)


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
            return astype(x, _scalar_result_dtype(y.item() if isinstance(y, np.generic) else y, x.dtype)), y
        return _pair(*follow(x, y))
    if isinstance(y, ArrayBase):
        b, a = _pair(y, x)
        return a, b
    if _is_scalar(x) and not _is_scalar(y):  # a Python number beside host data (a NumPy array): still weak
        b, a = _pair(asarray(y), x)
        return a, b
    return _pair(asarray(x), y)


def _float_arg(x):
    """Math functions of integers compute in the default float dtype (PyTorch: exp(int) -> float32)."""
    if isinstance(x, ArrayBase) and x.dtype in dtypes.inexact_dtypes:
        return x
    x = asarray(x)
    return x if dtypes.is_inexact(x.dtype) else E.convert_p(x, dtype=dtypes.default_float)


def _complex_arg(x):
    """A complex array for a function of complex numbers (the FFTs, the Faddeeva function): integers
    and half precision as complex64, float32 as complex64, float64 as complex128."""
    x = _float_arg(x)
    if x.dtype in dtypes.low_precision:
        x = E.convert_p(x, dtype=dtypes.float32)
    return x if dtypes.is_complex(x.dtype) else E.convert_p(x, dtype=dtypes.complex_dtype(x.dtype))


def _array_pair(x, y):
    """Two arrays of one dtype for a binary function composed of others: promoted as _pair does (a
    Python scalar is weak, so it takes a float64 array's precision), then the scalar made an array."""
    x, y = _pair(x, y)
    if not isinstance(x, ArrayBase):
        return asarray(x, y.dtype), y
    return x, (y if isinstance(y, ArrayBase) else asarray(y, x.dtype))


def _float_pair(x, y):
    """_array_pair for a binary function of reals: integers in the default float."""
    x, y = _array_pair(x, y)
    return _float_arg(x), _float_arg(y)


def _float_args(*xs) -> list:
    """Arrays of one floating dtype for a function of several reals (the special functions, the
    densities): Python numbers are weak, taking the others' precision (0.1 beside a float64 array is
    float64's 0.1, not float32's), integers compute in the default float, and host values go to the
    first Array's device."""
    weak = [type(x) in (bool, int, float) for x in xs]
    typed = [_float_arg(x) for x, w in zip(xs, weak) if not w]
    dtype = functools.reduce(dtypes.promote, (t.dtype for t in typed)) if typed else dtypes.default_float
    typed_iter = iter(typed)
    return _common([np.asarray(x, dtype) if w else next(typed_iter) for x, w in zip(xs, weak)])


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


def _widened(x):
    """float16 and bfloat16 in float32: means, variances and norms are computed there and rounded
    once, as PyTorch's and JAX's are (a float16 total overflows at 65504 long before a mean does)."""
    return E.convert_p(x, dtype=dtypes.float32) if x.dtype in dtypes.low_precision else x


def _narrowed(out, dtype):
    """A statistic computed in float32 (_widened) rounded back to its input's float16 or bfloat16."""
    return astype(out, dtype) if dtype in dtypes.low_precision else out


def _normalize_axis(axis: int, ndim: int) -> int:
    a = operator.index(axis)
    if not -ndim <= a < ndim:
        raise AxisError(f"axis {axis} is out of range for an array of rank {ndim}")
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




def _weak_float(x) -> bool:
    """A Python float or complex, or a (nested) list or tuple of Python numbers holding one."""
    if isinstance(x, (float, complex)):
        return True
    if not isinstance(x, (list, tuple)) or not x or _holds_arrays(x):
        return False
    try:
        return np.asarray(x).dtype in (dtypes.float64, dtypes.complex128)
    except (TypeError, ValueError):  # ragged or not numbers: asarray names the problem
        return False


def _weak_float_dtype(x, dtype):
    """The dtype a weak float (or complex) x takes beside data of dtype: the data's when it is of an
    inexact kind that holds x, else the default (complex) float, as _pair decides for scalars."""
    probe = x if isinstance(x, (float, complex)) else (0j if np.asarray(x).dtype.kind == "c" else 0.0)
    return dtype if _weak(probe, dtype) is not None else _scalar_result_dtype(probe, dtype)


def _arrays(*xs) -> list:
    """xs as Arrays, the host values among them (NumPy arrays, lists, numbers) on the device of the
    first Array: constants follow the data (Arrays on two devices still meet in bind, which names them).
    Python floats (and lists of them) are weak, as numbers in arithmetic are: beside float64 data they
    are float64, not the float32 that fnp.asarray(0.7) alone gives (a rounded 0.7 would be a silently
    wrong constant: isin(x, [0.7]) false where x holds 0.7)."""
    anchor = next((x for x in xs if isinstance(x, ArrayBase)), None)
    weak = [_weak_float(x) for x in xs]
    if builtins.any(weak) and not builtins.all(weak):
        data = [asarray(x) for x, w in zip(xs, weak) if not w]
        dtype = functools.reduce(dtypes.promote, (d.dtype for d in data))
        xs = [np.asarray(x, _weak_float_dtype(x, dtype)) if w else x for x, w in zip(xs, weak)]
    if anchor is None or anchor.device.platform == "cpu":
        return [asarray(x) for x in xs]
    return [x if isinstance(x, ArrayBase) else device_put(asarray(x), anchor.device) for x in xs]


def _common(xs: Sequence) -> list:
    for x in xs:
        if not isinstance(x, ArrayBase):  # host values among them: placed beside the first Array
            xs = _arrays(*xs)
            break
    dtype = xs[0].dtype
    for x in xs[1:]:
        dtype = dtypes.promote(dtype, x.dtype)
    return [astype(x, dtype) for x in xs]


def concrete_or_none(x):
    """x's NumPy value, or None when it is only known abstractly (inside jit) or lives on a GPU
    (reading it back would stall the device: checks of values there are skipped)."""
    if isinstance(x, ArrayBase) and x.device.platform != "cpu":
        return None
    try:
        return np.asarray(x.concrete("reading values to check them") if isinstance(x, Tracer) else x)
    except ConcretizationError:
        return None


def _shape_arg(shape) -> tuple[int, ...]:
    return (operator.index(shape),) if np.ndim(shape) == 0 else tuple(operator.index(d) for d in shape)


def _placed(x: Array, device) -> Array:
    return x if device is None else device_put(x, device)


def zeros(shape, dtype=None, device=None) -> Array:
    """device: 'cpu' (default) or 'cuda'; on a GPU the fill runs there, with no host copy.
    dtype None (given or not) is the default float."""
    return full(shape, 0, dtypes.default_float if dtype is None else dtype, device)


def ones(shape, dtype=None, device=None) -> Array:
    return full(shape, 1, dtypes.default_float if dtype is None else dtype, device)


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


def linspace(start, stop, num: int = 50, endpoint: bool = True, retstep: bool = False, dtype=None,
             device=None) -> Array:
    """num points from start to stop (NumPy's), with the spacing too where retstep (NaN for fewer
    than two intervals' worth, as NumPy). With Arrays (or traced values) as endpoints the result is
    i * (stop - start) / (num - 1) + start, differentiable in both (stop exactly at the end);
    Python-number endpoints give float32, array endpoints keep their floating dtype (jax.numpy)."""
    num = operator.index(num)
    if num < 0:
        raise ValueError(f"linspace: number of samples, {num}, must be non-negative")
    if dtype is None:
        dtype = dtypes.promote(*(_float_arg(v).dtype if isinstance(v, (ArrayBase, np.ndarray)) else float32
                                 for v in (start, stop)))
    dtype = dtypes.canonicalize(dtype)
    intervals = num - 1 if endpoint else num
    if not isinstance(start, ArrayBase) and not isinstance(stop, ArrayBase):
        samples, step = np.linspace(start, stop, num, endpoint=endpoint, retstep=True)
        out = _placed(Array(samples.astype(dtype)), device)
        return (out, _placed(Array(np.asarray(step).astype(dtype)), device)) if retstep else out
    start, stop = (astype(v, dtype) for v in _float_pair(start, stop))
    shape = (num,) + np.broadcast_shapes(_shape(start), _shape(stop))
    index = bind(Ly.reshape_p, Array(np.arange(num, dtype=dtype)), shape=(num,) + (1,) * (len(shape) - 1))
    step = bind(E.div_p, bind(E.sub_p, stop, start), float(builtins.max(intervals, 1)))
    out = bind(E.add_p, bind(E.mul_p, index, step), start)  # NumPy's order of operations
    if endpoint and num > 1:
        last = np.arange(num).reshape(index.shape) == num - 1
        out = bind(E.select_p, Array(last), bind(Ly.broadcast_to_p, stop, shape=shape), out)
    out = _placed(bind(Ly.broadcast_to_p, out, shape=shape) if tuple(out.shape) != shape else out, device)
    if not retstep:
        return out
    return out, _placed(step if intervals > 0 else bind(E.mul_p, step, float("nan")), device)


def eye(n: int, m: int | None = None, k: int = 0, dtype=None, device=None) -> Array:
    dtype = dtypes.default_float if dtype is None else dtypes.canonicalize(dtype)
    return _placed(Array(np.eye(n, m, k, dtype=dtype)), device)


def shape(x) -> tuple[int, ...]:
    return tuple(_shape(asarray(x)))


def ndim(x) -> int:
    return len(shape(x))


def size(x) -> int:
    return int(np.prod(shape(x), dtype=np.int64))


def allclose(a, b, rtol: float = 1e-5, atol: float = 1e-8) -> bool:
    return bool(np.allclose(*(np.asarray(v) for v in _arrays(a, b)), rtol=rtol, atol=atol))
