"""The gamma family (jax.random's gamma, loggamma, beta, dirichlet, chisquare, t, f) and the
binomial counts (binomial, multinomial).

Gamma(a, 1) samples come from Marsaglia and Tsang's squeeze (a + 1 and a uniform power for a < 1),
in log space, so loggamma, beta and dirichlet stay exact where a << 1 makes the sample itself
underflow. They are differentiable in `a` by implicit reparameterisation (Figurnov et al. 2018, as
JAX): dz/da = -(dP/da)(a, z) / p(z; a) with P the regularized incomplete gamma function
(scipy.special.random_gamma_grad); the other samplers are functions of gamma samples, so their
gradients follow. A second derivative in a raises (as in JAX) rather than cut anything.
"""
from __future__ import annotations

import functools
import math

import numpy as np

from .. import dtypes
from .. import numpy as fnp
from ..array import Array
from ..custom import custom_jvp
from ..ops import special as special_ops
from ..scipy import special
from ..trace import bind
from ._samplers import _as_parameter, _float_dtype, _parameters, _unit_float, normal, split

GAMMA_ROUNDS = 16  # candidates per element under jit, each accepted with probability > 0.95


def _settled(done) -> bool:
    """Every element accepted, as far as is known (under jit nothing is: every round runs)."""
    known = fnp.concrete_or_none(done)
    return known is not None and bool(known.all())


@functools.partial(custom_jvp, nondiff_argnums=(0,))
def _log_standard_gamma(key, a):
    """log of Gamma(a, 1) samples of a's shape and dtype: Marsaglia-Tsang for alpha = max(a, a + 1
    where a < 1), round by round until each is accepted, then log(u) / a added for a < 1."""
    valid = a >= 0.0  # NaN and negative shapes give NaN, a = 0 gives z = 0, without warnings
    positive = fnp.where(valid & (a > 0.0), a, 1.0)
    small = positive < 1.0
    alpha = fnp.where(small, positive + 1.0, positive)
    d = alpha - 1.0 / 3.0
    c = 1.0 / fnp.sqrt(9.0 * d)
    k_boost, k_rounds = split(key)
    out = fnp.zeros_like(a)
    done = fnp.zeros_like(a, dtypes.bool_)
    for round_key in split(k_rounds, GAMMA_ROUNDS):
        k_x, k_u = split(round_key)
        x = normal(k_x, a.shape, a.dtype)
        v = (1.0 + c * x) ** 3
        inside = v > 0.0
        log_v = fnp.log(fnp.where(inside, v, 1.0))
        log_u = fnp.log1p(-_unit_float(k_u, a.shape, a.dtype))  # log of a uniform in (0, 1]
        accept = inside & (log_u < 0.5 * x * x + d - d * v + d * log_v) & ~done
        out = fnp.where(accept, fnp.log(d) + log_v, out)
        done = done | accept
        if _settled(done):
            break
    boost = fnp.log1p(-_unit_float(k_boost, a.shape, a.dtype)) / fnp.where(small, positive, 1.0)
    log_z = out + fnp.where(small, boost, 0.0)
    return fnp.where(valid, fnp.where(a == 0.0, -math.inf, log_z), math.nan)


def _log_standard_gamma_jvp(key, primals, tangents):
    (a,), (t_a,) = primals, tangents
    log_z = _log_standard_gamma(key, a)
    return log_z, t_a * bind(special_ops.random_gamma_grad_log_p, a, log_z)


_log_standard_gamma.defjvp(_log_standard_gamma_jvp)


def _log_gamma(key, a, shape, dtype):
    (a,), shape, compute = _parameters(key, shape, dtype, a)
    return _log_standard_gamma(key, fnp.broadcast_to(a, shape))


def gamma(key, a, shape=None, dtype=dtypes.float32) -> Array:
    """Gamma(a, 1) samples (scale them for other rates), differentiable in a; shape: a's by default."""
    return fnp.astype(fnp.exp(_log_gamma(key, a, shape, dtype)), dtypes.canonicalize(dtype))


def loggamma(key, a, shape=None, dtype=dtypes.float32) -> Array:
    """log of Gamma(a, 1) samples, finite where a << 1 makes the sample underflow to 0."""
    return fnp.astype(_log_gamma(key, a, shape, dtype), dtypes.canonicalize(dtype))


def beta(key, a, b, shape=None, dtype=dtypes.float32) -> Array:
    """Beta(a, b) samples: G_a / (G_a + G_b) from two log-gamma samples, scaled by their maximum."""
    (a, b), shape, compute = _parameters(key, shape, dtype, a, b)
    k_a, k_b = split(key)
    log_a = _log_standard_gamma(k_a, fnp.broadcast_to(a, shape))
    log_b = _log_standard_gamma(k_b, fnp.broadcast_to(b, shape))
    top = fnp.maximum(log_a, log_b)
    g_a, g_b = fnp.exp(log_a - top), fnp.exp(log_b - top)
    return fnp.astype(g_a / (g_a + g_b), dtypes.canonicalize(dtype))


def dirichlet(key, alpha, shape=None, dtype=dtypes.float32) -> Array:
    """Dirichlet(alpha) samples over alpha's last axis: shape + (K,), shape broadcasting with
    alpha.shape[:-1] (its default); normalised log-gamma samples (a softmax)."""
    alpha = _as_parameter(key, alpha, _float_dtype(dtype)[1])
    if alpha.ndim < 1:
        raise ValueError(f"dirichlet: alpha needs at least one axis (the categories), got shape {alpha.shape}")
    batch = tuple(alpha.shape[:-1]) if shape is None else tuple(shape)
    _parameters(key, batch, dtype, np.zeros(alpha.shape[:-1]))  # alpha's batch axes broadcast to shape
    log_g = _log_standard_gamma(key, fnp.broadcast_to(alpha, batch + tuple(alpha.shape[-1:])))
    return fnp.astype(fnp.exp(log_g - fnp.logsumexp(log_g, axis=-1, keepdims=True)), dtypes.canonicalize(dtype))


def chisquare(key, df, shape=None, dtype=dtypes.float32) -> Array:
    """Chi-square(df) samples: 2 Gamma(df / 2)."""
    (df,), shape, compute = _parameters(key, shape, dtype, df)
    log_g = _log_standard_gamma(key, fnp.broadcast_to(df / 2.0, shape))
    return fnp.astype(2.0 * fnp.exp(log_g), dtypes.canonicalize(dtype))


def f(key, dfnum, dfden, shape=None, dtype=dtypes.float32) -> Array:
    """F(dfnum, dfden) samples: (X1 / dfnum) / (X2 / dfden) of two chi-square samples."""
    (dfnum, dfden), shape, compute = _parameters(key, shape, dtype, dfnum, dfden)
    k_num, k_den = split(key)
    num = chisquare(k_num, dfnum, shape, compute) / dfnum
    den = chisquare(k_den, dfden, shape, compute) / dfden
    return fnp.astype(num / den, dtypes.canonicalize(dtype))


def t(key, df, shape=None, dtype=dtypes.float32) -> Array:
    """Student's t(df) samples: N sqrt((df / 2) / Gamma(df / 2))."""
    (df,), shape, compute = _parameters(key, shape, dtype, df)
    k_n, k_g = split(key)
    half = fnp.broadcast_to(df / 2.0, shape)
    g = fnp.exp(_log_standard_gamma(k_g, half))
    return fnp.astype(normal(k_n, shape, compute) * fnp.sqrt(half / g), dtypes.canonicalize(dtype))


def binomial(key, n, p, shape=None, dtype=dtypes.float32) -> Array:
    """Binomial(n, p) counts (as floats, JAX's dtype): inversion by geometric waiting times where
    n min(p, 1 - p) < 10, else Hormann's BTRS rejection, drawn with min(p, 1 - p) and reflected.
    NaN where n < 0 or p is outside [0, 1]."""
    (n, p), shape, compute = _parameters(key, shape, dtype, n, p)
    n, p = fnp.broadcast_to(fnp.floor(n), shape), fnp.broadcast_to(p, shape)
    q = fnp.minimum(p, 1.0 - p)
    k_small, k_large = split(key)
    small = n * q < 10.0
    count = fnp.where(small, _binomial_inversion(k_small, n, q), _binomial_btrs(k_large, n, q))
    count = fnp.where(p > 0.5, n - count, count)
    invalid = (n < 0) | (p < 0) | (p > 1) | fnp.isnan(p) | fnp.isnan(n)
    return fnp.astype(fnp.where(invalid, math.nan, count), dtypes.canonicalize(dtype))


_INVERSION_DRAWS = 60  # geometric gaps: at a mean below 10 more than 60 successes are below 1e-20


def _binomial_inversion(key, n, q):
    """The number of successes among n trials: the count of cumulative geometric(q) gaps within n."""
    possible = q > 0.0
    u = _unit_float(key, (_INVERSION_DRAWS,) + tuple(n.shape), n.dtype)
    gaps = fnp.floor(fnp.log1p(-u) / fnp.log1p(-fnp.where(possible, q, 0.5))) + 1.0  # trials to a success
    within = fnp.cumsum(gaps, axis=0) <= n
    return fnp.where(possible, fnp.sum(fnp.astype(within, n.dtype), axis=0), 0.0)


def _binomial_btrs(key, n, q):
    """Hormann's BTRS (transformed rejection with squeeze) for n q >= 10, round by round."""
    mine = n * q >= 10.0  # the other elements take inversion's count: keep these finite
    n, q = fnp.where(mine, n, 100.0), fnp.where(mine, q, 0.5)
    spq = fnp.sqrt(n * q * (1.0 - q))
    b = 1.15 + 2.53 * spq
    a = -0.0873 + 0.0248 * b + 0.01 * q
    c = n * q + 0.5
    v_r = 0.92 - 4.2 / b
    alpha = (2.83 + 5.1 / b) * spq
    log_odds = fnp.log(q / (1.0 - q))
    m = fnp.floor((n + 1.0) * q)
    h = special.gammaln(m + 1.0) + special.gammaln(n - m + 1.0)
    out = fnp.zeros_like(n)
    done = fnp.zeros_like(n, dtypes.bool_)
    for round_key in split(key, GAMMA_ROUNDS):
        k_u, k_v = split(round_key)
        u = _unit_float(k_u, n.shape, n.dtype) - 0.5
        v = _unit_float(k_v, n.shape, n.dtype)
        us = 0.5 - fnp.abs(u)
        k = fnp.floor((2.0 * a / us + b) * u + c)
        inside = (k >= 0) & (k <= n)
        quick = (us >= 0.07) & (v <= v_r)
        kk = fnp.clip(k, 0.0, n)
        exact = fnp.log(v * alpha / (a / (us * us) + b)) <= (
            h - special.gammaln(kk + 1.0) - special.gammaln(n - kk + 1.0) + (kk - m) * log_odds)
        accept = inside & (quick | exact) & ~done
        out = fnp.where(accept, k, out)
        done = done | accept
        if _settled(done):
            break
    return out


def multinomial(key, n, p, *, shape=None, dtype=dtypes.float32) -> Array:
    """Multinomial(n, p) counts over p's last axis (p sums to 1): category by category, a binomial
    of the trials left with the category's share of the probability left. Output: shape (default
    broadcast of n and p's batch axes) + (K,)."""
    p = _as_parameter(key, p, _float_dtype(dtype)[1])
    if p.ndim < 1:
        raise ValueError(f"multinomial: p needs at least one axis (the categories), got shape {p.shape}")
    (n, _), batch, compute = _parameters(key, shape, dtype, n, np.zeros(p.shape[:-1]))
    remaining = fnp.broadcast_to(n, batch)
    left = fnp.ones_like(remaining)
    counts = []
    for i, k in enumerate(split(key, p.shape[-1])):
        share = fnp.broadcast_to(p[..., i], batch)
        if i == p.shape[-1] - 1:
            count = remaining  # the last category takes every trial left
        else:
            count = binomial(k, remaining, fnp.clip(share / fnp.where(left > 0, left, 1.0), 0.0, 1.0), batch, compute)
        counts.append(count)
        remaining = remaining - count
        left = left - share
    return fnp.astype(fnp.stack(counts, axis=-1), dtypes.canonicalize(dtype))


def generalized_normal(key, p, shape=(), dtype=dtypes.float32) -> Array:
    """Samples of density p / (2 Gamma(1/p)) exp(-|x|^p): a random sign times Gamma(1/p)^(1/p)
    (p = 2: a normal of variance 1/2, p = 1: Laplace)."""
    (p,), shape, compute = _parameters(key, shape, dtype, p)
    k_gamma, k_sign = split(key)
    magnitude = fnp.exp(_log_standard_gamma(k_gamma, fnp.broadcast_to(1.0 / p, shape)) / p)
    sign = fnp.where(_unit_float(k_sign, shape, compute) < 0.5, -1.0, 1.0)
    return fnp.astype(sign * magnitude, dtypes.canonicalize(dtype))


def ball(key, d: int, p: float = 2, shape=(), dtype=dtypes.float32) -> Array:
    """Points uniform in the d-dimensional unit p-ball, shape + (d,): generalized-normal coordinates
    over (sum |g|^p + an exponential)^(1/p) (Barthe et al. 2005)."""
    if isinstance(d, bool) or not isinstance(d, (int, np.integer)) or d < 1:
        raise ValueError(f"ball: d must be a positive int, got {d!r}")
    shape = tuple(shape) if np.ndim(shape) else (int(shape),)
    k_g, k_e = split(key)
    g = generalized_normal(k_g, p, shape + (int(d),), _float_dtype(dtype)[1])
    e = -fnp.log1p(-_unit_float(k_e, shape, g.dtype))
    radius = fnp.power(fnp.sum(fnp.power(fnp.abs(g), p), axis=-1) + e, 1.0 / p)
    return fnp.astype(g / fnp.expand_dims(radius, -1), dtypes.canonicalize(dtype))
