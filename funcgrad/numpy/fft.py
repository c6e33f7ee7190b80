"""funcgrad.numpy.fft: NumPy's and the Array API's discrete Fourier transforms, differentiable (and
batched under vmap), on one primitive (funcgrad.ops.fft). Signatures and values are NumPy's; dtypes
are PyTorch's: real float32 input gives complex64, integers transform in the default float.

norm: 'backward' (default: the inverse divides by n), 'ortho' (both by sqrt(n)) or 'forward' (the
forward transform divides by n).
"""
from __future__ import annotations

import math
from typing import Sequence

import numpy as np

from .. import dtypes
from ..errors import ShapeError
from ..ops.fft import fft_p, half_spectrum
from ..trace import bind
from . import _base as fnp
from ._shapes import roll

__all__ = ["fft", "ifft", "fftn", "ifftn", "rfft", "irfft", "rfftn", "irfftn", "fft2", "ifft2", "rfft2", "irfft2",
           "hfft", "ihfft", "fftfreq", "rfftfreq", "fftshift", "ifftshift"]

_NORMS = ("backward", "ortho", "forward")
_SWAPPED = {"backward": "forward", "ortho": "ortho", "forward": "backward"}


def _real_input(a, name: str):
    x = fnp._float_arg(a)
    if dtypes.is_complex(x.dtype):
        raise TypeError(f"{name} transforms real arrays, not {x.dtype} (use fft for complex input)")
    return fnp.astype(x, dtypes.float32) if x.dtype in dtypes.low_precision else x


def _axes_and_lengths(x, s, axes, name: str, kind: str) -> tuple[list[int], list[int]]:
    """NumPy's defaults: all axes (or the last len(s)); lengths the input's, or for irfft's last
    axis 2 * (m - 1)."""
    if axes is None:
        axes = range(x.ndim) if s is None else range(x.ndim - len(s), x.ndim)
    axes = [fnp._normalize_axis(a, x.ndim) for a in axes]
    if len(set(axes)) != len(axes):
        raise ValueError(f"{name}: repeated axes {axes}")
    if not axes:
        raise ValueError(f"{name} needs at least one axis to transform")
    if s is None:
        lengths = [x.shape[a] for a in axes]
        if kind == "irfft":
            lengths[-1] = 2 * (lengths[-1] - 1)
    else:
        if len(s) != len(axes):
            raise ShapeError(f"{name}: s {tuple(s)} and axes {tuple(axes)} differ in length")
        lengths = [x.shape[a] if n in (None, -1) else int(n) for n, a in zip(s, axes)]
    if any(n < 1 for n in lengths):
        raise ValueError(f"{name}: invalid number of data points {lengths} (each must be at least 1)")
    return axes, lengths


def _fit(x, axis: int, n: int):
    """x cropped or zero-padded to n along axis (NumPy's n=)."""
    have = x.shape[axis]
    if have > n:
        return fnp.take(x, np.arange(n), axis=axis)
    if have < n:
        widths = [(0, 0)] * x.ndim
        widths[axis] = (0, n - have)
        return fnp.pad(x, widths)
    return x


def _transform(x, kind: str, s, axes, norm, name: str):
    norm = "backward" if norm is None else norm
    if norm not in _NORMS:
        raise ValueError(f"{name}: norm {norm!r} is not one of {_NORMS}")
    axes, lengths = _axes_and_lengths(x, s, axes, name, kind)
    for axis, n in zip(axes, lengths):
        x = _fit(x, axis, half_spectrum(n) if kind == "irfft" and axis == axes[-1] else n)
    moved = fnp.moveaxis(x, axes, list(range(x.ndim - len(axes), x.ndim)))
    out = fnp.moveaxis(bind(fft_p, moved, kind=kind, lengths=tuple(lengths)),
                       list(range(x.ndim - len(axes), x.ndim)), axes)
    total = math.prod(lengths)
    inverse = kind in ("ifft", "irfft")
    scale = {"backward": 1.0, "ortho": (math.sqrt(total) if inverse else 1 / math.sqrt(total)),
             "forward": (total if inverse else 1 / total)}[norm]
    return out if scale == 1.0 else fnp.multiply(out, scale)


def _one_axis(n, axis):
    return None if n is None else [n], [axis]


def fft(a, n: int | None = None, axis: int = -1, norm: str | None = None):
    """The one-dimensional DFT along axis (complex output)."""
    return _transform(fnp._complex_arg(a), "fft", *_one_axis(n, axis), norm, "fft")


def ifft(a, n: int | None = None, axis: int = -1, norm: str | None = None):
    return _transform(fnp._complex_arg(a), "ifft", *_one_axis(n, axis), norm, "ifft")


def rfft(a, n: int | None = None, axis: int = -1, norm: str | None = None):
    """The DFT of real input: the n // 2 + 1 non-negative frequencies."""
    return _transform(_real_input(a, "rfft"), "rfft", *_one_axis(n, axis), norm, "rfft")


def irfft(a, n: int | None = None, axis: int = -1, norm: str | None = None):
    """The inverse of rfft: n real values (default 2 * (m - 1)) from m non-negative frequencies."""
    return _transform(fnp._complex_arg(a), "irfft", *_one_axis(n, axis), norm, "irfft")


def fftn(a, s: Sequence[int] | None = None, axes: Sequence[int] | None = None, norm: str | None = None):
    return _transform(fnp._complex_arg(a), "fft", s, axes, norm, "fftn")


def ifftn(a, s: Sequence[int] | None = None, axes: Sequence[int] | None = None, norm: str | None = None):
    return _transform(fnp._complex_arg(a), "ifft", s, axes, norm, "ifftn")


def rfftn(a, s: Sequence[int] | None = None, axes: Sequence[int] | None = None, norm: str | None = None):
    return _transform(_real_input(a, "rfftn"), "rfft", s, axes, norm, "rfftn")


def irfftn(a, s: Sequence[int] | None = None, axes: Sequence[int] | None = None, norm: str | None = None):
    return _transform(fnp._complex_arg(a), "irfft", s, axes, norm, "irfftn")


def fft2(a, s=None, axes: Sequence[int] = (-2, -1), norm: str | None = None):
    return fftn(a, s, axes, norm)


def ifft2(a, s=None, axes: Sequence[int] = (-2, -1), norm: str | None = None):
    return ifftn(a, s, axes, norm)


def rfft2(a, s=None, axes: Sequence[int] = (-2, -1), norm: str | None = None):
    return rfftn(a, s, axes, norm)


def irfft2(a, s=None, axes: Sequence[int] = (-2, -1), norm: str | None = None):
    return irfftn(a, s, axes, norm)


def _swapped(norm):
    norm = "backward" if norm is None else norm
    return _SWAPPED.get(norm, norm)  # an unknown norm is named by _transform


def hfft(a, n: int | None = None, axis: int = -1, norm: str | None = None):
    """The DFT of a signal with Hermitian symmetry, given by its non-negative frequencies: real output."""
    return irfft(fnp.conj(fnp._complex_arg(a)), n, axis, _swapped(norm))


def ihfft(a, n: int | None = None, axis: int = -1, norm: str | None = None):
    """The inverse of hfft: the non-negative frequencies of a real signal's Hermitian spectrum."""
    return fnp.conj(rfft(a, n, axis, _swapped(norm)))


def fftfreq(n: int, d: float = 1.0, *, dtype=None, device=None):
    """The sample frequencies of an n-point DFT: 0, 1, ..., -(n // 2), ..., -1, over n * d."""
    n = int(n)
    if n < 1:
        raise ValueError(f"fftfreq: n must be positive, got {n}")
    k = np.concatenate([np.arange((n - 1) // 2 + 1), np.arange(-(n // 2), 0)])
    return fnp.asarray(k / (n * d), dtype=dtypes.default_float if dtype is None else dtype, device=device)


def rfftfreq(n: int, d: float = 1.0, *, dtype=None, device=None):
    """The sample frequencies rfft's output holds: 0, 1, ..., n // 2, over n * d."""
    n = int(n)
    if n < 1:
        raise ValueError(f"rfftfreq: n must be positive, got {n}")
    return fnp.asarray(np.arange(n // 2 + 1) / (n * d), dtype=dtypes.default_float if dtype is None else dtype,
                       device=device)


def _shift(x, axes, direction: int):
    x = fnp.asarray(x)
    axes = range(x.ndim) if axes is None else [axes] if isinstance(axes, int) else axes
    axes = [fnp._normalize_axis(a, x.ndim) for a in axes]
    return roll(x, [direction * (x.shape[a] // 2) for a in axes], axes) if axes else x


def fftshift(x, axes=None):
    """The zero frequency moved to the centre (along every axis, or the ones given)."""
    return _shift(x, axes, 1)


def ifftshift(x, axes=None):
    """The inverse of fftshift."""
    return _shift(x, axes, -1)
