"""The Schur decomposition A = Z T Z^H of one square matrix on the CPU, for
funcgrad.scipy.linalg's schur, rsf2csf, sqrtm and funm.

Householder reduction to Hessenberg form (NumPy), then the QR algorithm (numba) with full-matrix updates, so T and
Z come out together (Golub and Van Loan, Matrix Computations, 7.4-7.5):

- real matrices: Francis's implicit double-shift step (3x3 reflectors chasing the bulge), which keeps
  the arithmetic real; T is quasi-triangular, a 2x2 block on the diagonal for each complex pair of
  eigenvalues, rotated to equal diagonal entries, and a 2x2 block of real eigenvalues split into
  two 1x1 blocks by the rotation onto an eigenvector;
- complex matrices: the single-shift step with Wilkinson's shift (the eigenvalue of the trailing
  2x2 block nearer its last entry), by Givens rotations; T is triangular.

A subdiagonal entry is taken as zero below eps times its two diagonal neighbours; every tenth
step without one is an exceptional shift (breaking the cycles of the plain shifts); a matrix that
has not converged after 40 n steps raises (LAPACK's limit is 30 n per eigenvalue).
"""
from __future__ import annotations

import numpy as np


def _kernels():
    """(real_schur, complex_schur), numba's import paid on first use."""
    from . import _schur_kernels as k
    return k.real_schur, k.complex_schur


def _hessenberg(h: np.ndarray, z: np.ndarray) -> None:
    """h to upper Hessenberg form in place by Householder reflectors (v = x + phase |x| e1: no
    cancellation), accumulated into z. NumPy's vectorised rank-1 updates, n - 2 of them: no compiled
    kernel to wait for, and as fast as one for the sizes the QR algorithm takes."""
    n = h.shape[0]
    for k in range(n - 2):
        v = h[k + 1:, k].copy()
        norm = np.linalg.norm(v)
        if norm == 0.0:
            continue
        v[0] += (v[0] / abs(v[0]) if v[0] != 0 else 1.0) * norm
        v /= np.linalg.norm(v)
        h[k + 1:, k:] -= 2.0 * np.outer(v, v.conj() @ h[k + 1:, k:])
        h[:, k + 1:] -= 2.0 * np.outer(h[:, k + 1:] @ v, v.conj())
        z[:, k + 1:] -= 2.0 * np.outer(z[:, k + 1:] @ v, v.conj())
        h[k + 2:, k] = 0.0


def _times_power_of_two(h: np.ndarray, exponent: int) -> np.ndarray:
    """h * 2^exponent, exactly (ldexp: no overflow of the factor itself at the subnormal end)."""
    if h.dtype.kind == "c":
        return np.ldexp(h.real, exponent) + 1j * np.ldexp(h.imag, exponent)
    return np.ldexp(h, exponent)


def schur(a: np.ndarray, complex_form: bool) -> tuple[np.ndarray, np.ndarray]:
    """(T, Z) of one square matrix: real Schur form for a real matrix unless complex_form, else
    triangular (complex). Computed in float64 / complex128 (one compiled kernel each), on a scaled by
    a power of 2 to entries near 1 (the shifts' products of 1e300 entries would overflow, of 1e-300
    underflow), and returned in a's precision. Raises where the QR algorithm does not converge."""
    real_schur, complex_schur = _kernels()
    n = a.shape[0]
    real = not np.iscomplexobj(a)
    h = np.array(a, dtype=np.float64 if real else np.complex128, copy=True)
    z = np.eye(n, dtype=h.dtype)
    largest = float(np.abs(h).max()) if n else 0.0
    exponent = np.frexp(largest)[1] if 0 < largest < np.inf else 0
    h = _times_power_of_two(h, -exponent)
    if n:  # entries near 1, so the shifts' products neither overflow nor underflow
        _hessenberg(h, z)
        if not (real_schur(h, z) if real else complex_schur(h, z)):
            raise np.linalg.LinAlgError(f"schur: the QR algorithm did not converge for a {n}x{n} matrix")
    h = _times_power_of_two(h, exponent)
    if real and complex_form:
        h, z = real_to_complex(h, z)
    dtype = np.result_type(a.dtype, np.complex64 if h.dtype.kind == "c" else np.float32)
    return h.astype(dtype, copy=False), z.astype(dtype, copy=False)


def real_to_complex(t: np.ndarray, z: np.ndarray) -> tuple[np.ndarray, np.ndarray]:
    """rsf2csf: each 2x2 block of a real Schur form made triangular by a complex Givens rotation onto
    its eigenvector, applied to T's rows and columns and to Z."""
    t = t.astype(np.result_type(t.dtype, np.complex64), copy=True)
    z = z.astype(t.dtype, copy=True)
    n = t.shape[0]
    eps = np.finfo(t.real.dtype).eps
    for m in range(n - 1, 0, -1):
        if abs(t[m, m - 1]) <= eps * (abs(t[m - 1, m - 1]) + abs(t[m, m])):
            t[m, m - 1] = 0
            continue
        block = t[m - 1:m + 1, m - 1:m + 1]
        mu = np.linalg.eigvals(block) - t[m, m]
        r = np.hypot(abs(mu[0]), abs(t[m, m - 1]))
        c, s = mu[0] / r, t[m, m - 1] / r
        g = np.array([[np.conj(c), s], [-s, c]], dtype=t.dtype)
        t[m - 1:m + 1, m - 1:] = g @ t[m - 1:m + 1, m - 1:]
        t[:m + 1, m - 1:m + 1] = t[:m + 1, m - 1:m + 1] @ g.conj().T
        z[:, m - 1:m + 1] = z[:, m - 1:m + 1] @ g.conj().T
        t[m, m - 1] = 0
    return t, z
