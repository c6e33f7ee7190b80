"""jax.lax.linalg: the decompositions under lax's signatures and result orders (eigh gives the
vectors first, lu the pivots and the permutation, triangular_solve solves from either side),
in terms of funcgrad.numpy.linalg and funcgrad.scipy.linalg, whose derivatives they keep (schur, on the
host, has none; symmetric_product and cholesky_update are composed).

Where PyTorch and JAX differ, funcgrad follows PyTorch: cholesky of a matrix that is not positive
definite raises instead of returning NaNs.
"""
from __future__ import annotations

import operator

import numpy as np

from .. import numpy as fnp
from ..errors import ShapeError
from ..scipy import linalg as sl
from ..scipy.linalg import _pivots_to_permutation

__all__ = ["cholesky", "eig", "eigh", "householder_product", "lu", "lu_pivots_to_permutation", "qr", "svd",
           "triangular_solve", "tridiagonal_solve", "schur", "symmetric_product", "cholesky_update"]


def _matrices(x, name: str, square: bool = True):
    x = fnp.asarray(x)
    if x.ndim < 2 or (square and x.shape[-1] != x.shape[-2]):
        raise ShapeError(f"lax.linalg.{name} needs {'square ' if square else ''}matrices (..., m, n), got shape "
                         f"{tuple(x.shape)}")
    return x


def _mH(x):
    return fnp.conj(fnp.swapaxes(x, -1, -2))


def _symmetrized(x, symmetrize_input: bool):
    return (x + _mH(x)) / 2 if symmetrize_input else x


def cholesky(x, *, symmetrize_input: bool = True):
    """The lower-triangular L with L L^H = x (of x's Hermitian part, with symmetrize_input)."""
    return fnp.linalg.cholesky(_matrices(x, "cholesky"), symmetrize_input=symmetrize_input)


def eig(x, *, compute_left_eigenvectors: bool = True, compute_right_eigenvectors: bool = True,
        use_magma=None, implementation=None):
    """(w, vl, vr), less the eigenvectors not asked for: vr's columns are right eigenvectors
    (x vr = vr diag(w)), vl's left ones (vl^H x = diag(w) vl^H), each of unit norm."""
    x = _matrices(x, "eig")
    w, vr = fnp.linalg.eig(x)
    out = [w]
    if compute_left_eigenvectors:  # the rows of vr^-1 are the left eigenvectors, conjugated
        vl = _mH(fnp.linalg.inv(vr))
        out.append(vl / fnp.linalg.norm(vl, axis=-2, keepdims=True))
    if compute_right_eigenvectors:
        out.append(vr)
    return tuple(out)


def eigh(x, *, lower: bool = True, symmetrize_input: bool = True, sort_eigenvalues: bool = True,
         subset_by_index: tuple[int, int] | None = None, implementation=None):
    """(v, w) of a Hermitian x, eigenvalues ascending; the lower (or upper) triangle is read
    when symmetrize_input is False; subset_by_index=(lo, hi) keeps eigenvalues lo..hi-1."""
    x = _matrices(x, "eigh")
    w, v = fnp.linalg.eigh(_symmetrized(x, symmetrize_input), UPLO="L" if lower else "U", symmetrize_input=False)
    if subset_by_index is not None:
        lo, hi = (operator.index(i) for i in subset_by_index)
        if not 0 <= lo <= hi <= w.shape[-1]:
            raise ValueError(f"eigh: subset_by_index {(lo, hi)} is out of range for {w.shape[-1]} eigenvalues")
        w, v = w[..., lo:hi], v[..., lo:hi]
    return v, w


def lu(x):
    """(lu, pivots, permutation) of square matrices with partial pivoting: l below lu's diagonal
    (unit), u on and above it; row i was swapped with pivots[i] at step i; (P x)[i] = x[permutation[i]]."""
    packed, pivots = sl.lu_factor(_matrices(x, "lu"))
    return packed, pivots, fnp.astype(_pivots_to_permutation(pivots), np.int32)


def lu_pivots_to_permutation(pivots, permutation_size: int):
    """The row order that the swaps of pivots make on permutation_size rows."""
    pivots = fnp.asarray(pivots)
    k, size = pivots.shape[-1], operator.index(permutation_size)
    if size < k:
        raise ValueError(f"lu_pivots_to_permutation: permutation_size {size} is smaller than the {k} pivots")
    still = fnp.broadcast_to(fnp.arange(k, size, dtype=pivots.dtype), pivots.shape[:-1] + (size - k,))
    return fnp.astype(_pivots_to_permutation(fnp.concatenate([pivots, still], axis=-1)), pivots.dtype)


def qr(x, *, pivoting: bool = False, full_matrices: bool = True, use_magma=None):
    """(q, r): q with orthonormal columns (square when full_matrices), r upper triangular."""
    if pivoting:
        raise ValueError("lax.linalg.qr: column pivoting is not available in funcgrad; use pivoting=False")
    return fnp.linalg.qr(_matrices(x, "qr", square=False), mode="complete" if full_matrices else "reduced")


def svd(x, *, full_matrices: bool = True, compute_uv: bool = True, subset_by_index: tuple[int, int] | None = None,
        algorithm=None):
    """(u, s, vh) (or s alone), singular values descending; subset_by_index=(lo, hi) keeps lo..hi-1."""
    x = _matrices(x, "svd", square=False)
    out = fnp.linalg.svd(x, full_matrices=full_matrices, compute_uv=compute_uv)
    if subset_by_index is None:
        return tuple(out) if compute_uv else out
    lo, hi = (operator.index(i) for i in subset_by_index)
    if not 0 <= lo <= hi <= min(x.shape[-2:]):
        raise ValueError(f"svd: subset_by_index {(lo, hi)} is out of range for {min(x.shape[-2:])} singular values")
    if not compute_uv:
        return out[..., lo:hi]
    u, s, vh = out
    return u[..., lo:hi], s[..., lo:hi], vh[..., lo:hi, :]


def triangular_solve(a, b, *, left_side: bool = False, lower: bool = False, transpose_a: bool = False,
                     conjugate_a: bool = False, unit_diagonal: bool = False):
    """x with op(a) x = b (left_side) or x op(a) = b, where op(a) is a, its transpose, its conjugate
    transpose or its conjugate, and a's lower (or upper) triangle is read."""
    a = _matrices(a, "triangular_solve")
    b = fnp.asarray(b)
    if not left_side:  # x op(a) = b is op(a)^T x^T = b^T
        x_t = triangular_solve(a, fnp.swapaxes(b, -1, -2), left_side=True, lower=lower, transpose_a=not transpose_a,
                               conjugate_a=conjugate_a, unit_diagonal=unit_diagonal)
        return fnp.swapaxes(x_t, -1, -2)
    if conjugate_a and not transpose_a:
        a = fnp.conj(a)
    trans = (2 if conjugate_a else 1) if transpose_a else 0
    return sl.solve_triangular(a, b, trans=trans, lower=lower, unit_diagonal=unit_diagonal)


def tridiagonal_solve(dl, d, du, b):
    """x with A x = b for the tridiagonal A of sub-diagonal dl (dl[0] unused), diagonal d and
    super-diagonal du (du[-1] unused); b is (..., m, n). Solved densely with partial pivoting."""
    dl, d, du, b = (fnp.asarray(v) for v in (dl, d, du, b))
    m = d.shape[-1]
    if dl.shape != d.shape or du.shape != d.shape or b.ndim < 2 or b.shape[-2] != m:
        raise ShapeError(f"tridiagonal_solve: dl, d, du must share a shape (..., m) and b be (..., m, n); got "
                         f"{tuple(dl.shape)}, {tuple(d.shape)}, {tuple(du.shape)} and {tuple(b.shape)}")
    matrix = (fnp.eye(m, dtype=d.dtype) * d[..., :, None] + fnp.eye(m, k=1, dtype=d.dtype) * du[..., :, None]
              + fnp.eye(m, k=-1, dtype=d.dtype) * dl[..., :, None])
    return fnp.linalg.solve(matrix, b)


def householder_product(a, taus):
    """The first n columns of H_0 H_1 ... H_{k-1}, H_i = I - tau_i v_i v_i^H with v_i 1 at row i, 0
    above and a[i + 1:, i] below (LAPACK's orgqr / ungqr: the Q a geqrf leaves behind; PyTorch's
    torch.linalg.householder_product). a is (..., m, n), m >= n, taus (..., k), k <= n."""
    a, taus = fnp.asarray(a), fnp.asarray(taus)
    a = _matrices(a, "householder_product", square=False)
    m, n = a.shape[-2:]
    k = taus.shape[-1] if taus.ndim else -1
    if m < n or taus.ndim != a.ndim - 1 or not 0 <= k <= n or taus.shape[:-1] != a.shape[:-2]:
        raise ShapeError(f"householder_product needs a (..., m, n) with m >= n and taus (..., k) with k <= n, got "
                         f"shapes {tuple(a.shape)} and {tuple(taus.shape)}")
    rows = np.arange(m)[:, None]
    q = fnp.broadcast_to(fnp.eye(m, n, dtype=a.dtype), a.shape)
    for i in reversed(range(k)):  # Q = H_0 (H_1 (... (H_{k-1} I))): each reflection applied from the left
        v = fnp.where(rows > i, a[..., :, i:i + 1], fnp.where(rows == i, np.ones((), a.dtype), np.zeros((), a.dtype)))
        q = q - taus[..., i, None, None] * v * fnp.matmul(_mH(v), q)
    return q


def schur(x, *, compute_schur_vectors: bool = True, sort_eig_vals: bool = False, select_callable=None) -> list:
    """[T, vs] with x = vs T vs^H (scipy.linalg.schur's host computation: real Schur form of a real x,
    triangular of a complex one), or [T] without the vectors; a list, as jax.lax.linalg.schur. Sorting
    the eigenvalues raises, as JAX's (LAPACK's gees sorts, JAX does not use it)."""
    if sort_eig_vals or select_callable is not None:
        raise ValueError("lax.linalg.schur: sorting the eigenvalues (sort_eig_vals, select_callable) is not "
                         "supported, as in JAX; reorder the Schur form with Givens rotations")
    t, vs = sl.schur(_matrices(x, "schur"))
    return [t, vs] if compute_schur_vectors else [t]


def symmetric_product(a_matrix, c_matrix, *, alpha: float = 1.0, beta: float = 0.0, symmetrize_output: bool = False):
    """alpha a a^T + beta c for a (..., m, n) and a symmetric c (..., m, m); with symmetrize_output the
    lower triangle mirrored onto the upper (BLAS syrk's, and JAX's, where c is not quite symmetric)."""
    a, c = _matrices(a_matrix, "symmetric_product", square=False), _matrices(c_matrix, "symmetric_product")
    if c.shape[-1] != a.shape[-2]:
        raise ShapeError(f"lax.linalg.symmetric_product: a of shape {tuple(a.shape)} needs c of shape "
                         f"(..., {a.shape[-2]}, {a.shape[-2]}), got {tuple(c.shape)}")
    out = alpha * (a @ fnp.swapaxes(a, -1, -2)) + beta * c
    return fnp.tril(out) + fnp.swapaxes(fnp.tril(out, -1), -1, -2) if symmetrize_output else out


def cholesky_update(r_matrix, w_vector):
    """The upper-triangular R' with R'^T R' = R^T R + w w^T, in O(n^2) by one Givens rotation per row
    (each folds w's next entry into R's diagonal); differentiable, as its steps are."""
    r, w = _matrices(r_matrix, "cholesky_update"), fnp.asarray(w_vector)
    n = r.shape[-1]
    if r.ndim != 2 or tuple(w.shape) != (n,):
        raise ShapeError(f"lax.linalg.cholesky_update takes a square matrix and a vector of its size, got shapes "
                         f"{tuple(r.shape)} and {tuple(w.shape)}")
    w = fnp.astype(w, r.dtype)
    rows = []
    for k in range(n):
        row, head = r[k], w[k]
        radius = fnp.sqrt(row[k] * row[k] + head * head)
        safe = fnp.where(radius == 0, 1.0, radius)
        c, s = fnp.where(radius == 0, 1.0, row[k] / safe), fnp.where(radius == 0, 0.0, head / safe)
        rows.append(c * row + s * w)
        w = c * w - s * row
    return fnp.stack(rows)
