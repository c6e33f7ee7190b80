"""jax.lax.linalg's signatures and result orders, against NumPy's solvers and the defining identities."""
import itertools

import numpy as np
import pytest

from funcgrad import check_grads
from funcgrad.errors import ShapeError
from funcgrad.lax import linalg as L

from .helpers import assert_close

RNG = np.random.default_rng(11)
A = RNG.standard_normal((2, 4, 4))
SPD = A @ np.swapaxes(A, -1, -2) + 4 * np.eye(4)
H = A + np.swapaxes(A, -1, -2)


def test_cholesky_eigh_and_svd():
    chol = np.asarray(L.cholesky(SPD))
    assert_close(chol, np.linalg.cholesky(SPD))
    assert_close(L.cholesky(np.tril(SPD) + np.triu(SPD, 1) * 3, symmetrize_input=False)[0],
                 np.linalg.cholesky(np.tril(SPD) + np.tril(SPD, -1).swapaxes(-1, -2))[0])  # the lower triangle read
    v, w = L.eigh(H)
    assert_close(w, np.linalg.eigvalsh(H))
    assert_close(H @ np.asarray(v), np.asarray(v) * np.asarray(w)[..., None, :], atol=1e-10)
    _, upper = L.eigh(np.triu(H), lower=False, symmetrize_input=False, subset_by_index=(1, 3))
    assert_close(upper, np.linalg.eigvalsh(H)[..., 1:3])
    u, s, vh = L.svd(A[..., :3], full_matrices=False)
    assert_close(np.asarray(u) * np.asarray(s)[..., None, :] @ np.asarray(vh), A[..., :3])
    assert_close(L.svd(A, compute_uv=False, subset_by_index=(1, 3)), np.linalg.svd(A, compute_uv=False)[..., 1:3])
    q, r = L.qr(A[..., :3])
    assert q.shape == (2, 4, 4) and r.shape == (2, 4, 3)
    assert_close(np.asarray(q) @ np.asarray(r), A[..., :3])
    with pytest.raises(ValueError, match="column pivoting is not available"):
        L.qr(A, pivoting=True)


def test_lu_gives_pivots_and_permutation():
    packed, pivots, perm = L.lu(A)
    packed, pivots, perm = (np.asarray(t) for t in (packed, pivots, perm))
    assert pivots.dtype == np.int32 and perm.dtype == np.int32
    lower, upper = np.tril(packed, -1) + np.eye(4), np.triu(packed)
    assert_close(np.take_along_axis(A, perm[..., None], axis=-2), lower @ upper)
    for b in range(2):  # the swaps, replayed, give the permutation
        order = list(range(4))
        for i, p in enumerate(pivots[b]):
            order[i], order[p] = order[p], order[i]
        np.testing.assert_array_equal(perm[b], order)
    np.testing.assert_array_equal(L.lu_pivots_to_permutation(np.array([2, 2, 3], np.int32), 5), [2, 0, 3, 1, 4])
    with pytest.raises(Exception, match="square"):
        L.lu(A[..., :3])


@pytest.mark.parametrize("left_side,lower,transpose_a,conjugate_a", list(itertools.product([True, False], repeat=4)))
def test_triangular_solve_from_either_side(left_side, lower, transpose_a, conjugate_a):
    a = RNG.standard_normal((4, 4)) + 1j * RNG.standard_normal((4, 4)) + 4 * np.eye(4)
    b = RNG.standard_normal((4, 2) if left_side else (2, 4)) + 0j
    unit = lower and transpose_a
    t = np.tril(a) if lower else np.triu(a)
    if unit:
        t = t - np.diag(np.diag(t)) + np.eye(4)
    op = t.T if transpose_a else t
    op = op.conj() if conjugate_a else op
    expected = np.linalg.solve(op, b) if left_side else np.linalg.solve(op.T, b.T).T
    assert_close(L.triangular_solve(a, b, left_side=left_side, lower=lower, transpose_a=transpose_a,
                                    conjugate_a=conjugate_a, unit_diagonal=unit), expected, atol=1e-10)


def test_eig_left_and_right_vectors_and_tridiagonal_solve():
    a = A[0]
    w, vl, vr = (np.asarray(t) for t in L.eig(a))
    assert_close(a @ vr, vr * w, atol=1e-10)
    assert_close(vl.conj().T @ a, w[:, None] * vl.conj().T, atol=1e-10)
    assert_close(np.linalg.norm(vl, axis=0), np.ones(4))
    assert len(L.eig(a, compute_left_eigenvectors=False)) == 2
    dl, d, du = np.array([0.0, 1, 2, 3]), np.array([4.0, 5, 6, 7]), np.array([1.0, 1, 2, 0])
    b = RNG.standard_normal((4, 2))
    dense = np.diag(d) + np.diag(du[:-1], 1) + np.diag(dl[1:], -1)
    assert_close(L.tridiagonal_solve(dl, d, du, b), np.linalg.solve(dense, b))


@pytest.mark.parametrize("shape,k", [((5, 3), 3), ((5, 3), 2), ((4, 4), 4), ((2, 5, 3), 3), ((3, 3), 0)])
def test_householder_product_multiplies_the_reflectors(shape, k):
    """LAPACK's orgqr (torch.linalg.householder_product): the first n columns of H_0 ... H_{k-1},
    H_i = I - tau_i v_i v_i^H, v_i 1 at row i and a's column i below; formed here as explicit
    m x m matrices in NumPy."""
    rng = np.random.default_rng(4)
    a, taus = rng.standard_normal(shape), rng.standard_normal(shape[:-2] + (k,))
    m, n = shape[-2:]

    def reference(a, taus):
        q = np.eye(m)
        for i in range(k):
            v = np.r_[np.zeros(i), 1.0, a[i + 1:, i]]
            q = q @ (np.eye(m) - taus[i] * np.outer(v, v))
        return q[:, :n]
    mats = a.reshape(-1, m, n)
    expected = np.stack([reference(x, t) for x, t in zip(mats, taus.reshape(len(mats), k))]).reshape(shape)
    assert_close(L.householder_product(a, taus), expected, atol=1e-12)
    if k:
        check_grads(lambda x, t: L.householder_product(x, t), (a, taus), order=1)
    with pytest.raises(ShapeError, match="householder_product needs"):
        L.householder_product(np.ones((2, 3)), np.ones(1))


def test_schur_symmetric_product_and_cholesky_update():
    a = RNG.standard_normal((4, 4))
    t, vs = (np.asarray(m) for m in L.schur(a))
    assert_close(vs @ t @ vs.T, a, atol=1e-13)
    assert len(L.schur(a, compute_schur_vectors=False)) == 1
    with pytest.raises(ValueError, match="sorting the eigenvalues"):
        L.schur(a, sort_eig_vals=True)
    b, c = RNG.standard_normal((3, 4, 2)), RNG.standard_normal((3, 4, 4))
    product = 2 * b @ np.swapaxes(b, -1, -2) + 0.5 * c
    assert_close(L.symmetric_product(b, c, alpha=2.0, beta=0.5), product, rtol=1e-14)
    mirrored = np.tril(product) + np.swapaxes(np.tril(product, -1), -1, -2)  # syrk's: the lower triangle
    assert_close(L.symmetric_product(b, c, alpha=2.0, beta=0.5, symmetrize_output=True), mirrored, rtol=1e-14)
    r, w = np.linalg.cholesky(a @ a.T + np.eye(4)).T, RNG.standard_normal(4)
    updated = np.asarray(L.cholesky_update(r, w))
    assert_close(updated, np.linalg.cholesky(r.T @ r + np.outer(w, w)).T, rtol=1e-12)  # the positive-diagonal factor
    check_grads(lambda v: L.cholesky_update(r, v), (w,), order=1)
    with pytest.raises(ShapeError, match=r"a square matrix and a vector of its size, got shapes \(4, 4\) and \(3,\)"):
        L.cholesky_update(r, w[:3])
