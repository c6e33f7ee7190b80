"""NumPy's polynomial helpers on coefficient vectors (highest power first: polyadd, polymul,
polyder, polyint, polyfit, poly, vander), unwrap and the classic window functions (hamming,
hanning, bartlett, blackman, kaiser), composed from the primitive-backed functions, so they
differentiate; and roots, the companion matrix's eigenvalues on the host (no derivative)."""
from __future__ import annotations

import builtins
import math

import numpy as np

from .. import dtypes
from . import _base as fnp
from ..errors import ShapeError
from ..trace import is_differentiated
from ._math import finfo
from ._shapes import diff
from .linalg import inv, lstsq
from ._util import _concrete
from ._signal import convolve

__all__ = [
    "polyadd", "polysub", "polymul", "polydiv", "polyder", "polyint", "polyfit", "poly", "vander", "unwrap",
    "hamming", "hanning", "bartlett", "blackman", "kaiser", "roots",
]


def _coefficients(p, name: str):
    p = fnp.asarray(p)
    p = fnp.reshape(p, (1,)) if p.ndim == 0 else p
    if p.ndim != 1:
        raise ShapeError(f"{name}: polynomial coefficients are 1-D, got shape {p.shape}")
    return p


def _aligned(a1, a2, name: str):
    """a1 and a2 zero-padded in front to one length (their highest powers first)."""
    a1, a2 = (_coefficients(p, name) for p in fnp._arrays(a1, a2))
    n = builtins.max(a1.shape[0], a2.shape[0])
    return fnp.pad(a1, (n - a1.shape[0], 0)), fnp.pad(a2, (n - a2.shape[0], 0))


def polyadd(a1, a2):
    a1, a2 = _aligned(a1, a2, "polyadd")
    return a1 + a2


def polysub(a1, a2):
    a1, a2 = _aligned(a1, a2, "polysub")
    return a1 - a2


def polymul(a1, a2):
    return convolve(*(_coefficients(p, "polymul") for p in fnp._arrays(a1, a2)))


def polydiv(u, v, *, trim_leading_zeros: bool = True):
    """(quotient, remainder) of u / v by long division. The remainder's leading (near) zeros are
    dropped as NumPy drops them, which reads its values; trim_leading_zeros=False keeps its length
    (jax.numpy's default), for use under jit."""
    u, v = _coefficients(u, "polydiv"), _coefficients(v, "polydiv")
    dtype = dtypes.promote(dtypes.promote(u.dtype, v.dtype), dtypes.default_float)
    u, v = fnp.astype(u, dtype), fnp.astype(v, dtype)
    m, n = u.shape[0] - 1, v.shape[0] - 1
    remainder, quotient = u, []
    for k in range(m - n + 1):
        d = remainder[k] / v[0]
        quotient.append(d)
        remainder = fnp.concatenate([remainder[:k], remainder[k:k + n + 1] - d * v, remainder[k + n + 1:]])
    quotient = fnp.stack(quotient) if quotient else fnp.zeros(1, dtype, device=u.device)
    if trim_leading_zeros:
        values = np.asarray(fnp.stop_gradient(remainder).numpy())
        start = 0
        while start < values.shape[0] - 1 and np.allclose(values[start], 0, rtol=1e-14):
            start += 1
        remainder = remainder[start:]
    return quotient, remainder


def polyder(p, m: int = 1):
    """The m-th derivative's coefficients."""
    if m < 0:
        raise ValueError(f"polyder: the order of the derivative must be non-negative, got {m}")
    p = _coefficients(p, "polyder")
    for _ in range(m):  # past the degree the coefficients run out: empty, as NumPy's
        p = p[:-1] * np.arange(p.shape[0] - 1, 0, -1)
    return p


def polyint(p, m: int = 1, k=None):
    """The m-th antiderivative's coefficients, with integration constants k (a scalar for each
    step, or m of them, the first step's first; zeros by default)."""
    if m < 0:
        raise ValueError(f"polyint: the order of the antiderivative must be non-negative, got {m}")
    constants = np.zeros(m) if k is None else np.atleast_1d(np.asarray(k, dtype=np.float64))
    if constants.shape[0] == 1 and m > 1:
        constants = np.full(m, constants[0])
    if constants.shape[0] < m:
        raise ValueError(f"polyint: {m} integration constants needed, got {constants.shape[0]}")
    p = _coefficients(p, "polyint")
    p = fnp.astype(p, dtypes.promote(p.dtype, dtypes.default_float)) if p.dtype.kind in "biu" else p
    for step in range(m):
        n = p.shape[0]
        p = fnp.concatenate([p / np.arange(n, 0, -1), fnp.full(1, constants[step], p.dtype, device=p.device)])
    return p


def vander(x, N: int | None = None, increasing: bool = False):  # noqa: N803  (NumPy's name)
    """Columns x**(N-1), ..., x**0 (or the reverse where increasing)."""
    x = fnp.asarray(x)
    if x.ndim != 1:
        raise ShapeError(f"vander: x must be 1-D, got shape {x.shape}")
    n = x.shape[0] if N is None else int(N)
    if n < 0:
        raise ValueError(f"vander: N must be non-negative, got {n}")
    x = fnp.astype(x, np.int64) if x.dtype.kind == "b" else x
    powers = np.arange(n) if increasing else np.arange(n - 1, -1, -1)
    return fnp.power(fnp.expand_dims(x, 1), fnp.asarray(powers.astype(x.dtype), device=x.device))


def polyfit(x, y, deg: int, rcond=None, full: bool = False, w=None, cov: bool | str = False):
    """Least-squares coefficients (highest power first) of a polynomial of degree deg through
    (x, y), y one or several (columns) data sets; w weights the residuals (NumPy's 1 / sigma); with
    no more points than coefficients, the least-norm fit.
    full returns NumPy's (coefficients, residuals, rank, singular values, rcond); otherwise cov=True
    (coefficients, covariance), the covariance scaled by the residuals' variance (chi^2 / (points -
    coefficients)), or unscaled with cov='unscaled'; (deg + 1, deg + 1, K) for K data sets (NumPy's
    (deg + 1, deg + 1, 1) unscaled)."""
    if cov not in (False, True, "unscaled"):
        raise ValueError(f"polyfit: cov must be a bool or 'unscaled', got {cov!r}")
    deg = int(deg)
    if deg < 0:
        raise ValueError(f"polyfit: deg must be non-negative, got {deg}")
    x, y = fnp._float_pair(x, y)
    if x.ndim != 1 or y.ndim not in (1, 2) or y.shape[0] != x.shape[0]:
        raise ShapeError(f"polyfit: x must be 1-D and y 1-D or 2-D of the same length, got {x.shape} and {y.shape}")
    if x.shape[0] == 0:
        raise ValueError("polyfit: no points to fit")
    lhs, rhs = vander(x, deg + 1), y
    if w is not None:
        w = fnp.asarray(fnp.follow(x, w)[1], dtype=x.dtype)
        if w.shape != x.shape:
            raise ShapeError(f"polyfit: weights of shape {w.shape} for {x.shape[0]} points")
        lhs, rhs = lhs * w[:, None], rhs * (w if y.ndim == 1 else w[:, None])
    rcond = x.shape[0] * float(finfo(x.dtype).eps) if rcond is None else rcond
    scale = fnp.sqrt(fnp.sum(lhs * lhs, axis=0))  # column scaling, as NumPy: better conditioned
    scale = fnp.where(scale == 0, 1.0, scale)
    coefficients, residuals, rank, singular = lstsq(lhs / scale, rhs, rcond=rcond)
    coefficients = coefficients / (scale if y.ndim == 1 else scale[:, None])
    if full or not cov:
        return (coefficients, residuals, rank, singular, rcond) if full else coefficients
    scaled = lhs / scale
    base = inv(fnp.swapaxes(scaled, 0, 1) @ scaled) / (scale[:, None] * scale[None, :])
    if cov == "unscaled":
        return coefficients, base if y.ndim == 1 else base[..., None]  # NumPy's (n, n, 1) for every data set
    points = x.shape[0]
    if points <= deg + 1:
        raise ValueError(f"polyfit: the number of data points ({points}) must exceed the {deg + 1} coefficients to "
                         f"scale the covariance matrix")
    chi2 = fnp.sum((rhs - lhs @ coefficients) ** 2, axis=0)  # the weighted residuals, whatever the rank
    return coefficients, (base * chi2 if y.ndim == 1 else base[..., None] * chi2) / (points - deg - 1)


def poly(seq_of_zeros):
    """The monic polynomial with the given roots (a 1-D sequence; a square matrix's eigenvalues are
    not computed here, so a 2-D argument raises)."""
    roots = fnp.asarray(seq_of_zeros)
    if roots.ndim != 1:
        raise ShapeError(f"poly: roots must be 1-D (characteristic polynomials of matrices are not supported), "
                         f"got shape {roots.shape}")
    dtype = dtypes.promote(roots.dtype, dtypes.default_float) if roots.dtype.kind in "biu" else roots.dtype
    if roots.shape[0] == 0:
        return fnp.ones((), dtype, device=roots.device)  # no roots: the constant 1, as NumPy
    p = fnp.ones(1, dtype, device=roots.device)
    for i in range(roots.shape[0]):
        p = convolve(p, fnp.stack([fnp.ones((), dtype, device=roots.device), -fnp.astype(roots[i], dtype)]))
    return p


def unwrap(p, discont=None, axis: int = -1, *, period: float = 2 * math.pi):
    """p with the jumps along axis of at least discont (default period / 2) replaced by their value
    modulo period (NumPy's: a phase made continuous)."""
    p = fnp._float_arg(p)
    axis = fnp._normalize_axis(axis, p.ndim)
    if p.shape[axis] < 2:
        return p
    dd = diff(p, axis=axis)
    half = period / 2
    discont = half if discont is None else discont  # below half: only jumps past half change (NumPy)
    ddmod = fnp.mod(dd + half, period) - half
    ddmod = fnp.where((ddmod == -half) & (dd > 0), half, ddmod)  # a jump of exactly +half stays +half
    correction = fnp.where(fnp.abs(dd) < discont, 0.0, ddmod - dd)
    head = fnp.take(p, np.arange(1), axis=axis)
    return fnp.concatenate([head, fnp.take(p, np.arange(1, p.shape[axis]), axis=axis)
                            + fnp.cumsum(correction, axis=axis)], axis=axis)


def _window(m: int, formula):
    m = int(m)
    if m < 1:
        return fnp.zeros(0, dtypes.default_float)
    if m == 1:
        return fnp.ones(1, dtypes.default_float)
    n = np.arange(m, dtype=np.float64)
    return fnp.asarray(formula(n, m).astype(dtypes.default_float))


def hamming(M: int):  # noqa: N803
    return _window(M, lambda n, m: 0.54 - 0.46 * np.cos(2 * np.pi * n / (m - 1)))


def hanning(M: int):  # noqa: N803
    return _window(M, lambda n, m: 0.5 - 0.5 * np.cos(2 * np.pi * n / (m - 1)))


def bartlett(M: int):  # noqa: N803
    return _window(M, lambda n, m: 1 - np.abs(2 * n / (m - 1) - 1))


def blackman(M: int):  # noqa: N803
    return _window(M, lambda n, m: 0.42 - 0.5 * np.cos(2 * np.pi * n / (m - 1))
                   + 0.08 * np.cos(4 * np.pi * n / (m - 1)))


def kaiser(M: int, beta: float):  # noqa: N803
    """The Kaiser window: I0(beta sqrt(1 - (2n / (M - 1) - 1)^2)) / I0(beta)."""
    return _window(M, lambda n, m: np.i0(beta * np.sqrt(1 - (2 * n / (m - 1) - 1) ** 2)) / np.i0(beta))


def roots(p, *, strip_zeros: bool = True):
    """The roots of the polynomial with coefficients p (highest power first): the eigenvalues of
    its companion matrix, computed on the host as np.roots (complex where any is). It needs
    concrete coefficients (under jit it raises) and has no derivative: differentiating it raises
    rather than pass a zero gradient. strip_zeros=False gives leading zeros' (infinite) roots as
    NaN at the end, as JAX's."""
    if is_differentiated(p):
        raise TypeError("roots is computed on the host (companion-matrix eigenvalues) and has no derivative; "
                        "differentiate through the polynomial's values instead")
    coefficients = np.asarray(_concrete(p, "roots"))
    if coefficients.ndim != 1:
        raise ShapeError(f"roots: polynomial coefficients are 1-D, got shape {coefficients.shape}")
    if not strip_zeros and coefficients.size and coefficients[0] == 0:
        found = np.roots(coefficients)
        return fnp.asarray(np.concatenate([found, np.full(coefficients.size - 1 - found.size, complex(np.nan, np.nan))]))
    return fnp.asarray(np.roots(coefficients))
