"""schur, rsf2csf, sqrtm and funm against what defines them: Z T Z^H = A with Z unitary and T
(quasi-)triangular in LAPACK's standard form, T's eigenvalues NumPy's, square roots that square back
and equal the eigendecomposition's for symmetric matrices, a Jordan block's closed form, funm
against expm and eigendecompositions; on random, triangular, rotation, repeated-eigenvalue and
defective matrices, batches, jit and vmap."""
import numpy as np
import pytest

import funcgrad as fg
import funcgrad.numpy as fnp
from funcgrad.scipy import linalg as L

from .helpers import assert_close

RNG = np.random.default_rng(0)


def _matrices():
    yield RNG.standard_normal((6, 6))
    yield np.triu(RNG.standard_normal((5, 5)))  # already triangular
    yield np.kron(np.eye(3), np.array([[0.0, 1.0], [-1.0, 0.0]]))  # three pairs +-i: 2x2 blocks only
    q, _ = np.linalg.qr(RNG.standard_normal((6, 6)))
    yield q @ np.diag([2.0, 2.0, -1.0, -1.0, 0.0, 3.0]) @ q.T  # repeated eigenvalues
    yield q @ np.array([[2.0, 1, 0, 0, 0, 0], [0, 2, 1, 0, 0, 0], [0, 0, 2, 0, 0, 0], [0, 0, 0, 1, 1, 0],
                        [0, 0, 0, 0, 1, 0], [0, 0, 0, 0, 0, -3]]) @ q.T  # defective: Jordan blocks
    yield RNG.standard_normal((5, 5)) * 1e300  # scaled to entries near 1 inside: no overflow in the shifts
    yield RNG.standard_normal((5, 5)) * 1e-300
    yield np.zeros((3, 3))
    yield RNG.standard_normal((1, 1))


def _check_schur(a, t, z, triangular: bool):
    n = a.shape[-1]
    assert_close(z @ t @ np.conj(np.swapaxes(z, -1, -2)), a, atol=1e-12 * max(1.0, np.abs(a).max()))
    assert_close(np.conj(np.swapaxes(z, -1, -2)) @ z, np.eye(n), atol=1e-13)
    assert np.all(np.tril(t, -1 if triangular else -2) == 0)
    if not triangular:  # 2x2 blocks: never two in a row, equal diagonal and a complex pair
        below = np.flatnonzero(np.diagonal(t, -1))
        assert not np.any(np.diff(below) == 1)
        for i in below:
            assert t[i, i] == t[i + 1, i + 1]
            assert np.sign(t[i, i + 1]) == -np.sign(t[i + 1, i])  # a complex pair (a product could underflow)
    ours, numpys = np.linalg.eigvals(t), np.linalg.eigvals(a)  # the same values (a Jordan block's to ~eps^(1/3))
    tolerance = 1e-4 * (np.abs(a).max() or 1.0)
    assert np.abs(ours[:, None] - numpys[None, :]).min(axis=1).max() < tolerance
    assert np.abs(ours[:, None] - numpys[None, :]).min(axis=0).max() < tolerance


def test_schur_of_real_and_complex_matrices_in_both_forms():
    for a in _matrices():
        t, z = (np.asarray(m) for m in L.schur(a))
        assert t.dtype == np.float64
        _check_schur(a, t, z, triangular=False)
        t, z = (np.asarray(m) for m in L.schur(a, output="complex"))
        assert t.dtype == np.complex128
        _check_schur(a, t, z, triangular=True)
        tc, zc = (np.asarray(m) for m in L.rsf2csf(*L.schur(a)))
        _check_schur(a, tc, zc, triangular=True)
    c = RNG.standard_normal((5, 5)) + 1j * RNG.standard_normal((5, 5))
    t, z = (np.asarray(m) for m in L.schur(c))  # a complex matrix has the complex form
    _check_schur(c, t, z, triangular=True)
    single = RNG.standard_normal((4, 4)).astype(np.float32)
    assert [m.dtype for m in L.schur(single)] == [fnp.float32, fnp.float32]
    assert [m.dtype for m in L.schur(single, output="complex")] == [fnp.complex64, fnp.complex64]


def test_schur_batches_jit_vmap_and_errors():
    a = RNG.standard_normal((3, 4, 4))
    t, z = (np.asarray(m) for m in L.schur(a))
    for i in range(3):
        _check_schur(a[i], t[i], z[i], triangular=False)
    jitted = fg.jit(lambda m: L.schur(m, output="complex"))(a)
    eager = L.schur(a, output="complex")
    assert_close(jitted[0], eager[0], rtol=0, atol=0)
    assert_close(fg.vmap(L.sqrtm)(a @ np.swapaxes(a, -1, -2)), np.stack([np.asarray(L.sqrtm(m @ m.T)) for m in a]),
                 rtol=1e-13)
    assert L.schur(np.zeros((2, 0, 0)))[0].shape == (2, 0, 0)
    with pytest.raises(ValueError, match=r"schur: a must be square matrices \(..., n, n\), got shape \(2, 3\)"):
        L.schur(np.ones((2, 3)))
    with pytest.raises(ValueError, match="output must be 'real' or 'complex', got 'upper'"):
        L.schur(a, output="upper")
    with pytest.raises(ValueError, match="schur: the matrix holds an infinity or a NaN"):
        L.schur(np.array([[np.nan, 1.0], [0.0, 1.0]]))
    with pytest.raises(ValueError, match="callbacks have no derivative"):
        fg.grad(lambda m: fnp.sum(fnp.real(L.sqrtm(m))))(a[0] @ a[0].T)


def test_sqrtm_squares_back_and_is_the_principal_root():
    for a in _matrices():
        x = np.asarray(L.sqrtm(a))
        assert x.dtype == np.complex128
        if np.abs(np.linalg.eigvals(a)).min() > 1e-8:  # singular ones may have no root
            assert_close(x @ x, a, atol=1e-11 * max(1.0, np.abs(a).max()))
    b = RNG.standard_normal((5, 5))
    spd = b @ b.T + np.eye(5)
    w, v = np.linalg.eigh(spd)
    assert_close(L.sqrtm(spd), v @ np.diag(np.sqrt(w)) @ v.T, rtol=1e-12, atol=1e-12)
    assert_close(L.sqrtm(np.array([[4.0, 1.0], [0.0, 4.0]])), [[2.0, 0.25], [0.0, 2.0]], rtol=1e-14)  # Jordan
    assert_close(L.sqrtm(np.diag([-4.0, 9.0])), np.diag([2j, 3.0]), rtol=1e-14)  # principal: +2i
    assert_close(L.sqrtm(np.diag([4.0, 0.0, 0.0])), np.diag([2.0, 0.0, 0.0]), atol=0)  # 0 / 0 is 0
    assert L.sqrtm(spd.astype(np.float32)).dtype == fnp.complex64


def test_funm_against_expm_and_eigendecompositions():
    b = RNG.standard_normal((5, 5))
    assert_close(L.funm(b, fnp.exp), L.expm(b), rtol=1e-12, atol=1e-13)
    w, v = np.linalg.eig(b)
    assert_close(L.funm(b, fnp.sin), v @ np.diag(np.sin(w)) @ np.linalg.inv(v), rtol=1e-11, atol=1e-12)
    f, error = L.funm(b, lambda x: x * x, disp=False)
    assert_close(f, b @ b, rtol=1e-12, atol=1e-12)
    assert 0 < float(error) < 1e-10
    # a repeated eigenvalue: the recurrence cannot divide by the gap, and the estimate says so (SciPy's 1)
    jordan = np.array([[2.0, 1.0, 0.5], [0.0, 2.0, 1.0], [0.0, 0.0, 3.0]])
    assert float(L.funm(jordan, fnp.exp, disp=False)[1]) == 1.0
    with pytest.raises(ValueError, match="func must map the 5 eigenvalues to as many values"):
        L.funm(b, fnp.sum)
