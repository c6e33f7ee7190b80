"""Discrete distributions: Bernoulli, Categorical, OneHotCategorical, Poisson, Binomial, NegativeBinomial,
Geometric, Multinomial."""
from __future__ import annotations

import math

import numpy as np

from .. import numpy as fnp
from .. import random
from ..array import Array
from ..nn import _functional as F
from ..scipy import special
from ..tree import static_field
from . import constraints
from ._base import Distribution, _check, _clamped_logit, _distribution, _finite, _probs_or_logits


def _set_binary(dist, positive: bool = False) -> None:
    """dist.logits (PyTorch's clamped logit of probs, if probs were given) and dist.probs from them;
    probs checked to lie in [0, 1] ((0, 1] where positive)."""
    name = type(dist).__name__
    if dist.probs is not None and dist.validate_args:
        p = fnp._float_arg(dist.probs)
        _check(((p > 0) if positive else (p >= 0)) & (p <= 1),
               f"{name}: probs must lie in {'(0, 1]' if positive else '[0, 1]'}")
    logits = _probs_or_logits(name, dist.probs, dist.logits, _clamped_logit)
    object.__setattr__(dist, "logits", logits)
    object.__setattr__(dist, "probs", special.expit(logits))


def _log_of_probs(probs):
    """log p, -inf where p is 0 with a zero derivative there: log's 1 / p would make every
    gradient NaN (0 * inf in the backward pass), where PyTorch's are finite."""
    possible = probs > 0
    return fnp.where(possible, fnp.log(fnp.where(possible, probs, 1.0)), -math.inf)


def _set_categorical(dist) -> None:
    """dist.logits normalised over the last axis (log-probabilities) and dist.probs."""
    name = type(dist).__name__
    if dist.probs is not None and dist.validate_args:
        _check(fnp._float_arg(dist.probs) >= 0, f"{name}: probs must be non-negative")
    if dist.probs is None:
        logits = _probs_or_logits(name, dist.probs, dist.logits, fnp.log)
        logits = logits - fnp.logsumexp(logits, axis=-1, keepdims=True)
    else:  # normalised as probabilities (PyTorch's p / sum p): a zero one's gradient is then -1 / sum p
        probs = _probs_or_logits(name, dist.probs, dist.logits, lambda p: p)
        logits = _log_of_probs(probs / fnp.sum(probs, axis=-1, keepdims=True))
    object.__setattr__(dist, "logits", logits)
    object.__setattr__(dist, "probs", fnp.exp(logits))



@_distribution
class Bernoulli(Distribution):
    """Bernoulli(probs=...) or Bernoulli(logits=...); the logits are kept."""
    probs: Array | None = None
    logits: Array | None = None
    validate_args: bool = static_field(default=True)
    arg_constraints = {"probs": constraints.unit_interval, "logits": constraints.real}
    support = constraints.boolean

    def __post_init__(self):
        _set_binary(self)

    batch_shape = property(lambda self: tuple(self.logits.shape))
    mean = property(lambda self: self.probs)
    mode = property(lambda self: fnp.where(self.probs == 0.5, math.nan,
                                           fnp.astype(self.probs >= 0.5, self.probs.dtype)))
    variance = property(lambda self: self.probs * (1 - self.probs))

    def _draw(self, key, sample_shape):
        return fnp.astype(random.bernoulli(key, self.probs, self._shape(sample_shape)), self.logits.dtype)

    has_enumerate_support = True

    def _support_values(self):
        return fnp.arange(2, dtype=self.logits.dtype)

    def log_prob(self, value):
        value = self._checked(value)
        return value * self.logits - F.softplus(self.logits)

    def entropy(self):
        return F.softplus(self.logits) - self.probs * self.logits


@_distribution
class Categorical(Distribution):
    """Categorical(probs=...) or Categorical(logits=...) over the last axis; logits normalised."""
    probs: Array | None = None
    logits: Array | None = None
    validate_args: bool = static_field(default=True)
    arg_constraints = {"probs": constraints.simplex, "logits": constraints.independent(constraints.real, 1)}

    @constraints.dependent_property(is_discrete=True, event_dim=0)
    def support(self):
        return constraints.integer_interval(0, self.logits.shape[-1] - 1)

    def __post_init__(self):
        _set_categorical(self)

    batch_shape = property(lambda self: tuple(self.logits.shape[:-1]))

    @property
    def mean(self):
        """NaN: the values are labels (PyTorch's answer)."""
        return fnp.full(self.batch_shape, math.nan, self.logits.dtype)

    variance = mean
    mode = property(lambda self: fnp.argmax(self.probs, axis=-1))
    has_enumerate_support = True

    def _support_values(self):
        return fnp.arange(self.logits.shape[-1])

    def _draw(self, key, sample_shape):
        return random.categorical(key, self.logits, axis=-1, shape=self._shape(sample_shape))

    def log_prob(self, value):
        value = fnp.asarray(value)
        self._check_sample(value)
        return _logit_at(self.logits, fnp.astype(value, fnp.int64))

    def entropy(self):
        return -fnp.sum(self.probs * _finite(self.logits), axis=-1)


def _logit_at(logits, index):
    """logits[..., index] (normalised logits: the log-probability), index broadcast with the batch."""
    shape = np.broadcast_shapes(tuple(index.shape), tuple(logits.shape[:-1]))
    logits = fnp.broadcast_to(logits, shape + tuple(logits.shape[-1:]))
    return fnp.take_along_axis(logits, fnp.expand_dims(fnp.broadcast_to(index, shape), -1), axis=-1)[..., 0]


@_distribution
class Poisson(Distribution):
    rate: Array
    validate_args: bool = static_field(default=True)
    PARAMETERS = ("rate",)
    arg_constraints = {"rate": constraints.nonnegative}
    support = constraints.nonnegative_integer

    mean = property(lambda self: self.rate)
    mode = property(lambda self: fnp.floor(self.rate))
    variance = property(lambda self: self.rate)

    def _draw(self, key, sample_shape):
        return fnp.astype(random.poisson(key, self.rate, self._shape(sample_shape)), self.rate.dtype)

    def log_prob(self, value):
        value = self._checked(value)
        return special.xlogy(value, self.rate) - self.rate - special.gammaln(value + 1)


@_distribution
class _Trials(Distribution):
    """total_count trials with probs (or logits): Binomial's and Multinomial's fields and moments."""
    total_count: Array = 1
    probs: Array | None = None
    logits: Array | None = None
    validate_args: bool = static_field(default=True)

    mean = property(lambda self: self.total_count * self.probs)
    variance = property(lambda self: self.total_count * self.probs * (1 - self.probs))


@_distribution
class Binomial(_Trials):
    """Binomial(total_count, probs=... or logits=...)."""
    arg_constraints = {"total_count": constraints.nonnegative_integer, "probs": constraints.unit_interval,
                       "logits": constraints.real}

    @constraints.dependent_property(is_discrete=True, event_dim=0)
    def support(self):
        return constraints.integer_interval(0, self.total_count)

    def __post_init__(self):
        _set_binary(self)
        count, logits = fnp._float_args(self.total_count, self.logits)
        if self.validate_args:
            _check((count >= 0) & (count == fnp.floor(count)), "Binomial: total_count must be a non-negative integer")
        for name, value in (("total_count", count), ("logits", logits), ("probs", special.expit(logits))):
            object.__setattr__(self, name, value)

    batch_shape = property(lambda self: np.broadcast_shapes(tuple(self.total_count.shape),
                                                            tuple(self.logits.shape)))
    mode = property(lambda self: fnp.minimum(fnp.floor((self.total_count + 1) * self.probs), self.total_count))
    has_enumerate_support = True

    def _support_values(self):
        known = fnp.concrete_or_none(self.total_count)
        if known is None or np.min(known) != np.max(known):
            raise ValueError("Binomial.enumerate_support needs one total_count for the whole batch, known (not "
                             "traced): the supports differ otherwise")
        return fnp.arange(int(np.max(known)) + 1, dtype=self.logits.dtype)

    def _draw(self, key, sample_shape):
        return random.binomial(key, self.total_count, self.probs, self._shape(sample_shape), self.logits.dtype)

    def log_prob(self, value):
        return self._log_pmf(self._checked(value))

    def _log_pmf(self, k):
        n = self.total_count
        log_choose = special.gammaln(n + 1) - special.gammaln(k + 1) - special.gammaln(n - k + 1)
        # k logits - n softplus(logits) = k log p + (n - k) log(1 - p), finite for any logit
        return log_choose + k * self.logits - n * F.softplus(self.logits)

    def entropy(self):
        """-sum_k p_k log p_k over 0 .. max(total_count) (the count must be concrete)."""
        known = fnp.concrete_or_none(self.total_count)
        if known is None:
            raise TypeError("Binomial.entropy enumerates the support: total_count must be concrete (not under jit)")
        support = np.arange(int(np.max(known)) + 1).reshape((-1,) + (1,) * len(self.batch_shape))
        k = fnp.asarray(support.astype(self.logits.dtype))
        log_p = self._log_pmf(fnp.minimum(k, self.total_count))
        return -fnp.sum(fnp.where(k <= self.total_count, fnp.exp(log_p) * log_p, 0.0), axis=0)


@_distribution
class Geometric(Distribution):
    """The number of failures before the first success (PyTorch's support 0, 1, 2, ...)."""
    probs: Array | None = None
    logits: Array | None = None
    validate_args: bool = static_field(default=True)
    arg_constraints = {"probs": constraints.unit_interval, "logits": constraints.real}
    support = constraints.nonnegative_integer

    def __post_init__(self):
        _set_binary(self, positive=True)

    batch_shape = property(lambda self: tuple(self.logits.shape))
    mean = property(lambda self: 1 / self.probs - 1)
    mode = property(lambda self: fnp.zeros_like(self.probs))
    variance = property(lambda self: (1 / self.probs - 1) / self.probs)

    def _draw(self, key, sample_shape):
        u = random.uniform(key, self._shape(sample_shape), self.logits.dtype)
        return fnp.floor(fnp.log1p(-u) / -F.softplus(self.logits))  # log(1 - p) = -softplus(logits)

    def log_prob(self, value):
        value = self._checked(value)
        return -value * F.softplus(self.logits) - F.softplus(-self.logits)

    def entropy(self):
        return (F.softplus(self.logits) - self.probs * self.logits) / self.probs


@_distribution
class Multinomial(_Trials):
    """Multinomial(total_count, probs=... or logits=...) over the last axis; total_count an int."""
    arg_constraints = {"probs": constraints.simplex, "logits": constraints.independent(constraints.real, 1)}

    @constraints.dependent_property(is_discrete=True, event_dim=1)
    def support(self):
        return constraints.multinomial(self.total_count)

    def __post_init__(self):
        _set_categorical(self)

    batch_shape = property(lambda self: tuple(self.logits.shape[:-1]))
    event_shape = property(lambda self: tuple(self.logits.shape[-1:]))

    def _draw(self, key, sample_shape):
        probs = fnp.broadcast_to(self.probs, self._shape(sample_shape))
        return random.multinomial(key, float(self.total_count), probs, dtype=self.logits.dtype)

    def log_prob(self, value):
        def counts(v):  # PyTorch's support asks for a sum up to total_count; the formula needs it exact
            return fnp.all((v >= 0) & (v == fnp.floor(v)), axis=-1) & (fnp.sum(v, -1) == self.total_count)
        value = self._checked(value, counts, "counts summing to total_count")
        n = fnp.asarray(self.total_count + 1.0, dtype=self.logits.dtype)
        return (special.gammaln(n) - fnp.sum(special.gammaln(value + 1), -1)
                + fnp.sum(value * _finite(self.logits), -1))

    def entropy(self):
        """PyTorch's: n H(categorical) - log n! + sum over coordinates and k = 1 .. n of
        Binomial(n, p_i)(k) log k! (total_count must be concrete)."""
        n = int(self.total_count)
        p = self.probs
        k = fnp.asarray(np.arange(1, n + 1, dtype=np.float64).reshape((-1,) + (1,) * p.ndim), dtype=p.dtype)
        log_binomial = (math.lgamma(n + 1) - special.gammaln(k + 1) - special.gammaln(n - k + 1)
                        + special.xlogy(k, p) + special.xlog1py(n - k, -p))
        weighted = fnp.sum(fnp.exp(log_binomial) * special.gammaln(k + 1), axis=(0, -1))
        categorical = -fnp.sum(p * _finite(self.logits), axis=-1)
        return n * categorical - math.lgamma(n + 1) + weighted


@_distribution
class OneHotCategorical(Distribution):
    """A Categorical whose values are one-hot vectors over the last axis."""
    probs: Array | None = None
    logits: Array | None = None
    validate_args: bool = static_field(default=True)
    arg_constraints = {"probs": constraints.simplex, "logits": constraints.independent(constraints.real, 1)}
    support = constraints.one_hot

    def __post_init__(self):
        _set_categorical(self)

    batch_shape = property(lambda self: tuple(self.logits.shape[:-1]))
    event_shape = property(lambda self: tuple(self.logits.shape[-1:]))
    mean = property(lambda self: self.probs)
    variance = property(lambda self: self.probs * (1 - self.probs))
    mode = property(lambda self: F.one_hot(fnp.argmax(self.probs, axis=-1), self.probs.shape[-1], self.probs.dtype))
    _categorical = property(lambda self: Categorical(logits=self.logits, validate_args=False))
    has_enumerate_support = True

    def _support_values(self):
        return fnp.eye(self.logits.shape[-1], dtype=self.logits.dtype)

    def _draw(self, key, sample_shape):
        return F.one_hot(self._categorical._draw(key, sample_shape), self.logits.shape[-1], self.logits.dtype)

    def log_prob(self, value):
        value = self._checked(value)
        return _logit_at(self.logits, fnp.argmax(value, axis=-1))  # not renormalised: zero probs keep gradients

    def entropy(self):
        return self._categorical.entropy()


@_distribution
class OneHotCategoricalStraightThrough(OneHotCategorical):
    """OneHotCategorical whose rsample passes gradients straight through to probs (the draw plus
    probs minus stop_gradient(probs))."""
    has_rsample = True

    def _draw(self, key, sample_shape):
        return super()._draw(key, sample_shape) + (self.probs - fnp.stop_gradient(self.probs))


@_distribution
class NegativeBinomial(Distribution):
    """The number of successes before total_count failures, each trial a success with probs:
    a Poisson of a Gamma(total_count, exp(-logits)) rate."""
    total_count: Array
    probs: Array | None = None
    logits: Array | None = None
    validate_args: bool = static_field(default=True)
    arg_constraints = {"total_count": constraints.greater_than_eq(0), "probs": constraints.half_open_interval(0.0, 1.0),
                       "logits": constraints.real}
    support = constraints.nonnegative_integer

    def __post_init__(self):
        if self.probs is not None and self.validate_args:
            _check(fnp._float_arg(self.probs) < 1, "NegativeBinomial: probs must lie in [0, 1)")
        _set_binary(self)
        count, logits = fnp._float_args(self.total_count, self.logits)
        if self.validate_args:
            _check(count >= 0, "NegativeBinomial: total_count must be non-negative")
        for name, value in (("total_count", count), ("logits", logits), ("probs", special.expit(logits))):
            object.__setattr__(self, name, value)

    batch_shape = property(lambda self: np.broadcast_shapes(tuple(self.total_count.shape), tuple(self.logits.shape)))
    mean = property(lambda self: self.total_count * fnp.exp(self.logits))
    mode = property(lambda self: fnp.maximum(fnp.floor((self.total_count - 1) * fnp.exp(self.logits)), 0.0))
    variance = property(lambda self: self.mean / F.sigmoid(-self.logits))

    def _draw(self, key, sample_shape):
        k_rate, k_count = random.split(key)
        shape = self._shape(sample_shape)
        rate = random.gamma(k_rate, fnp.broadcast_to(self.total_count, shape), dtype=self.logits.dtype)
        return fnp.astype(random.poisson(k_count, rate * fnp.exp(self.logits)), self.logits.dtype)

    def log_prob(self, value):
        value = self._checked(value)
        n = self.total_count
        unnormalised = n * F.log_sigmoid(-self.logits) + value * F.log_sigmoid(self.logits)
        normalisation = -special.gammaln(n + value) + special.gammaln(1.0 + value) + special.gammaln(n)
        return unnormalised - fnp.where(n + value == 0.0, 0.0, normalisation)
