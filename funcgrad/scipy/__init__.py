"""funcgrad.scipy: the jax.scipy functions funcgrad has (funcgrad.scipy.special, .stats, .linalg)."""
from . import linalg, special, stats  # noqa: F401

__all__ = ["linalg", "special", "stats"]
