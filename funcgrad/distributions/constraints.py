"""Where values may lie (torch.distributions.constraints): a distribution's support and its
parameters' domains, each a Constraint whose check(value) is an array of bools over the batch (an
event of event_dim axes is one value). The names, reprs and checks are PyTorch's."""
from __future__ import annotations

from .. import numpy as fnp

__all__ = ["Constraint", "boolean", "cat", "corr_cholesky", "dependent", "dependent_property", "greater_than",
           "greater_than_eq", "half_open_interval", "independent", "integer_interval", "interval", "is_dependent",
           "less_than", "lower_cholesky", "lower_triangular", "multinomial", "nonnegative", "nonnegative_integer",
           "one_hot", "positive", "positive_definite", "positive_integer", "positive_semidefinite", "real",
           "real_vector", "simplex", "square", "stack", "symmetric", "unit_interval"]


class Constraint:
    """A region values must lie in. is_discrete: its values are integers; event_dim: how many
    rightmost axes one value spans."""
    is_discrete = False
    event_dim = 0

    def check(self, value):
        """Whether each value (each event of event_dim axes) lies in the region."""
        raise TypeError(f"{type(self).__name__} has no check: it depends on a distribution's parameters")

    def describe(self) -> str:
        """The constraint as an error message says it: 'positive', or 'in Interval(...)'."""
        return f"in {self!r}"

    def __repr__(self) -> str:
        return f"{type(self).__name__}()"


class _Dependent(Constraint):
    """A constraint set by other parameters (Uniform's low and high, a transform's domain): it has
    no check of its own."""

    def __init__(self, *, is_discrete: bool = False, event_dim: int = 0):
        self.is_discrete, self.event_dim = is_discrete, event_dim

    def __call__(self, *, is_discrete: bool | None = None, event_dim: int | None = None) -> "_Dependent":
        return _Dependent(is_discrete=self.is_discrete if is_discrete is None else is_discrete,
                          event_dim=self.event_dim if event_dim is None else event_dim)


def is_dependent(constraint) -> bool:
    return isinstance(constraint, _Dependent)


class dependent_property(property):
    """A property whose value is a constraint that depends on the parameters (a support)."""

    def __init__(self, fn=None, *, is_discrete: bool = False, event_dim: int = 0):
        super().__init__(fn)
        self.is_discrete, self.event_dim = is_discrete, event_dim

    def __call__(self, fn):
        return dependent_property(fn, is_discrete=self.is_discrete, event_dim=self.event_dim)


class _Real(Constraint):
    def check(self, value):
        return value == value  # NaN is not real

    def describe(self) -> str:
        return "real"


class _Boolean(Constraint):
    is_discrete = True

    def check(self, value):
        return (value == 0) | (value == 1)


class _Bound(Constraint):
    """lower_bound / upper_bound, either or both."""
    _describe = ""

    def __init__(self, lower_bound=None, upper_bound=None):
        if lower_bound is not None:
            self.lower_bound = lower_bound
        if upper_bound is not None:
            self.upper_bound = upper_bound

    def __repr__(self) -> str:
        bounds = [f"{k}={v}" for k, v in vars(self).items() if k in ("lower_bound", "upper_bound")]
        return f"{type(self).__name__}({', '.join(bounds)})"

    def describe(self) -> str:
        zero = all(isinstance(v, (int, float)) and v == 0 for v in (getattr(self, "lower_bound", 0),))
        return self._describe if self._describe and zero else f"in {self!r}"


class _GreaterThan(_Bound):
    _describe = "positive"

    def __init__(self, lower_bound):
        super().__init__(lower_bound=lower_bound)

    def check(self, value):
        return self.lower_bound < value


class _GreaterThanEq(_Bound):
    _describe = "non-negative"

    def __init__(self, lower_bound):
        super().__init__(lower_bound=lower_bound)

    def check(self, value):
        return self.lower_bound <= value


class _LessThan(_Bound):
    def __init__(self, upper_bound):
        super().__init__(upper_bound=upper_bound)

    def check(self, value):
        return value < self.upper_bound


class _Interval(_Bound):
    def __init__(self, lower_bound, upper_bound):
        super().__init__(lower_bound, upper_bound)

    def check(self, value):
        return (self.lower_bound <= value) & (value <= self.upper_bound)


class _HalfOpenInterval(_Interval):
    def check(self, value):
        return (self.lower_bound <= value) & (value < self.upper_bound)


class _IntegerInterval(_Interval):
    is_discrete = True

    def check(self, value):
        return (value % 1 == 0) & super().check(value)


class _IntegerGreaterThan(_GreaterThanEq):
    is_discrete = True

    def check(self, value):
        return (value % 1 == 0) & super().check(value)


class _Simplex(Constraint):
    event_dim = 1

    def check(self, value):
        return fnp.all(value >= 0, axis=-1) & (fnp.abs(fnp.sum(value, -1) - 1) < 1e-6)


class _OneHot(Constraint):
    is_discrete, event_dim = True, 1

    def check(self, value):
        return fnp.all((value == 0) | (value == 1), axis=-1) & (fnp.sum(value, -1) == 1)


class _Multinomial(Constraint):
    is_discrete, event_dim = True, 1

    def __init__(self, upper_bound):
        self.upper_bound = upper_bound

    def check(self, value):
        return fnp.all(value >= 0, axis=-1) & (fnp.sum(value, -1) <= self.upper_bound)


class _LowerTriangular(Constraint):
    event_dim = 2

    def check(self, value):
        return fnp.all(fnp.tril(value) == value, axis=(-2, -1))


class _LowerCholesky(_LowerTriangular):
    def check(self, value):
        return super().check(value) & fnp.all(fnp.diagonal(value, axis1=-2, axis2=-1) > 0, axis=-1)


class _CorrCholesky(_LowerCholesky):
    def check(self, value):
        tol = float(fnp.finfo(value.dtype).eps) * value.shape[-1] * 10
        unit_rows = fnp.all(fnp.abs(fnp.linalg.norm(fnp.stop_gradient(value), axis=-1) - 1) <= tol, axis=-1)
        return super().check(value) & unit_rows


class _Square(Constraint):
    event_dim = 2

    def check(self, value):
        return fnp.full(value.shape[:-2], value.shape[-2] == value.shape[-1], dtype=bool)


class _Symmetric(_Square):
    def check(self, value):
        square = super().check(value)
        if value.shape[-2] != value.shape[-1]:
            return square
        return fnp.all(fnp.isclose(value, fnp.swapaxes(value, -2, -1), atol=1e-6), axis=(-2, -1))


class _PositiveSemidefinite(_Symmetric):
    def check(self, value):
        symmetric = super().check(value)
        if value.shape[-2] != value.shape[-1]:
            return symmetric
        return symmetric & fnp.all(fnp.linalg.eigvalsh(value) >= 0, axis=-1)


class _PositiveDefinite(_Symmetric):
    def check(self, value):
        symmetric = super().check(value)
        if value.shape[-2] != value.shape[-1]:
            return symmetric
        return symmetric & fnp.all(fnp.linalg.eigvalsh(value) > 0, axis=-1)


class _IndependentConstraint(Constraint):
    """base_constraint with its reinterpreted_batch_ndims rightmost batch axes made part of one event."""

    def __init__(self, base_constraint: Constraint, reinterpreted_batch_ndims: int):
        if reinterpreted_batch_ndims < 0:
            raise ValueError(f"independent: reinterpreted_batch_ndims must be >= 0, got {reinterpreted_batch_ndims}")
        self.base_constraint, self.reinterpreted_batch_ndims = base_constraint, reinterpreted_batch_ndims

    is_discrete = property(lambda self: self.base_constraint.is_discrete)
    event_dim = property(lambda self: self.base_constraint.event_dim + self.reinterpreted_batch_ndims)

    def check(self, value):
        result = self.base_constraint.check(value)
        n = self.reinterpreted_batch_ndims
        if result.ndim < n:
            raise ValueError(f"independent: a value of {result.ndim} batch axes cannot make events of {n} axes")
        return fnp.all(result, axis=tuple(range(result.ndim - n, result.ndim))) if n else result

    def describe(self) -> str:
        return self.base_constraint.describe() if self.base_constraint.event_dim == 0 else f"in {self!r}"

    def __repr__(self) -> str:
        return f"IndependentConstraint({self.base_constraint!r}, {self.reinterpreted_batch_ndims})"


class _Cat(Constraint):
    """constraints[i] on the i-th run of lengths[i] entries along axis dim (CatTransform's)."""

    def __init__(self, cseq, dim: int = 0, lengths=None):
        self.cseq, self.dim = list(cseq), dim
        self.lengths = [1] * len(self.cseq) if lengths is None else [int(n) for n in lengths]
        if len(self.lengths) != len(self.cseq):
            raise ValueError(f"cat: {len(self.cseq)} constraints but {len(self.lengths)} lengths")

    is_discrete = property(lambda self: any(c.is_discrete for c in self.cseq))
    event_dim = property(lambda self: max((c.event_dim for c in self.cseq), default=0))

    def check(self, value):
        bounds = [sum(self.lengths[:i + 1]) for i in range(len(self.lengths) - 1)]
        pieces = fnp.split(value, bounds, axis=self.dim)
        return fnp.concatenate([c.check(p) for c, p in zip(self.cseq, pieces)], axis=self.dim)


class _Stack(Constraint):
    """constraints[i] on value[..., i, ...] along axis dim (StackTransform's)."""

    def __init__(self, cseq, dim: int = 0):
        self.cseq, self.dim = list(cseq), dim

    is_discrete = property(lambda self: any(c.is_discrete for c in self.cseq))
    event_dim = property(lambda self: max((c.event_dim for c in self.cseq), default=0))

    def check(self, value):
        if value.shape[self.dim] != len(self.cseq):
            raise ValueError(f"stack: axis {self.dim} has {value.shape[self.dim]} entries for {len(self.cseq)} "
                             f"constraints")
        return fnp.stack([c.check(fnp.take(value, i, axis=self.dim)) for i, c in enumerate(self.cseq)],
                         axis=self.dim)


def _named(cls, name: str):
    """PyTorch's class names in reprs (GreaterThan, not _GreaterThan)."""
    cls.__name__ = cls.__qualname__ = name
    return cls


for _cls in (_Real, _Boolean, _GreaterThan, _GreaterThanEq, _LessThan, _Interval, _HalfOpenInterval, _IntegerInterval,
             _IntegerGreaterThan, _Simplex, _OneHot, _Multinomial, _LowerTriangular, _LowerCholesky, _CorrCholesky,
             _Square, _Symmetric, _PositiveSemidefinite, _PositiveDefinite, _Dependent, _Cat, _Stack):
    _named(_cls, _cls.__name__[1:])

dependent = _Dependent()
independent = _IndependentConstraint
real = _Real()
real_vector = independent(real, 1)
boolean = _Boolean()
greater_than = _GreaterThan
greater_than_eq = _GreaterThanEq
less_than = _LessThan
interval = _Interval
half_open_interval = _HalfOpenInterval
integer_interval = _IntegerInterval
positive = _GreaterThan(0.0)
nonnegative = _GreaterThanEq(0.0)
unit_interval = _Interval(0.0, 1.0)
nonnegative_integer = _IntegerGreaterThan(0)
positive_integer = _IntegerGreaterThan(1)
simplex = _Simplex()
one_hot = _OneHot()
multinomial = _Multinomial
lower_triangular = _LowerTriangular()
lower_cholesky = _LowerCholesky()
corr_cholesky = _CorrCholesky()
square = _Square()
symmetric = _Symmetric()
positive_semidefinite = _PositiveSemidefinite()
positive_definite = _PositiveDefinite()
cat = _Cat
stack = _Stack
