"""Multivariate distributions: multivariate_normal (through a Cholesky factor, or with
allow_singular the pseudo-inverse and pseudo-determinant of an eigendecomposition, as SciPy),
dirichlet and multinomial."""
from __future__ import annotations

import math

from ... import numpy as fnp
from ...numpy import linalg
from .. import special
from ._common import floats, namespace


def _covariance(cov, d: int):
    """SciPy's forms: a scalar (cov * I), a vector (its diagonal) or a (..., d, d) matrix."""
    if cov.ndim == 0:
        return cov * fnp.eye(d, dtype=cov.dtype)
    if cov.ndim == 1:
        if cov.shape[0] != d:
            raise ValueError(f"multivariate_normal: a diagonal cov needs {d} entries, got {cov.shape[0]}")
        return fnp.diag(cov)
    if tuple(cov.shape[-2:]) != (d, d):
        raise ValueError(f"multivariate_normal: cov of shape {tuple(cov.shape)} does not match a mean of {d} entries")
    return cov


def _mvn_logpdf(x, mean=0.0, cov=1.0, allow_singular: bool = False):
    """log N(x; mean, cov) over x's last axis, of mean's length; a scalar mean (with a scalar cov) is
    the one-dimensional normal, taken elementwise over x (SciPy's and JAX's reading)."""
    x, mean, cov = floats(x, mean, cov)
    if mean.ndim == 0:
        if cov.ndim:
            raise ValueError(f"multivariate_normal: a scalar mean needs a scalar cov, got shape {tuple(cov.shape)}")
        return -0.5 * ((x - mean) ** 2 / cov + math.log(2 * math.pi) + fnp.log(cov))
    d = mean.shape[-1]
    if x.shape[-1:] != (d,):
        raise ValueError(f"multivariate_normal: x's last axis has {x.shape[-1:] or 'no'} entries, mean {d}")
    cov = _covariance(cov, d)
    diff = x - mean
    if not allow_singular:
        lower = linalg.cholesky(cov)
        solved = fnp.squeeze(fnp.matmul(linalg.inv(lower), fnp.expand_dims(diff, -1)), -1)  # L^-1 (x - mean)
        log_det = 2 * fnp.sum(fnp.log(fnp.diagonal(lower, 0, -2, -1)), axis=-1)
        return -0.5 * (d * math.log(2 * math.pi) + log_det + fnp.sum(solved * solved, axis=-1))
    values, vectors = linalg.eigh(cov)
    top = fnp.max(fnp.abs(values), axis=-1, keepdims=True)
    kept = values > 1e6 * fnp.finfo(values.dtype).eps * top  # SciPy's cutoff
    inverse = fnp.where(kept, 1 / fnp.where(kept, values, 1.0), 0.0)
    coords = fnp.squeeze(fnp.matmul(fnp.swapaxes(vectors, -1, -2), fnp.expand_dims(diff, -1)), -1)
    rank = fnp.sum(fnp.astype(kept, values.dtype), axis=-1)
    log_pdet = fnp.sum(fnp.where(kept, fnp.log(fnp.where(kept, values, 1.0)), 0.0), axis=-1)
    value = -0.5 * (rank * math.log(2 * math.pi) + log_pdet + fnp.sum(inverse * coords * coords, axis=-1))
    off_support = fnp.sum(fnp.where(kept, 0.0, coords * coords), axis=-1)  # x - mean outside cov's range
    tolerance = 1e6 * fnp.finfo(values.dtype).eps * (1 + fnp.sum(diff * diff, axis=-1))
    return fnp.where(off_support > tolerance, -math.inf, value)


def _mvn_pdf(x, mean=0.0, cov=1.0, allow_singular: bool = False):
    return fnp.exp(_mvn_logpdf(x, mean, cov, allow_singular))


multivariate_normal = namespace("multivariate_normal", "The multivariate normal distribution N(mean, cov).",
                                logpdf=_mvn_logpdf, pdf=_mvn_pdf)


def _dirichlet_logpdf(x, alpha):
    """log Dirichlet(x; alpha) with SciPy's layout: x of shape (K,) or (K, N), alpha of shape (K,);
    -inf where x is off the simplex (a negative entry, or a sum that is not 1)."""
    x, alpha = floats(x, alpha)
    if alpha.ndim != 1 or x.ndim not in (1, 2) or x.shape[0] != alpha.shape[0]:
        raise ValueError(f"dirichlet: x must be (K,) or (K, N) for alpha of shape (K,), got x {tuple(x.shape)} "
                         f"and alpha {tuple(alpha.shape)}")
    a = alpha if x.ndim == 1 else alpha[:, None]
    log_norm = fnp.sum(special.gammaln(alpha)) - special.gammaln(fnp.sum(alpha))
    value = fnp.sum(special.xlogy(a - 1, x), axis=0) - log_norm
    on_simplex = fnp.all(x >= 0, axis=0) & (fnp.abs(fnp.sum(x, axis=0) - 1) <= 1e3 * fnp.finfo(x.dtype).eps)
    return fnp.where(fnp.all(alpha > 0) & on_simplex, value, fnp.where(fnp.all(alpha > 0), -math.inf, math.nan))


def _dirichlet_pdf(x, alpha):
    return fnp.exp(_dirichlet_logpdf(x, alpha))


dirichlet = namespace("dirichlet", "The Dirichlet distribution on the simplex.", logpdf=_dirichlet_logpdf,
                      pdf=_dirichlet_pdf)


def _multinomial_logpmf(x, n, p):
    """log Multinomial(x; n, p) over the last axis; -inf unless x are non-negative integers summing to n."""
    x, n, p = floats(x, n, p)
    value = special.gammaln(n + 1) + fnp.sum(special.xlogy(x, p) - special.gammaln(x + 1), axis=-1)
    possible = fnp.all((x >= 0) & (x == fnp.floor(x)), axis=-1) & (fnp.sum(x, axis=-1) == n)
    return fnp.where(possible, value, -math.inf)


def _multinomial_pmf(x, n, p):
    return fnp.exp(_multinomial_logpmf(x, n, p))


multinomial = namespace("multinomial", "The multinomial distribution of n trials over p's categories.",
                        logpmf=_multinomial_logpmf, pmf=_multinomial_pmf)
