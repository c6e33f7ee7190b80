"""Special functions as elementwise primitives: erfc (libm's, accurate where 1 - erf(x) would
round to 0), lgamma (libm's, whose derivative is digamma), polygamma(x, n) (digamma at n = 0),
whose derivative is polygamma(x, n + 1), so every order of derivative exists, and the incomplete
gamma family of (a, x) (ops/incomplete_gamma.py: lax.igamma, igammac, igamma_grad_a,
random_gamma_grad), differentiable in x to every order and in a once, as in JAX, and the
regularized incomplete beta function betainc(a, b, x) (ops/incomplete_beta.py), differentiable in x.

polygamma is one formula written once over a function namespace, run on NumPy arrays (the CPU
implementation) and as the scalar expression the CPU fusion and the CUDA generator render: the
argument reflected into [0.5, inf) (psi^(n)(x) = (-1)^n psi^(n)(1 - x) - pi d^n/dx^n cot(pi x)),
shifted by SHIFT with the recurrence, then the asymptotic series (digamma's) or the
Euler-Maclaurin tail of the Hurwitz zeta function (n >= 1): within a few ulp of SciPy's in float64
over the tested range."""
from __future__ import annotations

import math
from fractions import Fraction
from functools import cache

import numpy as np

from .. import dtypes
from ..cpu.special import erfc as _erfc_impl
from ..cpu.special import lgamma as _lgamma_impl
from . import scalar as X
from .core import ShapedArray, aval, defjvp, defvjp, dtype_of, shape_of
from . import elementwise as E
from .elementwise import (_elementwise, _float_only, add_p, const, div_p, eq_p, exp_p, log_p, mul_p, neg_p, select_p,
                          sub_p, zero)
from .layout import broadcast_like, broadcast_shapes, unbroadcast

SHIFT = 10  # the recurrence's steps before the series: z = x + SHIFT >= 10.5
_BERNOULLI = (Fraction(1, 6), Fraction(-1, 30), Fraction(1, 42), Fraction(-1, 30), Fraction(5, 66),
              Fraction(-691, 2730), Fraction(7, 6), Fraction(-3617, 510))  # B_2 .. B_16


class _NumPy:
    log, tan, floor, where = staticmethod(np.log), staticmethod(np.tan), staticmethod(np.floor), staticmethod(np.where)


@cache
def _cot_derivative(n: int) -> tuple:
    """Coefficients (constant first) of P_n with d^n/du^n cot(u) = P_n(cot u): P_0 = c and
    P_{k+1} = -(1 + c^2) P_k'."""
    p = [0, 1]
    for _ in range(n):
        dp = [k * p[k] for k in range(1, len(p))] or [0]
        q = [0] * (len(dp) + 2)
        for k, a in enumerate(dp):
            q[k] -= a
            q[k + 2] -= a
        p = q
    return tuple(p)


def _polynomial(coefficients, c):
    out = float(coefficients[-1])  # Horner from the leading coefficient (0 * inf would be NaN)
    for a in reversed(coefficients[:-1]):
        out = out * c + float(a)
    return out


def _series(y, n: int, F):
    """psi^(n)(y) for y >= 0.5: the recurrence up to z = y + SHIFT, then the asymptotic tail."""
    z = y + float(SHIFT)
    w = 1.0 / (z * z)
    if n == 0:
        steps = 0.0
        for k in range(SHIFT):
            steps = steps + 1.0 / (y + float(k))
        tail = 0.0  # sum_j B_2j / (2j) z^-2j, by Horner in w
        for j in reversed(range(1, len(_BERNOULLI) + 1)):
            tail = (tail + float(_BERNOULLI[j - 1] / (2 * j))) * w
        return F.log(z) - 0.5 / z - tail - steps
    # (-1)^(n+1) n! zeta(n + 1, y): the first SHIFT terms, then Euler-Maclaurin from z
    steps = 0.0
    for k in range(SHIFT):
        steps = steps + (y + float(k)) ** -(n + 1)
    tail = 0.0  # sum_j B_2j / (2j)! (n+1)(n+2)...(n+2j-1) z^-(n+2j)
    for j in reversed(range(1, len(_BERNOULLI) + 1)):
        rising = math.prod(range(n + 1, n + 2 * j))
        tail = (tail + float(_BERNOULLI[j - 1] * rising / math.factorial(2 * j))) * w
    zeta = steps + z ** -n * (1.0 / n + 0.5 / z + tail)
    return float((-1) ** (n + 1) * math.factorial(n)) * zeta


def polygamma_formula(x, n: int, F):
    """psi^(n)(x) in F's functions (NumPy's or scalar.py's). At the poles, PyTorch's values:
    digamma(+-0) = -+inf and NaN below zero; for n >= 1 an infinity of the sign of (-1)^(n+1)."""
    reflect = x < 0.5
    y = F.where(reflect, 1.0 - x, x)
    base = _series(y, n, F)
    cot = 1.0 / F.tan(math.pi * x)
    reflected = float((-1) ** n) * base - math.pi ** (n + 1) * _polynomial(_cot_derivative(n), cot)
    out = F.where(reflect, reflected, base)
    if n == 0:
        return F.where((x < 0.0) & (F.floor(x) == x), math.nan, out)
    return F.where((x <= 0.0) & (F.floor(x) == x), math.inf if n % 2 else -math.inf, out)


def _polygamma_impl(x, *, n: int):
    with np.errstate(divide="ignore", invalid="ignore", over="ignore"):
        return np.asarray(polygamma_formula(x, n, _NumPy), x.dtype)


polygamma_p = _elementwise("polygamma", _polygamma_impl, lambda x, *, n: polygamma_formula(x, n, X),
                           shape_rule=_float_only, real_numbers=True)
defvjp(polygamma_p, lambda g, out, x, *, n: mul_p(g, polygamma_p(x, n=n + 1)))
defjvp(polygamma_p, lambda t, out, x, *, n: mul_p(t, polygamma_p(x, n=n + 1)))

lgamma_p = _elementwise("lgamma", _lgamma_impl, X.lgamma, shape_rule=_float_only, real_numbers=True)
defvjp(lgamma_p, lambda g, out, x: mul_p(g, polygamma_p(x, n=0)))
defjvp(lgamma_p, lambda t, out, x: mul_p(t, polygamma_p(x, n=0)))


def _erfc_derivative(x):
    return mul_p(const(-2 / math.sqrt(math.pi), x.dtype), exp_p(neg_p(mul_p(x, x))))


erfc_p = _elementwise("erfc", _erfc_impl, X.erfc, shape_rule=_float_only, real_numbers=True)
defvjp(erfc_p, lambda g, out, x: mul_p(g, _erfc_derivative(x)))
defjvp(erfc_p, lambda t, out, x: mul_p(t, _erfc_derivative(x)))


def _floats(*operands):
    """Every operand floating point (Python floats weak); the broadcast shape and promoted dtype."""
    for k, v in enumerate(operands):
        if (isinstance(v, ShapedArray) and not dtypes.is_float(v.dtype)) or not isinstance(v, (ShapedArray, float)):
            raise TypeError(f"needs floating-point operands, got operand {k} of "
                            f"{v.dtype if isinstance(v, ShapedArray) else repr(v)}")
    shapes = [v.shape for v in operands if isinstance(v, ShapedArray)]
    return ShapedArray(broadcast_shapes(*shapes), np.result_type(*(v.dtype if isinstance(v, ShapedArray) else v
                                                                   for v in operands)))


def _loop_function(name: str, *partials):
    """An elementwise primitive computed by the loop function scalar.LOOPS[name], of as many operands
    as partials. partials[k](*operands) -> the derivative in operand k, built from primitives; None:
    differentiating in that operand raises (a cut would be a silent wrong gradient)."""
    def impl(*operands):
        from ..cpu.loops import evaluate  # numba compiles it on first use
        _floats(*map(aval, operands))  # eager calls reach the implementation without the shape rule
        return evaluate(name, *operands)

    prim = _elementwise(name, impl, getattr(X, name), shape_rule=_floats, real_numbers=True)
    defvjp(prim, *(None if d is None else
                   (lambda g, out, *ops, d=d, k=k: unbroadcast(mul_p(g, d(*ops)), shape_of(ops[k])))
                   for k, d in enumerate(partials)))
    defjvp(prim, *(None if d is None else (lambda t, out, *ops, d=d: broadcast_like(mul_p(t, d(*ops)), out))
                   for d in partials))
    return prim


def _xlogy(x, y):
    """x log y, 0 where x = 0 (the powers below are 1 at y = 0)."""
    return select_p(eq_p(x, 0.0), zero(dtype_of(y)), mul_p(x, log_p(y)))


def _density(a, x):
    """dP/dx = x^(a-1) e^-x / Gamma(a): the Gamma(a, 1) density."""
    return exp_p(sub_p(sub_p(_xlogy(sub_p(a, 1.0), x), x), lgamma_p(a)))


igamma_grad_a_p = _loop_function(  # d/dx dP/da = d/da dP/dx = density * (log x - digamma(a))
    "igamma_grad_a", None, lambda a, x: mul_p(_density(a, x), sub_p(log_p(x), polygamma_p(a, n=0))))
igamma_p = _loop_function("igamma", igamma_grad_a_p, _density)
igammac_p = _loop_function("igammac", lambda a, x: neg_p(igamma_grad_a_p(a, x)), lambda a, x: neg_p(_density(a, x)))
random_gamma_grad_p = _loop_function("random_gamma_grad", None, None)
random_gamma_grad_log_p = _loop_function("random_gamma_grad_log", None, None)


def _beta_density(a, b, x):
    """dI/dx = x^(a-1) (1 - x)^(b-1) / B(a, b)."""
    log_beta = sub_p(add_p(lgamma_p(a), lgamma_p(b)), lgamma_p(add_p(a, b)))
    one_minus = sub_p(1.0, x)
    return exp_p(sub_p(add_p(_xlogy(sub_p(a, 1.0), x), _xlogy(sub_p(b, 1.0), one_minus)), log_beta))


betainc_p = _loop_function("betainc", None, None, _beta_density)  # in a and b not differentiable, as JAX


def _expn_derivative(n, x):
    """dE_n/dx = -E_(n-1)(x), with E_-1(x) = e^-x (x + 1) / x^2 at n = 0."""
    lower = expn_p(E.maximum_p(sub_p(n, 1.0), 0.0), x)
    e_minus_1 = div_p(mul_p(exp_p(neg_p(x)), add_p(x, 1.0)), mul_p(x, x))
    return neg_p(select_p(eq_p(n, 0.0), e_minus_1, lower))


expn_p = _loop_function("expn", None, _expn_derivative)  # E_n(x); in n (an integer) not differentiable
expi_p = _loop_function("expi", lambda x: div_p(exp_p(x), x))  # Ei(x); Ei' = e^x / x
