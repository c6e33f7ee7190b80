"""jax.scipy.linalg's schur, rsf2csf, sqrtm and funm. The Schur decomposition runs on the host
(cpu/schur.py: Hessenberg reduction and the QR algorithm, as LAPACK's gees) through pure_callback,
so jit and vmap take these functions, as JAX's CPU-only ones; like JAX's they have no derivatives
(the callback names itself under grad). sqrtm and funm return complex matrices (JAX's dtypes: SciPy
returns a real one where the imaginary parts vanish)."""
from __future__ import annotations

from typing import Callable

import numpy as np

from .. import dtypes
from .. import numpy as fnp
from ..array import Array
from ..callback import pure_callback
from ..cpu import schur as _host
from ..jit import ShapeDtypeStruct
from ..ops import decompositions as D

__all__ = ["schur", "rsf2csf", "sqrtm", "funm"]


def _square(a, name: str):
    """a as square matrices (..., n, n) of a linear-algebra dtype (integers and half types as float32)."""
    a = fnp._float_arg(a)
    if a.dtype not in D.LINALG_DTYPES:
        a = fnp.astype(a, dtypes.float32)
    if a.ndim < 2 or a.shape[-1] != a.shape[-2]:
        raise ValueError(f"{name}: a must be square matrices (..., n, n), got shape {tuple(a.shape)}")
    return a


def _each_matrix(fn: Callable, name: str, *arrays: np.ndarray) -> tuple:
    """fn applied to the matrices of same-shaped batches, results stacked back; non-finite entries
    raise (the QR algorithm would not converge on them), naming the function."""
    if not all(np.isfinite(x).all() for x in arrays):
        raise ValueError(f"{name}: the matrix holds an infinity or a NaN")
    batch = arrays[0].shape[:-2]
    results = [fn(*(x[index] for x in arrays)) for index in np.ndindex(batch)]
    if not results:
        empty = fn(*(np.zeros(x.shape[-2:], x.dtype) for x in arrays))
        return tuple(np.zeros(batch + r.shape, r.dtype) for r in empty)
    return tuple(np.stack(parts).reshape(batch + parts[0].shape) for parts in zip(*results))


def schur(a, output: str = "real") -> tuple[Array, Array]:
    """(T, Z) with a = Z T Z^H, Z unitary: T quasi-triangular (2x2 blocks for complex pairs of
    eigenvalues) for output='real' of a real a, triangular and complex for output='complex' or a
    complex a (scipy.linalg.schur; batches of matrices too)."""
    if output not in ("real", "complex"):
        raise ValueError(f"schur: output must be 'real' or 'complex', got {output!r}")
    a = _square(a, "schur")
    complex_form = output == "complex" or dtypes.is_complex(a.dtype)
    dtype = dtypes.complex_dtype(a.dtype) if complex_form else a.dtype
    shapes = (ShapeDtypeStruct(tuple(a.shape), dtype),) * 2
    return pure_callback(lambda x: _each_matrix(lambda m: _host.schur(m, complex_form), "schur", np.asarray(x)),
                         shapes, a, vmap_method="sequential")


def rsf2csf(T, Z, check_finite: bool = True) -> tuple[Array, Array]:  # noqa: N803  (SciPy's names)
    """The complex Schur form (T, Z) from a real one: each 2x2 block made triangular by a complex
    rotation (scipy.linalg.rsf2csf)."""
    t, z = _square(T, "rsf2csf"), _square(Z, "rsf2csf")
    if dtypes.is_complex(t.dtype) or dtypes.is_complex(z.dtype):
        raise TypeError(f"rsf2csf takes a real Schur form, got {t.dtype} and {z.dtype}")
    if tuple(t.shape) != tuple(z.shape):
        t, z = fnp.broadcast_arrays(t, z)
    dtype = dtypes.complex_dtype(dtypes.promote(t.dtype, z.dtype))
    shapes = (ShapeDtypeStruct(tuple(t.shape), dtype),) * 2

    def convert(t_host, z_host):
        return _each_matrix(lambda m, q: tuple(r.astype(dtype) for r in _host.real_to_complex(m, q)), "rsf2csf",
                            np.asarray(t_host), np.asarray(z_host))
    return pure_callback(convert, shapes, t, z, vmap_method="sequential")


def _triangular_sqrt(t: np.ndarray) -> np.ndarray:
    """R upper triangular with R^2 = t (Bjorck and Hammarling): column by column, each entry from the
    ones below it; 0 / 0 (a repeated zero eigenvalue) is 0, as SciPy's."""
    n = t.shape[0]
    r = np.diag(np.sqrt(np.diag(t)))
    for j in range(n):
        for i in range(j - 1, -1, -1):
            numerator = t[i, j] - r[i, i + 1:j] @ r[i + 1:j, j]
            denominator = r[i, i] + r[j, j]
            r[i, j] = 0 if numerator == 0 and denominator == 0 else numerator / denominator
    return r


def _parlett(t: np.ndarray, f_diagonal: np.ndarray) -> tuple[np.ndarray, float]:
    """F = f(t) for upper triangular t from f on its diagonal, by Parlett's recurrence (Golub and Van
    Loan 11.1.1), and the smallest gap between diagonal entries (0 where two repeat: the division is
    then skipped, as SciPy's, and the entry is not f's)."""
    n = t.shape[0]
    f = np.diag(f_diagonal.astype(t.dtype))
    smallest = np.inf
    for p in range(1, n):
        for i in range(n - p):
            j = i + p
            s = t[i, j] * (f[j, j] - f[i, i]) + t[i, i + 1:j] @ f[i + 1:j, j] - f[i, i + 1:j] @ t[i + 1:j, j]
            gap = t[j, j] - t[i, i]
            smallest = min(smallest, abs(gap))
            if gap != 0:
                s = s / gap
            f[i, j] = s
    return f, smallest


def sqrtm(A, blocksize: int = 1) -> Array:  # noqa: N803  (SciPy's name)
    """The principal square root X (X @ X = A) by the complex Schur method of Bjorck and Hammarling:
    complex for every input, as jax.scipy.linalg.sqrtm (blocksize, SciPy's blocking, has no effect)."""
    a = _square(A, "sqrtm")
    dtype = dtypes.complex_dtype(a.dtype) if not dtypes.is_complex(a.dtype) else a.dtype

    def host(x):
        def one(m):
            t, z = _host.schur(m, True)
            return ((z @ _triangular_sqrt(t) @ z.conj().T).astype(dtype),)
        return _each_matrix(one, "sqrtm", np.asarray(x))[0]
    return pure_callback(host, ShapeDtypeStruct(tuple(a.shape), dtype), a, vmap_method="sequential")


def funm(A, func: Callable, disp: bool = True):  # noqa: N803  (SciPy's name)
    """f(A) for a scalar function f applied elementwise to the eigenvalues (func takes and returns an
    array): Schur form, func on its diagonal, Parlett's recurrence (scipy.linalg.funm). Complex, as
    jax.scipy.linalg.funm; with disp=False also SciPy's estimate of the relative error. Where
    eigenvalues repeat the recurrence cannot divide by their gap and the result is not f(A) (SciPy's
    and JAX's neither): the estimate is then 1 or more than the strict upper triangle's norm says (use
    expm, sqrtm there)."""
    a = _square(A, "funm")
    if a.ndim != 2:
        raise ValueError(f"funm: expected one square matrix (n, n), got shape {tuple(a.shape)}")
    t, z = schur(a, output="complex")
    f_diagonal = fnp.asarray(func(fnp.diagonal(t)))
    if tuple(f_diagonal.shape) != (a.shape[0],):
        raise ValueError(f"funm: func must map the {a.shape[0]} eigenvalues to as many values, got shape "
                         f"{tuple(f_diagonal.shape)}")
    f_diagonal = fnp.astype(f_diagonal, t.dtype)
    real = np.dtype(dtypes.real_dtype(t.dtype))

    def host(t_host, f_host):
        f, smallest = _parlett(np.asarray(t_host), np.asarray(f_host))
        tol = np.finfo(real).eps
        upper = np.abs(np.triu(np.asarray(t_host), 1)).sum(axis=0).max() if t_host.shape[0] > 1 else 0.0
        gap = tol if smallest == 0 else min(smallest, 1e300)  # SciPy's: a zero gap counts as eps
        error = np.inf if not np.isfinite(f).all() else min(1.0, max(tol, tol / gap * upper))
        return f, np.asarray(error, real)
    f, error = pure_callback(host, (ShapeDtypeStruct(tuple(t.shape), t.dtype), ShapeDtypeStruct((), real)),
                             t, f_diagonal, vmap_method="sequential")
    f = z @ f @ fnp.conj(fnp.swapaxes(z, -1, -2))
    return f if disp else (f, error)
