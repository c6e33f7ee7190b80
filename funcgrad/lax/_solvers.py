"""jax.lax.custom_linear_solve and custom_root: a solver run for its value alone, differentiated
as the solution it stands for (implicit differentiation), so the solver's iterations are never
differentiated and may be any code.

The value is the solver's, x0, held constant. The derivatives enter through corrections of value
zero, c - stop_gradient(c). For a linear solve, c = A^-1 (b - A x0), whose tangent solve(A, .)
and transpose transpose_solve(A^T, .) are the user's own solvers (first order; the transpose runs
in the backward pass, where A's closed-over values read as constants: trace.closed_over_as_constants).
For a root, c is a Newton step -J^-1 f(x), J^-1 by tangent_solve, applied once per level of
differentiation that traces the problem (grad of grad: twice), each at the previous one's result,
so that every order in use is exact.
"""
from __future__ import annotations

from typing import Any, Callable

from .. import numpy as fnp
from ..arguments import zeros_like
from ..custom import custom_jvp
from ..jvp import JVPTrace, jvp
from ..trace import Tracer, closed_over_as_constants
from ..tree import tree_leaves, tree_map
from ..vjp import VJPTrace, linear_transpose

__all__ = ["custom_linear_solve", "custom_root"]


def _split(out, has_aux: bool, who: str):
    if not has_aux:
        return out, None
    if not (isinstance(out, (tuple, list)) and len(out) == 2):
        raise TypeError(f"{who} with has_aux=True must return (solution, aux), got {type(out).__name__}")
    return out[0], out[1]


def _differentiation_depth(tree) -> int:
    """How many derivative transforms (grad, jvp, ...) nest around the leaves' values."""
    deepest = 0
    for leaf in tree_leaves(tree):
        depth = 0
        while isinstance(leaf, Tracer) and not getattr(leaf, "abstract", False):
            depth += isinstance(leaf._trace, (VJPTrace, JVPTrace))
            leaf = leaf.primal()
        deepest = max(deepest, depth)
    return deepest


def _corrected(x, correction):
    """x's value, with x's derivatives plus those of the correction (whose value is dropped)."""
    return tree_map(lambda xi, c: xi + (c - fnp.stop_gradient(c)), x, correction)


def _sub(a, b):
    return tree_map(lambda ai, bi: ai - bi, a, b)


def custom_linear_solve(matvec: Callable, b: Any, solve: Callable, transpose_solve: Callable | None = None,
                        symmetric: bool = False, has_aux: bool = False):
    """x with matvec(x) = b, as solve(matvec, b) finds it, differentiated as A^-1 b (jax.lax's):
    forward mode by solve, reverse mode by transpose_solve(vecmat, g) (solve itself when
    symmetric); b and x may be pytrees; has_aux: solve returns (x, aux), aux not differentiated."""
    if transpose_solve is None and symmetric:
        transpose_solve = solve
    x0, aux = _split(solve(matvec, tree_map(fnp.stop_gradient, b)), has_aux, "solve")
    x0, aux = tree_map(fnp.stop_gradient, x0), tree_map(fnp.stop_gradient, aux)

    def solution_only(solver, linear_map, rhs):
        return _split(solver(linear_map, rhs), has_aux, "solve")[0]

    inverse = custom_jvp(lambda r: tree_map(zeros_like, r))  # A^-1 r, whose value is never needed

    @inverse.defjvp
    def _forward(primals, tangents):
        return inverse(*primals), solution_only(solve, matvec, tangents[0])

    def _reverse(residual, g):
        if transpose_solve is None:
            raise TypeError("custom_linear_solve: reverse mode (grad, vjp) needs transpose_solve, or symmetric=True "
                            "for a symmetric linear map")
        with closed_over_as_constants():  # matvec may close over the values grad differentiates
            transposed = None if symmetric else linear_transpose(matvec, x0)  # built once, applied per step
            vecmat = matvec if symmetric else (lambda y: transposed(y)[0])
            return (solution_only(transpose_solve, vecmat, g),)

    inverse.defvjp(lambda r: (inverse.fun(r), None), _reverse)
    residual = _sub(b, matvec(x0))  # zero, carrying db - dA x0
    depth = _differentiation_depth(residual)
    if depth > 1:
        raise TypeError(f"custom_linear_solve is differentiated {depth} times over here (grad of grad, hessian); "
                        f"its derivative rules are first-order: differentiate a solve written in funcgrad "
                        f"operations (fnp.linalg.solve) for higher orders")
    x = _corrected(x0, inverse(residual)) if depth else x0
    return (x, aux) if has_aux else x


def custom_root(f: Callable, initial_guess: Any, solve: Callable, tangent_solve: Callable, has_aux: bool = False):
    """x with f(x) = 0, as solve(f, initial_guess) finds it, differentiated through the implicit
    function theorem (jax.lax's): dx = -J^-1 df, J = df/dx at the root, by tangent_solve(g, y),
    which solves g(x) = y for g J's action (for a scalar: lambda g, y: y / g(1.0)) and must be
    differentiable in y; f may close over the values being differentiated; has_aux: solve
    returns (x, aux)."""
    x0, aux = _split(solve(f, initial_guess), has_aux, "solve")
    x0, aux = tree_map(fnp.stop_gradient, x0), tree_map(fnp.stop_gradient, aux)
    x = x0
    for _ in range(_differentiation_depth(f(x0))):
        def jacobian_action(t, at=x):
            return jvp(f, (at,), (t,))[1]
        x = _corrected(x, tree_map(lambda s: -s, tangent_solve(jacobian_action, f(x))))  # a Newton step
    return (x, aux) if has_aux else x
