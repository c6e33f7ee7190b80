"""funcgrad.scipy.fft: the discrete cosine transforms of types 2 and 3 (jax.scipy.fft's dct,
idct, dctn, idctn; JAX has type 2 only), with SciPy's n / s, axis / axes and norm ('backward',
'ortho', 'forward'). Type 2 is Makhoul's reordering and one complex FFT of the same length, type 3
its exact inverse, so both are differentiable and run wherever fnp.fft does."""
from __future__ import annotations

import math

import numpy as np

from .. import dtypes
from .. import numpy as fnp
from ..array import Array
from ..numpy import fft as _fft

__all__ = ["dct", "idct", "dctn", "idctn"]


def _dct2(x):
    """The unnormalised DCT-II along the last axis: y_k = 2 sum_n x_n cos(pi k (2n + 1) / 2N)."""
    n = x.shape[-1]
    v = fnp.concatenate([x[..., ::2], fnp.flip(x[..., 1::2], axis=-1)], axis=-1)
    twiddle = np.exp(-1j * np.pi * np.arange(n) / (2 * n))
    return 2 * fnp.real(_fft.fft(v, axis=-1) * fnp.asarray(twiddle.astype(dtypes.complex_dtype(x.dtype))))


def _idct2(y):
    """The exact inverse of _dct2 along the last axis."""
    n = y.shape[-1]
    reversed_tail = fnp.concatenate([fnp.zeros_like(y[..., :1]), fnp.flip(y[..., 1:], axis=-1)], axis=-1)
    twiddle = fnp.asarray((0.5 * np.exp(1j * np.pi * np.arange(n) / (2 * n))).astype(dtypes.complex_dtype(y.dtype)))
    v = fnp.real(_fft.ifft(twiddle * (y - 1j * reversed_tail), axis=-1))
    order = np.where(np.arange(n) % 2 == 0, np.arange(n) // 2, n - 1 - np.arange(n) // 2)
    return fnp.take(v, order, axis=-1)


def _ortho(n: int, dtype) -> np.ndarray:
    """The 'ortho' scale of DCT-II's outputs: sqrt(1 / 4N) for the first, sqrt(1 / 2N) for the rest."""
    f = np.full(n, math.sqrt(1 / (2 * n)))
    f[0] = math.sqrt(1 / (4 * n))
    return f.astype(dtype)


def _transform(x, kind: int, inverse: bool, norm):
    """The DCT of type kind (or its inverse) along the last axis."""
    n = x.shape[-1]
    norm = "backward" if norm is None else norm
    if norm not in ("backward", "ortho", "forward"):
        raise ValueError(f"norm must be None, 'backward', 'ortho' or 'forward', got {norm!r}")
    two = (kind == 2) != inverse  # a DCT-II (an inverse DCT-III is one)
    if norm == "ortho":
        f = fnp.asarray(_ortho(n, x.dtype))
        return f * _dct2(x) if two else _idct2(x / f)
    scale_back = (norm == "backward") == inverse  # inverse 'backward' and forward 'forward' divide by 2N
    if two:
        return _dct2(x) / (2 * n) if scale_back else _dct2(x)
    return _idct2(x) if scale_back else 2 * n * _idct2(x)


def _along(x, kind, n, axis, norm, inverse, name):
    if kind not in (2, 3):
        raise ValueError(f"{name}: type must be 2 or 3, got {kind!r}")
    x = fnp._float_arg(x)
    if dtypes.is_complex(x.dtype):
        return (_along(fnp.real(x), kind, n, axis, norm, inverse, name)
                + 1j * _along(fnp.imag(x), kind, n, axis, norm, inverse, name))
    axis = fnp._normalize_axis(axis, x.ndim)
    moved = fnp.moveaxis(x, axis, -1)
    if n is not None:
        length = moved.shape[-1]
        if n < 1:
            raise ValueError(f"{name}: n must be positive, got {n}")
        moved = moved[..., :n] if n <= length else fnp.pad(moved, [(0, 0)] * (moved.ndim - 1) + [(0, n - length)])
    return fnp.moveaxis(_transform(moved, kind, inverse, norm), -1, axis)


def dct(x, type: int = 2, n: int | None = None, axis: int = -1, norm=None) -> Array:  # noqa: A002
    """The discrete cosine transform along axis (x cut or zero-padded to n first)."""
    return _along(x, type, n, axis, norm, False, "dct")


def idct(x, type: int = 2, n: int | None = None, axis: int = -1, norm=None) -> Array:  # noqa: A002
    """The inverse of dct of the same type and norm."""
    return _along(x, type, n, axis, norm, True, "idct")


def _over(x, kind, s, axes, norm, inverse, name):
    x = fnp.asarray(x)
    axes = tuple(range(x.ndim)) if axes is None else tuple(np.atleast_1d(axes))
    s = [None] * len(axes) if s is None else list(np.atleast_1d(s))
    if len(s) != len(axes):
        raise ValueError(f"{name}: s and axes must have one length, got {s} and {axes}")
    for axis, n in zip(axes, s):
        x = _along(x, kind, None if n is None else int(n), int(axis), norm, inverse, name)
    return x


def dctn(x, type: int = 2, s=None, axes=None, norm=None) -> Array:  # noqa: A002
    """dct over several axes (all by default), s the lengths."""
    return _over(x, type, s, axes, norm, False, "dctn")


def idctn(x, type: int = 2, s=None, axes=None, norm=None) -> Array:  # noqa: A002
    return _over(x, type, s, axes, norm, True, "idctn")
