"""sph_harm_y: the spherical harmonics Y_n^m(theta, phi) (scipy.special.sph_harm_y, and jax's with its
n_max), composed of funcgrad operations so that jit, vmap and derivatives in the angles follow.

Y_n^m = N_n^m P_n^m(cos theta) exp(i m phi), with the Condon-Shortley phase in P and N making them
orthonormal on the sphere; Y_n^-m = (-1)^m conj(Y_n^m). The normalised Legendre functions come from
the standard stable recurrences: the diagonal P_m^m = -sqrt((2m + 1) / 2m) sin(theta) P_m-1^m-1 from
1 / sqrt(4 pi), then upward in degree, P_n^m = a (cos(theta) P_n-1^m - b P_n-2^m) with
a = sqrt((4n^2 - 1) / (n^2 - m^2)), b = sqrt(((n - 1)^2 - m^2) / (4 (n - 1)^2 - 1)), so no factorial
of the degree is ever formed. Every element runs n_max steps of each recurrence and keeps its own.
"""
from __future__ import annotations

import math

import numpy as np

from .. import dtypes
from .. import numpy as fnp
from ..ops import elementwise as E
from ..trace import bind

__all__ = ["sph_harm_y"]


def _legendre(n, m, x, s, n_max: int):
    """N_n^|m| P_n^|m|(x) (s = sqrt(1 - x^2) >= 0); 0 where |m| > n."""
    m = fnp.abs(m)
    diagonal = fnp.full(x.shape, 1 / math.sqrt(4 * math.pi), x.dtype)
    for k in range(1, n_max + 1):
        diagonal = fnp.where(k <= m, -math.sqrt((2 * k + 1) / (2 * k)) * s * diagonal, diagonal)
    mf = fnp.astype(m, x.dtype)
    previous, current = diagonal, fnp.sqrt(2 * mf + 3) * x * diagonal
    out = fnp.where(n == m, diagonal, fnp.where(n == m + 1, current, 0.0))
    for j in range(2, n_max + 1):
        degree = mf + j
        a = fnp.sqrt((4 * degree * degree - 1) / (degree * degree - mf * mf))
        b = fnp.sqrt(((degree - 1) ** 2 - mf * mf) / (4 * (degree - 1) ** 2 - 1))
        previous, current = current, a * (x * current - b * previous)
        out = fnp.where(n == m + j, current, out)
    return out


def sph_harm_y(n, m, theta, phi, diff_n: int | None = None, n_max: int | None = None):
    """The spherical harmonic of degree n and order m (|m| <= n, else 0) at colatitude theta and
    longitude phi, complex (complex64 for float32 angles). n_max, the largest degree, is needed under
    jit (it sets the recurrences' length; a larger n is clipped to it, as JAX's); diff_n, SciPy's
    derivatives, is not supported (as JAX's): differentiate with grad instead."""
    if diff_n not in (None, 0):
        raise ValueError(f"sph_harm_y: diff_n={diff_n!r} (SciPy's derivatives) is not supported, as in JAX; take "
                         f"derivatives in theta and phi with grad")
    theta, phi = fnp._float_args(theta, phi)
    if dtypes.is_complex(theta.dtype):
        raise TypeError(f"sph_harm_y takes real angles, got {theta.dtype}")
    n, m = fnp.asarray(n), fnp.asarray(m)
    if n.dtype.kind not in "iu" or m.dtype.kind not in "iu":
        raise TypeError(f"sph_harm_y: the degree and order must be integers, got {n.dtype} and {m.dtype}")
    if n_max is None:
        n_max = int(np.max(fnp._concrete(n, "sph_harm_y's n (pass n_max under jit)"), initial=0))
    n = fnp.minimum(n, n_max)
    n, m, theta, phi = fnp.broadcast_arrays(n, m, theta, phi)
    normalised = _legendre(n, m, fnp.cos(theta), fnp.abs(fnp.sin(theta)), int(n_max))
    angle = fnp.astype(fnp.abs(m), theta.dtype) * phi
    y = bind(E.complex_p, normalised * fnp.cos(angle), normalised * fnp.sin(angle))
    flip = (m < 0) & (fnp.abs(m) % 2 == 1)  # Y_n^-m = (-1)^m conj(Y_n^m)
    return fnp.where(m < 0, fnp.where(flip, -1.0, 1.0) * fnp.conj(y), y)
