"""funcgrad.scipy.interpolate: RegularGridInterpolator (jax.scipy.interpolate's), linear or
nearest interpolation on a rectilinear grid of any dimension, with SciPy's out-of-bounds rules
(fill_value, None to extrapolate linearly, or bounds_error); differentiable in the values and the
query points."""
from __future__ import annotations

import itertools
import math

import numpy as np

from .. import numpy as fnp
from ..array import Array

__all__ = ["RegularGridInterpolator"]


class RegularGridInterpolator:
    """values (n_1, ..., n_d, ...) sampled at points (d strictly ascending 1-d grids); call it with
    query points xi of shape (..., d)."""

    def __init__(self, points, values, method: str = "linear", bounds_error: bool = False, fill_value=math.nan):
        if method not in ("linear", "nearest"):
            raise ValueError(f"RegularGridInterpolator: method must be 'linear' or 'nearest', got {method!r}")
        self.grid = tuple(fnp._float_arg(p) for p in points)
        self.values = fnp._float_arg(values)
        if len(self.grid) > self.values.ndim:
            raise ValueError(f"RegularGridInterpolator: {len(self.grid)} grids for values of shape {self.values.shape}")
        for d, p in enumerate(self.grid):
            if p.ndim != 1 or p.shape[0] != self.values.shape[d]:
                raise ValueError(f"RegularGridInterpolator: grid {d} has shape {tuple(p.shape)}, values have "
                                 f"{self.values.shape[d]} points along axis {d}")
            known = fnp.concrete_or_none(p)
            if known is not None and known.size > 1 and not (np.diff(known) > 0).all():
                raise ValueError(f"RegularGridInterpolator: grid {d} must be strictly ascending")
        self.method, self.bounds_error, self.fill_value = method, bounds_error, fill_value

    def __call__(self, xi, method: str | None = None) -> Array:
        method = method or self.method
        if method not in ("linear", "nearest"):
            raise ValueError(f"RegularGridInterpolator: method must be 'linear' or 'nearest', got {method!r}")
        d = len(self.grid)
        xi = fnp.astype(fnp.asarray(xi), self.values.dtype)
        if xi.shape[-1] != d:
            raise ValueError(f"RegularGridInterpolator: query points have {xi.shape[-1]} coordinates, the grid {d}")
        coords = [xi[..., k] for k in range(d)]
        outside = None
        lows, weights = [], []
        for c, p in zip(coords, self.grid):
            out_k = (c < p[0]) | (c > p[-1])
            outside = out_k if outside is None else outside | out_k
            n = p.shape[0]
            i = fnp.clip(fnp.searchsorted(p, c, side="right") - 1, 0, max(n - 2, 0))
            lo, hi = fnp.take(p, i), fnp.take(p, fnp.minimum(i + 1, n - 1))
            weights.append(fnp.where(hi > lo, (c - lo) / fnp.where(hi > lo, hi - lo, 1.0), 0.0))
            lows.append(i)
        if self.bounds_error:
            known = fnp.concrete_or_none(outside)
            if known is None:
                raise ValueError("RegularGridInterpolator: bounds_error needs concrete query points (not inside jit)")
            if known.any():
                raise ValueError("RegularGridInterpolator: a query point lies outside the grid (bounds_error=True)")
        tail = self.values.shape[d:]
        if method == "nearest":
            index = tuple(fnp.astype(i + (w > 0.5), np.int64) for i, w in zip(lows, weights))
            out = self.values[index]
        else:
            out = 0
            for corner in itertools.product((0, 1), repeat=d):
                index = tuple(fnp.minimum(i + up, p.shape[0] - 1) for i, up, p in zip(lows, corner, self.grid))
                weight = 1
                for w, up in zip(weights, corner):
                    weight = weight * (w if up else 1 - w)
                out = out + fnp.reshape(weight, tuple(weight.shape) + (1,) * len(tail)) * self.values[index]
        if self.fill_value is not None:
            mask = fnp.reshape(outside, tuple(outside.shape) + (1,) * len(tail))
            out = fnp.where(mask, self.fill_value, out)
        return out
