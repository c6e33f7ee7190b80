"""KL divergences in closed form, registered by the pair of types (torch.distributions.kl)."""
from __future__ import annotations

import functools
import math
from typing import Callable

from .. import numpy as fnp
from ..array import Array
from ..nn import _functional as F
from ..numpy import linalg
from ..scipy import special
from ._base import Distribution, _finite
from ._composite import Independent
from ._continuous import (Beta, Cauchy, Dirichlet, Exponential, HalfNormal, Laplace, LogNormal, MultivariateNormal,
                          Normal, Uniform, _GammaFamily)
from ._discrete import Bernoulli, Binomial, Categorical, Geometric, OneHotCategorical, Poisson
from ._families import ContinuousBernoulli, LowRankMultivariateNormal
from ._transformed import EULER, Gumbel, Pareto, _Pushforward

_KL: dict[tuple[type, type], Callable] = {}


class NoClosedFormError(TypeError, NotImplementedError):
    """No closed-form KL for these distributions: a TypeError, and PyTorch's NotImplementedError, which
    code that falls back to a sampled estimate catches."""


def register_kl(type_p: type, type_q: type):
    """Decorator: fn(p, q) computes KL(p || q) for these types and their subclasses
    (torch.distributions.register_kl)."""
    def register(fn):
        _KL[(type_p, type_q)] = fn
        _rule.cache_clear()
        return fn
    return register


@functools.cache
def _rule(type_p: type, type_q: type) -> Callable | None:
    """The rule registered for the nearest ancestors of the two types (p's first, as PyTorch's)."""
    matches = [(type_p.__mro__.index(a), type_q.__mro__.index(b), fn) for (a, b), fn in _KL.items()
               if issubclass(type_p, a) and issubclass(type_q, b)]
    return min(matches, key=lambda match: match[:2])[2] if matches else None


def kl_divergence(p: Distribution, q: Distribution) -> Array:
    """KL(p || q) = E_p[log p - log q], in closed form for the registered pairs."""
    rule = _rule(type(p), type(q))
    if rule is None:
        raise NoClosedFormError(f"no closed-form KL divergence is registered for {type(p).__name__} || "
                                f"{type(q).__name__}; add one with register_kl or estimate it from samples")
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


@register_kl(_GammaFamily, _GammaFamily)
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
@register_kl(MultivariateNormal, LowRankMultivariateNormal)
@register_kl(LowRankMultivariateNormal, MultivariateNormal)
@register_kl(LowRankMultivariateNormal, LowRankMultivariateNormal)
def _kl_mvn(p, q):
    p, q = (MultivariateNormal(d.loc, scale_tril=d.scale_tril, validate_args=False) for d in (p, q))
    d = p.loc.shape[-1]
    inv_q = linalg.inv(q.scale_tril)
    m = inv_q @ p.scale_tril
    diff = fnp.squeeze(inv_q @ fnp.expand_dims(q.loc - p.loc, -1), -1)
    log_det = lambda t: fnp.sum(fnp.log(fnp.diagonal(t, 0, -2, -1)), -1)  # noqa: E731
    return (0.5 * (fnp.sum(m * m, (-2, -1)) + fnp.sum(diff * diff, -1) - d) + log_det(q.scale_tril)
            - log_det(p.scale_tril))


@register_kl(Independent, Independent)
def _kl_independent(p, q):
    if p.reinterpreted_batch_ndims != q.reinterpreted_batch_ndims:
        raise ValueError("kl_divergence: Independent distributions with different reinterpreted_batch_ndims")
    return p._summed(kl_divergence(p.base_dist, q.base_dist))


@register_kl(HalfNormal, HalfNormal)
def _kl_half_normal(p, q):
    ratio = (p.scale / q.scale) ** 2
    return 0.5 * (ratio - 1 - fnp.log(ratio))


@register_kl(Cauchy, Cauchy)
def _kl_cauchy(p, q):
    return fnp.log((p.scale + q.scale) ** 2 + (p.loc - q.loc) ** 2) - fnp.log(4 * p.scale * q.scale)


@register_kl(Gumbel, Gumbel)
def _kl_gumbel(p, q):
    ratio, q_loc, p_loc = p.scale / q.scale, q.loc / q.scale, p.loc / q.scale
    return (-fnp.log(ratio) - q_loc + p_loc + ratio * EULER + fnp.exp(q_loc + special.gammaln(1 + ratio) - p_loc)
            - (1 + EULER))


@register_kl(Pareto, Pareto)
def _kl_pareto(p, q):
    alpha_ratio = q.alpha / p.alpha
    result = q.alpha * fnp.log(p.scale / q.scale) - fnp.log(alpha_ratio) + alpha_ratio - 1
    return fnp.where(p.scale < q.scale, math.inf, result)  # p has mass below q's support


@register_kl(Geometric, Geometric)
def _kl_geometric(p, q):
    return -p.entropy() - fnp.log1p(-q.probs) / p.probs - q.logits


@register_kl(Binomial, Binomial)
def _kl_binomial(p, q):
    known = fnp.concrete_or_none(p.total_count < q.total_count)
    if known is not None and known.any():
        raise ValueError("kl_divergence: Binomial || Binomial with q.total_count above p.total_count has no "
                         "closed form (PyTorch's refusal too)")
    kl = p.total_count * (p.probs * (p.logits - q.logits) + fnp.log1p(-p.probs) - fnp.log1p(-q.probs))
    return fnp.where(p.total_count > q.total_count, math.inf, kl)


@register_kl(OneHotCategorical, OneHotCategorical)
def _kl_one_hot(p, q):
    return _kl_categorical(p._categorical, q._categorical)


@register_kl(ContinuousBernoulli, ContinuousBernoulli)
def _kl_continuous_bernoulli(p, q):
    return (p.mean * (p.logits - q.logits) + p._log_norm() + fnp.log1p(-p.probs) - q._log_norm()
            - fnp.log1p(-q.probs))


@register_kl(_Pushforward, _Pushforward)
def _kl_transformed(p, q):
    """KL is invariant under one bijection applied to both: the bases' KL where the transforms are equal
    (HalfCauchy's |x|, InverseGamma's 1 / x, LogisticNormal's stick breaking; PyTorch's rule)."""
    if type(p) is not type(q) or p.transforms != q.transforms or p.event_shape != q.event_shape:
        raise NoClosedFormError(f"kl_divergence: {type(p).__name__} || {type(q).__name__} has a closed form only "
                                f"with the same transforms and event shape")
    return kl_divergence(p._layout()[0], q._layout()[0])  # the bases as the transforms see them (events, batch)


@register_kl(LogNormal, LogNormal)
def _kl_log_normal(p, q):
    return _kl_normal(p, q)  # exp applied to both Normals
