"""Distributions as a base distribution pushed through transforms (torch.distributions'
TransformedDistribution), and the families PyTorch builds that way: Gumbel, HalfCauchy, Weibull,
Pareto, InverseGamma, Kumaraswamy, LogisticNormal, and the relaxed (Concrete / Gumbel-softmax)
Bernoulli and one-hot categorical. A family's base and transforms are derived from its
parameters, which are its only leaves."""
from __future__ import annotations

import math

import numpy as np

from .. import numpy as fnp
from .. import random
from ..array import Array
from ..scipy import special
from ..tree import static_field
from . import constraints
from ._base import Distribution, _distribution
from ._composite import Independent
from ._continuous import Cauchy, Exponential, Gamma, Normal, Uniform
from ._discrete import _set_binary, _set_categorical
from .transforms import (AbsTransform, AffineTransform, ComposeTransform, ExpTransform, PowerTransform,
                         SigmoidTransform, StickBreakingTransform, Transform, sum_rightmost)

EULER = 0.5772156649015329


class _Pushforward(Distribution):
    """y = transforms(x) for x ~ base_dist: sampling, log_prob by the change of variables, and cdf /
    icdf through monotone transforms. A subclass provides base_dist and transforms (a family, its
    shapes too: its base is built at its whole batch shape)."""

    @property
    def has_rsample(self) -> bool:
        return self.base_dist.has_rsample

    @constraints.dependent_property
    def support(self):
        """The last transform's codomain over the event axes (the base's support with none)."""
        if not self.transforms:
            return self.base_dist.support
        codomain = self.transforms[-1].codomain
        extra = len(self.event_shape) - codomain.event_dim
        return constraints.independent(codomain, extra) if extra > 0 else codomain

    def _layout(self):
        """(the base, broadcast to what the transforms produce and with the events they need, the
        batch shape, the event shape), as torch's TransformedDistribution.__init__."""
        base, chain = self.base_dist, ComposeTransform(self.transforms)
        base_shape = tuple(base.batch_shape) + tuple(base.event_shape)
        base_event = len(base.event_shape)
        if len(base_shape) < chain.domain_event_dim:
            raise ValueError(f"{type(self).__name__}: the base distribution's shape {base_shape} has fewer axes than "
                             f"the transforms' events ({chain.domain_event_dim})")
        forward = chain.forward_shape(base_shape)
        expanded = chain.inverse_shape(forward)
        if expanded != base_shape:
            base = base.expand(expanded[:len(expanded) - base_event])
        if chain.domain_event_dim > base_event:
            base = Independent(base, chain.domain_event_dim - base_event)
        event_dim = max(chain.codomain_event_dim, base_event + chain.codomain_event_dim - chain.domain_event_dim)
        cut = len(forward) - event_dim
        return base, forward[:cut], forward[cut:]

    def _draw(self, key, sample_shape):
        x = self._layout()[0]._draw(key, sample_shape)
        for transform in self.transforms:
            x = transform(x)
        return x

    def log_prob(self, value):
        base = self._layout()[0]
        event_dim = len(self.event_shape)
        y, log_prob = fnp._float_arg(value), 0.0
        for transform in reversed(self.transforms):
            x = transform.inv(y)
            event_dim += transform.domain_event_dim - transform.codomain_event_dim
            log_prob = log_prob - sum_rightmost(transform.log_abs_det_jacobian(x, y),
                                                event_dim - transform.domain_event_dim)
            y = x
        return log_prob + sum_rightmost(base.log_prob(y), event_dim - len(base.event_shape))

    def _monotone(self, p):
        """p, or 1 - p where the transforms decrease (their signs' product is -1)."""
        sign = 1
        for transform in self.transforms:
            sign = sign * transform.sign
        return p if isinstance(sign, int) and sign == 1 else sign * (p - 0.5) + 0.5

    def cdf(self, value):
        value = fnp._float_arg(value)
        for transform in reversed(self.transforms):
            value = transform.inv(value)
        return self._monotone(self._layout()[0].cdf(value))

    def icdf(self, q):
        value = self._layout()[0].icdf(self._monotone(fnp._float_arg(q)))
        for transform in self.transforms:
            value = transform(value)
        return value


@_distribution
class TransformedDistribution(_Pushforward):
    """base_distribution pushed through a Transform or a list of them, applied in order."""
    base_dist: Distribution
    transforms: tuple = ()
    validate_args: bool = static_field(default=True)

    def __post_init__(self):
        parts = (self.transforms,) if isinstance(self.transforms, Transform) else self.transforms
        if not isinstance(parts, (list, tuple)) or not all(isinstance(t, Transform) for t in parts):
            raise TypeError(f"TransformedDistribution: transforms must be a Transform or a list of them, "
                            f"got {self.transforms!r}")
        if not isinstance(self.base_dist, Distribution):
            raise TypeError(f"TransformedDistribution: base_distribution must be a Distribution, "
                            f"got {type(self.base_dist).__name__}")
        object.__setattr__(self, "transforms", tuple(parts))
        self._layout()  # shapes checked now

    batch_shape = property(lambda self: self._layout()[1])
    event_shape = property(lambda self: self._layout()[2])


def _full(like, value):
    return fnp.full(tuple(like.shape), value, like.dtype, device=like.device)


@_distribution
class Gumbel(_Pushforward):
    """Type-I extreme values: loc - scale log(-log U)."""
    loc: Array
    scale: Array
    validate_args: bool = static_field(default=True)
    PARAMETERS = ("loc", "scale")
    arg_constraints = {"loc": constraints.real, "scale": constraints.positive}
    support = constraints.real

    @property
    def base_dist(self):
        info, shape = fnp.finfo(self.loc.dtype), self.batch_shape
        return Uniform(fnp.full(shape, float(info.tiny), self.loc.dtype),
                       fnp.full(shape, 1 - float(info.eps), self.loc.dtype), validate_args=False)

    @property
    def transforms(self):
        return (ExpTransform().inv, AffineTransform(0.0, -fnp.ones_like(self.scale)), ExpTransform().inv,
                AffineTransform(self.loc, -self.scale))

    def log_prob(self, value):
        y = (self.loc - self._checked(value)) / self.scale
        return (y - fnp.exp(y)) - fnp.log(self.scale)

    mean = property(lambda self: self._batch(self.loc + self.scale * EULER))
    mode = property(lambda self: self._batch(self.loc))
    stddev = property(lambda self: self._batch(math.pi / math.sqrt(6) * self.scale))
    variance = property(lambda self: self.stddev ** 2)

    def entropy(self):
        return self._batch(fnp.log(self.scale) + (1 + EULER))


@_distribution
class HalfCauchy(_Pushforward):
    """|Cauchy(0, scale)|."""
    scale: Array
    validate_args: bool = static_field(default=True)
    PARAMETERS = ("scale",)
    arg_constraints = {"scale": constraints.positive}
    support = constraints.nonnegative

    base_dist = property(lambda self: Cauchy(fnp.zeros_like(self.scale), self.scale, validate_args=False))
    transforms = (AbsTransform(),)
    mean = property(lambda self: _full(self.scale, math.inf))
    mode = property(lambda self: fnp.zeros_like(self.scale))
    variance = property(lambda self: _full(self.scale, math.inf))

    def log_prob(self, value):
        value = self._checked(value)
        return fnp.where(value >= 0, self.base_dist.log_prob(value) + math.log(2), -math.inf)

    def cdf(self, value):
        return 2 * self.base_dist.cdf(value) - 1

    def icdf(self, q):
        return self.base_dist.icdf((q + 1) / 2)

    def entropy(self):
        return self.base_dist.entropy() - math.log(2)


@_distribution
class Weibull(_Pushforward):
    """scale * Exponential(1) ** (1 / concentration)."""
    scale: Array
    concentration: Array
    validate_args: bool = static_field(default=True)
    PARAMETERS = ("scale", "concentration")
    arg_constraints = {"scale": constraints.positive, "concentration": constraints.positive}
    support = constraints.positive

    base_dist = property(lambda self: Exponential(fnp.ones(self.batch_shape, self.scale.dtype), validate_args=False))
    transforms = property(lambda self: (PowerTransform(1 / self.concentration), AffineTransform(0.0, self.scale)))
    mean = property(lambda self: self.scale * fnp.exp(special.gammaln(1 + 1 / self.concentration)))
    mode = property(lambda self: self.scale * (1 - 1 / self.concentration) ** (1 / self.concentration))

    @property
    def variance(self):
        k = 1 / self.concentration
        return self.scale ** 2 * (fnp.exp(special.gammaln(1 + 2 * k)) - fnp.exp(2 * special.gammaln(1 + k)))

    def entropy(self):
        k = 1 / self.concentration
        return EULER * (1 - k) + fnp.log(self.scale * k) + 1


@_distribution
class Pareto(_Pushforward):
    """scale * exp(Exponential(alpha)): support x >= scale."""
    scale: Array
    alpha: Array
    validate_args: bool = static_field(default=True)
    PARAMETERS = ("scale", "alpha")
    arg_constraints = {"scale": constraints.positive, "alpha": constraints.positive}

    @constraints.dependent_property(is_discrete=False, event_dim=0)
    def support(self):
        return constraints.greater_than_eq(self.scale)

    base_dist = property(lambda self: Exponential(self._batch(self.alpha), validate_args=False))
    transforms = property(lambda self: (ExpTransform(), AffineTransform(0.0, self.scale)))

    def log_prob(self, value):
        return super().log_prob(self._checked(value))

    @property
    def mean(self):
        a = fnp.maximum(self.alpha, 1.0)
        return self._batch(a * self.scale / (a - 1))

    mode = property(lambda self: self._batch(self.scale))

    @property
    def variance(self):
        a = fnp.maximum(self.alpha, 2.0)
        return self._batch(self.scale ** 2 * a / ((a - 1) ** 2 * (a - 2)))

    def entropy(self):
        return self._batch(fnp.log(self.scale / self.alpha) + (1 + 1 / self.alpha))


@_distribution
class InverseGamma(_Pushforward):
    """1 / Gamma(concentration, rate)."""
    concentration: Array
    rate: Array
    validate_args: bool = static_field(default=True)
    PARAMETERS = ("concentration", "rate")
    arg_constraints = {"concentration": constraints.positive, "rate": constraints.positive}
    support = constraints.positive

    base_dist = property(lambda self: Gamma(self.concentration, self.rate, validate_args=False))
    transforms = property(lambda self: (PowerTransform(-fnp.ones((), self.rate.dtype)),))

    def log_prob(self, value):
        return super().log_prob(self._checked(value))

    @property
    def mean(self):
        a = self.concentration
        return self._batch(fnp.where(a > 1, self.rate / (a - 1), math.inf))

    mode = property(lambda self: self._batch(self.rate / (self.concentration + 1)))

    @property
    def variance(self):
        a = self.concentration
        return self._batch(fnp.where(a > 2, self.rate ** 2 / ((a - 1) ** 2 * (a - 2)), math.inf))

    def entropy(self):
        a = self.concentration
        return self._batch(a + fnp.log(self.rate) + special.gammaln(a) - (1 + a) * special.digamma(a))


def _kumaraswamy_moment(a, b, n: int):
    return b * fnp.exp(special.gammaln(1 + n / a) + special.gammaln(b) - special.gammaln(1 + n / a + b))


@_distribution
class Kumaraswamy(_Pushforward):
    """(1 - U ** (1 / concentration0)) ** (1 / concentration1): a Beta-like law with a closed-form cdf."""
    concentration1: Array
    concentration0: Array
    validate_args: bool = static_field(default=True)
    PARAMETERS = ("concentration1", "concentration0")
    arg_constraints = {"concentration1": constraints.positive, "concentration0": constraints.positive}
    support = constraints.unit_interval

    @property
    def base_dist(self):
        dtype = self.concentration1.dtype
        return Uniform(fnp.zeros(self.batch_shape, dtype), fnp.ones(self.batch_shape, dtype), validate_args=False)

    transforms = property(lambda self: (PowerTransform(1 / self.concentration0), AffineTransform(1.0, -1.0),
                                        PowerTransform(1 / self.concentration1)))
    mean = property(lambda self: _kumaraswamy_moment(self.concentration1, self.concentration0, 1))

    @property
    def mode(self):
        """((a - 1) / (a b - 1)) ** (1 / a), NaN where a or b is below 1 (PyTorch 2.13's formula gives
        NaN for every b > 1 too: log1p(-b))."""
        a, b = self.concentration1, self.concentration0
        inside = (a >= 1) & (b >= 1)
        a_safe, b_safe = fnp.where(inside, a, 2.0), fnp.where(inside, b, 2.0)
        return fnp.where(inside, ((a_safe - 1) / (a_safe * b_safe - 1)) ** (1 / a_safe), math.nan)

    @property
    def variance(self):
        return _kumaraswamy_moment(self.concentration1, self.concentration0, 2) - self.mean ** 2

    def entropy(self):
        a, b = self.concentration1, self.concentration0
        harmonic = special.digamma(b + 1) + EULER
        return (1 - 1 / b) + (1 - 1 / a) * harmonic - fnp.log(a) - fnp.log(b)


@_distribution
class LogisticNormal(_Pushforward):
    """The simplex image of Normal(loc, scale) (K - 1 coordinates) under stick breaking."""
    loc: Array
    scale: Array
    validate_args: bool = static_field(default=True)
    PARAMETERS = ("loc", "scale")
    arg_constraints = {"loc": constraints.real, "scale": constraints.positive}
    support = constraints.simplex

    @property
    def base_dist(self):
        shape = np.broadcast_shapes(tuple(self.loc.shape), tuple(self.scale.shape)) or (1,)
        return Normal(fnp.broadcast_to(self.loc, shape), fnp.broadcast_to(self.scale, shape), validate_args=False)

    transforms = (StickBreakingTransform(),)
    batch_shape = property(lambda self: self._layout()[1])
    event_shape = property(lambda self: self._layout()[2])


@_distribution
class LogitRelaxedBernoulli(Distribution):
    """The logit of a RelaxedBernoulli: (logit U + logits) / temperature."""
    temperature: Array
    probs: Array | None = None
    logits: Array | None = None
    validate_args: bool = static_field(default=True)
    has_rsample = True
    arg_constraints = {"probs": constraints.unit_interval, "logits": constraints.real}
    support = constraints.real

    def __post_init__(self):
        _set_binary(self)
        object.__setattr__(self, "temperature", fnp._float_arg(self.temperature))

    batch_shape = property(lambda self: tuple(self.logits.shape))

    def _draw(self, key, sample_shape):
        shape = self._shape(sample_shape)
        eps = float(fnp.finfo(self.logits.dtype).eps)
        p = fnp.clip(fnp.broadcast_to(self.probs, shape), eps, 1 - eps)
        u = fnp.clip(random.uniform(key, shape, self.logits.dtype), eps, 1 - eps)
        return (fnp.log(u) - fnp.log1p(-u) + fnp.log(p) - fnp.log1p(-p)) / self.temperature

    def log_prob(self, value):
        diff = self.logits - fnp._float_arg(value) * self.temperature
        return fnp.log(self.temperature) + diff - 2 * fnp.log1p(fnp.exp(diff))


@_distribution
class RelaxedBernoulli(_Pushforward):
    """The Concrete relaxation of Bernoulli on (0, 1): sigmoid of a LogitRelaxedBernoulli; rsample
    differentiates through it."""
    temperature: Array
    probs: Array | None = None
    logits: Array | None = None
    validate_args: bool = static_field(default=True)
    arg_constraints = {"probs": constraints.unit_interval, "logits": constraints.real}
    support = constraints.unit_interval

    def __post_init__(self):
        _set_binary(self)
        object.__setattr__(self, "temperature", fnp._float_arg(self.temperature))

    base_dist = property(lambda self: LogitRelaxedBernoulli(self.temperature, logits=self.logits,
                                                            validate_args=False))
    batch_shape = property(lambda self: tuple(self.logits.shape))
    transforms = (SigmoidTransform(),)


@_distribution
class ExpRelaxedCategorical(Distribution):
    """The log of a RelaxedOneHotCategorical: log-softmax((logits + Gumbel) / temperature)."""
    temperature: Array
    probs: Array | None = None
    logits: Array | None = None
    validate_args: bool = static_field(default=True)
    has_rsample = True
    arg_constraints = {"probs": constraints.simplex, "logits": constraints.real_vector}
    support = constraints.real_vector

    def __post_init__(self):
        _set_categorical(self)
        object.__setattr__(self, "temperature", fnp._float_arg(self.temperature))

    batch_shape = property(lambda self: tuple(self.logits.shape[:-1]))
    event_shape = property(lambda self: tuple(self.logits.shape[-1:]))

    def _draw(self, key, sample_shape):
        eps = float(fnp.finfo(self.logits.dtype).eps)
        u = fnp.clip(random.uniform(key, self._shape(sample_shape), self.logits.dtype), eps, 1 - eps)
        scores = (self.logits - fnp.log(-fnp.log(u))) / self.temperature
        return scores - fnp.logsumexp(scores, axis=-1, keepdims=True)

    def log_prob(self, value):
        k = self.logits.shape[-1]
        log_scale = math.lgamma(k) + (k - 1) * fnp.log(self.temperature)
        score = self.logits - fnp._float_arg(value) * self.temperature
        return fnp.sum(score - fnp.logsumexp(score, axis=-1, keepdims=True), axis=-1) + log_scale


@_distribution
class RelaxedOneHotCategorical(_Pushforward):
    """The Gumbel-softmax (Concrete) relaxation of a one-hot categorical on the simplex."""
    temperature: Array
    probs: Array | None = None
    logits: Array | None = None
    validate_args: bool = static_field(default=True)
    arg_constraints = {"probs": constraints.simplex, "logits": constraints.real_vector}
    support = constraints.simplex

    def __post_init__(self):
        _set_categorical(self)
        object.__setattr__(self, "temperature", fnp._float_arg(self.temperature))

    base_dist = property(lambda self: ExpRelaxedCategorical(self.temperature, logits=self.logits,
                                                            validate_args=False))
    batch_shape = property(lambda self: tuple(self.logits.shape[:-1]))
    event_shape = property(lambda self: tuple(self.logits.shape[-1:]))
    transforms = (ExpTransform(),)
