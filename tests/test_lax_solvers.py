"""lax.custom_root and lax.custom_linear_solve: solver values, derivatives by the implicit function
theorem, against closed forms and NumPy's dense solutions; the solvers' own code is never differentiated."""
import numpy as np
import pytest

import funcgrad as fg
import funcgrad.numpy as fnp
from funcgrad import lax

from .helpers import assert_close

RNG = np.random.default_rng(5)
M = RNG.standard_normal((3, 3))
SPD = M @ M.T + 3 * np.eye(3)
B = SPD + np.triu(np.ones((3, 3)), 1)  # not symmetric
b = RNG.standard_normal(3)


def newton(f, x):
    for _ in range(40):
        x = x - f(x) / fg.jacfwd(f)(x)
    return x


def bisection(f, x):  # no derivative flows through this: only the implicit rule can give one
    lo, hi = 0.0, 10.0
    for _ in range(80):
        mid = (lo + hi) / 2
        lo, hi = (mid, hi) if float(fg.stop_gradient(f(fnp.asarray(mid, fnp.float64)))) < 0 else (lo, mid)
    return fnp.asarray((lo + hi) / 2, fnp.float64)


def cube_root(a, solver=newton):
    return lax.custom_root(lambda x: x ** 3 - a, fnp.asarray(1.0, fnp.float64), solver, lambda g, y: y / g(1.0))


def test_custom_root_derivatives_of_every_order_in_use():
    a = fnp.asarray(2.0, fnp.float64)
    assert_close(cube_root(a), 2 ** (1 / 3), rtol=1e-12)
    for solver in (newton, bisection):  # d^k/da^k a^(1/3)
        assert_close(fg.grad(lambda a: cube_root(a, solver))(a), 1 / 3 * 2 ** (-2 / 3), rtol=1e-9)
    assert_close(fg.grad(fg.grad(cube_root))(a), -2 / 9 * 2 ** (-5 / 3), rtol=1e-9)
    assert_close(fg.jacfwd(fg.jacrev(cube_root))(a), -2 / 9 * 2 ** (-5 / 3), rtol=1e-9)
    assert_close(fg.grad(fg.grad(fg.grad(cube_root)))(a), 10 / 27 * 2 ** (-8 / 3), rtol=1e-9)
    assert_close(fg.vmap(fg.grad(cube_root))(np.array([1.0, 8.0])), [1 / 3, 1 / 12], rtol=1e-9)
    assert_close(fg.jit(fg.grad(cube_root))(a), 1 / 3 * 2 ** (-2 / 3), rtol=1e-9)


def test_custom_root_of_a_vector_with_a_dense_tangent_solve_and_aux():
    def root(p):  # x_i^2 + p_i x_i - 1 = 0, the positive root
        def solve(f, x):
            for _ in range(40):
                x = x - fnp.linalg.solve(fg.jacfwd(f)(x), f(x))
            return x, fnp.max(fnp.abs(f(x)))
        return lax.custom_root(lambda x: x * x + p * x - 1.0, fnp.ones(2, fnp.float64), solve,
                               lambda g, y: fnp.linalg.solve(fg.jacfwd(g)(y), y), has_aux=True)
    p = np.array([0.5, 2.0])
    x, aux = root(p)
    assert float(aux) < 1e-12
    assert_close(x, (-p + np.sqrt(p * p + 4)) / 2)
    dx = -1 / 2 + p / (2 * np.sqrt(p * p + 4))
    assert_close(fg.jacrev(lambda p: root(p)[0])(p), np.diag(dx))
    d2x = 2 / (p * p + 4) ** 1.5
    assert_close(fg.hessian(lambda p: fnp.sum(root(p)[0]))(p), np.diag(d2x))


def cg(matvec, rhs):  # a fixed number of conjugate-gradient steps: exact for 3 unknowns
    x = fnp.zeros_like(rhs)
    r = rhs - matvec(x)
    p = r
    for _ in range(3):
        Ap = matvec(p)
        rr = fnp.sum(r * r)
        alpha = rr / fnp.sum(p * Ap)
        x = x + alpha * p
        r_next = r - alpha * Ap
        p = r_next + fnp.sum(r_next * r_next) / rr * p
        r = r_next
    return x


def dense(matvec, rhs):
    return fnp.linalg.solve(fg.jacfwd(matvec)(rhs), rhs)


def test_custom_linear_solve_values_and_first_derivatives():
    def solve_spd(A, rhs):
        return lax.custom_linear_solve(lambda v: A @ v, rhs, cg, symmetric=True)
    x = np.linalg.solve(SPD, b)
    assert_close(solve_spd(SPD, b), x, rtol=1e-9)
    loss = lambda A, rhs: fnp.sum(solve_spd(A, rhs) ** 2)  # noqa: E731  d/db = 2 A^-T x, d/dA = -A^-T 2x x^T
    g_A, g_b = fg.grad(loss, argnums=(0, 1))(SPD, b)
    assert_close(g_b, np.linalg.solve(SPD.T, 2 * x), rtol=1e-8)
    assert_close(g_A, -np.outer(np.linalg.solve(SPD.T, 2 * x), x), rtol=1e-8)
    assert_close(fg.jacfwd(lambda r: solve_spd(SPD, r))(b), np.linalg.inv(SPD), rtol=1e-8)
    assert_close(fg.jit(fg.grad(loss))(SPD, b), -np.outer(np.linalg.solve(SPD.T, 2 * x), x), rtol=1e-8)
    assert_close(fg.vmap(lambda r: solve_spd(SPD, r))(np.stack([b, 2 * b])), np.stack([x, 2 * x]), rtol=1e-9)

    def solve_general(A, rhs, transpose_solve=dense):
        return lax.custom_linear_solve(lambda v: A @ v, rhs, dense, transpose_solve=transpose_solve)
    x = np.linalg.solve(B, b)
    assert_close(fg.grad(lambda A: fnp.sum(solve_general(A, b) ** 3))(B),
                 -np.outer(np.linalg.solve(B.T, 3 * x ** 2), x), rtol=1e-8)
    assert_close(fg.jacfwd(lambda r: solve_general(B, r, None))(b), np.linalg.inv(B), rtol=1e-8)
    with pytest.raises(TypeError, match="reverse mode .* needs transpose_solve"):
        fg.grad(lambda r: fnp.sum(solve_general(B, r, None)))(b)
    with pytest.raises(TypeError, match="differentiated 2 times over here"):
        fg.hessian(lambda A: fnp.sum(solve_general(A, b)))(B)


def test_a_leaked_tracer_still_raises():
    kept = []
    fg.grad(lambda x: (kept.append(x), x * 2.0)[1])(1.0)
    with pytest.raises(fg.TracerLeakError):
        kept[0] * 2.0
