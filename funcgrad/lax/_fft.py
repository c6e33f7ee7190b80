"""jax.lax.fft: the four FFT kinds of XLA over the trailing axes, by funcgrad.numpy.fft."""
from __future__ import annotations

import enum
from typing import Sequence

from .. import numpy as fnp

__all__ = ["FftType", "fft"]


class FftType(enum.IntEnum):
    FFT = 0
    IFFT = 1
    RFFT = 2
    IRFFT = 3


def fft(x, fft_type: "FftType | str", fft_lengths: Sequence[int]):
    """The transform of the last len(fft_lengths) axes: FFT / IFFT (complex to complex) and RFFT
    (real to the non-negative frequencies) need those axes to have these lengths; IRFFT gives a
    real signal of these lengths."""
    kind = FftType[fft_type.upper()] if isinstance(fft_type, str) else FftType(fft_type)
    x = fnp.asarray(x)
    lengths = tuple(int(n) for n in fft_lengths)
    axes = tuple(range(-len(lengths), 0))
    if not 1 <= len(lengths) <= min(3, x.ndim):
        raise ValueError(f"lax.fft: fft_lengths {lengths} must name 1 to 3 of the {x.ndim} axes")
    minor = tuple(x.shape[-len(lengths):])
    expected = lengths[:-1] + (lengths[-1] // 2 + 1,) if kind is FftType.IRFFT else lengths
    if minor != expected:
        raise ValueError(f"lax.fft: {kind.name} of shape {tuple(x.shape)} needs trailing axes {expected} for "
                         f"fft_lengths {lengths}")
    if kind is FftType.FFT:
        return fnp.fft.fftn(x, axes=axes)
    if kind is FftType.IFFT:
        return fnp.fft.ifftn(x, axes=axes)
    if kind is FftType.RFFT:
        return fnp.fft.rfftn(x, axes=axes)
    return fnp.fft.irfftn(x, s=lengths, axes=axes)
