"""The special matrices of scipy.linalg (jax.scipy.linalg's): circulant, companion,
convolution_matrix, dft, fiedler, fiedler_companion, hadamard, hankel, helmert, invhilbert,
invpascal, leslie, pascal. Those built from arrays are gathers and products of them (so they
differentiate); the integer ones are exact on the host."""
from __future__ import annotations

import math

import numpy as np

from .. import dtypes
from .. import numpy as fnp
from ..array import Array

__all__ = ["circulant", "companion", "convolution_matrix", "dft", "fiedler", "fiedler_companion", "hadamard",
           "hankel", "helmert", "invhilbert", "invpascal", "leslie", "pascal"]


def _vector(x, name: str):
    x = fnp.asarray(x)
    if x.ndim != 1 or x.shape[0] == 0:
        raise ValueError(f"{name} takes a non-empty 1-d array, got shape {tuple(x.shape)}")
    return x


def circulant(c) -> Array:
    """C[i, j] = c[(i - j) mod n]: each column c rotated down by its index."""
    c = _vector(c, "circulant")
    n = c.shape[0]
    return fnp.take(c, (np.arange(n)[:, None] - np.arange(n)[None, :]) % n)


def companion(a) -> Array:
    """The companion matrix of the polynomial a (highest power first, a[0] != 0): first row
    -a[1:] / a[0], ones below the diagonal."""
    a = fnp._float_arg(_vector(a, "companion"))
    if a.shape[0] < 2:
        raise ValueError("companion: a needs at least two coefficients")
    n = a.shape[0] - 1
    below = fnp.asarray(np.eye(n, k=-1, dtype=a.dtype))
    top = fnp.pad(fnp.reshape(-a[1:] / a[0], (1, n)), ((0, n - 1), (0, 0)))
    return top + below


def convolution_matrix(a, n: int, mode: str = "full") -> Array:
    """A with A @ v = np.convolve(a, v, mode) for any v of length n."""
    a = _vector(a, "convolution_matrix")
    if n <= 0:
        raise ValueError(f"convolution_matrix: n must be a positive integer, got {n}")
    if mode not in ("full", "same", "valid"):
        raise ValueError(f"convolution_matrix: mode must be 'full', 'same' or 'valid', got {mode!r}")
    m = a.shape[0]
    rows = np.arange(m + n - 1)[:, None] - np.arange(n)[None, :]  # A[i, j] = a[i - j] where that exists
    full = fnp.where(fnp.asarray((rows >= 0) & (rows < m)), fnp.take(a, np.clip(rows, 0, m - 1)), 0)
    trim = min(n, m) - 1
    start = {"full": 0, "same": trim // 2, "valid": trim}[mode]
    stop = m + n - 1 - {"full": 0, "same": trim - trim // 2, "valid": trim}[mode]
    return full[start:stop]


def dft(n: int, scale: str | None = None, *, dtype=None) -> Array:
    """The DFT matrix exp(-2 pi i j k / n), divided by sqrt(n) ('sqrtn') or n ('n')."""
    if scale not in (None, "sqrtn", "n"):
        raise ValueError(f"dft: scale must be None, 'sqrtn' or 'n', got {scale!r}")
    k = np.arange(n)
    matrix = np.exp(-2j * np.pi * np.outer(k, k) / n) / {None: 1.0, "sqrtn": math.sqrt(n), "n": n}[scale]
    return fnp.asarray(matrix.astype(dtypes.complex64 if dtype is None else dtype))


def fiedler(a) -> Array:
    """F[i, j] = |a[i] - a[j]|."""
    a = _vector(a, "fiedler")
    return fnp.abs(a[:, None] - a[None, :])


def fiedler_companion(a) -> Array:
    """Fiedler's pentadiagonal companion matrix of the polynomial a (a[0] != 0), similar to companion(a)."""
    a = fnp._float_arg(_vector(a, "fiedler_companion"))
    if a.shape[0] < 2:
        raise ValueError("fiedler_companion: a needs at least two coefficients")
    a = a / a[0]
    n = a.shape[0] - 1
    if n == 1:
        return fnp.reshape(-a[1], (1, 1))
    rows, cols, values = [0, 1], [0, 0], [-a[1], fnp.ones((), a.dtype)]
    for r, c in zip(range(3, n, 2), range(1, n - 2, 2)):
        rows, cols, values = rows + [r], cols + [c], values + [fnp.ones((), a.dtype)]
    for (r, c), v in zip(zip(range(2, n, 2), range(1, n - 1, 2)), range(3, n + 1, 2)):
        rows, cols, values = rows + [r], cols + [c], values + [-a[v]]
    for r, c in zip(range(0, n - 2, 2), range(2, n, 2)):
        rows, cols, values = rows + [r], cols + [c], values + [fnp.ones((), a.dtype)]
    for (r, c), v in zip(zip(range(0, n - 1, 2), range(1, n, 2)), range(2, n + 1, 2)):
        rows, cols, values = rows + [r], cols + [c], values + [-a[v]]
    return fnp.zeros((n, n), a.dtype).at[np.array(rows), np.array(cols)].set(fnp.stack(values))


def hadamard(n: int, dtype=int) -> Array:
    """Sylvester's Hadamard matrix of order n, a power of 2."""
    if n < 1 or n & (n - 1):
        raise ValueError(f"hadamard: n must be a positive power of 2, got {n}")
    h = np.ones((1, 1), dtype=dtype)
    while h.shape[0] < n:
        h = np.block([[h, h], [h, -h]])
    return fnp.asarray(h)


def hankel(c, r=None) -> Array:
    """H[i, j] = c[i + j] on and above the anti-diagonal, r[i + j - m + 1] below it (r[0] ignored;
    zeros by default)."""
    c = fnp.ravel(fnp.asarray(c))
    r = fnp.zeros_like(c) if r is None else fnp.ravel(fnp.asarray(r))
    c, r = fnp._common([c, r])
    values = fnp.concatenate([c, r[1:]])
    return fnp.take(values, np.arange(c.shape[0])[:, None] + np.arange(r.shape[0])[None, :])


def helmert(n: int, full: bool = False) -> Array:
    """The Helmert matrix: orthonormal rows, the first (kept when full) all 1 / sqrt(n)."""
    h = np.tril(np.ones((n, n)), -1) - np.diag(np.arange(n))
    d = np.arange(n) * np.arange(1, n + 1)
    h[0] = 1
    d[0] = n
    h = h / np.sqrt(d)[:, None]
    return fnp.asarray(h if full else h[1:])


def invhilbert(n: int) -> Array:
    """The inverse of the n x n Hilbert matrix, from its exact integer entries."""
    out = np.empty((n, n))
    for i in range(n):
        for j in range(n):
            out[i, j] = float((-1) ** (i + j) * (i + j + 1) * math.comb(n + i, n - j - 1) * math.comb(n + j, n - i - 1)
                              * math.comb(i + j, i) ** 2)
    return fnp.asarray(out)


def _pascal_lower(n: int, signed: bool) -> list:
    return [[(-1) ** (i - j) * math.comb(i, j) if signed else math.comb(i, j) for j in range(n)] for i in range(n)]


def pascal(n: int, kind: str | None = None) -> Array:
    """The Pascal matrix: 'symmetric' (default) C(i + j, i), 'lower' C(i, j), 'upper' its transpose."""
    kind = "symmetric" if kind is None else kind
    if kind not in ("symmetric", "lower", "upper"):
        raise ValueError(f"pascal: kind must be 'symmetric', 'lower' or 'upper', got {kind!r}")
    if kind == "symmetric":
        return fnp.asarray(np.array([[math.comb(i + j, i) for j in range(n)] for i in range(n)], np.int64))
    lower = np.array(_pascal_lower(n, False), np.int64)
    return fnp.asarray(lower if kind == "lower" else lower.T)


def invpascal(n: int, kind: str | None = None) -> Array:
    """pascal(n, kind)'s exact inverse: the lower one with alternating signs (and its products)."""
    kind = "symmetric" if kind is None else kind
    if kind not in ("symmetric", "lower", "upper"):
        raise ValueError(f"invpascal: kind must be 'symmetric', 'lower' or 'upper', got {kind!r}")
    lower = _pascal_lower(n, True)
    if kind == "symmetric":  # (L L^T)^-1 = L^-T L^-1, in exact integers
        out = [[sum(lower[k][i] * lower[k][j] for k in range(n)) for j in range(n)] for i in range(n)]
    else:
        out = lower if kind == "lower" else [list(row) for row in zip(*lower)]
    return fnp.asarray(np.array(out, np.int64))


def leslie(f, s) -> Array:
    """The Leslie matrix: fecundities f in the first row, survival rates s below the diagonal."""
    f, s = fnp._common([_vector(f, "leslie"), fnp.ravel(fnp.asarray(s))])
    n = f.shape[0]
    if s.shape[0] != n - 1:
        raise ValueError(f"leslie: s needs {n - 1} entries for f of {n}, got {s.shape[0]}")
    below = fnp.pad(fnp.diag(s), ((1, 0), (0, 1)))
    return fnp.concatenate([fnp.reshape(f, (1, n)), below[1:]], axis=0)
