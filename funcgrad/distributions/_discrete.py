"""Discrete distributions: Bernoulli, Categorical, Poisson."""
from __future__ import annotations

import math

import numpy as np

from .. import numpy as fnp
from .. import random
from ..array import Array
from ..nn import _functional as F
from ..scipy import special
from ..tree import static_field
from ._base import Distribution, _check, _clamped_logit, _distribution, _finite, _probs_or_logits



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
