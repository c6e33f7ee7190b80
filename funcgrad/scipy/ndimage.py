"""funcgrad.scipy.ndimage: map_coordinates (jax.scipy.ndimage's), nearest (order 0) or linear
(order 1) interpolation of an N-d array at fractional coordinates, with SciPy's boundary modes:
'constant' (cval outside [0, n - 1]), 'nearest', 'wrap' (period n - 1: the first and last samples
coincide), 'mirror' (about the edge samples), 'reflect' (about the edges, half a sample out), and
the grid-* modes ('grid-constant': each neighbour outside is cval; 'grid-wrap': period n;
'grid-mirror': as 'reflect'). Differentiable in the input and the coordinates."""
from __future__ import annotations

import itertools
import math

import numpy as np

from .. import numpy as fnp
from ..array import Array

__all__ = ["map_coordinates"]

MODES = ("constant", "nearest", "wrap", "mirror", "reflect", "grid-constant", "grid-wrap", "grid-mirror")


def _fold(c, n: int, mode: str):
    """Coordinate c mapped into the array's range [0, n - 1] by the mode's extension."""
    last = float(n - 1)
    if mode == "grid-constant":
        return c  # neighbours outside are cval
    if mode == "grid-wrap":
        return fnp.mod(c, float(n))
    if n == 1 or mode in ("constant", "nearest"):
        return fnp.clip(c, 0.0, last)
    if mode == "wrap":  # inside [0, n - 1] as it is; beyond, with period n - 1
        return fnp.where((c >= 0) & (c <= last), c, fnp.mod(c, last))
    if mode == "mirror":
        return last - fnp.abs(fnp.mod(c, 2 * last) - last)
    t = fnp.mod(c + 0.5, 2.0 * n)  # reflect, grid-mirror
    return fnp.clip(fnp.where(t > n, 2.0 * n - t, t) - 0.5, 0.0, last)


def map_coordinates(input, coordinates, order: int, mode: str = "constant", cval=0.0,  # noqa: A002
                    prefilter: bool = True) -> Array:
    """input interpolated at coordinates (a sequence of input.ndim arrays of one shape, or an array
    (input.ndim, ...)); order 0 rounds half up as SciPy, order 1 is multilinear."""
    if order not in (0, 1):
        raise ValueError(f"map_coordinates: order must be 0 or 1 (splines of higher order are not available), "
                         f"got {order!r}")
    if mode not in MODES:
        raise ValueError(f"map_coordinates: mode must be one of {MODES}, got {mode!r}")
    x = fnp._float_arg(input)
    coords = [fnp.astype(fnp.asarray(c), x.dtype) for c in coordinates]
    if len(coords) != x.ndim:
        raise ValueError(f"map_coordinates: {len(coords)} coordinate arrays for an input of {x.ndim} dimensions")
    coords = fnp.broadcast_arrays(*coords)
    folded = [_fold(c, n, mode) for c, n in zip(coords, x.shape)]
    flat = fnp.ravel(x)
    strides = [math.prod(x.shape[d + 1:]) for d in range(x.ndim)]

    def gather(indices):
        inside = None
        total = 0
        for idx, n, stride in zip(indices, x.shape, strides):
            ok = (idx >= 0) & (idx <= n - 1)
            inside = ok if inside is None else inside & ok
            total = total + fnp.clip(idx, 0, n - 1) * stride
        values = fnp.take(flat, fnp.astype(total, np.int64))
        return fnp.where(inside, values, cval) if mode == "grid-constant" else values

    if order == 0:
        nearest = [fnp.floor(c + 0.5) for c in folded]
        if mode == "grid-wrap":
            nearest = [fnp.mod(i, float(n)) for i, n in zip(nearest, x.shape)]
        out = gather(nearest)
    else:
        lows = [fnp.floor(c) for c in folded]
        weights = [c - lo for c, lo in zip(folded, lows)]
        out = 0
        for corner in itertools.product((0, 1), repeat=x.ndim):
            indices, weight = [], 1
            for d, up in enumerate(corner):
                index = lows[d] + up
                if mode == "grid-wrap":
                    index = fnp.mod(index, float(x.shape[d]))
                indices.append(index)
                weight = weight * (weights[d] if up else 1 - weights[d])
            out = out + weight * gather(indices)
    if mode == "constant":
        inside = None
        for c, n in zip(coords, x.shape):
            ok = (c >= 0) & (c <= n - 1)
            inside = ok if inside is None else inside & ok
        out = fnp.where(inside, out, cval)
    return out
