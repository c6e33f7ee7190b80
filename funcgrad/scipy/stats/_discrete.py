"""Discrete distributions with SciPy's parameters (shape parameters, then loc=0): log masses,
masses and CDFs. A k that is not an integer or lies outside the support has log mass -inf (SciPy's
rule); an invalid parameter gives NaN."""
from __future__ import annotations

import inspect
import math

from ... import numpy as fnp
from .. import special
from ._common import arguments, floats, namespace, outside, valid


def _discrete(family: str, logpmf_k, params_ok, support, cdf_k=None, ppf_u=None):
    """A discrete family's functions from its forms in k (already shifted by loc): logpmf_k(k,
    *params); support(k, *params) -> where k is a possible value (an integer there); params_ok;
    cdf_k(k, *params) at integer k inside or above the support's start; ppf_u(q, *params)."""
    n_shapes = len(inspect.signature(logpmf_k).parameters) - 1

    def logpmf(k, *args, loc=None):
        params, loc = arguments(f"{family}.logpmf", args, n_shapes, {"loc": loc})
        k, loc, *params = floats(k, loc, *params)
        k = k - loc
        inside = support(k, *params) & (k == fnp.floor(k))
        value = outside(inside, logpmf_k(fnp.where(inside, k, 1.0), *params), -math.inf)
        return valid(params_ok(*params) & ~fnp.isnan(k), value)
    out = {"logpmf": logpmf}

    def pmf(k, *args, loc=None):
        return fnp.exp(logpmf(k, *args, loc=loc))
    out["pmf"] = pmf
    if cdf_k is not None:
        def cdf(k, *args, loc=None):
            params, loc = arguments(f"{family}.cdf", args, n_shapes, {"loc": loc})
            k, loc, *params = floats(k, loc, *params)
            return valid(params_ok(*params) & ~fnp.isnan(k), cdf_k(fnp.floor(k - loc), *params))
        out["cdf"] = cdf
    if ppf_u is not None:
        def ppf(q, *args, loc=None):
            params, loc = arguments(f"{family}.ppf", args, n_shapes, {"loc": loc})
            q, loc, *params = floats(q, loc, *params)
            return valid(params_ok(*params) & (q >= 0) & (q <= 1), ppf_u(q, *params) + loc)
        out["ppf"] = ppf
    return out


def _counts(k):
    return k >= 0


# ---- bernoulli ----------------------------------------------------------------------------------------
bernoulli = namespace("bernoulli", "The Bernoulli distribution: 1 with probability p.", **_discrete(
    "bernoulli", lambda k, p: special.xlogy(k, p) + special.xlog1py(1 - k, -p), lambda p: (p >= 0) & (p <= 1),
    lambda k, p: (k == 0) | (k == 1),
    cdf_k=lambda k, p: fnp.where(k < 0, 0.0, fnp.where(k < 1, 1 - p, 1.0)),
    ppf_u=lambda q, p: fnp.where(q > 1 - p, 1.0, fnp.where(q > 0, 0.0, -1.0))))


# ---- binom --------------------------------------------------------------------------------------------
def _log_choose(n, k):
    return special.gammaln(n + 1) - special.gammaln(k + 1) - special.gammaln(n - k + 1)


def _binom_cdf(k, n, p):
    """I_{1-p}(n - k, k + 1) for 0 <= k < n."""
    inside = (k >= 0) & (k < n)
    value = special.betainc(fnp.where(inside, n - k, 1.0), fnp.where(inside, k + 1, 1.0), 1 - p)
    return fnp.where(k < 0, 0.0, fnp.where(k >= n, 1.0, value))


binom = namespace("binom", "The binomial distribution of n trials with success probability p.", **_discrete(
    "binom", lambda k, n, p: _log_choose(n, k) + special.xlogy(k, p) + special.xlog1py(n - k, -p),
    lambda n, p: (n >= 0) & (n == fnp.floor(n)) & (p >= 0) & (p <= 1), lambda k, n, p: (k >= 0) & (k <= n),
    cdf_k=_binom_cdf))

# ---- poisson ------------------------------------------------------------------------------------------
poisson = namespace("poisson", "The Poisson distribution of mean mu.", **_discrete(
    "poisson", lambda k, mu: special.xlogy(k, mu) - special.gammaln(k + 1) - mu, lambda mu: mu >= 0,
    lambda k, mu: _counts(k),
    cdf_k=lambda k, mu: fnp.where(k < 0, 0.0, special.gammaincc(fnp.maximum(k, 0.0) + 1, mu))))

# ---- geom ---------------------------------------------------------------------------------------------
geom = namespace("geom", "The geometric distribution: the trial of the first success, from 1.", **_discrete(
    "geom", lambda k, p: special.xlog1py(k - 1, -p) + fnp.log(p), lambda p: (p > 0) & (p <= 1),
    lambda k, p: k >= 1, cdf_k=lambda k, p: fnp.where(k < 1, 0.0, -fnp.expm1(special.xlog1py(k, -p)))))

# ---- nbinom -------------------------------------------------------------------------------------------
nbinom = namespace("nbinom", "The negative binomial distribution: failures before the n-th success.", **_discrete(
    "nbinom", lambda k, n, p: (special.gammaln(k + n) - special.gammaln(n) - special.gammaln(k + 1)
                               + special.xlogy(n, p) + special.xlog1py(k, -p)),
    lambda n, p: (n > 0) & (p > 0) & (p <= 1), lambda k, n, p: _counts(k),
    cdf_k=lambda k, n, p: fnp.where(k < 0, 0.0, special.betainc(n, fnp.maximum(k, 0.0) + 1, p))))

# ---- betabinom ----------------------------------------------------------------------------------------
betabinom = namespace("betabinom", "The beta-binomial distribution: n trials whose p is Beta(a, b).", **_discrete(
    "betabinom", lambda k, n, a, b: _log_choose(n, k) + special.betaln(k + a, n - k + b) - special.betaln(a, b),
    lambda n, a, b: (n >= 0) & (n == fnp.floor(n)) & (a > 0) & (b > 0), lambda k, n, a, b: (k >= 0) & (k <= n)))
