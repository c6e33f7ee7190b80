"""Elementwise primitives. Each is one definition: its NumPy implementation, its scalar expression
(which the CPU fusion and the CUDA code generator render), its shape rule, and one derivative
formula that serves both the JVP and the VJP."""
from __future__ import annotations

import math
import operator

import numpy as np

from .. import dtypes
from ..cpu.special import erf as _erf_impl
from ..trace import is_differentiated
from . import scalar as X
from .core import Primitive, ShapedArray, defjvp, defvjp, dtype_of, real_only, shape_of
from .layout import batch_elementwise, broadcast_like, broadcast_shapes, unbroadcast


# ---- shape rules ----------------------------------------------------------------------------------
def _broadcast(args) -> tuple:
    return broadcast_shapes(*(a.shape for a in args if isinstance(a, ShapedArray)))


def _weak(a):
    """An operand as NumPy's dtype resolution takes it: a dtype, or a Python scalar's type (weak)."""
    if isinstance(a, ShapedArray):
        return a.dtype
    return np.dtype(np.bool_) if isinstance(a, bool) else type(a)


def ufunc_shape(ufunc: np.ufunc):
    """The broadcast shape, and the dtype NumPy's ufunc gives these operands."""
    def rule(*args, **params):
        return ShapedArray(_broadcast(args), ufunc.resolve_dtypes(tuple(map(_weak, args)) + (None,))[-1])
    return rule


def _same_dtype(x, **params):
    """Functions that keep their operand's dtype (the activations, which NumPy lacks as ufuncs)."""
    return ShapedArray(x.shape, x.dtype)


def _select_shape(c, x, y):
    """np.where's: the broadcast shape and NumPy's promotion of the two branches."""
    dtype = np.result_type(*(a.dtype if isinstance(a, ShapedArray) else a for a in (x, y)))
    return ShapedArray(_broadcast((c, x, y)), dtype)


def _clip_shape(x, lo, hi):
    """np.clip's: maximum with the lower bound, then minimum with the upper (ufunc promotion)."""
    out = x
    for ufunc, bound in ((np.maximum, lo), (np.minimum, hi)):
        if bound is not None:
            out = ufunc_shape(ufunc)(out, bound)
    return out


def _float_only(x, **params):
    if not dtypes.is_float(x.dtype):
        raise TypeError(f"needs a floating-point array, got {x.dtype}")
    return ShapedArray(x.shape, x.dtype)


def _round_shape(x):
    """np.round keeps an integer dtype; a boolean rounds as np.rint does, to float16."""
    return ShapedArray(x.shape, np.rint.resolve_dtypes((x.dtype, None))[-1] if x.dtype == np.bool_ else x.dtype)


def _softplus_shape(x):
    return ufunc_shape(np.logaddexp)(x, x)  # its implementation: logaddexp(0, x)


def _convert_shape(x, *, dtype):
    return ShapedArray(x.shape, dtype)


# ---- how a primitive is made -------------------------------------------------------------------------
def _elementwise(name: str, impl, scalar, shape_rule=None, differentiable: bool = True,
                 fresh: bool = True, real_numbers: bool = False) -> Primitive:
    shape_rule = shape_rule or ufunc_shape(impl)
    if real_numbers:
        impl, shape_rule = real_only(name, impl), real_only(name, shape_rule)
    return Primitive(name, impl, shape_rule=shape_rule, batch_rule=batch_elementwise, cuda="elementwise",
                     scalar=scalar, fresh=fresh, differentiable=differentiable)


def _unary(name: str, impl, scalar, deriv=None, shape_rule=None, real_numbers: bool = False,
           fused_vjp: tuple[Primitive, str] | None = None) -> Primitive:
    """deriv(x, out) -> d out / d x, built from primitives; None: not differentiable. fused_vjp:
    g * deriv as one primitive (_fused_vjp), which first-order backward passes bind."""
    prim = _elementwise(name, impl, scalar, shape_rule, differentiable=deriv is not None, real_numbers=real_numbers)
    if deriv is not None:
        defvjp(prim, _first_order(fused_vjp, lambda g, out, x: mul_p(g, deriv(x, out))))
        defjvp(prim, lambda t, out, x: mul_p(t, deriv(x, out)))
    return prim


class _NumPyFunctions:
    """What a derivative formula calls when it runs on NumPy arrays (scalar.py's names)."""

    @staticmethod
    def where(c, a, b):
        """np.where; where(c, a, 0) with a finite as a * c, which runs several times faster on
        large arrays (14 ms against 2 for relu's 3.2M-element cotangent; inf * 0 would be NaN)."""
        if isinstance(b, int) and b == 0 and isinstance(a, np.ndarray) and np.isfinite(a).all():
            return a * c
        return np.where(c, a, b)


def _fused_vjp(name: str, formula, of: str, real_numbers: bool = False) -> tuple[Primitive, str]:
    """PyTorch's tanh_backward and kin: g * f'(x) as one elementwise primitive of (g, r), r being
    the primitive's input or output (of: "x" or "out"). formula(g, r, F) is written once and runs
    on NumPy arrays (F: _NumPyFunctions) and as the scalar expression of jit's fused kernels and
    the CUDA kernels (F: scalar.py). Eager backward passes bind it once instead of the three
    primitives of the composed derivative, each a dispatch that costs more than its arithmetic on
    small arrays. It has no rules of its own: where the cotangent or the residual is differentiated
    again (a Hessian), the rule binds the composed form (_first_order)."""
    def impl(g, r):
        out = formula(g, r, _NumPyFunctions)
        dtype = g.dtype if g.dtype == r.dtype else np.result_type(g.dtype, r.dtype)
        return out if out.dtype == dtype else out.astype(dtype)
    prim = _elementwise(name + "_vjp", impl, lambda g, r: formula(g, r, X), ufunc_shape(np.multiply),
                        differentiable=False, real_numbers=real_numbers)
    return prim, of


def _first_order(fused: tuple[Primitive, str] | None, composed):
    """The VJP rule: the fused primitive, unless something in it is being differentiated."""
    if fused is None:
        return composed
    prim, of = fused

    def rule(g, out, x):
        r = x if of == "x" else out
        if is_differentiated(g) or is_differentiated(r):
            return composed(g, out, x)
        return prim(g, r)
    return rule


def _binary(name: str, impl, scalar, dx=None, dy=None, real_numbers: bool = False, shape_rule=None) -> Primitive:
    """dx(g, out, x, y) / dy(...) -> cotangent before un-broadcasting; None: not differentiable."""
    prim = _elementwise(name, impl, scalar, shape_rule, differentiable=dx is not None, real_numbers=real_numbers)
    if dx is not None:
        defvjp(prim, lambda g, out, x, y: unbroadcast(dx(g, out, x, y), shape_of(x)),
               lambda g, out, x, y: unbroadcast(dy(g, out, x, y), shape_of(y)))
        # Tangents are linear: the same formula maps a tangent forward, without un-broadcasting.
        defjvp(prim, lambda t, out, x, y: broadcast_like(dx(t, out, x, y), out),
               lambda t, out, x, y: broadcast_like(dy(t, out, x, y), out))
    return prim


def zero(dtype) -> np.ndarray:
    return np.zeros((), dtype)


def const(value, dtype) -> np.ndarray:
    return np.asarray(value, dtype)


# ---- arithmetic ---------------------------------------------------------------------------------------
add_p = _binary("add", np.add, operator.add, lambda g, o, x, y: g, lambda g, o, x, y: g)
sub_p = _binary("sub", np.subtract, operator.sub, lambda g, o, x, y: g, lambda g, o, x, y: neg_p(g))
mul_p = _binary("mul", np.multiply, operator.mul, lambda g, o, x, y: mul_p(g, y), lambda g, o, x, y: mul_p(g, x))
div_p = _binary("div", np.true_divide, operator.truediv, lambda g, o, x, y: div_p(g, y),
                lambda g, o, x, y: neg_p(mul_p(g, div_p(o, y))))


def _pow_dx(g, out, x, y):
    if not hasattr(y, "shape"):  # a constant Python exponent
        if y == 0:
            return mul_p(g, zero(g.dtype))
        if y == 1:
            return g
        power = x if y == 2 else pow_p(x, y - 1)
        return mul_p(g, mul_p(const(y, g.dtype), power))
    # 0 ** 0 has gradient 0 (PyTorch, JAX). Only that point is masked, and its exponent replaced
    # by 1 first, so neither the value nor any higher derivative meets 0 * inf elsewhere.
    origin = and_p(eq_p(y, 0), eq_p(x, 0))
    safe_y = select_p(origin, const(1, y.dtype), y)
    d = mul_p(safe_y, pow_p(x, sub_p(safe_y, const(1, y.dtype))))
    return mul_p(g, select_p(origin, zero(d.dtype), d))


def _pow_dy(g, out, x, y):
    # d/dy x**y = x**y log x, defined as 0 where x == 0 (PyTorch's and JAX's convention).
    x_is_zero = eq_p(x, 0)
    safe_x = select_p(x_is_zero, const(1, dtype_of(x)), x)
    return mul_p(g, mul_p(out, select_p(x_is_zero, zero(dtype_of(out)), log_p(safe_x))))


def _power(x, y):
    """np.power, except integers to negative integer exponents, which NumPy refuses (its only
    ValueError here, so every other call pays nothing): PyTorch's and JAX's values, as jit's fused
    kernels compute them (1 for a base of 1, +-1 by the exponent's parity for -1, 0 for any other
    base, 0 included)."""
    try:
        return np.power(x, y)
    except ValueError:
        negative = np.less(y, 0)
        powers = np.power(x, np.where(negative, 0, y))
        unit = np.where(np.equal(x, -1), np.where(np.equal(np.remainder(y, 2), 0), 1, -1), np.equal(x, 1))
        return np.where(negative, unit, powers).astype(powers.dtype, copy=False)


def _is_integer(a) -> bool:
    dtype = a.dtype if isinstance(a, X.Expr) else None
    return isinstance(a, int) if dtype is None else dtype.kind == "i"


def _power_scalar(x, y):
    """x ** y in jit's and the GPU's kernels, with _power's values for negative integer exponents."""
    if not (_is_integer(x) and _is_integer(y)):
        return x ** y
    negative = y < 0
    unit = X.where(x == -1, 1 - 2 * (y & 1), X.where(x == 1, 1, 0))
    return X.where(negative, unit, x ** X.where(negative, 0, y))


pow_p = _binary("pow", _power, _power_scalar, _pow_dx, _pow_dy, shape_rule=ufunc_shape(np.power))


def _tie_mask(winner, tie, dtype):
    """1 where this argument wins, 0.5 on ties (the gradient is shared), 0 elsewhere."""
    return add_p(convert_p(winner, dtype=dtype), mul_p(convert_p(tie, dtype=dtype), const(0.5, dtype)))


maximum_p = _binary("maximum", np.maximum, X.maximum,
                    lambda g, o, x, y: mul_p(g, _tie_mask(gt_p(x, y), eq_p(x, y), g.dtype)),
                    lambda g, o, x, y: mul_p(g, _tie_mask(lt_p(x, y), eq_p(x, y), g.dtype)), real_numbers=True)
minimum_p = _binary("minimum", np.minimum, X.minimum,
                    lambda g, o, x, y: mul_p(g, _tie_mask(lt_p(x, y), eq_p(x, y), g.dtype)),
                    lambda g, o, x, y: mul_p(g, _tie_mask(gt_p(x, y), eq_p(x, y), g.dtype)), real_numbers=True)


def _atan2_common(x, y):
    """a^2 + b^2, with 1 at the origin: there both partials are 0 / 0, and PyTorch takes them as 0
    (JAX gives NaN)."""
    square = add_p(mul_p(x, x), mul_p(y, y))
    return add_p(square, convert_p(eq_p(square, const(0, square.dtype)), dtype=square.dtype))


# arctan2(a, b): d/da = b / (a^2 + b^2), d/db = -a / (a^2 + b^2)
arctan2_p = _binary("arctan2", np.arctan2, X.arctan2,
                    lambda g, o, a, b: mul_p(g, div_p(b, _atan2_common(a, b))),
                    lambda g, o, a, b: neg_p(mul_p(g, div_p(a, _atan2_common(a, b)))), real_numbers=True)
remainder_p = _binary("remainder", np.remainder, operator.mod, lambda g, o, x, y: g,
                      lambda g, o, x, y: neg_p(mul_p(g, floor_p(div_p(x, y)))), real_numbers=True)
floor_divide_p = _binary("floor_divide", np.floor_divide, operator.floordiv, real_numbers=True)


# ---- comparisons and logic (no gradient) -----------------------------------------------------------------
def _truth(x):
    return x != 0


eq_p = _binary("eq", np.equal, operator.eq)
ne_p = _binary("ne", np.not_equal, operator.ne)
lt_p = _binary("lt", np.less, operator.lt, real_numbers=True)
le_p = _binary("le", np.less_equal, operator.le, real_numbers=True)
gt_p = _binary("gt", np.greater, operator.gt, real_numbers=True)
ge_p = _binary("ge", np.greater_equal, operator.ge, real_numbers=True)
and_p = _binary("and", np.logical_and, lambda x, y: _truth(x) & _truth(y))
or_p = _binary("or", np.logical_or, lambda x, y: _truth(x) | _truth(y))
xor_p = _binary("xor", np.logical_xor, lambda x, y: _truth(x) ^ _truth(y))
bitwise_and_p = _binary("bitwise_and", np.bitwise_and, operator.and_)
bitwise_or_p = _binary("bitwise_or", np.bitwise_or, operator.or_)
bitwise_xor_p = _binary("bitwise_xor", np.bitwise_xor, operator.xor)
left_shift_p = _binary("left_shift", np.left_shift, operator.lshift)
right_shift_p = _binary("right_shift", np.right_shift, operator.rshift)
not_p = _unary("not", np.logical_not, lambda x: x == 0)
invert_p = _unary("invert", np.invert, lambda x: x == 0 if x.is_bool else ~x)
isnan_p = _unary("isnan", np.isnan, lambda x: X.isnan(x) if x.is_inexact else False)
isinf_p = _unary("isinf", np.isinf, lambda x: X.isinf(x) if x.is_inexact else False)
isfinite_p = _unary("isfinite", np.isfinite, lambda x: X.isfinite(x) if x.is_inexact else True)


def _sign_scalar(x):
    """np.sign: 1, -1, 0 for either zero, NaN for NaN; z / |z| for a complex z (0 at 0)."""
    if x.is_complex:
        return X.where(x == 0, 0, x / abs(x))
    return X.where(x > 0, 1, X.where(x < 0, -1, X.where(x == 0, 0, x)))


sign_p = _unary("sign", np.sign, _sign_scalar)
floor_p = _unary("floor", np.floor, lambda x: X.floor(x) if x.is_float else x)
ceil_p = _unary("ceil", np.ceil, lambda x: X.ceil(x) if x.is_float else x)
round_p = _unary("round", np.round, lambda x: X.rint(x) if x.is_float else x,  # half to even, as np.round
                 shape_rule=_round_shape, real_numbers=True)
trunc_p = _unary("trunc", np.trunc, lambda x: X.trunc(x) if x.is_float else x)


# ---- unary math -------------------------------------------------------------------------------------------
def _reciprocal_sqrt_one_minus_sq(x):
    return pow_p(sub_p(const(1, x.dtype), mul_p(x, x)), -0.5)


neg_p = _elementwise("neg", np.negative, operator.neg)
defvjp(neg_p, lambda g, out, x: neg_p(g))
defjvp(neg_p, lambda t, out, x: neg_p(t))

abs_p = _elementwise("abs", np.abs, abs)
exp_p = _unary("exp", np.exp, X.exp, lambda x, out: out)
expm1_p = _unary("expm1", np.expm1, X.expm1, lambda x, out: add_p(out, const(1, out.dtype)))
log_p = _unary("log", np.log, X.log, lambda x, out: reciprocal_p(x))
log1p_p = _unary("log1p", np.log1p, X.log1p, lambda x, out: reciprocal_p(add_p(x, const(1, x.dtype))))
log2_p = _unary("log2", np.log2, X.log2, lambda x, out: reciprocal_p(mul_p(x, const(math.log(2), x.dtype))))
log10_p = _unary("log10", np.log10, X.log10, lambda x, out: reciprocal_p(mul_p(x, const(math.log(10), x.dtype))))
sqrt_p = _unary("sqrt", np.sqrt, X.sqrt, lambda x, out: div_p(const(0.5, out.dtype), out))
square_p = _unary("square", np.square, lambda x: x * x, lambda x, out: mul_p(x, const(2, x.dtype)))
reciprocal_p = _unary("reciprocal", np.reciprocal, lambda x: 1 / x if x.is_inexact else X.where(abs(x) == 1, x, 0),
                      lambda x, out: neg_p(mul_p(out, out)))
sin_p = _unary("sin", np.sin, X.sin, lambda x, out: cos_p(x))
cos_p = _unary("cos", np.cos, X.cos, lambda x, out: neg_p(sin_p(x)))
tan_p = _unary("tan", np.tan, X.tan, lambda x, out: add_p(const(1, out.dtype), mul_p(out, out)))
tanh_p = _unary("tanh", np.tanh, X.tanh, lambda x, out: sub_p(const(1, out.dtype), mul_p(out, out)),
                fused_vjp=_fused_vjp("tanh", lambda g, out, F: g * (1 - out * out), of="out"))
sinh_p = _unary("sinh", np.sinh, X.sinh, lambda x, out: cosh_p(x))
cosh_p = _unary("cosh", np.cosh, X.cosh, lambda x, out: sinh_p(x))
arctan_p = _unary("arctan", np.arctan, X.arctan,
                  lambda x, out: reciprocal_p(add_p(const(1, x.dtype), mul_p(x, x))))
arcsin_p = _unary("arcsin", np.arcsin, X.arcsin, lambda x, out: _reciprocal_sqrt_one_minus_sq(x))
arccos_p = _unary("arccos", np.arccos, X.arccos, lambda x, out: neg_p(_reciprocal_sqrt_one_minus_sq(x)))
arcsinh_p = _unary("arcsinh", np.arcsinh, X.arcsinh,
                   lambda x, out: pow_p(add_p(mul_p(x, x), const(1, x.dtype)), -0.5))
arccosh_p = _unary("arccosh", np.arccosh, X.arccosh,
                   lambda x, out: pow_p(sub_p(mul_p(x, x), const(1, x.dtype)), -0.5))
arctanh_p = _unary("arctanh", np.arctanh, X.arctanh,
                   lambda x, out: reciprocal_p(sub_p(const(1, x.dtype), mul_p(x, x))))
erf_p = _unary("erf", _erf_impl, X.erf, lambda x, out: mul_p(const(2 / math.sqrt(math.pi), x.dtype),
                                                              exp_p(neg_p(mul_p(x, x)))), shape_rule=_float_only,
               real_numbers=True)


# ---- activations --------------------------------------------------------------------------------------------
def _sigmoid_impl(x):
    e = np.exp(-np.abs(x))  # never overflows
    return np.where(x >= 0, 1 / (1 + e), e / (1 + e)).astype(x.dtype, copy=False)


def _sigmoid_scalar(x):
    e = X.exp(-abs(x))
    return X.where(x >= 0, 1 / (1 + e), e / (1 + e))


def _softplus_impl(x):
    return np.logaddexp(np.zeros((), x.dtype), x)


sigmoid_p = _unary("sigmoid", _sigmoid_impl, _sigmoid_scalar,
                   lambda x, out: mul_p(out, sub_p(const(1, out.dtype), out)), shape_rule=_same_dtype,
                   real_numbers=True,
                   fused_vjp=_fused_vjp("sigmoid", lambda g, out, F: g * (out * (1 - out)), of="out", real_numbers=True))
softplus_p = _unary("softplus", _softplus_impl, lambda x: X.maximum(x, 0) + X.log1p(X.exp(-abs(x))),
                    lambda x, out: sigmoid_p(x), shape_rule=_softplus_shape, real_numbers=True)
relu_p = _unary("relu", lambda x: np.maximum(x, np.zeros((), x.dtype)), lambda x: X.maximum(x, 0),
                lambda x, out: convert_p(gt_p(x, zero(x.dtype)), dtype=x.dtype),  # 0 at 0, as PyTorch
                shape_rule=_same_dtype, real_numbers=True,
                fused_vjp=_fused_vjp("relu", lambda g, x, F: F.where(x > 0, g, 0), of="x", real_numbers=True))

_SQRT_2_OVER_PI = math.sqrt(2 / math.pi)
_GELU_C = 0.044715


def _gelu_impl(x, approximate):
    if approximate:
        inner = _SQRT_2_OVER_PI * (x + _GELU_C * x ** 3)
        return (0.5 * x * (1 + np.tanh(inner))).astype(x.dtype, copy=False)
    return (0.5 * x * (1 + _erf_impl(x * np.asarray(1 / math.sqrt(2), x.dtype)))).astype(x.dtype, copy=False)


def _gelu_scalar(x, *, approximate):
    if approximate:
        return 0.5 * x * (1 + X.tanh(_SQRT_2_OVER_PI * (x + _GELU_C * x * x * x)))
    return 0.5 * x * (1 + X.erf(x * (1 / math.sqrt(2))))


def _gelu_deriv(x, out, approximate):
    c = lambda v: const(v, x.dtype)  # noqa: E731
    if approximate:
        x2 = mul_p(x, x)
        th = tanh_p(mul_p(c(_SQRT_2_OVER_PI), add_p(x, mul_p(c(_GELU_C), mul_p(x2, x)))))
        dinner = mul_p(c(_SQRT_2_OVER_PI), add_p(c(1), mul_p(c(3 * _GELU_C), x2)))
        return add_p(mul_p(c(0.5), add_p(c(1), th)),
                     mul_p(mul_p(c(0.5), x), mul_p(sub_p(c(1), mul_p(th, th)), dinner)))
    cdf = mul_p(c(0.5), add_p(c(1), erf_p(mul_p(x, c(1 / math.sqrt(2))))))
    pdf = mul_p(c(1 / math.sqrt(2 * math.pi)), exp_p(mul_p(c(-0.5), mul_p(x, x))))
    return add_p(cdf, mul_p(x, pdf))


gelu_p = _elementwise("gelu", _gelu_impl, _gelu_scalar, _float_only)
defvjp(gelu_p, lambda g, out, x, approximate: mul_p(g, _gelu_deriv(x, out, approximate)))
defjvp(gelu_p, lambda t, out, x, approximate: mul_p(t, _gelu_deriv(x, out, approximate)))


# ---- selection and casting ---------------------------------------------------------------------------------------
select_p = _elementwise("select", np.where, X.where, _select_shape)  # select(cond, x, y) == where(cond, x, y)
defvjp(select_p, None,
       lambda g, out, c, x, y: unbroadcast(select_p(c, g, zero(g.dtype)), shape_of(x)),
       lambda g, out, c, x, y: unbroadcast(select_p(c, zero(g.dtype), g), shape_of(y)))
defjvp(select_p, None,
       lambda t, out, c, x, y: broadcast_like(select_p(c, t, zero(t.dtype)), out),
       lambda t, out, c, x, y: broadcast_like(select_p(c, zero(t.dtype), t), out))


def _clip(x, lo, hi):
    """np.clip as _clip_shape reads it, maximum with the lower bound then minimum with the upper:
    np.clip's own promotion made bfloat16 with Python-number bounds float32 (ml_dtypes 0.7)."""
    if lo is None and hi is None:
        return np.array(x)  # a copy, as np.clip's
    out = x if lo is None else np.maximum(x, lo)
    return out if hi is None else np.minimum(out, hi)


def _clip_scalar(x, lo, hi):
    if lo is not None:
        x = X.maximum(x, lo)
    return x if hi is None else X.minimum(x, hi)


def _in_range(x, lo, hi):
    inside = None
    if lo is not None:
        inside = ge_p(x, lo)
    if hi is not None:
        below = le_p(x, hi)
        inside = below if inside is None else and_p(inside, below)
    return inside


def _not_below(x, lo):
    return True if lo is None else ge_p(x, lo)


# PyTorch's clamp: the gradient flows to x where lo <= x <= hi, else to the bound that won.
clip_p = _elementwise("clip", _clip, _clip_scalar, _clip_shape, real_numbers=True)
defvjp(clip_p,
       lambda g, out, x, lo, hi: select_p(_in_range(x, lo, hi), g, zero(g.dtype)),
       lambda g, out, x, lo, hi: unbroadcast(select_p(lt_p(x, lo), g, zero(g.dtype)), shape_of(lo)),
       lambda g, out, x, lo, hi: unbroadcast(
           select_p(and_p(gt_p(x, hi), _not_below(x, lo)), g, zero(g.dtype)), shape_of(hi)))
defjvp(clip_p,
       lambda t, out, x, lo, hi: broadcast_like(select_p(_in_range(x, lo, hi), t, zero(t.dtype)), out),
       lambda t, out, x, lo, hi: broadcast_like(select_p(lt_p(x, lo), t, zero(t.dtype)), out),
       lambda t, out, x, lo, hi: broadcast_like(
           select_p(and_p(gt_p(x, hi), _not_below(x, lo)), t, zero(t.dtype)), out))


def _convert_impl(x, dtype):
    x = np.asarray(x)
    if dtypes.is_complex(x.dtype) and not dtypes.is_complex(dtype) and dtype != np.bool_:
        x = x.real  # a complex number becomes a real one by its real part (NumPy's, PyTorch's cast)
    if x.dtype == dtypes.bfloat16 and np.dtype(dtype).kind in "iu":
        x = x.astype(np.float32)  # as float16's and the GPU's casts: -2 -> 254 in uint8 (ml_dtypes 0.7's own gives 0)
    return x.astype(dtype, copy=False)


def _convert_scalar(x, *, dtype):
    if dtype == np.bool_:
        return _truth(x)
    return X.real(x) if x.is_complex and not dtypes.is_complex(dtype) else x


convert_p = _elementwise("convert", _convert_impl, _convert_scalar,
                         _convert_shape, fresh=False)  # a conversion to the same dtype is the input itself
defvjp(convert_p, lambda g, out, x, dtype: convert_p(g, dtype=dtype_of(x)))
defjvp(convert_p, lambda t, out, x, dtype: convert_p(t, dtype=dtype))

# ---- complex numbers ---------------------------------------------------------------------------------------
# Derivative rules follow JAX's convention: a rule maps a cotangent g to g * df/dz for a holomorphic f,
# and a function of z and conj(z) adds conj(g) * conj(df/dconj(z)) (the real-linear transpose). So
# conj's rule is conj, real's makes g complex, imag's is -i g. vjp.py conjugates complex cotangents
# at its boundary, so what users receive is PyTorch's gradient, dL/dx + i dL/dy.
def _numeric(*args) -> None:
    """The complex-part primitives take numbers, not booleans (funcgrad.numpy's real, imag and conj
    return a real array itself; the kernels have no parts of a bool)."""
    if any(isinstance(a, ShapedArray) and a.dtype == np.bool_ or isinstance(a, bool) for a in args):
        raise TypeError("complex parts of a boolean array: convert it to a number type first")


def _part_shape(x):
    _numeric(x)
    return ShapedArray(x.shape, dtypes.real_dtype(x.dtype))


def _conj_shape(x):
    _numeric(x)
    return ShapedArray(x.shape, x.dtype)


def _complex_shape(re, im):
    _numeric(re, im)
    out = ufunc_shape(np.add)(re, im)
    return ShapedArray(out.shape, dtypes.complex_dtype(out.dtype))


def _complex_impl(re, im):
    out = np.empty(np.broadcast_shapes(np.shape(re), np.shape(im)), dtypes.complex_dtype(np.result_type(re, im)))
    out.real, out.imag = re, im  # never re + 1j * im: inf * 0j would put a NaN in the real part
    return out


real_p = _elementwise("real", lambda x: np.real(x).copy(), X.real, _part_shape)
imag_p = _elementwise("imag", lambda x: np.imag(x).copy(), X.imag, _part_shape)
conj_p = _elementwise("conj", np.conjugate, X.conj, _conj_shape)
complex_p = _elementwise("complex", _complex_impl, X.complex_, _complex_shape)  # complex(re, im)
defvjp(real_p, lambda g, out, x: convert_p(g, dtype=x.dtype))
defjvp(real_p, lambda t, out, x: real_p(t))
defvjp(imag_p, lambda g, out, x: mul_p(convert_p(g, dtype=x.dtype), const(-1j, x.dtype)))
defjvp(imag_p, lambda t, out, x: imag_p(t))
defvjp(conj_p, lambda g, out, x: conj_p(g))
defjvp(conj_p, lambda t, out, x: conj_p(t))
defvjp(complex_p, lambda g, out, re, im: unbroadcast(real_p(g), shape_of(re)),
       lambda g, out, re, im: unbroadcast(neg_p(imag_p(g)), shape_of(im)))
defjvp(complex_p, lambda t, out, re, im: broadcast_like(convert_p(t, dtype=out.dtype), out),
       lambda t, out, re, im: broadcast_like(mul_p(convert_p(t, dtype=out.dtype), const(1j, out.dtype)), out))


def _abs_slope(x, out):
    """d|x| / dx in the rules' convention: sign(x) for a real x (0 at 0, as PyTorch); conj(x) / |x|
    for a complex one, from differentiable primitives, since its phase varies and takes part in
    second derivatives (a real x's sign does not)."""
    if not dtypes.is_complex(x.dtype):
        return sign_p(x)
    at_zero = eq_p(out, 0)
    return select_p(at_zero, zero(x.dtype), div_p(conj_p(x), convert_p(select_p(at_zero, const(1, out.dtype), out),
                                                                       dtype=x.dtype)))


def _abs_vjp(g, out, x):
    if dtypes.is_complex(x.dtype):
        g = convert_p(g, dtype=x.dtype)  # |x|'s real cotangent, made complex
    return mul_p(g, _abs_slope(x, out))


def _abs_jvp(t, out, x):
    tangent = mul_p(t, _abs_slope(x, out))
    return real_p(tangent) if dtypes.is_complex(x.dtype) else tangent


defvjp(abs_p, _abs_vjp)
defjvp(abs_p, _abs_jvp)

stop_gradient_p = _elementwise("stop_gradient", lambda x: x, lambda x: x, _same_dtype, differentiable=False,
                               fresh=False)
