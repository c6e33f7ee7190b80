"""funcgrad.scipy.signal against NumPy's 1-D convolve/correlate and a brute-force N-d sum over the
definition, in every mode, method and boundary; gradients through the direct path."""
import itertools

import numpy as np
import pytest

import funcgrad as fg
from funcgrad.scipy import signal

from .helpers import assert_close

RNG = np.random.default_rng(0)


def _full_convolution(a, b):
    """z[k] = sum_n a[n] b[k - n], summed term by term."""
    out = np.zeros(tuple(p + q - 1 for p, q in zip(a.shape, b.shape)), np.result_type(a, b))
    for i in itertools.product(*map(range, a.shape)):
        for j in itertools.product(*map(range, b.shape)):
            out[tuple(p + q for p, q in zip(i, j))] += a[i] * b[j]
    return out


def _mode(full, s1, s2, mode):
    if mode == "full":
        return full
    if mode == "same":
        return full[tuple(slice((q - 1) // 2, (q - 1) // 2 + p) for p, q in zip(s1, s2))]
    return full[tuple(slice(min(p, q) - 1, max(p, q)) for p, q in zip(s1, s2))]


@pytest.mark.parametrize("shapes", [((7,), (3,)), ((3,), (7,)), ((5, 6), (2, 3)), ((4, 5, 3), (2, 2, 2))])
@pytest.mark.parametrize("mode", ["full", "same", "valid"])
def test_convolve_and_correlate_are_their_sums(shapes, mode):
    a, b = RNG.normal(size=shapes[0]), RNG.normal(size=shapes[1])
    want = _mode(_full_convolution(a, b), a.shape, b.shape, mode)
    flipped = b[tuple(slice(None, None, -1) for _ in b.shape)]
    want_corr = _mode(_full_convolution(a, flipped), a.shape, b.shape, mode)
    for method in ("direct", "fft"):
        assert_close(signal.convolve(a, b, mode, method), want, rtol=1e-12, atol=1e-12)
        assert_close(signal.correlate(a, b, mode, method), want_corr, rtol=1e-12, atol=1e-12)
    assert_close(signal.fftconvolve(a, b, mode), want, rtol=1e-12, atol=1e-12)


def test_one_dimensional_forms_match_numpy_and_integers_stay_exact():
    a, b = RNG.normal(size=9), RNG.normal(size=4)
    for mode in ("full", "same", "valid"):
        assert_close(signal.convolve(a, b, mode), np.convolve(a, b, mode), rtol=1e-13)
    assert_close(signal.correlate(a, b, "valid"), np.correlate(a, b, "valid"), rtol=1e-13)
    ai, bi = RNG.integers(-50, 50, 12), RNG.integers(-50, 50, 5)
    for method in ("direct", "fft"):
        out = signal.convolve(ai, bi, method=method)
        assert out.dtype == ai.dtype and np.array_equal(np.asarray(out), np.convolve(ai, bi))
    ac = RNG.normal(size=6) + 1j * RNG.normal(size=6)
    bc = RNG.normal(size=3) + 1j * RNG.normal(size=3)
    np.testing.assert_allclose(np.asarray(signal.correlate(ac, bc)), np.correlate(ac, bc, "full"), rtol=1e-12)
    with pytest.raises(ValueError, match="one input must be at least as large"):
        signal.convolve(np.ones((3, 1)), np.ones((1, 3)), "valid")
    with pytest.raises(ValueError, match="same number of dimensions"):
        signal.convolve(np.ones(3), np.ones((2, 2)))


@pytest.mark.parametrize("boundary", ["fill", "wrap", "symm"])
def test_two_dimensional_boundaries(boundary):
    a, k = RNG.normal(size=(6, 5)), RNG.normal(size=(3, 2))
    numpy_mode = {"fill": "constant", "wrap": "wrap", "symm": "symmetric"}[boundary]
    extra = {"constant_values": 1.5} if boundary == "fill" else {}
    padded = np.pad(a, ((2, 2), (1, 1)), mode=numpy_mode, **extra)
    full = _mode(_full_convolution(padded, k), padded.shape, k.shape, "valid")  # in1 extended, then valid
    assert_close(signal.convolve2d(a, k, "full", boundary, fillvalue=1.5), full, rtol=1e-12)
    assert_close(signal.convolve2d(a, k, "same", boundary, fillvalue=1.5), full[1:7, 0:5], rtol=1e-12)
    assert_close(signal.convolve2d(a, k, "valid"), _mode(_full_convolution(a, k), a.shape, k.shape, "valid"), rtol=1e-12)
    corr = signal.correlate2d(a, k, "full", boundary, fillvalue=1.5)
    assert_close(corr, _mode(_full_convolution(padded, k[::-1, ::-1]), padded.shape, k.shape, "valid"), rtol=1e-12)
    assert_close(signal.correlate2d(a, k, "same", boundary, fillvalue=1.5), np.asarray(corr)[1:7, 1:6], rtol=1e-12)


def test_fftconvolve_axes_detrend_and_gradients():
    a, b = RNG.normal(size=(4, 8)), RNG.normal(size=(1, 3))
    want = np.stack([np.convolve(row, b[0], "same") for row in a])
    assert_close(signal.fftconvolve(a, b, "same", axes=1), want, rtol=1e-12, atol=1e-12)
    t = np.arange(10.0)
    data = 3.0 + 0.5 * t + RNG.normal(size=(2, 10)) * 0.01
    fit = np.stack([np.polyval(np.polyfit(t, row, 1), t) for row in data])
    assert_close(signal.detrend(data), data - fit, rtol=1e-10, atol=1e-12)
    assert_close(signal.detrend(data, type="constant"), data - data.mean(-1, keepdims=True), rtol=1e-12)
    x, k = RNG.normal(size=7), RNG.normal(size=3)
    fg.check_grads(lambda u, v: signal.convolve(u, v, "same"), (x, k), order=2, modes=("fwd", "rev"))
    fg.check_grads(lambda u, v: signal.fftconvolve(u, v), (x, k), order=1, modes=("rev",))


def _dct2_matrix(n):
    k, m = np.arange(n)[:, None], np.arange(n)[None, :]
    return 2 * np.cos(np.pi * k * (2 * m + 1) / (2 * n))  # y = M x, SciPy's unnormalised DCT-II


@pytest.mark.parametrize("n", [1, 7, 8])
def test_dct_types_and_norms_are_their_sums(n):
    from funcgrad.scipy import fft
    x = RNG.normal(size=(3, n))
    m2 = _dct2_matrix(n)
    m3 = np.linalg.inv(m2) * 2 * n  # DCT-III: 2N times DCT-II's inverse
    scale = np.full(n, np.sqrt(1 / (2 * n)))
    scale[0] = np.sqrt(1 / (4 * n))
    assert_close(fft.dct(x), x @ m2.T, rtol=1e-12, atol=1e-12)
    assert_close(fft.dct(x, 3), x @ m3.T, rtol=1e-12, atol=1e-12)
    assert_close(fft.dct(x, norm="ortho"), x @ (scale[:, None] * m2).T, rtol=1e-12, atol=1e-12)
    assert_close(fft.dct(x, norm="forward"), x @ m2.T / (2 * n), rtol=1e-12, atol=1e-12)
    ortho = scale[:, None] * m2
    assert_close(ortho @ ortho.T, np.eye(n), atol=1e-12)  # so 'ortho' type 3 is its transpose
    assert_close(fft.dct(x, 3, norm="ortho"), x @ ortho, rtol=1e-12, atol=1e-12)
    for kind in (2, 3):
        for norm in (None, "ortho", "forward"):
            assert_close(fft.idct(fft.dct(x, kind, norm=norm), kind, norm=norm), x, rtol=1e-12, atol=1e-12)
    assert_close(fft.dctn(x), fft.dct(fft.dct(x, axis=0), axis=1), rtol=1e-12, atol=1e-12)
    assert_close(fft.dct(x, n=n + 2), np.pad(x, ((0, 0), (0, 2))) @ _dct2_matrix(n + 2).T, rtol=1e-12, atol=1e-12)
    fg.check_grads(lambda v: fft.dct(v, norm="ortho"), (x,), order=1, modes=("rev", "fwd"))


def test_stft_istft_welch_and_csd():
    x = RNG.normal(size=(2, 300))
    f, t, z = signal.stft(x, fs=10.0, nperseg=64)
    assert z.shape == (2, 33, 11) and np.allclose(np.asarray(f), np.fft.rfftfreq(64, 0.1))
    assert_close(t, np.arange(11) * 3.2)  # 32-sample steps at 10 Hz, from the zero-padded start
    # one segment by hand: the extended signal's samples 32k .. 32k + 63 times the periodic Hann window
    window = 0.5 - 0.5 * np.cos(2 * np.pi * np.arange(64) / 64)
    padded = np.pad(x, ((0, 0), (32, 32 + (-(364 - 64) % 32) % 64)))
    k = 4
    want = np.fft.rfft(padded[:, 32 * k:32 * k + 64] * window, axis=-1) / window.sum()
    np.testing.assert_allclose(np.asarray(z)[:, :, k], want, rtol=1e-12, atol=1e-14)
    _, back = signal.istft(z, fs=10.0, nperseg=64)
    assert_close(np.asarray(back)[:, :300], x, rtol=1e-11, atol=1e-12)  # Hann at 50% overlap reconstructs
    # a sine at a bin frequency: the boxcar 'spectrum' holds A^2 / 2 there
    n = np.arange(1024)
    sine = 3.0 * np.sin(2 * np.pi * 8 * n / 128)
    freqs, pxx = signal.welch(sine, fs=128.0, window="boxcar", nperseg=128, scaling="spectrum")
    pxx = np.asarray(pxx)
    assert np.argmax(pxx) == 8 and np.isclose(pxx[8], 4.5, rtol=1e-12) and pxx[np.arange(65) != 8].max() < 1e-20
    _, density = signal.welch(x, fs=10.0, nperseg=64)
    assert_close(np.sum(np.asarray(density), -1) * (10.0 / 64), x.var(-1), rtol=0.1)  # Parseval, roughly
    _, cross = signal.csd(x, x, fs=10.0, nperseg=64)
    np.testing.assert_allclose(np.asarray(cross), np.asarray(density), rtol=1e-12)
    with pytest.raises(ValueError, match="window must be one of"):
        signal.welch(x, window="kaiser-ish")
