"""Continuous distributions: location-scale families, the gamma family, Dirichlet and the
multivariate normal."""
from __future__ import annotations

import math

import numpy as np

from .. import numpy as fnp
from .. import random
from ..array import Array
from ..nn import _functional as F
from ..numpy import linalg
from ..scipy import special, stats
from ..tree import static_field
from . import constraints
from ._base import Distribution, _check, _distribution, _factored_matrices


@_distribution
class _LocationScale(Distribution):
    """loc + scale * a standard draw (STANDARD(key, shape, dtype)): Normal and Laplace."""
    loc: Array
    scale: Array
    validate_args: bool = static_field(default=True)
    has_rsample = True
    PARAMETERS = ("loc", "scale")
    arg_constraints = {"loc": constraints.real, "scale": constraints.positive}
    support = constraints.real

    mean = property(lambda self: self._batch(self.loc))
    mode = mean

    def _draw(self, key, sample_shape):
        return self.loc + self.scale * type(self).STANDARD(key, self._shape(sample_shape), self.loc.dtype)


@_distribution
class Normal(_LocationScale):
    STANDARD = staticmethod(random.normal)
    variance = property(lambda self: self._batch(self.scale ** 2))

    def log_prob(self, value):
        return stats.norm.logpdf(self._checked(value), self.loc, self.scale)

    def cdf(self, value):
        return stats.norm.cdf(value, self.loc, self.scale)

    def icdf(self, q):
        return stats.norm.ppf(q, self.loc, self.scale)

    def entropy(self):
        return self._batch(0.5 + 0.5 * math.log(2 * math.pi) + fnp.log(self.scale))


@_distribution
class Uniform(Distribution):
    low: Array
    high: Array
    validate_args: bool = static_field(default=True)
    has_rsample = True
    PARAMETERS = ("low", "high")
    arg_constraints = property(lambda self: {"low": constraints.less_than(self.high),
                                             "high": constraints.greater_than(self.low)})

    @constraints.dependent_property(is_discrete=False, event_dim=0)
    def support(self):
        return constraints.interval(self.low, self.high)

    mean = property(lambda self: self._batch((self.low + self.high) / 2))
    mode = property(lambda self: self._batch(self.high * math.nan))
    variance = property(lambda self: self._batch((self.high - self.low) ** 2 / 12))

    def _draw(self, key, sample_shape):
        u = random.uniform(key, self._shape(sample_shape), self.low.dtype)
        return self.low + (self.high - self.low) * u

    def log_prob(self, value):
        value = self._checked(value)
        inside = (value >= self.low) & (value < self.high)
        return fnp.where(inside, -fnp.log(self.high - self.low), -math.inf)

    def cdf(self, value):
        return fnp.clip((value - self.low) / (self.high - self.low), 0.0, 1.0)

    def icdf(self, q):
        return self.low + q * (self.high - self.low)

    def entropy(self):
        return self._batch(fnp.log(self.high - self.low))


@_distribution
class Exponential(Distribution):
    rate: Array
    validate_args: bool = static_field(default=True)
    has_rsample = True
    PARAMETERS = ("rate",)
    arg_constraints = {"rate": constraints.positive}
    support = constraints.nonnegative

    mean = property(lambda self: 1 / self.rate)
    mode = property(lambda self: fnp.zeros_like(self.rate))
    variance = property(lambda self: self.rate ** -2)

    def _draw(self, key, sample_shape):
        return random.exponential(key, self._shape(sample_shape), self.rate.dtype) / self.rate

    def log_prob(self, value):
        value = self._checked(value)
        return stats.expon.logpdf(value, scale=1 / self.rate)

    def cdf(self, value):
        return stats.expon.cdf(value, scale=1 / self.rate)

    def icdf(self, q):
        return -fnp.log1p(-q) / self.rate

    def entropy(self):
        return 1 - fnp.log(self.rate)


@_distribution
class Laplace(_LocationScale):
    STANDARD = staticmethod(random.laplace)
    variance = property(lambda self: self._batch(2 * self.scale ** 2))

    def log_prob(self, value):
        return stats.laplace.logpdf(self._checked(value), self.loc, self.scale)

    def cdf(self, value):
        return stats.laplace.cdf(value, self.loc, self.scale)

    def icdf(self, q):
        centred = q - 0.5
        return self.loc - self.scale * fnp.sign(centred) * fnp.log1p(-2 * fnp.abs(centred))

    def entropy(self):
        return self._batch(1 + fnp.log(2 * self.scale))


@_distribution
class Cauchy(_LocationScale):
    STANDARD = staticmethod(random.cauchy)
    mean = property(lambda self: fnp.full(self.batch_shape, math.nan, self.loc.dtype))
    mode = property(lambda self: self._batch(self.loc))
    variance = property(lambda self: fnp.full(self.batch_shape, math.inf, self.loc.dtype))

    def log_prob(self, value):
        return stats.cauchy.logpdf(self._checked(value), self.loc, self.scale)

    def cdf(self, value):
        return stats.cauchy.cdf(value, self.loc, self.scale)

    def icdf(self, q):
        return self.loc + self.scale * fnp.tan(math.pi * (q - 0.5))

    def entropy(self):
        return self._batch(math.log(4 * math.pi) + fnp.log(self.scale))


@_distribution
class LogNormal(_LocationScale):
    """exp of Normal(loc, scale)."""
    support = constraints.positive
    mean = property(lambda self: self._batch(fnp.exp(self.loc + self.scale ** 2 / 2)))
    mode = property(lambda self: self._batch(fnp.exp(self.loc - self.scale ** 2)))
    variance = property(lambda self: self._batch(fnp.expm1(self.scale ** 2) * fnp.exp(2 * self.loc + self.scale ** 2)))

    def _draw(self, key, sample_shape):
        return fnp.exp(self.loc + self.scale * random.normal(key, self._shape(sample_shape), self.loc.dtype))

    def log_prob(self, value):
        value = self._checked(value)
        log = fnp.log(value)
        return stats.norm.logpdf(log, self.loc, self.scale) - log

    def cdf(self, value):
        return stats.norm.cdf(fnp.log(value), self.loc, self.scale)

    def icdf(self, q):
        return fnp.exp(stats.norm.ppf(q, self.loc, self.scale))

    def entropy(self):
        return self._batch(0.5 + 0.5 * math.log(2 * math.pi) + fnp.log(self.scale) + self.loc)


@_distribution
class HalfNormal(Distribution):
    """|Normal(0, scale)|."""
    scale: Array
    validate_args: bool = static_field(default=True)
    has_rsample = True
    PARAMETERS = ("scale",)
    arg_constraints = {"scale": constraints.positive}
    support = constraints.nonnegative

    mean = property(lambda self: self.scale * math.sqrt(2 / math.pi))
    mode = property(lambda self: fnp.zeros_like(self.scale))
    variance = property(lambda self: self.scale ** 2 * (1 - 2 / math.pi))

    def _draw(self, key, sample_shape):
        return fnp.abs(self.scale * random.normal(key, self._shape(sample_shape), self.scale.dtype))

    def log_prob(self, value):
        value = self._checked(value)
        return fnp.where(value >= 0, math.log(2) + stats.norm.logpdf(value, 0.0, self.scale), -math.inf)

    def cdf(self, value):
        return special.erf(fnp.maximum(value, 0.0) / (self.scale * math.sqrt(2)))

    def icdf(self, q):
        return self.scale * math.sqrt(2) * special.erfinv(q)

    def entropy(self):
        return 0.5 * fnp.log(math.pi * self.scale ** 2 / 2) + 0.5


@_distribution
class StudentT(Distribution):
    df: Array
    loc: Array = 0.0
    scale: Array = 1.0
    validate_args: bool = static_field(default=True)
    has_rsample = True
    PARAMETERS = ("df", "loc", "scale")
    arg_constraints = {"df": constraints.positive, "loc": constraints.real, "scale": constraints.positive}
    support = constraints.real

    @property
    def mean(self):
        return self._batch(fnp.where(self.df > 1, self.loc, math.nan))

    mode = property(lambda self: self._batch(self.loc))

    @property
    def variance(self):
        df = self.df
        finite = self.scale ** 2 * df / fnp.where(df > 2, df - 2, 1.0)
        return self._batch(fnp.where(df > 2, finite, fnp.where(df > 1, math.inf, math.nan)))

    def _draw(self, key, sample_shape):
        shape = self._shape(sample_shape)
        k_normal, k_chi2 = random.split(key)
        half = fnp.broadcast_to(self.df / 2, shape)
        chi2 = 2 * random.gamma(k_chi2, half, dtype=half.dtype)  # reparameterised in df as well
        return self.loc + self.scale * random.normal(k_normal, shape, half.dtype) * fnp.sqrt(self.df / chi2)

    def log_prob(self, value):
        return stats.t.logpdf(self._checked(value), self.df, self.loc, self.scale)

    def cdf(self, value):
        return stats.t.cdf(value, self.df, self.loc, self.scale)

    def entropy(self):
        half = self.df / 2
        return self._batch((half + 0.5) * (special.digamma(half + 0.5) - special.digamma(half))
                           + 0.5 * fnp.log(self.df) + special.betaln(half, 0.5) + fnp.log(self.scale))


class _GammaFamily(Distribution):
    """The Gamma(concentration, rate) formulas, for Gamma and Chi2 (a gamma of df / 2 and rate 1/2)."""
    has_rsample = True
    support = constraints.nonnegative

    mean = property(lambda self: self._batch(self.concentration / self.rate))
    variance = property(lambda self: self._batch(self.concentration / self.rate ** 2))
    mode = property(lambda self: self._batch(fnp.maximum((self.concentration - 1) / self.rate, 0.0)))

    def _draw(self, key, sample_shape):
        a = fnp.broadcast_to(self.concentration, self._shape(sample_shape))
        return random.gamma(key, a, dtype=a.dtype) / self.rate

    def log_prob(self, value):
        value = self._checked(value)
        return stats.gamma.logpdf(value, self.concentration, scale=1 / self.rate)

    def cdf(self, value):
        return special.gammainc(self.concentration, fnp.maximum(value, 0.0) * self.rate)

    def entropy(self):
        a = self.concentration
        return self._batch(a - fnp.log(self.rate) + special.gammaln(a) + (1 - a) * special.digamma(a))


@_distribution
class Gamma(_GammaFamily):
    concentration: Array
    rate: Array
    validate_args: bool = static_field(default=True)
    PARAMETERS = ("concentration", "rate")
    arg_constraints = {"concentration": constraints.positive, "rate": constraints.positive}


@_distribution
class Chi2(_GammaFamily):
    df: Array
    validate_args: bool = static_field(default=True)
    PARAMETERS = ("df",)
    arg_constraints = {"df": constraints.positive}

    concentration = property(lambda self: self.df / 2)
    rate = property(lambda self: fnp.full_like(self.df, 0.5))


def _dirichlet_mode(concentration):
    """PyTorch's: the normalised concentrations above 1, or, where every concentration is below 1,
    the corner of the largest (the first, as every ratio is then 0 / 0); NaN where none is above 1
    and some is 1 (Dirichlet(1, 1) is uniform: no mode)."""
    above = fnp.maximum(concentration - 1, 0.0)
    total = fnp.sum(above, -1, keepdims=True)
    corner = F.one_hot(fnp.argmax(fnp.where(total > 0, above, 0.0), axis=-1), concentration.shape[-1],
                       concentration.dtype)
    mode = fnp.where(total > 0, above / fnp.where(total > 0, total, 1.0), math.nan)
    return fnp.where(fnp.all(concentration < 1, -1, keepdims=True), corner, mode)


@_distribution
class Beta(Distribution):
    concentration1: Array
    concentration0: Array
    validate_args: bool = static_field(default=True)
    has_rsample = True
    PARAMETERS = ("concentration1", "concentration0")
    arg_constraints = {"concentration1": constraints.positive, "concentration0": constraints.positive}
    support = constraints.unit_interval

    mean = property(lambda self: self.concentration1 / (self.concentration1 + self.concentration0))
    mode = property(lambda self: _dirichlet_mode(fnp.stack(fnp.broadcast_arrays(self.concentration1,
                                                                                  self.concentration0), -1))[..., 0])

    @property
    def variance(self):
        a, b = self.concentration1, self.concentration0
        return a * b / ((a + b) ** 2 * (a + b + 1))

    def _draw(self, key, sample_shape):
        shape = self._shape(sample_shape)
        return random.beta(key, fnp.broadcast_to(self.concentration1, shape),
                           fnp.broadcast_to(self.concentration0, shape), dtype=self.concentration1.dtype)

    def log_prob(self, value):
        value = self._checked(value)
        return stats.beta.logpdf(value, self.concentration1, self.concentration0)

    def entropy(self):
        a, b = self.concentration1, self.concentration0
        return (special.betaln(a, b) - (a - 1) * special.digamma(a) - (b - 1) * special.digamma(b)
                + (a + b - 2) * special.digamma(a + b))


@_distribution
class Dirichlet(Distribution):
    concentration: Array
    validate_args: bool = static_field(default=True)
    has_rsample = True

    PARAMETERS = ("concentration",)
    arg_constraints = {"concentration": constraints.independent(constraints.positive, 1)}
    support = constraints.simplex

    def __post_init__(self):
        super().__post_init__()
        if self.concentration.ndim < 1:
            raise ValueError("Dirichlet: concentration needs a last axis of categories")

    batch_shape = property(lambda self: tuple(self.concentration.shape[:-1]))
    event_shape = property(lambda self: tuple(self.concentration.shape[-1:]))
    mean = property(lambda self: self.concentration / fnp.sum(self.concentration, -1, keepdims=True))
    mode = property(lambda self: _dirichlet_mode(self.concentration))

    @property
    def variance(self):
        total = fnp.sum(self.concentration, -1, keepdims=True)
        m = self.concentration / total
        return m * (1 - m) / (total + 1)

    def _draw(self, key, sample_shape):
        alpha = fnp.broadcast_to(self.concentration, self._shape(sample_shape))
        return random.dirichlet(key, alpha, dtype=alpha.dtype)

    def log_prob(self, value):
        value = self._checked(value)
        alpha = self.concentration
        return (fnp.sum(special.xlogy(alpha - 1, value), -1) + special.gammaln(fnp.sum(alpha, -1))
                - fnp.sum(special.gammaln(alpha), -1))

    def entropy(self):
        alpha = self.concentration
        total = fnp.sum(alpha, -1)
        k = alpha.shape[-1]
        return (fnp.sum(special.gammaln(alpha), -1) - special.gammaln(total) + (total - k) * special.digamma(total)
                - fnp.sum((alpha - 1) * special.digamma(alpha), -1))


@_distribution
class MultivariateNormal(Distribution):
    """N(loc, covariance): one of covariance_matrix, scale_tril (its Cholesky factor) and
    precision_matrix; all three are then fields (as given, not broadcast with loc)."""
    loc: Array
    covariance_matrix: Array | None = None
    scale_tril: Array | None = None
    precision_matrix: Array | None = None
    validate_args: bool = static_field(default=True)
    has_rsample = True
    arg_constraints = {"loc": constraints.real_vector, "covariance_matrix": constraints.positive_definite,
                       "precision_matrix": constraints.positive_definite, "scale_tril": constraints.lower_cholesky}
    support = constraints.real_vector

    def __post_init__(self):
        given = [m is not None for m in (self.covariance_matrix, self.scale_tril, self.precision_matrix)]
        if sum(given) != 1:
            raise ValueError("MultivariateNormal: give exactly one of covariance_matrix, scale_tril, precision_matrix")
        loc = fnp._float_arg(self.loc)
        if self.scale_tril is not None:
            tril = fnp._float_arg(self.scale_tril)
        elif self.covariance_matrix is not None:
            tril = linalg.cholesky(fnp._float_arg(self.covariance_matrix))
        else:
            tril = linalg.cholesky(linalg.inv(fnp._float_arg(self.precision_matrix)))
        if loc.ndim < 1 or tril.shape[-1] != loc.shape[-1] or tril.shape[-2] != loc.shape[-1]:
            raise ValueError(f"MultivariateNormal: loc of shape {tuple(loc.shape)} and a matrix of shape "
                             f"{tuple(tril.shape)} do not match")
        if self.validate_args:
            _check(fnp.diagonal(tril, 0, -2, -1) > 0, "MultivariateNormal: the matrix must be positive definite")
        for name, value in {"loc": loc, **_factored_matrices(tril)}.items():
            object.__setattr__(self, name, value)

    batch_shape = property(lambda self: np.broadcast_shapes(tuple(self.loc.shape[:-1]),
                                                            tuple(self.scale_tril.shape[:-2])))
    event_shape = property(lambda self: tuple(self.loc.shape[-1:]))
    mean = property(lambda self: fnp.broadcast_to(self.loc, self.batch_shape + self.event_shape))
    mode = mean
    variance = property(lambda self: fnp.broadcast_to(fnp.sum(self.scale_tril ** 2, -1),
                                                      self.batch_shape + self.event_shape))

    def _draw(self, key, sample_shape):
        eps = random.normal(key, self._shape(sample_shape), self.loc.dtype)
        return self.loc + fnp.squeeze(self.scale_tril @ fnp.expand_dims(eps, -1), -1)

    def log_prob(self, value):
        diff = fnp._float_arg(value) - self.loc
        d = self.loc.shape[-1]
        solved = fnp.squeeze(linalg.inv(self.scale_tril) @ fnp.expand_dims(diff, -1), -1)
        half_log_det = fnp.sum(fnp.log(fnp.diagonal(self.scale_tril, 0, -2, -1)), -1)
        return -0.5 * (d * math.log(2 * math.pi) + fnp.sum(solved * solved, -1)) - half_log_det

    def entropy(self):
        d = self.loc.shape[-1]
        half_log_det = fnp.sum(fnp.log(fnp.diagonal(self.scale_tril, 0, -2, -1)), -1)
        return fnp.broadcast_to(0.5 * d * (1 + math.log(2 * math.pi)) + half_log_det, self.batch_shape)
