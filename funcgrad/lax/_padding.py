"""lax.pad: XLA's Pad (low, high and interior padding; negative low or high crop), which the
convolutions' input dilation and padding use too."""
from __future__ import annotations

from .. import dtypes
from .. import numpy as fnp


def pad(operand, padding_value, padding_config):
    """operand padded with padding_value by (low, high, interior) per axis: interior values between
    neighbours, negative low or high crop (XLA's Pad)."""
    operand = fnp.asarray(operand)
    if len(padding_config) != operand.ndim:
        raise ValueError(f"pad: {operand.ndim} axes need {operand.ndim} (low, high, interior) triples, got "
                         f"{len(padding_config)}")
    value = fnp.astype(fnp._beside(padding_value, operand), operand.dtype)
    for axis, (low, high, interior) in enumerate(padding_config):
        if interior < 0:
            raise ValueError(f"pad: interior padding must be non-negative, got {interior} on axis {axis}")
        n = operand.shape[axis]
        if interior and n > 1:  # spread the elements interior + 1 apart over a filled axis
            spread = list(operand.shape)
            spread[axis] = n + (n - 1) * interior
            positions = [slice(None)] * operand.ndim
            positions[axis] = slice(None, None, interior + 1)
            operand = fnp.broadcast_to(value, tuple(spread)).at[tuple(positions)].set(operand)
        widths = [(0, 0)] * operand.ndim
        widths[axis] = (max(low, 0), max(high, 0))
        if low > 0 or high > 0:
            operand = _padded_with(operand, widths, value)
        if low < 0 or high < 0:
            length = operand.shape[axis]
            positions = [slice(None)] * operand.ndim
            positions[axis] = slice(-low if low < 0 else 0, length + high if high < 0 else length)
            operand = operand[tuple(positions)]
    return operand


def _padded_with(operand, widths, value):
    """Constant padding by a value that may be an Array (a traced padding value)."""
    zeros = fnp.pad(operand, widths)
    mask = fnp.pad(fnp.zeros(operand.shape, dtypes.bool_, device=operand.device), widths, constant_values=True)
    return fnp.where(mask, value, zeros)
