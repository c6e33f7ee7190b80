"""jax.scipy.special (and torch.special's names where they differ): the gamma family (gammaln,
digamma, polygamma, gamma, beta, betaln, multigammaln, the regularized incomplete gamma functions
gammainc and gammaincc and the incomplete beta function betainc), the error functions (erf, erfc,
erfinv, ndtr, ndtri, log_ndtr), and the log-space helpers (expit, logit, logsumexp, xlogy,
xlog1py, entr). Each is a primitive of ops/special.py or composed from primitives, so every
transform applies; integer arguments compute in the default float dtype."""
from __future__ import annotations

import math

import numpy as np

from .. import dtypes
from .. import numpy as fnp
from ..array import ArrayBase
from ..custom import custom_jvp
from ..ops import elementwise as E
from ..ops import reductions as R
from ..ops import special as S
from ._bernoulli import bernoulli_numbers as _bernoulli_numbers
from ._faddeeva import dawsn, erfcx_complex, wofz  # noqa: F401
from ._hypergeometric import hyp1f1  # noqa: F401
from ._loggamma import loggamma  # noqa: F401
from ._owens_t import owens_t  # noqa: F401
from ._spherical import sph_harm_y  # noqa: F401
from ._integral_functions import bessel_jn, fresnel, sici, spence  # noqa: F401
from ..trace import bind

__all__ = ["gammaln", "lgamma", "digamma", "psi", "polygamma", "gamma", "beta", "betaln", "multigammaln", "gammainc",
           "gammaincc", "igamma_grad_a", "random_gamma_grad", "betainc", "erf", "erfc", "erfinv", "ndtr", "ndtri",
           "log_ndtr", "expit", "logit", "logsumexp", "xlogy", "xlog1py", "entr", "log1mexp", "i0", "i0e", "i1",
           "i1e", "expn", "exp1", "expi", "zeta", "bernoulli", "gammasgn", "rgamma", "factorial", "poch", "kl_div",
           "rel_entr", "softmax", "log_softmax", "comb", "boxcox", "boxcox1p", "erfcx", "spence", "sici", "fresnel",
           "bessel_jn", "hyp1f1", "wofz", "dawsn", "loggamma", "owens_t", "sph_harm_y"]


def gammaln(x):
    """log |Gamma(x)| (libm's lgamma): inf at the poles 0, -1, -2, ..."""
    return bind(S.lgamma_p, fnp._float_arg(x))


def digamma(x):
    """d/dx log Gamma(x): -inf / +inf at +0 / -0, NaN at the negative integers (PyTorch's)."""
    return polygamma(0, x)


def polygamma(n, x):
    """The n-th derivative of digamma: n a non-negative integer, or an array of them broadcast
    against x (SciPy's and JAX's; its values must be concrete: each order is its own kernel)."""
    if np.ndim(n) == 0 and not isinstance(n, ArrayBase):
        if isinstance(n, (bool, np.bool_)) or not isinstance(n, (int, np.integer)) or n < 0:
            raise ValueError(f"polygamma: n must be a non-negative int, got {n!r}")
        return bind(S.polygamma_p, fnp._float_arg(x), n=int(n))
    orders = np.asarray(n.concrete("polygamma's orders n") if isinstance(n, ArrayBase) else n)
    if orders.dtype.kind not in "iuf" or (orders != np.floor(orders)).any() or (orders < 0).any():
        raise ValueError(f"polygamma: n must hold non-negative integers, got {orders!r}")
    x = fnp._float_arg(x)
    shape = np.broadcast_shapes(orders.shape, x.shape)
    x, out = fnp.broadcast_to(x, shape), None
    for order in np.unique(orders):
        value = bind(S.polygamma_p, x, n=int(order))
        out = value if out is None else fnp.where(np.broadcast_to(orders == order, shape), value, out)
    return fnp.zeros(shape, x.dtype) if out is None else out  # no orders: an empty result


def gamma(x):
    """Gamma(x) = sign * exp(gammaln(x)): negative on (-1, 0), (-3, -2), ...; inf at 0 and NaN at the
    negative integers."""
    x = fnp._float_arg(x)
    negative = (x < 0) & (fnp.fmod(fnp.floor(x), 2.0) != 0)
    value = fnp.where(negative | ((x == 0) & fnp.signbit(x)), -1.0, 1.0) * fnp.exp(gammaln(x))  # -0: -inf
    return fnp.where((x < 0) & (fnp.floor(x) == x), math.nan, value)


def _gamma_operands(a, x):
    return fnp._float_args(a, x)


def gammainc(a, x):
    """P(a, x) = (1 / Gamma(a)) int_0^x t^(a-1) e^-t dt, for a, x >= 0 (NaN elsewhere; P(0, x > 0) = 1,
    as SciPy and PyTorch). Differentiable in x to every order and in a once (a second derivative in
    a raises, as in JAX)."""
    return bind(S.igamma_p, *_gamma_operands(a, x))


def gammaincc(a, x):
    """Q(a, x) = 1 - P(a, x), computed directly where it is small (the upper tail)."""
    return bind(S.igammac_p, *_gamma_operands(a, x))


def igamma_grad_a(a, x):
    """dP(a, x) / da (lax.igamma_grad_a)."""
    return bind(S.igamma_grad_a_p, *_gamma_operands(a, x))


def random_gamma_grad(a, x):
    """dx / da for a Gamma(a, 1) sample x held at its quantile P(a, x) (lax.random_gamma_grad): the
    reparameterisation gradient of funcgrad.random.gamma."""
    return bind(S.random_gamma_grad_p, *_gamma_operands(a, x))


def betainc(a, b, x):
    """The regularized incomplete beta function I_x(a, b) = (1 / B(a, b)) int_0^x t^(a-1) (1-t)^(b-1)
    dt, for a, b >= 0 and 0 <= x <= 1 (NaN elsewhere; SciPy's edge values). Differentiable in x to
    every order; in a and b differentiating raises, as in JAX."""
    a, b, x = fnp._float_args(a, b, x)
    return bind(S.betainc_p, a, b, x)


def betaln(a, b):
    """log |B(a, b)| = gammaln(a) + gammaln(b) - gammaln(a + b)."""
    a, b = fnp._float_args(a, b)
    return gammaln(a) + gammaln(b) - gammaln(a + b)


def beta(a, b):
    return fnp.exp(betaln(a, b))


def multigammaln(a, d: int):
    """log of the multivariate gamma function of dimension d: sum_j gammaln(a - j / 2) + d (d - 1) / 4
    log(pi)."""
    a = fnp._float_arg(a)
    return sum(gammaln(a - j / 2) for j in range(d)) + d * (d - 1) / 4 * math.log(math.pi)


def erf(x):
    """The error function (libm's)."""
    return bind(E.erf_p, fnp._float_arg(x))


def erfc(x):
    """1 - erf(x), accurate where that difference would round to 0 (libm's erfc)."""
    return bind(S.erfc_p, fnp._float_arg(x))


def _inverse_of(slope):
    """f, the inverse of a function whose derivative is slope, as a custom_jvp with f' = 1 / slope(f):
    right to every order, where autodiff through f's numerical steps is not."""
    def make(f):
        inverse = custom_jvp(f)

        @inverse.defjvp
        def rule(primals, tangents):
            out = inverse(primals[0])
            return out, tangents[0] / slope(out)
        return inverse
    return make


def _erf_slope(x):
    return 2 / math.sqrt(math.pi) * fnp.exp(-x * x)


def _normal_density(x):
    return fnp.exp(-x * x / 2) / math.sqrt(2 * math.pi)


def erfinv(y):
    """The inverse of erf on [-1, 1] (+-inf at +-1, NaN beyond), in float64: Newton steps on erf
    for |y| < 1/2, and on log erfc of 1 - |y| (exact there) in the tails, so it stays accurate to
    1 - 1e-16. Its derivative is the inverse's, sqrt(pi) / 2 exp(erfinv(y)^2), to every order (not
    autodiff through the steps, whose start has an infinite slope at 0)."""
    y = fnp._float_arg(y)
    return fnp.astype(_erfinv64(fnp.astype(y, dtypes.float64)), y.dtype)


@_inverse_of(_erf_slope)
def _erfinv64(z):
    size = fnp.abs(z)
    inside = size < 1
    central = size < 0.5
    w = fnp.where(central, size, 0.25)
    x = _winitzki(w)
    for _ in range(3):
        x = x - (erf(x) - w) / _erf_slope(x)
    out = fnp.sign(z) * fnp.where(central, x, _inverse_erfc(fnp.where(central | ~inside, 0.5, 1.0 - size)))
    edge = fnp.where(size == 1, fnp.sign(z) * math.inf, math.nan)
    return fnp.where(inside, out, edge)


def _winitzki(y):
    """Winitzki's closed-form approximation of erfinv(y) for 0 <= y < 1 (to ~2e-3)."""
    log_term = fnp.log1p(-y * y)
    first = 2 / (math.pi * 0.147) + log_term / 2
    return fnp.sqrt(fnp.sqrt(first * first - log_term / 0.147) - first)


def _inverse_erfc(q):
    """x >= 0 with erfc(x) = q for q in (0, 1] (float64): Winitzki's start, or the asymptotic
    x^2 = -log q - log(x sqrt(pi)) below 1e-8, then Newton steps on log erfc."""
    log_q = fnp.log(q)
    tail = q < 1e-8
    t = -fnp.where(tail, log_q, -1.0)
    x = fnp.where(tail, fnp.sqrt(t - 0.5 * fnp.log(t) - 0.5 * math.log(math.pi)), _winitzki(fnp.where(tail, 0.5, 1.0 - q)))
    for _ in range(4):
        upper = erfc(x)
        x = x + (fnp.log(upper) - log_q) * upper / _erf_slope(x)
    return x


def ndtr(x):
    """The standard normal CDF, erfc(-x / sqrt(2)) / 2 (accurate in the lower tail)."""
    return 0.5 * erfc(-fnp._float_arg(x) / math.sqrt(2))


def ndtri(p):
    """The standard normal quantile function, from erfc's inverse at 2 min(p, 1 - p) (exact), so
    tails as deep as p = 1e-300 keep their precision. Its derivative is the inverse's,
    sqrt(2 pi) exp(x^2 / 2), to every order (autodiff through the branch at 1/2 gave NaN there)."""
    p = fnp._float_arg(p)
    return fnp.astype(_ndtri64(fnp.astype(p, dtypes.float64)), p.dtype)


@_inverse_of(_normal_density)
def _ndtri64(q):
    lower = q < 0.5
    tail = fnp.where(lower, 2.0 * q, 2.0 * (1.0 - q))
    inside = (q > 0) & (q < 1)
    x = math.sqrt(2) * _inverse_erfc(fnp.where(inside, tail, 1.0))
    out = fnp.where(lower, -x, x)
    edge = fnp.where(q == 0, -math.inf, fnp.where(q == 1, math.inf, math.nan))
    return fnp.where(inside, out, edge)


def log_ndtr(x):
    """log ndtr(x): log1p(-ndtr(-x)) above 0 (ndtr near 1), log ndtr(x) down to -20, and below
    that, where ndtr underflows, the asymptotic series of Mills' ratio."""
    x = fnp._float_arg(x)
    tail = x < -20
    safe = fnp.where(tail, x, -21.0)  # each branch sees only the inputs it is accurate for
    w = 1 / (safe * safe)
    series = fnp.log1p(w * (-1 + w * (3 + w * (-15 + w * 105))))
    asymptotic = -0.5 * safe * safe - fnp.log(-safe) - 0.5 * math.log(2 * math.pi) + series
    upper = x > 0
    body = fnp.where(upper, fnp.log1p(-ndtr(-fnp.where(upper, x, 1.0))), fnp.log(ndtr(fnp.where(upper | tail, -1.0, x))))
    return fnp.where(tail, asymptotic, body)


def expit(x):
    """The logistic sigmoid 1 / (1 + exp(-x)), without overflow."""
    return bind(E.sigmoid_p, fnp._float_arg(x))


def logit(p):
    """log(p / (1 - p))."""
    p = fnp._float_arg(p)
    return fnp.log(p) - fnp.log1p(-p)


def logsumexp(a, axis=None, b=None, keepdims: bool = False, return_sign: bool = False):
    """log(sum(b * exp(a))) over axis, shifted by the maximum; with return_sign, (log|sum|, sign),
    as scipy's (a negative sum needs it, or gives NaN)."""
    a = fnp._float_arg(a)
    if b is None and not return_sign:
        return fnp.logsumexp(a, axis=axis, keepdims=keepdims)
    b = fnp.ones((), a.dtype) if b is None else fnp._float_arg(b)
    a, b = fnp.broadcast_arrays(*fnp._common((a, b)))
    peak = fnp.stop_gradient(fnp.max(fnp.where(b != 0, a, -math.inf), axis=axis, keepdims=True))
    peak = fnp.where(fnp.isfinite(peak), peak, 0.0)
    total = fnp.sum(b * fnp.exp(a - peak), axis=axis, keepdims=True)
    out = fnp.log(fnp.abs(total)) + peak
    sign = fnp.sign(total)
    if not keepdims:
        out, sign = fnp.squeeze(out, axis), fnp.squeeze(sign, axis)
    return (out, sign) if return_sign else fnp.where(sign < 0, math.nan, out)


def _times_log(x, y, log, lowest: float, root: float):
    """x * log(y), and 0 where x is 0 (whatever y is). Where x is 0 its derivative in x is still
    log(y) when that is finite (PyTorch's and JAX's: a Dirichlet's concentration of 1), else 0; the
    derivative in y is 0 there. lowest: where log's domain ends; root: log(root) = 0."""
    x, y = fnp._float_args(x, y)
    outside = (x == 0) & ~((y > lowest) & (y < math.inf))
    return x * log(fnp.where(outside, root, y))


def xlogy(x, y):
    return _times_log(x, y, fnp.log, 0.0, 1.0)


def xlog1py(x, y):
    return _times_log(x, y, fnp.log1p, -1.0, 0.0)


def i0e(x):
    """exp(-|x|) I_0(x), the exponentially scaled modified Bessel function of order 0."""
    return fnp._bessel.scaled_bessel_i(x, 0)


def i0(x):
    """I_0(x), the modified Bessel function of the first kind of order 0."""
    return fnp.i0(x)


def i1e(x):
    """exp(-|x|) I_1(x), odd in x."""
    return fnp._bessel.scaled_bessel_i(x, 1)


def i1(x):
    """I_1(x), the modified Bessel function of the first kind of order 1."""
    x = fnp._float_arg(x)
    return i1e(x) * fnp.exp(fnp.abs(x))


def expn(n, x):
    """The generalized exponential integral E_n(x) = int_1^inf e^(-x t) / t^n dt, n = 0, 1, 2, ...
    (NaN for a negative or fractional n, or x < 0); differentiable in x (dE_n/dx = -E_(n-1))."""
    return bind(S.expn_p, *fnp._float_args(n, x))


def exp1(x):
    """E_1(x) = int_x^inf e^-t / t dt (NaN below 0, as SciPy's real function)."""
    x = fnp._float_arg(x)
    return bind(S.expn_p, fnp.ones_like(x), x)


def expi(x):
    """The exponential integral Ei(x) = -PV int_-x^inf e^-t / t dt: -E_1(-x) below 0, -inf at 0."""
    return bind(S.expi_p, fnp._float_arg(x))


_ZETA_SHIFT, _ZETA_TERMS = 10, 12


def _hurwitz(s, q):
    """zeta(s, q) for s > 1 by Euler-Maclaurin: the first _ZETA_SHIFT terms, then the integral, half
    the next term and the Bernoulli corrections (q + N)^(-s - 2j + 1) s (s + 1) ... / (2j)!."""
    total = sum(fnp.power(q + k, -s) for k in range(_ZETA_SHIFT))
    z = q + _ZETA_SHIFT
    total = total + fnp.power(z, 1 - s) / (s - 1) + 0.5 * fnp.power(z, -s)
    rising, power = s, fnp.power(z, -s - 1)
    for j in range(1, _ZETA_TERMS + 1):
        total = total + float(_bernoulli_numbers(2 * j)[-1] / math.factorial(2 * j)) * rising * power
        rising = rising * (s + 2 * j - 1) * (s + 2 * j)
        power = power / (z * z)
    return total


def zeta(x, q=None):
    """The Hurwitz zeta function sum_k (k + q)^-x for x > 1 (inf at x = 1, NaN below); with q None
    the Riemann zeta function, continued below 1 by the reflection formula, as SciPy's."""
    if q is not None:
        x, q = fnp._float_args(x, q)
        safe = fnp.where(x > 1, x, 2.0)
        return fnp.where(x > 1, _hurwitz(safe, q), fnp.where(x == 1, math.inf, math.nan))
    x = fnp._float_arg(x)
    high = fnp.where(x > 1, x, 2.0)
    low = fnp.where(x < 1, x, 0.0)  # zeta(s) = 2^s pi^(s-1) sin(pi s / 2) Gamma(1 - s) zeta(1 - s)
    reflected = (fnp.power(2.0, low) * fnp.power(math.pi, low - 1) * fnp.sin(math.pi * low / 2) * gamma(1 - low)
                 * _hurwitz(1 - low, fnp.ones_like(low)))
    trivial = (x < 0) & (fnp.fmod(x, 2.0) == 0)  # the zeros at -2, -4, ... (sin(pi s / 2) rounds off them)
    reflected = fnp.where(x == 0, -0.5, fnp.where(trivial, 0.0, reflected))  # zeta(0): 0 * zeta(1) would be NaN
    return fnp.where(x > 1, _hurwitz(high, fnp.ones_like(high)), fnp.where(x == 1, math.inf, reflected))


def bernoulli(n: int):
    """The Bernoulli numbers B_0 .. B_n (B_1 = -1/2), exact until rounded to the default float."""
    if isinstance(n, bool) or not isinstance(n, int) or n < 0:
        raise ValueError(f"bernoulli: n must be a non-negative int, got {n!r}")
    return fnp.asarray([float(b) for b in _bernoulli_numbers(n)], dtype=dtypes.default_float)


def gammasgn(x):
    """The sign of Gamma(x): 1 above 0 (and at +0), -1 at -0 and on (-1, 0), (-3, -2), ...; NaN at the
    negative integers and -inf."""
    x = fnp._float_arg(x)
    odd = fnp.fmod(fnp.floor(x), 2.0) != 0
    sign = fnp.where((x > 0) | ((x == 0) & ~fnp.signbit(x)), 1.0, fnp.where((x == 0) | odd, -1.0, 1.0))
    pole = ((x < 0) & (fnp.floor(x) == x)) | (x == -math.inf) | fnp.isnan(x)
    return fnp.where(pole, math.nan, sign)


def rgamma(x):
    """1 / Gamma(x): 0 at the poles."""
    x = fnp._float_arg(x)
    pole = (x <= 0) & (fnp.floor(x) == x)
    return fnp.where(pole, 0.0, gammasgn(fnp.where(pole, 1.0, x)) * fnp.exp(-gammaln(fnp.where(pole, 1.0, x))))


def factorial(n, exact: bool = False):
    """n! = Gamma(n + 1) for real n, 0 below 0 (SciPy's); exact=False only, as JAX."""
    if exact:
        raise ValueError("factorial: exact=True (Python integers) is not available; use exact=False")
    n = fnp._float_arg(n)
    return fnp.where(n < 0, 0.0, gamma(fnp.maximum(n, 0.0) + 1))


def poch(z, m):
    """The rising factorial Gamma(z + m) / Gamma(z), 1 at m = 0; where z is a pole: 0 unless z + m is
    one too, then (-1)^m Gamma(1 - z) / Gamma(1 - z - m) (SciPy's values)."""
    z, m = fnp._float_args(z, m)
    top, bottom = z + m, z
    pole = lambda v: (v <= 0) & (fnp.floor(v) == v)  # noqa: E731
    safe_top, safe_bottom = fnp.where(pole(top), 0.5, top), fnp.where(pole(bottom), 0.5, bottom)
    ratio = gammasgn(safe_top) * gammasgn(safe_bottom) * fnp.exp(gammaln(safe_top) - gammaln(safe_bottom))
    both = fnp.where(fnp.fmod(m, 2.0) == 0, 1.0, -1.0) * fnp.exp(gammaln(1 - fnp.where(pole(bottom), z, 0.5))
                                                               - gammaln(1 - fnp.where(pole(bottom), top, 0.5)))
    value = fnp.where(pole(bottom), fnp.where(pole(top), both, 0.0), fnp.where(pole(top), math.inf, ratio))
    return fnp.where(m == 0, 1.0, value)


def kl_div(p, q):
    """p log(p / q) - p + q elementwise; q at p = 0 (q >= 0); inf elsewhere outside p, q > 0."""
    p, q = fnp._float_args(p, q)
    inside = (p > 0) & (q > 0)
    value = p * fnp.log(fnp.where(inside, p / fnp.where(inside, q, 1.0), 1.0)) - p + q
    return fnp.where(inside, value, fnp.where((p == 0) & (q >= 0), q, math.inf))


def rel_entr(p, q):
    """p log(p / q) elementwise; 0 at p = 0 (q >= 0); inf elsewhere outside p, q > 0."""
    p, q = fnp._float_args(p, q)
    inside = (p > 0) & (q > 0)
    value = p * fnp.log(fnp.where(inside, p / fnp.where(inside, q, 1.0), 1.0))
    return fnp.where(inside, value, fnp.where((p == 0) & (q >= 0), 0.0, math.inf))


def log_softmax(x, /, *, axis=None):
    """x - logsumexp(x) over axis (every axis by default, as SciPy's)."""
    x = fnp._float_arg(x)
    return x - fnp.logsumexp(x, axis=axis, keepdims=True)


def softmax(x, /, *, axis=None):
    """exp(x) / sum exp(x) over axis (every axis by default): the fused primitive, so a slice holding
    +inf is NaN throughout, as SciPy's (exp of log_softmax gave 0 beside the inf)."""
    x = fnp._float_arg(x)
    return bind(R.softmax_p, x, axes=fnp._axes(axis, x.ndim))


def comb(N, k, *, exact: bool = False, repetition: bool = False):  # noqa: N803  (SciPy's name)
    """The binomial coefficient C(N, k) = Gamma(N + 1) / (Gamma(k + 1) Gamma(N - k + 1)) as floats
    (0 where k < 0, k > N or N < 0, as SciPy's); repetition: C(N + k - 1, k). exact=False only, as JAX."""
    if exact:
        raise ValueError("comb: exact=True (Python integers) is not available; use exact=False")
    n, k = fnp._float_args(N, k)
    if repetition:
        n = n + k - 1
    inside = (k >= 0) & (n >= 0) & (k <= n)
    safe_n, safe_k = fnp.where(inside, n, 1.0), fnp.where(inside, k, 0.0)
    value = fnp.exp(gammaln(safe_n + 1) - gammaln(safe_k + 1) - gammaln(safe_n - safe_k + 1))
    integers = (fnp.floor(n) == n) & (fnp.floor(k) == k)
    return fnp.where(inside, fnp.where(integers, fnp.round(value), value), 0.0)


def boxcox(x, lmbda):
    """The Box-Cox transform (x^lmbda - 1) / lmbda, log x at lmbda = 0 (through expm1: exact near 0)."""
    x, lmbda = fnp._float_args(x, lmbda)
    return _boxcox_of_log(fnp.log(x), lmbda)


def boxcox1p(x, lmbda):
    """boxcox(1 + x, lmbda), accurate for small x."""
    x, lmbda = fnp._float_args(x, lmbda)
    return _boxcox_of_log(fnp.log1p(x), lmbda)


def _boxcox_of_log(log_x, lmbda):
    zero = lmbda == 0
    return fnp.where(zero, log_x, fnp.expm1(lmbda * log_x) / fnp.where(zero, 1.0, lmbda))


def erfcx(x):
    """The scaled complementary error function exp(x^2) erfc(x): directly below 25, where neither
    factor overflows nor underflows, and by its asymptotic series 1 / (x sqrt(pi)) sum (-1)^k (2k-1)!! /
    (2 x^2)^k above (10 terms: below 1e-16 there). Of a complex x, the Faddeeva function w(ix)."""
    x = fnp._float_arg(x)
    if dtypes.is_complex(x.dtype):
        return erfcx_complex(x)
    large = x >= 25.0
    direct = fnp.exp(fnp.where(large, 0.0, x) ** 2) * erfc(fnp.where(large, 0.0, x))
    y = fnp.where(large, x, 25.0)
    w = 1 / (2 * y * y)
    series, term = fnp.ones_like(y), fnp.ones_like(y)
    for k in range(1, 11):
        term = -term * (2 * k - 1) * w
        series = series + term
    return fnp.where(large, series / (y * math.sqrt(math.pi)), direct)


def log1mexp(x):
    """log(1 - exp(-x)) for x >= 0, accurate at both ends: log(-expm1(-x)) up to log 2, then
    log1p(-exp(-x)) (Machler's rule; jax.nn.log1mexp, and the log CDFs of funcgrad.scipy.stats)."""
    x = fnp._float_arg(x)
    return fnp.where(x < math.log(2), fnp.log(-fnp.expm1(-x)), fnp.log1p(-fnp.exp(-x)))


def entr(x):
    """-x log x for x > 0, 0 at 0, -inf below (scipy's elementwise entropy)."""
    x = fnp._float_arg(x)
    return fnp.where(x < 0, -math.inf, -xlogy(x, x))


psi, lgamma = digamma, gammaln
