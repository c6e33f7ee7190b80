"""The numba kernels of rows.py, at module level so numba caches them on disk (cache=True): the
first softmax or cross-entropy of a process loads them instead of compiling for a second. rows.py
imports this on first use, so importing funcgrad does not import numba."""
import numpy as np
from numba import njit, types
from numba.extending import overload

from . import vecmath as vm
from .norm_kernels import row_sum


def row_max(row, n):
    """A shift for row[:n]'s exponentials (n >= 1, row C-contiguous float32 or float64): its
    maximum, NaN where a NaN has its sign bit clear. A NaN with the sign bit set (x86's default
    NaN, 0 * inf) is passed over, which no caller sees: exp(NaN - m) carries it into the row's sum.
    The maximum of the values' bits as integers that order as the values do (the magnitude bits of
    negatives flipped, a map that is its own inverse): an integer maximum vectorises, where a float
    one that must propagate NaN stays scalar (3.2x the time over rows of 64). Inlined into its caller
    (a call per row: 2.6x the time over rows of 64) and each step cast back to the lanes' type
    (numba widens int32 arithmetic to int64, half as many lanes: 1.5x)."""
    return np.max(row[:n])


@overload(row_max, inline="always", jit_options={"error_model": "numpy"})
def _row_max(row, n):
    single = row.dtype == types.float32
    bits, value = (np.int32, np.float32) if single else (np.int64, np.float64)
    shift, magnitude, lowest = bits(31 if single else 63), bits(np.iinfo(bits).max), bits(np.iinfo(bits).min)

    def impl(row, n):
        ordered = row.view(bits)
        sh, mag, m = bits(shift), bits(magnitude), bits(lowest)
        for j in range(n):
            b = ordered[j]
            key = bits(b ^ bits(bits(b >> sh) & mag))
            m = key if key > m else m
        return bits(m ^ bits(bits(m >> sh) & mag)).view(value)
    return impl


@njit(inline="always", error_model="numpy")
def row_shift(x, r, zero, infinite):
    """The row's maximum, or zero (x's dtype) where it is infinite (with infinite False: only
    where it is -inf); ops/reductions.py's _stable_max says which operation takes which."""
    m = row_max(x[r], x.shape[1])
    if (np.isinf(m) if infinite else m == -np.inf):
        m = zero
    return m


@njit(inline="always", error_model="numpy")
def _exponentials(row, m, e):
    """e = exp(row - m) and their sum (float64, reassociated: row_sum): the exponentials in a loop
    of their own, which vectorises with vecmath's exp (a loop that also summed them stayed serial
    with libm's: 2.5x the time for the GPT step's 1024 x 64 logits)."""
    for j in range(row.shape[0]):
        e[j] = vm.exp(row[j] - m)
    return row_sum(e)


@njit(cache=True, nogil=True, error_model="numpy")
def row_softmax(x, out, log, zero):
    rows, n = x.shape
    for r in range(rows):
        m = row_shift(x, r, zero, False)
        total = _exponentials(x[r], m, out[r])  # kept for softmax: one exp per element
        if log:
            shift = m + np.log(total)
            for j in range(n):
                out[r, j] = x[r, j] - shift
        else:
            scale = 1.0 / total
            for j in range(n):
                out[r, j] = out[r, j] * scale


@njit(cache=True, nogil=True, error_model="numpy")
def row_logsumexp(x, out, zero):
    e = np.empty(x.shape[1], x.dtype)
    for r in range(x.shape[0]):
        m = row_shift(x, r, zero, True)
        out[r] = np.log(_exponentials(x[r], m, e)) + m


@njit(cache=True, nogil=True)
def pick_rows(x, labels, out):
    """out[r] = x[r, labels[r]]; returns the first row whose label is out of range, or -1."""
    for r in range(x.shape[0]):
        k = labels[r]
        if k < 0 or k >= x.shape[1]:
            return r
        out[r] = x[r, k]
    return -1


@njit(cache=True, nogil=True)
def unpick_rows(g, labels, out):
    """out[r, labels[r]] = g[r] in zeros; returns the first row out of range, or -1."""
    for r in range(out.shape[0]):
        k = labels[r]
        if k < 0 or k >= out.shape[1]:
            return r
        out[r, k] = g[r]
    return -1


@njit(cache=True, nogil=True, error_model="numpy")
def attention_probs(s, bias, has_bias, scale, causal, row0, zero):
    """In place: s (B, R, Lk), the raw q . k of query rows row0 .. row0 + R, becomes the softmax
    of each row of s * scale + bias (bias (1 or B, Lq, Lk), read only where has_bias: a broadcast
    zero's reads do not vectorise), keys after the query masked out when causal (probability 0).
    The shift is row_logsumexp's (0 where the maximum is infinite: a +inf score gives the row NaN
    through p v, as in PyTorch); a row whose visible scores are all -inf (every key masked) is
    zeros, as PyTorch's attention gives (its safe softmax), where row_softmax gives NaN as
    torch.softmax does. The exponential is vecmath's, whose loop vectorises (libm's expf took two
    thirds of the time).

    Every loop runs over whole vectors: the exponential over the visible keys rounded up to 8, the
    extra lanes holding the shift (exp(0), no slow subnormal path), the scaling over the whole row
    after the masked keys are zeroed (0 * inv: 0, or NaN where the row's sum is NaN). Loops over
    each query's own count left a scalar remainder per row that cost more than the vector part."""
    batch, rows, keys = s.shape
    if keys == 0:
        return
    for b in range(batch):
        for i in range(rows):
            row = s[b, i]
            n = min(keys, row0 + i + 1) if causal else keys  # the keys this query sees
            if has_bias:  # scale and bias have the row's dtype: so has m, and vm.exp takes the
                brow = bias[b if bias.shape[0] > 1 else 0, row0 + i]  # float32 path for float32 rows
                for j in range(n):
                    row[j] = row[j] * scale + brow[j]
            else:
                for j in range(n):
                    row[j] = row[j] * scale
            m = row_max(row, n)
            if np.isinf(m):
                m = zero
            span = min(keys, (n + 7) // 8 * 8)
            for j in range(n, span):
                row[j] = m
            for j in range(span):
                row[j] = vm.exp(row[j] - m)
            for j in range(n, keys):
                row[j] = 0
            total = row_sum(row)
            inv = 1.0 / total if total != 0 else 0.0  # every visible key masked: zeros, as PyTorch
            for j in range(keys):
                row[j] = row[j] * inv


@njit(cache=True, nogil=True, error_model="numpy")
def attention_score_grads(ds, p, delta, scale):
    """In place: ds (B, R, Lk), the gradient of the probabilities p, becomes that of the scores
    before the scale: (ds - delta) * p * scale, delta (B, R) being each row's sum of ds * p (the
    softmax's Jacobian applied; one pass instead of three NumPy calls and their temporaries)."""
    for b in range(ds.shape[0]):
        for i in range(ds.shape[1]):
            row, prow, d = ds[b, i], p[b, i], delta[b, i]
            for j in range(ds.shape[2]):
                row[j] = (row[j] - d) * prow[j] * scale


@njit(cache=True, nogil=True)
def add_rows(g, index, out):
    """out[index[i]] += g[i] row by row (NumPy's negative indices wrap); returns the position of
    the first index out of range, or -1."""
    n = out.shape[0]
    for i in range(index.shape[0]):
        r = index[i]
        if r < 0:
            r += n
        if r < 0 or r >= n:
            return i
        for j in range(out.shape[1]):
            out[r, j] += g[i, j]
    return -1
