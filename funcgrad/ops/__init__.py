"""Every primitive, registered on import. Rules live beside their primitive."""
from . import core, elementwise, reductions, shape, linalg, decompositions, conv, prng  # noqa: F401  (dependencies first)
from .core import Primitive, registry

stop_gradient_p = Primitive("stop_gradient", lambda x: x, differentiable=False)

__all__ = ["Primitive", "registry", "stop_gradient_p"]
