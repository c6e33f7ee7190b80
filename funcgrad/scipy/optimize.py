"""funcgrad.scipy.optimize: minimize with BFGS (jax.scipy.optimize.minimize), gradients by
fg.value_and_grad. The quasi-Newton update and the strong-Wolfe line search (zoom with cubic
interpolation) are Nocedal and Wright's Algorithms 6.1, 3.5 and 3.6; the iteration runs eagerly on
concrete values (JAX's runs under jit; here a traced x0 raises)."""
from __future__ import annotations

import math
from typing import Callable, NamedTuple

import numpy as np

from .. import numpy as fnp
from ..array import Array
from ..vjp import value_and_grad

__all__ = ["minimize", "OptimizeResults"]


class OptimizeResults(NamedTuple):
    """x: the solution; success: the gradient's norm fell below gtol; status: 0 converged, 1 the
    iteration limit, 3 the line search failed; fun, jac: the value and gradient at x; hess_inv: the
    final inverse-Hessian estimate; nfev, njev: evaluations; nit: iterations."""
    x: Array
    success: bool
    status: int
    fun: Array
    jac: Array
    hess_inv: Array
    nfev: int
    njev: int
    nit: int


class _Objective:
    """fun and its gradient at concrete points, counted."""

    def __init__(self, fun: Callable, args: tuple, dtype):
        self.value_and_grad = value_and_grad(lambda x: fun(x, *args))
        self.dtype = dtype
        self.calls = 0

    def __call__(self, x: np.ndarray) -> tuple[float, np.ndarray]:
        self.calls += 1
        value, grad = self.value_and_grad(fnp.asarray(x.astype(self.dtype)))
        value, grad = fnp.concrete_or_none(value), fnp.concrete_or_none(grad)
        if value is None or grad is None:
            raise TypeError("minimize iterates on concrete values: call it outside jit")
        return float(value), np.asarray(grad, np.float64)


def _cubic_minimum(a, fa, ga, b, fb, gb):
    """The minimiser of the cubic through (a, fa, ga) and (b, fb, gb), or None where it is not real."""
    d1 = ga + gb - 3 * (fa - fb) / (a - b)
    square = d1 * d1 - ga * gb
    if square < 0:
        return None
    d2 = math.copysign(math.sqrt(square), b - a)
    denominator = gb - ga + 2 * d2
    return None if denominator == 0 else b - (b - a) * (gb + d2 - d1) / denominator


def _line_search(phi, f0, g0, maxiter, c1=1e-4, c2=0.9):
    """A step alpha along the direction meeting the strong Wolfe conditions: (alpha, f, grad, slope)
    with phi(alpha) -> (f, grad, slope), or None when maxiter trials find none."""
    previous, f_prev, g_prev = 0.0, f0, g0
    alpha = 1.0
    for i in range(maxiter):
        f, grad, slope = phi(alpha)
        if not math.isfinite(f) or f > f0 + c1 * alpha * g0 or (i and f >= f_prev):
            return _zoom(phi, f0, g0, previous, f_prev, g_prev, alpha, f, slope, maxiter, c1, c2)
        if abs(slope) <= -c2 * g0:
            return alpha, f, grad, slope
        if slope >= 0:
            return _zoom(phi, f0, g0, alpha, f, slope, previous, f_prev, g_prev, maxiter, c1, c2)
        previous, f_prev, g_prev = alpha, f, slope
        alpha *= 2
    return None


def _zoom(phi, f0, g0, lo, f_lo, g_lo, hi, f_hi, g_hi, maxiter, c1, c2):
    for _ in range(maxiter):
        trial = _cubic_minimum(lo, f_lo, g_lo, hi, f_hi, g_hi) if math.isfinite(f_hi) else None
        low, high = min(lo, hi), max(lo, hi)
        if trial is None or not low + 0.1 * (high - low) <= trial <= high - 0.1 * (high - low):
            trial = 0.5 * (lo + hi)  # bisect where the cubic's step falls near the ends or outside
        f, grad, slope = phi(trial)
        if not math.isfinite(f) or f > f0 + c1 * trial * g0 or f >= f_lo:
            hi, f_hi, g_hi = trial, f, slope
        else:
            if abs(slope) <= -c2 * g0:
                return trial, f, grad, slope
            if slope * (hi - lo) >= 0:
                hi, f_hi, g_hi = lo, f_lo, g_lo
            lo, f_lo, g_lo = trial, f, slope
    return None


def minimize(fun: Callable, x0, args: tuple = (), *, method: str, tol: float | None = None,
             options: dict | None = None) -> OptimizeResults:
    """Minimise fun(x, *args) over a 1-d x from x0 by BFGS. options: maxiter (default 200 per
    variable), norm (of the gradient, default inf), gtol (default tol or 1e-5), line_search_maxiter
    (default 10)."""
    if method.lower() != "bfgs":
        raise ValueError(f"minimize: method must be 'BFGS', got {method!r}")
    options = dict(options or {})
    unknown = set(options) - {"maxiter", "norm", "gtol", "line_search_maxiter"}
    if unknown:
        raise ValueError(f"minimize: unknown options {sorted(unknown)}")
    start = fnp.concrete_or_none(fnp.asarray(x0))
    if start is None:
        raise TypeError("minimize iterates on concrete values: call it outside jit")
    if start.ndim != 1:
        raise ValueError(f"minimize: x0 must be 1-dimensional, got shape {start.shape}")
    dtype = start.dtype if np.issubdtype(start.dtype, np.floating) else np.float32
    n = start.shape[0]
    maxiter = options.get("maxiter", 200 * n)
    order = options.get("norm", np.inf)
    gtol = options.get("gtol", 1e-5 if tol is None else tol)
    line_maxiter = options.get("line_search_maxiter", 10)
    objective = _Objective(fun, args, dtype)
    x = start.astype(np.float64)
    f, g = objective(x)
    h = np.eye(n)
    status, it = 1, 0
    for it in range(maxiter):
        if np.linalg.norm(g, order) < gtol:
            status = 0
            break
        p = -h @ g
        slope0 = float(g @ p)
        if slope0 >= 0:  # a lost descent direction (rounding in h): restart from steepest descent
            h, p, slope0 = np.eye(n), -g, float(-g @ g)

        def phi(alpha, x=x, p=p):
            f_a, g_a = objective(x + alpha * p)
            return f_a, g_a, float(g_a @ p)
        found = _line_search(phi, f, slope0, line_maxiter)
        if found is None:
            status = 3
            break
        alpha, f_new, g_new, _ = found
        s, y = alpha * p, g_new - g
        x, f, g = x + s, f_new, g_new
        sy = float(y @ s)
        if sy > 0:  # keeps h positive definite
            rho = 1 / sy
            left = np.eye(n) - rho * np.outer(s, y)
            h = left @ h @ left.T + rho * np.outer(s, s)
    else:
        it = maxiter
        status = 0 if np.linalg.norm(g, order) < gtol else 1
    as_array = lambda v: fnp.asarray(np.asarray(v).astype(dtype))  # noqa: E731
    return OptimizeResults(as_array(x), status == 0, status, as_array(f), as_array(g), as_array(h), objective.calls,
                           objective.calls, it)
