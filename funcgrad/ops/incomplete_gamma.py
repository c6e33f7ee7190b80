"""The regularized incomplete gamma functions and their derivatives in the shape parameter, as one
scalar function of Python's `math` that both backends compile: numba on the CPU (funcgrad/cpu/
gamma.py) and numba.cuda as a device function (funcgrad/cuda/scalar.py). A series or a continued
fraction needs a loop, which ops/scalar.py's expressions cannot spell, so the elementwise
primitives in ops/special.py call this function by name.

    P(a, x) = gamma(a, x) / Gamma(a)   (igamma)      Q(a, x) = 1 - P(a, x)   (igammac)

Cephes' method, as PyTorch, SciPy and XLA use it: the power series of P where x <= 1 or x <= a, else
Legendre's continued fraction of Q (both with relative tolerance 2^-52). The derivatives in `a` are
carried through the same recurrences (forward mode), as in XLA: dP/da (igamma_grad_a) and the
implicit reparameterisation gradient of a Gamma(a, 1) sample z, dz/da = -(dP/da)(a, z) / p(z; a)
(random_gamma_grad; Figurnov et al. 2018), also from log z, so a sample that underflows (a << 1)
still has its d log z / da. Everything is computed in float64, whatever the operands' dtype: the
derivatives subtract nearly equal terms. Values at the edges are PyTorch's and SciPy's: NaN for a
or x negative or NaN, P(0, x > 0) = 1, P(a, 0) = 0, P(a, inf) = 1, P(inf, x < inf) = 0.
A loop that has not converged in MAX_TERMS terms (a above ~1e7 with x near a) gives NaN.
"""
from __future__ import annotations

import math

IGAMMA, IGAMMAC, IGAMMA_GRAD_A, RANDOM_GAMMA_GRAD, RANDOM_GAMMA_GRAD_LOG = range(5)
MODES = ("igamma", "igammac", "igamma_grad_a", "random_gamma_grad", "random_gamma_grad_log")
MAX_TERMS = 20000
EPS = 2.0 ** -52
BIG = 2.0 ** 52  # the continued fraction's convergents are rescaled past this


def incomplete_gamma(a, x, mode):
    """MODES[mode] at (a, x); for RANDOM_GAMMA_GRAD_LOG, x is log z and the value d log z / da."""
    a = float(a)
    if mode == RANDOM_GAMMA_GRAD_LOG:
        log_x = float(x)
        x = math.exp(log_x) if log_x < 709.0 else math.inf  # (Python's exp raises past 709.78)
        if log_x != log_x:
            return math.nan
    else:
        x = float(x)
        log_x = math.log(x) if x > 0.0 else -math.inf
    zero = log_x == -math.inf  # z = 0 itself, not a sample whose exp underflowed
    if a != a or x != x or a < 0.0 or x < 0.0 or (a == 0.0 and zero) or (math.isinf(a) and math.isinf(x)):
        return math.nan
    derivative = mode >= IGAMMA_GRAD_A
    if a == 0.0 or math.isinf(x):  # P = 1, constant in a
        return 1.0 if mode == IGAMMA else 0.0
    if zero or math.isinf(a):  # P = 0
        if mode == IGAMMAC:
            return 1.0
        return math.inf if mode == RANDOM_GAMMA_GRAD_LOG else 0.0
    digamma = 0.0  # psi(a) for the derivatives: the recurrence up to 10, then the asymptotic series
    if derivative:
        y = a
        while y < 10.0:
            digamma -= 1.0 / y
            y += 1.0
        w = 1.0 / (y * y)
        digamma += math.log(y) - 0.5 / y - w * (1.0 / 12 - w * (1.0 / 120 - w * (1.0 / 252 - w * (
            1.0 / 240 - w * (1.0 / 132 - w * (691.0 / 32760 - w / 12.0))))))
    if a < 20.0:
        log_ax = a * log_x - x - math.lgamma(a)  # log(x^a e^-x / Gamma(a))
    else:  # the same without cancelling lgamma(a) ~ a log a (a 1e-9 error at a = 1e6): Stirling's
        w = 1.0 / (a * a)  # series for lgamma(a) - (a - 1/2) log a + a - log(2 pi) / 2, then
        stirling = (1.0 / 12 - w * (1.0 / 360 - w * (1.0 / 1260 - w * (1.0 / 1680 - w / 1188.0)))) / a
        u = x / a - 1.0  # x/a - 1 - log(x/a), through log1p near x = a
        gap = u - math.log1p(u) if abs(u) < 0.5 else u - (log_x - math.log(a))
        log_ax = 0.5 * math.log(a / (2.0 * math.pi)) - a * gap - stirling
    series = x <= 1.0 or x <= a
    if mode <= IGAMMA_GRAD_A and math.exp(log_ax) == 0.0:  # a far tail: P or Q rounds to 0
        if mode == IGAMMA_GRAD_A:
            return 0.0 if series else -0.0
        return 1.0 if (mode == IGAMMAC) == series else 0.0
    converged = False
    if series:
        # P = x^a e^-x / Gamma(a + 1) * sum_n x^n / ((a + 1) ... (a + n)), and its a-derivative
        r, term, total, d_term, d_total = a, 1.0, 1.0, 0.0, 0.0
        for _ in range(MAX_TERMS):
            r += 1.0
            d_term = d_term * (x / r) - term * x / (r * r)
            term *= x / r
            total += term
            d_total += d_term
            if term <= EPS * total and (not derivative or abs(d_term) <= EPS * abs(d_total)):
                converged = True
                break
        if not converged:
            return math.nan
        p = math.exp(log_ax) * total / a
        if mode == IGAMMA:
            return p
        if mode == IGAMMAC:
            return 1.0 - p
        d_log = total * (log_x - digamma - 1.0 / a) + d_total  # psi(a + 1) = psi(a) + 1 / a
        if mode == IGAMMA_GRAD_A:
            return math.exp(log_ax) / a * d_log
        return -d_log * (x if mode == RANDOM_GAMMA_GRAD else 1.0) / a
    # Q = x^a e^-x / Gamma(a) * the continued fraction's value, whose convergents p_k / q_k carry
    # their a-derivatives dp, dq: y = 1 - a + k and z = x + 2 - a + 2k both move by -1 with a
    y, z, c = 1.0 - a, x + 2.0 - a, 0.0
    p_prev, q_prev, p_last, q_last = 1.0, x, x + 1.0, z * x
    dp_prev, dq_prev, dp_last, dq_last = 0.0, 0.0, 0.0, -x
    value = p_last / q_last
    d_value = (dp_last - value * dq_last) / q_last
    for _ in range(MAX_TERMS):
        c += 1.0
        y += 1.0
        z += 2.0
        yc = y * c
        p_k = p_last * z - p_prev * yc
        q_k = q_last * z - q_prev * yc
        dp_k = dp_last * z - p_last - dp_prev * yc + p_prev * c
        dq_k = dq_last * z - q_last - dq_prev * yc + q_prev * c
        step, d_step = 1.0, 0.0
        if q_k != 0.0:
            ratio = p_k / q_k
            d_ratio = (dp_k - ratio * dq_k) / q_k
            step = abs(value - ratio) if ratio == 0.0 else abs((value - ratio) / ratio)
            d_step = abs(d_value - d_ratio) if d_ratio == 0.0 else abs((d_value - d_ratio) / d_ratio)
            value, d_value = ratio, d_ratio
        p_prev, q_prev, p_last, q_last = p_last, q_last, p_k, q_k
        dp_prev, dq_prev, dp_last, dq_last = dp_last, dq_last, dp_k, dq_k
        if abs(p_k) > BIG:
            p_prev, q_prev, p_last, q_last = p_prev / BIG, q_prev / BIG, p_last / BIG, q_last / BIG
            dp_prev, dq_prev, dp_last, dq_last = dp_prev / BIG, dq_prev / BIG, dp_last / BIG, dq_last / BIG
        if step <= EPS and (not derivative or d_step <= EPS):
            converged = True
            break
    if not converged:
        return math.nan
    q = math.exp(log_ax) * value
    if mode == IGAMMA:
        return 1.0 - q
    if mode == IGAMMAC:
        return q
    d_log = value * (log_x - digamma) + d_value  # dQ/da = e^log_ax * d_log = -dP/da
    if mode == IGAMMA_GRAD_A:
        return -math.exp(log_ax) * d_log
    return d_log * (x if mode == RANDOM_GAMMA_GRAD else 1.0)
