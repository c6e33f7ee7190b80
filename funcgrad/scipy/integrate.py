"""funcgrad.scipy.integrate: trapezoid (jax.scipy.integrate's), the composite trapezoidal rule."""
from __future__ import annotations

from ..numpy import trapezoid

__all__ = ["trapezoid"]
