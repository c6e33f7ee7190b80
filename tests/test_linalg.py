"""fnp.linalg against NumPy, its gradients against finite differences, under jit and vmap, on the
CUDA kernels (in the simulator), and its errors."""
import numpy as np
import pytest

import funcgrad as fg
import funcgrad.numpy as fnp

from .helpers import assert_close

RNG = np.random.default_rng(0)
A = RNG.standard_normal((2, 4, 4))
SPD = A @ np.swapaxes(A, -1, -2) + 4 * np.eye(4)
B = RNG.standard_normal((2, 4, 3))
VEC = RNG.standard_normal((2, 4))


@pytest.mark.parametrize("dtype", [np.float64, np.float32])
def test_values_match_numpy(dtype):
    a, spd, b, vec = (x.astype(dtype) for x in (A, SPD, B, VEC))
    tol = 1e-10 if dtype == np.float64 else 2e-4
    assert_close(fnp.linalg.solve(a, b), np.linalg.solve(a, b), rtol=tol, atol=tol)
    assert_close(fnp.linalg.solve(a, vec), np.linalg.solve(a, vec[..., None])[..., 0], rtol=tol, atol=tol)
    assert_close(fnp.linalg.solve(a[0], vec[0]), np.linalg.solve(a[0], vec[0]), rtol=tol, atol=tol)
    assert_close(fnp.linalg.inv(a), np.linalg.inv(a), rtol=tol, atol=tol)
    assert_close(fnp.linalg.det(a), np.linalg.det(a), rtol=tol, atol=tol)
    sign, logdet = fnp.linalg.slogdet(a)
    assert_close(sign, np.linalg.slogdet(a)[0])
    assert_close(logdet, np.linalg.slogdet(a)[1], rtol=tol, atol=tol)
    assert_close(fnp.linalg.cholesky(spd), np.linalg.cholesky(spd), rtol=tol, atol=tol)
    assert_close(fnp.linalg.cholesky(spd, upper=True), np.swapaxes(np.linalg.cholesky(spd), -1, -2), rtol=tol, atol=tol)
    w, v = fnp.linalg.eigh(spd)
    assert w.dtype == dtype and v.dtype == dtype
    assert_close(w, np.linalg.eigvalsh(spd), rtol=tol, atol=tol)
    assert_close(np.asarray(v) @ (np.asarray(w)[..., None] * np.swapaxes(np.asarray(v), -1, -2)), spd, rtol=tol * 10,
                 atol=tol * 10)
    assert_close(fnp.linalg.eigvalsh(spd, UPLO="U"), np.linalg.eigvalsh(spd, UPLO="U"), rtol=tol, atol=tol)
    assert_close(fnp.linalg.matrix_power(a, 3), np.linalg.matrix_power(a, 3), rtol=tol, atol=tol)
    assert_close(fnp.linalg.matrix_power(a, -2), np.linalg.matrix_power(a, -2), rtol=tol * 10, atol=tol * 10)
    assert_close(fnp.linalg.cond(a), np.linalg.cond(a), rtol=tol * 10)
    assert_close(fnp.linalg.multi_dot([a[0], a[1], b[0]]), np.linalg.multi_dot([a[0], a[1], b[0]]), rtol=tol, atol=tol)


def test_solve_from_the_right_as_torch_left_false():
    """x @ a = b (torch.linalg.solve(..., left=False)), batched and broadcast, with its gradient;
    a batch of row vectors solves x @ a = b for each."""
    bt = np.swapaxes(B, -1, -2)  # (2, 3, 4): rows of length 4
    for a, b in ((A, bt), (A[0], bt[0]), (A, bt[0]), (A[0], bt)):
        assert_close(fnp.linalg.solve(a, b, left=False), np.swapaxes(np.linalg.solve(np.swapaxes(a, -1, -2),
                                                                                     np.swapaxes(b, -1, -2)), -1, -2),
                     rtol=1e-10, atol=1e-10)
    x = np.asarray(fnp.linalg.solve(A, VEC, left=False))
    assert_close(np.einsum("...i,...ij->...j", x, A), VEC, rtol=1e-10, atol=1e-10)
    fg.check_grads(lambda a, b: fnp.linalg.solve(a, b, left=False), (A, bt), order=1)
    with pytest.raises(fg.ShapeError, match=r"left=False: x @ a = b"):
        fnp.linalg.solve(A, B, left=False)


@pytest.mark.parametrize("ord_", [None, "fro", "nuc", 1, -1, 2, -2, np.inf, -np.inf])
def test_matrix_norms_match_numpy(ord_):
    assert_close(fnp.linalg.norm(A[0], ord_), np.linalg.norm(A[0], ord_), rtol=1e-10)
    assert_close(fnp.linalg.norm(A, ord_ or "fro", axis=(2, 1), keepdims=True),
                 np.linalg.norm(A, ord_ or "fro", axis=(2, 1), keepdims=True), rtol=1e-10)


@pytest.mark.parametrize("ord_", [None, 0, 1, 2, 3, 0.5, np.inf, -np.inf])
def test_vector_norms_match_numpy(ord_):
    assert_close(fnp.linalg.norm(VEC[0], ord_), np.linalg.norm(VEC[0], ord_), rtol=1e-12)
    assert_close(fnp.linalg.norm(VEC, ord_, axis=1, keepdims=True), np.linalg.norm(VEC, ord_, axis=1, keepdims=True),
                 rtol=1e-12)
    assert_close(fnp.linalg.norm(A, keepdims=True), np.linalg.norm(A, keepdims=True), rtol=1e-12)


@pytest.mark.parametrize("dtype", [fg.float16, fg.bfloat16])
def test_low_precision_norms_are_computed_in_float32(dtype):
    """The squares of a float16 vector of norm 474 sum past 65504: PyTorch computes such norms in
    float32 and rounds once, and so must normalize and cosine_similarity, which gave 0 here."""
    x = np.full(100000, 1.5, dtype)
    want = np.asarray(np.linalg.norm(x.astype(np.float64)), np.float32).astype(dtype)
    for got in (fnp.linalg.norm(x), fnp.linalg.vector_norm(x, 2), fnp.linalg.norm(x.reshape(250, 400))):
        assert got.dtype == dtype and float(got) == float(want)
    assert float(fnp.linalg.vector_norm(x, 3)) == float(np.asarray(1.5 * 100000 ** (1 / 3), np.float32).astype(dtype))
    assert_close(fg.nn.functional.cosine_similarity(x[None], x[None]), [1.0], rtol=1e-2)


def test_norm_gradient_at_zero_is_zero_as_in_pytorch():
    assert_close(fg.grad(fnp.linalg.norm)(np.zeros(3)), np.zeros(3))
    assert_close(fg.grad(fnp.linalg.norm)(np.array([3.0, 4.0])), [0.6, 0.8])


GRAD_CASES = {
    "solve": lambda a, b: fnp.sum(fnp.linalg.solve(a, b) ** 2),
    "inv_det": lambda a, b: fnp.sum(fnp.linalg.inv(a) * b[..., :1]) + fnp.sum(fnp.linalg.det(a)),
    "slogdet": lambda a, b: fnp.sum(fnp.linalg.slogdet(a)[1]),
    "cholesky": lambda a, b: fnp.sum(fnp.linalg.cholesky(a @ fnp.swapaxes(a, -1, -2) + 4 * fnp.eye(4)) * b[..., :1]),
    "eigh_values": lambda a, b: fnp.sum(fnp.linalg.eigvalsh(a) * fnp.arange(4.0)),
    "eigh_vectors": lambda a, b: fnp.sum(fnp.abs(fnp.linalg.eigh(a)[1][..., 0]) * b[..., 0]),
    "norms": lambda a, b: fnp.sum(fnp.linalg.norm(a, "nuc", axis=(1, 2)) + fnp.linalg.norm(a, 2, axis=(1, 2))),
}


@pytest.mark.parametrize("name", GRAD_CASES)
def test_gradients_match_finite_differences(name):
    fg.check_grads(GRAD_CASES[name], (A, B), order=1 if name in ("eigh_vectors", "norms") else 2)


def test_forward_mode_and_transforms():
    tangent = RNG.standard_normal(A.shape)
    _, t = fg.jvp(lambda a: fnp.linalg.slogdet(a)[1], (A,), (tangent,))
    expected = np.trace(np.linalg.solve(A, tangent), axis1=-2, axis2=-1)
    assert_close(t, expected, rtol=1e-10)
    batched = fg.jit(fg.vmap(lambda a, b: fnp.linalg.solve(a, b) + fnp.linalg.cholesky(SPD[0])[:, :1]))(A, B)
    assert_close(batched, np.linalg.solve(A, B) + np.linalg.cholesky(SPD[0])[:, :1], rtol=1e-10)
    per_matrix = fg.vmap(fg.grad(lambda a: fnp.linalg.det(a)))(A)
    assert_close(per_matrix, np.linalg.det(A)[:, None, None] * np.swapaxes(np.linalg.inv(A), -1, -2), rtol=1e-9)
    assert_close(fg.jit(lambda s: fnp.linalg.eigh(s)[0])(SPD), np.linalg.eigvalsh(SPD), rtol=1e-10)


def _cofactors(a):
    """The cofactor matrix C[i, j] = (-1)^(i+j) det(a without row i and column j): det's gradient."""
    n = a.shape[-1]
    minor = lambda i, j: np.linalg.det(np.delete(np.delete(a, i, 0), j, 1)) if n > 1 else 1.0  # noqa: E731
    return np.array([[(-1) ** (i + j) * minor(i, j) for j in range(n)] for i in range(n)])


@pytest.mark.parametrize("a", [np.array([[1.0, 2.0], [2.0, 4.0]]), np.arange(9.0).reshape(3, 3) + 1,
                               np.ones((3, 3)), np.zeros((3, 3)), np.array([[0.0, 1.0], [0.0, 0.0]])],
                         ids=["rank1_2x2", "rank2_3x3", "rank1_3x3", "zero_3x3", "nilpotent"])
def test_det_gradient_at_singular_matrices_is_the_cofactor_matrix(a):
    """det is a polynomial: its gradient at a singular matrix is the cofactor matrix (PyTorch's and
    JAX's), not a LinAlgError from the inverse that the invertible case's formula needs."""
    assert_close(fg.grad(fnp.linalg.det)(a), _cofactors(a), atol=1e-12)
    tangent = RNG.standard_normal(a.shape)
    _, t = fg.jvp(fnp.linalg.det, (a,), (tangent,))
    assert_close(t, np.sum(_cofactors(a) * tangent), atol=1e-12)


def test_det_gradient_of_a_batch_with_a_singular_matrix_under_jit_and_vmap():
    batch = np.stack([A[0], np.arange(16.0).reshape(4, 4), A[1]])
    expected = np.stack([_cofactors(m) for m in batch])
    assert_close(fg.jit(fg.grad(lambda a: fnp.sum(fnp.linalg.det(a))))(batch), expected, rtol=1e-9, atol=1e-9)
    assert_close(fg.vmap(fg.grad(fnp.linalg.det))(batch), expected, rtol=1e-9, atol=1e-9)


def test_det_second_derivatives_stay_finite_at_the_identity_and_a_singular_matrix():
    """Neither branch of det's rule leaks NaN into the one above it: d2 det / da_ij da_kl at the
    identity is [i=j][k=l] - [i=l][j=k]; at a rank n-1 matrix, finite differences of the cofactors."""
    eye = np.eye(3)
    assert_close(fg.hessian(fnp.linalg.det)(eye),
                 np.einsum("ij,kl->ijkl", eye, eye) - np.einsum("il,jk->ijkl", eye, eye), atol=1e-12)
    singular = np.array([[1.0, 2.0, 0.5], [2.0, 4.0, 1.0], [0.3, -1.0, 2.0]])
    h = 1e-6
    numeric = np.stack([(_cofactors(singular + h * e) - _cofactors(singular - h * e)) / (2 * h)
                        for e in np.eye(9).reshape(9, 3, 3)], axis=-1).reshape(3, 3, 3, 3)
    assert_close(fg.jit(fg.hessian(fnp.linalg.det))(singular), numeric, atol=1e-6)


def test_integer_and_half_inputs_compute_in_float32():
    ints = np.array([[2, 1], [1, 3]])
    assert fnp.linalg.inv(ints).dtype == np.float32
    assert_close(fnp.linalg.inv(ints), np.linalg.inv(ints), rtol=1e-6)
    half = fnp.asarray(ints, dtype=fnp.bfloat16)
    assert fnp.linalg.det(half).dtype == fnp.bfloat16


def test_errors_name_the_problem():
    with pytest.raises(fg.ShapeError, match=r"square matrices of shape \(\.\.\., n, n\), got shape \(2, 3\)"):
        fnp.linalg.inv(np.ones((2, 3)))
    with pytest.raises(fg.ShapeError, match="does not match"):
        fnp.linalg.solve(A, np.ones((2, 5)))
    with pytest.raises(np.linalg.LinAlgError, match="[Ss]ingular"):
        fnp.linalg.solve(np.ones((3, 3)), np.ones(3))
    with pytest.raises(np.linalg.LinAlgError, match="positive definite"):
        fnp.linalg.cholesky(-np.eye(3))
    with pytest.raises(ValueError, match="invalid norm order 'nuc' for vectors"):
        fnp.linalg.norm(VEC[0], "nuc")


@pytest.mark.skipif(not fg.cuda.is_available(), reason="no CUDA device or simulator")
@pytest.mark.parametrize("dtype", [np.float64, np.complex128])
def test_cuda_kernels_share_each_matrix_among_a_block(dtype):
    """Matrices larger than the simulator's 4 threads per matrix, so every step's work is split among
    them (rows of the elimination, columns of the back substitution and of each rotation)."""
    from funcgrad.cuda.kernels import decompositions
    n = 2 * decompositions.THREADS - 1
    a = RNG.standard_normal((2, n, n)) + (1j * RNG.standard_normal((2, n, n)) if dtype == np.complex128 else 0)
    a = a.astype(dtype)
    hermitian = a @ np.conj(np.swapaxes(a, -1, -2)) + n * np.eye(n)
    b = RNG.standard_normal((2, n, n - 2)).astype(dtype)
    on = lambda x: fg.device_put(fg.asarray(x), "cuda")  # noqa: E731  (assert_allclose: complex parts too)
    np.testing.assert_allclose(fnp.linalg.solve(on(a), on(b)).numpy(), np.linalg.solve(a, b), rtol=1e-9, atol=1e-9)
    sign, logdet = fnp.linalg.slogdet(on(a))
    np.testing.assert_allclose(sign.numpy(), np.linalg.slogdet(a)[0], rtol=1e-9, atol=1e-9)
    np.testing.assert_allclose(logdet.numpy(), np.linalg.slogdet(a)[1], rtol=1e-9)
    np.testing.assert_allclose(fnp.linalg.cholesky(on(hermitian)).numpy(), np.linalg.cholesky(hermitian), rtol=1e-9, atol=1e-9)
    w, v = fnp.linalg.eigh(on(hermitian))
    np.testing.assert_allclose(w.numpy(), np.linalg.eigvalsh(hermitian), rtol=1e-9, atol=1e-9)
    v = v.numpy()
    np.testing.assert_allclose(v @ (w.numpy()[..., None] * np.conj(np.swapaxes(v, -1, -2))), hermitian, atol=1e-8)
    tall = a[:, :, : n - 2]
    u, s, vh = fnp.linalg.svd(on(tall), full_matrices=False)
    np.testing.assert_allclose(s.numpy(), np.linalg.svd(tall, compute_uv=False), rtol=1e-9, atol=1e-9)
    np.testing.assert_allclose((u.numpy() * s.numpy()[..., None, :]) @ vh.numpy(), tall, atol=1e-9)


@pytest.mark.skipif(not fg.cuda.is_available(), reason="no CUDA device or simulator")
@pytest.mark.parametrize("dtype", [np.float32, np.float64])
def test_cuda_kernels_match_the_cpu(dtype):
    """Each decomposition kernel (a thread per matrix) against LAPACK, tiny shapes for the simulator."""
    a, spd, b = A[:, :3, :3].astype(dtype), SPD[:, :3, :3].astype(dtype), B[:, :3, :2].astype(dtype)
    tol = 1e-9 if dtype == np.float64 else 2e-4
    on = lambda x: fg.device_put(fg.asarray(x), "cuda")  # noqa: E731
    x = fnp.linalg.solve(on(a), on(b))
    assert x.device == "cuda:0" and x.dtype == dtype
    assert_close(x.numpy(), np.linalg.solve(a, b), rtol=tol, atol=tol)
    assert_close(fnp.linalg.solve(on(a[0]), on(b)).numpy(), np.linalg.solve(a[0], b), rtol=tol, atol=tol)
    sign, logdet = fnp.linalg.slogdet(on(a))
    assert_close(sign.numpy(), np.linalg.slogdet(a)[0])
    assert_close(logdet.numpy(), np.linalg.slogdet(a)[1], rtol=tol)
    singular = fnp.linalg.slogdet(on(np.ones((3, 3), dtype)))
    assert float(singular.sign.numpy()) == 0 and float(singular.logabsdet.numpy()) == -np.inf
    assert_close(fnp.linalg.cholesky(on(spd)).numpy(), np.linalg.cholesky(spd), rtol=tol, atol=tol)
    assert np.isnan(fnp.linalg.cholesky(on(-np.eye(2, dtype=dtype))).numpy()).any()  # a kernel cannot raise
    w, v = fnp.linalg.eigh(on(spd))
    assert_close(w.numpy(), np.linalg.eigvalsh(spd), rtol=tol, atol=tol)
    v = v.numpy()
    assert_close(v @ (w.numpy()[..., None] * np.swapaxes(v, -1, -2)), spd, rtol=tol * 10, atol=tol * 10)
    assert_close(np.swapaxes(v, -1, -2) @ v, np.broadcast_to(np.eye(3), v.shape), atol=tol * 10)
    grad = fg.grad(lambda m: fnp.sum(fnp.linalg.inv(m)))(on(a))
    assert grad.device == "cuda:0"
    assert_close(grad.numpy(), fg.grad(lambda m: fnp.sum(fnp.linalg.inv(m)))(a), rtol=tol * 10, atol=tol * 10)


@pytest.mark.parametrize("shape", [(4, 3), (3, 5), (2, 4, 4), (1, 3), (3, 1)])
def test_qr_matches_lapack(shape):
    a = RNG.standard_normal(shape)
    for mode in ("reduced", "complete"):
        q, r = fnp.linalg.qr(a, mode)
        expected_q, expected_r = np.linalg.qr(a, mode)
        assert_close(q, expected_q, rtol=1e-10, atol=1e-12)
        assert_close(r, expected_r, rtol=1e-10, atol=1e-12)
    assert_close(fnp.linalg.qr(a, "r"), np.linalg.qr(a, "r"), rtol=1e-10, atol=1e-12)


def test_qr_gradients_transforms_and_orthogonal_samples():
    a = RNG.standard_normal((4, 3))
    weights = RNG.standard_normal((4, 3))
    fg.check_grads(lambda x: fnp.sum(fnp.linalg.qr(x).Q * weights) + fnp.sum(fnp.linalg.qr(x).R ** 2), (a,), order=1)
    assert_close(fg.jit(lambda x: fnp.linalg.qr(x).R)(a), np.linalg.qr(a)[1], rtol=1e-10, atol=1e-12)
    assert_close(fg.vmap(lambda x: fnp.linalg.qr(x).R)(np.stack([a, 2 * a])), np.linalg.qr(np.stack([a, 2 * a]))[1],
                 rtol=1e-10, atol=1e-12)
    q = np.asarray(fg.random.orthogonal(fg.random.key(0), 5, (3,), dtype=fg.float64))
    assert q.shape == (3, 5, 5)
    assert_close(q @ np.swapaxes(q, -1, -2), np.broadcast_to(np.eye(5), (3, 5, 5)), atol=1e-12)
    w = np.asarray(fg.nn.init.orthogonal(fg.random.key(1), (3, 2, 2), gain=2.0)).reshape(3, 4)
    assert_close(w @ w.T, 4 * np.eye(3), atol=1e-5)


def test_eig_of_general_matrices_and_its_derivatives():
    rng = np.random.default_rng(3)
    a = rng.normal(size=(2, 4, 4))
    w, v = fnp.linalg.eig(a)
    w, v = np.asarray(w), np.asarray(v)
    np.testing.assert_allclose(np.einsum("bij,bjk->bik", a, v), v * w[:, None, :], atol=1e-12)  # a v = v diag(w)
    np.testing.assert_allclose(np.linalg.norm(v, axis=-2), 1.0, rtol=1e-12)
    np.testing.assert_allclose(np.sort_complex(np.asarray(fnp.linalg.eigvals(a[0]))),
                               np.sort_complex(np.linalg.eigvals(a[0])), rtol=1e-12)
    h = 1e-6

    def numeric(f, x):
        grad = np.zeros_like(x)
        for index in np.ndindex(*x.shape):
            step = np.zeros_like(x)
            step[index] = h
            grad[index] = (f(x + step) - f(x - step)) / (2 * h)
        return grad
    # functions that do not depend on the eigenvectors' arbitrary phases
    spread = lambda x: fnp.sum(fnp.real(fnp.linalg.eigvals(x)) ** 2)  # noqa: E731
    assert_close(fg.grad(spread)(a[0]), numeric(lambda x: np.sum(np.real(np.linalg.eigvals(x)) ** 2), a[0]), rtol=1e-6,
                 atol=1e-7)
    weights = np.arange(1.0, 5.0)
    shape = lambda x: fnp.sum(fnp.abs(fnp.linalg.eig(x).eigenvectors[0]) ** 2 * weights)  # noqa: E731
    assert_close(fg.grad(shape)(a[0]), numeric(lambda x: np.sum(np.abs(np.linalg.eig(x)[1][0]) ** 2 * weights), a[0]),
                 rtol=1e-5, atol=1e-7)
    with pytest.raises(TypeError, match="eig is not differentiable"):  # the primitive alone: the rule is eig's
        fg.grad(lambda x: fnp.sum(fnp.real(fg.ops.decompositions.eig_p(x))))(a[0])


@pytest.mark.skipif(not fg.cuda.is_available(), reason="no CUDA device or simulator")
def test_eig_refuses_the_gpu_by_name():
    with pytest.raises(TypeError, match="runs on the CPU only"):
        fnp.linalg.eig(fg.device_put(fg.asarray(np.eye(2)), "cuda"))


def test_eigenvalue_gradients_at_repeated_eigenvalues():
    """The eigenvalues' gradient V diag(g) V^T needs no eigengap; with the eigenvectors unused it was
    inf * 0 = NaN wherever two eigenvalues are equal (a multiple of the identity, a covariance)."""
    q, _ = np.linalg.qr(RNG.standard_normal((4, 4)))
    a = q @ np.diag([2.0, 2.0, 2.0, 5.0]) @ q.T
    assert_close(fg.grad(lambda m: fnp.sum(fnp.linalg.eigvalsh(m)))(a), np.eye(4), atol=1e-12)  # d trace = I
    top = q[:, 3:] @ q[:, 3:].T  # the largest eigenvalue's projector (a simple eigenvalue: a gradient)
    assert_close(fg.grad(lambda m: fnp.linalg.eigvalsh(m)[-1])(a), top, atol=1e-12)
    assert_close(fg.grad(lambda m: fnp.sum(fnp.linalg.eigvalsh(m)))(3 * np.eye(3)), np.eye(3), atol=0)
    general = np.diag([2.0, 2.0, -1.0, 4.0]) + np.triu(RNG.standard_normal((4, 4)), 1)  # exactly repeated, and
    general[0, 1] = 0.0  # diagonalisable: eigvals' dw = diag(V^-1 da V) needs no gap
    assert_close(fg.grad(lambda m: fnp.sum(fnp.real(fnp.linalg.eigvals(m))))(general), np.eye(4), atol=1e-12)


def test_pinv_and_spectral_norm_gradients_at_repeated_singular_values():
    """pinv differentiates through P (Golub and Pereyra), not the SVD's vectors, whose derivative divides
    by the gaps between singular values: at 2 I it was NaN. The 2-norm's gradient splits a tie evenly
    (PyTorch's amax of the singular values), not onto one of them."""
    w = RNG.standard_normal((3, 3))
    expected = -0.25 * w  # d sum(W * inv(A)) = -A^-T W A^-T, at A = 2 I
    assert_close(fg.grad(lambda m: fnp.sum(w * fnp.linalg.pinv(m)))(2 * np.eye(3)), expected, rtol=1e-14)
    wide = np.hstack([2 * np.eye(3), 0.3 * RNG.standard_normal((3, 2))])  # full rank, well conditioned
    fg.check_grads(lambda m: fnp.linalg.pinv(m), (wide,), order=2)
    fg.check_grads(lambda m: fnp.linalg.pinv(m), (RNG.standard_normal((5, 3)),), order=1)  # and tall
    assert_close(fg.grad(lambda m: fnp.linalg.norm(m, 2))(2 * np.eye(3)), np.eye(3) / 3, rtol=1e-14)
    assert_close(fg.grad(lambda m: fnp.linalg.norm(m, -2))(2 * np.eye(3)), np.eye(3) / 3, rtol=1e-14)


def test_eigh_reads_the_triangle_uplo_names_as_numpy_does():
    """An explicit UPLO picks the triangle (NumPy's and PyTorch's); without one the input is
    symmetrised (JAX's default). Both agree on symmetric input."""
    a = np.array([[2.0, 1.0, 7.0], [5.0, 3.0, -1.0], [0.5, 2.0, 4.0]])
    for uplo in ("L", "U"):
        np.testing.assert_allclose(np.asarray(fnp.linalg.eigvalsh(a, UPLO=uplo)), np.linalg.eigvalsh(a, UPLO=uplo),
                                   rtol=1e-13)
        _, vectors = fnp.linalg.eigh(a, UPLO=uplo)
        np.testing.assert_allclose(np.abs(np.asarray(vectors)), np.abs(np.linalg.eigh(a, UPLO=uplo)[1]), atol=1e-13)
    np.testing.assert_allclose(np.asarray(fnp.linalg.eigvalsh(a)), np.linalg.eigvalsh((a + a.T) / 2), rtol=1e-13)
