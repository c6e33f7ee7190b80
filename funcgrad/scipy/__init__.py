"""funcgrad.scipy: the jax.scipy functions funcgrad has (funcgrad.scipy.special, .stats, .linalg,
.signal, .fft)."""
from . import fft, linalg, signal, special, stats  # noqa: F401

__all__ = ["fft", "linalg", "signal", "special", "stats"]
