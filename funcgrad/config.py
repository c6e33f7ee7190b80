"""Global switches, read on the hot path as plain attributes."""
from __future__ import annotations


class Config:
    """debug_nans: raise at the first primitive that produces a NaN (eager execution).
    log_compiles: log every jit trace and why it happened (a new shape, dtype or static value)."""

    def __init__(self) -> None:
        self.debug_nans = False
        self.log_compiles = False

    def update(self, name: str, value) -> None:
        if not hasattr(self, name):
            raise AttributeError(f"unknown config option {name!r}; options: {sorted(vars(self))}")
        setattr(self, name, value)


config = Config()
