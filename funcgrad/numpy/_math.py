"""Elementwise math beyond the primitives (logaddexp, hypot, fmod, sinc, ...), dtype helpers and the
integer helpers that need concrete values (gcd, lcm, frexp)."""
from __future__ import annotations

import functools
import math
from typing import NamedTuple

import ml_dtypes
import numpy as np

from .. import dtypes
from . import _base as fnp
from ..array import Array, ArrayBase
from ..custom import custom_jvp
from ..ops import prng
from ..trace import bind
from ._scalar_types import ScalarType
from ._util import _concrete

__all__ = [
    "isclose", "array_equal", "array_equiv", "logaddexp", "logaddexp2", "exp2", "cbrt", "copysign", "signbit",
    "deg2rad", "radians", "rad2deg", "degrees", "fabs", "fmax", "fmin", "fmod", "heaviside", "hypot", "float_power",
    "ldexp", "rint", "around", "fix", "modf", "divmod", "isposinf", "isneginf", "sinc", "nan_to_num", "angle",
    "iscomplexobj", "iscomplex", "isreal", "isrealobj", "positive", "bitwise_not", "bitwise_invert", "promote_types",
    "result_type", "can_cast", "finfo", "iinfo", "dtype", "isscalar", "issubdtype", "gcd", "lcm", "frexp",
    "generic", "number", "integer", "signedinteger", "unsignedinteger", "inexact", "floating", "complexfloating",
    "nextafter", "spacing", "bitwise_count", "ndarray",
]


def isclose(a, b, rtol: float = 1e-05, atol: float = 1e-08, equal_nan: bool = False):
    a, b = fnp._array_pair(a, b)
    if not dtypes.is_inexact(a.dtype):
        return fnp.equal(a, b)
    close = fnp.less_equal(fnp.abs(a - b), atol + rtol * fnp.abs(b)) & fnp.isfinite(b)
    close = close | fnp.equal(a, b)
    return close | (fnp.isnan(a) & fnp.isnan(b)) if equal_nan else close


def array_equal(a1, a2, equal_nan: bool = False):
    a1, a2 = fnp._arrays(a1, a2)
    if a1.shape != a2.shape:
        return fnp.asarray(False)
    same = fnp.equal(a1, a2)
    if equal_nan and dtypes.is_inexact(a1.dtype):
        same = same | (fnp.isnan(a1) & fnp.isnan(a2))
    return fnp.all(same)


def array_equiv(a1, a2):
    a1, a2 = fnp._arrays(a1, a2)
    try:
        np.broadcast_shapes(a1.shape, a2.shape)
    except ValueError:
        return fnp.asarray(False)
    return fnp.all(fnp.equal(a1, a2))


def _log_add(x1, x2, exp, log_scale: float):
    """larger + log(1 + base**(smaller - larger)): no overflow. The larger is picked by a where, not
    by maximum, so every derivative is that of the branch's smooth formula (at a tie the second
    derivative is 0.25, as in PyTorch); equal infinities give themselves, not inf - inf."""
    x1, x2 = fnp._float_pair(x1, x2)
    first = fnp.greater_equal(x1, x2)
    gap = fnp.where(fnp.isinf(x1) & fnp.equal(x1, x2), 0.0, fnp.subtract(x2, x1))  # x2 - x1, 0 for equal infinities
    return fnp.where(first, x1, x2) + fnp.log1p(exp(fnp.where(first, gap, -gap))) / log_scale


def logaddexp(x1, x2):
    """log(exp(x1) + exp(x2)) without overflow."""
    return _log_add(x1, x2, fnp.exp, 1.0)


def logaddexp2(x1, x2):
    return _log_add(x1, x2, exp2, math.log(2))


def exp2(x):
    x = fnp._float_arg(x)
    return fnp.power(np.asarray(2, x.dtype), x)


def cbrt(x):
    x = fnp._float_arg(x)
    return fnp.sign(x) * fnp.power(fnp.abs(x), 1.0 / 3.0)


def signbit(x):
    """True where the sign bit is set, -0.0 included (read from the bits)."""
    x = fnp.asarray(x)
    if dtypes.is_complex(x.dtype):
        raise TypeError(f"signbit is defined for real numbers only, not {x.dtype}")
    if dtypes.is_float(x.dtype):
        as_int = {2: dtypes.int16, 4: dtypes.int32, 8: dtypes.int64}[x.dtype.itemsize]
        return fnp.less(bind(prng.bitcast_p, x, dtype=as_int), 0)
    return fnp.less(x, 0) if x.dtype.kind == "i" else fnp.zeros(x.shape, dtypes.bool_, device=x.device)


def copysign(x1, x2):
    """|x1| with x2's sign bit; the result takes both operands' promoted float dtype (NumPy's)."""
    x1, x2 = fnp._float_pair(x1, x2)
    return fnp.where(signbit(x2), -fnp.abs(x1), fnp.abs(x1))


def deg2rad(x):
    return fnp.multiply(fnp._float_arg(x), math.pi / 180)


def rad2deg(x):
    return fnp.multiply(fnp._float_arg(x), 180 / math.pi)


radians, degrees = deg2rad, rad2deg


def fabs(x):
    return fnp.abs(fnp._float_arg(x))


def fmax(x1, x2):
    """maximum that ignores a NaN when the other operand is a number."""
    x1, x2 = fnp._array_pair(x1, x2)
    return fnp.where(fnp.isnan(x2), x1, fnp.where(fnp.isnan(x1), x2, fnp.maximum(x1, x2)))


def fmin(x1, x2):
    x1, x2 = fnp._array_pair(x1, x2)
    return fnp.where(fnp.isnan(x2), x1, fnp.where(fnp.isnan(x1), x2, fnp.minimum(x1, x2)))


def fmod(x1, x2):
    """C's fmod: the remainder takes the sign of the dividend (remainder takes the divisor's). Of
    floats, the remainder of the magnitudes (exact, as both are >= 0: fmod(1, -inf) is 1, not
    remainder's -inf) with the dividend's sign bit (fmod(0, -2) is +0, fmod(-0, 2) is -0)."""
    x1, x2 = fnp._array_pair(x1, x2)
    if dtypes.is_float(x1.dtype):
        return _float_fmod(x1, x2)
    rem = fnp.remainder(x1, x2)
    flip = fnp.not_equal(rem, 0) & fnp.not_equal(signbit(x1), signbit(x2))
    return fnp.where(flip, rem - x2, rem)


@custom_jvp
def _float_fmod(x1, x2):
    return copysign(fnp.remainder(fnp.abs(x1), fnp.abs(x2)), x1)


def _float_fmod_jvp(primals, tangents):
    """x1 - trunc(x1 / x2) x2 away from the jumps: slope 1 in x1 (also where the remainder is 0, where the
    composed |.| and copysign would give 0), -trunc(x1 / x2) in x2 (PyTorch's and JAX's rem)."""
    (x1, x2), (t1, t2) = primals, tangents
    return _float_fmod(x1, x2), t1 - fnp.trunc(x1 / x2) * t2


_float_fmod.defjvp(_float_fmod_jvp)


def heaviside(x1, x2):
    x1 = fnp._float_arg(x1)
    x1, x2 = fnp._pair(x1, x2)
    step = fnp.where(fnp.less(x1, 0), np.zeros((), x1.dtype), np.ones((), x1.dtype))
    return fnp.where(fnp.isnan(x1), x1, fnp.where(fnp.equal(x1, 0), x2, step))


def hypot(x1, x2):
    """sqrt(x1^2 + x2^2), scaled by the larger magnitude so it neither overflows nor underflows. The
    larger is picked by a where, so derivatives of any order are those of sqrt(x1^2 + x2^2)."""
    x1, x2 = fnp._float_pair(x1, x2)
    a, b = fnp.abs(x1), fnp.abs(x2)
    first = fnp.greater_equal(a, b)
    big, small = fnp.where(first, a, b), fnp.where(first, b, a)
    ratio = small / fnp.where(fnp.equal(big, 0), 1.0, big)
    out = big * fnp.sqrt(1 + ratio * ratio)
    return fnp.where(fnp.isinf(a) | fnp.isinf(b), np.inf, out)


def float_power(x1, x2):
    return fnp.power(fnp.astype(x1, dtypes.float64), fnp.astype(x2, dtypes.float64))


def ldexp(x1, x2):
    x1 = fnp._float_arg(x1)
    return x1 * exp2(fnp.astype(fnp._arrays(x1, x2)[1], x1.dtype))


def rint(x):
    return fnp.round(fnp._float_arg(x))


def around(a, decimals: int = 0):
    return fnp.round(a, decimals)


def fix(x):
    return fnp.trunc(fnp._float_arg(x))


def modf(x):
    """(fractional, integral) parts, both with x's sign (NumPy's)."""
    x = fnp._float_arg(x)
    whole = fnp.trunc(x)
    negative = signbit(x)
    frac = fnp.where(negative, -(whole - x), x - whole)  # -0.0 at negative integers; slope 1 on both sides
    zero = fnp.where(negative, np.asarray(-0.0, x.dtype), np.asarray(0.0, x.dtype))
    return fnp.where(fnp.isinf(x), zero, frac), whole


def divmod(x1, x2):  # noqa: A001  (NumPy's name)
    """(floor_divide, remainder) in one call, as NumPy's divmod."""
    return fnp.floor_divide(x1, x2), fnp.remainder(x1, x2)


def isposinf(x):
    x = fnp.asarray(x)
    return fnp.isinf(x) & (x > 0)


def isneginf(x):
    x = fnp.asarray(x)
    return fnp.isinf(x) & (x < 0)


def sinc(x):
    """sin(pi x) / (pi x), 1 at 0, where its derivatives of every order are the Maclaurin
    series' (JAX's rule: the quotient's would be 0 / 0)."""
    x = fnp._float_arg(x)
    zero = fnp.equal(x, 0)
    y = math.pi * fnp.where(zero, np.ones((), x.dtype), x)
    return fnp.where(zero, _sinc_at_zero(0, x), fnp.sin(y) / y)


@functools.partial(custom_jvp, nondiff_argnums=(0,))
def _sinc_at_zero(k: int, x):
    """sinc's k-th derivative at 0, shaped as x: (-1)^(k/2) pi^k / (k + 1) for even k, 0 for odd;
    its derivative is the next one."""
    return fnp.full_like(x, 0.0 if k % 2 else (-1) ** (k // 2) * math.pi ** k / (k + 1))


def _sinc_at_zero_jvp(k, primals, tangents):
    (x,), (t,) = primals, tangents
    return _sinc_at_zero(k, x), _sinc_at_zero(k + 1, x) * t


_sinc_at_zero.defjvp(_sinc_at_zero_jvp)


def nan_to_num(x, copy: bool = True, nan: float = 0.0, posinf: float | None = None, neginf: float | None = None):
    x = fnp.asarray(x)
    if not dtypes.is_float(x.dtype):
        return x
    info = finfo(x.dtype)
    x = fnp.where(fnp.isnan(x), np.asarray(nan, x.dtype), x)
    x = fnp.where(fnp.isinf(x) & (x > 0), np.asarray(info.max if posinf is None else posinf, x.dtype), x)
    return fnp.where(fnp.isinf(x) & (x < 0), np.asarray(info.min if neginf is None else neginf, x.dtype), x)


def angle(z, deg: bool = False):
    """The argument of each complex number, atan2(imag, real) (whose gradient at 0 is 0, PyTorch's); 0
    or pi for reals (NumPy), with a zero gradient."""
    z = fnp._float_arg(z)
    if dtypes.is_complex(z.dtype):
        out = fnp.arctan2(fnp.imag(z), fnp.real(z))
    else:
        out = fnp.where(fnp.less(z, 0), np.asarray(math.pi, z.dtype), np.zeros((), z.dtype))
    return out * (180.0 / math.pi) if deg else out


def iscomplexobj(x) -> bool:
    return dtypes.is_complex(fnp.asarray(x).dtype)


def isrealobj(x) -> bool:
    return not iscomplexobj(x)


def isreal(x):
    """True where the imaginary part is zero (everywhere, for a real array)."""
    return fnp.equal(fnp.imag(x), 0)


def iscomplex(x):
    """True where the imaginary part is nonzero."""
    return fnp.not_equal(fnp.imag(x), 0)


def positive(x):
    return fnp.asarray(x)


def bitwise_not(x):
    return fnp.invert(x)


bitwise_invert = bitwise_not


def promote_types(type1, type2) -> np.dtype:
    return dtypes.promote(dtypes.canonicalize(type1), dtypes.canonicalize(type2))


def nextafter(x1, x2):
    """The next representable float after x1 toward x2 (IEEE's nextafter): one step of the bit
    pattern read as an integer (+1 moves away from zero for either sign); x2 where they are equal
    (so -0 toward +0 is +0), the smallest subnormal off zero, NaN where either is NaN."""
    x1, x2 = fnp._float_pair(x1, x2)
    as_int = np.dtype(f"int{8 * x1.dtype.itemsize}")
    bits = bind(prng.bitcast_p, x1, dtype=as_int)
    away = fnp.equal(fnp.greater(x2, x1), fnp.greater(x1, 0))
    stepped = bind(prng.bitcast_p, fnp.where(away, bits + 1, bits - 1), dtype=x1.dtype)
    tiny = bind(prng.bitcast_p, fnp.ones((), as_int, device=x1.device), dtype=x1.dtype)
    out = fnp.where(fnp.equal(x1, 0), fnp.where(fnp.greater(x2, x1), tiny, -tiny), stepped)
    out = fnp.where(fnp.equal(x1, x2), x2, out)
    return fnp.where(fnp.isnan(x1) | fnp.isnan(x2), fnp.nan, out)


_PYTHON_SCALARS = (bool, int, float, complex)


def result_type(*arrays_and_dtypes) -> np.dtype:
    """The dtype binary operations on these would give (Python scalars are weak)."""
    out = None
    for x in arrays_and_dtypes:
        if isinstance(x, _PYTHON_SCALARS):
            continue
        d = dtypes.canonicalize(x) if isinstance(x, (np.dtype, type, str, ScalarType)) else fnp.asarray(x).dtype
        out = d if out is None else dtypes.promote(out, d)
    if out is None:
        scalars = [x for x in arrays_and_dtypes if isinstance(x, _PYTHON_SCALARS)]
        return dtypes.scalar_dtype(scalars[-1]) if scalars else dtypes.default_float
    for x in arrays_and_dtypes:
        if isinstance(x, _PYTHON_SCALARS) and fnp._weak(x, out) is None:
            out = dtypes.promote(out, fnp._scalar_result_dtype(x, out))
    return out


def can_cast(from_, to, casting: str = "safe") -> bool:
    return bool(np.can_cast(fnp.asarray(from_).dtype if isinstance(from_, ArrayBase) else from_,
                            dtypes.canonicalize(to), casting))


class FInfo(NamedTuple):
    """Machine limits of a float dtype as Python numbers (the Array API's finfo; NumPy's gives
    NumPy scalars, which are not weak beside an array of another dtype)."""
    bits: int
    eps: float
    max: float
    min: float
    smallest_normal: float
    tiny: float
    resolution: float
    precision: int
    dtype: np.dtype


def finfo(dtype) -> FInfo:
    """Machine limits of a float dtype, bfloat16 included (from ml_dtypes' finfo)."""
    dt = fnp.asarray(dtype).dtype if isinstance(dtype, ArrayBase) else dtypes.canonicalize(dtype)
    info = ml_dtypes.finfo(dt)  # of a complex dtype: its parts' (the standard's dtype is the real one)
    return FInfo(int(info.bits), float(info.eps), float(info.max), float(info.min), float(info.smallest_normal),
                 float(info.tiny), float(info.resolution), int(info.precision), np.dtype(dtypes.real_dtype(dt)))


# jnp.ndarray (jax.Array): the type isinstance checks ask for; funcgrad's values under every
# transform (Arrays and the tracers grad, jit and vmap pass) derive from ArrayBase
ndarray = ArrayBase

# NumPy's abstract scalar types, for issubdtype(x.dtype, fnp.floating) and the like
generic, number, integer, signedinteger, unsignedinteger = (np.generic, np.number, np.integer, np.signedinteger,
                                                            np.unsignedinteger)
inexact, floating, complexfloating = np.inexact, np.floating, np.complexfloating


def iinfo(int_type):
    dt = fnp.asarray(int_type).dtype if isinstance(int_type, ArrayBase) else dtypes.canonicalize(int_type)
    return np.iinfo(dt)


def dtype(obj) -> np.dtype:
    return dtypes.canonicalize(obj)


def issubdtype(arg1, arg2) -> bool:
    """NumPy's issubdtype, with bfloat16 counted as a floating type (as in JAX)."""
    d = dtypes.canonicalize(arg1)
    if d in dtypes.low_precision and arg2 in (np.floating, np.inexact, np.number, np.generic):
        return True
    return bool(np.issubdtype(d, arg2))


def isscalar(element) -> bool:
    """Python and NumPy scalars, and 0-d arrays (JAX's rule)."""
    if isinstance(element, ArrayBase):
        return element.ndim == 0
    return bool(np.isscalar(element))


def gcd(x1, x2):
    a, b = _concrete(x1, "gcd"), _concrete(x2, "gcd")
    return Array(np.gcd(a, b))


def lcm(x1, x2):
    a, b = _concrete(x1, "lcm"), _concrete(x2, "lcm")
    return Array(np.lcm(a, b))


def frexp(x):
    mantissa, exponent = np.frexp(_concrete(fnp._float_arg(x), "frexp"))
    return Array(mantissa), Array(exponent.astype(np.int32))


def spacing(x):
    """The distance from x to the next float away from zero, with x's sign (NumPy's spacing): the
    gap between adjacent floats at x."""
    x = fnp._float_arg(x)
    size = fnp.abs(x)
    gap = nextafter(size, fnp.inf) - size
    return fnp.where(x < 0, -gap, gap)  # -0 has a positive spacing, as in NumPy


def bitwise_count(x):
    """The number of 1 bits in |x| of an integer array (NumPy 2's bitwise_count), as uint8: the
    classic parallel sum over 2-, 4- and 8-bit fields, then the bytes summed."""
    x = fnp.asarray(x)
    if x.dtype.kind not in "biu":
        raise TypeError(f"bitwise_count takes integers or booleans, got {x.dtype}")
    if x.dtype == dtypes.bool_:
        return fnp.astype(x, dtypes.uint8)
    width = 8 * x.dtype.itemsize
    unsigned = np.dtype(f"uint{width}")
    v = fnp.astype(fnp.abs(x) if x.dtype.kind == "i" else x, unsigned)
    m1, m2, m4 = (int(pattern * (2 ** width - 1) // 255) for pattern in (0x55, 0x33, 0x0F))
    v = v - ((v >> 1) & m1)
    v = (v & m2) + ((v >> 2) & m2)
    v = (v + (v >> 4)) & m4
    total = fnp.zeros(x.shape, unsigned, device=x.device)
    for byte in range(width // 8):
        total = total + ((v >> (8 * byte)) & 0xFF)
    return fnp.astype(total, dtypes.uint8)
