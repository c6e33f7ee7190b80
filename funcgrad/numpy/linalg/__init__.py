"""funcgrad.numpy.linalg (fnp.linalg): solve, inv, det, slogdet, cholesky, eigh, eig, qr, svd, pinv,
lstsq, matrix_rank and norms.

Five primitives carry it (solve, slogdet, cholesky, eigh, svd, in funcgrad.ops.decompositions,
each with a CUDA kernel), and eig (LAPACK's geev, CPU only as JAX's; its derivative a custom rule
here); the rest is composed from them, so everything is differentiable, batches
over leading axes, and runs under jit and vmap. Integer inputs compute in float32 and half
types in float32 (the result is cast back), as LAPACK has neither. qr is Householder reflections
written with array operations (LAPACK's sign convention).
"""
from __future__ import annotations

from ._core import *  # noqa: F401,F403
from ._core import __all__ as _core_names
from ._norms import *  # noqa: F401,F403
from ._norms import __all__ as _norm_names

__all__ = [*_core_names, *_norm_names]
