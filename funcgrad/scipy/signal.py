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

__all__ = ["convolve", "correlate", "fftconvolve", "convolve2d", "correlate2d", "detrend", "stft", "istft", "csd",
           "welch"]

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


# ---- spectral analysis: stft, istft, csd, welch -------------------------------------------------------
_WINDOWS = {  # SciPy's get_window(..., fftbins=True): the periodic forms, n / N over one period
    "hann": lambda t: 0.5 - 0.5 * np.cos(2 * np.pi * t),
    "hamming": lambda t: 0.54 - 0.46 * np.cos(2 * np.pi * t),
    "blackman": lambda t: 0.42 - 0.5 * np.cos(2 * np.pi * t) + 0.08 * np.cos(4 * np.pi * t),
    "bartlett": lambda t: 1 - np.abs(2 * t - 1),
    "boxcar": lambda t: np.ones_like(t),
}
_WINDOWS.update({"hanning": _WINDOWS["hann"], "ones": _WINDOWS["boxcar"], "rectangular": _WINDOWS["boxcar"],
                 "triangle": _WINDOWS["bartlett"]})


def _window(window, nperseg: int, dtype) -> Array:
    if isinstance(window, str):
        if window not in _WINDOWS:
            raise ValueError(f"window must be one of {sorted(_WINDOWS)} or an array, got {window!r}")
        return fnp.asarray(_WINDOWS[window](np.arange(nperseg) / nperseg).astype(dtype))
    win = fnp.astype(fnp.asarray(window), dtype)
    if win.shape != (nperseg,):
        raise ValueError(f"the window must have nperseg = {nperseg} samples, got shape {tuple(win.shape)}")
    return win


_EXTENSIONS = {"zeros": "constant", "even": "reflect", "constant": "edge"}


def _segments(x, nperseg, noverlap, boundary, padded, detrend_type):
    """x's overlapping segments (..., segments, nperseg), after SciPy's boundary extension and end
    padding, each detrended."""
    step = nperseg - noverlap
    if boundary is not None:
        if boundary not in ("zeros", "even", "odd", "constant"):
            raise ValueError(f"boundary must be None, 'zeros', 'even', 'odd' or 'constant', got {boundary!r}")
        width = [(0, 0)] * (x.ndim - 1) + [(nperseg // 2, nperseg // 2)]
        if boundary == "odd":  # 2 x_edge - mirror
            mirror = fnp.pad(x, width, mode="reflect")
            edges = fnp.pad(x, width, mode="edge")
            x = 2 * edges - mirror
        else:
            x = fnp.pad(x, width, mode=_EXTENSIONS[boundary])
    if padded:
        extra = (-(x.shape[-1] - nperseg) % step) % nperseg
        x = fnp.pad(x, [(0, 0)] * (x.ndim - 1) + [(0, extra)])
    count = (x.shape[-1] - noverlap) // step
    index = np.arange(count)[:, None] * step + np.arange(nperseg)[None, :]
    frames = fnp.take(x, index, axis=-1)
    if detrend_type in (False, None):
        return frames
    return detrend(frames, axis=-1, type=detrend_type)


def _spectra(x, fs, window, nperseg, noverlap, nfft, detrend_type, onesided, boundary, padded, name):
    """(freqs, the windowed segments' FFTs (..., freqs, segments), the window, nperseg, the step)."""
    x = fnp._float_arg(x)
    if noverlap is None:
        noverlap = nperseg // 2
    nfft = nperseg if nfft is None else int(nfft)
    if not 0 <= noverlap < nperseg or nfft < nperseg:
        raise ValueError(f"{name}: need 0 <= noverlap < nperseg <= nfft, got noverlap={noverlap}, "
                         f"nperseg={nperseg}, nfft={nfft}")
    real = fnp.real(x).dtype
    win = _window(window, nperseg, real)
    frames = _segments(x, nperseg, noverlap, boundary, padded, detrend_type) * win
    if onesided and not dtypes.is_complex(x.dtype):
        spectrum, freqs = _fft.rfft(frames, nfft, axis=-1), np.fft.rfftfreq(nfft, 1 / fs)
    else:
        spectrum, freqs = _fft.fft(frames, nfft, axis=-1), np.fft.fftfreq(nfft, 1 / fs)
    return fnp.asarray(freqs.astype(real)), fnp.swapaxes(spectrum, -1, -2), win, nperseg, noverlap


def stft(x, fs=1.0, window="hann", nperseg: int = 256, noverlap: int | None = None, nfft: int | None = None,
         detrend: bool = False, return_onesided: bool = True, boundary: str | None = "zeros", padded: bool = True,
         axis: int = -1):
    """(freqs, segment times, Zxx): Zxx has the frequencies where x had axis and the segments last,
    scaled by 1 / sum(window), as SciPy's."""
    x = fnp._float_arg(x)
    axis = fnp._normalize_axis(axis, x.ndim)
    x = fnp.moveaxis(x, axis, -1)
    nperseg = min(int(nperseg), x.shape[-1]) if boundary is None else int(nperseg)
    freqs, spectrum, win, nperseg, noverlap = _spectra(x, fs, window, nperseg, noverlap, nfft,
                                                       "constant" if detrend else False, return_onesided, boundary,
                                                       padded, "stft")
    step = nperseg - noverlap
    times = (np.arange(spectrum.shape[-1]) * step + (0 if boundary is not None else nperseg / 2)) / fs
    return freqs, fnp.asarray(times.astype(freqs.dtype)), fnp.moveaxis(spectrum / fnp.sum(win), -2, axis)


def istft(Zxx, fs=1.0, window="hann", nperseg: int | None = None, noverlap: int | None = None,  # noqa: N803
          nfft: int | None = None, input_onesided: bool = True, boundary: bool = True, time_axis: int = -1,
          freq_axis: int = -2):
    """(times, x): the inverse of stft by weighted overlap-add (x = sum w x_seg / sum w^2)."""
    z = fnp.moveaxis(fnp.asarray(Zxx), (freq_axis, time_axis), (-2, -1))
    bins = z.shape[-2]
    nperseg = (2 * (bins - 1) if input_onesided else bins) if nperseg is None else int(nperseg)
    nfft = nperseg if nfft is None else int(nfft)
    noverlap = nperseg // 2 if noverlap is None else int(noverlap)
    step = nperseg - noverlap
    real = fnp.real(z).dtype if dtypes.is_complex(z.dtype) else fnp._float_arg(z).dtype
    win = _window(window, nperseg, real)
    frames = (_fft.irfft(z, nfft, axis=-2) if input_onesided else _fft.ifft(z, nfft, axis=-2))[..., :nperseg, :]
    frames = fnp.swapaxes(frames, -1, -2) * (win * fnp.sum(win))  # (..., segments, nperseg), unscaled
    count = frames.shape[-2]
    length = nperseg + (count - 1) * step
    index = (np.arange(count)[:, None] * step + np.arange(nperseg)[None, :]).ravel()
    lead = tuple(frames.shape[:-2])
    x = fnp.zeros(lead + (length,), frames.dtype).at[..., index].add(fnp.reshape(frames, lead + (count * nperseg,)))
    norm = np.zeros(length)
    np.add.at(norm, index, np.tile(np.asarray(win, np.float64) ** 2, count))
    if boundary:
        x, norm = x[..., nperseg // 2:length - nperseg // 2], norm[nperseg // 2:length - nperseg // 2]
    x = x / fnp.asarray(np.where(norm > 1e-10, norm, 1.0).astype(real))
    return fnp.asarray((np.arange(x.shape[-1]) / fs).astype(real)), x


def _median_bias(n: int) -> float:
    """SciPy's correction of a median of n chi-square(2) periodograms to their mean."""
    ii = 2 * np.arange(1, (n - 1) // 2 + 1)
    return 1 + float(np.sum(1.0 / (ii + 1) - 1.0 / ii))


def csd(x, y, fs=1.0, window="hann", nperseg: int | None = None, noverlap: int | None = None, nfft=None,
        detrend="constant", return_onesided: bool = True, scaling: str = "density", axis: int = -1,
        average: str = "mean"):
    """(freqs, Pxy): the cross spectral density (or spectrum) by Welch's averaged periodograms."""
    if scaling not in ("density", "spectrum") or average not in ("mean", "median"):
        raise ValueError(f"csd: scaling 'density' or 'spectrum' and average 'mean' or 'median', got {scaling!r}, "
                         f"{average!r}")
    x = fnp._float_arg(x)
    axis = fnp._normalize_axis(axis, x.ndim)
    x = fnp.moveaxis(x, axis, -1)
    same = y is None
    y = x if same else fnp.moveaxis(fnp._float_arg(y), axis, -1)
    nperseg = min(256 if nperseg is None else int(nperseg), x.shape[-1])
    onesided = return_onesided and not (dtypes.is_complex(x.dtype) or dtypes.is_complex(y.dtype))
    freqs, fx, win, nperseg, noverlap = _spectra(x, fs, window, nperseg, noverlap, nfft, detrend, onesided, None,
                                                 False, "csd")
    fy = fx if same else _spectra(y, fs, window, nperseg, noverlap, nfft, detrend, onesided, None, False, "csd")[1]
    scale = 1.0 / (fs * fnp.sum(win * win)) if scaling == "density" else 1.0 / fnp.sum(win) ** 2
    p = fnp.conj(fx) * fy * scale
    if onesided:
        n = nperseg if nfft is None else int(nfft)
        double = np.full(p.shape[-2], 2.0)
        double[0] = 1.0
        if n % 2 == 0:
            double[-1] = 1.0
        p = p * fnp.asarray(double[:, None].astype(freqs.dtype))
    if average == "median" and p.shape[-1] > 1:
        med = lambda v: fnp.median(v, axis=-1)  # noqa: E731
        p = (med(fnp.real(p)) + 1j * med(fnp.imag(p)) if dtypes.is_complex(p.dtype) else med(p)) / \
            _median_bias(p.shape[-1])
    else:
        p = fnp.mean(p, axis=-1)
    return freqs, fnp.moveaxis(p, -1, axis)


def welch(x, fs=1.0, window="hann", nperseg: int | None = None, noverlap: int | None = None, nfft=None,
          detrend="constant", return_onesided: bool = True, scaling: str = "density", axis: int = -1,
          average: str = "mean"):
    """(freqs, Pxx): the power spectral density (or spectrum) by Welch's method."""
    freqs, p = csd(x, None, fs, window, nperseg, noverlap, nfft, detrend, return_onesided, scaling, axis, average)
    return freqs, fnp.real(p)
