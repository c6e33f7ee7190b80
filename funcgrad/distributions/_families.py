"""Further families of torch.distributions: VonMises (angles), FisherSnedecor (variance ratios),
GeneralizedPareto (tails), ContinuousBernoulli (a [0, 1] likelihood for images) and the
low-rank-plus-diagonal multivariate normal."""
from __future__ import annotations

import dataclasses
import math

import numpy as np

from .. import numpy as fnp
from .. import random
from ..array import Array
from ..nn import _functional as F
from ..numpy import linalg
from ..scipy import linalg as scipy_linalg
from ..scipy import special
from ..tree import static_field
from . import constraints
from ._base import Distribution, _check, _distribution, _factored_matrices
from ._discrete import _set_binary

VON_MISES_ROUNDS = 32  # rejection rounds under jit (each accepts > 65% of what is left)


def _log_i0(x):
    """log I0(x) from the exponentially scaled Bessel function, exact for large x."""
    return fnp.log(special.i0e(x)) + x


@_distribution
class VonMises(Distribution):
    """The circular normal on [-pi, pi): density exp(concentration cos(x - loc)) / (2 pi I0(concentration)).
    Sampled by Best and Fisher's rejection (no rsample, as PyTorch's); log I0 is exact (PyTorch uses
    a polynomial approximation, within 1e-7)."""
    loc: Array
    concentration: Array
    validate_args: bool = static_field(default=True)
    PARAMETERS = ("loc", "concentration")
    arg_constraints = {"loc": constraints.real, "concentration": constraints.positive}
    support = constraints.real

    def log_prob(self, value):
        value = self._checked(value)
        return self.concentration * fnp.cos(value - self.loc) - math.log(2 * math.pi) - _log_i0(self.concentration)

    mean = property(lambda self: self._batch(self.loc))
    mode = mean

    @property
    def variance(self):
        k = self.concentration
        return self._batch(1 - special.i1e(k) / special.i0e(k))

    def _draw(self, key, sample_shape):
        shape = self._shape(sample_shape)
        kappa = fnp.broadcast_to(fnp.astype(self.concentration, fnp.float64), shape)
        tau = 1 + fnp.sqrt(1 + 4 * kappa ** 2)
        rho = (tau - fnp.sqrt(2 * tau)) / (2 * kappa)
        r = fnp.where(kappa < 1e-5, 1 / kappa + kappa, (1 + rho ** 2) / (2 * rho))
        x, done = fnp.zeros(shape, fnp.float64), fnp.zeros(shape, fnp.bool_)
        for round_key in random.split(key, VON_MISES_ROUNDS):
            u1, u2, u3 = (random.uniform(k, shape, fnp.float64) for k in random.split(round_key, 3))
            z = fnp.cos(math.pi * u1)
            f = (1 + r * z) / (r + z)
            c = kappa * (r - f)
            accept = (((c * (2 - c) - u2) > 0) | (fnp.log(c / u2) + 1 - c >= 0)) & ~done
            x = fnp.where(accept, fnp.sign(u3 - 0.5) * fnp.arccos(fnp.clip(f, -1.0, 1.0)), x)
            done = done | accept
            settled = fnp.concrete_or_none(done)  # None under jit: every round runs
            if settled is not None and settled.all():
                break
        wrapped = fnp.remainder(x + math.pi + fnp.astype(self.loc, fnp.float64), 2 * math.pi) - math.pi
        return fnp.astype(wrapped, self.loc.dtype)


@_distribution
class FisherSnedecor(Distribution):
    """F(df1, df2): the ratio of two scaled chi-squares."""
    df1: Array
    df2: Array
    validate_args: bool = static_field(default=True)
    has_rsample = True
    PARAMETERS = ("df1", "df2")
    arg_constraints = {"df1": constraints.positive, "df2": constraints.positive}
    support = constraints.positive

    mean = property(lambda self: self._batch(fnp.where(self.df2 > 2, self.df2 / (self.df2 - 2), math.nan)))

    @property
    def mode(self):
        d1, d2 = self.df1, self.df2
        return self._batch(fnp.where(d1 > 2, (d1 - 2) / d1 * d2 / (d2 + 2), math.nan))

    @property
    def variance(self):
        d1, d2 = self.df1, self.df2
        return self._batch(fnp.where(d2 > 4, 2 * d2 ** 2 * (d1 + d2 - 2) / (d1 * (d2 - 2) ** 2 * (d2 - 4)), math.nan))

    def _draw(self, key, sample_shape):
        shape = self._shape(sample_shape)
        k1, k2 = random.split(key)
        tiny = float(fnp.finfo(self.df1.dtype).tiny)
        d1, d2 = fnp.broadcast_to(self.df1, shape), fnp.broadcast_to(self.df2, shape)
        x1 = random.gamma(k1, d1 / 2, dtype=d1.dtype) / d1
        x2 = fnp.maximum(random.gamma(k2, d2 / 2, dtype=d2.dtype) / d2, tiny)
        return fnp.maximum(x1 / x2, tiny)

    def log_prob(self, value):
        value = self._checked(value)
        h1, h2, ratio = self.df1 / 2, self.df2 / 2, self.df1 / self.df2
        return (special.gammaln(h1 + h2) - special.gammaln(h1) - special.gammaln(h2) + h1 * fnp.log(ratio)
                + (h1 - 1) * fnp.log(value) - (h1 + h2) * fnp.log1p(ratio * value))


@_distribution
class GeneralizedPareto(Distribution):
    """The peaks-over-threshold law: support [loc, loc - scale / concentration] for a negative
    concentration, [loc, inf) otherwise; concentration 0 is the shifted exponential."""
    loc: Array
    scale: Array
    concentration: Array
    validate_args: bool = static_field(default=True)
    has_rsample = True
    PARAMETERS = ("loc", "scale", "concentration")
    arg_constraints = {"loc": constraints.real, "scale": constraints.positive, "concentration": constraints.real}

    @constraints.dependent_property(is_discrete=False, event_dim=0)
    def support(self):
        return constraints.interval(self.loc, fnp.where(self.concentration < 0, self.loc - self.scale / fnp.where(
            self.concentration < 0, self.concentration, -1.0), math.inf))

    def _safe(self):
        """(concentration is 0, the concentration with its zeros replaced by 1)."""
        zero = fnp.isclose(self.concentration, 0.0)
        return zero, fnp.where(zero, 1.0, self.concentration)

    def _draw(self, key, sample_shape):
        return self.icdf(random.uniform(key, self._shape(sample_shape), self.loc.dtype))

    def log_prob(self, value):
        z = (fnp._float_arg(value) - self.loc) / self.scale
        zero, conc = self._safe()
        y = 1 / conc + 1
        nonzero = fnp.where(y == 0, y, y * fnp.log1p(conc * z))
        return -fnp.log(self.scale) - fnp.where(zero, z, nonzero)

    def log_survival_function(self, value):
        z = (fnp._float_arg(value) - self.loc) / self.scale
        zero, conc = self._safe()
        return fnp.where(zero, -z, -fnp.log1p(conc * z) / conc)

    def log_cdf(self, value):
        return fnp.log1p(-fnp.exp(self.log_survival_function(value)))

    def cdf(self, value):
        return fnp.exp(self.log_cdf(value))

    def icdf(self, q):
        zero, conc = self._safe()
        log_u = fnp.log1p(-fnp._float_arg(q))
        return fnp.where(zero, self.loc - self.scale * log_u, self.loc + self.scale / conc * fnp.expm1(-conc * log_u))

    @property
    def mean(self):
        valid = self.concentration < 1
        return self._batch(fnp.where(valid, self.loc + self.scale / (1 - fnp.where(valid, self.concentration, 0.5)),
                                     math.nan))

    @property
    def variance(self):
        valid = self.concentration < 0.5
        c = fnp.where(valid, self.concentration, 0.25)
        return self._batch(fnp.where(valid, self.scale ** 2 / ((1 - c) ** 2 * (1 - 2 * c)), math.nan))

    mode = property(lambda self: self._batch(self.loc))

    def entropy(self):
        return self._batch(fnp.log(self.scale) + self.concentration + 1)


@_distribution
class ContinuousBernoulli(Distribution):
    """p(x) proportional to probs^x (1 - probs)^(1 - x) on [0, 1] (Loaiza-Ganem and Cunningham), with
    PyTorch's Taylor expansions for probs within lims of 1/2, where the closed forms cancel."""
    probs: Array | None = None
    logits: Array | None = None
    lims: tuple = static_field(default=(0.499, 0.501))
    validate_args: bool = static_field(default=True)
    has_rsample = True
    arg_constraints = {"probs": constraints.unit_interval, "logits": constraints.real}
    support = constraints.unit_interval

    def __post_init__(self):
        _set_binary(self)
        eps = float(fnp.finfo(self.logits.dtype).eps)
        object.__setattr__(self, "probs", fnp.clip(self.probs, eps, 1 - eps))  # PyTorch's clamp_probs

    batch_shape = property(lambda self: tuple(self.logits.shape))

    def _stable(self):
        return (self.probs <= self.lims[0]) | (self.probs > self.lims[1])

    def _cut_probs(self):
        return fnp.where(self._stable(), self.probs, self.lims[0])

    def _log_norm(self):
        p = self._cut_probs()
        below, above = fnp.where(p <= 0.5, p, 0.0), fnp.where(p >= 0.5, p, 1.0)
        closed = fnp.log(fnp.abs(fnp.log1p(-p) - fnp.log(p))) - fnp.where(
            p <= 0.5, fnp.log1p(-2.0 * below), fnp.log(2.0 * above - 1.0))
        x = (self.probs - 0.5) ** 2
        return fnp.where(self._stable(), closed, math.log(2.0) + (4.0 / 3.0 + 104.0 / 45.0 * x) * x)

    @property
    def mean(self):
        p = self._cut_probs()
        closed = p / (2.0 * p - 1.0) + 1.0 / (fnp.log1p(-p) - fnp.log(p))
        x = self.probs - 0.5
        return fnp.where(self._stable(), closed, 0.5 + (1.0 / 3.0 + 16.0 / 45.0 * x ** 2) * x)

    @property
    def variance(self):
        p = self._cut_probs()
        closed = p * (p - 1.0) / (1.0 - 2.0 * p) ** 2 + 1.0 / (fnp.log1p(-p) - fnp.log(p)) ** 2
        x = (self.probs - 0.5) ** 2
        return fnp.where(self._stable(), closed, 1.0 / 12.0 - (1.0 / 15.0 - 128.0 / 945.0 * x) * x)

    def _draw(self, key, sample_shape):
        return self.icdf(random.uniform(key, self._shape(sample_shape), self.logits.dtype))

    def log_prob(self, value):
        value = self._checked(value)
        return value * self.logits - F.softplus(self.logits) + self._log_norm()  # minus the logits' BCE

    def cdf(self, value):
        value = fnp._float_arg(value)
        p = self._cut_probs()
        closed = (p ** value * (1.0 - p) ** (1.0 - value) + p - 1.0) / (2.0 * p - 1.0)
        inside = fnp.where(self._stable(), closed, value)
        return fnp.where(value <= 0.0, 0.0, fnp.where(value >= 1.0, 1.0, inside))

    def icdf(self, q):
        q, p = fnp._float_arg(q), self._cut_probs()
        closed = (fnp.log1p(-p + q * (2.0 * p - 1.0)) - fnp.log1p(-p)) / (fnp.log(p) - fnp.log1p(-p))
        return fnp.where(self._stable(), closed, q)

    def entropy(self):
        log0, log1 = fnp.log1p(-self.probs), fnp.log(self.probs)
        return self.mean * (log0 - log1) - self._log_norm() - log0


def _mv(matrix, vector):
    return fnp.squeeze(matrix @ fnp.expand_dims(vector, -1), -1)


@_distribution
class LowRankMultivariateNormal(Distribution):
    """N(loc, cov_factor cov_factor^T + diag(cov_diag)): log_prob, entropy and draws in O(d r^2)
    through the capacitance matrix I + W^T D^-1 W (Woodbury), never the d x d covariance."""
    loc: Array
    cov_factor: Array
    cov_diag: Array
    validate_args: bool = static_field(default=True)
    has_rsample = True
    arg_constraints = {"loc": constraints.real_vector, "cov_factor": constraints.independent(constraints.real, 2),
                       "cov_diag": constraints.independent(constraints.positive, 1)}
    support = constraints.real_vector

    def __post_init__(self):
        loc, factor, diag = fnp._float_args(self.loc, self.cov_factor, self.cov_diag)
        if loc.ndim < 1 or factor.ndim < 2 or diag.ndim < 1:
            raise ValueError("LowRankMultivariateNormal: loc and cov_diag need an event axis, cov_factor two "
                             f"(event, rank); got {tuple(loc.shape)}, {tuple(factor.shape)}, {tuple(diag.shape)}")
        d = loc.shape[-1]
        if factor.shape[-2] != d or diag.shape[-1] != d:
            raise ValueError(f"LowRankMultivariateNormal: loc has {d} coordinates but cov_factor has shape "
                             f"{tuple(factor.shape)} and cov_diag {tuple(diag.shape)}")
        if self.validate_args:
            _check(diag > 0, "LowRankMultivariateNormal: cov_diag must be positive")
        for name, value in (("loc", loc), ("cov_factor", factor), ("cov_diag", diag)):
            object.__setattr__(self, name, value)

    batch_shape = property(lambda self: tuple(np.broadcast_shapes(
        tuple(self.loc.shape[:-1]), tuple(self.cov_factor.shape[:-2]), tuple(self.cov_diag.shape[:-1]))))
    event_shape = property(lambda self: tuple(self.loc.shape[-1:]))
    mean = property(lambda self: fnp.broadcast_to(self.loc, self.batch_shape + self.event_shape))
    mode = mean
    variance = property(lambda self: fnp.broadcast_to(fnp.sum(self.cov_factor ** 2, -1) + self.cov_diag,
                                                      self.batch_shape + self.event_shape))

    @property
    def covariance_matrix(self):
        w = self.cov_factor
        cov = w @ fnp.swapaxes(w, -1, -2) + self.cov_diag[..., None] * fnp.eye(w.shape[-2], dtype=w.dtype)
        return fnp.broadcast_to(cov, self.batch_shape + self.event_shape * 2)

    scale_tril = property(lambda self: linalg.cholesky(self.covariance_matrix))
    precision_matrix = property(lambda self: linalg.inv(self.covariance_matrix))

    def _capacitance_tril(self):
        w, rank = self.cov_factor, self.cov_factor.shape[-1]
        wt_dinv = fnp.swapaxes(w / self.cov_diag[..., None], -1, -2)
        return linalg.cholesky(fnp.eye(rank, dtype=w.dtype) + wt_dinv @ w)

    def _log_det(self, capacitance_tril):
        return 2 * fnp.sum(fnp.log(fnp.diagonal(capacitance_tril, 0, -2, -1)), -1) + fnp.sum(fnp.log(self.cov_diag), -1)

    def _draw(self, key, sample_shape):
        k_w, k_d = random.split(key)
        shape = self._shape(sample_shape)
        eps_w = random.normal(k_w, shape[:-1] + (self.cov_factor.shape[-1],), self.loc.dtype)
        eps_d = random.normal(k_d, shape, self.loc.dtype)
        return self.loc + _mv(self.cov_factor, eps_w) + fnp.sqrt(self.cov_diag) * eps_d

    def log_prob(self, value):
        diff = fnp._float_arg(value) - self.loc
        tril = self._capacitance_tril()
        scaled = diff / self.cov_diag
        projected = _mv(fnp.swapaxes(self.cov_factor, -1, -2), scaled)
        solved = _mv(linalg.inv(tril), projected)
        mahalanobis = fnp.sum(diff * scaled, -1) - fnp.sum(solved ** 2, -1)
        d = self.loc.shape[-1]
        return -0.5 * (d * math.log(2 * math.pi) + mahalanobis + self._log_det(tril))

    def entropy(self):
        d = self.loc.shape[-1]
        value = 0.5 * (d * (1.0 + math.log(2 * math.pi)) + self._log_det(self._capacitance_tril()))
        return fnp.broadcast_to(value, self.batch_shape)


@_distribution
class LKJCholesky(Distribution):
    """The LKJ law over the Cholesky factors L of dim x dim correlation matrices: density
    proportional to det(L L^T)^(concentration - 1) (Lewandowski, Kurowicka and Joe 2009), PyTorch's
    log_prob, sampled by the onion method: row i's squared length off the diagonal ~ Beta(i / 2,
    concentration + (dim - 1 - i) / 2), its direction uniform. (torch 2.13 draws it from
    Beta(i - 1/2, ...) for i >= 2, so its rows past the second correlate too strongly: E r^2 of 0.30
    where the law, and this sampler, give 0.25 for dim 3 and concentration 1.)"""
    dim: int = static_field()
    concentration: Array = 1.0
    validate_args: bool = static_field(default=True)
    PARAMETERS = ("concentration",)
    arg_constraints = {"concentration": constraints.positive}
    support = constraints.corr_cholesky

    def __post_init__(self):
        if int(self.dim) != self.dim or self.dim < 2:
            raise ValueError(f"LKJCholesky: dim must be an integer of at least 2, got {self.dim}")
        super().__post_init__()

    event_shape = property(lambda self: (self.dim, self.dim))

    def expand(self, batch_shape) -> "LKJCholesky":
        """Its concentration broadcast to batch_shape (a batch parameter, though the events are matrices)."""
        return dataclasses.replace(self, concentration=fnp.broadcast_to(self.concentration, tuple(batch_shape)))

    def _draw(self, key, sample_shape):
        k_beta, k_normal = random.split(key)
        dtype = self.concentration.dtype
        row = np.arange(self.dim, dtype=np.float64)
        previous = fnp.asarray(np.maximum(row - 1, 0.0), dtype=dtype)  # row 0 has nothing off the diagonal
        marginal = self.concentration + 0.5 * (self.dim - 2)
        shape = tuple(sample_shape) + tuple(self.batch_shape)
        y = random.beta(k_beta, fnp.asarray(np.maximum(row, 1.0) / 2, dtype=dtype),
                        fnp.expand_dims(marginal, -1) - 0.5 * previous, shape + (self.dim,), dtype)[..., None]
        u = fnp.tril(random.normal(k_normal, shape + (self.dim, self.dim), dtype), -1)
        norms = fnp.linalg.norm(u, axis=-1, keepdims=True)
        u = fnp.where(fnp.arange(self.dim)[:, None] == 0, 0.0, u / fnp.where(norms > 0, norms, 1.0))  # row 0: none
        w = fnp.sqrt(y) * u
        diagonal = fnp.sqrt(fnp.maximum(1 - fnp.sum(w * w, -1), float(fnp.finfo(dtype).tiny)))
        return w + diagonal[..., None] * fnp.eye(self.dim, dtype=dtype)

    def log_prob(self, value):
        value = self._checked(value)
        diagonal = fnp.diagonal(value, 0, -2, -1)[..., 1:]
        order = 2 * (fnp.expand_dims(self.concentration, -1) - 1) + self.dim - np.arange(2, self.dim + 1)
        unnormalised = fnp.sum(order * fnp.log(diagonal), -1)
        dm1 = self.dim - 1
        alpha = self.concentration + 0.5 * dm1
        normaliser = (0.5 * dm1 * math.log(math.pi) + special.multigammaln(alpha - 0.5, dm1)
                      - special.gammaln(alpha) * dm1)
        return unnormalised - normaliser


@_distribution
class Wishart(Distribution):
    """Wishart(df, covariance_matrix | precision_matrix | scale_tril): the law of X^T X for df rows X
    drawn from N(0, covariance); df > dim - 1. Sampled by the Bartlett decomposition as PyTorch's
    (rsample differentiates through its chi-square draws' implicit gradients)."""
    df: Array
    covariance_matrix: Array | None = None
    precision_matrix: Array | None = None
    scale_tril: Array | None = None
    validate_args: bool = static_field(default=True)
    has_rsample = True
    support = constraints.positive_definite

    def __post_init__(self):
        given = [m for m in (self.covariance_matrix, self.precision_matrix, self.scale_tril) if m is not None]
        if len(given) != 1:
            raise ValueError("Wishart: give exactly one of covariance_matrix, precision_matrix, scale_tril")
        df, matrix = fnp._float_args(self.df, given[0])
        if matrix.ndim < 2 or matrix.shape[-1] != matrix.shape[-2]:
            raise ValueError(f"Wishart: the matrix must be square (..., p, p), got shape {tuple(matrix.shape)}")
        if self.scale_tril is not None:
            tril = matrix
        elif self.covariance_matrix is not None:
            tril = linalg.cholesky(matrix)
        else:
            tril = linalg.cholesky(linalg.inv(matrix))
        p = matrix.shape[-1]
        if self.validate_args:
            _check(df > p - 1, f"Wishart: df must be greater than dim - 1 = {p - 1}")
            _check(fnp.diagonal(tril, 0, -2, -1) > 0, "Wishart: the matrix must be positive definite")
        for name, value in {"df": df, **_factored_matrices(tril)}.items():
            object.__setattr__(self, name, value)

    @property
    def arg_constraints(self):
        return {"covariance_matrix": constraints.positive_definite, "precision_matrix": constraints.positive_definite,
                "scale_tril": constraints.lower_cholesky, "df": constraints.greater_than(self.event_shape[-1] - 1)}

    batch_shape = property(lambda self: tuple(np.broadcast_shapes(tuple(self.df.shape),
                                                                  tuple(self.scale_tril.shape[:-2]))))
    event_shape = property(lambda self: tuple(self.scale_tril.shape[-2:]))
    _df = property(lambda self: fnp.reshape(fnp.broadcast_to(self.df, self.batch_shape), self.batch_shape + (1, 1)))
    mean = property(lambda self: self._df * self.covariance_matrix)
    mode = property(lambda self: fnp.where(self._df > self.event_shape[-1] + 1,
                                           (self._df - self.event_shape[-1] - 1) * self.covariance_matrix, math.nan))

    @property
    def variance(self):
        v = self.covariance_matrix
        d = fnp.diagonal(v, 0, -2, -1)
        return self._df * (v * v + d[..., :, None] * d[..., None, :])

    def _draw(self, key, sample_shape):
        k_chi2, k_normal = random.split(key)
        p, dtype = self.event_shape[-1], self.scale_tril.dtype
        shape = tuple(sample_shape) + tuple(self.batch_shape)
        df = fnp.broadcast_to(fnp.expand_dims(self.df, -1) - np.arange(p), shape + (p,))
        eps = float(fnp.finfo(dtype).eps)
        diagonal = fnp.maximum(fnp.sqrt(random.chisquare(k_chi2, df, dtype=dtype)), eps)
        noise = fnp.tril(random.normal(k_normal, shape + (p, p), dtype), -1) + diagonal[..., None] * fnp.eye(p,
                                                                                                         dtype=dtype)
        factor = self.scale_tril @ noise
        return factor @ fnp.swapaxes(factor, -1, -2)

    def _log_det_scale(self):
        return fnp.sum(fnp.log(fnp.diagonal(self.scale_tril, 0, -2, -1)), -1)

    def log_prob(self, value):
        value = self._checked(value)
        nu, p = self.df, self.event_shape[-1]
        solved = scipy_linalg.cho_solve((self.scale_tril, True), value)  # covariance^-1 value
        return (-nu * (p * math.log(2) / 2 + self._log_det_scale()) - special.multigammaln(nu / 2, p)
                + (nu - p - 1) / 2 * linalg.slogdet(value)[1] - fnp.trace(solved, axis1=-2, axis2=-1) / 2)

    def entropy(self):
        nu, p = self.df, self.event_shape[-1]
        mvdigamma = sum(special.digamma(nu / 2 - i / 2) for i in range(p))
        return ((p + 1) * (p * math.log(2) / 2 + self._log_det_scale()) + special.multigammaln(nu / 2, p)
                - (nu - p - 1) / 2 * mvdigamma + nu * p / 2)
