"""The singular value decomposition and what stands on it (svdvals, pinv, matrix_rank, lstsq, the
2 / nuclear norms and cond): values against NumPy, gradients against central differences of losses
that do not depend on the singular vectors' signs, and the device kernel in the simulator."""
import numpy as np
import pytest

import funcgrad as fg
import funcgrad.numpy as fnp

from .helpers import complex_numeric_grad

RNG = np.random.default_rng(11)
SHAPES = [(4, 3), (3, 5), (4, 4), (2, 3, 2)]


@pytest.mark.parametrize("shape", SHAPES)
@pytest.mark.parametrize("full", [True, False])
def test_svd_matches_numpy(shape, full):
    a = RNG.normal(size=shape)
    u, s, vh = fnp.linalg.svd(fnp.asarray(a), full_matrices=full)
    nu, ns, nvh = np.linalg.svd(a, full_matrices=full)
    assert (u.shape, s.shape, vh.shape) == (nu.shape, ns.shape, nvh.shape)
    np.testing.assert_allclose(s, ns, rtol=1e-12)
    k = ns.shape[-1]
    np.testing.assert_allclose((np.asarray(u)[..., :k] * np.asarray(s)[..., None, :]) @ np.asarray(vh)[..., :k, :], a,
                               atol=1e-12)
    for q in (np.asarray(u), np.swapaxes(np.asarray(vh), -1, -2)):  # orthonormal columns (square when full)
        np.testing.assert_allclose(np.swapaxes(q, -1, -2) @ q, np.broadcast_to(np.eye(q.shape[-1]), q.shape[:-2] +
                                   (q.shape[-1], q.shape[-1])), atol=1e-12)
    np.testing.assert_allclose(fnp.linalg.svdvals(fnp.asarray(a)), ns, rtol=1e-12)
    assert fnp.linalg.svd(fnp.asarray(a.astype(np.float32))).S.dtype == fnp.float32


def _invariant_loss(weights):
    """Singular values and the squares of the vectors' entries: unchanged when a pair (u_i, v_i)
    flips sign, so its gradient is well defined."""
    w1, w2, w3 = (fnp.asarray(w) for w in weights)

    def loss(a):
        u, s, vh = fnp.linalg.svd(a, full_matrices=False)
        return (fnp.sum(s * w1[:s.shape[-1]]) + fnp.sum(u * u * w2[:u.shape[-2], :u.shape[-1]]) +
                fnp.sum(vh * vh * w3[:vh.shape[-2], :vh.shape[-1]]))
    return loss


@pytest.mark.parametrize("shape", SHAPES)
def test_svd_gradients_match_central_differences(shape):
    a = RNG.normal(size=shape)
    loss = _invariant_loss((RNG.normal(size=6), RNG.normal(size=(6, 6)), RNG.normal(size=(6, 6))))
    g = fg.grad(loss)(fnp.asarray(a))
    np.testing.assert_allclose(g, complex_numeric_grad(loss, a), rtol=1e-6, atol=1e-7)
    t = RNG.normal(size=shape)  # forward mode: the same directional derivative
    _, tangent = fg.jvp(loss, (fnp.asarray(a),), (fnp.asarray(t),))
    np.testing.assert_allclose(float(tangent), float(np.sum(np.asarray(g) * t)), rtol=1e-10)


def test_singular_value_gradients_stay_finite_where_values_repeat():
    """d s_i = u_i^T dA v_i needs no gaps between singular values (svdvals, norms)."""
    a = np.diag([2.0, 2.0, 1.0])
    g = fg.grad(lambda a: fnp.sum(fnp.linalg.svdvals(a) ** 2))(fnp.asarray(a))
    np.testing.assert_allclose(g, 2 * a, atol=1e-12)  # d/dA ||A||_F^2
    np.testing.assert_allclose(fg.grad(lambda a: fnp.linalg.norm(a, "nuc"))(fnp.asarray(np.eye(3))), np.eye(3))


def test_full_matrices_extra_columns_carry_no_gradient():
    """As in PyTorch: U[:, k:] is an arbitrary basis of the complement, so it passes no gradient on,
    and the first k columns differentiate as in the reduced decomposition."""
    a, w = RNG.normal(size=(5, 2)), fnp.asarray(RNG.normal(size=(5, 2)))

    def first_columns(full):
        return lambda a: fnp.sum(fnp.linalg.svd(a, full_matrices=full).U[:, :2] ** 2 * w)
    np.testing.assert_allclose(fg.grad(first_columns(True))(fnp.asarray(a)),
                               fg.grad(first_columns(False))(fnp.asarray(a)), atol=1e-12)
    extra = fg.grad(lambda a: fnp.sum(fnp.linalg.svd(a).U[:, 2:]))(fnp.asarray(a))
    np.testing.assert_array_equal(extra, np.zeros_like(a))


def test_pinv_matrix_rank_and_lstsq_match_numpy():
    low_rank = RNG.normal(size=(5, 2)) @ RNG.normal(size=(2, 4))
    for a in (RNG.normal(size=(4, 3)), RNG.normal(size=(3, 5)), low_rank, RNG.normal(size=(2, 3, 3))):
        np.testing.assert_allclose(fnp.linalg.pinv(fnp.asarray(a)), np.linalg.pinv(a), atol=1e-12)
        np.testing.assert_array_equal(fnp.linalg.matrix_rank(fnp.asarray(a)), np.linalg.matrix_rank(a))
    assert int(fnp.linalg.matrix_rank(fnp.asarray(low_rank), tol=1e-30)) == 4  # rounding noise counts then
    assert int(fnp.linalg.matrix_rank(fnp.asarray(low_rank), rtol=0.5)) == np.linalg.matrix_rank(low_rank, rtol=0.5)
    assert int(fnp.linalg.matrix_rank(fnp.asarray([0.0, 0.0]))) == 0 and int(fnp.linalg.matrix_rank(fnp.ones(3))) == 1
    np.testing.assert_allclose(fnp.linalg.pinv(fnp.asarray(low_rank), rtol=0.5), np.linalg.pinv(low_rank, rtol=0.5),
                               atol=1e-12)
    b = RNG.normal(size=(6, 2))
    for a, rhs in ((RNG.normal(size=(6, 3)), b), (RNG.normal(size=(6, 3)), b[:, 0]), (low_rank, b[:5])):
        ours, expected = fnp.linalg.lstsq(fnp.asarray(a), fnp.asarray(rhs)), np.linalg.lstsq(a, rhs)
        for got, want in zip(ours, expected):
            assert np.shape(got) == np.shape(want)
            np.testing.assert_allclose(got, want, atol=1e-12)


def test_rank_and_pinv_take_torchs_absolute_tolerance():
    """torch.linalg's atol: singular values at or below max(atol, rtol * largest) count as zero; a
    positive atol alone sets rtol to 0. Checked against NumPy's SVD with that cutoff."""
    a = RNG.normal(size=(3, 4, 3)) @ RNG.normal(size=(3, 3, 4))
    s = np.linalg.svd(a, compute_uv=False)
    cases = ((dict(atol=0.5), 0.5 + 0 * s[:, :1]), (dict(atol=0.1, rtol=0.3), np.maximum(0.1, 0.3 * s[:, :1])),
             (dict(atol=np.array([0.1, 1e3, 0.1])), np.array([[0.1], [1e3], [0.1]])))
    for kw, cutoff in cases:
        np.testing.assert_array_equal(fnp.linalg.matrix_rank(a, **kw), (s > cutoff).sum(-1))
        u, _, vh = np.linalg.svd(a, full_matrices=False)
        inverse = np.where(s > cutoff, 1 / s, 0)
        want = np.swapaxes(vh, -1, -2) @ (inverse[..., None] * np.swapaxes(u, -1, -2))
        np.testing.assert_allclose(fnp.linalg.pinv(a, **kw), want, atol=1e-10)
    with pytest.raises(TypeError, match="give tol, or rtol and atol"):
        fnp.linalg.matrix_rank(a, 0.1, atol=0.2)


def test_lstsq_batches_as_torch():
    a, b = RNG.normal(size=(3, 6, 2)), RNG.normal(size=(3, 6, 4))
    x, residuals, rank, s = fnp.linalg.lstsq(fnp.asarray(a), fnp.asarray(b))
    for i in range(3):
        expected = np.linalg.lstsq(a[i], b[i])
        for got, want in zip((x[i], residuals[i], rank[i], s[i]), expected):
            np.testing.assert_allclose(got, want, atol=1e-12)
    np.testing.assert_allclose(fnp.linalg.lstsq(fnp.asarray(a), fnp.asarray(b[..., 0]))[0],
                               np.stack([np.linalg.lstsq(a[i], b[i, :, 0])[0] for i in range(3)]), atol=1e-12)


def test_pinv_and_lstsq_gradients():
    a, b, w = RNG.normal(size=(5, 3)), RNG.normal(size=(5, 2)), fnp.asarray(RNG.normal(size=(3, 5)))
    f = lambda a: fnp.sum(fnp.linalg.pinv(a) * w)  # noqa: E731
    np.testing.assert_allclose(fg.grad(f)(fnp.asarray(a)), complex_numeric_grad(f, a), rtol=1e-6, atol=1e-8)
    h = lambda b: fnp.sum(fnp.linalg.lstsq(fnp.asarray(a), b)[0] ** 2)  # noqa: E731
    np.testing.assert_allclose(fg.grad(h)(fnp.asarray(b)), complex_numeric_grad(h, b), rtol=1e-6, atol=1e-8)


def test_norms_and_cond_from_singular_values():
    a = RNG.normal(size=(4, 3))
    for order in (2, -2, "nuc"):
        np.testing.assert_allclose(fnp.linalg.norm(fnp.asarray(a), order), np.linalg.norm(a, order), rtol=1e-12)
    np.testing.assert_allclose(fnp.linalg.cond(fnp.asarray(a)), np.linalg.cond(a), rtol=1e-12)
    z = a + 1j * RNG.normal(size=a.shape)
    np.testing.assert_allclose(fnp.linalg.vector_norm(fnp.asarray(z)), np.linalg.norm(z), rtol=1e-12)
    np.testing.assert_allclose(fnp.linalg.matrix_norm(fnp.asarray(z)), np.linalg.norm(z, "fro"), rtol=1e-12)


def test_vmap_and_jit_of_svd():
    a = RNG.normal(size=(3, 4, 2))
    np.testing.assert_allclose(fg.vmap(fnp.linalg.svdvals)(fnp.asarray(a)), np.linalg.svd(a, compute_uv=False),
                               rtol=1e-12)
    np.testing.assert_allclose(fg.jit(fnp.linalg.pinv)(fnp.asarray(a)), np.linalg.pinv(a), atol=1e-12)


def test_bad_inputs_are_named():
    with pytest.raises(fg.ShapeError, match=r"svd needs matrices of shape \(..., m, n\), got shape \(3,\)"):
        fnp.linalg.svd(fnp.ones(3))
    with pytest.raises(TypeError, match="give rtol or rcond, not both"):
        fnp.linalg.pinv(fnp.ones((2, 2)), rcond=0.1, rtol=0.1)
    with pytest.raises(fg.ShapeError, match=r"lstsq: a \(..., m, n\) and b"):
        fnp.linalg.lstsq(fnp.ones((3, 2)), fnp.ones(4))


@pytest.mark.skipif(not fg.cuda.is_available(), reason="no CUDA device or simulator")
@pytest.mark.parametrize("shape", [(4, 3), (2, 5), (2, 3, 3)])
def test_device_svd_equals_the_cpu(shape):
    a = fnp.asarray(RNG.normal(size=shape).astype(np.float32))
    d = fg.device_put(a, "cuda")
    u, s, vh = fnp.linalg.svd(d, full_matrices=False)
    assert u.device == "cuda:0"
    np.testing.assert_allclose(s.numpy(), np.linalg.svd(a.numpy(), compute_uv=False), rtol=1e-5)
    np.testing.assert_allclose((u.numpy() * s.numpy()[..., None, :]) @ vh.numpy(), a.numpy(), atol=1e-5)
    f = lambda a: fnp.sum(fnp.linalg.pinv(a) ** 2) + fnp.sum(fnp.linalg.svdvals(a))  # noqa: E731
    np.testing.assert_allclose(fg.grad(f)(d).numpy(), fg.grad(f)(a).numpy(), rtol=1e-3, atol=1e-4)


@pytest.mark.skipif(not fg.cuda.is_available(), reason="no CUDA device or simulator")
@pytest.mark.parametrize("matrix", [np.array([[1.0, 2.0], [2.0, 4.0]]), np.zeros((3, 3)), np.ones((4, 3)),
                                    np.ones((3, 4)), np.ones((3, 3)) * (1 + 1j)],
                         ids=["rank1_square", "zero", "rank1_tall", "rank1_wide", "rank1_complex"])
def test_device_svd_of_a_rank_deficient_matrix_has_orthonormal_factors(matrix):
    """A zero singular value's column of U (of Vh for a wide matrix) is completed to an orthonormal
    basis, as LAPACK's: a zero column breaks every formula that uses U as unitary (det's adjugate
    gave zero gradients)."""
    u, s, vh = (x.numpy() for x in fnp.linalg.svd(fg.device_put(fnp.asarray(matrix), "cuda"), full_matrices=False))
    k = min(matrix.shape)
    np.testing.assert_allclose(u.conj().T @ u, np.eye(k), atol=1e-12)
    np.testing.assert_allclose(vh @ vh.conj().T, np.eye(k), atol=1e-12)
    np.testing.assert_allclose((u * s) @ vh, matrix, atol=1e-12)
    np.testing.assert_allclose(s, np.linalg.svd(matrix, compute_uv=False), atol=1e-12)


@pytest.mark.skipif(not fg.cuda.is_available(), reason="no CUDA device or simulator")
def test_device_det_gradient_at_a_singular_matrix_is_the_cofactor_matrix():
    singular = fg.device_put(fnp.asarray(np.array([[1.0, 2.0], [2.0, 4.0]])), "cuda")
    np.testing.assert_allclose(fg.grad(fnp.linalg.det)(singular).numpy(), [[4.0, -2.0], [-2.0, 1.0]], atol=1e-12)
