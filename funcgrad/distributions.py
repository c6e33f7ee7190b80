"""Probability distributions as PyTorch users know them (torch.distributions), in JAX style: frozen
pytrees whose samplers take a key (numpyro's `sample(key, sample_shape)`), so they pass through jit,
grad and vmap. rsample is the reparameterised draw (differentiable in the parameters: location-scale
transforms, and the implicit gradients of funcgrad.random's gamma family); sample is the same draw
with the gradient stopped. log_prob, cdf, icdf, entropy, mean, variance and kl_divergence follow
PyTorch's formulas; with validate_args (PyTorch's default) invalid parameters and values outside the
support raise ValueError when they are concrete."""
from __future__ import annotations

import dataclasses
import math
from typing import Callable

import numpy as np

from . import numpy as fnp
from . import random
from .array import Array
from .nn import _functional as F
from .numpy import linalg
from .scipy import special, stats
from .tree import register_dataclass, static_field

__all__ = ["Distribution", "Normal", "Uniform", "Exponential", "Laplace", "Gamma", "Beta", "Dirichlet", "Bernoulli",
           "Categorical", "Poisson", "MultivariateNormal", "kl_divergence", "register_kl"]


def _check(condition, message: str) -> None:
    """Raise where a concrete condition fails (under jit the values are unknown: no check)."""
    known = fnp.concrete_or_none(condition)
    if known is not None and not np.all(known):
        raise ValueError(message)


class Distribution:
    """What every distribution has: shapes, sample, and the moments derived from variance. A
    subclass names its PARAMETERS (converted to Arrays of one float dtype when it is made) and the
    check they must pass (valid -> (condition, message))."""
    has_rsample = False
    PARAMETERS: tuple = ()

    def __post_init__(self):
        values = _params(*(getattr(self, name) for name in self.PARAMETERS))
        for name, value in zip(self.PARAMETERS, values):
            object.__setattr__(self, name, value)
        if self.validate_args:
            condition, message = self.valid()
            _check(condition, f"{type(self).__name__}: {message}")

    @property
    def batch_shape(self) -> tuple:
        return np.broadcast_shapes(*(tuple(getattr(self, name).shape) for name in self.PARAMETERS))

    def _batch(self, value) -> Array:
        return fnp.broadcast_to(value, self.batch_shape)

    @property
    def event_shape(self) -> tuple:
        return ()

    @property
    def stddev(self) -> Array:
        return fnp.sqrt(self.variance)

    def sample(self, key, sample_shape=()) -> Array:
        """A draw of shape sample_shape + batch_shape + event_shape, without gradient."""
        return fnp.stop_gradient(self._draw(key, tuple(sample_shape)))

    def rsample(self, key, sample_shape=()) -> Array:
        """The reparameterised draw: differentiable in the parameters."""
        if not self.has_rsample:
            raise TypeError(f"{type(self).__name__} has no reparameterised sampler (rsample); use sample")
        return self._draw(key, tuple(sample_shape))

    def _shape(self, sample_shape: tuple) -> tuple:
        return tuple(sample_shape) + tuple(self.batch_shape) + tuple(self.event_shape)

    def _checked(self, value, inside, support: str):
        value = fnp._float_arg(value)
        if self.validate_args:
            _check(inside(value), f"{type(self).__name__}.log_prob: a value lies outside the support ({support})")
        return value


def _params(*values):
    return fnp._float_args(*values)


def _distribution(cls):
    """A frozen dataclass pytree: its parameters are children, validate_args is structure."""
    return register_dataclass(dataclasses.dataclass(frozen=True)(cls))


@_distribution
class _LocationScale(Distribution):
    """loc + scale * a standard draw (STANDARD(key, shape, dtype)): Normal and Laplace."""
    loc: Array
    scale: Array
    validate_args: bool = static_field(default=True)
    has_rsample = True
    PARAMETERS = ("loc", "scale")

    def valid(self):
        return self.scale > 0, "scale must be positive"

    mean = property(lambda self: self._batch(self.loc))

    def _draw(self, key, sample_shape):
        return self.loc + self.scale * type(self).STANDARD(key, self._shape(sample_shape), self.loc.dtype)


@_distribution
class Normal(_LocationScale):
    STANDARD = staticmethod(random.normal)
    variance = property(lambda self: self._batch(self.scale ** 2))

    def log_prob(self, value):
        return stats.norm.logpdf(self._checked(value, lambda v: v == v, "real"), self.loc, self.scale)

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

    def valid(self):
        return self.low < self.high, "low must be below high"

    mean = property(lambda self: self._batch((self.low + self.high) / 2))
    variance = property(lambda self: self._batch((self.high - self.low) ** 2 / 12))

    def _draw(self, key, sample_shape):
        u = random.uniform(key, self._shape(sample_shape), self.low.dtype)
        return self.low + (self.high - self.low) * u

    def log_prob(self, value):
        value = self._checked(value, lambda v: (v >= self.low) & (v < self.high), "[low, high)")
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

    def valid(self):
        return self.rate > 0, "rate must be positive"

    mean = property(lambda self: 1 / self.rate)
    variance = property(lambda self: self.rate ** -2)

    def _draw(self, key, sample_shape):
        return random.exponential(key, self._shape(sample_shape), self.rate.dtype) / self.rate

    def log_prob(self, value):
        value = self._checked(value, lambda v: v >= 0, "x >= 0")
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
        return stats.laplace.logpdf(self._checked(value, lambda v: v == v, "real"), self.loc, self.scale)

    def cdf(self, value):
        return stats.laplace.cdf(value, self.loc, self.scale)

    def icdf(self, q):
        centred = q - 0.5
        return self.loc - self.scale * fnp.sign(centred) * fnp.log1p(-2 * fnp.abs(centred))

    def entropy(self):
        return self._batch(1 + fnp.log(2 * self.scale))


@_distribution
class Gamma(Distribution):
    concentration: Array
    rate: Array
    validate_args: bool = static_field(default=True)
    has_rsample = True
    PARAMETERS = ("concentration", "rate")

    def valid(self):
        return (self.concentration > 0) & (self.rate > 0), "concentration and rate must be positive"

    mean = property(lambda self: self._batch(self.concentration / self.rate))
    variance = property(lambda self: self._batch(self.concentration / self.rate ** 2))

    def _draw(self, key, sample_shape):
        a = fnp.broadcast_to(self.concentration, self._shape(sample_shape))
        return random.gamma(key, a, dtype=a.dtype) / self.rate

    def log_prob(self, value):
        value = self._checked(value, lambda v: v >= 0, "x >= 0")
        return stats.gamma.logpdf(value, self.concentration, scale=1 / self.rate)

    def cdf(self, value):
        return special.gammainc(self.concentration, fnp.maximum(value, 0.0) * self.rate)

    def entropy(self):
        a = self.concentration
        return a - fnp.log(self.rate) + special.gammaln(a) + (1 - a) * special.digamma(a)


@_distribution
class Beta(Distribution):
    concentration1: Array
    concentration0: Array
    validate_args: bool = static_field(default=True)
    has_rsample = True
    PARAMETERS = ("concentration1", "concentration0")

    def valid(self):
        return (self.concentration1 > 0) & (self.concentration0 > 0), "concentrations must be positive"

    mean = property(lambda self: self.concentration1 / (self.concentration1 + self.concentration0))

    @property
    def variance(self):
        a, b = self.concentration1, self.concentration0
        return a * b / ((a + b) ** 2 * (a + b + 1))

    def _draw(self, key, sample_shape):
        shape = self._shape(sample_shape)
        return random.beta(key, fnp.broadcast_to(self.concentration1, shape),
                           fnp.broadcast_to(self.concentration0, shape), dtype=self.concentration1.dtype)

    def log_prob(self, value):
        value = self._checked(value, lambda v: (v >= 0) & (v <= 1), "[0, 1]")
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

    def __post_init__(self):
        super().__post_init__()
        if self.concentration.ndim < 1:
            raise ValueError("Dirichlet: concentration needs a last axis of categories")

    def valid(self):
        return self.concentration > 0, "concentration must be positive"

    batch_shape = property(lambda self: tuple(self.concentration.shape[:-1]))
    event_shape = property(lambda self: tuple(self.concentration.shape[-1:]))
    mean = property(lambda self: self.concentration / fnp.sum(self.concentration, -1, keepdims=True))

    @property
    def variance(self):
        total = fnp.sum(self.concentration, -1, keepdims=True)
        m = self.concentration / total
        return m * (1 - m) / (total + 1)

    def _draw(self, key, sample_shape):
        alpha = fnp.broadcast_to(self.concentration, self._shape(sample_shape))
        return random.dirichlet(key, alpha, dtype=alpha.dtype)

    def log_prob(self, value):
        value = self._checked(value, lambda v: (v >= 0) & (fnp.abs(fnp.sum(v, -1) - 1) < 1e-5)[..., None],
                              "the simplex")
        alpha = self.concentration
        return (fnp.sum(special.xlogy(alpha - 1, value), -1) + special.gammaln(fnp.sum(alpha, -1))
                - fnp.sum(special.gammaln(alpha), -1))

    def entropy(self):
        alpha = self.concentration
        total = fnp.sum(alpha, -1)
        k = alpha.shape[-1]
        return (fnp.sum(special.gammaln(alpha), -1) - special.gammaln(total) + (total - k) * special.digamma(total)
                - fnp.sum((alpha - 1) * special.digamma(alpha), -1))


def _clamped_logit(p):
    """logit(p) with p kept eps from 0 and 1, as PyTorch's probs_to_logits (so 0 and 1 stay finite)."""
    eps = float(fnp.finfo(p.dtype).eps)
    return special.logit(fnp.clip(p, eps, 1 - eps))


def _finite(logits):
    """Logits with -inf raised to the dtype's lowest float (PyTorch's clamp), so 0 * logit is 0."""
    return fnp.maximum(logits, float(fnp.finfo(logits.dtype).min))


def _probs_or_logits(name, probs, logits, to_logits: Callable):
    if (probs is None) == (logits is None):
        raise ValueError(f"{name}: give exactly one of probs and logits")
    if probs is None:
        return fnp._float_arg(logits)
    with np.errstate(divide="ignore"):  # a zero probability is a logit of -inf
        return to_logits(fnp._float_arg(probs))


@_distribution
class Bernoulli(Distribution):
    """Bernoulli(probs=...) or Bernoulli(logits=...); the logits are kept."""
    probs: Array | None = None
    logits: Array | None = None
    validate_args: bool = static_field(default=True)

    def __post_init__(self):
        if self.probs is not None and self.validate_args:
            p = fnp._float_arg(self.probs)
            _check((p >= 0) & (p <= 1), "Bernoulli: probs must lie in [0, 1]")
        logits = _probs_or_logits("Bernoulli", self.probs, self.logits, _clamped_logit)
        object.__setattr__(self, "logits", logits)
        object.__setattr__(self, "probs", special.expit(logits))

    batch_shape = property(lambda self: tuple(self.logits.shape))
    mean = property(lambda self: self.probs)
    variance = property(lambda self: self.probs * (1 - self.probs))

    def _draw(self, key, sample_shape):
        return fnp.astype(random.bernoulli(key, self.probs, self._shape(sample_shape)), self.logits.dtype)

    def log_prob(self, value):
        value = self._checked(value, lambda v: (v == 0) | (v == 1), "{0, 1}")
        return value * self.logits - F.softplus(self.logits)

    def entropy(self):
        return F.softplus(self.logits) - self.probs * self.logits


@_distribution
class Categorical(Distribution):
    """Categorical(probs=...) or Categorical(logits=...) over the last axis; logits normalised."""
    probs: Array | None = None
    logits: Array | None = None
    validate_args: bool = static_field(default=True)

    def __post_init__(self):
        if self.probs is not None and self.validate_args:
            _check(fnp._float_arg(self.probs) >= 0, "Categorical: probs must be non-negative")
        logits = _probs_or_logits("Categorical", self.probs, self.logits, fnp.log)
        logits = logits - fnp.logsumexp(logits, axis=-1, keepdims=True)
        object.__setattr__(self, "logits", logits)
        object.__setattr__(self, "probs", fnp.exp(logits))

    batch_shape = property(lambda self: tuple(self.logits.shape[:-1]))

    @property
    def mean(self):
        """NaN: the values are labels (PyTorch's answer)."""
        return fnp.full(self.batch_shape, math.nan, self.logits.dtype)

    variance = mean

    def _draw(self, key, sample_shape):
        return random.categorical(key, self.logits, axis=-1, shape=self._shape(sample_shape))

    def log_prob(self, value):
        n = self.logits.shape[-1]
        value = fnp.asarray(value)
        if self.validate_args:
            _check((value >= 0) & (value < n) & (value == fnp.floor(value)),
                   f"Categorical.log_prob: a value is not a category in 0 .. {n - 1}")
        index = fnp.astype(value, fnp.int64)
        shape = np.broadcast_shapes(tuple(index.shape), self.batch_shape)
        logits = fnp.broadcast_to(self.logits, shape + (n,))
        return fnp.take_along_axis(logits, fnp.expand_dims(fnp.broadcast_to(index, shape), -1), axis=-1)[..., 0]

    def entropy(self):
        return -fnp.sum(self.probs * _finite(self.logits), axis=-1)


@_distribution
class Poisson(Distribution):
    rate: Array
    validate_args: bool = static_field(default=True)
    PARAMETERS = ("rate",)

    def valid(self):
        return self.rate >= 0, "rate must be non-negative"

    mean = property(lambda self: self.rate)
    variance = property(lambda self: self.rate)

    def _draw(self, key, sample_shape):
        return fnp.astype(random.poisson(key, self.rate, self._shape(sample_shape)), self.rate.dtype)

    def log_prob(self, value):
        value = self._checked(value, lambda v: (v >= 0) & (v == fnp.floor(v)), "non-negative integers")
        return special.xlogy(value, self.rate) - self.rate - special.gammaln(value + 1)


@_distribution
class MultivariateNormal(Distribution):
    """N(loc, covariance): one of covariance_matrix, scale_tril (its Cholesky factor) and
    precision_matrix; the factor is kept."""
    loc: Array
    covariance_matrix: Array | None = None
    scale_tril: Array | None = None
    precision_matrix: Array | None = None
    validate_args: bool = static_field(default=True)
    has_rsample = True

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
        covariance = tril @ fnp.swapaxes(tril, -1, -2)
        for name, value in (("loc", loc), ("scale_tril", tril), ("covariance_matrix", covariance),
                            ("precision_matrix", None)):
            object.__setattr__(self, name, value)

    batch_shape = property(lambda self: np.broadcast_shapes(tuple(self.loc.shape[:-1]),
                                                            tuple(self.scale_tril.shape[:-2])))
    event_shape = property(lambda self: tuple(self.loc.shape[-1:]))
    mean = property(lambda self: fnp.broadcast_to(self.loc, self.batch_shape + self.event_shape))
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


# ---- KL divergences ---------------------------------------------------------------------------------------
_KL: dict[tuple[type, type], Callable] = {}


def register_kl(type_p: type, type_q: type):
    """Decorator: fn(p, q) computes KL(p || q) for these types (torch.distributions.register_kl)."""
    def register(fn):
        _KL[(type_p, type_q)] = fn
        return fn
    return register


def kl_divergence(p: Distribution, q: Distribution) -> Array:
    """KL(p || q) = E_p[log p - log q], in closed form for the registered pairs."""
    rule = _KL.get((type(p), type(q)))
    if rule is None:
        raise TypeError(f"no closed-form KL divergence is registered for {type(p).__name__} || {type(q).__name__}; "
                        f"add one with register_kl or estimate it from samples")
    return rule(p, q)


@register_kl(Normal, Normal)
def _kl_normal(p, q):
    ratio = (p.scale / q.scale) ** 2
    return 0.5 * (ratio + ((p.loc - q.loc) / q.scale) ** 2 - 1 - fnp.log(ratio))


@register_kl(Uniform, Uniform)
def _kl_uniform(p, q):
    inside = (q.low <= p.low) & (p.high <= q.high)
    return fnp.where(inside, fnp.log((q.high - q.low) / (p.high - p.low)), math.inf)


@register_kl(Exponential, Exponential)
def _kl_exponential(p, q):
    ratio = q.rate / p.rate
    return ratio - 1 - fnp.log(ratio)


@register_kl(Laplace, Laplace)
def _kl_laplace(p, q):
    ratio = p.scale / q.scale
    gap = fnp.abs(p.loc - q.loc) / q.scale
    return -fnp.log(ratio) + gap + ratio * fnp.exp(-gap * q.scale / p.scale) - 1


@register_kl(Gamma, Gamma)
def _kl_gamma(p, q):
    a, b, c, d = p.concentration, p.rate, q.concentration, q.rate
    return ((a - c) * special.digamma(a) - special.gammaln(a) + special.gammaln(c) + c * (fnp.log(b) - fnp.log(d))
            + a * (d - b) / b)


@register_kl(Beta, Beta)
def _kl_beta(p, q):
    a, b, c, d = p.concentration1, p.concentration0, q.concentration1, q.concentration0
    return (special.betaln(c, d) - special.betaln(a, b) + (a - c) * special.digamma(a)
            + (b - d) * special.digamma(b) + (c - a + d - b) * special.digamma(a + b))


@register_kl(Dirichlet, Dirichlet)
def _kl_dirichlet(p, q):
    a, b = p.concentration, q.concentration
    total_a, total_b = fnp.sum(a, -1), fnp.sum(b, -1)
    return (special.gammaln(total_a) - special.gammaln(total_b) - fnp.sum(special.gammaln(a) - special.gammaln(b), -1)
            + fnp.sum((a - b) * (special.digamma(a) - special.digamma(fnp.expand_dims(total_a, -1))), -1))


@register_kl(Bernoulli, Bernoulli)
def _kl_bernoulli(p, q):
    return (p.probs * (F.softplus(-q.logits) - F.softplus(-p.logits))
            + (1 - p.probs) * (F.softplus(q.logits) - F.softplus(p.logits)))


@register_kl(Categorical, Categorical)
def _kl_categorical(p, q):
    return fnp.sum(p.probs * (_finite(p.logits) - _finite(q.logits)), axis=-1)


@register_kl(Poisson, Poisson)
def _kl_poisson(p, q):
    return special.xlogy(p.rate, p.rate / q.rate) - p.rate + q.rate


@register_kl(MultivariateNormal, MultivariateNormal)
def _kl_mvn(p, q):
    d = p.loc.shape[-1]
    inv_q = linalg.inv(q.scale_tril)
    m = inv_q @ p.scale_tril
    diff = fnp.squeeze(inv_q @ fnp.expand_dims(q.loc - p.loc, -1), -1)
    log_det = lambda t: fnp.sum(fnp.log(fnp.diagonal(t, 0, -2, -1)), -1)  # noqa: E731
    return (0.5 * (fnp.sum(m * m, (-2, -1)) + fnp.sum(diff * diff, -1) - d) + log_det(q.scale_tril)
            - log_det(p.scale_tril))
