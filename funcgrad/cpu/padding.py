"""Zero-padded copies of NCHW images in scratch memory, as NCHW or as channels-last rows, for the
convolutions' window copies (cpu/conv.py).

padding is ((top, bottom), (left, right)), each >= 0."""
from __future__ import annotations

import numpy as np

from .workspace import scratch


def padded_shape(x_shape, padding) -> tuple:
    (top, bottom), (left, right) = padding
    n, c, h, w = x_shape
    return n, c, h + top + bottom, w + left + right


def pad_into(out: np.ndarray, x: np.ndarray, padding) -> None:
    """out (N, C, Hp, Wp), any strides (an NCHW view of channels-last rows too) = x with zero borders."""
    (top, _), (left, _) = padding
    h, w = x.shape[2:]
    out[:, :, :top] = 0
    out[:, :, top + h:] = 0
    out[:, :, top:top + h, :left] = 0
    out[:, :, top:top + h, left + w:] = 0
    out[:, :, top:top + h, left:left + w] = x


def padded(x: np.ndarray, padding) -> np.ndarray:
    """x with zero borders, in scratch memory (valid until the next convolution on this thread)."""
    if not any(lo or hi for lo, hi in padding):
        return x
    out = scratch("conv padded input", padded_shape(x.shape, padding), x.dtype)
    pad_into(out, x, padding)
    return out


def padded_rows(x: np.ndarray, padding, dtype) -> np.ndarray:
    """x (n, C, H, W) transposed to (n, Hp, Wp, C) with zero borders, in scratch memory."""
    n, c, hp, wp = padded_shape(x.shape, padding)
    out = scratch("conv padded rows", (n, hp, wp, c), dtype)
    pad_into(out.transpose(0, 3, 1, 2), x, padding)
    return out
