"""The Distribution base: parameters converted and validated when a distribution is made, shapes,
sample/rsample, and the helpers the families share (probs or logits)."""
from __future__ import annotations

import dataclasses
from typing import Callable

import numpy as np

from .. import numpy as fnp
from ..array import Array
from ..numpy import linalg
from ..scipy import special
from ..tree import register_dataclass
from . import constraints



def _check(condition, message: str) -> None:
    """Raise where a concrete condition fails (under jit the values are unknown: no check)."""
    known = fnp.concrete_or_none(condition)
    if known is not None and not np.all(known):
        raise ValueError(message)


class Distribution:
    """What every distribution has: shapes, sample, and the moments derived from variance. A
    subclass names its PARAMETERS (converted to Arrays of one float dtype when it is made), their
    arg_constraints and its support (constraints.py, PyTorch's), and any check across parameters
    (valid -> (condition, message) or None)."""
    has_rsample = False
    PARAMETERS: tuple = ()
    arg_constraints: dict = {}
    support = constraints.dependent

    def __post_init__(self):
        values = _params(*(getattr(self, name) for name in self.PARAMETERS))
        for name, value in zip(self.PARAMETERS, values):
            object.__setattr__(self, name, value)
        if self.validate_args:
            self._validate_parameters()

    def _validate_parameters(self) -> None:
        """Each parameter against its constraint (PyTorch's validate_args), then valid()."""
        for name in self.PARAMETERS:
            constraint = self.arg_constraints.get(name)
            if constraint is not None and not constraints.is_dependent(constraint):
                _check(constraint.check(getattr(self, name)),
                       f"{type(self).__name__}: {name} must be {constraint.describe()}")
        extra = self.valid()
        if extra is not None:
            _check(extra[0], f"{type(self).__name__}: {extra[1]}")

    def valid(self):
        """A condition across parameters that their constraints do not state, with its message."""
        return None

    has_enumerate_support = False

    def enumerate_support(self, expand: bool = True) -> Array:
        """Every value of a finite support along a new first axis: (cardinality,) + batch_shape +
        event_shape (with expand=False, size-1 batch axes that broadcast)."""
        values = self._support_values()  # (cardinality,) + event_shape
        batch, event = tuple(self.batch_shape), tuple(self.event_shape)
        values = fnp.reshape(values, (values.shape[0],) + (1,) * len(batch) + event)
        return fnp.broadcast_to(values, (values.shape[0],) + batch + event) if expand else values

    def _support_values(self):
        raise TypeError(f"{type(self).__name__} has no finite support to enumerate")

    def perplexity(self) -> Array:
        """exp(entropy), over the batch."""
        return fnp.exp(self.entropy())

    @property
    def batch_shape(self) -> tuple:
        return np.broadcast_shapes(*(tuple(getattr(self, name).shape) for name in self.PARAMETERS))

    def _batch(self, value) -> Array:
        return fnp.broadcast_to(value, self.batch_shape)

    @property
    def event_shape(self) -> tuple:
        return ()

    @property
    def stddev(self) -> Array:
        return fnp.sqrt(self.variance)

    def expand(self, batch_shape) -> "Distribution":
        """This distribution broadcast to batch_shape (torch's expand): its parameters broadcast, each
        element of the new batch drawn independently."""
        batch_shape = tuple(batch_shape)
        if not self.PARAMETERS or self.event_shape:
            raise TypeError(f"{type(self).__name__}.expand: broadcast its parameters to the batch shape "
                            f"{batch_shape} instead")
        return dataclasses.replace(self, **{name: fnp.broadcast_to(getattr(self, name), batch_shape)
                                            for name in self.PARAMETERS})

    def sample(self, key, sample_shape=()) -> Array:
        """A draw of shape sample_shape + batch_shape + event_shape, without gradient."""
        return fnp.stop_gradient(self._draw(key, tuple(sample_shape)))

    def rsample(self, key, sample_shape=()) -> Array:
        """The reparameterised draw: differentiable in the parameters."""
        if not self.has_rsample:
            raise TypeError(f"{type(self).__name__} has no reparameterised sampler (rsample); use sample")
        return self._draw(key, tuple(sample_shape))

    def _shape(self, sample_shape: tuple) -> tuple:
        return tuple(sample_shape) + tuple(self.batch_shape) + tuple(self.event_shape)

    @property
    def _dtype(self):
        """The parameters' float dtype (the one log_prob computes in)."""
        for name in self.PARAMETERS + ("logits", "loc", "concentration", "base_dist"):
            value = getattr(self, name, None)
            if isinstance(value, Distribution):
                return value._dtype
            if hasattr(value, "dtype"):
                return value.dtype
        return fnp.float32

    def _checked(self, value, check=None, support: str | None = None):
        """value as the parameters' float dtype, checked against the support (or `check`, described
        as `support`, where log_prob needs more than PyTorch's support asks) when validating."""
        # a Python number is weak, as elsewhere: it takes the parameters' precision
        value = fnp.asarray(value, dtype=self._dtype) if type(value) in (bool, int, float) else fnp._float_arg(value)
        self._check_sample(value, check, support)
        return value

    def _check_sample(self, value, check=None, support: str | None = None) -> None:
        if self.validate_args:
            inside = (check or self.support.check)(value)
            _check(inside, f"{type(self).__name__}.log_prob: a value lies outside the support "
                           f"({support or repr(self.support)})")


def _params(*values):
    return fnp._float_args(*values)


def _distribution(cls):
    """A frozen dataclass pytree: its parameters are children, validate_args is structure."""
    return register_dataclass(dataclasses.dataclass(frozen=True)(cls))


def _factored_matrices(tril) -> dict:
    """scale_tril, covariance_matrix and precision_matrix from the Cholesky factor, for a distribution's
    fields. Not broadcast to the batch shape (PyTorch's expanded views): a loc batch sharing one matrix
    would make log_prob solve with every copy (50x slower at 2000 x 32)."""
    inverse = linalg.inv(tril)
    return {"scale_tril": tril, "covariance_matrix": tril @ fnp.swapaxes(tril, -1, -2),
            "precision_matrix": fnp.swapaxes(inverse, -1, -2) @ inverse}


def _clamped_logit(p):
    """logit(p) with p kept eps from 0 and 1, as PyTorch's probs_to_logits (so 0 and 1 stay finite)."""
    eps = float(fnp.finfo(p.dtype).eps)
    return special.logit(fnp.clip(p, eps, 1 - eps))


def _finite(logits):
    """Logits with -inf raised to the dtype's lowest float (PyTorch's clamp), so 0 * logit is 0."""
    return fnp.maximum(logits, float(fnp.finfo(logits.dtype).min))


def _probs_or_logits(name, probs, logits, to_logits: Callable):
    if (probs is None) == (logits is None):
        raise ValueError(f"{name}: give exactly one of probs and logits")
    if probs is None:
        return fnp._float_arg(logits)
    with np.errstate(divide="ignore"):  # a zero probability is a logit of -inf
        return to_logits(fnp._float_arg(probs))
