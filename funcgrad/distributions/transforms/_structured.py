"""Transforms onto structured matrices and over slices (torch.distributions.transforms'):
CorrCholeskyTransform (vectors to Cholesky factors of correlation matrices, for LKJ priors),
PositiveDefiniteTransform, and CatTransform / StackTransform (a transform per slice of an axis)."""
from __future__ import annotations

import math

import numpy as np

from ... import numpy as fnp
from ...nn import _functional as F
from ...numpy import linalg
from ...tree import static_field
from .. import constraints
from ._core import LowerCholeskyTransform, Transform, _transform

__all__ = ["CorrCholeskyTransform", "PositiveDefiniteTransform", "CatTransform", "StackTransform",
           "vec_to_tril_matrix", "tril_matrix_to_vec"]


def _side(n_below: int, diag: int) -> int:
    """The matrix side whose lower triangle at offset diag (0 or below) holds n_below entries."""
    side = round((-(1 + 2 * diag) + math.sqrt((1 + 2 * diag) ** 2 + 8 * n_below)) / 2)
    if len(np.tril_indices(side, diag)[0]) != n_below:
        raise ValueError(f"{n_below} values do not fill the lower triangle at offset {diag} of a square matrix")
    return side


def vec_to_tril_matrix(vec, diag: int = 0):
    """The last axis of vec placed row by row into the lower triangle at offset diag (torch's
    distributions.utils.vec_to_tril_matrix); zeros elsewhere."""
    vec = fnp.asarray(vec)
    side = _side(vec.shape[-1], diag)
    rows, cols = np.tril_indices(side, diag)
    flat = np.zeros(side * side, np.int64)
    flat[rows * side + cols] = np.arange(len(rows)) + 1  # 0 marks the zero entries
    padded = fnp.concatenate([fnp.zeros(vec.shape[:-1] + (1,), vec.dtype), vec], axis=-1)
    return fnp.reshape(fnp.take(padded, fnp.asarray(flat), axis=-1), vec.shape[:-1] + (side, side))


def tril_matrix_to_vec(mat, diag: int = 0):
    """The lower triangle at offset diag of the matrices' last two axes, row by row."""
    mat = fnp.asarray(mat)
    side = mat.shape[-1]
    rows, cols = np.tril_indices(side, diag)
    return fnp.take(fnp.reshape(mat, mat.shape[:-2] + (side * side,)), fnp.asarray(rows * side + cols), axis=-1)


@_transform
class CorrCholeskyTransform(Transform):
    """D (D - 1) / 2 unconstrained values to the Cholesky factor of a D x D correlation matrix: tanh
    into (-1, 1), then each row stick-broken so its squares sum to 1 (torch's, for LKJCholesky)."""
    _codomain = constraints.corr_cholesky
    domain_event_dim, codomain_event_dim = 1, 2

    def _forward(self, x):
        eps = float(fnp.finfo(x.dtype).eps)
        r = vec_to_tril_matrix(fnp.clip(fnp.tanh(x), -1 + eps, 1 - eps), diag=-1)
        remaining = fnp.cumprod(fnp.sqrt(1 - r * r), axis=-1)
        scale = fnp.concatenate([fnp.ones(r.shape[:-1] + (1,), r.dtype), remaining[..., :-1]], axis=-1)
        return (r + fnp.eye(r.shape[-1], dtype=r.dtype)) * scale

    def _inverse(self, y):
        left = 1 - fnp.cumsum(y * y, axis=-1)
        shifted = fnp.concatenate([fnp.ones(y.shape[:-1] + (1,), y.dtype), left[..., :-1]], axis=-1)
        t = tril_matrix_to_vec(y, diag=-1) / fnp.sqrt(tril_matrix_to_vec(shifted, diag=-1))
        return (fnp.log1p(t) - fnp.log1p(-t)) / 2

    def log_abs_det_jacobian(self, x, y):
        stick_breaking = 0.5 * fnp.sum(fnp.log(tril_matrix_to_vec(1 - fnp.cumsum(y * y, axis=-1), diag=-2)), -1)
        tanh = -2 * fnp.sum(x + F.softplus(-2 * x) - math.log(2.0), axis=-1)
        return stick_breaking + tanh

    def forward_shape(self, shape):
        if len(shape) < 1:
            raise ValueError("CorrCholeskyTransform needs a vector axis")
        n = shape[-1]
        side = round((0.25 + 2 * n) ** 0.5 + 0.5)
        if side * (side - 1) // 2 != n:
            raise ValueError(f"CorrCholeskyTransform: {n} values are not D (D - 1) / 2 for any D")
        return tuple(shape[:-1]) + (side, side)

    def inverse_shape(self, shape):
        if len(shape) < 2 or shape[-1] != shape[-2]:
            raise ValueError(f"CorrCholeskyTransform: expected square matrices, got shape {tuple(shape)}")
        return tuple(shape[:-2]) + (shape[-1] * (shape[-1] - 1) // 2,)


@_transform
class PositiveDefiniteTransform(Transform):
    """Square matrices to positive definite ones: L L^T with L = LowerCholeskyTransform(x)."""
    _codomain = constraints.positive_definite
    domain_event_dim = codomain_event_dim = 2
    bijective = False  # the upper triangle is dropped

    def _forward(self, x):
        lower = LowerCholeskyTransform()(x)
        return lower @ fnp.swapaxes(lower, -1, -2)

    def _inverse(self, y):
        return LowerCholeskyTransform().inv(linalg.cholesky(y))


def _lengths(transforms, lengths, what: str) -> tuple:
    lengths = (1,) * len(transforms) if lengths is None else tuple(int(n) for n in lengths)
    if len(lengths) != len(transforms):
        raise ValueError(f"{what}: {len(transforms)} transforms but {len(lengths)} lengths")
    return lengths


@_transform
class CatTransform(Transform):
    """transforms[i] applied to the i-th run of lengths[i] entries along axis dim (torch.cat's
    layout), elementwise transforms only."""
    transforms: tuple = ()
    dim: int = static_field(default=0)
    lengths: tuple = static_field(default=None)

    def __post_init__(self):
        object.__setattr__(self, "transforms", tuple(self.transforms))
        if any(t.domain_event_dim or t.codomain_event_dim for t in self.transforms):
            raise ValueError("CatTransform joins elementwise transforms (event dims 0)")
        object.__setattr__(self, "lengths", _lengths(self.transforms, self.lengths, "CatTransform"))

    bijective = property(lambda self: all(t.bijective for t in self.transforms))
    _domain = property(lambda self: constraints.cat([t.domain for t in self.transforms], self.dim, self.lengths))
    _codomain = property(lambda self: constraints.cat([t.codomain for t in self.transforms], self.dim,
                                                      self.lengths))

    def _pieces(self, x):
        if x.shape[self.dim] != sum(self.lengths):
            raise ValueError(f"CatTransform: axis {self.dim} has {x.shape[self.dim]} entries, the lengths "
                             f"{self.lengths} sum to {sum(self.lengths)}")
        bounds = np.cumsum(self.lengths)[:-1]
        return fnp.split(x, [int(b) for b in bounds], axis=self.dim)

    def _map(self, x, apply):
        return fnp.concatenate([apply(t, piece) for t, piece in zip(self.transforms, self._pieces(x))],
                               axis=self.dim)

    def _forward(self, x):
        return self._map(x, lambda t, piece: t(piece))

    def _inverse(self, y):
        return self._map(y, lambda t, piece: t.inv(piece))

    def log_abs_det_jacobian(self, x, y):
        return fnp.concatenate([t.log_abs_det_jacobian(a, b) for t, a, b in
                                zip(self.transforms, self._pieces(x), self._pieces(y))], axis=self.dim)


@_transform
class StackTransform(Transform):
    """transforms[i] applied to x[..., i, ...] along axis dim (torch.stack's layout)."""
    transforms: tuple = ()
    dim: int = static_field(default=0)

    def __post_init__(self):
        object.__setattr__(self, "transforms", tuple(self.transforms))
        if any(t.domain_event_dim or t.codomain_event_dim for t in self.transforms):
            raise ValueError("StackTransform stacks elementwise transforms (event dims 0)")

    bijective = property(lambda self: all(t.bijective for t in self.transforms))
    _domain = property(lambda self: constraints.stack([t.domain for t in self.transforms], self.dim))
    _codomain = property(lambda self: constraints.stack([t.codomain for t in self.transforms], self.dim))

    def _slices(self, x):
        if x.shape[self.dim] != len(self.transforms):
            raise ValueError(f"StackTransform: axis {self.dim} has {x.shape[self.dim]} entries for "
                             f"{len(self.transforms)} transforms")
        return [fnp.take(x, i, axis=self.dim) for i in range(len(self.transforms))]

    def _forward(self, x):
        return fnp.stack([t(s) for t, s in zip(self.transforms, self._slices(x))], axis=self.dim)

    def _inverse(self, y):
        return fnp.stack([t.inv(s) for t, s in zip(self.transforms, self._slices(y))], axis=self.dim)

    def log_abs_det_jacobian(self, x, y):
        return fnp.stack([t.log_abs_det_jacobian(a, b) for t, a, b in
                          zip(self.transforms, self._slices(x), self._slices(y))], axis=self.dim)

