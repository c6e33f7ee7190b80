"""From unconstrained reals to a constraint's region (torch.distributions.constraint_registry):
biject_to(c) is a bijection onto c (for optimising or sampling a parameter freely, as HMC does);
transform_to(c) is any map onto it (Softmax onto the simplex, not a bijection). Register more with
biject_to.register(constraint_type_or_instance, factory). A constraint with no map registered
(boolean, the integer ones, positive_definite for biject_to, ...) raises NotImplementedError with
PyTorch's message and exception type, which code written against torch catches: a documented limit
of what the registries reach, not an unfinished path."""
from __future__ import annotations

from typing import Callable

from . import constraints, transforms

__all__ = ["ConstraintRegistry", "biject_to", "transform_to"]


class ConstraintRegistry:
    """Transforms by constraint type: a factory(constraint) -> Transform for each."""

    def __init__(self):
        self._registry: dict[type, Callable] = {}

    def register(self, constraint, factory: Callable | None = None):
        """register(constraint, factory), or @register(constraint) over the factory."""
        if factory is None:
            return lambda f: self.register(constraint, f)
        kind = type(constraint) if isinstance(constraint, constraints.Constraint) else constraint
        if not (isinstance(kind, type) and issubclass(kind, constraints.Constraint)):
            raise TypeError(f"register: expected a Constraint subclass or instance, got {constraint!r}")
        self._registry[kind] = factory
        return factory

    def __call__(self, constraint) -> transforms.Transform:
        factory = self._registry.get(type(constraint))
        if factory is None:
            raise NotImplementedError(f"Cannot transform {type(constraint).__name__} constraints")
        return factory(constraint)


biject_to = ConstraintRegistry()
transform_to = ConstraintRegistry()


def _both(constraint_type, factory) -> None:
    """The same map for both registries (a bijection, so transform_to may take it too)."""
    biject_to.register(constraint_type, factory)
    transform_to.register(constraint_type, factory)


def _structural(registry: ConstraintRegistry) -> None:
    """Constraints built from others map through the registry's maps of their parts."""
    registry.register(constraints.independent, lambda c: transforms.IndependentTransform(
        registry(c.base_constraint), c.reinterpreted_batch_ndims))
    registry.register(constraints.cat, lambda c: transforms.CatTransform([registry(p) for p in c.cseq], c.dim,
                                                                         c.lengths))
    registry.register(constraints.stack, lambda c: transforms.StackTransform([registry(p) for p in c.cseq], c.dim))


for _registry in (biject_to, transform_to):
    _structural(_registry)
_both(type(constraints.real), lambda c: transforms.identity_transform)
for _kind in (constraints.greater_than, constraints.greater_than_eq):
    _both(_kind, lambda c: transforms.ComposeTransform((transforms.ExpTransform(),
                                                       transforms.AffineTransform(c.lower_bound, 1.0))))
_both(constraints.less_than, lambda c: transforms.ComposeTransform((transforms.ExpTransform(),
                                                                   transforms.AffineTransform(c.upper_bound, -1.0))))


def _onto_interval(c) -> transforms.Transform:
    unit = isinstance(c.lower_bound, (int, float)) and isinstance(c.upper_bound, (int, float)) and \
        c.lower_bound == 0 and c.upper_bound == 1
    if unit:
        return transforms.SigmoidTransform()
    return transforms.ComposeTransform((transforms.SigmoidTransform(),
                                        transforms.AffineTransform(c.lower_bound, c.upper_bound - c.lower_bound)))


for _kind in (constraints.interval, constraints.half_open_interval):
    _both(_kind, _onto_interval)
_both(constraints.corr_cholesky, lambda c: transforms.CorrCholeskyTransform())
biject_to.register(constraints.simplex, lambda c: transforms.StickBreakingTransform())
transform_to.register(constraints.simplex, lambda c: transforms.SoftmaxTransform())  # onto, not one-to-one
transform_to.register(constraints.lower_cholesky, lambda c: transforms.LowerCholeskyTransform())
for _kind in (constraints.positive_definite, constraints.positive_semidefinite):  # onto both (PyTorch's)
    transform_to.register(_kind, lambda c: transforms.PositiveDefiniteTransform())
