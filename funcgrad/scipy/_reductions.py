"""scipy.linalg's hessenberg, solve_sylvester, eigh_tridiagonal and qr_multiply, composed of
funcgrad operations (so differentiable, and traceable under jit where their shapes are static)."""
from __future__ import annotations

import operator

import numpy as np

from .. import dtypes
from .. import numpy as fnp
from ..errors import ShapeError
from ..numpy import linalg as _linalg

__all__ = ["hessenberg", "solve_sylvester", "eigh_tridiagonal", "qr_multiply"]


def _square(a, name: str):
    a = fnp._float_arg(a)
    if a.ndim < 2 or a.shape[-1] != a.shape[-2]:
        raise ShapeError(f"{name} needs square matrices (..., n, n), got shape {tuple(a.shape)}")
    return a


def _outer(u, v):
    return u[..., :, None] * fnp.conj(v)[..., None, :]


def hessenberg(a, calc_q: bool = False, overwrite_a: bool = False, check_finite: bool = True):
    """H upper Hessenberg with a = Q H Q^H (and Q with calc_q), by LAPACK's Householder reflectors
    I - tau v v^H (beta real, so H's subdiagonal is real, as gehrd's)."""
    h = _square(a, "hessenberg")
    n = h.shape[-1]
    q = fnp.broadcast_to(fnp.eye(n, dtype=h.dtype), h.shape)
    rows = np.arange(n)
    for k in range(n - 1):  # the last reflector makes the last subdiagonal entry real (complex a)
        x = fnp.where(rows > k, h[..., :, k], 0)  # the column below the diagonal, in place
        alpha = h[..., k + 1, k]
        tail = fnp.sqrt(fnp.sum(fnp.abs(fnp.where(rows > k + 1, x, 0)) ** 2, axis=-1))
        norm = fnp.sqrt(fnp.abs(alpha) ** 2 + tail ** 2)
        still = (tail == 0) & (fnp.imag(alpha) == 0 if dtypes.is_complex(h.dtype) else True)
        beta = -fnp.where(fnp.real(alpha) >= 0, 1.0, -1.0) * norm
        beta = fnp.where(still, 1.0, beta)  # no reflection needed: tau = 0
        tau = fnp.where(still, 0.0, (beta - alpha) / beta)
        scale = fnp.where(still, 1.0, alpha - beta)
        v = fnp.where(rows == k + 1, 1.0, x / scale[..., None])
        v = fnp.where(rows > k, v, 0)
        tau_ = tau[..., None, None]
        h = h - fnp.conj(tau_) * _outer(v, fnp.einsum("...i,...ij->...j", fnp.conj(v), h).conj())  # H^H h
        h = h - tau_ * _outer(fnp.einsum("...ij,...j->...i", h, v), v)  # (H^H h) H
        q = q - tau_ * _outer(fnp.einsum("...ij,...j->...i", q, v), v)
        column = rows[None, :] == k  # the reflected column is exactly (.., beta, 0, ...), as LAPACK stores it
        reflected = fnp.where(still, alpha, beta)[..., None, None]
        h = fnp.where(column & (rows[:, None] > k + 1), 0, fnp.where(column & (rows[:, None] == k + 1), reflected, h))
    return (h, q) if calc_q else h


def solve_sylvester(a, b, q):
    """X with a X + X b = q, as one dense solve of the Kronecker system (a (x) I + I (x) b^T) vec X
    = vec q: O((n m)^3), for the small matrices Sylvester equations usually have."""
    a, b = _square(a, "solve_sylvester"), _square(b, "solve_sylvester")
    q = fnp.asarray(q)
    n, m = a.shape[-1], b.shape[-1]
    if a.ndim != 2 or b.ndim != 2 or tuple(q.shape) != (n, m):
        raise ShapeError(f"solve_sylvester: a {tuple(a.shape)}, b {tuple(b.shape)} and q {tuple(q.shape)} must be "
                         f"(n, n), (m, m) and (n, m)")
    system = fnp.kron(a, fnp.eye(m, dtype=a.dtype)) + fnp.kron(fnp.eye(n, dtype=b.dtype), fnp.swapaxes(b, 0, 1))
    return fnp.reshape(_linalg.solve(system, fnp.reshape(q, (n * m,))), (n, m))


def eigh_tridiagonal(d, e, eigvals_only: bool = False, select: str = "a", select_range=None,
                     check_finite: bool = True, tol: float = 0.0, lapack_driver: str = "auto"):
    """Eigenvalues (ascending) and eigenvectors of the symmetric tridiagonal matrix of diagonal d and
    off-diagonal e; select 'a' (all), 'i' (indices lo..hi inclusive) or 'v' (values in (lo, hi],
    concrete arguments only: the count is data-dependent)."""
    d, e = fnp.asarray(d), fnp.asarray(e)
    n = d.shape[-1]
    if d.ndim != 1 or tuple(e.shape) != (n - 1,):
        raise ShapeError(f"eigh_tridiagonal: d must be (n,) and e (n - 1,), got {tuple(d.shape)} and {tuple(e.shape)}")
    matrix = fnp.diag(d) + fnp.diag(e, 1) + fnp.diag(fnp.conj(e), -1)
    w, v = _linalg.eigh(matrix)
    if select == "i":
        lo, hi = (operator.index(i) for i in select_range)
        if not 0 <= lo <= hi < n:
            raise ValueError(f"eigh_tridiagonal: select_range {(lo, hi)} is out of range for {n} eigenvalues")
        w, v = w[lo:hi + 1], v[:, lo:hi + 1]
    elif select == "v":
        lo, hi = select_range
        keep = np.flatnonzero((np.asarray(w) > lo) & (np.asarray(w) <= hi))
        w, v = w[keep], v[:, keep]
    elif select != "a":
        raise ValueError(f"eigh_tridiagonal: select must be 'a', 'i' or 'v', got {select!r}")
    return w if eigvals_only else (w, v)


def qr_multiply(a, c, mode: str = "right", pivoting: bool = False, conjugate: bool = False,
                overwrite_a: bool = False, overwrite_c: bool = False):
    """(c @ Q, R) for mode 'right', (Q @ c, R) for 'left', Q and R the economic factors of a (Q
    conjugated with conjugate); a 1-D c is a row (right) or a column (left)."""
    if pivoting:
        raise ValueError("qr_multiply: column pivoting (pivoting=True) is not available in funcgrad")
    if mode not in ("left", "right"):
        raise ValueError(f"qr_multiply: mode must be 'left' or 'right', got {mode!r}")
    q, r = _linalg.qr(a, mode="reduced")
    q = fnp.conj(q) if conjugate else q
    c = fnp.asarray(c)
    if mode == "right":
        product = c @ q
    else:
        product = q @ c
    return product, r
