"""Dense linear algebra: solve, triangular_solve, lu, eig, slogdet, cholesky, eigh (batches of
square matrices) and svd.

Every primitive takes float32 or float64 operands of shape (..., n, n) (solve's right-hand side
is (..., n, k); svd's matrices are (..., m, n)) and batches over the leading axes. Rules are
written with primitives, so second derivatives work. The CPU implementations are NumPy's LAPACK
calls (the triangular solve and LU: BLAS products and numba loops, cpu/triangular.py, cpu/lu.py);
a singular or non-positive-definite matrix raises numpy.linalg.LinAlgError there (as PyTorch
raises), while the GPU kernels give inf/NaN (a kernel cannot raise without stalling the device).

Primitives return one array, so slogdet packs (sign, log|det|) along a last axis of 2, eigh
packs the eigenvalues as row 0 above the eigenvector matrix: (..., n + 1, n), and svd packs U,
the singular values and V as rows: (..., m + 1 + n, min(m, n)).
"""
from __future__ import annotations

import numpy as np

from .. import dtypes
from . import elementwise as E
from . import linalg as L
from .core import Primitive, ShapedArray, aval, defjvp, defvjp
from .layout import batch_elementwise, batch_leading, reshape_p, sum_p, transpose_p, unbroadcast
from .shape import concatenate_p, gather_p

LINALG_DTYPES = (np.dtype(np.float32), np.dtype(np.float64), np.dtype(np.complex64), np.dtype(np.complex128))


def _check_dtype(name: str, dtype) -> None:
    if np.dtype(dtype) not in LINALG_DTYPES:
        raise TypeError(f"{name} works on {' or '.join(d.name for d in LINALG_DTYPES)} matrices, got {np.dtype(dtype)}")


def _check_square(name: str, shape, dtype) -> None:
    if len(shape) < 2 or shape[-1] != shape[-2]:
        raise ValueError(f"{name} needs square matrices (..., n, n), got shape {tuple(shape)}")
    _check_dtype(name, dtype)


def _mT(x):
    return transpose_p(x, perm=tuple(range(len(x.shape) - 2)) + (len(x.shape) - 1, len(x.shape) - 2))


def _conj(x):
    return E.conj_p(x) if dtypes.is_complex(x.dtype) else x


def _mH(x):
    """The conjugate transpose (the transpose of a real matrix)."""
    return _conj(_mT(x))


def _real_part(x):
    """Re(x), kept in x's dtype (eigenvalues and singular values travel packed with complex vectors)."""
    return E.convert_p(E.real_p(x), dtype=x.dtype) if dtypes.is_complex(x.dtype) else x


def _eye(n: int, dtype) -> np.ndarray:
    return np.eye(n, dtype=dtype)


def _rows(x, start, stop):
    """x[..., start:stop, :]."""
    return gather_p(x, spec=(("e",), ("s", start, stop, 1), ("s", None, None, None)))


# ---- triangular_solve -------------------------------------------------------------------------------------
def _triangular_solve_shape(a, b, *, lower: bool, unit_diagonal: bool):
    return _solve_shape(a, b, "triangular_solve")


def _triangular_solve_impl(a, b, *, lower: bool, unit_diagonal: bool):
    from ..cpu.triangular import triangular_solve
    _solve_shape(aval(a), aval(b), "triangular_solve")
    return triangular_solve(np.asarray(a), np.asarray(b), lower, unit_diagonal)


triangular_solve_p = Primitive("triangular_solve", _triangular_solve_impl, shape_rule=_triangular_solve_shape,
                               batch_rule=batch_elementwise, cuda="triangular_solve", fresh=True)


def _triangle(x, lower: bool, unit_diagonal: bool):
    """The part of x a triangular solve reads: its lower (upper) triangle, without the diagonal when
    the diagonal is taken as ones."""
    n = x.shape[-1]
    offset = -1 if unit_diagonal else 0
    mask = np.tril(np.ones((n, n)), offset) if lower else np.triu(np.ones((n, n)), -offset)
    return E.mul_p(x, mask.astype(x.dtype))


def _triangular_solve_vjp_b(g, out, a, b, *, lower, unit_diagonal):
    return unbroadcast(triangular_solve_p(_mH(a), g, lower=not lower, unit_diagonal=unit_diagonal), b.shape)


def _triangular_solve_vjp_a(g, out, a, b, *, lower, unit_diagonal):
    gb = triangular_solve_p(_mH(a), g, lower=not lower, unit_diagonal=unit_diagonal)
    return unbroadcast(_triangle(E.neg_p(L.matmul_p(gb, _mH(out))), lower, unit_diagonal), a.shape)


def _triangular_solve_jvp_a(t, out, a, b, *, lower, unit_diagonal):
    return triangular_solve_p(a, E.neg_p(L.matmul_p(_triangle(t, lower, unit_diagonal), out)), lower=lower,
                              unit_diagonal=unit_diagonal)


defvjp(triangular_solve_p, _triangular_solve_vjp_a, _triangular_solve_vjp_b)
defjvp(triangular_solve_p, _triangular_solve_jvp_a,
       lambda t, out, a, b, *, lower, unit_diagonal: triangular_solve_p(a, t, lower=lower, unit_diagonal=unit_diagonal))


# ---- lu -----------------------------------------------------------------------------------------------
def _lu_shape(a):
    _check_square("lu", a.shape, a.dtype)
    n = a.shape[-1]
    return ShapedArray(tuple(a.shape[:-2]) + (n + 2, n), a.dtype)


def _lu_impl(a):
    from ..cpu.lu import lu, permutation
    _lu_shape(aval(a))
    factors, pivots = lu(np.asarray(a))
    rows = lambda x: np.expand_dims(x.astype(a.dtype), -2)  # noqa: E731
    return np.concatenate([factors, rows(permutation(pivots)), rows(pivots)], axis=-2)


# P a = L U with partial pivoting, packed (..., n + 2, n): L below the diagonal (its unit diagonal
# implied) and U on and above it, then the row order perm ((P a)[i] = a[perm[i]]) and LAPACK's
# pivots (row j swapped with pivots[j] at step j), as values of a's dtype
lu_p = Primitive("lu", _lu_impl, shape_rule=_lu_shape, batch_rule=batch_leading, cuda="lu", fresh=True)


def _lu_parts(out, n: int):
    """L (unit lower), U (upper) and the permutation matrix P of lu_p's packed output."""
    factors = _rows(out, 0, n)
    unit = _triangle(factors, True, True)
    lower = E.add_p(unit, _eye(n, out.dtype))
    upper = _triangle(factors, False, False)
    perm = _rows(out, n, n + 1)  # (..., 1, n): P[i, j] = (perm[i] == j)
    p = E.convert_p(E.eq_p(_mT(perm), np.arange(n, dtype=out.dtype)), dtype=out.dtype)
    return lower, upper, p


def _lu_vjp(g, out, a):
    """With F = L^-1 P da U^-1: dL = L tril_-1(F), dU = triu(F) U; so F's cotangent is
    tril_-1(L^H gL) + triu(gU U^H) and a's is P^T L^-H Fbar U^-H."""
    n = a.shape[-1]
    lower, upper, p = _lu_parts(out, n)
    g_factors = _rows(g, 0, n)
    f_bar = E.add_p(_triangle(L.matmul_p(_mH(lower), _triangle(g_factors, True, True)), True, True),
                    _triangle(L.matmul_p(_triangle(g_factors, False, False), _mH(upper)), False, False))
    x = triangular_solve_p(_mH(lower), f_bar, lower=False, unit_diagonal=True)  # L^-H Fbar
    y = _mH(triangular_solve_p(upper, _mH(x), lower=False, unit_diagonal=False))  # (U^-1 X^H)^H = X U^-H
    return L.matmul_p(_mT(p), y)


def _lu_jvp(t, out, a):
    n = a.shape[-1]
    lower, upper, p = _lu_parts(out, n)
    left = triangular_solve_p(lower, L.matmul_p(p, t), lower=True, unit_diagonal=True)  # L^-1 P da
    f = _mH(triangular_solve_p(_mH(upper), _mH(left), lower=True, unit_diagonal=False))  # ... U^-1
    d_factors = E.add_p(L.matmul_p(lower, _triangle(f, True, True)), L.matmul_p(_triangle(f, False, False), upper))
    return concatenate_p(d_factors, E.mul_p(_rows(out, n, n + 2), 0.0), axis=len(out.shape) - 2)


defvjp(lu_p, _lu_vjp)
defjvp(lu_p, _lu_jvp)


# ---- eig -----------------------------------------------------------------------------------------------
def _eig_shape(a):
    _check_square("eig", a.shape, a.dtype)
    n = a.shape[-1]
    return ShapedArray(tuple(a.shape[:-2]) + (n + 1, n), dtypes.complex_dtype(a.dtype))


def _eig_impl(a):
    out = _eig_shape(aval(a))
    values, vectors = np.linalg.eig(a)
    return np.concatenate([values[..., None, :], vectors], axis=-2).astype(out.dtype)


# The eigenvalues (row 0) and unit eigenvectors (columns below) of general square matrices, complex:
# LAPACK's geev on the CPU; there is no GPU kernel (JAX's eig is CPU-only too). Its derivatives
# are funcgrad.numpy.linalg.eig's custom rule: reaching the primitive itself raises.
eig_p = Primitive("eig", _eig_impl, shape_rule=_eig_shape, batch_rule=batch_leading, cuda="eig", fresh=True)
defvjp(eig_p, None)
defjvp(eig_p, None)


# ---- solve -------------------------------------------------------------------------------------------
def _solve_shape(a, b, name: str = "solve"):
    (a_shape, a_dtype), (b_shape, b_dtype) = (a.shape, a.dtype), (b.shape, b.dtype)
    _check_square(name, a_shape, a_dtype)
    if len(b_shape) < 2 or b_shape[-2] != a_shape[-1]:
        raise ValueError(f"{name}: right-hand side of shape {tuple(b_shape)} does not match matrices of shape "
                         f"{tuple(a_shape)}")
    if np.dtype(b_dtype) != np.dtype(a_dtype):
        raise TypeError(f"{name}: matrix dtype {a_dtype} and right-hand side dtype {b_dtype} differ")
    return ShapedArray(np.broadcast_shapes(a_shape[:-2], b_shape[:-2]) + tuple(b_shape[-2:]), a_dtype)


def _solve_impl(a, b):
    _solve_shape(aval(a), aval(b))
    return np.linalg.solve(a, b).astype(a.dtype, copy=False)


solve_p = Primitive("solve", _solve_impl, shape_rule=_solve_shape, batch_rule=batch_elementwise, cuda="solve")


def _solve_vjp_b(g, out, a, b):
    return unbroadcast(solve_p(_mT(a), g), b.shape)


def _solve_vjp_a(g, out, a, b):
    gb = solve_p(_mT(a), g)
    return unbroadcast(E.neg_p(L.matmul_p(gb, _mT(out))), a.shape)


defvjp(solve_p, _solve_vjp_a, _solve_vjp_b)
defjvp(solve_p, lambda t, out, a, b: solve_p(a, E.neg_p(L.matmul_p(t, out))), lambda t, out, a, b: solve_p(a, t))


def inverse_transpose(a):
    """inv(a).T, batched, as a solve against the identity."""
    n = a.shape[-1]
    # a NumPy constant, not a bound broadcast (that would be a CPU Array beside a's device data)
    return solve_p(_mT(a), np.broadcast_to(_eye(n, a.dtype), tuple(a.shape)))


# ---- slogdet -----------------------------------------------------------------------------------------------
def _slogdet_shape(a):
    _check_square("slogdet", a.shape, a.dtype)
    return ShapedArray(a.shape[:-2] + (2,), a.dtype)


def _slogdet_impl(a):
    _check_square("slogdet", a.shape, a.dtype)
    sign, logdet = np.linalg.slogdet(a)
    return np.stack([sign, logdet], axis=-1).astype(a.dtype, copy=False)


slogdet_p = Primitive("slogdet", _slogdet_impl, shape_rule=_slogdet_shape, batch_rule=batch_leading, cuda="slogdet")


# With l = log det a (holomorphic, dl = tr(a^-1 da)): log|det| = Re l and sign = exp(i Im l), so
# d sign = i sign Im(dl) for complex matrices (and 0 for real ones, whose sign is piecewise constant).
def _slogdet_vjp(g, out, a):
    part = lambda x, i: gather_p(x, spec=(("e",), ("i", i)))  # noqa: E731
    g_l = part(g, 1)
    if dtypes.is_complex(a.dtype):  # l's cotangent: g_logdet - i Re(g_sign i sign) (JAX's convention)
        g_l = E.sub_p(E.real_p(g_l), E.mul_p(E.real_p(E.mul_p(part(g, 0), E.mul_p(part(out, 0), 1j))), 1j))
    return E.mul_p(reshape_p(g_l, shape=tuple(g_l.shape) + (1, 1)), inverse_transpose(a))


def _slogdet_jvp(t, out, a):
    n = a.shape[-1]
    trace = sum_p(E.mul_p(solve_p(a, t), _eye(n, a.dtype)), axes=(len(a.shape) - 2, len(a.shape) - 1), keepdims=False)
    sign = gather_p(out, spec=(("e",), ("i", 0)))
    if dtypes.is_complex(a.dtype):
        d_sign, d_logdet = E.mul_p(E.mul_p(sign, 1j), E.imag_p(trace)), E.real_p(trace)
        d_logdet = E.convert_p(d_logdet, dtype=a.dtype)
    else:
        d_sign, d_logdet = E.mul_p(trace, 0.0), trace
    column = lambda x: reshape_p(x, shape=tuple(x.shape) + (1,))  # noqa: E731
    return concatenate_p(column(d_sign), column(d_logdet), axis=len(trace.shape))


defvjp(slogdet_p, _slogdet_vjp)
defjvp(slogdet_p, _slogdet_jvp)


# ---- cholesky --------------------------------------------------------------------------------------------------
def _cholesky_shape(a):
    _check_square("cholesky", a.shape, a.dtype)
    return a


def _cholesky_impl(a):
    _check_square("cholesky", a.shape, a.dtype)
    return np.linalg.cholesky(a).astype(a.dtype, copy=False)


cholesky_p = Primitive("cholesky", _cholesky_impl, shape_rule=_cholesky_shape, batch_rule=batch_leading,
                       cuda="cholesky")


def _phi(x):
    """The lower triangle with its diagonal halved (the Cholesky derivative's projection)."""
    n = x.shape[-1]
    mask = np.tril(np.ones((n, n), x.dtype)) - 0.5 * np.eye(n, dtype=x.dtype)
    return E.mul_p(x, mask)


# a = L L^H. The JVP is dL = L phi(L^-1 dA L^-H); its transpose (JAX's convention, so plain transposes
# where the JVP is complex-linear) is L^-T phi(L^T gL) conj(L)^-1 (Murray 2016 for real matrices),
# made Hermitian as the input is.
def _cholesky_vjp(g, out, a):
    lower = out
    p = _phi(L.matmul_p(_mT(lower), g))
    y = solve_p(_mT(lower), p)                       # L^-T P
    s = _mT(solve_p(_mT(_conj(lower)), _mT(y)))       # (conj(L)^-T (L^-T P)^T)^T = L^-T P conj(L)^-1
    return E.mul_p(E.add_p(s, _mH(s)), 0.5)


def _cholesky_jvp(t, out, a):
    lower = out
    z = solve_p(lower, t)                      # L^-1 dA
    w = _mH(solve_p(lower, _mH(z)))            # L^-1 dA L^-H
    return L.matmul_p(lower, _phi(w))


defvjp(cholesky_p, _cholesky_vjp)
defjvp(cholesky_p, _cholesky_jvp)


# ---- eigh -----------------------------------------------------------------------------------------------------------
def _eigh_shape(a):
    _check_square("eigh", a.shape, a.dtype)
    return ShapedArray(a.shape[:-2] + (a.shape[-1] + 1, a.shape[-1]), a.dtype)


def _eigh_impl(a):
    _check_square("eigh", a.shape, a.dtype)
    w, v = np.linalg.eigh(a)
    return np.concatenate([w[..., None, :], v], axis=-2).astype(a.dtype, copy=False)


eigh_p = Primitive("eigh", _eigh_impl, shape_rule=_eigh_shape, batch_rule=batch_leading, cuda="eigh")


def _eigh_parts(packed):
    n = packed.shape[-1]
    w = gather_p(packed, spec=(("e",), ("i", 0), ("s", None, None, None)))
    return w, _rows(packed, 1, n + 1)


def _gaps(w):
    """F[i, j] = 1 / (w[j] - w[i]) off the diagonal, 0 on it (inf for repeated eigenvalues, as JAX)."""
    n = w.shape[-1]
    diff = E.sub_p(reshape_p(w, shape=tuple(w.shape[:-1]) + (1, n)),
                   reshape_p(w, shape=tuple(w.shape[:-1]) + (n, 1)))
    off = ~np.eye(n, dtype=bool)
    safe = E.select_p(off, diff, np.ones((), w.dtype))
    return E.select_p(off, E.reciprocal_p(safe), np.zeros((), w.dtype))


def _diag_embed(w):
    n = w.shape[-1]
    return E.mul_p(reshape_p(w, shape=tuple(w.shape[:-1]) + (1, n)), _eye(n, w.dtype))


# a = V diag(w) V^H with real w. JVP: M = V^H dA V, dw = Re diag(M), dV = V (F o M); its transpose:
# conj(V) (diag(gw) + F o (V^T gV)) V^T (for real matrices, Giles' V (...) V^T). Where V^T gV is 0 (the
# eigenvectors unused: eigvalsh) the term is 0, not inf * 0 at repeated eigenvalues: the eigenvalues'
# gradient V diag(gw) V^T is defined there (PyTorch's eigvalsh, JAX's symbolic zero).
def _eigh_vjp(g, out, a):
    w, v = _eigh_parts(out)
    gw, gv = _eigh_parts(g)
    rotated = L.matmul_p(_mT(v), gv)
    zero = np.zeros((), rotated.dtype)
    vectors = E.select_p(E.eq_p(rotated, zero), zero, E.mul_p(_gaps(w), rotated))
    inner = E.add_p(_diag_embed(_real_part(gw)), vectors)
    return L.matmul_p(L.matmul_p(_conj(v), inner), _mT(v))


def _eigh_jvp(t, out, a):
    w, v = _eigh_parts(out)
    m = L.matmul_p(L.matmul_p(_mH(v), t), v)
    n = w.shape[-1]
    dw = _real_part(sum_p(E.mul_p(m, _eye(n, w.dtype)), axes=(len(m.shape) - 2,), keepdims=True))
    dv = L.matmul_p(v, E.mul_p(_gaps(w), m))
    return concatenate_p(dw, dv, axis=len(m.shape) - 2)


defvjp(eigh_p, _eigh_vjp)
defjvp(eigh_p, _eigh_jvp)


# ---- svd ---------------------------------------------------------------------------------------------------
# The reduced SVD a = U diag(s) V^H of (..., m, n) matrices, k = min(m, n), s descending. With
# compute_uv it packs U (m rows), s (one row, in a's dtype) and V (n rows) as (..., m + 1 + n, k);
# without, it is s alone, (..., k) of the real dtype, whose derivatives stay finite where singular
# values repeat.
def _svd_shape(a, *, compute_uv):
    if len(a.shape) < 2:
        raise ValueError(f"svd needs matrices (..., m, n), got shape {tuple(a.shape)}")
    _check_dtype("svd", a.dtype)
    m, n = a.shape[-2:]
    k = min(m, n)
    if compute_uv:
        return ShapedArray(a.shape[:-2] + (m + 1 + n, k), a.dtype)
    return ShapedArray(a.shape[:-2] + (k,), dtypes.real_dtype(np.dtype(a.dtype)))


def _svd_impl(a, compute_uv):
    out = _svd_shape(aval(a), compute_uv=compute_uv)
    if not compute_uv:
        return np.linalg.svd(a, compute_uv=False).astype(out.dtype, copy=False)
    u, s, vh = np.linalg.svd(a, full_matrices=False)
    return np.concatenate([u, s[..., None, :], np.conj(np.swapaxes(vh, -1, -2))], axis=-2).astype(a.dtype, copy=False)


svd_p = Primitive("svd", _svd_impl, shape_rule=_svd_shape, batch_rule=batch_leading, cuda="svd")


def svd_parts(packed, m: int):
    """(U, s, V) of svd_p's packed output for matrices of m rows."""
    s = gather_p(packed, spec=(("e",), ("i", m), ("s", None, None, None)))
    return _rows(packed, 0, m), s, _rows(packed, m + 1, packed.shape[-2])


def _row(v):
    return reshape_p(v, shape=tuple(v.shape[:-1]) + (1, v.shape[-1]))


def _column(v):
    return reshape_p(v, shape=tuple(v.shape) + (1,))


def _safe_inverse(s):
    """1 / s, 0 where s is 0 (a rank-deficient matrix's missing directions get no gradient)."""
    zero = E.eq_p(s, 0)
    return E.select_p(zero, np.zeros((), s.dtype), E.reciprocal_p(E.select_p(zero, np.ones((), s.dtype), s)))


def _svd_gaps(s):
    """F[i, j] = 1 / (s_j^2 - s_i^2) off the diagonal, 0 on it (inf for repeated values, as JAX and PyTorch)."""
    return _gaps(E.mul_p(s, s))


def _off_span(x, q):
    """x minus its projection on the span of q's orthonormal columns: (I - q q^H) x."""
    return E.sub_p(x, L.matmul_p(q, L.matmul_p(_mH(q), x)))


def _imaginary_diagonal(x, s_inv):
    """i Im(diag(x)) / s as a diagonal matrix: the phase freedom of complex singular vectors (0 for real)."""
    k = x.shape[-1]
    return E.mul_p(E.mul_p(E.sub_p(x, _mH(x)), 0.5), E.mul_p(_row(s_inv), _eye(k, x.dtype)))


# The forward rule is JAX's; the reverse rule its transpose (Townsend 2016 for real matrices):
# conj(U) [diag(gs) + ((J - J^H) o F) S + S ((K - K^H) o F) + i Im diag(J) / S] V^T, J = U^T gU,
# K = V^T gV, plus the parts of gU and gV outside the spans of U and V when a is not square.
def _svd_vjp(g, out, a, compute_uv):
    m, n = a.shape[-2:]
    if not compute_uv:  # d s_i = Re(u_i^H dA v_i)
        u, _, v = svd_parts(svd_p(a, compute_uv=True), m)
        return L.matmul_p(E.mul_p(_conj(u), _row(g)), _mT(v))
    u, s, v = svd_parts(out, m)
    gu, gs, gv = svd_parts(g, m)
    f, s_inv = _svd_gaps(s), _safe_inverse(s)
    j, k = L.matmul_p(_mT(u), gu), L.matmul_p(_mT(v), gv)
    inner = E.add_p(E.add_p(E.mul_p(E.mul_p(f, E.sub_p(j, _mH(j))), _row(s)), _diag_embed(_real_part(gs))),
                    E.mul_p(_column(s), E.mul_p(f, E.sub_p(k, _mH(k)))))
    if dtypes.is_complex(a.dtype):
        inner = E.add_p(inner, _imaginary_diagonal(j, s_inv))
    grad = L.matmul_p(L.matmul_p(_conj(u), inner), _mT(v))
    if m > n:  # (I - conj(U) U^T) gU S^-1 V^T
        grad = E.add_p(grad, L.matmul_p(_off_span(E.mul_p(gu, _row(s_inv)), _conj(u)), _mT(v)))
    if n > m:  # conj(U) ((I - conj(V) V^T) gV S^-1)^H
        grad = E.add_p(grad, L.matmul_p(_conj(u), _mH(_off_span(E.mul_p(gv, _row(s_inv)), _conj(v)))))
    return grad


def _svd_jvp(t, out, a, compute_uv):
    m, n = a.shape[-2:]
    packed = out if compute_uv else svd_p(a, compute_uv=True)
    u, s, v = svd_parts(packed, m)
    ds_full = L.matmul_p(L.matmul_p(_mH(u), t), v)
    k = s.shape[-1]
    diagonal = sum_p(E.mul_p(ds_full, _eye(k, s.dtype)), axes=(len(ds_full.shape) - 2,), keepdims=True)
    if not compute_uv:  # the real dtype's singular values
        ds = reshape_p(diagonal, shape=tuple(s.shape))
        return E.real_p(ds) if dtypes.is_complex(ds.dtype) else ds
    ds = _real_part(diagonal)
    f, s_inv = _svd_gaps(s), _safe_inverse(s)
    ds_s, s_ds = E.mul_p(ds_full, _row(s)), E.mul_p(_column(s), ds_full)
    du = L.matmul_p(u, E.mul_p(f, E.add_p(ds_s, _mH(ds_s))))
    if dtypes.is_complex(a.dtype):
        du = E.add_p(du, L.matmul_p(u, _imaginary_diagonal(ds_full, s_inv)))
    dv = L.matmul_p(v, E.mul_p(f, E.add_p(s_ds, _mH(s_ds))))
    if m > n:
        du = E.add_p(du, E.mul_p(_off_span(L.matmul_p(t, v), u), _row(s_inv)))
    if n > m:
        dv = E.add_p(dv, E.mul_p(_off_span(L.matmul_p(_mH(t), u), v), _row(s_inv)))
    return concatenate_p(du, ds, dv, axis=len(ds.shape) - 2)


defvjp(svd_p, _svd_vjp)
defjvp(svd_p, _svd_jvp)
