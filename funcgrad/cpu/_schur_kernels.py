"""numba kernels of the Schur decomposition's QR algorithm (cpu/schur.py, which imports this module on
first use: numba's import costs ~0.3 s). Module-level functions, so numba's cache keeps them between
processes; the helpers have no Python wrapper (less to compile: ~12 s for both kernels when no cache
holds them)."""
import numpy as np
from numba import njit

_EXCEPTIONAL = 10  # steps without a deflation before an exceptional shift
_STEPS_PER_ROW = 40


@njit(cache=True, no_cpython_wrapper=True)
def negligible(h, k, eps):
    scale = np.abs(h[k - 1, k - 1]) + np.abs(h[k, k])
    if scale == 0.0:
        scale = np.sum(np.abs(h))
    return np.abs(h[k, k - 1]) <= eps * scale


@njit(cache=True, no_cpython_wrapper=True)
def bottom_of_window(h, m, eps):
    """The first row of the unreduced block ending at row m (its subdiagonal entries zeroed)."""
    k = m
    while k > 0:
        if negligible(h, k, eps):
            h[k, k - 1] = 0.0
            return k
        k -= 1
    return 0


@njit(cache=True, no_cpython_wrapper=True)
def rotate(h, z, i, c, s, upto):
    """h <- G h G^T on rows / columns i, i + 1 with G = [[c, s], [-s, c]] (real), columns from
    i - 1 on the left (h is Hessenberg), rows to `upto` on the right; z <- z G^T."""
    n = h.shape[0]
    for j in range(max(i - 1, 0), n):
        a, b = h[i, j], h[i + 1, j]
        h[i, j], h[i + 1, j] = c * a + s * b, -s * a + c * b
    rotate_columns(h, i, c, s, upto + 1)
    rotate_columns(z, i, c, s, z.shape[0])


@njit(cache=True, no_cpython_wrapper=True)
def rotate_columns(m, i, c, s, stop):
    """m[:stop, i:i + 2] <- m[:stop, i:i + 2] G^T."""
    for j in range(stop):
        a, b = m[j, i], m[j, i + 1]
        m[j, i], m[j, i + 1] = c * a + s * b, -s * a + c * b


@njit(cache=True, no_cpython_wrapper=True)
def standardise(h, z, i):
    """The 2x2 block at (i, i): split by a rotation where its eigenvalues are real, else rotated to
    equal diagonal entries (LAPACK's standard form)."""
    a, b, c, d = h[i, i], h[i, i + 1], h[i + 1, i], h[i + 1, i + 1]
    p = 0.5 * (a - d)
    disc = p * p + b * c
    if disc >= 0.0:  # real: rotate onto the eigenvector of lambda = (a + d) / 2 + sign(p) sqrt(disc)
        root = np.sqrt(disc)
        lam = 0.5 * (a + d) + (root if p >= 0 else -root)
        x, y = lam - d, c  # (A - lambda) [x, y] = 0 from the second row: c x + (d - lambda) y = 0
        if x == 0.0 and y == 0.0:
            x, y = b, lam - a
        r = np.hypot(x, y)
        if r > 0.0:
            rotate(h, z, i, x / r, y / r, i + 1)
            h[i + 1, i] = 0.0
    else:
        theta = 0.5 * np.arctan2(d - a, b + c)  # equal diagonal: (a - d) cos 2t + (b + c) sin 2t = 0
        rotate(h, z, i, np.cos(theta), np.sin(theta), i + 1)
        mean = 0.5 * (h[i, i] + h[i + 1, i + 1])
        h[i, i] = mean
        h[i + 1, i + 1] = mean


@njit(cache=True, no_cpython_wrapper=True)
def reflect3(h, z, k, x, y, w, left_from, right_to, rows):
    """The reflector of [x, y, w] (rows k .. k + rows - 1) applied to h from both sides and to z."""
    norm = np.sqrt(x * x + y * y + w * w)
    if norm == 0.0:
        return
    alpha = -norm if x >= 0 else norm
    v0, v1, v2 = x - alpha, y, w
    vv = v0 * v0 + v1 * v1 + v2 * v2
    if vv == 0.0:
        return
    beta = 2.0 / vv
    n = h.shape[0]
    for j in range(left_from, n):
        s = v0 * h[k, j] + v1 * h[k + 1, j] + (v2 * h[k + 2, j] if rows == 3 else 0.0)
        s *= beta
        h[k, j] -= s * v0
        h[k + 1, j] -= s * v1
        if rows == 3:
            h[k + 2, j] -= s * v2
    reflect_columns(h, k, v0, v1, v2, beta, rows, right_to + 1)
    reflect_columns(z, k, v0, v1, v2, beta, rows, z.shape[0])


@njit(cache=True, no_cpython_wrapper=True)
def reflect_columns(m, k, v0, v1, v2, beta, rows, stop):
    """m[:stop, k:k + rows] <- m[:stop, k:k + rows] (I - beta v v^T)."""
    for j in range(stop):
        s = v0 * m[j, k] + v1 * m[j, k + 1] + (v2 * m[j, k + 2] if rows == 3 else 0.0)
        s *= beta
        m[j, k] -= s * v0
        m[j, k + 1] -= s * v1
        if rows == 3:
            m[j, k + 2] -= s * v2


@njit(cache=True)
def real_schur(h, z):
    """h (real Hessenberg) to real Schur form in place, z accumulating; False if not converged."""
    n = h.shape[0]
    eps = np.finfo(h.dtype).eps
    m, stuck, steps = n - 1, 0, 0
    while m >= 0:
        if m == 0:
            break
        low = bottom_of_window(h, m, eps)
        if low == m:  # a 1x1 block
            m -= 1
            stuck = 0
            continue
        if low == m - 1:  # a 2x2 block
            standardise(h, z, m - 1)
            m -= 2
            stuck = 0
            continue
        steps += 1
        stuck += 1
        if steps > _STEPS_PER_ROW * n:
            return False
        if stuck % _EXCEPTIONAL == 0:  # an ad hoc shift pair (EISPACK's)
            s = np.abs(h[m, m - 1]) + np.abs(h[m - 1, m - 2])
            trace, det = 1.5 * s, s * s
        else:
            trace = h[m - 1, m - 1] + h[m, m]
            det = h[m - 1, m - 1] * h[m, m] - h[m - 1, m] * h[m, m - 1]
        x = h[low, low] * h[low, low] + h[low, low + 1] * h[low + 1, low] - trace * h[low, low] + det
        y = h[low + 1, low] * (h[low, low] + h[low + 1, low + 1] - trace)
        w = h[low + 1, low] * h[low + 2, low + 1]
        for k in range(low, m - 1):
            reflect3(h, z, k, x, y, w, max(low, k - 1), min(k + 3, m), 3)
            if k > low:
                h[k + 1, k - 1] = 0.0
                h[k + 2, k - 1] = 0.0
            x = h[k + 1, k]
            y = h[k + 2, k]
            if k < m - 2:
                w = h[k + 3, k]
        reflect3(h, z, m - 1, x, y, 0.0, m - 2, m, 2)
        h[m, m - 2] = 0.0
    return True


@njit(cache=True)
def complex_schur(h, z):
    """h (complex Hessenberg) to triangular Schur form in place, z accumulating."""
    n = h.shape[0]
    eps = np.finfo(h.real.dtype).eps
    m, stuck, steps = n - 1, 0, 0
    while m > 0:
        low = bottom_of_window(h, m, eps)
        if low == m:
            m -= 1
            stuck = 0
            continue
        steps += 1
        stuck += 1
        if steps > _STEPS_PER_ROW * n:
            return False
        a, b, c, d = h[m - 1, m - 1], h[m - 1, m], h[m, m - 1], h[m, m]
        if stuck % _EXCEPTIONAL == 0:
            mu = d + np.abs(c)
        else:  # Wilkinson: the eigenvalue of [[a, b], [c, d]] nearer d
            p = 0.5 * (a - d)
            root = np.sqrt(p * p + b * c)
            if (p.conjugate() * root).real < 0:
                root = -root
            denominator = p + root
            mu = d - (b * c / denominator if denominator != 0 else 0.0)
        x, y = h[low, low] - mu, h[low + 1, low]
        for k in range(low, m):
            r = np.sqrt(np.abs(x) ** 2 + np.abs(y) ** 2)
            if r == 0.0:
                cs, sn = 1.0 + 0.0j, 0.0j
            elif x == 0:
                cs, sn = 0.0j, np.conj(y) / np.abs(y)
            else:
                cs = np.abs(x) / r + 0.0j
                sn = (x / np.abs(x)) * np.conj(y) / r
            for j in range(max(k - 1, 0), n):  # rows k, k + 1 <- G [[c, s], [-conj(s), c]]
                u, v = h[k, j], h[k + 1, j]
                h[k, j], h[k + 1, j] = cs * u + sn * v, -np.conj(sn) * u + cs * v
            for j in range(0, min(k + 2, m) + 1):  # columns k, k + 1 <- G^H
                u, v = h[j, k], h[j, k + 1]
                h[j, k], h[j, k + 1] = cs * u + np.conj(sn) * v, -sn * u + cs * v
            for j in range(z.shape[0]):
                u, v = z[j, k], z[j, k + 1]
                z[j, k], z[j, k + 1] = cs * u + np.conj(sn) * v, -sn * u + cs * v
            if k > low:
                h[k + 1, k - 1] = 0.0
            if k < m - 1:
                x, y = h[k + 1, k], h[k + 2, k]
    return True
