"""Global switches, read on the hot path as plain attributes."""
from __future__ import annotations


class Config:
    """`fg.config.debug_nans = True` raises at the first primitive that produces a NaN."""

    def __init__(self) -> None:
        self.debug_nans = False

    def update(self, name: str, value) -> None:
        if not hasattr(self, name):
            raise AttributeError(f"unknown config option {name!r}; options: {sorted(vars(self))}")
        setattr(self, name, value)


config = Config()
