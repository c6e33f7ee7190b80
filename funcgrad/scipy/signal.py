"""funcgrad.scipy.signal: jax.scipy.signal's convolutions with SciPy's modes. N-d real convolutions
and correlations run directly (lax.conv_general_dilated: no FFT rounding, integer inputs exact),
complex ones and fftconvolve through FFTs; 'same' centres on in1 and 'valid' keeps the positions
where one input covers the other, as SciPy's."""
from __future__ import annotations

import numpy as np

from .. import dtypes
from .. import numpy as fnp
from ..array import Array
from ..lax import _windows
from ..numpy import fft as _fft

__all__ = ["convolve", "correlate", "fftconvolve", "convolve2d", "correlate2d", "detrend"]

_MODES = ("full", "same", "valid")


def _pair(in1, in2, name: str):
    in1, in2 = fnp._common([fnp.asarray(in1), fnp.asarray(in2)])
    if in1.ndim != in2.ndim:
        raise ValueError(f"{name}: in1 and in2 must have the same number of dimensions, got shapes "
                         f"{tuple(in1.shape)} and {tuple(in2.shape)}")
    if in1.size == 0 or in2.size == 0:
        raise ValueError(f"{name}: inputs cannot be empty, got shapes {tuple(in1.shape)} and {tuple(in2.shape)}")
    return in1, in2


def _crop(full, s1, s2, mode: str, axes, name: str):
    """The mode's part of a full result along axes (s1, s2: the inputs' lengths there)."""
    if mode not in _MODES:
        raise ValueError(f"{name}: mode must be 'full', 'same' or 'valid', got {mode!r}")
    if mode == "full":
        return full
    if mode == "valid" and not (all(a >= b for a, b in zip(s1, s2)) or all(a <= b for a, b in zip(s1, s2))):
        raise ValueError(f"{name}: in 'valid' mode one input must be at least as large as the other in every "
                         f"dimension, got {tuple(s1)} and {tuple(s2)}")
    index = [slice(None)] * full.ndim
    for axis, a, b in zip(axes, s1, s2):
        if mode == "same":
            start = (a + b - 1 - a) // 2
            index[axis] = slice(start, start + a)
        else:
            index[axis] = slice(min(a, b) - 1, max(a, b))
    return full[tuple(index)]


def _full_direct(in1, in2):
    """The full N-d cross-correlation sum_n in1[n + k] in2[n] (1 to 3 axes), without FFTs."""
    shape1, shape2 = tuple(in1.shape), tuple(in2.shape)
    compute = in1.dtype if dtypes.is_float(in1.dtype) else dtypes.float64
    lhs = fnp.reshape(fnp.astype(in1, compute), (1, 1) + shape1)
    rhs = fnp.reshape(fnp.astype(in2, compute), (1, 1) + shape2)
    out = _windows.conv_general_dilated(lhs, rhs, (1,) * len(shape1), [(k - 1, k - 1) for k in shape2])[0, 0]
    return out if compute == in1.dtype else fnp.astype(fnp.rint(out), in1.dtype)


def _full_fft(in1, in2, axes):
    """The full convolution along axes by FFTs (real FFTs for real inputs)."""
    lengths = [in1.shape[a] + in2.shape[a] - 1 for a in axes]
    if dtypes.is_complex(in1.dtype):
        spectrum = _fft.fftn(in1, lengths, axes) * _fft.fftn(in2, lengths, axes)
        return _fft.ifftn(spectrum, lengths, axes)
    floating = fnp._float_arg(in1)
    spectrum = _fft.rfftn(floating, lengths, axes) * _fft.rfftn(fnp.astype(in2, floating.dtype), lengths, axes)
    return _fft.irfftn(spectrum, lengths, axes)


def _like(out, dtype):
    """An FFT result in the inputs' dtype: integers rounded back, as SciPy's."""
    if dtypes.is_inexact(dtype):
        return out
    return fnp.astype(fnp.rint(out), dtype)


def _direct(in1, in2) -> bool:
    return 1 <= in1.ndim <= 3 and not dtypes.is_complex(in1.dtype)


def _filtered(in1, in2, mode: str, method: str, name: str, correlation: bool):
    """The mode's part of the full convolution (or cross-correlation) of in1 with in2."""
    if method not in ("auto", "direct", "fft"):
        raise ValueError(f"{name}: method must be 'auto', 'direct' or 'fft', got {method!r}")
    in1, in2 = _pair(in1, in2, name)
    axes = tuple(range(in1.ndim))
    if method != "fft" and _direct(in1, in2):  # lax's convolution is a cross-correlation
        full = _full_direct(in1, in2 if correlation else fnp.flip(in2))
    else:
        full = _like(_full_fft(in1, fnp.flip(fnp.conj(in2)) if correlation else in2, axes), in1.dtype)
    return _crop(full, in1.shape, in2.shape, mode, axes, name)


def correlate(in1, in2, mode: str = "full", method: str = "auto") -> Array:
    """The N-d cross-correlation z[k] = sum_n in1[n + k] conj(in2[n])."""
    return _filtered(in1, in2, mode, method, "correlate", correlation=True)


def convolve(in1, in2, mode: str = "full", method: str = "auto") -> Array:
    """The N-d convolution z[k] = sum_n in1[n] in2[k - n]."""
    return _filtered(in1, in2, mode, method, "convolve", correlation=False)


def fftconvolve(in1, in2, mode: str = "full", axes=None) -> Array:
    """convolve by FFTs over axes (all by default); the other axes broadcast."""
    in1, in2 = _pair(in1, in2, "fftconvolve")
    axes = tuple(range(in1.ndim)) if axes is None else \
        tuple(fnp._normalize_axis(a, in1.ndim) for a in np.atleast_1d(axes))
    for a in range(in1.ndim):
        if a not in axes and in1.shape[a] != in2.shape[a] and 1 not in (in1.shape[a], in2.shape[a]):
            raise ValueError(f"fftconvolve: axis {a} is not convolved, so its lengths {in1.shape[a]} and "
                             f"{in2.shape[a]} must be equal or 1")
    full = _full_fft(in1, in2, axes)
    return _crop(full, [in1.shape[a] for a in axes], [in2.shape[a] for a in axes], mode, axes, "fftconvolve")


_BOUNDARIES = {"fill": "constant", "wrap": "wrap", "symm": "symmetric"}


def convolve2d(in1, in2, mode: str = "full", boundary: str = "fill", fillvalue=0) -> Array:
    """The 2-D convolution, in1 extended beyond its edges by fillvalue ('fill'), periodically
    ('wrap') or mirrored ('symm')."""
    return _two_d(in1, in2, mode, boundary, fillvalue, "convolve2d", flip=True)


def correlate2d(in1, in2, mode: str = "full", boundary: str = "fill", fillvalue=0) -> Array:
    """The 2-D cross-correlation with convolve2d's boundaries."""
    return _two_d(in1, in2, mode, boundary, fillvalue, "correlate2d", flip=False)


def _two_d(in1, in2, mode, boundary, fillvalue, name, flip):
    in1, in2 = _pair(in1, in2, name)
    if in1.ndim != 2:
        raise ValueError(f"{name} takes 2-D arrays, got shapes {tuple(in1.shape)} and {tuple(in2.shape)}")
    if boundary not in _BOUNDARIES:
        raise ValueError(f"{name}: boundary must be 'fill', 'wrap' or 'symm', got {boundary!r}")
    if mode not in _MODES:
        raise ValueError(f"{name}: mode must be 'full', 'same' or 'valid', got {mode!r}")
    kernel = fnp.flip(in2) if flip else fnp.conj(in2)
    if mode == "valid":
        full = _full_direct(in1, kernel) if _direct(in1, in2) else _full_fft(in1, fnp.flip(kernel), (0, 1))
        return _crop(full, in1.shape, in2.shape, "valid", (0, 1), name)
    rows, cols = in2.shape
    extra = {"constant_values": fillvalue} if boundary == "fill" else {}
    padded = fnp.pad(in1, ((rows - 1, rows - 1), (cols - 1, cols - 1)), mode=_BOUNDARIES[boundary], **extra)
    full = _crop(_full_direct(padded, kernel) if _direct(in1, in2) else _full_fft(padded, fnp.flip(kernel), (0, 1)),
                 padded.shape, in2.shape, "valid", (0, 1), name)
    if mode == "full":
        return full
    if flip:
        return _crop(full, in1.shape, in2.shape, "same", (0, 1), name)
    r0, c0 = (rows - 1) - (rows - 1) // 2, (cols - 1) - (cols - 1) // 2  # correlation centres the other way
    return full[r0:r0 + in1.shape[0], c0:c0 + in1.shape[1]]


def detrend(data, axis: int = -1, type: str = "linear", bp=0, overwrite_data=None) -> Array:  # noqa: A002
    """data less its mean ('constant') or its least-squares line ('linear') along axis."""
    if type not in ("linear", "l", "constant", "c"):
        raise ValueError(f"detrend: type must be 'linear' or 'constant', got {type!r}")
    if np.ndim(bp) or bp != 0:
        raise ValueError("detrend: breakpoints (bp) other than 0 are not available")
    data = fnp._float_arg(data)
    axis = fnp._normalize_axis(axis, data.ndim)
    if type in ("constant", "c"):
        return data - fnp.mean(data, axis=axis, keepdims=True)
    n = data.shape[axis]
    t = np.arange(n, dtype=np.float64) - (n - 1) / 2  # centred: the line's two coefficients decouple
    shape = [1] * data.ndim
    shape[axis] = n
    t = fnp.reshape(fnp.asarray(t, dtype=data.dtype), shape)
    slope = fnp.sum(data * t, axis=axis, keepdims=True) / max(float(np.sum((np.arange(n) - (n - 1) / 2) ** 2)), 1e-300)
    return data - fnp.mean(data, axis=axis, keepdims=True) - slope * t
