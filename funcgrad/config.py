"""Global switches, read on the hot path as plain attributes."""
from __future__ import annotations


class Config:
    """debug_nans: raise at the first primitive that produces a NaN (eager execution).
    log_compiles: log every jit trace and why it happened (a new shape, dtype or static value).
    disable_jit: run jitted functions eagerly (fg.disable_jit() sets it for a block)."""

    def __init__(self) -> None:
        self.debug_nans = False
        self.log_compiles = False
        self.disable_jit = False

    def update(self, name: str, value) -> None:
        if not hasattr(self, name):
            raise AttributeError(f"unknown config option {name!r}; options: {sorted(vars(self))}")
        setattr(self, name, value)


config = Config()


class Autocast:
    """The active mixed-precision policy (funcgrad.amp.autocast sets it): the low dtype that
    matmuls, convolutions and attention compute in, or None."""
    __slots__ = ("dtype",)

    def __init__(self) -> None:
        self.dtype = None


autocast_state = Autocast()
