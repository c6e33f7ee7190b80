"""Complex gradients against torch.autograd itself, where PyTorch is installed (it is no dependency
of funcgrad: the benchmarks' virtualenv has it). The convention under test is PyTorch's: for a real
loss L of z = x + iy the gradient is dL/dx + i dL/dy; test_complex.py checks the same numbers
against central differences without PyTorch."""
import numpy as np
import pytest

import funcgrad as fg
import funcgrad.numpy as fnp

torch = pytest.importorskip("torch")

RNG = np.random.default_rng(5)
Z = RNG.normal(size=(3, 4)) + 1j * RNG.normal(size=(3, 4))
W = RNG.normal(size=(4, 2)) + 1j * RNG.normal(size=(4, 2))
SQUARE = RNG.normal(size=(2, 3, 3)) + 1j * RNG.normal(size=(2, 3, 3))
HERMITIAN = SQUARE @ np.conj(np.swapaxes(SQUARE, -1, -2)) + 3 * np.eye(3)


def _both(f):
    """f written once against a namespace m (fnp or torch) and its matrix helpers."""
    return lambda z: f(fnp, z), lambda z: f(torch, z)


CASES = {
    "abs2": (Z, lambda m, z: (abs(z) ** 2).sum()),
    "holomorphic": (Z, lambda m, z: (m.exp(z) * z * (1.5 + 0.5j) + m.sqrt(z)).real.sum()),
    "trig": (Z, lambda m, z: abs(m.sin(z) * m.tanh(z) + m.cosh(z)).sum()),
    "conj": (Z, lambda m, z: (m.conj(z) * z * z).real.sum()),
    "angle": (Z, lambda m, z: m.angle(z).sum()),
    "matmul": (Z, lambda m, z: abs(z @ (fnp.asarray(W) if m is fnp else torch.tensor(W))).sum()),
    "fft": (Z, lambda m, z: abs(m.fft.fft(z) * 0.3).sum() + m.fft.ifft2(z).real.sum()),
    "rfft_irfft": (Z, lambda m, z: (m.fft.irfft(m.fft.rfft(z.real) * (1 + 2j), 5) ** 2).sum()),
    "hfft": (Z, lambda m, z: (m.fft.hfft(z) ** 2).sum()),
    "solve_inv": (SQUARE, lambda m, a: abs(m.linalg.solve(a, a[..., :2] * 2j)).sum() + m.linalg.inv(a).imag.sum()),
    "det_slogdet": (SQUARE, lambda m, a: abs(m.linalg.det(a)).sum() + m.linalg.slogdet(a)[0].imag.sum()),
    "eigh": (HERMITIAN, lambda m, a: (m.linalg.eigh(a)[0] ** 2).sum() + (abs(m.linalg.eigh(a)[1]) ** 4).sum()),
    "svd": (Z, lambda m, a: m.linalg.svdvals(a).sum() + (abs(m.linalg.svd(a, full_matrices=False)[0]) ** 4).sum()),
    "pinv": (Z, lambda m, a: (abs(m.linalg.pinv(a)) ** 2).sum()),
}


@pytest.mark.parametrize("name", sorted(CASES))
def test_gradients_equal_torch_autograd(name):
    value, f = CASES[name]
    ours, theirs = _both(f)
    g = fg.grad(ours)(fnp.asarray(value))
    t = torch.tensor(value, requires_grad=True)
    theirs(t).backward()
    np.testing.assert_allclose(np.asarray(g), t.grad.resolve_conj().numpy(), rtol=1e-9, atol=1e-10)
