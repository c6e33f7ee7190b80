"""KL divergences between different families (the pairs torch.distributions.kl registers), as
KL(p || q) = H(p, q) - H(p): the cross-entropy -E_p[log q(X)] is, for each q family, a function of
a few expectations under p (mean, variance, E log X, E log(1 - X), E exp(-t X)), which each p family
gives in closed form. Infinite where p puts mass outside q's support."""
from __future__ import annotations

import math

import numpy as np

from .. import numpy as fnp
from ..scipy import special
from ._continuous import Beta, Exponential, Laplace, Normal, Uniform, _GammaFamily
from ._discrete import Bernoulli, Binomial, Poisson
from ._families import ContinuousBernoulli
from ._kl import register_kl
from ._transformed import EULER, Gumbel, Pareto

_INF = math.inf


# ---- what each p family gives ----------------------------------------------------------------------
def _xlogx(x):
    return special.xlogy(x, x)


def _mean_log(p):
    """E log X for p on the positive reals."""
    if isinstance(p, Exponential):
        return -EULER - fnp.log(p.rate)
    if isinstance(p, _GammaFamily):
        return special.digamma(p.concentration) - fnp.log(p.rate)
    if isinstance(p, Beta):
        return special.digamma(p.concentration1) - special.digamma(p.concentration1 + p.concentration0)
    if isinstance(p, Uniform):
        return (_xlogx(p.high) - _xlogx(p.low)) / (p.high - p.low) - 1
    return fnp.log(p.scale) + 1 / p.alpha  # Pareto


def _mean_log1m(p):
    """E log(1 - X) for p on [0, 1]."""
    if isinstance(p, Beta):
        return special.digamma(p.concentration0) - special.digamma(p.concentration1 + p.concentration0)
    return (_xlogx(1 - p.low) - _xlogx(1 - p.high)) / (p.high - p.low) - 1  # Uniform


def _laplace_transform(p, t):
    """E exp(-t X)."""
    if isinstance(p, Normal):
        return fnp.exp(-t * p.loc + 0.5 * (t * p.scale) ** 2)
    if isinstance(p, Exponential):
        return p.rate / (p.rate + t)
    if isinstance(p, _GammaFamily):
        return (1 + t / p.rate) ** -p.concentration
    return (fnp.exp(-t * p.low) - fnp.exp(-t * p.high)) / (t * (p.high - p.low))  # Uniform


# ---- -E_p log q(X) for each q family --------------------------------------------------------------
def _cross_normal(p, q):
    """E (X - loc)^2 as variance plus squared bias: a heavy-tailed p (Pareto) gives inf, not inf - inf."""
    return 0.5 * fnp.log(2 * math.pi * q.scale ** 2) + (p.variance + (p.mean - q.loc) ** 2) / (2 * q.scale ** 2)


def _cross_exponential(p, q):
    return -fnp.log(q.rate) + q.rate * p.mean


def _cross_gamma(p, q):
    a, b = q.concentration, q.rate
    return special.gammaln(a) - a * fnp.log(b) - (a - 1) * _mean_log(p) + b * p.mean


def _cross_gumbel(p, q):
    shift = fnp.exp(q.loc / q.scale) * _laplace_transform(p, 1 / q.scale)
    return fnp.log(q.scale) + (p.mean - q.loc) / q.scale + shift


def _cross_uniform(p, q):
    return fnp.log(q.high - q.low)


def _cross_pareto(p, q):
    return -fnp.log(q.alpha) - q.alpha * fnp.log(q.scale) + (q.alpha + 1) * _mean_log(p)


def _cross_beta(p, q):
    a, b = q.concentration1, q.concentration0
    return special.betaln(a, b) - (a - 1) * _mean_log(p) - (b - 1) * _mean_log1m(p)


def _cross_continuous_bernoulli(p, q):
    return -(p.mean * q.logits + fnp.log1p(-q.probs) + q._log_norm())


def _cross_laplace(p, q):
    """-E log q for p Normal: E|X - loc| = s sqrt(2/pi) exp(-d^2 / 2 s^2) + d erf(d / (s sqrt 2))."""
    d, s = p.loc - q.loc, p.scale
    mean_abs = s * math.sqrt(2 / math.pi) * fnp.exp(-0.5 * (d / s) ** 2) + d * special.erf(d / (s * math.sqrt(2)))
    return fnp.log(2 * q.scale) + mean_abs / q.scale


def _support(d):
    """(lowest, highest) value d takes: Python floats where fixed, arrays where parameters set them."""
    if isinstance(d, (Normal, Laplace, Gumbel)):
        return -_INF, _INF
    if isinstance(d, (Exponential, _GammaFamily)):
        return 0.0, _INF
    if isinstance(d, (Beta, ContinuousBernoulli)):
        return 0.0, 1.0
    if isinstance(d, Uniform):
        return d.low, d.high
    return d.scale, _INF  # Pareto: scale > 0


def _always_outside(p, q) -> bool:
    """Whether p's support leaves q's whatever the parameters: a fixed bound past a fixed one, an
    infinite one against a finite one, or a Pareto's positive scale above a support from 0 or below."""
    (p_low, p_high), (q_low, q_high) = _support(p), _support(q)
    fixed = (float, int)
    if isinstance(p_low, fixed):
        if isinstance(q_low, fixed) and p_low < q_low:
            return True
        if not isinstance(q_low, fixed) and (p_low == -_INF or (isinstance(q, Pareto) and p_low <= 0)):
            return True
    if isinstance(p_high, fixed):
        if isinstance(q_high, fixed) and p_high > q_high:
            return True
        if not isinstance(q_high, fixed) and p_high == _INF:
            return True
    return False


def _kl(cross):
    """KL(p || q) from q's cross-entropy: infinite where p's support leaves q's."""
    def kl(p, q):
        shape = tuple(fnp.broadcast_shapes(tuple(p.batch_shape), tuple(q.batch_shape)))
        if _always_outside(p, q):  # e.g. a Normal's reals against a positive q: no expectation to form
            return fnp.full(shape, _INF, p._dtype)
        (p_low, p_high), (q_low, q_high) = _support(p), _support(q)
        outside = (fnp.asarray(p_low) < q_low) | (fnp.asarray(p_high) > q_high)
        with np.errstate(invalid="ignore", divide="ignore"):  # the members outside, masked next, may be NaN
            value = cross(p, q) - p.entropy()
        return fnp.broadcast_to(fnp.where(outside, _INF, value), shape)
    return kl


_CROSS = {Normal: _cross_normal, Exponential: _cross_exponential, _GammaFamily: _cross_gamma, Gumbel: _cross_gumbel,
          Uniform: _cross_uniform, Pareto: _cross_pareto, Beta: _cross_beta,
          ContinuousBernoulli: _cross_continuous_bernoulli, Laplace: _cross_laplace}
_PAIRS = {  # PyTorch's registered pairs of different families, by q
    Normal: (Beta, ContinuousBernoulli, Exponential, _GammaFamily, Gumbel, Laplace, Pareto, Uniform),
    Exponential: (Beta, ContinuousBernoulli, _GammaFamily, Gumbel, Laplace, Normal, Pareto, Uniform),
    _GammaFamily: (Beta, Exponential, Gumbel, Laplace, Normal, Pareto, Uniform),
    Gumbel: (Exponential, _GammaFamily, Normal, Uniform),
    Uniform: (Beta, ContinuousBernoulli, Exponential, _GammaFamily, Gumbel, Laplace, Normal, Pareto),
    Pareto: (Beta, ContinuousBernoulli, Exponential, _GammaFamily, Gumbel, Laplace, Normal, Uniform),
    Beta: (Exponential, _GammaFamily, Gumbel, Laplace, Normal, Pareto, Uniform),
    ContinuousBernoulli: (Beta, Exponential, _GammaFamily, Gumbel, Laplace, Normal, Pareto, Uniform),
    Laplace: (Normal,),
}
for _q, _ps in _PAIRS.items():
    for _p in _ps:
        register_kl(_p, _q)(_kl(_CROSS[_q]))


@register_kl(Bernoulli, Poisson)
def _kl_bernoulli_poisson(p, q):
    return -p.entropy() - (p.probs * fnp.log(q.rate) - q.rate)  # log 0! = log 1! = 0


@register_kl(Poisson, Bernoulli)
@register_kl(Poisson, Binomial)
def _kl_poisson_bounded(p, q):
    """A Poisson's counts are unbounded, the others' are not."""
    return fnp.full(tuple(fnp.broadcast_shapes(tuple(p.batch_shape), tuple(q.batch_shape))), _INF, p.rate.dtype)
