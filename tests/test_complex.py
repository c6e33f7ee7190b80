"""Complex dtypes: promotion, values against NumPy, and gradients in PyTorch's convention (the
gradient with respect to z = x + iy is dL/dx + i dL/dy), checked by central differences along the
real and the imaginary part of every element."""
import warnings

import numpy as np
import pytest

import funcgrad as fg
import funcgrad.numpy as fnp
from funcgrad import dtypes
from .helpers import complex_numeric_grad as numeric_grad

RNG = np.random.default_rng(7)
Z = RNG.normal(size=(3, 4)) + 1j * RNG.normal(size=(3, 4))
W = RNG.normal(size=(4, 2)) + 1j * RNG.normal(size=(4, 2))
X = RNG.normal(size=(3, 4))


# ---- dtypes and promotion ------------------------------------------------------------------------
@pytest.mark.parametrize("a, b, expected", [
    ("complex64", "float32", "complex64"), ("complex64", "float64", "complex128"),
    ("complex128", "float32", "complex128"), ("complex64", "int64", "complex64"),
    ("complex64", "bool", "complex64"), ("complex64", "complex128", "complex128"),
    ("float16", "complex64", "complex64"), ("bfloat16", "complex128", "complex128"),
])
def test_promotion_follows_pytorch(a, b, expected):
    assert dtypes.promote(np.dtype(fnp.dtype(a)), np.dtype(fnp.dtype(b))) == np.dtype(expected)
    x, y = fnp.ones(2, dtype=a), fnp.ones(2, dtype=b)
    assert (x + y).dtype == expected and (y * x).dtype == expected


def test_python_complex_scalars_are_weak():
    assert fnp.asarray(1j).dtype == fnp.complex64  # torch.tensor(1j): complex64
    assert fnp.asarray([1 + 2j, 3]).dtype == fnp.complex64
    assert (fnp.ones(2, dtype=fnp.float32) * 1j).dtype == fnp.complex64
    assert (fnp.ones(2, dtype=fnp.float64) * 1j).dtype == fnp.complex128
    assert (fnp.ones(2, dtype=fnp.int64) + 1j).dtype == fnp.complex64
    assert (fnp.ones(2, dtype=fnp.complex64) * 2.5).dtype == fnp.complex64
    assert fnp.result_type(fnp.float64, 1j) == np.complex128
    assert fnp.asarray(np.array([1j], np.complex128)).dtype == fnp.complex128  # NumPy arrays keep theirs


def test_finfo_and_division_by_complex_scalars():
    assert fnp.finfo(fnp.complex64).dtype == fnp.float32 and fnp.finfo(fnp.complex128).eps == np.finfo(np.float64).eps
    np.testing.assert_allclose(fnp.asarray([1.0, 2.0]) / (1 + 1j), np.array([1.0, 2.0]) / (1 + 1j), rtol=1e-6)
    np.testing.assert_allclose(fnp.asarray([1, 2]) / 1j, [-1j, -2j])
    assert (fnp.asarray([1, 2]) / 1j).dtype == fnp.complex64


def test_casts_and_parts():
    z = fnp.asarray(np.array([1.5 - 2j, -3 + 0.5j], np.complex64))
    with warnings.catch_warnings():
        warnings.simplefilter("error")  # no ComplexWarning: the real part is taken on purpose
        np.testing.assert_array_equal(fnp.astype(z, fnp.float32), [1.5, -3.0])
        np.testing.assert_array_equal(fnp.float64(z), [1.5, -3.0])
    np.testing.assert_array_equal(z.real, [1.5, -3.0])
    np.testing.assert_array_equal(z.imag, [-2.0, 0.5])
    assert z.real.dtype == fnp.float32 and fnp.abs(z).dtype == fnp.float32
    np.testing.assert_array_equal(z.conj(), [1.5 + 2j, -3 - 0.5j])
    np.testing.assert_array_equal(fnp.astype(z, bool), [True, True])
    assert fnp.iscomplexobj(z) and not fnp.iscomplexobj(z.real)
    np.testing.assert_array_equal(fnp.isreal(fnp.asarray([1 + 0j, 1j])), [True, False])
    np.testing.assert_array_equal(fg.lax.complex(fnp.asarray([1.0, np.inf]), fnp.asarray([0.0, 2.0])),
                                  np.array([1 + 0j, complex(np.inf, 2.0)]))  # no NaN from inf * 0j
    assert fg.lax.complex(fnp.zeros(2, dtype=fnp.float64), 1.0).dtype == fnp.complex128
    with pytest.raises(TypeError, match="real parts"):
        fg.lax.complex(z, z)


UNARY = ["exp", "log", "sqrt", "sin", "cos", "tan", "tanh", "sinh", "cosh", "arcsin", "arccos", "arctan",
         "arcsinh", "arccosh", "arctanh", "expm1", "log1p", "log2", "log10", "square", "reciprocal", "sign",
         "abs", "negative", "conj", "real", "imag", "angle", "isnan", "isinf", "isfinite", "round", "rint"]


@pytest.mark.parametrize("dtype", ["complex64", "complex128"])
@pytest.mark.parametrize("name", UNARY)
def test_unary_values_match_numpy(name, dtype):
    z = np.array([0.3 + 0.4j, -1.2 + 2j, 2.5 - 0.1j, 0j, complex(np.inf, 1), complex(np.nan, 0)], dtype)
    with np.errstate(all="ignore"):
        expected = getattr(np, name)(z)
        eager = getattr(fnp, name)(fnp.asarray(z))
        jitted = fg.jit(getattr(fnp, name))(fnp.asarray(z))
    assert eager.dtype == expected.dtype and jitted.dtype == expected.dtype
    tol = 1e-5 if dtype == "complex64" else 1e-12
    np.testing.assert_allclose(np.asarray(eager), expected, rtol=tol, atol=tol)
    np.testing.assert_allclose(np.asarray(jitted), expected, rtol=tol, atol=tol)


def test_arithmetic_reductions_and_matmul_match_numpy():
    z, w = fnp.asarray(Z), fnp.asarray(W)
    np.testing.assert_allclose(z @ w, Z @ W, rtol=1e-12)
    np.testing.assert_allclose(fnp.einsum("ij,jk->ik", z, w), Z @ W, rtol=1e-12)
    np.testing.assert_allclose(z / (z + 1) - z ** 2 * 0.5, Z / (Z + 1) - Z ** 2 * 0.5, rtol=1e-12)
    np.testing.assert_allclose(z ** z, Z ** Z, rtol=1e-12)
    np.testing.assert_allclose(fnp.sum(z, axis=0), Z.sum(0), rtol=1e-12)
    np.testing.assert_allclose(fnp.prod(z, axis=1), Z.prod(1), rtol=1e-12)
    np.testing.assert_allclose(fnp.mean(z), Z.mean(), rtol=1e-12)
    np.testing.assert_allclose(fnp.cumsum(z, axis=1), Z.cumsum(1), rtol=1e-12)
    np.testing.assert_array_equal(z == fnp.asarray(Z), np.ones(Z.shape, bool))
    np.testing.assert_allclose(fnp.vdot(z, z), np.vdot(Z, Z), rtol=1e-12)
    np.testing.assert_allclose(fnp.linalg.vecdot(z, z), np.sum(Z.conj() * Z, -1), rtol=1e-12)


def test_statistics_of_complex_are_numpys():
    z = fnp.asarray(Z)
    np.testing.assert_allclose(fnp.var(z, axis=0), np.var(Z, axis=0), rtol=1e-12)
    np.testing.assert_allclose(fnp.std(z), np.std(Z), rtol=1e-12)
    assert fnp.var(z).dtype == fnp.float64


# ---- gradients: PyTorch's convention ----------------------------------------------------------------
LOSSES = {
    "abs2": lambda z: fnp.sum(fnp.abs(z) ** 2),
    "real_of_holomorphic": lambda z: fnp.sum(fnp.real(z * z * (1.5 + 0.5j) + fnp.exp(z))),
    "imag_log_sqrt": lambda z: fnp.sum(fnp.imag(fnp.log(z + 4) * fnp.sqrt(z + 3))),
    "abs_of_trig": lambda z: fnp.sum(fnp.abs(fnp.sin(z) * fnp.tanh(z) + fnp.cosh(z))),
    "conj": lambda z: fnp.sum(fnp.real(fnp.conj(z) * z * z)),
    "angle": lambda z: fnp.sum(fnp.angle(z)),
    "matmul": lambda z: fnp.sum(fnp.abs(z @ fnp.asarray(W))),
    "division_power": lambda z: fnp.sum(fnp.real(z / (z ** 2 + 2) + fnp.reciprocal(z))),
    "mean_prod": lambda z: fnp.abs(fnp.mean(fnp.prod(z, axis=0))),
    "mixed_with_real": lambda z: fnp.sum(fnp.abs(z * fnp.asarray(X) + 1j)),
    "to_real_cast": lambda z: fnp.sum(fnp.astype(z * z, fnp.float64) ** 2),
    "inverse_trig": lambda z: fnp.sum(fnp.abs(fnp.arcsin(z * 0.3) + fnp.arctan(z * 0.2) + fnp.arcsinh(z))),
}


@pytest.mark.parametrize("name", sorted(LOSSES))
def test_gradient_is_dl_dx_plus_i_dl_dy(name):
    f = LOSSES[name]
    g = fg.grad(f)(fnp.asarray(Z))
    assert g.dtype == fnp.complex128
    np.testing.assert_allclose(g, numeric_grad(f, Z), rtol=1e-6, atol=1e-7)


def test_gradient_descent_on_abs2_moves_toward_zero():
    """grad |z|^2 = 2z (PyTorch; JAX would give 2 conj(z)), so z - lr * grad shrinks z."""
    z = fnp.asarray(np.array([1 + 2j, -3 + 1j]))
    g = fg.grad(lambda z: fnp.sum(fnp.abs(z) ** 2))(z)
    np.testing.assert_allclose(g, 2 * np.array([1 + 2j, -3 + 1j]))


def test_real_inputs_of_complex_computations():
    def f(x, y):
        z = fg.lax.complex(x, y)
        return fnp.sum(fnp.abs(fnp.exp(1j * x) * z + z * z))
    x, y = X[0], X[1]
    gx, gy = fg.grad(f, argnums=(0, 1))(fnp.asarray(x), fnp.asarray(y))
    assert gx.dtype == fnp.float64 and gy.dtype == fnp.float64
    np.testing.assert_allclose(gx, numeric_grad(lambda a: f(a, fnp.asarray(y)), x), rtol=1e-6, atol=1e-8)
    np.testing.assert_allclose(gy, numeric_grad(lambda b: f(fnp.asarray(x), b), y), rtol=1e-6, atol=1e-8)


def test_vjp_of_a_holomorphic_function_conjugates_the_derivative():
    """PyTorch: the vector-Jacobian product of a holomorphic f is v * conj(f'(z))."""
    z, v = Z[0], W[:, 0]
    out, vjp_fn = fg.vjp(lambda z: z ** 3, fnp.asarray(z))
    np.testing.assert_allclose(vjp_fn(fnp.asarray(v))[0], v * np.conj(3 * z ** 2), rtol=1e-12)


def test_jvp_of_holomorphic_and_of_abs():
    z, t = Z[0], W[:, 1]
    _, tangent = fg.jvp(lambda z: fnp.exp(z) * z, (fnp.asarray(z),), (fnp.asarray(t),))
    np.testing.assert_allclose(tangent, (np.exp(z) * z + np.exp(z)) * t, rtol=1e-12)
    _, tangent = fg.jvp(lambda z: fnp.abs(z), (fnp.asarray(z),), (fnp.asarray(t),))
    np.testing.assert_allclose(tangent, np.real(np.conj(z) * t) / np.abs(z), rtol=1e-12)


def test_jit_and_vmap_of_complex_gradients():
    f = LOSSES["real_of_holomorphic"]
    np.testing.assert_allclose(fg.jit(fg.grad(f))(fnp.asarray(Z)), fg.grad(f)(fnp.asarray(Z)), rtol=1e-12)
    rows = fg.vmap(fg.grad(lambda z: fnp.sum(fnp.abs(z) ** 2)))(fnp.asarray(Z))
    np.testing.assert_allclose(rows, 2 * Z, rtol=1e-12)


def test_jit_renders_complex_literals_and_casts():
    z = fnp.asarray(np.array([1 + 2j, complex(np.nan, 0), -3j], np.complex64))

    def f(z):
        return fnp.where(fnp.isnan(z), complex(np.inf, -1.0), z * (2 - 1j)), fnp.astype(z, fnp.float32)
    for got, want in zip(fg.jit(f)(z), f(z)):
        assert got.dtype == want.dtype
        np.testing.assert_array_equal(got, want)


def test_grad_of_a_complex_loss_is_refused():
    with pytest.raises(TypeError, match="complex value has no gradient"):
        fg.grad(lambda z: fnp.sum(z * z))(fnp.asarray(Z))


# ---- on the device (numba's simulator here; tests/ptx_check.py compiles the complex kernels) -------
@pytest.mark.skipif(not fg.cuda.is_available(), reason="no CUDA device or simulator")
def test_complex_on_the_device_equals_the_cpu():
    def f(z, w, x):
        y = fnp.exp(z * 0.5) @ w + fnp.sqrt(z[:, :2]) * x[:, :2] - 1j
        return fnp.sum(fnp.abs(y) ** 2) + fnp.sum(fnp.angle(z[np.array([0, 2, 2])]))
    args = (fnp.asarray(Z.astype(np.complex64)), fnp.asarray(W.astype(np.complex64)), fnp.asarray(X.astype(np.float32)))
    value, grads = fg.value_and_grad(f, argnums=(0, 1, 2))(*args)
    on_device = fg.device_put(args, "cuda")
    d_value, d_grads = fg.value_and_grad(f, argnums=(0, 1, 2))(*on_device)
    np.testing.assert_allclose(d_value.numpy(), value.numpy(), rtol=1e-5)
    for g, d in zip(grads, d_grads):
        assert d.device == "cuda:0" and d.dtype == g.dtype
        np.testing.assert_allclose(d.numpy(), g.numpy(), rtol=1e-4, atol=1e-5)
    np.testing.assert_allclose(fnp.prod(on_device[0], axis=0).numpy(), Z.astype(np.complex64).prod(0), rtol=1e-5)


def test_second_derivatives_through_complex_abs():
    """abs's rule for complex numbers is made of differentiable primitives (the phase varies)."""
    def f(x):
        return fnp.sum(fnp.abs(x * (1 + 1j) + 0.3j)) + fnp.sum(fnp.abs(fg.lax.complex(x, x ** 2)) ** 2)
    v = RNG.normal(size=X.shape)
    _, hvp = fg.jvp(fg.grad(f), (fnp.asarray(X),), (fnp.asarray(v),))
    eps = 1e-5
    diff = np.asarray(fg.grad(f)(fnp.asarray(X + eps * v))) - np.asarray(fg.grad(f)(fnp.asarray(X - eps * v)))
    np.testing.assert_allclose(hvp, diff / (2 * eps), rtol=1e-6, atol=1e-6)


# ---- linear algebra of complex matrices -------------------------------------------------------------
A3 = RNG.normal(size=(2, 3, 3)) + 1j * RNG.normal(size=(2, 3, 3))
B3 = RNG.normal(size=(2, 3, 2)) + 1j * RNG.normal(size=(2, 3, 2))


def test_complex_solve_inv_det_slogdet_match_numpy():
    a, b = fnp.asarray(A3), fnp.asarray(B3)
    np.testing.assert_allclose(fnp.linalg.solve(a, b), np.linalg.solve(A3, B3), rtol=1e-12)
    np.testing.assert_allclose(fnp.linalg.inv(a), np.linalg.inv(A3), rtol=1e-12)
    np.testing.assert_allclose(fnp.linalg.det(a), np.linalg.det(A3), rtol=1e-12)
    sign, logabsdet = fnp.linalg.slogdet(a)
    assert sign.dtype == fnp.complex128 and logabsdet.dtype == fnp.float64  # the standard's dtypes
    np.testing.assert_allclose(sign, np.linalg.slogdet(A3)[0], rtol=1e-12)
    np.testing.assert_allclose(logabsdet, np.linalg.slogdet(A3)[1], rtol=1e-12)
    real_system = fnp.linalg.solve(fnp.asarray(A3.real), b)  # a complex right side makes the system complex
    np.testing.assert_allclose(real_system, np.linalg.solve(A3.real, B3), rtol=1e-12)


@pytest.mark.parametrize("name", ["solve", "inv", "det", "slogdet"])
def test_complex_linalg_gradients(name):
    b = fnp.asarray(B3)
    loss = {"solve": lambda a: fnp.sum(fnp.abs(fnp.linalg.solve(a, b))),
            "inv": lambda a: fnp.sum(fnp.real(fnp.linalg.inv(a) * (1 + 2j))),
            "det": lambda a: fnp.sum(fnp.abs(fnp.linalg.det(a) + 1)),
            "slogdet": lambda a: fnp.sum(fnp.linalg.slogdet(a)[1] + 3 * fnp.imag(fnp.linalg.slogdet(a)[0]))}[name]
    np.testing.assert_allclose(fg.grad(loss)(fnp.asarray(A3)), numeric_grad(loss, A3), rtol=1e-6, atol=1e-7)


@pytest.mark.skipif(not fg.cuda.is_available(), reason="no CUDA device or simulator")
@pytest.mark.parametrize("dtype", [np.float32, np.complex64])
def test_det_gradients_on_the_device(dtype):
    """slogdet's rules ran a CPU identity beside device data (a DeviceMismatchError on a GPU)."""
    a = fnp.asarray(A3.astype(dtype) if dtype == np.complex64 else A3.real.astype(dtype))

    def f(a):
        return fnp.sum(fnp.abs(fnp.linalg.det(a))) + fnp.sum(fnp.abs(fnp.linalg.inv(a)))
    on_device = fg.grad(f)(fg.device_put(a, "cuda"))
    assert on_device.device == "cuda:0"
    np.testing.assert_allclose(on_device.numpy(), fg.grad(f)(a).numpy(), rtol=1e-4, atol=1e-5)
    _, tangent = fg.jvp(lambda a: fnp.linalg.slogdet(a)[1], (fg.device_put(a, "cuda"),), (fg.device_put(a, "cuda"),))
    np.testing.assert_allclose(tangent.numpy(), np.full(2, 3.0), rtol=1e-4)  # d log|det(a + t a)| = n dt


def test_complex_qr_is_a_unitary_triangular_factorisation():
    for a in (A3, B3[0].T.copy()):  # square batches and a wide matrix
        q, r = fnp.linalg.qr(fnp.asarray(a))
        q, r = np.asarray(q), np.asarray(r)
        np.testing.assert_allclose(q @ r, a, atol=1e-12)
        np.testing.assert_allclose(np.swapaxes(q.conj(), -1, -2) @ q, np.broadcast_to(np.eye(q.shape[-1]), q.shape[:-2]
                                   + (q.shape[-1],) * 2), atol=1e-12)
        np.testing.assert_array_equal(np.tril(r, -1), 0)
        np.testing.assert_allclose(np.abs(r), np.abs(np.linalg.qr(a)[1]), atol=1e-12)  # LAPACK's up to phases
    loss = lambda a: fnp.sum(fnp.abs(fnp.linalg.qr(a)[1])) + fnp.sum(fnp.abs(fnp.linalg.qr(a)[0]) ** 3)  # noqa: E731
    np.testing.assert_allclose(fg.grad(loss)(fnp.asarray(A3[0])), numeric_grad(loss, A3[0]), rtol=1e-6, atol=1e-7)


def _hermitian(n, batch=()):
    m = RNG.normal(size=batch + (n, n)) + 1j * RNG.normal(size=batch + (n, n))
    return m @ np.conj(np.swapaxes(m, -1, -2)) + n * np.eye(n)


def test_complex_cholesky_eigh_svd_match_numpy():
    h = _hermitian(3, (2,))
    np.testing.assert_allclose(fnp.linalg.cholesky(fnp.asarray(h)), np.linalg.cholesky(h), rtol=1e-12)
    w, v = fnp.linalg.eigh(fnp.asarray(h))
    assert w.dtype == fnp.float64 and v.dtype == fnp.complex128
    np.testing.assert_allclose(w, np.linalg.eigh(h)[0], rtol=1e-12)
    np.testing.assert_allclose((np.asarray(v) * np.asarray(w)[..., None, :]) @ np.conj(np.swapaxes(v, -1, -2)), h,
                               atol=1e-12)
    for a in (Z, Z.T.copy(), A3):
        u, s, vh = fnp.linalg.svd(fnp.asarray(a), full_matrices=True)
        nu, ns, nvh = np.linalg.svd(a, full_matrices=True)
        assert (u.shape, s.shape, vh.shape, s.dtype) == (nu.shape, ns.shape, nvh.shape, np.float64)
        np.testing.assert_allclose(s, ns, rtol=1e-12)
        k = ns.shape[-1]
        rebuilt = (np.asarray(u)[..., :k] * np.asarray(s)[..., None, :]) @ np.asarray(vh)[..., :k, :]
        np.testing.assert_allclose(rebuilt, a, atol=1e-12)
        np.testing.assert_allclose(fnp.linalg.pinv(fnp.asarray(a)), np.linalg.pinv(a), atol=1e-12)


COMPLEX_DECOMPOSITION_LOSSES = {
    "cholesky": (lambda a: fnp.sum(fnp.real(fnp.linalg.cholesky(a) * fnp.asarray(W[:3, :2] @ W[:3, :2].T + 1j))), "h"),
    "eigenvalues": (lambda a: fnp.sum(fnp.linalg.eigh(a)[0] ** 2), "h"),
    "eigenvectors": (lambda a: fnp.sum(fnp.abs(fnp.linalg.eigh(a)[1]) ** 4), "h"),
    "svd_tall": (lambda a: fnp.sum(fnp.abs(fnp.linalg.svd(a, full_matrices=False)[0]) ** 4)
                 + fnp.sum(fnp.linalg.svdvals(a) ** 3), "tall"),
    "svd_wide": (lambda a: fnp.sum(fnp.abs(fnp.linalg.svd(a, full_matrices=False)[2]) ** 4), "wide"),
    "pinv": (lambda a: fnp.sum(fnp.abs(fnp.linalg.pinv(a) - 0.3j) ** 2), "tall"),
}


@pytest.mark.parametrize("name", sorted(COMPLEX_DECOMPOSITION_LOSSES))
def test_complex_decomposition_gradients(name):
    """Gradients in PyTorch's convention against central differences; the Hermitian inputs are
    differentiated through funcgrad's own Hermitian projection (a + a^H) / 2, as the real ones."""
    loss, kind = COMPLEX_DECOMPOSITION_LOSSES[name]
    a = {"h": _hermitian(3), "tall": Z[:, :3], "wide": Z[:3, :]}[kind]
    np.testing.assert_allclose(fg.grad(loss)(fnp.asarray(a)), numeric_grad(loss, a), rtol=1e-5, atol=1e-7)


@pytest.mark.skipif(not fg.cuda.is_available(), reason="no CUDA device or simulator")
def test_complex_decompositions_on_the_device():
    h = fnp.asarray(_hermitian(3, (2,)).astype(np.complex64))
    a = fnp.asarray(Z[:, :3].astype(np.complex64))
    on_device = fg.device_put((h, a), "cuda")

    def f(h, a):
        return (fnp.sum(fnp.linalg.eigh(h)[0] ** 2) + fnp.sum(fnp.abs(fnp.linalg.cholesky(h)))
                + fnp.sum(fnp.abs(fnp.linalg.pinv(a)) ** 2) + fnp.sum(fnp.linalg.svdvals(fnp.conj(a).T)))
    value, grads = fg.value_and_grad(f, argnums=(0, 1))(h, a)
    d_value, d_grads = fg.value_and_grad(f, argnums=(0, 1))(*on_device)
    np.testing.assert_allclose(d_value.numpy(), value.numpy(), rtol=1e-4)
    for g, d in zip(grads, d_grads):
        assert d.device == "cuda:0"
        np.testing.assert_allclose(d.numpy(), g.numpy(), rtol=1e-3, atol=1e-4)


def test_checkpoints_hold_complex64_leaves_and_complex_metadata(tmp_path):
    """safetensors has a C64 dtype (0.7+) and no complex128; metadata is JSON, so complex arrays
    there travel as their parts."""
    path = str(tmp_path / "c.safetensors")
    leaf = np.array([1 + 2j, complex(1, np.inf), complex(np.nan, -0.0)], np.complex64)
    fg.checkpoint.save(path, {"w": fnp.asarray(leaf)}, metadata={"z": fnp.asarray(np.array([complex(0, np.inf)]))})
    tree, meta = fg.checkpoint.load(path)
    np.testing.assert_array_equal(tree["w"], leaf)
    assert tree["w"].dtype == fnp.complex64 and meta["z"].dtype == fnp.complex128
    np.testing.assert_array_equal(meta["z"], [complex(0, np.inf)])
    with pytest.raises(TypeError, match="complex128, which safetensors cannot store"):
        fg.checkpoint.save(path, {"w": fnp.asarray(np.array([1j]))})


def test_jacobians_of_complex_values():
    """jacrev of a real output of complex inputs gives PyTorch-convention gradient rows; a complex
    output (rows of only the real part) or a complex input to jacfwd (columns of only d/dx) raise."""
    z = fnp.asarray(Z[0])
    np.testing.assert_allclose(fg.jacrev(lambda z: fnp.abs(z) ** 2)(z), np.diag(2 * Z[0]), atol=1e-12)
    with pytest.raises(TypeError, match="jacrev of a complex output"):
        fg.jacrev(lambda z: z * 2)(z)
    with pytest.raises(TypeError, match="jacfwd of a complex input"):
        fg.jacfwd(lambda z: fnp.abs(z))(z)


def test_holomorphic_derivatives_and_linear_transpose_are_jaxs():
    """holomorphic=True gives f'(z) itself (JAX's), checked against closed forms; linear_transpose
    is the plain transpose (no conjugate)."""
    z = np.array([0.3 + 0.5j, -1.2 + 0.1j, 2.0 - 1j])
    assert_allclose = np.testing.assert_allclose
    assert_allclose(fg.grad(lambda a: fnp.sum(fnp.sin(a) * a), holomorphic=True)(z), np.cos(z) * z + np.sin(z),
                    rtol=1e-12)
    value, derivative = fg.value_and_grad(lambda a: fnp.sum(a ** 3), holomorphic=True)(z)
    assert_allclose(value, np.sum(z ** 3), rtol=1e-12)
    assert_allclose(derivative, 3 * z ** 2, rtol=1e-12)
    expected = np.diag(np.exp(z) * z[0])
    expected[:, 0] += np.exp(z)  # every output also holds z[0]
    for jacobian in (fg.jacrev, fg.jacfwd):
        assert_allclose(jacobian(lambda a: fnp.exp(a) * a[0], holomorphic=True)(z), expected, rtol=1e-12)
    with pytest.raises(TypeError, match="holomorphic=True needs complex inputs"):
        fg.grad(lambda a: fnp.sum(a ** 2), holomorphic=True)(z.real)
    m = RNG.standard_normal((2, 3))
    assert_allclose(fg.linear_transpose(lambda a: m @ a, np.zeros(3))(np.ones(2))[0], m.T @ np.ones(2), rtol=1e-12)
    assert_allclose(fg.linear_transpose(lambda a: (1 + 2j) * a, z)(z)[0], (1 + 2j) * z, rtol=1e-12)
    spec = fg.ShapeDtypeStruct((2, 3), np.float64)
    assert_allclose(fg.linear_transpose(lambda a: fnp.sum(a, 0), spec)(np.arange(3.0))[0], np.tile(np.arange(3.0), (2, 1)))
    # the affine offset drops out (JAX's); a non-linear function has no transpose and raises (it gave
    # its derivative at zero: sin's transpose was the identity)
    assert_allclose(fg.linear_transpose(lambda a: 3.0 * a + 1.0, np.zeros(3))(np.ones(3))[0], [3.0, 3.0, 3.0])
    for nonlinear in (fnp.sin, fnp.abs, lambda a: a * a, lambda a: fnp.where(a > 0, a, 0.0)):
        with pytest.raises(ValueError, match="is not linear"):
            fg.linear_transpose(nonlinear, np.zeros(3))


def test_remat_and_custom_jvp_keep_the_rules_convention():
    """checkpoint's backward and custom_jvp's reverse mode run reverse mode inside a rule: there the
    cotangents stay in the rules' (JAX's) convention; converting them too gave wrong gradients."""
    z = fnp.asarray(Z[0])

    def inner(z):
        return fnp.exp(z) * (1 + 2j) + fnp.conj(z) * z
    expected = numeric_grad(lambda z: fnp.sum(fnp.abs(inner(z)) ** 2), Z[0])
    np.testing.assert_allclose(fg.grad(lambda z: fnp.sum(fnp.abs(fg.checkpoint(inner)(z)) ** 2))(z), expected,
                               rtol=1e-6, atol=1e-7)

    @fg.custom_jvp
    def scaled_exp(z):
        return fnp.exp(z) * 2j

    @scaled_exp.defjvp
    def scaled_exp_jvp(primals, tangents):
        (z,), (t,) = primals, tangents
        return scaled_exp(z), fnp.exp(z) * 2j * t
    np.testing.assert_allclose(fg.grad(lambda z: fnp.sum(fnp.abs(scaled_exp(z)) ** 2))(z),
                               numeric_grad(lambda z: fnp.sum(fnp.abs(fnp.exp(z) * 2j) ** 2), Z[0]), rtol=1e-6)


def test_complex_conv_transpose_is_the_plain_transpose_of_conv():
    """sum(conv2d(y, w) * x) == sum(y * conv_transpose2d(x, w)) for complex x, y, w (a bilinear
    identity, with no conjugates: conv_transpose2d is conv2d's transpose, as in PyTorch)."""
    F = fg.nn.functional
    x = RNG.normal(size=(1, 2, 3, 3)) + 1j * RNG.normal(size=(1, 2, 3, 3))
    y = RNG.normal(size=(1, 3, 7, 7)) + 1j * RNG.normal(size=(1, 3, 7, 7))
    w = RNG.normal(size=(2, 3, 3, 3)) + 1j * RNG.normal(size=(2, 3, 3, 3))  # conv2d: 3 -> 2 channels
    forward = fnp.sum(F.conv2d(fnp.asarray(y), fnp.asarray(w), stride=2) * fnp.asarray(x))
    backward = fnp.sum(fnp.asarray(y) * F.conv_transpose2d(fnp.asarray(x), fnp.asarray(w), stride=2))
    np.testing.assert_allclose(complex(forward), complex(backward), rtol=1e-12)


def test_angle_of_reals_is_piecewise_constant():
    x = fnp.asarray([-1.5, 0.0, 2.0])
    np.testing.assert_allclose(fnp.angle(x), np.angle([-1.5, 0.0, 2.0]))
    np.testing.assert_array_equal(fg.grad(lambda x: fnp.sum(fnp.angle(x)))(x), [0.0, 0.0, 0.0])


def test_numpy_helpers_on_complex_arrays():
    z = np.array([1 + 1e-9j, complex(np.nan, 0), 2j])
    np.testing.assert_array_equal(fnp.isclose(fnp.asarray(z), fnp.asarray([1, np.nan, 2j]), equal_nan=True),
                                  np.isclose(z, [1, np.nan, 2j], equal_nan=True))
    assert bool(fnp.array_equal(fnp.asarray(z), fnp.asarray(z), equal_nan=True))
    np.testing.assert_allclose(fnp.asarray([1j, 2]) ** -1, np.array([1j, 2]) ** -1)  # no integer-power refusal
    np.testing.assert_allclose(fnp.nansum(fnp.asarray(z)), np.nansum(z))
    np.testing.assert_allclose(fnp.nanmean(fnp.asarray(z)), np.nanmean(z))
    with pytest.raises(TypeError, match="signbit is defined for real numbers only"):
        fnp.signbit(fnp.asarray(z))
