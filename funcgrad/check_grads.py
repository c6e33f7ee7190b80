"""check_grads: compare a function's derivatives with central finite differences (jax.test_util)."""
from __future__ import annotations

from typing import Any, Callable, Sequence

import numpy as np

from . import dtypes
from .array import Array
from .tree import tree_flatten, tree_map
from .jvp import jvp
from .vjp import vjp

# (finite-difference step, tolerance) by dtype; DESIGN.md: float64 tight, float32 at 2e-3.
_SETTINGS = {dtypes.float64: (1e-4, 1e-5), dtypes.float32: (1e-2, 2e-3),
             dtypes.float16: (1e-1, 5e-2), dtypes.bfloat16: (1e-1, 5e-2)}


def _leaves(tree):
    return [np.asarray(x, np.float64) for x in tree_flatten(tree)[0]]


def _inner(a, b) -> float:
    return float(sum(np.vdot(x, y) for x, y in zip(_leaves(a), _leaves(b))))


def _random_like(tree, rng):
    return tree_map(lambda x: Array(rng.standard_normal(np.shape(x)).astype(np.asarray(x).dtype)), tree)


def _axpy(a: float, direction, base):
    return tree_map(lambda d, x: Array((np.asarray(x, np.float64) + a * np.asarray(d, np.float64))
                                       .astype(np.asarray(x).dtype)), direction, base)


def _assert_close(name, actual, expected, tol):
    actual, expected = np.asarray(actual, np.float64), np.asarray(expected, np.float64)
    if not np.allclose(actual, expected, rtol=tol, atol=tol, equal_nan=False):
        err = np.max(np.abs(actual - expected))
        raise AssertionError(f"{name} check failed: max abs difference {err:.3g} "
                             f"(tolerance {tol:g})\n  got      {actual!r}\n  expected {expected!r}")


def check_grads(f: Callable, args: Sequence[Any], order: int = 2, modes: Sequence[str] = ("fwd", "rev"),
                eps: float | None = None, atol: float | None = None, rtol: float | None = None,
                seed: int = 0) -> None:
    """Raise AssertionError unless f's JVPs match central differences ("fwd") and its VJPs are
    the transposes of its JVPs ("rev"), recursively up to `order`."""
    args = tuple(tree_map(lambda x: x if isinstance(x, Array) else Array(np.asarray(x)), tuple(args)))
    dtype = min((np.asarray(x).dtype for x in tree_flatten(args)[0]),
                key=lambda d: np.finfo(np.float32 if d == dtypes.bfloat16 else d).eps, default=dtypes.float32)
    default_eps, default_tol = _SETTINGS.get(dtype, _SETTINGS[dtypes.float32])
    eps = eps or default_eps
    tol_f = max(atol or 0.0, rtol or 0.0) or default_tol
    rng = np.random.default_rng(seed)
    _check(f, args, order, tuple(modes), eps, tol_f, rng)


def _check(f, args, order, modes, eps, tol, rng):
    if order <= 0:
        return
    tangent = _random_like(args, rng)
    if "fwd" in modes:
        out, t_out = jvp(f, args, tangent)
        numeric = tree_map(lambda hi, lo: (np.asarray(hi, np.float64) - np.asarray(lo, np.float64)) / (2 * eps),
                           f(*_axpy(eps, tangent, args)), f(*_axpy(-eps, tangent, args)))
        for a, e in zip(_leaves(t_out), _leaves(numeric)):
            _assert_close("JVP", a, e, tol)
        if order > 1:
            _check(lambda *xs: jvp(f, xs, tangent)[1], args, order - 1, modes, eps, tol, rng)
    if "rev" in modes:
        out, f_vjp = vjp(f, *args)
        cotangent = _random_like(out, rng)
        ct_in = f_vjp(cotangent)
        if "fwd" in modes:
            _, t_out = jvp(f, args, tangent)
            directional = _inner(cotangent, t_out)
        else:
            numeric = tree_map(lambda hi, lo: (np.asarray(hi, np.float64) - np.asarray(lo, np.float64)) / (2 * eps),
                               f(*_axpy(eps, tangent, args)), f(*_axpy(-eps, tangent, args)))
            directional = _inner(cotangent, numeric)
        _assert_close("VJP", _inner(ct_in, tangent), directional, tol * max(1.0, abs(directional)))
        if order > 1:
            _check(lambda *xs: vjp(f, *xs)[1](cotangent), args, order - 1, modes, eps, tol, rng)
