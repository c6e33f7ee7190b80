"""Mixed precision: autocast regions and dynamic loss scaling (torch.autocast and GradScaler).

    with fg.amp.autocast(fg.bfloat16):
        loss, grads = fg.value_and_grad(loss_fn)(params, x, y)

Inside autocast, float32 matmuls, einsums, convolutions and attention round their operands to the
low dtype, accumulate in float32 and return the low dtype (so activations really take half the
memory); softmax, log_softmax, layer norm, reductions and losses widen low-precision inputs to
float32. Parameters stay float32 (master weights) and receive float32 gradients. On the CPU the
low-precision arithmetic is emulated by rounding, as PyTorch's CPU autocast does.

DynamicLossScale keeps float16 gradients from underflowing: multiply the loss by the scale,
unscale the gradients, skip the step when any gradient is not finite and halve the scale;
after growth_interval finite steps in a row, double it.
"""
from __future__ import annotations

import contextlib

from . import dtypes
from . import numpy as fnp
from .config import autocast_state
from .control import cond
from .tree import register_dataclass, static_field, tree_leaves, tree_map

__all__ = ["autocast", "DynamicLossScale"]


@contextlib.contextmanager
def autocast(dtype=dtypes.bfloat16, enabled: bool = True):
    """Compute matmul-like operations in `dtype` (bfloat16 or float16) inside the block."""
    dtype = dtypes.canonicalize(dtype)
    if dtype not in dtypes.low_precision:
        raise ValueError(f"autocast needs bfloat16 or float16, got {dtype}")
    previous = autocast_state.dtype
    autocast_state.dtype = dtype if enabled else None
    try:
        yield
    finally:
        autocast_state.dtype = previous


@register_dataclass
class DynamicLossScale:
    """Pure loss-scaling state; every method returns values, nothing is mutated."""
    scale: object
    good_steps: object
    growth_interval: int = static_field(default=2000)
    growth_factor: float = static_field(default=2.0)
    backoff_factor: float = static_field(default=0.5)

    @classmethod
    def create(cls, init_scale: float = 2.0 ** 16, growth_interval: int = 2000, growth_factor: float = 2.0,
               backoff_factor: float = 0.5) -> "DynamicLossScale":
        return cls(fnp.asarray(float(init_scale), dtype=dtypes.float32), fnp.zeros((), dtype=dtypes.int64),
                   growth_interval, growth_factor, backoff_factor)

    def scale_loss(self, loss):
        return loss * fnp.astype(self.scale, fnp.asarray(loss).dtype)

    def unscale(self, grads):
        """(grads / scale in float32, whether every gradient is finite)."""
        inverse = 1.0 / self.scale
        unscaled = tree_map(lambda g: fnp.astype(g, dtypes.float32) * inverse, grads)
        leaves = tree_leaves(unscaled)
        finite = fnp.all(fnp.stack([fnp.all(fnp.isfinite(g)) for g in leaves])) if leaves else fnp.asarray(True)
        return unscaled, finite

    def update(self, finite) -> "DynamicLossScale":
        def grow_or_count():
            grown = self.good_steps + 1 >= self.growth_interval
            larger = self.scale * self.growth_factor
            # grown only to a finite scale (PyTorch's rule): an infinite one would skip every step after it
            return (fnp.where(grown & fnp.isfinite(larger), larger, self.scale),
                    fnp.where(grown, 0, self.good_steps + 1))

        def back_off():
            return self.scale * self.backoff_factor, self.good_steps * 0

        scale, good = cond(finite, grow_or_count, back_off)
        return DynamicLossScale(scale, good, self.growth_interval, self.growth_factor, self.backoff_factor)
