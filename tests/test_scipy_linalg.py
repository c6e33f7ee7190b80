"""funcgrad.scipy.linalg and the triangular_solve primitive against NumPy (solves of the triangle
that is read, Cholesky, eigendecompositions), closed forms of the matrix exponential (a symmetric
matrix's through its eigenvectors, a nilpotent one's finite series, a rotation), and
finite-difference derivatives (fg.check_grads, second order, both modes)."""
import math

import numpy as np
import pytest

import funcgrad as fg
import funcgrad.numpy as fnp
from funcgrad.ops.decompositions import triangular_solve_p
from funcgrad.scipy import linalg as L

from .helpers import assert_close, numeric_grad

RNG = np.random.default_rng(0)
N = 6
A = RNG.normal(size=(N, N)) * 0.4 + 2 * np.eye(N)
B = RNG.normal(size=(N, 3))


def _triangle(a, lower, unit):
    """The matrix a triangular solve sees: one triangle, its diagonal ones when unit."""
    t = np.tril(a) if lower else np.triu(a)
    eye = np.eye(a.shape[-1])
    return t * (1 - eye) + eye if unit else t


@pytest.mark.parametrize("lower", [True, False])
@pytest.mark.parametrize("unit", [True, False])
def test_triangular_solve_reads_only_its_triangle(lower, unit):
    batch = np.stack([A, A.T + np.eye(N)])
    got = triangular_solve_p(batch, B, lower=lower, unit_diagonal=unit)
    assert_close(got, np.linalg.solve(_triangle(batch, lower, unit), B), rtol=1e-12, atol=1e-12)
    big = RNG.normal(size=(150, 150)) * 0.05 + np.eye(150)  # past one 64-row block
    rhs = RNG.normal(size=(150, 5))
    assert_close(triangular_solve_p(big, rhs, lower=lower, unit_diagonal=unit),
                 np.linalg.solve(_triangle(big, lower, unit), rhs), rtol=1e-10, atol=1e-10)
    fg.check_grads(lambda a, b: triangular_solve_p(a, b, lower=lower, unit_diagonal=unit), (A, B), order=2,
                   modes=("fwd", "rev"))


@pytest.mark.skipif(not fg.cuda.is_available(), reason="no CUDA device or simulator")
def test_triangular_solve_on_the_device_equals_the_cpu():
    batch = np.stack([A, A.T])[:, :4, :4]
    for lower in (True, False):
        cpu = triangular_solve_p(batch, B[:4], lower=lower, unit_diagonal=False)
        gpu = triangular_solve_p(fg.device_put(fg.asarray(batch), "cuda"), fg.device_put(fg.asarray(B[:4]), "cuda"),
                                 lower=lower, unit_diagonal=False)
        assert gpu.device == "cuda:0"
        assert_close(gpu.numpy(), cpu.numpy(), rtol=1e-13)


def test_solve_triangular_cholesky_and_solve():
    for trans, op in ((0, lambda m: m), ("T", lambda m: m.T), (2, lambda m: m.conj().T)):
        for lower in (True, False):
            want = np.linalg.solve(op(np.tril(A) if lower else np.triu(A)), B)
            assert_close(L.solve_triangular(A, B, trans=trans, lower=lower), want, rtol=1e-12)
    assert L.solve_triangular(A, B[:, 0], lower=True).shape == (N,)
    complex_a = A + 1j * RNG.normal(size=(N, N))
    np.testing.assert_allclose(np.asarray(L.solve_triangular(complex_a, B, trans="C")),
                               np.linalg.solve(np.triu(complex_a).conj().T, B), rtol=1e-12)  # complex: both parts
    spd = A @ A.T + np.eye(N)
    upper = L.cholesky(spd)
    assert_close(np.asarray(upper).T @ np.asarray(upper), spd, rtol=1e-12)
    assert_close(L.cholesky(spd, lower=True), np.linalg.cholesky(spd), rtol=1e-12)
    for lower in (True, False):
        assert_close(L.cho_solve(L.cho_factor(spd, lower=lower), B), np.linalg.solve(spd, B), rtol=1e-11)
        half = np.tril(spd) if lower else np.triu(spd)  # assume_a='pos' reads one triangle
        assert_close(L.solve(half, B, assume_a="pos", lower=lower), np.linalg.solve(spd, B), rtol=1e-11)
    assert_close(L.solve(A, B), np.linalg.solve(A, B), rtol=1e-12)
    with pytest.raises(ValueError, match="b of shape \\(5,\\) does not match a of shape \\(6, 6\\)"):
        L.solve_triangular(A, np.ones(5))
    with pytest.raises(ValueError, match="trans must be"):
        L.solve_triangular(A, B, trans="X")


def test_generalized_eigh_and_the_small_helpers():
    a = A @ A.T
    b = B @ B.T + np.eye(N)
    w, v = L.eigh(np.tril(a), b)
    v = np.asarray(v)
    assert_close(a @ v, b @ v * np.asarray(w), rtol=1e-9, atol=1e-9)  # a v = w b v
    assert_close(v.T @ b @ v, np.eye(N), atol=1e-10)  # b-orthonormal
    assert_close(L.eigh(np.triu(a), lower=False, eigvals_only=True), np.linalg.eigvalsh(a), rtol=1e-12)
    assert_close(L.block_diag(np.ones((2, 2)), np.array([1.0, 2.0]), 5.0),
                 [[1, 1, 0, 0, 0], [1, 1, 0, 0, 0], [0, 0, 1, 2, 0], [0, 0, 0, 0, 5]])
    assert_close(L.toeplitz(np.array([1.0, 2.0, 3.0]), np.array([9.0, 5.0])), [[1, 5], [2, 1], [3, 2]])
    assert_close(L.hilbert(3), [[1, 1 / 2, 1 / 3], [1 / 2, 1 / 3, 1 / 4], [1 / 3, 1 / 4, 1 / 5]])
    for side in ("right", "left"):
        u, p = (np.asarray(x) for x in L.polar(A, side))
        assert_close(u @ u.T, np.eye(N), atol=1e-12)
        assert_close(u @ p if side == "right" else p @ u, A, rtol=1e-12, atol=1e-12)
        assert (np.linalg.eigvalsh(p) > -1e-12).all()


def test_expm_against_closed_forms():
    sym = A + A.T
    for scale in (1e-3, 0.3, 4.0, 40.0):
        w, v = np.linalg.eigh(sym * scale)
        assert_close(L.expm(sym * scale), (v * np.exp(w)) @ v.T, rtol=1e-11)
    nil = np.triu(RNG.normal(size=(N, N)), 1)  # nilpotent: the series stops at nil^(N-1)
    want = sum(np.linalg.matrix_power(nil, k) / math.factorial(k) for k in range(N))
    assert_close(L.expm(nil), want, rtol=1e-13, atol=1e-13)
    t = 50.0  # a rotation generator: exp = [[cos t, -sin t], [sin t, cos t]], with squarings
    assert_close(L.expm(np.array([[0.0, -t], [t, 0.0]])), [[math.cos(t), -math.sin(t)], [math.sin(t), math.cos(t)]],
                 atol=1e-11)
    assert_close(fg.jit(L.expm)(sym), L.expm(sym), rtol=1e-12)  # masked squarings under jit
    assert np.isnan(np.asarray(L.expm(sym * 1e6, max_squarings=4))).all()
    direction = np.eye(N)[::-1]
    big, frechet = L.expm_frechet(A * 0.3, direction)
    h = 1e-6
    fd = (np.asarray(L.expm(A * 0.3 + h * direction)) - np.asarray(L.expm(A * 0.3 - h * direction))) / (2 * h)
    assert_close(frechet, fd, rtol=1e-7, atol=1e-8)
    assert_close(big, L.expm(A * 0.3), rtol=1e-13)
    fg.check_grads(L.expm, (A * 0.3,), order=1, modes=("rev",))


def test_lu_factors_and_solves():
    from funcgrad.ops.decompositions import lu_p
    for n in (1, 5, 70, 140):  # one, two and three 64-column panels
        a = RNG.normal(size=(2, n, n))
        p, lower, upper = (np.asarray(x) for x in L.lu(a))
        assert_close(p @ lower @ upper, a, rtol=1e-11, atol=1e-11)
        assert_close(np.triu(lower, 1), np.zeros_like(lower))
        assert_close(np.tril(upper, -1), np.zeros_like(upper))
        assert (np.abs(np.tril(lower, -1)) <= 1 + 1e-12).all()  # partial pivoting: multipliers at most 1
    a, b = RNG.normal(size=(N, N)), RNG.normal(size=(N, 2))
    factors, piv = L.lu_factor(a)
    assert piv.dtype == np.int32 and (np.asarray(piv) >= np.arange(N)).all()  # LAPACK's convention
    perm = np.arange(N)
    for j, k in enumerate(np.asarray(piv)):  # replaying the swaps gives lu's row order
        perm[[j, k]] = perm[[k, j]]
    f = np.asarray(factors)
    assert_close(a[perm], (np.tril(f, -1) + np.eye(N)) @ np.triu(f), rtol=1e-12, atol=1e-12)
    rows, _, _ = L.lu(a, p_indices=True)
    assert np.array_equal(np.asarray(rows), np.argsort(perm))
    for trans, op in ((0, lambda m: m), (1, lambda m: m.T), ("C", lambda m: m.conj().T)):
        assert_close(L.lu_solve((factors, piv), b, trans), np.linalg.solve(op(a), b), rtol=1e-11)
    assert_close(L.lu_solve((factors, piv), b[:, 0]), np.linalg.solve(a, b[:, 0]), rtol=1e-11)
    traced = fg.jit(lambda m, r: L.lu_solve(L.lu_factor(m), r))(a, b)  # the pivots are traced here
    assert_close(traced, np.linalg.solve(a, b), rtol=1e-11)
    fg.check_grads(lambda m: lu_p(m)[..., :N, :], (a,), order=2, modes=("fwd", "rev"))
    assert_close(fg.grad(lambda m: L.lu_solve(L.lu_factor(m), b).sum())(a),
                 fg.grad(lambda m: fg.numpy.linalg.solve(m, b).sum())(a), rtol=1e-10)


@pytest.mark.skipif(not fg.cuda.is_available(), reason="no CUDA device or simulator")
def test_lu_on_the_device_equals_the_cpu():
    from funcgrad.ops.decompositions import lu_p
    a = RNG.normal(size=(3, 5, 5))
    gpu = lu_p(fg.device_put(fg.asarray(a), "cuda"))
    assert gpu.device == "cuda:0"
    assert_close(gpu.numpy(), lu_p(a), rtol=1e-13, atol=1e-14)


def test_special_matrices():
    c = RNG.normal(size=5)
    assert_close(L.circulant(c), [[c[(i - j) % 5] for j in range(5)] for i in range(5)])
    poly = np.array([2.0, -3.0, 1.0, 5.0])
    assert_close(np.sort_complex(np.linalg.eigvals(np.asarray(L.companion(poly)))), np.sort_complex(np.roots(poly)),
                 rtol=1e-10)
    assert_close(np.sort_complex(np.linalg.eigvals(np.asarray(L.fiedler_companion(poly)))),
                 np.sort_complex(np.roots(poly)), rtol=1e-10)
    v = RNG.normal(size=6)
    for mode in ("full", "same", "valid"):
        assert_close(np.asarray(L.convolution_matrix(c[:3], 6, mode)) @ v, np.convolve(c[:3], v, mode), rtol=1e-12)
    w = np.asarray(L.dft(8, "sqrtn"))
    padded = np.pad(v, (0, 2))
    np.testing.assert_allclose(w @ padded, np.fft.fft(padded) / np.sqrt(8), rtol=1e-5, atol=1e-6)  # complex64
    h = np.asarray(L.hadamard(8))
    assert (h @ h.T == 8 * np.eye(8)).all()
    assert_close(L.hankel(c[:3], c[2:]), [[c[0], c[1], c[2]], [c[1], c[2], c[3]], [c[2], c[3], c[4]]])
    helm = np.asarray(L.helmert(5, full=True))
    assert_close(helm @ helm.T, np.eye(5), atol=1e-14)
    assert_close(np.asarray(L.invhilbert(5)) @ np.asarray(L.hilbert(5)), np.eye(5), atol=1e-8)
    for kind in ("lower", "upper", "symmetric"):
        assert (np.asarray(L.invpascal(6, kind)) @ np.asarray(L.pascal(6, kind)) == np.eye(6)).all()
    assert_close(L.fiedler(c), np.abs(c[:, None] - c[None, :]))
    les = np.asarray(L.leslie(c, c[1:]))
    assert_close(les[0], c)
    assert_close(np.diag(les, -1), c[1:])


def test_hessenberg_sylvester_tridiagonal_eigh_and_qr_multiply():
    rng = np.random.default_rng(12)
    for a in (rng.standard_normal((5, 5)), rng.standard_normal((6, 6)) + 1j * rng.standard_normal((6, 6))):
        h, q = (np.asarray(t) for t in L.hessenberg(a, calc_q=True))
        np.testing.assert_allclose(q @ h @ q.conj().T, a, atol=1e-12)
        np.testing.assert_allclose(q.conj().T @ q, np.eye(len(a)), atol=1e-12)
        assert not np.tril(h, -2).any() and np.all(np.diag(h, -1).imag == 0)  # LAPACK's real subdiagonal
    a, b, c = rng.standard_normal((3, 3)), rng.standard_normal((4, 4)), rng.standard_normal((3, 4))
    x = np.asarray(L.solve_sylvester(a, b, c))
    np.testing.assert_allclose(a @ x + x @ b, c, atol=1e-12)
    loss = lambda m: fnp.sum(L.solve_sylvester(m, b, c) ** 2)  # noqa: E731
    np.testing.assert_allclose(fg.grad(loss)(a), numeric_grad(loss, a), rtol=1e-6, atol=1e-8)
    d, e = np.array([1.0, 2, 3, 4]), np.array([0.5, -0.3, 0.2])
    dense = np.diag(d) + np.diag(e, 1) + np.diag(e, -1)
    w, v = (np.asarray(t) for t in L.eigh_tridiagonal(d, e))
    np.testing.assert_allclose(w, np.linalg.eigvalsh(dense), atol=1e-12)
    np.testing.assert_allclose(dense @ v, v * w, atol=1e-12)
    np.testing.assert_allclose(L.eigh_tridiagonal(d, e, eigvals_only=True, select="i", select_range=(1, 2)),
                               np.linalg.eigvalsh(dense)[1:3], atol=1e-12)
    tall = rng.standard_normal((5, 3))
    q, r = np.linalg.qr(tall)
    right = rng.standard_normal((2, 5))
    product, r_got = L.qr_multiply(tall, right)
    np.testing.assert_allclose(product, right @ q, atol=1e-12)
    np.testing.assert_allclose(r_got, r, atol=1e-12)
    np.testing.assert_allclose(L.qr_multiply(tall, right[0, :3], mode="left")[0], q @ right[0, :3], atol=1e-12)
