"""funcgrad.numpy.fft: values against numpy.fft in every argument form, gradients against central
differences (PyTorch's complex convention: dL/dx + i dL/dy), vmap and jit, and the DFT-by-matmul
composition the CUDA backend runs (on NumPy here, in the simulator below)."""
import numpy as np
import pytest

import funcgrad as fg
import funcgrad.numpy as fnp
from funcgrad.ops import fft as F

from .helpers import complex_numeric_grad

RNG = np.random.default_rng(3)
X = RNG.normal(size=(4, 6))
Z = X + 1j * RNG.normal(size=(4, 6))
WEIGHTS = RNG.normal(size=(12, 12)) + 1j * RNG.normal(size=(12, 12))

FORMS = [
    ("fft", lambda m, a: m.fft.fft(a), Z), ("fft_n_crop_axis0", lambda m, a: m.fft.fft(a, n=3, axis=0), Z),
    ("fft_n_pad", lambda m, a: m.fft.fft(a, 9), Z), ("fft_of_real", lambda m, a: m.fft.fft(a), X),
    ("ifft_ortho", lambda m, a: m.fft.ifft(a, norm="ortho"), Z),
    ("fft_forward", lambda m, a: m.fft.fft(a, norm="forward"), Z),
    ("ifft_forward", lambda m, a: m.fft.ifft(a, norm="forward"), Z),
    ("rfft", lambda m, a: m.fft.rfft(a), X), ("rfft_odd_axis0", lambda m, a: m.fft.rfft(a, 7, axis=0), X),
    ("irfft", lambda m, a: m.fft.irfft(a), Z), ("irfft_odd", lambda m, a: m.fft.irfft(a, 5), Z),
    ("irfft_padded_ortho", lambda m, a: m.fft.irfft(a, 11, norm="ortho"), Z),
    ("fft2", lambda m, a: m.fft.fft2(a), Z), ("ifft2", lambda m, a: m.fft.ifft2(a, norm="ortho"), Z),
    ("fftn_s", lambda m, a: m.fft.fftn(a, s=(3, 8), axes=(0, 1)), Z), ("rfftn", lambda m, a: m.fft.rfftn(a), X),
    ("irfftn_s", lambda m, a: m.fft.irfftn(a, s=(4, 7), axes=(0, 1)), Z), ("irfft2", lambda m, a: m.fft.irfft2(a), Z),
    ("rfft2_reversed_axes", lambda m, a: m.fft.rfft2(a, axes=(1, 0)), X),
    ("hfft", lambda m, a: m.fft.hfft(a), Z), ("hfft_ortho", lambda m, a: m.fft.hfft(a, 7, norm="ortho"), Z),
    ("ihfft", lambda m, a: m.fft.ihfft(a), X),
]


@pytest.mark.parametrize("name,form,a", FORMS, ids=[f[0] for f in FORMS])
def test_values_match_numpy(name, form, a):
    ours, expected = form(fnp, fnp.asarray(a)), form(np, a)
    assert ours.shape == expected.shape and ours.dtype == expected.dtype
    np.testing.assert_allclose(ours, expected, rtol=1e-12, atol=1e-12)


def _loss(out):
    """A real loss of a transform's output that weighs every element differently."""
    w = fnp.asarray(WEIGHTS[tuple(slice(0, n) for n in out.shape)])
    if fnp.iscomplexobj(out):
        return fnp.sum(fnp.abs(out * w)) + fnp.sum(fnp.real(out * w))
    return fnp.sum((out * fnp.real(w)) ** 2)


@pytest.mark.parametrize("name,form,a", FORMS, ids=[f[0] for f in FORMS])
def test_gradients_match_central_differences(name, form, a):
    f = lambda v: _loss(form(fnp, v))  # noqa: E731
    g = fg.grad(f)(fnp.asarray(a))
    assert g.dtype == np.asarray(a).dtype
    np.testing.assert_allclose(g, complex_numeric_grad(f, a), rtol=1e-6, atol=1e-6)


def test_float32_gives_complex64_and_integers_transform_in_float32():
    assert fnp.fft.fft(fnp.ones(4, dtype=fnp.float32)).dtype == fnp.complex64
    assert fnp.fft.rfft(fnp.asarray([1, 2, 3])).dtype == fnp.complex64
    assert fnp.fft.irfft(fnp.ones(3, dtype=fnp.complex64)).dtype == fnp.float32
    np.testing.assert_allclose(fnp.fft.rfft(fnp.asarray([1, 2, 3])), np.fft.rfft([1, 2, 3]), rtol=1e-6)


def test_frequencies_and_shifts_match_numpy():
    np.testing.assert_allclose(fnp.fft.fftfreq(8, 0.5), np.fft.fftfreq(8, 0.5))
    np.testing.assert_allclose(fnp.fft.fftfreq(7, dtype=fnp.float64), np.fft.fftfreq(7))
    np.testing.assert_allclose(fnp.fft.rfftfreq(9, 2.0), np.fft.rfftfreq(9, 2.0), rtol=1e-6)
    assert fnp.fft.fftfreq(4).dtype == fnp.float32
    for axes in (None, 0, (1,), (0, 1)):
        np.testing.assert_array_equal(fnp.fft.fftshift(fnp.asarray(X), axes), np.fft.fftshift(X, axes))
        np.testing.assert_array_equal(fnp.fft.ifftshift(fnp.asarray(X), axes), np.fft.ifftshift(X, axes))


def test_bad_arguments_are_named():
    with pytest.raises(ValueError, match="norm 'sideways'"):
        fnp.fft.fft(fnp.asarray(Z), norm="sideways")
    with pytest.raises(TypeError, match="rfft transforms real arrays, not complex128"):
        fnp.fft.rfft(fnp.asarray(Z))
    with pytest.raises(ValueError, match="invalid number of data points"):
        fnp.fft.fft(fnp.asarray(Z), n=0)
    with pytest.raises(ValueError, match="repeated axes"):
        fnp.fft.fftn(fnp.asarray(Z), axes=(0, 0))
    with pytest.raises(ValueError, match="s .* and axes .* differ"):
        fnp.fft.fftn(fnp.asarray(Z), s=(2, 3, 4), axes=(0, 1))
    with pytest.raises(ValueError, match="n must be positive"):
        fnp.fft.fftfreq(0)


def test_vmap_jit_and_forward_mode():
    f = lambda z: fnp.fft.ifft(fnp.fft.fft(z) * fnp.arange(6))  # noqa: E731
    np.testing.assert_allclose(fg.vmap(f)(fnp.asarray(Z)), np.fft.ifft(np.fft.fft(Z) * np.arange(6)), atol=1e-12)
    np.testing.assert_allclose(fg.jit(f)(fnp.asarray(Z)), f(fnp.asarray(Z)), atol=1e-12)
    t = RNG.normal(size=Z.shape) + 1j * RNG.normal(size=Z.shape)
    _, tangent = fg.jvp(lambda x: fnp.fft.rfft2(x), (fnp.asarray(X),), (fnp.asarray(t.real),))
    np.testing.assert_allclose(tangent, np.fft.rfft2(t.real), atol=1e-12)  # linear: the transform of the tangent
    g = fg.grad(lambda x: _loss(fnp.fft.irfft(fnp.fft.rfft(x) * 2.0)))
    np.testing.assert_allclose(fg.jit(g)(fnp.asarray(X)), g(fnp.asarray(X)), atol=1e-12)


def test_second_derivatives_through_the_transform():
    """The rules are made of fft_p itself, so a Hessian-vector product matches differences of gradients."""
    f = lambda x: fnp.sum(fnp.abs(fnp.fft.rfft(x ** 2)) ** 2)  # noqa: E731
    v = RNG.normal(size=X.shape)
    _, hvp = fg.jvp(fg.grad(f), (fnp.asarray(X),), (fnp.asarray(v),))
    eps = 1e-5
    expected = (np.asarray(fg.grad(f)(fnp.asarray(X + eps * v))) - np.asarray(fg.grad(f)(fnp.asarray(X - eps * v))))
    np.testing.assert_allclose(hvp, expected / (2 * eps), rtol=1e-5, atol=1e-6)


@pytest.mark.parametrize("shape,k", [((3, 8), 1), ((2, 5, 6), 2), ((7,), 1), ((4, 3, 5), 3)])
def test_the_dft_by_matmul_equals_the_fft(shape, k):
    """The composition the CUDA backend runs, evaluated with NumPy's implementations."""
    run = lambda prim, *args, **params: prim.impl(*args, **params)  # noqa: E731
    x = RNG.normal(size=shape)
    z = x + 1j * RNG.normal(size=shape)
    lengths = shape[-k:]
    half = np.fft.rfftn(x, axes=tuple(range(-k, 0)))
    for kind, a in (("fft", z), ("ifft", z), ("rfft", x), ("irfft", half)):
        np.testing.assert_allclose(F.by_matmul(a, kind, lengths, run, np.arange),
                                   F.fft_p(a, kind=kind, lengths=lengths), atol=1e-12)


@pytest.mark.skipif(not fg.cuda.is_available(), reason="no CUDA device or simulator")
def test_on_the_device_equals_the_cpu():
    x = fnp.asarray(X[:2, :5].astype(np.float32))

    def f(x):
        spectrum = fnp.fft.rfft(x) * (1 + 0.5j)
        return fnp.sum(fnp.fft.irfft(spectrum, 5) ** 2) + fnp.sum(fnp.abs(fnp.fft.fft2(x)))
    value, grad = fg.value_and_grad(f)(x)
    d_value, d_grad = fg.value_and_grad(f)(fg.device_put(x, "cuda"))
    assert d_grad.device == "cuda:0"
    np.testing.assert_allclose(d_value.numpy(), value.numpy(), rtol=1e-5)
    np.testing.assert_allclose(d_grad.numpy(), grad.numpy(), rtol=1e-4, atol=1e-5)
