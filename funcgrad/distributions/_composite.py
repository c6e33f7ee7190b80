"""Distributions built from others: Independent (batch axes read as event axes: a diagonal Normal
as one multivariate event) and MixtureSameFamily (a Categorical's mixture of one family's
components), as torch.distributions'."""
from __future__ import annotations

from .. import numpy as fnp
from .. import random
from ..tree import static_field
from . import constraints
from ._base import Distribution, _distribution
from ._discrete import Categorical


@_distribution
class Independent(Distribution):
    """base with its last reinterpreted_batch_ndims batch axes taken as event axes: log_prob and
    entropy sum over them."""
    base_dist: Distribution
    reinterpreted_batch_ndims: int = static_field(default=1)
    validate_args: bool = static_field(default=True)

    def __post_init__(self):
        n = self.reinterpreted_batch_ndims
        if not 0 <= n <= len(self.base_dist.batch_shape):
            raise ValueError(f"Independent: reinterpreted_batch_ndims {n} must be between 0 and the base's "
                             f"{len(self.base_dist.batch_shape)} batch dimensions")

    @property
    def has_rsample(self) -> bool:
        return self.base_dist.has_rsample

    batch_shape = property(lambda self: tuple(self.base_dist.batch_shape)[:len(self.base_dist.batch_shape)
                                                                          - self.reinterpreted_batch_ndims])
    event_shape = property(lambda self: tuple(self.base_dist.batch_shape)[len(self.batch_shape):]
                           + tuple(self.base_dist.event_shape))
    mean = property(lambda self: self.base_dist.mean)
    mode = property(lambda self: self.base_dist.mode)
    variance = property(lambda self: self.base_dist.variance)
    arg_constraints = {}

    @constraints.dependent_property
    def support(self):
        n, base = self.reinterpreted_batch_ndims, self.base_dist.support
        return constraints.independent(base, n) if n else base

    def expand(self, batch_shape) -> "Independent":
        n = self.reinterpreted_batch_ndims
        inner = tuple(self.base_dist.batch_shape)[len(self.base_dist.batch_shape) - n:]
        return Independent(self.base_dist.expand(tuple(batch_shape) + inner), n, self.validate_args)

    def _draw(self, key, sample_shape):
        return self.base_dist._draw(key, sample_shape)

    def _summed(self, value):
        n = self.reinterpreted_batch_ndims
        return fnp.sum(value, axis=tuple(range(-n, 0))) if n else value

    def log_prob(self, value):
        return self._summed(self.base_dist.log_prob(value))

    def entropy(self):
        return self._summed(self.base_dist.entropy())


@_distribution
class MixtureSameFamily(Distribution):
    """sum_k w_k p_k(x): mixture_distribution a Categorical over the components, the last batch
    axis of component_distribution. Its entropy has no closed form (as in PyTorch): estimate it from
    samples."""
    mixture_distribution: Categorical
    component_distribution: Distribution
    validate_args: bool = static_field(default=True)

    def __post_init__(self):
        k = self.mixture_distribution.logits.shape[-1]
        components = tuple(self.component_distribution.batch_shape)
        if not components or components[-1] != k:
            raise ValueError(f"MixtureSameFamily: the components' last batch axis must hold the mixture's {k} "
                             f"categories, got batch shape {components}")

    batch_shape = property(lambda self: tuple(self.component_distribution.batch_shape)[:-1])
    event_shape = property(lambda self: tuple(self.component_distribution.event_shape))
    arg_constraints = {}
    support = constraints.dependent_property(lambda self: self.component_distribution.support)

    def _weights(self):
        """The mixture weights shaped to broadcast against the components' per-event values."""
        probs = self.mixture_distribution.probs
        return fnp.reshape(probs, tuple(probs.shape) + (1,) * len(self.event_shape))

    @property
    def mean(self):
        return fnp.sum(self._weights() * self.component_distribution.mean, axis=-1 - len(self.event_shape))

    @property
    def variance(self):
        """E[Var] + Var[E] over the components (the law of total variance)."""
        axis = -1 - len(self.event_shape)
        w, m = self._weights(), self.component_distribution.mean
        mean = fnp.sum(w * m, axis=axis, keepdims=True)
        return fnp.sum(w * (self.component_distribution.variance + (m - mean) ** 2), axis=axis)

    def _draw(self, key, sample_shape):
        k_pick, k_draw = random.split(key)
        picks = self.mixture_distribution._draw(k_pick, sample_shape)  # sample_shape + batch_shape
        draws = self.component_distribution._draw(k_draw, sample_shape)  # ... + (K,) + event_shape
        index = fnp.reshape(picks, tuple(picks.shape) + (1,) * (1 + len(self.event_shape)))
        return fnp.take_along_axis(draws, fnp.astype(index, fnp.int64), axis=-1 - len(self.event_shape))[
            (..., 0) + (slice(None),) * len(self.event_shape)]

    def log_prob(self, value):
        """logsumexp_k (log w_k + log p_k(x))."""
        value = fnp.asarray(value)
        event = len(self.event_shape)
        expanded = fnp.expand_dims(value, -1 - event)  # broadcast against the components' axis
        log_p = self.component_distribution.log_prob(expanded)
        return fnp.logsumexp(self.mixture_distribution.logits + log_p, axis=-1)

    def cdf(self, value):
        """sum_k w_k F_k(x), for univariate components (as PyTorch's)."""
        if self.event_shape:
            raise TypeError(f"MixtureSameFamily.cdf: the components have events of shape {self.event_shape}; "
                            f"a cdf needs univariate ones")
        cdf = self.component_distribution.cdf(fnp.expand_dims(fnp.asarray(value), -1))
        return fnp.sum(cdf * self.mixture_distribution.probs, axis=-1)
