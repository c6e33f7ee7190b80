"""funcgrad.scipy.linalg: jax.scipy.linalg with SciPy's signatures. Triangular solves are a
primitive (ops.decompositions.triangular_solve: BLAS-blocked substitution on the CPU, a kernel on
the GPU, differentiable in both operands); cho_solve, generalized eigh and the rest are composed
from it and funcgrad.numpy.linalg, and expm is Higham's scaling and squaring with the [13/13] Pade
approximant; lu is a primitive too (LAPACK's blocked getrf on the CPU, an elimination kernel on
the GPU, differentiable). SciPy's overwrite_*/check_finite flags are accepted and have no effect
(Arrays are immutable). hessenberg, solve_sylvester, eigh_tridiagonal and qr_multiply are composed
(_reductions.py); schur, rsf2csf, sqrtm and funm run the Schur decomposition on the host (_schur.py)."""
from __future__ import annotations

import math

import numpy as np

from .. import dtypes
from .. import numpy as fnp
from ..array import Array
from ..numpy import linalg as _linalg
from ..ops import decompositions as D
from ..trace import bind
from ._matrices import *  # noqa: F401,F403  (the special matrices)
from ._matrices import __all__ as _matrices
from ._reductions import eigh_tridiagonal, hessenberg, qr_multiply, solve_sylvester  # noqa: F401
from ._schur import _square, funm, rsf2csf, schur, sqrtm  # noqa: F401

__all__ = ["solve_triangular", "lu", "lu_factor", "lu_solve", "cholesky", "cho_factor", "cho_solve", "solve", "inv",
           *_matrices, "det", "eigh", "svd", "qr", "block_diag", "toeplitz", "hilbert", "expm", "expm_frechet", "polar",
           "hessenberg", "solve_sylvester", "eigh_tridiagonal", "qr_multiply", "schur", "rsf2csf", "sqrtm", "funm"]

inv, det = _linalg.inv, _linalg.det


def _mH(a):
    return fnp.conj(fnp.swapaxes(a, -1, -2)) if dtypes.is_complex(a.dtype) else fnp.swapaxes(a, -1, -2)


def _matrices(a, b, name: str):
    """a (..., n, n) and b (..., n) or (..., n, k) in one linear-algebra dtype; b's vector form is
    remembered so the result takes it back."""
    a, b = fnp._float_args(a, b)
    if a.dtype not in D.LINALG_DTYPES:
        a, b = fnp.astype(a, dtypes.float32), fnp.astype(b, dtypes.float32)
    if a.ndim < 2 or a.shape[-1] != a.shape[-2]:
        raise ValueError(f"{name}: a must be square matrices (..., n, n), got shape {tuple(a.shape)}")
    vector = b.ndim == a.ndim - 1 or b.ndim == 1
    if vector:
        b = fnp.expand_dims(b, -1)
    if b.shape[-2] != a.shape[-1]:
        raise ValueError(f"{name}: b of shape {tuple(b.shape[:-1] if vector else b.shape)} does not match a of "
                         f"shape {tuple(a.shape)}")
    return a, b, vector


def solve_triangular(a, b, trans=0, lower: bool = False, unit_diagonal: bool = False, overwrite_b: bool = False,
                     debug=None, check_finite: bool = True) -> Array:
    """x with op(a) @ x = b, reading only a's lower (lower=True) or upper triangle; trans 0 / 'N',
    1 / 'T' (a's transpose) or 2 / 'C' (its conjugate transpose); unit_diagonal takes the diagonal
    as ones."""
    codes = {0: 0, "N": 0, 1: 1, "T": 1, 2: 2, "C": 2}
    if trans not in codes:
        raise ValueError(f"solve_triangular: trans must be 0, 1, 2, 'N', 'T' or 'C', got {trans!r}")
    a, b, vector = _matrices(a, b, "solve_triangular")
    code = codes[trans]
    if code:
        a = fnp.swapaxes(a, -1, -2) if code == 1 else _mH(a)
        lower = not lower
    x = bind(D.triangular_solve_p, a, b, lower=bool(lower), unit_diagonal=bool(unit_diagonal))
    return x[..., 0] if vector else x


def _lu_packed(a, name: str):
    a = _square(a, name)
    return bind(D.lu_p, a), a.shape[-1]


def _index(row):
    return fnp.astype(fnp.real(row), fnp.int64) if dtypes.is_complex(row.dtype) else fnp.astype(row, fnp.int64)


def lu(a, permute_l: bool = False, overwrite_a: bool = False, check_finite: bool = True, p_indices: bool = False):
    """a = p @ l @ u with partial pivoting (l unit lower, u upper): (p, l, u); p_indices gives p as
    row indices, a = (l @ u)[p]; permute_l returns (p @ l, u)."""
    packed, n = _lu_packed(a, "lu")
    factors = packed[..., :n, :]
    lower = fnp.tril(factors, -1) + fnp.eye(n, dtype=factors.dtype, device=factors.device)
    upper = fnp.triu(factors)
    rows = fnp.argsort(_index(packed[..., n, :]), axis=-1)  # a[i] = (l u)[rows[i]]
    if permute_l:
        return fnp.take_along_axis(lower, fnp.expand_dims(rows, -1), axis=-2), upper
    if p_indices:
        return rows, lower, upper
    p = fnp.astype(fnp.expand_dims(rows, -1) == fnp.arange(n), lower.dtype)
    return p, lower, upper


def lu_factor(a, overwrite_a: bool = False, check_finite: bool = True) -> tuple:
    """(lu, piv) as LAPACK's getrf: l below lu's diagonal, u on and above it; row i was swapped
    with row piv[i] at step i (0-based, int32)."""
    packed, n = _lu_packed(a, "lu_factor")
    return packed[..., :n, :], fnp.astype(_index(packed[..., n + 1, :]), fnp.int32)


def _pivots_to_permutation(piv):
    """The row order that piv's swaps make: (P b)[i] = b[perm[i]]."""
    known = fnp.concrete_or_none(piv)
    n = piv.shape[-1]
    if known is not None:
        perm = np.broadcast_to(np.arange(n), known.shape).copy()
        flat, swaps = perm.reshape(-1, n), known.reshape(-1, n)
        for row in range(flat.shape[0]):
            for j, k in enumerate(swaps[row]):
                flat[row, [j, k]] = flat[row, [k, j]]
        return fnp.asarray(perm, device=piv.device)
    perm = fnp.broadcast_to(fnp.arange(n, dtype=piv.dtype), piv.shape)
    positions = np.arange(n)
    for j in range(n):  # traced pivots: swap entries j and piv[j] by masks
        k = piv[..., j:j + 1]
        at_j, at_k = perm[..., j:j + 1], fnp.take_along_axis(perm, k, axis=-1)
        perm = fnp.where(positions == j, at_k, fnp.where(positions == k, at_j, perm))
    return perm


def lu_solve(lu_and_piv, b, trans=0, overwrite_b: bool = False, check_finite: bool = True) -> Array:
    """x with op(a) @ x = b from lu_factor's (lu, piv); trans 0 / 'N', 1 / 'T' or 2 / 'C'."""
    factors, piv = lu_and_piv
    codes = {0: 0, "N": 0, 1: 1, "T": 1, 2: 2, "C": 2}
    if trans not in codes:
        raise ValueError(f"lu_solve: trans must be 0, 1, 2, 'N', 'T' or 'C', got {trans!r}")
    factors, b, vector = _matrices(factors, b, "lu_solve")
    perm = _pivots_to_permutation(fnp.astype(fnp.asarray(piv), fnp.int64))
    if codes[trans] == 0:  # a = P^T L U: x = U^-1 L^-1 P b
        pb = fnp.take_along_axis(b, fnp.expand_dims(perm, -1), axis=-2) if b.ndim == perm.ndim + 1 else b[..., perm, :]
        y = bind(D.triangular_solve_p, factors, pb, lower=True, unit_diagonal=True)
        x = bind(D.triangular_solve_p, factors, y, lower=False, unit_diagonal=False)
    else:  # op(a) = op(U) op(L) P: x = P^T op(L)^-1 op(U)^-1 b
        op = (lambda m: fnp.swapaxes(m, -1, -2)) if codes[trans] == 1 else _mH
        y = bind(D.triangular_solve_p, op(factors), b, lower=True, unit_diagonal=False)
        z = bind(D.triangular_solve_p, op(factors), y, lower=False, unit_diagonal=True)
        inverse = fnp.argsort(perm, axis=-1)
        x = fnp.take_along_axis(z, fnp.expand_dims(inverse, -1), axis=-2) if z.ndim == inverse.ndim + 1 else \
            z[..., inverse, :]
    return x[..., 0] if vector else x


def cholesky(a, lower: bool = False, overwrite_a: bool = False, check_finite: bool = True) -> Array:
    """The Cholesky factor: upper U with a = U^H U by default (SciPy's), lower L with a = L L^H."""
    factor = _linalg.cholesky(a)
    return factor if lower else _mH(factor)


def cho_factor(a, lower: bool = False, overwrite_a: bool = False, check_finite: bool = True) -> tuple:
    """(c, lower) for cho_solve; c holds the factor, zeros in its other triangle."""
    return cholesky(a, lower=lower), lower


def cho_solve(c_and_lower, b, overwrite_b: bool = False, check_finite: bool = True) -> Array:
    """x with a @ x = b from cho_factor's (c, lower): two triangular solves."""
    c, lower = c_and_lower
    if lower:
        y = solve_triangular(c, b, lower=True)
        return solve_triangular(c, y, trans=2, lower=True)
    y = solve_triangular(c, b, trans=2, lower=False)
    return solve_triangular(c, y, lower=False)


def solve(a, b, lower: bool = False, overwrite_a: bool = False, overwrite_b: bool = False, check_finite: bool = True,
          assume_a: str = "gen") -> Array:
    """x with a @ x = b; assume_a 'gen', 'sym', 'her' (LU) or 'pos' (Cholesky, reading the lower or
    upper triangle as lower says)."""
    if assume_a not in ("gen", "sym", "her", "pos"):
        raise ValueError(f"solve: assume_a must be 'gen', 'sym', 'her' or 'pos', got {assume_a!r}")
    if assume_a == "pos":
        a = fnp.asarray(a)
        full = fnp.tril(a) + _mH(fnp.tril(a, -1)) if lower else fnp.triu(a) + _mH(fnp.triu(a, 1))
        return cho_solve(cho_factor(full, lower=True), b)
    return _linalg.solve(a, b)


def eigh(a, b=None, lower: bool = True, eigvals_only: bool = False, overwrite_a: bool = False,
         overwrite_b: bool = False, turbo: bool = True, eigvals=None, type: int = 1,  # noqa: A002  (SciPy's name)
         check_finite: bool = True):
    """Eigenvalues (ascending) and eigenvectors of a Hermitian a read from its lower (or upper)
    triangle; with b (positive definite), of the generalized problem a v = w b v (type 1), through
    b = L L^H: the standard problem of L^-1 a L^-H, whose vectors map back by L^-H (b-orthonormal)."""
    if eigvals is not None or type != 1:
        raise ValueError("eigh: only type=1 and eigvals=None (all eigenvalues) are supported")
    a = fnp.asarray(a)
    a = fnp.tril(a) + _mH(fnp.tril(a, -1)) if lower else fnp.triu(a) + _mH(fnp.triu(a, 1))
    if b is not None:
        factor = _linalg.cholesky(fnp.asarray(b))
        left = solve_triangular(factor, a, lower=True)  # L^-1 a
        a = _mH(solve_triangular(factor, _mH(left), lower=True))  # L^-1 a L^-H
    w, v = _linalg.eigh(a)
    if b is not None:
        v = solve_triangular(factor, v, trans=2, lower=True)
    return w if eigvals_only else (w, v)


def svd(a, full_matrices: bool = True, compute_uv: bool = True, overwrite_a: bool = False,
        check_finite: bool = True, lapack_driver: str = "gesdd"):
    return _linalg.svd(a, full_matrices=full_matrices, compute_uv=compute_uv)


def qr(a, overwrite_a: bool = False, lwork=None, mode: str = "full", pivoting: bool = False,
       check_finite: bool = True):
    """SciPy's modes: 'full' (Q square), 'economic', 'r' (R alone, as a 1-tuple), 'raw' refused;
    column pivoting is not available (pivoting=True raises)."""
    if pivoting:
        raise ValueError("qr: column pivoting (pivoting=True) is not available in funcgrad")
    modes = {"full": "complete", "economic": "reduced", "r": "r"}
    if mode not in modes:
        raise ValueError(f"qr: mode must be 'full', 'economic' or 'r', got {mode!r}")
    result = _linalg.qr(a, mode=modes[mode])
    return (result,) if mode == "r" else tuple(result)


def block_diag(*arrs) -> Array:
    """The block-diagonal matrix of the arguments (a 0-d one is 1 x 1, a 1-d one a row)."""
    blocks = [fnp.atleast_2d(fnp.asarray(x)) for x in arrs]
    if any(x.ndim != 2 for x in blocks):
        raise ValueError(f"block_diag takes arrays of at most 2 dimensions, got shapes "
                         f"{[tuple(x.shape) for x in blocks]}")
    if not blocks:
        return fnp.zeros((1, 0))
    dtype = blocks[0].dtype
    for x in blocks[1:]:
        dtype = dtypes.promote(dtype, x.dtype)
    columns = sum(x.shape[1] for x in blocks)
    rows, start = [], 0
    for x in blocks:
        rows.append(fnp.pad(fnp.astype(x, dtype), ((0, 0), (start, columns - start - x.shape[1]))))
        start += x.shape[1]
    return fnp.concatenate(rows, axis=0)


def toeplitz(c, r=None) -> Array:
    """The Toeplitz matrix with first column c and first row r (r[0] ignored; conj(c) by default)."""
    c = fnp.ravel(fnp.asarray(c))
    r = fnp.conj(c) if r is None else fnp.ravel(fnp.asarray(r))
    c, r = fnp._common([c, r])
    values = fnp.concatenate([fnp.flip(r[1:]), c])  # r reversed, then c: entry (i, j) is values[n_r - 1 + i - j]
    i = np.arange(c.shape[0])[:, None]
    j = np.arange(r.shape[0])[None, :]
    return fnp.take(values, r.shape[0] - 1 + i - j)


def hilbert(n: int) -> Array:
    """The n x n Hilbert matrix 1 / (i + j + 1)."""
    i = np.arange(n)
    return fnp.asarray(1.0 / (i[:, None] + i[None, :] + 1))


# Higham (2005): the [13/13] Pade approximant's coefficients, and the 1-norm up to which it is
# accurate to double precision without scaling
_PADE13 = (64764752532480000.0, 32382376266240000.0, 7771770303897600.0, 1187353796428800.0, 129060195264000.0,
           10559470521600.0, 670442572800.0, 33522128640.0, 1323241920.0, 40840800.0, 960960.0, 16380.0, 182.0, 1.0)
_THETA13 = 5.371920351148152


def expm(A, *, upper_triangular: bool = False, max_squarings: int = 16) -> Array:  # noqa: N803  (SciPy's name)
    """The matrix exponential by scaling and squaring: A / 2^s with s = max(0, ceil(log2(|A|_1 /
    theta_13))), the [13/13] Pade approximant, squared s times. Under jit s is not known, so
    max_squarings masked squarings run; a matrix that needs more gives NaN, as JAX's."""
    a = fnp._float_arg(A)
    if a.ndim < 2 or a.shape[-1] != a.shape[-2]:
        raise ValueError(f"expm: A must be square matrices (..., n, n), got shape {tuple(a.shape)}")
    n = a.shape[-1]
    norm = fnp.max(fnp.sum(fnp.abs(a), axis=-2), axis=-1)
    needed = fnp.maximum(fnp.ceil(fnp.log2(fnp.maximum(norm, 1e-300) / _THETA13)), 0.0)
    known = fnp.concrete_or_none(needed)
    squarings = int(known.max()) if known is not None and known.size else max_squarings
    scaled = a / fnp.expand_dims(fnp.expand_dims(2.0 ** needed, -1), -1)
    eye = fnp.broadcast_to(fnp.eye(n, dtype=a.dtype, device=a.device), a.shape)
    a2 = scaled @ scaled
    a4 = a2 @ a2
    a6 = a4 @ a2
    b = _PADE13
    u = scaled @ (a6 @ (b[13] * a6 + b[11] * a4 + b[9] * a2) + b[7] * a6 + b[5] * a4 + b[3] * a2 + b[1] * eye)
    v = a6 @ (b[12] * a6 + b[10] * a4 + b[8] * a2) + b[6] * a6 + b[4] * a4 + b[2] * a2 + b[0] * eye
    r = _linalg.solve(v - u, v + u)
    steps = fnp.expand_dims(fnp.expand_dims(needed, -1), -1)
    for k in range(min(squarings, max_squarings)):
        r = fnp.where(steps > k, r @ r, r) if known is None or known.size > 1 else r @ r
    return fnp.where(steps > max_squarings, math.nan, r)


def expm_frechet(A, E, method=None, compute_expm: bool = True, check_finite: bool = True):  # noqa: N803
    """The Frechet derivative of expm at A in the direction E (and expm(A)): the upper right block
    of expm([[A, E], [0, A]])."""
    a, e = fnp._float_args(A, E)
    if a.shape != e.shape:
        raise ValueError(f"expm_frechet: A and E must have one shape, got {tuple(a.shape)} and {tuple(e.shape)}")
    n = a.shape[-1]
    block = fnp.concatenate([fnp.concatenate([a, e], axis=-1),
                             fnp.concatenate([fnp.zeros_like(a), a], axis=-1)], axis=-2)
    big = expm(block)
    frechet = big[..., :n, n:]
    return (big[..., :n, :n], frechet) if compute_expm else frechet


def polar(a, side: str = "right", method: str = "svd"):
    """a = u p (side 'right') or p u ('left') with u unitary and p positive semidefinite, from the SVD."""
    if side not in ("right", "left"):
        raise ValueError(f"polar: side must be 'right' or 'left', got {side!r}")
    if method != "svd":
        raise ValueError(f"polar: method must be 'svd', got {method!r}")
    u, s, vh = _linalg.svd(a, full_matrices=False)
    unitary = u @ vh
    if side == "right":
        return unitary, _mH(vh) @ (s[..., :, None] * vh)
    return unitary, u @ (s[..., :, None] * _mH(u))
