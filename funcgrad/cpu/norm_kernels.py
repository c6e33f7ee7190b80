"""The numba kernels of norms.py, at module level so numba caches them on disk. Sums accumulate
in float64 through helpers compiled with reassociation allowed, so their loops vectorise (a serial
float64 sum waits four cycles per element)."""
import numpy as np
from numba import njit


@njit(cache=True, nogil=True, error_model="numpy", fastmath={"reassoc"})
def row_sum(row):
    total = 0.0
    for j in range(row.shape[0]):
        total += row[j]
    return total


@njit(cache=True, nogil=True, error_model="numpy", fastmath={"reassoc"})
def _sum_of_squares(row, shift):
    total = 0.0
    for j in range(row.shape[0]):
        d = row[j] - shift
        total += d * d
    return total


@njit(cache=True, nogil=True, error_model="numpy", fastmath={"reassoc"})
def _cotangent_sums(g, x, mean):
    """sum(g) and sum(g * (x - mean)) in one pass."""
    total = dot = 0.0
    for j in range(g.shape[0]):
        total += g[j]
        dot += g[j] * (x[j] - mean)
    return total, dot


@njit(inline="always", error_model="numpy")
def _statistics(row, eps, center):
    """The row's mean (0 when not centred) and 1 / sqrt(variance + eps), the variance biased."""
    n = row.shape[0]
    mean = row_sum(row) / n if center else 0.0
    return mean, 1.0 / np.sqrt(_sum_of_squares(row, mean) / n + eps)


@njit(cache=True, nogil=True, error_model="numpy")
def normalize(x, out, eps, center):
    for r in range(x.shape[0]):
        mean, rstd = _statistics(x[r], eps, center)
        for j in range(x.shape[1]):
            out[r, j] = (x[r, j] - mean) * rstd


@njit(cache=True, nogil=True, error_model="numpy")
def normalize_grad(x, g, out, eps, center):
    """out = rstd * (g - mean(g) - xhat * mean(g * xhat)) per row (no mean(g) term uncentred):
    the normalisation's Jacobian, rstd (I - 1/n - xhat xhat^T / n), applied to g. Four passes over
    a row: the statistics (two), g's sums (one), the result."""
    n = x.shape[1]
    for r in range(x.shape[0]):
        mean, rstd = _statistics(x[r], eps, center)
        g_total, g_dot = _cotangent_sums(g[r], x[r], mean)
        g_mean = g_total / n if center else 0.0
        projection = g_dot * rstd / n  # mean(g * xhat)
        for j in range(n):
            out[r, j] = rstd * (g[r, j] - g_mean - (x[r, j] - mean) * rstd * projection)
