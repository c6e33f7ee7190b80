"""funcgrad.scipy: the jax.scipy functions funcgrad has (import funcgrad.scipy.special)."""
from . import special  # noqa: F401

__all__ = ["special"]
