"""Continuous distributions with SciPy's parameters (shape parameters, then loc=0, scale=1): log
densities, densities, CDFs and survival functions in log space where it keeps digits, quantiles.
Outside the support a log density is -inf and a CDF 0 or 1; an invalid parameter (scale <= 0, a
negative shape) gives NaN, as SciPy. Everything is composed from primitives, so it differentiates."""
from __future__ import annotations

import inspect
import math

from ... import numpy as fnp
from .. import special
from ._common import arguments, floats, namespace, outside, standardized, valid

_LOG_2PI = math.log(2 * math.pi)


def _exp_of(logfn):
    """The density (or mass) function exp(logfn(...))."""
    def fn(*args, **kwargs):
        return fnp.exp(logfn(*args, **kwargs))
    fn.__doc__ = f"exp of {logfn.__name__}"
    return fn


def _log_cdf_and_sf(cdf, sf):
    """log cdf and log sf, each taken from the complement where it is near 1 (log1p(-other) keeps
    the digits that log(1 - small) would round away)."""
    def logcdf(y, *params):
        c = cdf(y, *params)
        return fnp.where(c < 0.5, fnp.log(c), fnp.log1p(-sf(y, *params)))

    def logsf(y, *params):
        s = sf(y, *params)
        return fnp.where(s < 0.5, fnp.log(s), fnp.log1p(-cdf(y, *params)))
    return logcdf, logsf


def _located(family: str, logpdf_y, params_ok=None, cdf_y=None, sf_y=None, logcdf_y=None, logsf_y=None,
             ppf_u=None, isf_u=None):
    """A location-scale family's functions from its standard forms in y = (x - loc) / scale and its
    shape parameters: logpdf_y, cdf_y, sf_y, logcdf_y, logsf_y(y, *params); ppf_u, isf_u(q, *params)
    -> the standard quantile; params_ok(*params) -> where the shape parameters are valid (None: no
    shape parameters). Returns the functions that exist, each taking (x, *params, loc=0, scale=1);
    family names them in errors."""
    n_shapes = len(inspect.signature(logpdf_y).parameters) - 1

    def ok(scale, params):
        return (scale > 0) & params_ok(*params) if params_ok is not None else scale > 0

    def standard(name, fn):
        def call(x, *args, loc=None, scale=None):
            params, loc, scale = arguments(f"{family}.{name}", args, n_shapes, {"loc": loc, "scale": scale})
            y, scale, *params = standardized(x, loc, scale, *params)
            return valid(ok(scale, params) & ~fnp.isnan(y), fn(y, *params))
        return call

    def quantile(name, fn):
        def call(q, *args, loc=None, scale=None):
            params, loc, scale = arguments(f"{family}.{name}", args, n_shapes, {"loc": loc, "scale": scale})
            q, loc, scale, *params = floats(q, loc, scale, *params)
            return valid(ok(scale, params) & (q >= 0) & (q <= 1), loc + scale * fn(q, *params))
        return call

    def logpdf(x, *args, loc=None, scale=None):
        params, loc, scale = arguments(f"{family}.logpdf", args, n_shapes, {"loc": loc, "scale": scale})
        y, scale, *params = standardized(x, loc, scale, *params)
        return valid(ok(scale, params) & ~fnp.isnan(y), logpdf_y(y, *params) - fnp.log(scale))
    out = {"logpdf": logpdf, "pdf": _exp_of(logpdf)}
    out.update({name: standard(name, fn) for name, fn in (("cdf", cdf_y), ("sf", sf_y), ("logcdf", logcdf_y),
                                                    ("logsf", logsf_y)) if fn is not None})
    out.update({name: quantile(name, fn) for name, fn in (("ppf", ppf_u), ("isf", isf_u)) if fn is not None})
    return out


# ---- norm ---------------------------------------------------------------------------------------------
norm = namespace("norm", "The normal distribution N(loc, scale^2).", **_located(
    "norm", lambda y: -0.5 * y * y - 0.5 * _LOG_2PI,
    cdf_y=special.ndtr, sf_y=lambda y: special.ndtr(-y), logcdf_y=special.log_ndtr,
    logsf_y=lambda y: special.log_ndtr(-y), ppf_u=special.ndtri, isf_u=lambda q: -special.ndtri(q)))

# ---- expon --------------------------------------------------------------------------------------------
expon = namespace("expon", "The exponential distribution, rate 1 / scale, from loc.", **_located(
    "expon", lambda y: outside(y >= 0, -y, -math.inf),
    cdf_y=lambda y: outside(y > 0, -fnp.expm1(-y), 0.0), sf_y=lambda y: outside(y > 0, fnp.exp(-y), 1.0),
    logcdf_y=lambda y: outside(y > 0, special.log1mexp(fnp.maximum(y, 0.0)), -math.inf),
    logsf_y=lambda y: outside(y > 0, -y, 0.0), ppf_u=lambda q: -fnp.log1p(-q)))

# ---- laplace ------------------------------------------------------------------------------------------
laplace = namespace("laplace", "The Laplace (double exponential) distribution.", **_located(
    "laplace", lambda y: -fnp.abs(y) - math.log(2),
    cdf_y=lambda y: fnp.where(y < 0, 0.5 * fnp.exp(fnp.minimum(y, 0.0)), 1 - 0.5 * fnp.exp(-fnp.maximum(y, 0.0)))))

# ---- logistic -----------------------------------------------------------------------------------------
logistic = namespace("logistic", "The logistic distribution.", **_located(
    "logistic", lambda y: -fnp.abs(y) - 2 * fnp.log1p(fnp.exp(-fnp.abs(y))),
    cdf_y=special.expit, sf_y=lambda y: special.expit(-y), ppf_u=special.logit, isf_u=lambda q: -special.logit(q)))


# ---- cauchy -------------------------------------------------------------------------------------------
def _cauchy_cdf(y):
    return 0.5 + fnp.arctan(y) / math.pi


def _cauchy_ppf(q):
    """-cot(pi q) below 1/2 and cot(pi (1 - q)) above: tan(pi (q - 1/2)) would round q - 1/2."""
    return fnp.where(q < 0.5, -1 / fnp.tan(math.pi * q), 1 / fnp.tan(math.pi * (1 - q)))


cauchy = namespace("cauchy", "The Cauchy distribution.", **_located(
    "cauchy", lambda y: -math.log(math.pi) - fnp.log1p(y * y),
    cdf_y=_cauchy_cdf, sf_y=lambda y: _cauchy_cdf(-y), logcdf_y=lambda y: fnp.log(_cauchy_cdf(y)),
    logsf_y=lambda y: fnp.log(_cauchy_cdf(-y)), ppf_u=_cauchy_ppf, isf_u=lambda q: -_cauchy_ppf(q)))

# ---- uniform ------------------------------------------------------------------------------------------
uniform = namespace("uniform", "The uniform distribution on [loc, loc + scale].", **_located(
    "uniform", lambda y: outside((y >= 0) & (y <= 1), fnp.zeros_like(y), -math.inf),
    cdf_y=lambda y: fnp.clip(y, 0.0, 1.0), ppf_u=lambda q: q))


# ---- gamma, chi2 ----------------------------------------------------------------------------------------
def _gamma_logpdf(y, a):
    return outside(y >= 0, special.xlogy(a - 1, y) - y - special.gammaln(a), -math.inf)


def _gamma_cdf(y, a):
    return special.gammainc(a, fnp.maximum(y, 0.0))


def _gamma_sf(y, a):
    return special.gammaincc(a, fnp.maximum(y, 0.0))


_gamma_logcdf, _gamma_logsf = _log_cdf_and_sf(_gamma_cdf, _gamma_sf)
_gamma = _located("gamma", _gamma_logpdf, lambda a: a > 0, cdf_y=_gamma_cdf, sf_y=_gamma_sf, logcdf_y=_gamma_logcdf,
                  logsf_y=_gamma_logsf)
gamma = namespace("gamma", "The gamma distribution of shape a (gamma.logpdf(x, a, loc=0, scale=1)).", **_gamma)


def _chi2(fn):
    def call(x, df, loc=0, scale=1):
        x, df, loc, scale = floats(x, df, loc, scale)
        return fn(x, df / 2, loc, 2 * scale)
    return call


chi2 = namespace("chi2", "The chi-square distribution of df degrees of freedom (a gamma of shape df / 2, "
                 "scale 2).", **{name: _chi2(fn) for name, fn in _gamma.items()})


# ---- beta ---------------------------------------------------------------------------------------------
def _beta_logpdf(y, a, b):
    value = special.xlogy(a - 1, y) + special.xlog1py(b - 1, -y) - special.betaln(a, b)
    return outside((y >= 0) & (y <= 1), value, -math.inf)


def _beta_cdf(y, a, b):
    return special.betainc(a, b, fnp.clip(y, 0.0, 1.0))


def _beta_sf(y, a, b):
    return special.betainc(b, a, 1.0 - fnp.clip(y, 0.0, 1.0))  # the upper tail without 1 - cdf


_beta_logcdf, _beta_logsf = _log_cdf_and_sf(_beta_cdf, _beta_sf)
beta = namespace("beta", "The beta distribution (beta.logpdf(x, a, b, loc=0, scale=1)).", **_located(
    "beta", _beta_logpdf, lambda a, b: (a > 0) & (b > 0), cdf_y=_beta_cdf, sf_y=_beta_sf, logcdf_y=_beta_logcdf,
    logsf_y=_beta_logsf))


# ---- t ------------------------------------------------------------------------------------------------
def _t_logpdf(y, df):
    return (special.gammaln((df + 1) / 2) - special.gammaln(df / 2) - 0.5 * fnp.log(df * math.pi)
            - (df + 1) / 2 * fnp.log1p(y * y / df))


def _t_cdf(y, df):
    """1 - I_{df / (df + y^2)}(df / 2, 1 / 2) / 2 above 0, the half of it below."""
    tail = 0.5 * special.betainc(df / 2, fnp.full_like(df, 0.5), df / (df + y * y))
    return fnp.where(y < 0, tail, 1.0 - tail)


t = namespace("t", "Student's t distribution of df degrees of freedom.", **_located(
    "t", _t_logpdf, lambda df: df > 0, cdf_y=_t_cdf, sf_y=lambda y, df: _t_cdf(-y, df)))


# ---- pareto -------------------------------------------------------------------------------------------
def _pareto_logpdf(y, b):
    inside = y >= 1
    return outside(inside, fnp.log(b) - (b + 1) * fnp.log(fnp.where(inside, y, 1.0)), -math.inf)


def _pareto_logsf(y, b):
    return outside(y >= 1, -b * fnp.log(fnp.maximum(y, 1.0)), 0.0)


pareto = namespace("pareto", "The Pareto distribution of shape b, from 1 (times scale, plus loc).", **_located(
    "pareto", _pareto_logpdf, lambda b: b > 0, cdf_y=lambda y, b: -fnp.expm1(_pareto_logsf(y, b)),
    sf_y=lambda y, b: fnp.exp(_pareto_logsf(y, b)),
    logcdf_y=lambda y, b: outside(y > 1, special.log1mexp(-_pareto_logsf(y, b)), -math.inf), logsf_y=_pareto_logsf,
    ppf_u=lambda q, b: fnp.power(1.0 - q, -1.0 / b)))

# ---- gumbel_r, gumbel_l -----------------------------------------------------------------------------------
gumbel_r = namespace("gumbel_r", "The right-skewed Gumbel (extreme value of maxima) distribution.", **_located(
    "gumbel_r", lambda y: -(y + fnp.exp(-y)),
    cdf_y=lambda y: fnp.exp(-fnp.exp(-y)), sf_y=lambda y: -fnp.expm1(-fnp.exp(-y)), logcdf_y=lambda y: -fnp.exp(-y),
    logsf_y=lambda y: special.log1mexp(fnp.exp(-y)), ppf_u=lambda q: -fnp.log(-fnp.log(q))))
gumbel_l = namespace("gumbel_l", "The left-skewed Gumbel (extreme value of minima) distribution.", **_located(
    "gumbel_l", lambda y: y - fnp.exp(y),
    cdf_y=lambda y: -fnp.expm1(-fnp.exp(y)), sf_y=lambda y: fnp.exp(-fnp.exp(y)),
    logcdf_y=lambda y: special.log1mexp(fnp.exp(y)), logsf_y=lambda y: -fnp.exp(y),
    ppf_u=lambda q: fnp.log(-fnp.log1p(-q))))


# ---- gennorm ------------------------------------------------------------------------------------------
def _gennorm_logpdf(y, p):
    return fnp.log(p) - math.log(2) - special.gammaln(1 / p) - fnp.power(fnp.abs(y), p)


def _gennorm_cdf(y, p):
    tail = 0.5 * special.gammaincc(1 / p, fnp.power(fnp.abs(y), p))  # the mass beyond |y| on one side
    return fnp.where(y < 0, tail, 1.0 - tail)


gennorm = namespace("gennorm", "The generalized normal distribution of shape beta (2: normal with variance "
                    "1/2, 1: Laplace).", **_located("gennorm", _gennorm_logpdf, lambda p: p > 0, cdf_y=_gennorm_cdf))


# ---- truncnorm ------------------------------------------------------------------------------------------
def _log_mass(a, b):
    """log(Phi(b) - Phi(a)) for a < b, from the tail where the difference keeps its digits."""
    upper = a > 0  # both bounds in the right tail: Phi(-a) - Phi(-b)
    lo, hi = fnp.where(upper, -b, a), fnp.where(upper, -a, b)
    log_hi, log_lo = special.log_ndtr(hi), special.log_ndtr(lo)
    return log_hi + fnp.log(-fnp.expm1(log_lo - log_hi))


def _truncnorm_logpdf(y, a, b):
    inside = (y >= a) & (y <= b)
    return outside(inside, -0.5 * y * y - 0.5 * _LOG_2PI - _log_mass(a, b), -math.inf)


def _truncnorm_log_below(y, a, b):
    """log of the mass in [a, y]: -inf at or below a."""
    clipped = fnp.clip(y, a, b)
    log = _log_mass(a, fnp.where(clipped > a, clipped, b)) - _log_mass(a, b)
    return outside(y > a, fnp.minimum(log, 0.0), -math.inf)


def _truncnorm_log_above(y, a, b):
    return _truncnorm_log_below(-y, -b, -a)  # the mirror image


def _truncnorm_logcdf(y, a, b):
    below = _truncnorm_log_below(y, a, b)  # near 1, from the small mass above
    return fnp.where(below < -math.log(2), below, fnp.log1p(-fnp.exp(_truncnorm_log_above(y, a, b))))


def _truncnorm_logsf(y, a, b):
    return _truncnorm_logcdf(-y, -b, -a)


truncnorm = namespace("truncnorm", "The normal distribution truncated to [a, b] (in standard units: "
                      "truncnorm.logpdf(x, a, b, loc=0, scale=1)).", **_located(
    "truncnorm", _truncnorm_logpdf, lambda a, b: a < b, cdf_y=lambda y, a, b: fnp.exp(_truncnorm_logcdf(y, a, b)),
    sf_y=lambda y, a, b: fnp.exp(_truncnorm_logsf(y, a, b)), logcdf_y=_truncnorm_logcdf, logsf_y=_truncnorm_logsf))


# ---- wrapcauchy ---------------------------------------------------------------------------------------------
def _wrapcauchy_logpdf(y, c):
    inside = (y >= 0) & (y <= 2 * math.pi)
    value = fnp.log1p(-c * c) - _LOG_2PI - fnp.log1p(c * c - 2 * c * fnp.cos(y))
    return outside(inside, value, -math.inf)


wrapcauchy = namespace("wrapcauchy", "The wrapped Cauchy distribution on [0, 2 pi] of shape c.",
                       **_located("wrapcauchy", _wrapcauchy_logpdf, lambda c: (c > 0) & (c < 1)))


# ---- vonmises -----------------------------------------------------------------------------------------------
def _vonmises_logpdf(y, kappa):
    """kappa cos(y) - log(2 pi I_0(kappa)), with I_0 scaled: log I_0(kappa) = log i0e(kappa) + kappa."""
    return kappa * (fnp.cos(y) - 1) - _LOG_2PI - fnp.log(special.i0e(kappa))


vonmises = namespace("vonmises", "The von Mises distribution (a circular normal) of concentration kappa.",
                     **_located("vonmises", _vonmises_logpdf, lambda kappa: kappa > 0))
