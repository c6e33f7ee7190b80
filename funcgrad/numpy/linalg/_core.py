"""fnp.linalg's decompositions and solvers (solve, inv, det, slogdet, cholesky, eigh, eig, qr, svd,
pinv, lstsq, matrix_rank) and products; the norms are _norms.py. See the package's docstring."""
from __future__ import annotations

import operator
from typing import NamedTuple, Sequence

import numpy as np

from ... import dtypes
from ...custom import custom_jvp
from ...errors import ShapeError
from ...ops import decompositions as D
from ...ops.reductions import prod_of_others
from ...trace import bind
from .. import _base as fnp
from .. import _shapes, _signal

__all__ = ["solve", "inv", "det", "slogdet", "cholesky", "eigh", "qr", "QRResult", "eigvalsh", "svd", "svdvals",
           "SVDResult", "pinv", "lstsq", "matrix_rank", "matrix_power",
           "multi_dot", "matmul", "outer", "cross", "tensordot", "trace", "diagonal", "vecdot",
           "matrix_transpose", "tensorinv", "tensorsolve", "SlogdetResult", "EighResult", "LinAlgError", "eig",
           "eigvals", "EigResult"]

LinAlgError = np.linalg.LinAlgError  # what a singular or indefinite matrix raises on the CPU


class SlogdetResult(NamedTuple):
    sign: object
    logabsdet: object


class EighResult(NamedTuple):
    eigenvalues: object
    eigenvectors: object


def _matrices(a, name: str):
    """a as matrices (..., m, n) of a dtype LAPACK has (float32/64, complex64/128: integers and half
    floats compute in float32), and the dtype to give results back in."""
    a = fnp.asarray(a)
    if a.ndim < 2:
        raise ShapeError(f"{name} needs matrices of shape (..., m, n), got shape {a.shape}")
    original = a.dtype if dtypes.is_inexact(a.dtype) else dtypes.default_float
    return (a if a.dtype in D.LINALG_DTYPES else fnp.astype(a, dtypes.float32)), original


def _square(a, name: str):
    """_matrices, square: (..., n, n)."""
    a = fnp.asarray(a)
    if a.ndim < 2 or a.shape[-1] != a.shape[-2]:
        raise ShapeError(f"{name} needs square matrices of shape (..., n, n), got shape {a.shape}")
    return _matrices(a, name)


def _with_rhs(a, dtype, b):
    """(a, dtype, b) with b in a's dtype; a complex right-hand side makes a real system complex."""
    b = fnp._arrays(a, b)[1]
    if dtypes.is_complex(b.dtype) and not dtypes.is_complex(a.dtype):
        a, dtype = fnp.astype(a, dtypes.complex_dtype(a.dtype)), dtypes.complex_dtype(dtype)
    return a, dtype, fnp.astype(b, a.dtype)


def _back(x, dtype):
    return x if x.dtype == dtype else fnp.astype(x, dtype)


def solve(a, b, *, left: bool = True):
    """x with a @ x = b, or with left=False x @ a = b (torch.linalg.solve's). b is a vector (or batch
    of vectors) when b.ndim == 1 or b.shape == a.shape[:-1] (PyTorch's rule), else a batch of (n, k)
    matrices ((k, n) with left=False)."""
    a, dtype, b = _with_rhs(*_square(a, "solve"), b)
    vector = b.ndim == 1 or (b.ndim == a.ndim - 1 and b.shape == a.shape[:-1])
    if b.shape[-1 if vector or not left else -2] != a.shape[-1]:
        raise ShapeError(f"solve: right-hand side of shape {b.shape} does not match matrices of shape {a.shape}"
                         f"{'' if left else ' (left=False: x @ a = b)'}")
    if not left:  # x a = b is a^T x^T = b^T
        a, b = fnp.swapaxes(a, -1, -2), b if vector else fnp.swapaxes(b, -1, -2)
    x = bind(D.solve_p, a, fnp.expand_dims(b, -1) if vector else b)
    return _back(fnp.squeeze(x, -1) if vector else x if left else fnp.swapaxes(x, -1, -2), dtype)


def inv(a):
    a, dtype = _square(a, "inv")
    eye = fnp.broadcast_to(fnp.eye(a.shape[-1], dtype=a.dtype, device=a.device), a.shape)
    return _back(bind(D.solve_p, a, eye), dtype)


def tensorinv(a, ind: int = 2):
    """The inverse of a as a map from its first ind axes to the rest: tensordot(tensorinv(a), a, ind)
    is the identity on a.shape[ind:] (NumPy's)."""
    a = fnp.asarray(a)
    rows, cols = a.shape[:ind], a.shape[ind:]
    if ind <= 0 or int(np.prod(rows, dtype=np.int64)) != int(np.prod(cols, dtype=np.int64)):
        raise ShapeError(f"tensorinv: ind={ind} must split shape {a.shape} into two parts of equal size")
    n = int(np.prod(rows, dtype=np.int64))
    return fnp.reshape(inv(fnp.reshape(a, (n, n))), cols + rows)


def tensorsolve(a, b, axes=None):
    """x with tensordot(a, x, x.ndim) == b, x of shape a.shape[b.ndim:] (NumPy's); axes of a move to
    the end first."""
    a, b = fnp.asarray(a), fnp.asarray(b)
    if axes is not None:
        moved = [ax % a.ndim for ax in axes]
        a = fnp.transpose(a, [ax for ax in range(a.ndim) if ax not in moved] + moved)
    x_shape = a.shape[b.ndim:]
    n, m = int(np.prod(b.shape, dtype=np.int64)), int(np.prod(x_shape, dtype=np.int64))
    if a.shape[:b.ndim] != b.shape or n != m:
        raise ShapeError(f"tensorsolve: a of shape {a.shape} does not map a square system onto b of shape {b.shape}")
    return fnp.reshape(solve(fnp.reshape(a, (n, m)), fnp.ravel(b)), x_shape)


def slogdet(a) -> SlogdetResult:
    a, dtype = _square(a, "slogdet")
    packed = bind(D.slogdet_p, a)
    return SlogdetResult(_back(packed[..., 0], dtype), _back(fnp.real(packed[..., 1]), dtypes.real_dtype(dtype)))


def det(a):
    a, dtype = _square(a, "det")
    return _back(_det(a), dtype)


@custom_jvp
def _det(a):
    packed = bind(D.slogdet_p, a)
    return packed[..., 0] * fnp.exp(packed[..., 1])


@_det.defjvp
def _det_jvp(primals, tangents):
    """d det = trace(adj(a) da), the cofactor matrix's gradient (PyTorch's and JAX's), which exists
    at singular matrices too. Where a is invertible adj(a) = det(a) a^-1 (a solve); where det is 0
    the adjugate comes from the SVD a = U S Vh: det(U) det(Vh) Vh^H diag(prod_{j != i} s_j) U^H, true
    at every rank. Each branch reads a stand-in where the other one applies (the identity, a
    diagonal of distinct values), so neither a singular solve nor a degenerate SVD puts NaN into the
    derivative or the ones above it. Values known to be nonzero (eager, on the CPU) skip the SVD."""
    (a,), (da,) = primals, tangents
    out = _det(a)
    n = a.shape[-1]
    if n == 0:
        return out, fnp.zeros_like(out)
    known = fnp.concrete_or_none(out)
    if known is not None and np.all(known != 0):
        return out, out * trace(solve(a, da))
    singular = fnp.expand_dims(fnp.equal(out, 0), (-2, -1))
    eye = fnp._placed(fnp.asarray(np.eye(n, dtype=a.dtype)), a.device)
    regular = out * trace(solve(fnp.where(singular, eye, a), da))
    u, s, vh = svd(fnp.where(singular, a, eye * np.arange(1, n + 1, dtype=a.dtype)), full_matrices=False)
    others = prod_of_others(s, (s.ndim - 1,))  # prod_{j != i} s_j
    phase = fnp.expand_dims(_det(u) * _det(vh), (-2, -1))
    adjugate = phase * fnp.matmul(_mH(vh) * fnp.expand_dims(others, -2), _mH(u))
    return out, fnp.where(fnp.squeeze(singular, (-2, -1)), fnp.sum(matrix_transpose(adjugate) * da, axis=(-2, -1)),
                          regular)


def _mH(a):
    """The conjugate transpose of the last two axes."""
    return fnp.conj(fnp.swapaxes(a, -1, -2))


def _symmetrize(a):
    """(a + a^H) / 2: the Hermitian part."""
    return (a + _mH(a)) * 0.5


def cholesky(a, *, upper: bool = False, symmetrize_input: bool = True):
    """The lower (or upper) triangular L with a = L @ L^H. The input is made Hermitian first (JAX's
    default), so the gradient is too. Not positive definite: LinAlgError on the CPU, NaN on a GPU."""
    a, dtype = _square(a, "cholesky")
    lower = bind(D.cholesky_p, _symmetrize(a) if symmetrize_input else a)
    return _back(_mH(lower) if upper else lower, dtype)


def eigh(a, UPLO: str | None = None, symmetrize_input: bool = True) -> EighResult:  # noqa: N803  (NumPy's name)
    """Eigenvalues (ascending, real) and eigenvectors (columns) of symmetric or Hermitian matrices:
    of (a + a^H) / 2 by default (JAX's), of the triangle UPLO names where one is given (NumPy's and
    PyTorch's: an explicit 'U' must not be overridden by the lower half)."""
    a, dtype = _square(a, "eigh")
    if UPLO not in (None, "L", "U"):
        raise ValueError(f"UPLO must be 'L' or 'U', got {UPLO!r}")
    if symmetrize_input and UPLO is None:
        a = _symmetrize(a)
    elif UPLO == "U":
        a = fnp.triu(a) + _mH(fnp.triu(a, 1))
    else:
        a = fnp.tril(a) + _mH(fnp.tril(a, -1))
    packed = bind(D.eigh_p, a)
    return EighResult(_back(fnp.real(packed[..., 0, :]), dtypes.real_dtype(dtype)), _back(packed[..., 1:, :], dtype))


def eigvalsh(a, UPLO: str | None = None):  # noqa: N803
    return eigh(a, UPLO).eigenvalues


class EigResult(NamedTuple):
    eigenvalues: object
    eigenvectors: object


@custom_jvp
def _eig(a):
    packed = bind(D.eig_p, a)
    return packed[..., 0, :], packed[..., 1:, :]


@_eig.defjvp
def _eig_jvp(primals, tangents):
    """With a = V diag(w) V^-1 and D = V^-1 da V: dw = diag(D), dV = V (F * D) with F[i, j] =
    1 / (w_j - w_i) off the diagonal, less V's own direction so each column keeps unit norm (JAX's
    rule; reverse mode transposes it)."""
    (a,), (da,) = primals, tangents
    w, v = _eig(a)
    da = fnp.astype(da, v.dtype)
    projected = solve(v, da) @ v
    n = w.shape[-1]
    eye = np.eye(n, dtype=bool)
    gaps = fnp.expand_dims(w, -2) - fnp.expand_dims(w, -1)
    f = fnp.where(eye, 0.0, 1.0 / fnp.where(eye, 1.0, gaps))
    dv = v @ (f * projected)
    dv = dv - v * fnp.real(fnp.sum(fnp.conj(v) * dv, axis=-2, keepdims=True))
    return (w, v), (diagonal(projected), dv)


def eig(a) -> EigResult:
    """Eigenvalues and unit eigenvectors (columns) of general square matrices, complex (LAPACK's
    geev; CPU only, as JAX's). Differentiable where the eigenvalues are distinct."""
    a, _ = _square(a, "eig")
    values, vectors = _eig(a)
    return EigResult(values, vectors)


@custom_jvp
def _eigvals(a):
    return bind(D.eig_p, a)[..., 0, :]


@_eigvals.defjvp
def _eigvals_jvp(primals, tangents):
    """dw = diag(V^-1 da V) alone: no eigengap, so repeated eigenvalues of a diagonalisable matrix have
    a derivative (PyTorch's; eig's rule would multiply the unused vectors' zero cotangent by inf)."""
    (a,), (da,) = primals, tangents
    w, v = _eig(a)
    return w, diagonal(solve(v, fnp.astype(da, v.dtype)) @ v)


def eigvals(a):
    """The eigenvalues of general square matrices, complex (see eig); differentiable wherever the
    matrix is diagonalisable, repeated eigenvalues included."""
    a, _ = _square(a, "eigvals")
    return _eigvals(a)


class QRResult(NamedTuple):
    Q: object
    R: object


def _phase(p):
    """p / |p| (1 at 0) for complex p; the sign (1 at 0) for real p."""
    if dtypes.is_complex(p.dtype):
        size = fnp.abs(p)
        zero = fnp.equal(size, 0)
        return fnp.where(zero, np.ones((), p.dtype), p / fnp.where(zero, np.ones((), size.dtype), size))
    return fnp.where(p >= 0, 1.0, -1.0)


def _scaled_norm(x):
    """The 2-norm along the last axis, scaled by the largest magnitude first (as LAPACK's nrm2), so
    squares of large float32 entries do not overflow."""
    scale = fnp.stop_gradient(fnp.max(fnp.abs(x), axis=-1, keepdims=True))
    scale = fnp.where(scale > 0, scale, 1.0)
    return fnp.squeeze(scale, -1) * fnp.sqrt(fnp.sum(fnp._abs_squared(x / scale), axis=-1))


def qr(a, mode: str = "reduced"):
    """a = Q @ R with Q orthonormal (unitary) columns and R upper triangular (mode 'reduced',
    'complete' or 'r'), by Householder reflections: min(m, n) rank-one updates, each
    differentiable. Real matrices get LAPACK's signs; complex ones a complex diagonal of R (the
    reflection keeps the pivot's phase), a QR as valid as LAPACK's real-diagonal one."""
    if mode not in ("reduced", "complete", "r"):
        raise ValueError(f"qr mode must be 'reduced', 'complete' or 'r', got {mode!r}")
    a = fnp.asarray(a)
    if a.ndim < 2:
        raise ShapeError(f"qr needs matrices of shape (..., m, n), got shape {a.shape}")
    dtype = a.dtype if dtypes.is_inexact(a.dtype) else dtypes.default_float
    r = a if a.dtype in D.LINALG_DTYPES else fnp.astype(a, dtypes.float32)
    m, n = r.shape[-2:]
    k = min(m, n)
    q = fnp.broadcast_to(fnp.eye(m, dtype=r.dtype, device=r.device), r.shape[:-2] + (m, m))
    rows = np.arange(m)
    for j in range(k):
        below = fnp._placed(fnp.asarray((rows >= j).astype(r.dtype)), r.device)  # rows j.. of column j
        unit = fnp._placed(fnp.asarray((rows == j).astype(r.dtype)), r.device)
        x = r[..., :, j] * below
        pivot = r[..., j, j]
        x_norm = _scaled_norm(x)
        v = x - fnp.expand_dims(-_phase(pivot) * x_norm, -1) * unit
        # nothing below the diagonal: no reflection, as LAPACK (R keeps the entry's own sign)
        reflect = x_norm > fnp.abs(pivot)
        u = v / fnp.expand_dims(fnp.where(reflect, _scaled_norm(v), 1.0), -1)  # H = I - 2 u u^H
        col, row = fnp.expand_dims(u, -1), fnp.expand_dims(fnp.conj(u), -2)
        reflect = fnp.expand_dims(fnp.expand_dims(reflect, -1), -1)
        # where no reflection is taken, nothing is computed either (0 * inf would put NaN in R)
        r = fnp.where(reflect, r - 2.0 * col * fnp.matmul(row, r), r)
        q = fnp.where(reflect, q - 2.0 * fnp.matmul(q, col) * row, q)
    r = fnp.triu(r)  # exact zeros below the diagonal
    if mode == "r":
        return _back(r[..., :k, :], dtype)
    if mode == "reduced":
        q, r = q[..., :, :k], r[..., :k, :]
    return QRResult(_back(q, dtype), _back(r, dtype))


class SVDResult(NamedTuple):
    U: object
    S: object
    Vh: object


def _completed(q):
    """q's orthonormal columns (..., r, k) completed to a square unitary matrix: the extra columns
    are the eigenvectors of the projector I - q q^H with eigenvalue 1, a basis of the complement. As
    in PyTorch they carry no gradient (any basis of the complement would do)."""
    r, k = q.shape[-2:]
    if r == k:
        return q
    projector = fnp.eye(r, dtype=q.dtype, device=q.device) - fnp.matmul(q, _mH(q))
    basis = bind(D.eigh_p, fnp.stop_gradient(projector))[..., 1:, k:]  # eigenvalues ascend: 0s, then 1s
    return fnp.concatenate([q, fnp.stop_gradient(basis)], axis=-1)


def svd(a, full_matrices: bool = True, compute_uv: bool = True, hermitian: bool = False):
    """a = U @ diag(S) @ Vh with S descending (NumPy's and the Array API's). full_matrices=True makes
    U and Vh square; their columns beyond min(m, n) span the complement and carry no gradient (as
    PyTorch's). Gradients through U and Vh are finite where singular values are distinct; those of
    S (svdvals, compute_uv=False) everywhere. hermitian is accepted and changes nothing."""
    a, dtype = _matrices(a, "svd")
    if not compute_uv:
        return _back(bind(D.svd_p, a, compute_uv=False), dtypes.real_dtype(dtype))
    u, s, v = D.svd_parts(bind(D.svd_p, a, compute_uv=True), a.shape[-2])
    if full_matrices:
        u, v = _completed(u), _completed(v)
    return SVDResult(_back(u, dtype), _back(fnp.real(s), dtypes.real_dtype(dtype)), _back(_mH(v), dtype))


def svdvals(x, /):
    """The singular values of (..., m, n) matrices, descending."""
    return svd(x, compute_uv=False)


def _cutoff(s, rtol, shape, atol=None):
    """rtol * the largest singular value, per matrix; rtol defaults to max(m, n) * eps (NumPy 2),
    or to 0 beside a positive atol, the absolute floor (torch.linalg's max(atol, rtol * largest))."""
    if rtol is None:
        floor_given = atol is not None and np.all(np.asarray(atol) > 0)
        rtol = 0.0 if floor_given else max(shape[-2:]) * float(np.finfo(s.dtype).eps)
    top = fnp.max(s, axis=-1, keepdims=True) if s.shape[-1] else fnp.zeros(s.shape[:-1] + (1,), s.dtype)
    rtol = fnp.asarray(rtol, s.dtype)
    relative = fnp.multiply(top, rtol if rtol.ndim == 0 else fnp.expand_dims(rtol, -1))
    if atol is None:
        return relative
    atol = fnp.asarray(atol, s.dtype)
    return fnp.maximum(relative, atol if atol.ndim == 0 else fnp.expand_dims(atol, -1))


def pinv(a, rcond=None, hermitian: bool = False, *, rtol=None, atol=None):
    """The Moore-Penrose pseudo-inverse: V diag(1/s) U^H over the singular values above rtol (or
    NumPy's older name rcond) times the largest, and above atol (torch.linalg's)."""
    a, dtype = _matrices(a, "pinv")
    if rcond is not None and rtol is not None:
        raise TypeError("pinv: give rtol or rcond, not both")
    tolerance = rtol if rcond is None else rcond

    @custom_jvp
    def pseudo_inverse(m):
        u, s, vh = svd(m, full_matrices=False)
        keep = fnp.greater(s, _cutoff(s, tolerance, m.shape, atol))
        s_inv = fnp.where(keep, 1 / fnp.where(keep, s, np.ones((), s.dtype)), np.zeros((), s.dtype))
        return fnp.matmul(_mH(vh) * fnp.expand_dims(s_inv, -2), _mH(u))

    @pseudo_inverse.defjvp
    def _pinv_jvp(primals, tangents):
        """Golub and Pereyra's derivative at constant rank, dP = -P dA P + P P^H dA^H (I - A P) +
        (I - P A) dA^H P^H P (PyTorch's): through P alone, not the SVD's vectors, whose derivative
        divides by the gaps between singular values (NaN at 2 I)."""
        (m,), (dm,) = primals, tangents
        p = pseudo_inverse(m)
        ph, dmh = _mH(p), _mH(dm)
        row_space = dmh - dmh @ (m @ p)  # dA^H (I - A P)
        tail = dmh @ (ph @ p)
        column_space = tail - (p @ m) @ tail  # (I - P A) dA^H P^H P
        return p, -(p @ dm @ p) + (p @ ph) @ row_space + column_space

    return _back(pseudo_inverse(a), dtype)


def matrix_rank(A, tol=None, hermitian: bool = False, *, rtol=None, atol=None):  # noqa: N803  (NumPy's name)
    """How many singular values exceed tol (absolute) or rtol times the largest (default
    max(m, n) * eps), and atol (torch.linalg's); of a vector, 1 unless it is all zeros."""
    A = fnp.asarray(A)  # noqa: N806
    if A.ndim < 2:
        return fnp.astype(fnp.any(fnp.not_equal(A, 0)), dtypes.int64)
    if tol is not None and (rtol is not None or atol is not None):
        raise TypeError("matrix_rank: give tol, or rtol and atol, not both")
    s = svdvals(fnp.stop_gradient(A))
    limit = fnp.expand_dims(fnp.asarray(tol, s.dtype), -1) if tol is not None else _cutoff(s, rtol, A.shape, atol)
    return fnp.sum(fnp.greater(s, limit), axis=-1)


def lstsq(a, b, rcond=None):
    """NumPy's least squares: (x minimising ||b - a x||, the squared residual norms (empty unless a
    has full column rank and more rows than columns), the rank of a, its singular values). Batched
    as torch.linalg.lstsq: a (..., m, n) with b (..., m, k), or b (..., m) of vectors."""
    a, dtype, b = _with_rhs(*_matrices(a, "lstsq"), b)
    vector = b.ndim == a.ndim - 1
    if not (vector or b.ndim == a.ndim) or b.shape[-1 if vector else -2] != a.shape[-2]:
        raise ShapeError(f"lstsq: a (..., m, n) and b (..., m) or (..., m, k) must agree, got {a.shape} and {b.shape}")
    m, n = a.shape[-2:]
    column = fnp.expand_dims(b, -1) if vector else b
    x = fnp.matmul(pinv(a, rcond), column)
    s = svdvals(a)
    rank = matrix_rank(a, rtol=rcond)
    if m > n and bool(fnp.all(fnp.equal(rank, n))):
        residuals = fnp.sum(fnp._abs_squared(column - fnp.matmul(a, x)), axis=-2)
    else:
        residuals = fnp.zeros((0,), dtypes.real_dtype(a.dtype), device=a.device)
    x = fnp.squeeze(x, -1) if vector else x
    return _back(x, dtype), _back(residuals, dtypes.real_dtype(dtype)), rank, _back(s, dtypes.real_dtype(dtype))


def matrix_power(a, n: int):
    a = fnp.asarray(a)
    if a.ndim < 2 or a.shape[-1] != a.shape[-2]:
        raise ShapeError(f"matrix_power needs square matrices, got shape {a.shape}")
    try:
        n = operator.index(n)  # 1.5 is an error, not a truncated exponent
    except TypeError:
        raise TypeError(f"matrix_power: the exponent must be an integer, got {n!r}") from None
    if n == 0:
        return fnp.broadcast_to(fnp.eye(a.shape[-1], dtype=a.dtype, device=a.device), a.shape)
    if n < 0:
        a, n = inv(a), -n
    result, base = None, a
    while n:
        if n & 1:
            result = base if result is None else fnp.matmul(result, base)
        n >>= 1
        if n:
            base = fnp.matmul(base, base)
    return result


def multi_dot(arrays: Sequence):
    if len(arrays) < 2:
        raise ValueError("multi_dot needs at least two arrays")
    out = arrays[0]
    for a in arrays[1:]:
        out = fnp.matmul(out, a)
    return out


matmul, outer, tensordot = fnp.matmul, fnp.outer, fnp.tensordot


def cross(x1, x2, /, *, axis: int = -1):
    return _signal.cross(x1, x2, axis=axis)


def trace(x, /, *, offset: int = 0, dtype=None):
    return _shapes.trace(x, offset, -2, -1, dtype=dtype)


def diagonal(x, /, *, offset: int = 0):
    return _shapes.diagonal(x, offset, -2, -1)


def vecdot(x1, x2, /, *, axis: int = -1):
    return _shapes.vecdot(x1, x2, axis=axis)


def matrix_transpose(x, /):
    return _shapes.matrix_transpose(x)
