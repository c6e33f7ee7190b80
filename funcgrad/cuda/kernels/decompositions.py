"""Dense linear algebra on batches of small matrices (real or complex): a block per matrix.

solve (Gaussian elimination with partial pivoting), triangular_solve (substitution), lu (the same
elimination, its multipliers and pivots kept), slogdet (the same elimination, keeping the
pivots), cholesky, eigh (cyclic Jacobi rotations, eigenvalues sorted ascending) and svd (one-sided
Jacobi rotations of a tall matrix's columns until they are orthogonal: their norms are the singular
values, sorted descending; a zero singular value leaves its column of U zero). Each block works in
a copy of its matrix in global memory (any n fits; the rows it touches stay in L1); its threads
share the O(n) work of each step (a row operation of the elimination, a rotation of two columns,
a column of the triangular solve) and compute the step's few scalars (the pivot, the rotation's
angle) alike from the same data, with a barrier between steps. Singular or indefinite inputs give
inf/NaN, as a kernel cannot raise.
"""
from __future__ import annotations

import math
from functools import cache

import numpy as np

from ... import dtypes
from ..buffer import DeviceValue, empty
from ..runtime import MAX_BLOCKS, SIMULATOR, launch
from .common import INDEX, array_type, cast, compile_source, scalar_type
from ...ops.elementwise import conj_p
from . import elementwise
from .copy import compact, copy_into
from .indexing import basic_view

SWEEPS = 60  # Jacobi sweeps; convergence is quadratic, so float64 needs well under 20 in practice
THREADS = 4 if SIMULATOR else 64  # per matrix: the simulator runs a Python thread per GPU thread

_MATRIX_LOOP = """    t = cuda.threadIdx.x
    T = cuda.blockDim.x
    for m in range(cuda.blockIdx.x, batch, cuda.gridDim.x):"""

# Partial pivoting, shared by solve and slogdet: every thread finds the row (at or below col) with the
# largest magnitude in column col alike; they swap it into place in the LU workspace together.
_PIVOT = """            pivot = col
            best = abs(lu[A + col * n + col])
            for r in range(col + 1, n):
                v = abs(lu[A + r * n + col])
                if v > best:
                    best = v
                    pivot = r
            cuda.syncthreads()  # every thread has searched before rows move
            if pivot != col:
                for c in range(t, n, T):
                    tmp = lu[A + col * n + c]
                    lu[A + col * n + c] = lu[A + pivot * n + c]
                    lu[A + pivot * n + c] = tmp"""

# Eliminate below the pivot: each thread takes rows of its own
_ELIMINATE = """            for r in range(col + 1 + t, n, T):
                f = lu[A + r * n + col] / d
                for c in range(col, n):
                    lu[A + r * n + c] -= f * lu[A + col * n + c]"""


@cache
def _solve_source(dtype: np.dtype) -> str:
    t = cast(dtype)
    return f"""@cuda.jit(cache=True)
def kernel(lu, x, batch, n, k):
{_MATRIX_LOOP}
        A = m * n * n
        X = m * n * k
        for col in range(n):
{_PIVOT}
                for c in range(t, k, T):
                    tmp = x[X + col * k + c]
                    x[X + col * k + c] = x[X + pivot * k + c]
                    x[X + pivot * k + c] = tmp
            cuda.syncthreads()
            d = lu[A + col * n + col]
            for r in range(col + 1 + t, n, T):
                f = lu[A + r * n + col] / d
                for c in range(k):
                    x[X + r * k + c] -= f * x[X + col * k + c]
{_ELIMINATE}
            cuda.syncthreads()
        for c in range(t, k, T):  # back substitution, a column of x per thread
            for step in range(n):
                r = n - 1 - step
                total = x[X + r * k + c]
                for j in range(r + 1, n):
                    total -= lu[A + r * n + j] * x[X + j * k + c]
                x[X + r * k + c] = {t}(total / lu[A + r * n + r])
        cuda.syncthreads()
"""


@cache
def _triangular_source(dtype: np.dtype) -> str:
    """Forward (lower) or back substitution, a column of x per thread: each row's sum reads the
    rows solved before it, so a thread needs no barrier."""
    t = cast(dtype)
    return f"""@cuda.jit(cache=True)
def kernel(a, x, batch, n, k, lower, unit):
{_MATRIX_LOOP}
        A = m * n * n
        X = m * n * k
        for c in range(t, k, T):
            for step in range(n):
                r = step if lower else n - 1 - step
                total = x[X + r * k + c]
                for j in range(0 if lower else r + 1, r if lower else n):
                    total -= a[A + r * n + j] * x[X + j * k + c]
                x[X + r * k + c] = total if unit else {t}(total / a[A + r * n + r])
"""


@cache
def _lu_source(dtype: np.dtype) -> str:
    """P a = L U in place in lu (the packed (n + 2, n) layout of ops.decompositions.lu_p): the
    elimination keeps each multiplier below the diagonal, and row n records the row order, row n + 1
    the pivots."""
    t = cast(dtype)
    return f"""@cuda.jit(cache=True)
def kernel(a, lu, batch, n):
{_MATRIX_LOOP}
        A = m * (n + 2) * n
        for i in range(t, n * n, T):
            lu[A + i] = a[m * n * n + i]
        for c in range(t, n, T):
            lu[A + n * n + c] = {t}(c)
        cuda.syncthreads()
        for col in range(n):
{_PIVOT}
            if t == 0:
                tmp = lu[A + n * n + col]
                lu[A + n * n + col] = lu[A + n * n + pivot]
                lu[A + n * n + pivot] = tmp
                lu[A + (n + 1) * n + col] = {t}(pivot)
            cuda.syncthreads()
            d = lu[A + col * n + col]
            for r in range(col + 1 + t, n, T):
                if d != 0:
                    lu[A + r * n + col] = lu[A + r * n + col] / d
                f = lu[A + r * n + col]
                for c in range(col + 1, n):
                    lu[A + r * n + c] -= f * lu[A + col * n + c]
            cuda.syncthreads()
"""


@cache
def _slogdet_source(dtype: np.dtype) -> str:
    t, rt = cast(dtype), cast(dtypes.real_dtype(dtype))
    # a complex pivot turns the sign by its phase; a real one flips it when negative
    phase = "sign = sign * (d / abs(d))" if dtypes.is_complex(dtype) else "if d < 0:\n                sign = -sign"
    return f"""@cuda.jit(cache=True)
def kernel(lu, out, batch, n):
{_MATRIX_LOOP}
        A = m * n * n
        sign = {t}(1)
        logdet = {rt}(0)
        for col in range(n):
{_PIVOT}
            cuda.syncthreads()
            if pivot != col:
                sign = -sign
            d = lu[A + col * n + col]
            if d == 0:
                sign = {t}(0)
                logdet = {rt}(-math.inf)
                break
            {phase}
            logdet += {rt}(math.log(abs(d)))
{_ELIMINATE}
            cuda.syncthreads()
        if t == 0:
            out[2 * m] = sign
            out[2 * m + 1] = {t}(logdet)
        cuda.syncthreads()
"""


@cache
def _cholesky_source(dtype: np.dtype) -> str:
    """a = L L^H: the diagonal is real (a Hermitian matrix's is), the rest takes conjugates."""
    t, rt = cast(dtype), cast(dtypes.real_dtype(dtype))
    conj = ".conjugate()" if dtypes.is_complex(dtype) else ""
    real = ".real" if dtypes.is_complex(dtype) else ""
    return f"""@cuda.jit(cache=True)
def kernel(a, out, batch, n):
{_MATRIX_LOOP}
        A = m * n * n
        for e in range(t, n * n, T):
            out[A + e] = {t}(0)
        cuda.syncthreads()
        for j in range(n):
            total = {rt}(a[A + j * n + j]{real})
            for p in range(j):
                x = out[A + j * n + p]
                total -= {rt}((x * x{conj}){real})
            diag = math.sqrt(total) if total > 0 else {rt}(math.nan)
            if t == 0:
                out[A + j * n + j] = {t}(diag)
            for i in range(j + 1 + t, n, T):
                total2 = a[A + i * n + j]
                for p in range(j):
                    total2 -= out[A + i * n + p] * out[A + j * n + p]{conj}
                out[A + i * n + j] = {t}(total2 / diag)
            cuda.syncthreads()
"""


# A Hermitian matrix's pair (p, q) first turns real: column q of A and V times conj(phase), row q of A
# times phase, with phase = a_pq / |a_pq|; then the real rotation applies.
_EIGH_PHASE = """
                    phase = apq / abs(apq)
                    for r in range(t, n, T):
                        work[A + r * n + q] = work[A + r * n + q] * phase.conjugate()
                        out[V + r * n + q] = out[V + r * n + q] * phase.conjugate()
                    cuda.syncthreads()
                    for r in range(t, n, T):
                        work[A + q * n + r] = work[A + q * n + r] * phase
                    cuda.syncthreads()
                    apq = {rt}(abs(apq))"""


@cache
def _eigh_source(dtype: np.dtype) -> str:
    t, rt = cast(dtype), cast(dtypes.real_dtype(dtype))
    eps = float(np.finfo(dtype).eps)
    cplx = dtypes.is_complex(dtype)
    real = ".real" if cplx else ""
    square = "(v.real * v.real + v.imag * v.imag)" if cplx else "v * v"
    phase = _EIGH_PHASE.format(rt=rt) if cplx else ""
    return f"""@cuda.jit(cache=True)
def kernel(work, out, batch, n):
    # out[m] is (n + 1, n): row 0 the eigenvalues, rows 1.. the eigenvector matrix V (columns)
{_MATRIX_LOOP}
        A = m * n * n
        V = m * (n + 1) * n + n
        for e in range(t, n * n, T):
            out[V + e] = {t}(1) if e // n == e % n else {t}(0)
        cuda.syncthreads()
        for sweep in range({SWEEPS}):
            off = {rt}(0)
            scale = {rt}(0)
            for i in range(n):
                for j in range(n):
                    v = work[A + i * n + j]
                    scale += {square}
                    if i != j:
                        off += {square}
            cuda.syncthreads()  # every thread has read the matrix before it turns
            if off <= {rt}({eps * eps}) * scale:
                break
            for p in range(n - 1):
                for q in range(p + 1, n):
                    apq = work[A + p * n + q]
                    cuda.syncthreads()
                    if apq == 0:
                        continue{phase}
                    theta = (work[A + q * n + q]{real} - work[A + p * n + p]{real}) / ({rt}(2) * apq)  # typed literals:
                    tan = ({rt}(1) if theta >= 0 else {rt}(-1)) / (abs(theta) + math.sqrt(theta * theta + {rt}(1)))
                    c = {rt}(1) / math.sqrt(tan * tan + {rt}(1))  # an int literal would widen float32 to float64
                    s = tan * c
                    cuda.syncthreads()  # every thread has read the pair before it turns
                    for r in range(t, n, T):  # columns p, q of A and V
                        akp = work[A + r * n + p]
                        akq = work[A + r * n + q]
                        work[A + r * n + p] = {t}(c * akp - s * akq)
                        work[A + r * n + q] = {t}(s * akp + c * akq)
                        vkp = out[V + r * n + p]
                        vkq = out[V + r * n + q]
                        out[V + r * n + p] = {t}(c * vkp - s * vkq)
                        out[V + r * n + q] = {t}(s * vkp + c * vkq)
                    cuda.syncthreads()
                    for r in range(t, n, T):  # rows p, q of A
                        apk = work[A + p * n + r]
                        aqk = work[A + q * n + r]
                        work[A + p * n + r] = {t}(c * apk - s * aqk)
                        work[A + q * n + r] = {t}(s * apk + c * aqk)
                    cuda.syncthreads()
        W = m * (n + 1) * n
        for i in range(t, n, T):
            out[W + i] = {t}(work[A + i * n + i]{real})
        cuda.syncthreads()
        for i in range(n):  # selection sort, ascending, moving eigenvector columns along
            low = i
            for j in range(i + 1, n):
                if out[W + j]{real} < out[W + low]{real}:
                    low = j
            cuda.syncthreads()
            if low != i:
                if t == 0:
                    tmp = out[W + i]
                    out[W + i] = out[W + low]
                    out[W + low] = tmp
                for r in range(t, n, T):
                    tmp = out[V + r * n + i]
                    out[V + r * n + i] = out[V + r * n + low]
                    out[V + r * n + low] = tmp
            cuda.syncthreads()
"""


_SVD_INIT_V = """
        for e in range(t, c * c, T):
            out[V + e] = {t}(1) if e // c == e % c else {t}(0)
        cuda.syncthreads()"""
_SVD_ROTATE_V = """
                    for i in range(t, c, T):
                        vp = out[V + i * c + p]
                        vq = out[V + i * c + q]
                        out[V + i * c + p] = {t}(cs * vp - sn * vq)
                        out[V + i * c + q] = {t}(sn * vp + cs * vq)"""
_SVD_SWAP_COLUMNS = """
                for k in range(t, r, T):
                    tmp = work[A + k * c + i]
                    work[A + k * c + i] = work[A + k * c + high]
                    work[A + k * c + high] = tmp
                for k in range(t, c, T):
                    tmp = out[V + k * c + i]
                    out[V + k * c + i] = out[V + k * c + high]
                    out[V + k * c + high] = tmp"""
_SVD_WRITE_U = """
        for e in range(t, r * c, T):
            s = out[W + e % c]{real}
            out[O + e] = work[A + e] / s if s > 0 else {t}(0)
        cuda.syncthreads()
        for j in range(c):  # a zero singular value left its column zero: complete U's orthonormal columns
            if out[W + j]{real} == 0 and t == 0:  # (rare, and at the end after the sort: one thread)
                for k in range(r):  # e_k less its part in columns 0..j-1, twice (Gram-Schmidt twice is enough)
                    for i in range(r):
                        out[O + i * c + j] = {t}(1) if i == k else {t}(0)
                    for twice in range(2):
                        for q in range(j):
                            dot = {t}(0)
                            for i in range(r):
                                dot += out[O + i * c + q]{conj} * out[O + i * c + j]
                            for i in range(r):
                                out[O + i * c + j] -= dot * out[O + i * c + q]
                    norm = {rt}(0)
                    for i in range(r):
                        norm += {rt}((out[O + i * c + j]{conj} * out[O + i * c + j]){real})
                    if norm * {rt}(2 * r) >= {rt}(1):  # some e_k keeps |.|^2 >= (r - j) / r outside them
                        for i in range(r):
                            out[O + i * c + j] = out[O + i * c + j] / {rt}(math.sqrt(norm))
                        break
            cuda.syncthreads()"""
# complex columns: column q (and V's) turns by conj(gamma / |gamma|), so that a_p^H a_q is real
_SVD_PHASE = """
                    phase = gamma / abs(gamma)
                    for i in range(t, r, T):
                        work[A + i * c + q] = work[A + i * c + q] * phase.conjugate()"""
_SVD_PHASE_V = """
                    for i in range(t, c, T):
                        out[V + i * c + q] = out[V + i * c + q] * phase.conjugate()"""


@cache
def _svd_source(dtype: np.dtype, uv: bool) -> str:
    t, rt = cast(dtype), cast(dtypes.real_dtype(dtype))
    eps = float(np.finfo(dtype).eps)
    cplx = dtypes.is_complex(dtype)
    conj, real = (".conjugate()", ".real") if cplx else ("", "")
    sv, sv_real = (t, real) if uv else (rt, "")  # the singular values' slot: in out's dtype
    phase = _SVD_PHASE + (_SVD_PHASE_V if uv else "") + "\n                    gamma = abs(gamma)" if cplx else ""
    init_v, rotate_v, swap, write_u = ((part.format(t=t, real=sv_real, rt=rt, conj=conj) if uv else "")
                                       for part in (_SVD_INIT_V, _SVD_ROTATE_V, _SVD_SWAP_COLUMNS, _SVD_WRITE_U))
    return f"""@cuda.jit(cache=True)
def kernel(work, out, batch, r, c):
    # work[m]: a tall (r, c) matrix, r >= c, rotated in place into U diag(s); out[m] is
    # (r + 1 + c, c): U, the singular values and V with uv, else the c singular values
{_MATRIX_LOOP}
        A = m * r * c
        O = m * (r + 1 + c) * c if {uv} else m * c
        W = O + r * c if {uv} else O
        V = O + (r + 1) * c{init_v}
        for sweep in range({SWEEPS}):
            rotated = False
            for p in range(c - 1):
                for q in range(p + 1, c):
                    alpha = {rt}(0)
                    beta = {rt}(0)
                    gamma = {t}(0)
                    for i in range(r):
                        ap = work[A + i * c + p]
                        aq = work[A + i * c + q]
                        alpha += {rt}((ap{conj} * ap){real})
                        beta += {rt}((aq{conj} * aq){real})
                        gamma += ap{conj} * aq
                    cuda.syncthreads()  # every thread has read the columns before they turn
                    if abs(gamma) <= {rt}({eps}) * math.sqrt(alpha * beta):
                        continue
                    rotated = True{phase}
                    zeta = (beta - alpha) / ({rt}(2) * gamma)
                    tan = ({rt}(1) if zeta >= 0 else {rt}(-1)) / (abs(zeta) + math.sqrt(zeta * zeta + {rt}(1)))
                    cs = {rt}(1) / math.sqrt(tan * tan + {rt}(1))
                    sn = cs * tan
                    for i in range(t, r, T):
                        ap = work[A + i * c + p]
                        aq = work[A + i * c + q]
                        work[A + i * c + p] = {t}(cs * ap - sn * aq)
                        work[A + i * c + q] = {t}(sn * ap + cs * aq){rotate_v}
                    cuda.syncthreads()
            if not rotated:
                break
        for j in range(t, c, T):
            total = {rt}(0)
            for i in range(r):
                x = work[A + i * c + j]
                total += {rt}((x{conj} * x){real})
            out[W + j] = {sv}(math.sqrt(total))
        cuda.syncthreads()
        for i in range(c):  # selection sort, descending, moving the columns of U diag(s) and V along
            high = i
            for j in range(i + 1, c):
                if out[W + j]{sv_real} > out[W + high]{sv_real}:
                    high = j
            cuda.syncthreads()
            if high != i:
                if t == 0:
                    tmp = out[W + i]
                    out[W + i] = out[W + high]
                    out[W + high] = tmp{swap}
            cuda.syncthreads(){write_u}
"""


def _batched_copy(x: DeviceValue, shape: tuple) -> DeviceValue:
    """A fresh contiguous copy of x broadcast to shape (the kernels work in place on it)."""
    return elementwise.apply(elementwise.copy, [x], x.dtype, shape=tuple(shape))


def _grid(batch: int) -> tuple[int, int]:
    return min(batch, MAX_BLOCKS), THREADS


def _batch(shape: tuple) -> int:
    return math.prod(shape[:-2])


def _solve_with(source: str, a: DeviceValue, b: DeviceValue, *flags) -> DeviceValue:
    """Copies of a (..., n, n) and b (..., n, k) broadcast over their leading axes, and the kernel
    of source run on them, a block per matrix: x holds the solution."""
    batch_shape = np.broadcast_shapes(a.shape[:-2], b.shape[:-2])
    n, k = a.shape[-1], b.shape[-1]
    work = _batched_copy(a, batch_shape + (n, n))
    x = _batched_copy(b, batch_shape + (n, k))
    batch = _batch(x.shape)
    if batch and n and k:
        launch(compile_source(source), *_grid(batch), work.data, x.data, batch, n, k, *flags)
    return x


def solve(a: DeviceValue, b: DeviceValue) -> DeviceValue:
    return _solve_with(_solve_source(a.dtype), a, b)


def triangular_solve(a: DeviceValue, b: DeviceValue, lower: bool, unit_diagonal: bool) -> DeviceValue:
    return _solve_with(_triangular_source(a.dtype), a, b, bool(lower), bool(unit_diagonal))


def lu(a: DeviceValue) -> DeviceValue:
    n = a.shape[-1]
    source = _batched_copy(a, a.shape)
    out = empty(tuple(a.shape[:-2]) + (n + 2, n), a.dtype)
    batch = _batch(a.shape)
    if batch and n:
        launch(compile_source(_lu_source(a.dtype)), *_grid(batch), source.data, out.data, batch, n)
    return out


def slogdet(a: DeviceValue) -> DeviceValue:
    n = a.shape[-1]
    lu = _batched_copy(a, a.shape)
    out = empty(a.shape[:-2] + (2,), a.dtype)
    batch = _batch(a.shape)
    if batch:
        launch(compile_source(_slogdet_source(a.dtype)), *_grid(batch), lu.data, out.data, batch, n)
    return out


def cholesky(a: DeviceValue) -> DeviceValue:
    n = a.shape[-1]
    a = compact(a)
    out = empty(a.shape, a.dtype)
    batch = _batch(a.shape)
    if batch and n:
        launch(compile_source(_cholesky_source(a.dtype)), *_grid(batch), a.data, out.data, batch, n)
    return out


def eigh(a: DeviceValue) -> DeviceValue:
    n = a.shape[-1]
    work = _batched_copy(a, a.shape)
    out = empty(a.shape[:-2] + (n + 1, n), a.dtype)
    batch = _batch(a.shape)
    if batch and n:
        launch(compile_source(_eigh_source(a.dtype)), *_grid(batch), work.data, out.data, batch, n)
    return out


def svd(a: DeviceValue, compute_uv: bool) -> DeviceValue:
    """The reduced SVD, packed as svd_p's: of a tall matrix directly; a wide one's is its conjugate
    transpose's (a^H = U' S V'^H, so a = V' S U'^H) with U and V exchanged."""
    m, n = a.shape[-2:]
    wide = m < n
    tall = a.view(a.shape[:-2] + (n, m), a.strides[:-2] + (a.strides[-1], a.strides[-2])) if wide else a
    r, c = tall.shape[-2:]
    if wide and dtypes.is_complex(a.dtype):
        work = elementwise.apply(conj_p, [tall], a.dtype, {})
    else:
        work = _batched_copy(tall, tall.shape)
    out = empty(a.shape[:-2] + (r + 1 + c, c), a.dtype) if compute_uv else \
        empty(a.shape[:-2] + (c,), dtypes.real_dtype(a.dtype))
    batch = _batch(a.shape)
    if batch and c:
        launch(compile_source(_svd_source(a.dtype, compute_uv)), *_grid(batch), work.data, out.data, batch, r, c)
    if not (wide and compute_uv):
        return out
    lead = (slice(None),) * (a.ndim - 2)
    packed, start = empty(out.shape, a.dtype), 0
    for lo, hi in ((r + 1, r + 1 + c), (r, r + 1), (0, r)):  # V' (a's U), s, U' (a's V)
        copy_into(basic_view(packed, lead + (slice(start, start + hi - lo),)), basic_view(out, lead + (slice(lo, hi),)))
        start += hi - lo
    return packed


def ptx_cases():
    """Every kernel for float32, float64, complex64 and complex128."""
    i64 = scalar_type(INDEX)
    for dt in (dtypes.float32, dtypes.float64, dtypes.complex64, dtypes.complex128):
        arr = array_type(dt)
        yield f"solve[{dt.name}]", compile_source(_solve_source(dt)), (arr, arr, i64, i64, i64)
        flag = scalar_type(np.bool_)
        yield (f"triangular_solve[{dt.name}]", compile_source(_triangular_source(dt)),
               (arr, arr, i64, i64, i64, flag, flag))
        yield f"slogdet[{dt.name}]", compile_source(_slogdet_source(dt)), (arr, arr, i64, i64)
        yield f"lu[{dt.name}]", compile_source(_lu_source(dt)), (arr, arr, i64, i64)
        yield f"cholesky[{dt.name}]", compile_source(_cholesky_source(dt)), (arr, arr, i64, i64)
        yield f"eigh[{dt.name}]", compile_source(_eigh_source(dt)), (arr, arr, i64, i64)
        for uv in (True, False):
            out = arr if uv else array_type(dtypes.real_dtype(dt))
            yield f"svd[{dt.name}, uv={uv}]", compile_source(_svd_source(dt, uv)), (arr, out, i64, i64, i64)
