"""Transforms between spaces, as torch.distributions.transforms: y = t(x), x = t.inv(y), and
log |det dy/dx| for TransformedDistribution's change of variables. Each is a frozen pytree (its
parameters are leaves), so distributions built from them pass through jit, grad and vmap.

A transform says how many rightmost axes make one of its inputs and outputs (domain_event_dim,
codomain_event_dim: torch's domain.event_dim and codomain.event_dim), and where they lie (domain,
codomain: constraints); log_abs_det_jacobian sums over the event axes. sign is +1 or -1 for a
monotone elementwise map (cdf and icdf use it).
"""
from __future__ import annotations

import dataclasses
import functools
import math

import numpy as np

from ... import numpy as fnp
from ...array import Array
from ...nn import _functional as F
from ...tree import register_dataclass, static_field
from .. import constraints

__all__ = ["Transform", "ComposeTransform", "identity_transform", "ExpTransform", "PowerTransform",
           "SigmoidTransform", "TanhTransform", "SoftplusTransform", "AbsTransform", "AffineTransform",
           "SoftmaxTransform", "StickBreakingTransform", "LowerCholeskyTransform", "IndependentTransform",
           "ReshapeTransform", "CumulativeDistributionTransform"]


def _transform(cls):
    return register_dataclass(dataclasses.dataclass(frozen=True, eq=False)(cls))


def _same(a, b) -> bool:
    """Parameters equal by value (arrays element by element, when concrete), else by identity."""
    if isinstance(a, (Array, np.ndarray)) or isinstance(b, (Array, np.ndarray)):
        known_a, known_b = fnp.concrete_or_none(fnp.asarray(a)), fnp.concrete_or_none(fnp.asarray(b))
        if known_a is None or known_b is None:
            return a is b
        return np.shape(known_a) == np.shape(known_b) and bool(np.all(known_a == known_b))
    return a == b


def sum_rightmost(value, dims: int):
    """value summed over its last dims axes (torch.distributions.utils._sum_rightmost)."""
    return fnp.sum(value, axis=tuple(range(-dims, 0))) if dims > 0 else value


def _widened(constraint, event_dim: int):
    """constraint over events of event_dim axes (independent over the extra ones)."""
    extra = event_dim - constraint.event_dim
    return constraints.independent(constraint, extra) if extra > 0 else constraint


class Transform:
    """The interface: _forward, _inverse and log_abs_det_jacobian(x, y); the event dims and the
    shape maps default to an elementwise bijection of the reals (_domain and _codomain: where one
    element, or one event of the transform's own, lies)."""
    domain_event_dim = 0
    codomain_event_dim = 0
    bijective = True
    sign = 1
    _domain = constraints.real
    _codomain = constraints.real

    @property
    def domain(self):
        return _widened(self._domain, self.domain_event_dim)

    @property
    def codomain(self):
        return _widened(self._codomain, self.codomain_event_dim)

    def __eq__(self, other) -> bool:
        """The same map: the same type and equal parameters (torch compares transforms so)."""
        return type(self) is type(other) and all(_same(getattr(self, f.name), getattr(other, f.name))
                                                 for f in dataclasses.fields(self))

    def __hash__(self) -> int:
        return hash(type(self))

    @property
    def event_dim(self) -> int:
        if self.domain_event_dim != self.codomain_event_dim:
            raise ValueError(f"{type(self).__name__} changes the event dims ({self.domain_event_dim} -> "
                             f"{self.codomain_event_dim}): read domain_event_dim or codomain_event_dim")
        return self.domain_event_dim

    def __call__(self, x) -> Array:
        return self._forward(fnp._float_arg(x))

    @property
    def inv(self) -> "Transform":
        return _Inverse(self)

    def _inverse(self, y):
        raise TypeError(f"{type(self).__name__} has no inverse")

    def log_abs_det_jacobian(self, x, y):
        raise TypeError(f"{type(self).__name__} is not a bijection: it has no log |det Jacobian|")

    def forward_shape(self, shape: tuple) -> tuple:
        return tuple(shape)

    def inverse_shape(self, shape: tuple) -> tuple:
        return tuple(shape)


@_transform
class _Inverse(Transform):
    """t.inv: the same map run backwards."""
    base: Transform

    domain_event_dim = property(lambda self: self.base.codomain_event_dim)
    codomain_event_dim = property(lambda self: self.base.domain_event_dim)
    domain = property(lambda self: self.base.codomain)
    codomain = property(lambda self: self.base.domain)
    bijective = property(lambda self: self.base.bijective)
    sign = property(lambda self: self.base.sign)
    inv = property(lambda self: self.base)

    def _forward(self, x):
        return self.base._inverse(x)

    def _inverse(self, y):
        return self.base._forward(y)

    def log_abs_det_jacobian(self, x, y):
        return -self.base.log_abs_det_jacobian(y, x)

    def forward_shape(self, shape):
        return self.base.inverse_shape(shape)

    def inverse_shape(self, shape):
        return self.base.forward_shape(shape)


@_transform
class ComposeTransform(Transform):
    """parts applied in order; its event dims are the largest any part needs along the chain."""
    parts: tuple = ()

    def __post_init__(self):
        object.__setattr__(self, "parts", tuple(self.parts))
        for part in self.parts:
            if not isinstance(part, Transform):
                raise TypeError(f"ComposeTransform: {part!r} is not a Transform")

    @property
    def domain_event_dim(self) -> int:
        if not self.parts:
            return 0
        dim = self.parts[-1].codomain_event_dim
        for part in reversed(self.parts):
            dim = max(dim + part.domain_event_dim - part.codomain_event_dim, part.domain_event_dim)
        return dim

    @property
    def codomain_event_dim(self) -> int:
        if not self.parts:
            return 0
        dim = self.parts[0].domain_event_dim
        for part in self.parts:
            dim = max(dim + part.codomain_event_dim - part.domain_event_dim, part.codomain_event_dim)
        return dim

    bijective = property(lambda self: all(p.bijective for p in self.parts))
    _domain = property(lambda self: self.parts[0].domain if self.parts else constraints.real)
    _codomain = property(lambda self: self.parts[-1].codomain if self.parts else constraints.real)
    sign = property(lambda self: functools.reduce(lambda s, p: s * p.sign, self.parts, 1))
    inv = property(lambda self: ComposeTransform(tuple(p.inv for p in reversed(self.parts))))

    def _forward(self, x):
        for part in self.parts:
            x = part(x)
        return x

    def _inverse(self, y):
        for part in reversed(self.parts):
            y = part.inv(y)
        return y

    def log_abs_det_jacobian(self, x, y):
        if not self.parts:
            return fnp.zeros_like(x)
        xs = [x]
        for part in self.parts[:-1]:
            xs.append(part(xs[-1]))
        xs.append(y)
        total, dim = 0.0, self.domain_event_dim
        for part, a, b in zip(self.parts, xs[:-1], xs[1:]):
            total = total + sum_rightmost(part.log_abs_det_jacobian(a, b), dim - part.domain_event_dim)
            dim += part.codomain_event_dim - part.domain_event_dim
        return total

    def forward_shape(self, shape):
        for part in self.parts:
            shape = part.forward_shape(shape)
        return tuple(shape)

    def inverse_shape(self, shape):
        for part in reversed(self.parts):
            shape = part.inverse_shape(shape)
        return tuple(shape)


identity_transform = ComposeTransform(())


@_transform
class ExpTransform(Transform):
    _codomain = constraints.positive

    def _forward(self, x):
        return fnp.exp(x)

    def _inverse(self, y):
        return fnp.log(y)

    def log_abs_det_jacobian(self, x, y):
        return x


def _shape_with(shape, *params) -> tuple:
    return tuple(np.broadcast_shapes(tuple(shape), *(tuple(np.shape(p)) for p in params)))


@_transform
class PowerTransform(Transform):
    """y = x ** exponent on the positive reals."""
    _domain = _codomain = constraints.positive
    exponent: Array

    def __post_init__(self):
        object.__setattr__(self, "exponent", fnp._float_arg(self.exponent))

    @property
    def sign(self):
        return fnp.sign(self.exponent)

    def _forward(self, x):
        return x ** self.exponent

    def _inverse(self, y):
        return y ** (1 / self.exponent)

    def log_abs_det_jacobian(self, x, y):
        return fnp.log(fnp.abs(self.exponent * y / x))

    def forward_shape(self, shape):
        return _shape_with(shape, self.exponent)

    inverse_shape = forward_shape


def _clipped_sigmoid(x):
    """sigmoid kept in [tiny, 1 - eps], as PyTorch's, so its inverse stays finite."""
    info = fnp.finfo(x.dtype)
    return fnp.clip(F.sigmoid(x), float(info.tiny), 1.0 - float(info.eps))


@_transform
class SigmoidTransform(Transform):
    _codomain = constraints.unit_interval
    def _forward(self, x):
        return _clipped_sigmoid(x)

    def _inverse(self, y):
        info = fnp.finfo(y.dtype)
        y = fnp.clip(y, float(info.tiny), 1.0 - float(info.eps))
        return fnp.log(y) - fnp.log1p(-y)

    def log_abs_det_jacobian(self, x, y):
        return -F.softplus(-x) - F.softplus(x)


@_transform
class TanhTransform(Transform):
    """y = tanh(x) (a squashed Gaussian policy's last step)."""
    _codomain = constraints.interval(-1.0, 1.0)

    def _forward(self, x):
        return fnp.tanh(x)

    def _inverse(self, y):
        return fnp.arctanh(y)

    def log_abs_det_jacobian(self, x, y):
        return 2.0 * (math.log(2.0) - x - F.softplus(-2.0 * x))  # log(1 - tanh^2), stable for large |x|


@_transform
class SoftplusTransform(Transform):
    _codomain = constraints.positive
    def _forward(self, x):
        return F.softplus(x)

    def _inverse(self, y):
        return fnp.log(-fnp.expm1(-y)) + y

    def log_abs_det_jacobian(self, x, y):
        return -F.softplus(-x)


@_transform
class AbsTransform(Transform):
    """y = |x|: not injective; its inverse picks the positive root, as PyTorch's."""
    _codomain = constraints.positive
    bijective = False

    def _forward(self, x):
        return fnp.abs(x)

    def _inverse(self, y):
        return y


@_transform
class AffineTransform(Transform):
    """y = loc + scale * x; event_dim > 0 sums log |scale| over that many rightmost axes."""
    loc: Array
    scale: Array
    event_dim: int = static_field(default=0)

    def __post_init__(self):
        object.__setattr__(self, "loc", fnp._float_arg(self.loc))
        object.__setattr__(self, "scale", fnp._float_arg(self.scale))

    domain_event_dim = codomain_event_dim = property(lambda self: self.event_dim)

    @property
    def sign(self):
        known = fnp.concrete_or_none(self.scale)
        if known is not None and np.ndim(known) == 0:
            return int(np.sign(known))
        return fnp.sign(self.scale)

    def _forward(self, x):
        return self.loc + self.scale * x

    def _inverse(self, y):
        return (y - self.loc) / self.scale

    def log_abs_det_jacobian(self, x, y):
        log_scale = fnp.log(fnp.abs(self.scale))
        result = fnp.broadcast_to(log_scale, _shape_with(x.shape, log_scale))  # a scalar scale counts per element
        return sum_rightmost(result, self.event_dim)

    def forward_shape(self, shape):
        return _shape_with(shape, self.loc, self.scale)

    inverse_shape = forward_shape


def _needs_axis(shape, name: str):
    if len(shape) < 1:
        raise ValueError(f"{name}: the input needs a last axis (an event vector)")


@_transform
class SoftmaxTransform(Transform):
    """Vectors to the simplex: not injective (shifts of x map alike); its inverse is log."""
    _codomain = constraints.simplex
    domain_event_dim = codomain_event_dim = 1
    bijective = False

    def _forward(self, x):
        return F.softmax(x, axis=-1)

    def _inverse(self, y):
        return fnp.log(y)

    def forward_shape(self, shape):
        _needs_axis(shape, "SoftmaxTransform")
        return tuple(shape)

    inverse_shape = forward_shape


@_transform
class StickBreakingTransform(Transform):
    """R^(K-1) to the K-simplex by breaking a stick, bijective (PyTorch's offsets, so x = 0 maps to
    the uniform point)."""
    _codomain = constraints.simplex
    domain_event_dim = codomain_event_dim = 1

    @staticmethod
    def _offset(k: int, dtype):
        return fnp.log(fnp.asarray(np.arange(k, 0, -1), dtype=dtype))

    def _forward(self, x):
        z = _clipped_sigmoid(x - self._offset(x.shape[-1], x.dtype))
        rest = fnp.cumprod(1 - z, axis=-1)
        ones = fnp.ones(tuple(x.shape[:-1]) + (1,), x.dtype, device=x.device)
        return fnp.concatenate([z, ones], -1) * fnp.concatenate([ones, rest], -1)

    def _inverse(self, y):
        crop = y[..., :-1]
        remaining = fnp.maximum(1 - fnp.cumsum(crop, axis=-1), float(fnp.finfo(y.dtype).tiny))
        return fnp.log(crop) - fnp.log(remaining) + self._offset(crop.shape[-1], y.dtype)

    def log_abs_det_jacobian(self, x, y):
        x = x - self._offset(x.shape[-1], x.dtype)
        return fnp.sum(-x + F.log_sigmoid(x) + fnp.log(y[..., :-1]), axis=-1)

    def forward_shape(self, shape):
        _needs_axis(shape, "StickBreakingTransform")
        return tuple(shape[:-1]) + (shape[-1] + 1,)

    def inverse_shape(self, shape):
        _needs_axis(shape, "StickBreakingTransform")
        return tuple(shape[:-1]) + (shape[-1] - 1,)


@_transform
class LowerCholeskyTransform(Transform):
    """Square matrices to lower-triangular ones with a positive diagonal (exp of the diagonal)."""
    _codomain = constraints.lower_cholesky
    domain_event_dim = codomain_event_dim = 2
    bijective = False

    def _forward(self, x):
        return fnp.tril(x, -1) + fnp.exp(fnp.diagonal(x, 0, -2, -1))[..., None] * fnp.eye(x.shape[-1], dtype=x.dtype)

    def _inverse(self, y):
        return fnp.tril(y, -1) + fnp.log(fnp.diagonal(y, 0, -2, -1))[..., None] * fnp.eye(y.shape[-1], dtype=y.dtype)


@_transform
class IndependentTransform(Transform):
    """base_transform with reinterpreted_batch_ndims more rightmost axes read as one event."""
    _domain = property(lambda self: self.base_transform.domain)
    _codomain = property(lambda self: self.base_transform.codomain)
    base_transform: Transform
    reinterpreted_batch_ndims: int = static_field(default=0)

    domain_event_dim = property(lambda self: self.base_transform.domain_event_dim + self.reinterpreted_batch_ndims)
    codomain_event_dim = property(
        lambda self: self.base_transform.codomain_event_dim + self.reinterpreted_batch_ndims)
    bijective = property(lambda self: self.base_transform.bijective)
    sign = property(lambda self: self.base_transform.sign)

    def _forward(self, x):
        if x.ndim < self.domain_event_dim:
            raise ValueError(f"IndependentTransform: an input of {x.ndim} axes is shorter than its event "
                             f"({self.domain_event_dim} axes)")
        return self.base_transform(x)

    def _inverse(self, y):
        return self.base_transform.inv(y)

    def log_abs_det_jacobian(self, x, y):
        return sum_rightmost(self.base_transform.log_abs_det_jacobian(x, y), self.reinterpreted_batch_ndims)

    def forward_shape(self, shape):
        return self.base_transform.forward_shape(shape)

    def inverse_shape(self, shape):
        return self.base_transform.inverse_shape(shape)


@_transform
class ReshapeTransform(Transform):
    """Events of in_shape reshaped to out_shape (the same number of elements)."""
    in_shape: tuple = static_field()
    out_shape: tuple = static_field()

    def __post_init__(self):
        object.__setattr__(self, "in_shape", tuple(self.in_shape))
        object.__setattr__(self, "out_shape", tuple(self.out_shape))
        if math.prod(self.in_shape) != math.prod(self.out_shape):
            raise ValueError(f"ReshapeTransform: in_shape {self.in_shape} and out_shape {self.out_shape} have "
                             f"different numbers of elements")

    domain_event_dim = property(lambda self: len(self.in_shape))
    codomain_event_dim = property(lambda self: len(self.out_shape))

    def _forward(self, x):
        return fnp.reshape(x, tuple(x.shape)[:x.ndim - len(self.in_shape)] + self.out_shape)

    def _inverse(self, y):
        return fnp.reshape(y, tuple(y.shape)[:y.ndim - len(self.out_shape)] + self.in_shape)

    def log_abs_det_jacobian(self, x, y):
        return fnp.zeros(tuple(x.shape)[:x.ndim - len(self.in_shape)], x.dtype, device=x.device)

    def forward_shape(self, shape):
        return _reshaped(shape, self.in_shape, self.out_shape)

    def inverse_shape(self, shape):
        return _reshaped(shape, self.out_shape, self.in_shape)


def _reshaped(shape, old: tuple, new: tuple) -> tuple:
    shape = tuple(shape)
    cut = len(shape) - len(old)
    if cut < 0 or shape[cut:] != old:
        raise ValueError(f"ReshapeTransform: a shape {shape} does not end in the event shape {old}")
    return shape[:cut] + new


@_transform
class CumulativeDistributionTransform(Transform):
    """y = distribution.cdf(x), into [0, 1] (a copula's marginals)."""
    _domain = property(lambda self: self.distribution.support)
    _codomain = constraints.unit_interval
    distribution: object

    def _forward(self, x):
        return self.distribution.cdf(x)

    def _inverse(self, y):
        return self.distribution.icdf(y)

    def log_abs_det_jacobian(self, x, y):
        return self.distribution.log_prob(x)
