"""The discrete Fourier transform over an array's trailing axes: one primitive of four kinds, as
jax.lax.fft's. 'fft' and 'ifft' map complex to complex; 'rfft' maps reals to the n//2 + 1
non-negative frequencies of the last axis (and full spectra of the others); 'irfft' maps those back
to reals of the given lengths. Normalisation is NumPy's default ('backward': only the inverse
divides by n); funcgrad.numpy.fft moves axes, pads or crops to n and scales for the other norms.

The transform is linear, so its JVP transforms the tangent. Its transposes (JAX's convention:
vjp.py conjugates at its boundary): the DFT matrix is symmetric, so fft's is fft and ifft's is
ifft; rfft's pads the cotangent with zeros to the full spectrum, transforms it and keeps the real
part; irfft's is conj(rfft(g) * w / n), w = 1 for the frequencies that appear once in the real
signal (0, and n/2 for even n), 2 for the rest.
"""
from __future__ import annotations

import math

import numpy as np

from .. import dtypes
from . import elementwise as E
from .core import Primitive, ShapedArray, deflinear
from .layout import batch_leading, reshape_p, transpose_p
from .linalg import matmul_p
from .shape import pad_p

KINDS = ("fft", "ifft", "rfft", "irfft")
_NUMPY = {"fft": np.fft.fftn, "ifft": np.fft.ifftn, "rfft": np.fft.rfftn, "irfft": np.fft.irfftn}


def half_spectrum(n: int) -> int:
    """How many frequencies rfft keeps of a length-n signal."""
    return n // 2 + 1


def _fft_shape(x, *, kind, lengths):
    if kind not in KINDS:
        raise ValueError(f"fft kind {kind!r} is not one of {KINDS}")
    k = len(lengths)
    if not 1 <= k <= len(x.shape) or any(n < 1 for n in lengths):
        raise ValueError(f"{kind}: lengths {lengths} do not fit trailing axes of shape {x.shape}")
    lead, trailing = x.shape[:-k], tuple(x.shape[-k:])
    if kind == "rfft":
        if not dtypes.is_float(x.dtype) or x.dtype in dtypes.low_precision:
            raise TypeError(f"rfft transforms float32 or float64 arrays, not {x.dtype}")
        expected, out = tuple(lengths), tuple(lengths[:-1]) + (half_spectrum(lengths[-1]),)
        dtype = dtypes.complex_dtype(x.dtype)
    else:
        if not dtypes.is_complex(x.dtype):
            raise TypeError(f"{kind} transforms complex arrays, not {x.dtype}")
        if kind == "irfft":
            expected, out = tuple(lengths[:-1]) + (half_spectrum(lengths[-1]),), tuple(lengths)
            dtype = dtypes.real_dtype(x.dtype)
        else:
            expected, out, dtype = tuple(lengths), tuple(lengths), x.dtype
    if trailing != expected:
        raise ValueError(f"{kind} of lengths {tuple(lengths)} needs trailing axes {expected}, got {trailing}")
    return ShapedArray(lead + out, dtype)


def _fft_impl(x, kind, lengths):
    out = _NUMPY[kind](x, s=lengths, axes=tuple(range(-len(lengths), 0)))
    return out.astype(_fft_shape(ShapedArray(x.shape, x.dtype), kind=kind, lengths=lengths).dtype, copy=False)


def _rfft_transpose(g, lengths):
    n, m = lengths[-1], g.shape[-1]
    widths = ((0, 0),) * (len(g.shape) - 1) + ((0, n - m),)
    full = pad_p(g, widths=widths, value=0)
    return E.real_p(fft_p(full, kind="fft", lengths=lengths))


def _irfft_transpose(g, lengths):
    n = lengths[-1]
    weights = np.full(half_spectrum(n), 2.0 / math.prod(lengths))
    weights[0] /= 2
    if n % 2 == 0:
        weights[-1] /= 2
    spectrum = fft_p(g, kind="rfft", lengths=lengths)
    return E.conj_p(E.mul_p(spectrum, weights.astype(dtypes.real_dtype(spectrum.dtype))))


def _transpose(g, out, x, kind, lengths):
    if kind == "rfft":
        return _rfft_transpose(g, lengths)
    if kind == "irfft":
        return _irfft_transpose(g, lengths)
    return fft_p(g, kind=kind, lengths=lengths)


fft_p = Primitive("fft", _fft_impl, shape_rule=_fft_shape, batch_rule=batch_leading, cuda="fft", fresh=True)
deflinear(fft_p, _transpose)


# ---- the transform as matrix products, for backends without an FFT (the CUDA one) ---------------
# O(n^2) work per transformed axis instead of O(n log n), on the tiled matmul kernel: right for the
# lengths a GPU step meets (a few thousand at most), never for long signals.
def _twiddles(rows: int, cols: int, n: int, sign: int, dtype, run, arange, row_scale=None):
    """W[j, k] = row_scale[j] exp(sign 2 pi i (j k mod n) / n), (rows, cols) of complex dtype; the
    exponent is reduced mod n in integers, so the angle stays exact however large j k grows."""
    real = dtypes.real_dtype(dtype)
    jk = run(E.mul_p, run(reshape_p, arange(rows), shape=(rows, 1)), run(reshape_p, arange(cols), shape=(1, cols)))
    angle = run(E.mul_p, run(E.convert_p, run(E.remainder_p, jk, n), dtype=dtypes.float64), sign * 2 * math.pi / n)
    parts = [run(E.convert_p, run(prim, angle), dtype=real) for prim in (E.cos_p, E.sin_p)]
    if row_scale is not None:
        parts = [run(E.mul_p, p, np.asarray(row_scale, real).reshape(rows, 1)) for p in parts]
    return run(E.complex_p, *parts)


def _along(x, axis: int, w, run):
    """x with its axis contracted against w's rows: (..., n, ...) -> (..., w.shape[1], ...)."""
    perm = tuple(d for d in range(len(x.shape)) if d != axis) + (axis,)
    moved = run(transpose_p, x, perm=perm)
    lead = moved.shape[:-1]
    flat = run(reshape_p, moved, shape=(math.prod(lead), moved.shape[-1]))
    out = run(reshape_p, run(matmul_p, flat, w), shape=lead + (w.shape[1],))
    return run(transpose_p, out, perm=tuple(int(i) for i in np.argsort(perm)))


def by_matmul(x, kind: str, lengths: tuple, run, arange):
    """fft_p's value computed as one DFT matrix product per axis: run(prim, *args, **params) binds a
    primitive on the backend, arange(n) makes its int64 0..n-1."""
    nd, k = len(x.shape), len(lengths)
    out_dtype = _fft_shape(ShapedArray(x.shape, x.dtype), kind=kind, lengths=lengths).dtype
    cdtype = dtypes.complex_dtype(out_dtype)
    full_axes = range(nd - k, nd - 1) if kind in ("rfft", "irfft") else range(nd - k, nd)
    sign = 1 if kind in ("ifft", "irfft") else -1
    if kind == "rfft":
        n = lengths[-1]
        x = _along(run(E.convert_p, x, dtype=cdtype), nd - 1,
                   _twiddles(n, half_spectrum(n), n, -1, cdtype, run, arange), run)
    for axis, n in zip(full_axes, lengths):
        scale = np.full(n, 1.0 / n) if sign > 0 else None
        x = _along(x, axis, _twiddles(n, n, n, sign, cdtype, run, arange, scale), run)
    if kind == "irfft":  # the Hermitian half: frequencies 1 .. (n-1)/2 stand for their mirror too
        n = lengths[-1]
        weights = np.full(half_spectrum(n), 2.0 / n)
        weights[0] /= 2
        if n % 2 == 0:
            weights[-1] /= 2
        x = run(E.real_p, _along(x, nd - 1, _twiddles(half_spectrum(n), n, n, 1, cdtype, run, arange, weights), run))
    return x
