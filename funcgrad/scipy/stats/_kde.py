"""gaussian_kde (jax.scipy.stats.gaussian_kde): a weighted sum of Gaussians centred on the data,
their covariance the data's (weighted, as np.cov's aweights) times the bandwidth factor squared
(Scott's neff^(-1/(d+4)), Silverman's, a number or a function of the estimator), with SciPy's
evaluate/pdf/logpdf, the integrals over a Gaussian, a box in 1-d and another estimator, and
resample from a key."""
from __future__ import annotations

import math
from typing import Callable

import numpy as np

from ... import numpy as fnp
from ...array import Array
from ...numpy import linalg
from .. import special


class gaussian_kde:  # noqa: N801  (SciPy's and JAX's name)
    """dataset: (d, n) points, or n of them in 1-d; weights: n non-negative (uniform by default)."""

    def __init__(self, dataset, bw_method: str | float | Callable | None = None, weights=None):
        data = fnp._float_arg(dataset)
        self.dataset = data if data.ndim == 2 else fnp.reshape(data, (1, -1))
        self.d, self.n = self.dataset.shape
        if self.n < 2:
            raise ValueError(f"gaussian_kde needs at least two points, got dataset of shape {tuple(data.shape)}")
        if weights is None:
            weights = fnp.full((self.n,), 1.0 / self.n, dtype=self.dataset.dtype)
        weights = fnp.astype(fnp.asarray(weights), self.dataset.dtype)
        if weights.shape != (self.n,):
            raise ValueError(f"gaussian_kde: weights must have shape ({self.n},), got {tuple(weights.shape)}")
        self.weights = weights / fnp.sum(weights)
        self.neff = 1.0 / fnp.sum(self.weights ** 2)
        mean = fnp.sum(self.dataset * self.weights, axis=1, keepdims=True)
        centred = self.dataset - mean
        # np.cov with aweights: sum w (x - m)(x - m)^T / (1 - sum w^2)
        self._data_covariance = (centred * self.weights) @ centred.T / (1 - fnp.sum(self.weights ** 2))
        self.set_bandwidth(bw_method)

    def scotts_factor(self):
        return fnp.power(self.neff, -1.0 / (self.d + 4))

    def silverman_factor(self):
        return fnp.power(self.neff * (self.d + 2.0) / 4.0, -1.0 / (self.d + 4))

    def set_bandwidth(self, bw_method=None) -> None:
        if bw_method is None or bw_method == "scott":
            self.factor = self.scotts_factor()
        elif bw_method == "silverman":
            self.factor = self.silverman_factor()
        elif callable(bw_method):
            self.factor = bw_method(self)
        elif np.isscalar(bw_method) and not isinstance(bw_method, str):
            self.factor = fnp.asarray(float(bw_method), dtype=self.dataset.dtype)
        else:
            raise ValueError(f"gaussian_kde: bw_method must be 'scott', 'silverman', a number or a callable, "
                             f"got {bw_method!r}")
        self.covariance = self._data_covariance * self.factor ** 2
        self.inv_cov = linalg.inv(self.covariance)
        self._log_norm = 0.5 * linalg.slogdet(2 * math.pi * self.covariance)[1]

    def _points(self, points):
        points = fnp.astype(fnp.asarray(points), self.dataset.dtype)
        points = fnp.reshape(points, (1, -1)) if points.ndim < 2 and self.d == 1 else points
        if points.ndim == 1:
            points = fnp.reshape(points, (-1, 1))
        if points.shape[0] != self.d:
            raise ValueError(f"gaussian_kde: points have dimension {points.shape[0]}, the estimator {self.d}")
        return points

    def logpdf(self, points) -> Array:
        """log of the density at points (d, m) (or m points in 1-d)."""
        points = self._points(points)
        diff = points[:, None, :] - self.dataset[:, :, None]  # (d, n, m)
        maha = fnp.sum(diff * fnp.tensordot(self.inv_cov, diff, axes=1), axis=0)  # (n, m)
        return special.logsumexp(-0.5 * maha - self._log_norm, axis=0, b=self.weights[:, None])

    def evaluate(self, points) -> Array:
        return fnp.exp(self.logpdf(points))

    __call__ = pdf = evaluate

    def integrate_gaussian(self, mean, cov) -> Array:
        """The integral of the density times N(mean, cov)."""
        mean = fnp.reshape(fnp.astype(fnp.asarray(mean), self.dataset.dtype), (self.d,))
        cov = fnp.reshape(fnp.astype(fnp.asarray(cov), self.dataset.dtype), (self.d, self.d))
        total = self.covariance + cov
        diff = self.dataset - mean[:, None]
        maha = fnp.sum(diff * (linalg.inv(total) @ diff), axis=0)
        log_norm = 0.5 * linalg.slogdet(2 * math.pi * total)[1]
        return fnp.sum(self.weights * fnp.exp(-0.5 * maha - log_norm))

    def integrate_box_1d(self, low, high) -> Array:
        """The mass in [low, high] of a 1-d estimator."""
        if self.d != 1:
            raise ValueError("gaussian_kde.integrate_box_1d is for 1-d estimators")
        sigma = fnp.sqrt(self.covariance[0, 0])
        x = self.dataset[0]
        return fnp.sum(self.weights * (special.ndtr((high - x) / sigma) - special.ndtr((low - x) / sigma)))

    def integrate_kde(self, other: "gaussian_kde") -> Array:
        """The integral of the product of two estimators' densities."""
        if other.d != self.d:
            raise ValueError(f"gaussian_kde.integrate_kde: dimensions {self.d} and {other.d} differ")
        total = self.covariance + other.covariance
        diff = self.dataset[:, :, None] - other.dataset[:, None, :]  # (d, n, m)
        maha = fnp.sum(diff * fnp.tensordot(linalg.inv(total), diff, axes=1), axis=0)
        log_norm = 0.5 * linalg.slogdet(2 * math.pi * total)[1]
        return fnp.sum(self.weights[:, None] * other.weights[None, :] * fnp.exp(-0.5 * maha - log_norm))

    def resample(self, key, shape=()) -> Array:
        """Points (d, *shape) drawn from the estimator: data points picked by weight plus Gaussian noise."""
        from ... import random
        shape = tuple(shape) if np.ndim(shape) else (int(shape),)
        k_pick, k_noise = random.split(key)
        picks = random.choice(k_pick, self.n, shape, p=self.weights)
        noise = random.multivariate_normal(k_noise, fnp.zeros((self.d,), self.dataset.dtype), self.covariance,
                                           shape, self.dataset.dtype)
        centres = fnp.moveaxis(fnp.take(self.dataset, picks, axis=1), 0, -1)  # (*shape, d)
        return fnp.moveaxis(centres + noise, -1, 0)
