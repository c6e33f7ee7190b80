"""Elementwise primitives: one derivative formula serves both the JVP and the VJP."""
from __future__ import annotations

import math

import numpy as np

from ..cpu.special import erf as _erf_impl
from . import reductions as R
from .core import Primitive, defjvp, defvjp, dtype_of, shape_of


def _unary(name: str, impl, deriv=None) -> Primitive:
    """deriv(x, out) -> d out / d x, built from primitives."""
    prim = Primitive(name, impl, differentiable=deriv is not None)
    if deriv is not None:
        defvjp(prim, lambda g, out, x: mul_p(g, deriv(x, out)))
        defjvp(prim, lambda t, out, x: mul_p(t, deriv(x, out)))
    return prim


def _binary(name: str, impl, dx=None, dy=None) -> Primitive:
    """dx(g, out, x, y) / dy(...) -> cotangent before un-broadcasting; None: not differentiable."""
    prim = Primitive(name, impl, differentiable=dx is not None)
    if dx is not None:
        defvjp(prim, lambda g, out, x, y: R.unbroadcast(dx(g, out, x, y), shape_of(x)),
               lambda g, out, x, y: R.unbroadcast(dy(g, out, x, y), shape_of(y)))
        # Tangents are linear: the same formula maps a tangent forward, without un-broadcasting.
        defjvp(prim, lambda t, out, x, y: R.broadcast_like(dx(t, out, x, y), out),
               lambda t, out, x, y: R.broadcast_like(dy(t, out, x, y), out))
    return prim


def zero(dtype) -> np.ndarray:
    return np.zeros((), dtype)


def const(value, dtype) -> np.ndarray:
    return np.asarray(value, dtype)


# ---- arithmetic ---------------------------------------------------------------------------
add_p = _binary("add", np.add, lambda g, o, x, y: g, lambda g, o, x, y: g)
sub_p = _binary("sub", np.subtract, lambda g, o, x, y: g, lambda g, o, x, y: neg_p(g))
mul_p = _binary("mul", np.multiply, lambda g, o, x, y: mul_p(g, y), lambda g, o, x, y: mul_p(g, x))
div_p = _binary("div", np.true_divide, lambda g, o, x, y: div_p(g, y),
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


pow_p = _binary("pow", np.power, _pow_dx, _pow_dy)


def _tie_mask(winner, tie, dtype):
    """1 where this argument wins, 0.5 on ties (the gradient is shared), 0 elsewhere."""
    return add_p(convert_p(winner, dtype=dtype), mul_p(convert_p(tie, dtype=dtype), const(0.5, dtype)))


maximum_p = _binary("maximum", np.maximum,
                    lambda g, o, x, y: mul_p(g, _tie_mask(gt_p(x, y), eq_p(x, y), g.dtype)),
                    lambda g, o, x, y: mul_p(g, _tie_mask(lt_p(x, y), eq_p(x, y), g.dtype)))
minimum_p = _binary("minimum", np.minimum,
                    lambda g, o, x, y: mul_p(g, _tie_mask(lt_p(x, y), eq_p(x, y), g.dtype)),
                    lambda g, o, x, y: mul_p(g, _tie_mask(gt_p(x, y), eq_p(x, y), g.dtype)))


def _atan2_common(x, y):
    return add_p(mul_p(x, x), mul_p(y, y))


# arctan2(a, b): d/da = b / (a^2 + b^2), d/db = -a / (a^2 + b^2)
arctan2_p = _binary("arctan2", np.arctan2,
                    lambda g, o, a, b: mul_p(g, div_p(b, _atan2_common(a, b))),
                    lambda g, o, a, b: neg_p(mul_p(g, div_p(a, _atan2_common(a, b)))))
remainder_p = _binary("remainder", np.remainder, lambda g, o, x, y: g,
                      lambda g, o, x, y: neg_p(mul_p(g, floor_p(div_p(x, y)))))
floor_divide_p = _binary("floor_divide", np.floor_divide)

# ---- comparisons and logic (no gradient) ----------------------------------------------------
eq_p = _binary("eq", np.equal)
ne_p = _binary("ne", np.not_equal)
lt_p = _binary("lt", np.less)
le_p = _binary("le", np.less_equal)
gt_p = _binary("gt", np.greater)
ge_p = _binary("ge", np.greater_equal)
and_p = _binary("and", np.logical_and)
or_p = _binary("or", np.logical_or)
xor_p = _binary("xor", np.logical_xor)
bitwise_and_p = _binary("bitwise_and", np.bitwise_and)
bitwise_or_p = _binary("bitwise_or", np.bitwise_or)
bitwise_xor_p = _binary("bitwise_xor", np.bitwise_xor)
left_shift_p = _binary("left_shift", np.left_shift)
right_shift_p = _binary("right_shift", np.right_shift)
not_p = _unary("not", np.logical_not)
invert_p = _unary("invert", np.invert)
isnan_p = _unary("isnan", np.isnan)
isinf_p = _unary("isinf", np.isinf)
isfinite_p = _unary("isfinite", np.isfinite)
sign_p = _unary("sign", np.sign)
floor_p = _unary("floor", np.floor)
ceil_p = _unary("ceil", np.ceil)
round_p = _unary("round", np.round)
trunc_p = _unary("trunc", np.trunc)

# ---- unary math -------------------------------------------------------------------------------
neg_p = Primitive("neg", np.negative)
defvjp(neg_p, lambda g, out, x: neg_p(g))
defjvp(neg_p, lambda t, out, x: neg_p(t))


def _reciprocal_sqrt_one_minus_sq(x):
    return pow_p(sub_p(const(1, x.dtype), mul_p(x, x)), -0.5)


abs_p = _unary("abs", np.abs, lambda x, out: sign_p(x))  # PyTorch: gradient 0 at 0
exp_p = _unary("exp", np.exp, lambda x, out: out)
expm1_p = _unary("expm1", np.expm1, lambda x, out: add_p(out, const(1, out.dtype)))
log_p = _unary("log", np.log, lambda x, out: reciprocal_p(x))
log1p_p = _unary("log1p", np.log1p, lambda x, out: reciprocal_p(add_p(x, const(1, x.dtype))))
log2_p = _unary("log2", np.log2, lambda x, out: reciprocal_p(mul_p(x, const(math.log(2), x.dtype))))
log10_p = _unary("log10", np.log10, lambda x, out: reciprocal_p(mul_p(x, const(math.log(10), x.dtype))))
sqrt_p = _unary("sqrt", np.sqrt, lambda x, out: div_p(const(0.5, out.dtype), out))
square_p = _unary("square", np.square, lambda x, out: mul_p(x, const(2, x.dtype)))
reciprocal_p = _unary("reciprocal", np.reciprocal, lambda x, out: neg_p(mul_p(out, out)))
sin_p = _unary("sin", np.sin, lambda x, out: cos_p(x))
cos_p = _unary("cos", np.cos, lambda x, out: neg_p(sin_p(x)))
tan_p = _unary("tan", np.tan, lambda x, out: add_p(const(1, out.dtype), mul_p(out, out)))
tanh_p = _unary("tanh", np.tanh, lambda x, out: sub_p(const(1, out.dtype), mul_p(out, out)))
sinh_p = _unary("sinh", np.sinh, lambda x, out: cosh_p(x))
cosh_p = _unary("cosh", np.cosh, lambda x, out: sinh_p(x))
arctan_p = _unary("arctan", np.arctan,
                  lambda x, out: reciprocal_p(add_p(const(1, x.dtype), mul_p(x, x))))
arcsin_p = _unary("arcsin", np.arcsin, lambda x, out: _reciprocal_sqrt_one_minus_sq(x))
arccos_p = _unary("arccos", np.arccos, lambda x, out: neg_p(_reciprocal_sqrt_one_minus_sq(x)))
arcsinh_p = _unary("arcsinh", np.arcsinh,
                   lambda x, out: pow_p(add_p(mul_p(x, x), const(1, x.dtype)), -0.5))
arccosh_p = _unary("arccosh", np.arccosh,
                   lambda x, out: pow_p(sub_p(mul_p(x, x), const(1, x.dtype)), -0.5))
arctanh_p = _unary("arctanh", np.arctanh,
                   lambda x, out: reciprocal_p(sub_p(const(1, x.dtype), mul_p(x, x))))
erf_p = _unary("erf", _erf_impl, lambda x, out: mul_p(const(2 / math.sqrt(math.pi), x.dtype),
                                                      exp_p(neg_p(mul_p(x, x)))))


# ---- activations --------------------------------------------------------------------------------
def _sigmoid_impl(x):
    e = np.exp(-np.abs(x))  # never overflows
    return np.where(x >= 0, 1 / (1 + e), e / (1 + e)).astype(x.dtype, copy=False)


def _softplus_impl(x):
    return np.logaddexp(np.zeros((), x.dtype), x)


sigmoid_p = _unary("sigmoid", _sigmoid_impl, lambda x, out: mul_p(out, sub_p(const(1, out.dtype), out)))
softplus_p = _unary("softplus", _softplus_impl, lambda x, out: sigmoid_p(x))
relu_p = _unary("relu", lambda x: np.maximum(x, np.zeros((), x.dtype)),
                lambda x, out: convert_p(gt_p(x, zero(x.dtype)), dtype=x.dtype))  # 0 at 0, as PyTorch

_SQRT_2_OVER_PI = math.sqrt(2 / math.pi)
_GELU_C = 0.044715


def _gelu_impl(x, approximate):
    if approximate:
        inner = _SQRT_2_OVER_PI * (x + _GELU_C * x ** 3)
        return (0.5 * x * (1 + np.tanh(inner))).astype(x.dtype, copy=False)
    return (0.5 * x * (1 + _erf_impl(x * np.asarray(1 / math.sqrt(2), x.dtype)))).astype(x.dtype, copy=False)


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


gelu_p = Primitive("gelu", _gelu_impl)
defvjp(gelu_p, lambda g, out, x, approximate: mul_p(g, _gelu_deriv(x, out, approximate)))
defjvp(gelu_p, lambda t, out, x, approximate: mul_p(t, _gelu_deriv(x, out, approximate)))


# ---- selection and casting ------------------------------------------------------------------------
select_p = Primitive("select", np.where)  # select(cond, x, y) == where(cond, x, y)
defvjp(select_p, None,
       lambda g, out, c, x, y: R.unbroadcast(select_p(c, g, zero(g.dtype)), shape_of(x)),
       lambda g, out, c, x, y: R.unbroadcast(select_p(c, zero(g.dtype), g), shape_of(y)))
defjvp(select_p, None,
       lambda t, out, c, x, y: R.broadcast_like(select_p(c, t, zero(t.dtype)), out),
       lambda t, out, c, x, y: R.broadcast_like(select_p(c, zero(t.dtype), t), out))


def _clip_impl(x, lo, hi):
    return np.clip(x, lo, hi)


def _in_range(x, lo, hi):
    inside = None
    if lo is not None:
        inside = ge_p(x, lo)
    if hi is not None:
        below = le_p(x, hi)
        inside = below if inside is None else and_p(inside, below)
    return inside


# PyTorch's clamp: the gradient flows to x where lo <= x <= hi, else to the bound that won.
clip_p = Primitive("clip", _clip_impl)
defvjp(clip_p,
       lambda g, out, x, lo, hi: select_p(_in_range(x, lo, hi), g, zero(g.dtype)),
       lambda g, out, x, lo, hi: R.unbroadcast(select_p(lt_p(x, lo), g, zero(g.dtype)), shape_of(lo)),
       lambda g, out, x, lo, hi: R.unbroadcast(
           select_p(and_p(gt_p(x, hi), _not_below(x, lo)), g, zero(g.dtype)), shape_of(hi)))
defjvp(clip_p,
       lambda t, out, x, lo, hi: R.broadcast_like(select_p(_in_range(x, lo, hi), t, zero(t.dtype)), out),
       lambda t, out, x, lo, hi: R.broadcast_like(select_p(lt_p(x, lo), t, zero(t.dtype)), out),
       lambda t, out, x, lo, hi: R.broadcast_like(
           select_p(and_p(gt_p(x, hi), _not_below(x, lo)), t, zero(t.dtype)), out))


def _not_below(x, lo):
    return True if lo is None else ge_p(x, lo)


def _convert_impl(x, dtype):
    return np.asarray(x).astype(dtype, copy=False)


def _convert_tangent(g, x):
    return convert_p(g, dtype=dtype_of(x))


convert_p = Primitive("convert", _convert_impl)
defvjp(convert_p, lambda g, out, x, dtype: _convert_tangent(g, x))
defjvp(convert_p, lambda t, out, x, dtype: convert_p(t, dtype=dtype))
