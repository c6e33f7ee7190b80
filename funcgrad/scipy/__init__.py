"""funcgrad.scipy: the jax.scipy functions funcgrad has (funcgrad.scipy.special, funcgrad.scipy.stats)."""
from . import special, stats  # noqa: F401

__all__ = ["special", "stats"]
