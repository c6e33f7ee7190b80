"""Elementwise arithmetic, comparisons, logic and math functions: one primitive each, operands
promoted first."""
from __future__ import annotations

import numpy as np

from .. import dtypes
from ..array import ArrayBase
from ..ops import elementwise as E
from ..ops import stop_gradient_p
from ..trace import bind
from ._creation import _float_arg, _float_pair, _is_scalar, _pair, asarray, astype, follow, zeros
from ..dtypes import bool_

__all__ = [
    "abs", "absolute", "add", "arccos", "arccosh", "arcsin", "arcsinh", "arctan", "arctan2", "arctanh",
    "bitwise_and", "bitwise_or", "bitwise_xor", "ceil", "clip", "conj", "conjugate", "cos", "cosh", "divide",
    "equal", "exp", "expm1", "floor", "floor_divide", "greater", "greater_equal", "imag", "invert", "isfinite",
    "isinf", "isnan", "left_shift", "less", "less_equal", "log", "log10", "log1p", "log2", "logical_and",
    "logical_not", "logical_or", "logical_xor", "maximum", "minimum", "mod", "multiply", "negative", "not_equal",
    "power", "real", "reciprocal", "remainder", "right_shift", "round", "sign", "sin", "sinh", "sqrt", "square",
    "stop_gradient", "subtract", "tan", "tanh", "true_divide", "trunc", "where",
]


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
def _rounding_fn(prim, name):
    def fn(x):
        x = asarray(x)
        return x if x.dtype.kind in "iub" else bind(prim, x)
    fn.__name__ = name
    fn.__doc__ = f"Elementwise {name}; integers are already whole and keep their dtype (Array API, PyTorch)."
    return fn


floor = _rounding_fn(E.floor_p, "floor")
ceil = _rounding_fn(E.ceil_p, "ceil")
trunc = _rounding_fn(E.trunc_p, "trunc")
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
    if not dtypes.is_inexact(_dtype(x)) and not dtypes.is_inexact(_dtype(y)):
        x, y = _float_arg(x), (float(y) if _is_scalar(y) else _float_arg(y))
    return bind(E.div_p, x, y)


true_divide = divide


def _dtype(x):
    return x.dtype if hasattr(x, "dtype") else dtypes.scalar_dtype(x)


def power(x, y):
    x = x if _is_scalar(x) else asarray(x)  # host data keeps the integer rules below
    if _is_scalar(y) and isinstance(x, ArrayBase):
        y = y.item() if isinstance(y, np.generic) else y
        if dtypes.scalar_category(y) <= dtypes._category(x.dtype) or isinstance(y, int):
            if isinstance(y, int) and not dtypes.is_inexact(x.dtype) and y < 0:
                raise ValueError("integers to negative integer powers are not allowed")
            return bind(E.pow_p, x, y)  # an exponent that keeps x's dtype
    return bind(E.pow_p, *_pair(x, y))


def arctan2(y, x):
    return bind(E.arctan2_p, *_float_pair(y, x))


def round(x, decimals: int = 0):  # noqa: A001
    """Half to even, as NumPy's; a complex number's parts are rounded apart (NumPy's, JAX's and the
    Array API standard's)."""
    x = asarray(x)
    if dtypes.is_complex(x.dtype):
        return bind(E.complex_p, round(real(x), decimals), round(imag(x), decimals))
    if not dtypes.is_inexact(x.dtype):
        return x if decimals >= 0 else _round_integers(x, 10 ** -int(decimals))
    if decimals == 0:
        return bind(E.round_p, x)
    scale = 10.0 ** decimals
    return divide(bind(E.round_p, multiply(x, scale)), scale)


def _round_integers(x, step: int):
    """Integers to the nearest multiple of step, ties to the even multiple (NumPy's round with
    negative decimals: round(15, -1) == 20, round(25, -1) == 20), in their own dtype; narrow ones are
    computed in int64, where the multiple below -128 (-200 for step 100) does not wrap."""
    if step > np.iinfo(x.dtype).max:  # every value is nearer 0 than any other multiple
        return multiply(x, 0)
    wide = astype(x, dtypes.int64) if x.dtype.itemsize < 8 else x
    quotient = floor_divide(wide, step)
    below = multiply(quotient, step)
    twice_rest = multiply(subtract(wide, below), 2)
    up = logical_or(greater(twice_rest, step), logical_and(equal(twice_rest, step), equal(remainder(quotient, 2), 1)))
    return astype(where(up, add(below, step), below), x.dtype)


def where(condition, x, y):
    """x where condition holds, else y, elementwise (funcgrad.numpy.where, in _statistics, adds the
    one-argument form)."""
    condition, x, y = follow(condition, x, y)
    c = astype(condition, bool_)
    x, y = _pair(x, y)
    return bind(E.select_p, c, x, y)


def clip(x, min=None, max=None, *, a_min=None, a_max=None):  # noqa: A002
    """Clamp to [min, max] (a_min and a_max: NumPy's older names); the gradient flows where
    min <= x <= max (PyTorch's clamp)."""
    if a_min is not None or a_max is not None:
        if min is not None and a_min is not None or max is not None and a_max is not None:
            raise TypeError("clip: give each bound once, as min/max or as a_min/a_max")
        min, max = (a_min if min is None else min), (a_max if max is None else max)  # noqa: A001
    x = asarray(x)
    if min is None and max is None:
        return x
    lo = hi = None
    if min is not None:
        x, lo = _pair(x, min)  # a float bound lifts integers to the default float (PyTorch's clamp)
    if max is not None:
        x, hi = _pair(x, max)
    dtype = x.dtype
    for bound in (lo, hi):
        dtype = dtypes.promote(dtype, bound.dtype) if isinstance(bound, ArrayBase) else dtype
    lo, hi = (astype(b, dtype) if isinstance(b, ArrayBase) else b for b in (lo, hi))
    return bind(E.clip_p, astype(x, dtype), lo, hi)


def conj(x):
    """The complex conjugate; a real array is its own."""
    x = asarray(x)
    return bind(E.conj_p, x) if dtypes.is_complex(x.dtype) else x


conjugate = conj


def real(x):
    """The real part (float32 for complex64); a real array is its own."""
    x = asarray(x)
    return bind(E.real_p, x) if dtypes.is_complex(x.dtype) else x


def imag(x):
    """The imaginary part; zeros for a real array."""
    x = asarray(x)
    return bind(E.imag_p, x) if dtypes.is_complex(x.dtype) else zeros(x.shape, x.dtype, device=x.device)


def _abs_squared(x):
    """|x|^2 elementwise: real for a complex x (real^2 + imag^2, no square root to differentiate)."""
    return add(square(real(x)), square(imag(x))) if dtypes.is_complex(x.dtype) else square(x)


def stop_gradient(x):
    """x, with a zero derivative under every transform (jax.lax.stop_gradient, torch .detach())."""
    from ..tree import tree_map
    return tree_map(lambda leaf: bind(stop_gradient_p, asarray(leaf)), x)
