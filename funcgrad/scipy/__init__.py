"""funcgrad.scipy: the jax.scipy functions funcgrad has (special, stats, linalg, signal, fft,
ndimage, interpolate, integrate, optimize)."""
from . import fft, integrate, interpolate, linalg, ndimage, optimize, signal, special, stats  # noqa: F401

__all__ = ["fft", "integrate", "interpolate", "linalg", "ndimage", "optimize", "signal", "special", "stats"]
