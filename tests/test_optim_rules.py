"""ASGD, Adafactor and Muon against NumPy transcriptions of PyTorch's single-tensor step functions,
over several steps, eagerly and under jit."""
import math

import ml_dtypes
import numpy as np
import pytest

import funcgrad as fg
import funcgrad.numpy as fnp
from funcgrad import optim

from .helpers import assert_close

RNG = np.random.default_rng(3)
SHAPES = {"w": (5, 3), "b": (3,), "t": (2, 4, 3)}


def _problem(names=tuple(SHAPES), steps=5):
    params = {k: RNG.standard_normal(SHAPES[k]) for k in names}
    grads = [{k: RNG.standard_normal(SHAPES[k]) for k in names} for _ in range(steps)]
    return params, grads


def _run(opt, params, grads, jit=False):
    update = fg.jit(opt.update) if jit else opt.update
    p, state = params, opt.init(params)
    for g in grads:
        u, state = update(g, state, p)
        p = optim.apply_updates(p, u)
    return p, state


def test_asgd_is_pytorchs_step():
    lr, lambd, alpha, t0, wd = 0.05, 1e-3, 0.6, 2, 0.1
    params, grads = _problem()
    got, state = _run(optim.asgd(lr, lambd, alpha, t0, wd), params, grads)
    for k in params:
        p, ax, eta, mu = params[k].copy(), params[k].copy(), np.float32(lr), np.float32(1.0)
        for step, g in enumerate(grads, 1):
            g = g[k] + wd * p
            p = p * (1 - lambd * float(eta)) - float(eta) * g
            ax = ax + (p - ax) * float(mu) if float(mu) != 1 else p.copy()
            eta = np.float32(lr / (1 + lambd * lr * step) ** alpha)  # PyTorch keeps eta and mu in float32
            mu = np.float32(1 / max(1, step - t0))
        assert_close(got[k], p, rtol=1e-12)
        assert_close(state.ax[k], ax, rtol=1e-12)
    jitted, _ = _run(optim.asgd(lr, lambd, alpha, t0, wd), params, grads, jit=True)
    assert_close(jitted["w"], got["w"], rtol=1e-12)


def adafactor_reference(p, grads, lr, beta2_decay, eps1, eps2, d, wd):
    row = np.zeros(p.shape[:-1] + (1,)) if p.ndim > 1 else None
    col = np.zeros(p.shape[:-2] + (1, p.shape[-1])) if p.ndim > 1 else None
    variance = np.zeros_like(p)
    for step, g in enumerate(grads, 1):
        beta = step ** beta2_decay
        rho = min(lr, 1 / math.sqrt(step))
        scale = max(eps2, np.linalg.norm(p) / math.sqrt(p.size)) * rho
        p = p * (1 - lr * wd)
        if p.ndim > 1:
            row += (np.linalg.norm(g, axis=-1, keepdims=True) ** 2 / g.shape[-1] - row) * beta
            col += (np.linalg.norm(g, axis=-2, keepdims=True) ** 2 / g.shape[-2] - col) * beta
            estimate = row @ col / np.maximum(row.mean(axis=-2, keepdims=True), eps1)
        else:
            variance += (g * g - variance) * beta
            estimate = variance
        u = g / np.sqrt(np.maximum(estimate, eps1 * eps1))
        p = p - scale / max(1.0, np.linalg.norm(u) / (math.sqrt(u.size) * d)) * u
    return p


@pytest.mark.parametrize("options", [{}, dict(learning_rate=0.05, beta2_decay=-0.5, eps=(1e-20, 1e-2), d=1.5,
                                              weight_decay=0.1)])
def test_adafactor_is_pytorchs_step(options):
    params, grads = _problem()
    got, _ = _run(optim.adafactor(**options), params, grads)
    jitted, _ = _run(optim.adafactor(**options), params, grads, jit=True)
    lr = options.get("learning_rate", 1e-2)
    eps1, eps2 = options.get("eps", (None, 1e-3))
    for k in params:
        expected = adafactor_reference(params[k], [g[k] for g in grads], lr, options.get("beta2_decay", -0.8),
                                       eps1 if eps1 is not None else np.finfo(np.float64).eps, eps2,
                                       options.get("d", 1.0), options.get("weight_decay", 0.0))
        assert_close(got[k], expected, rtol=1e-12)
        assert_close(jitted[k], expected, rtol=1e-12)
    with pytest.raises(ValueError, match="beta2_decay should be <= 0"):
        optim.adafactor(beta2_decay=0.5)


def newton_schulz_reference(g, steps=5):
    """PyTorch's _zeropower_via_newtonschulz in bfloat16, each addmm rounded once."""
    bf16 = ml_dtypes.bfloat16
    a, b, c = 3.4445, -4.7750, 2.0315
    tall = g.shape[0] > g.shape[1]
    x = g.astype(bf16)
    x = x.T if tall else x
    norm = max(float(bf16(np.linalg.norm(x.astype(np.float32)))), 1e-7)
    x = (x.astype(np.float32) / np.float32(bf16(norm))).astype(bf16)
    for _ in range(steps):
        x32 = x.astype(np.float32)
        gram = (x32 @ x32.T).astype(bf16).astype(np.float32)
        poly = (b * gram + c * (gram @ gram)).astype(bf16).astype(np.float32)
        x = (a * x32 + poly @ x32).astype(bf16)
    return (x.T if tall else x).astype(np.float64)


def test_muon_orthogonalises_nesterov_momentum():
    params, grads = _problem(("w",))
    lr, wd, momentum = 0.02, 0.1, 0.95
    got, _ = _run(optim.muon(lr, wd, momentum), params, grads)
    p, buf = params["w"], np.zeros((5, 3))
    for g in grads:
        g = g["w"]
        buf = buf + (g - buf) * (1 - momentum)
        direction = g + (buf - g) * momentum
        p = p * (1 - lr * wd) - lr * math.sqrt(5 / 3) * newton_schulz_reference(direction)
    assert_close(got["w"], p, rtol=1e-12, atol=1e-12)
    ortho = optim.orthogonalize(fnp.asarray(RNG.standard_normal((8, 4))), steps=10).numpy().astype(np.float64)
    singular = np.linalg.svd(ortho, compute_uv=False)
    assert 0.5 < singular.min() and singular.max() < 1.5  # Muon's quintic: singular values near 1, not at it
    with pytest.raises(ValueError, match="only supports 2D parameters"):
        optim.muon().init({"b": np.zeros(3)})


def _rosenbrock(p):
    x = p["x"]
    return fnp.sum(100 * (x[1:] - x[:-1] ** 2) ** 2 + (1 - x[:-1]) ** 2)


@pytest.mark.parametrize("line_search_fn", [None, "strong_wolfe"])
def test_lbfgs_first_iteration_is_scaled_steepest_descent_and_it_converges(line_search_fn):
    x0 = {"x": np.array([-1.2, 1.0, 0.5])}
    g0 = fg.grad(_rosenbrock)(x0)["x"].numpy()
    one = optim.lbfgs(max_iter=1, learning_rate=0.7)  # PyTorch's first step: lr * min(1, 1 / |g|_1) along -g
    p, state, loss = one.step(fg.value_and_grad(_rosenbrock), x0, one.init(x0))
    assert_close(p["x"], x0["x"] - 0.7 * min(1.0, 1 / np.abs(g0).sum()) * g0, rtol=1e-12)
    assert loss == pytest.approx(float(_rosenbrock(x0))) and state.func_evals == 1 and state.n_iter == 1
    opt = optim.lbfgs(line_search_fn=line_search_fn, max_iter=50, history_size=10)
    p, state = x0, opt.init(x0)
    for _ in range(10):
        p, state, loss = opt.step(fg.value_and_grad(_rosenbrock), p, state)
    assert_close(p["x"], np.ones(3), atol=1e-5)  # the minimum of Rosenbrock's function
    assert len(state.old_dirs) <= 10
    at_minimum, after, _ = opt.step(fg.value_and_grad(_rosenbrock), {"x": np.ones(3)}, opt.init(x0))
    assert after.func_evals == 1 and after.n_iter == 0  # a zero gradient: one evaluation, no step
    with pytest.raises(ValueError, match="only 'strong_wolfe'"):
        optim.lbfgs(line_search_fn="backtracking")


def test_lbfgs_solves_a_quadratic_in_as_many_steps_as_dimensions():
    """With exact curvature pairs and the strong-Wolfe search, L-BFGS on a convex quadratic in n
    dimensions reaches the minimiser A^-1 b in about n iterations."""
    a = RNG.standard_normal((5, 5))
    a = a @ a.T + 5 * np.eye(5)
    b = RNG.standard_normal(5)
    opt = optim.lbfgs(line_search_fn="strong_wolfe", max_iter=12, tolerance_grad=1e-12, tolerance_change=1e-14)
    x, state, _ = opt.step(fg.value_and_grad(lambda v: 0.5 * v @ a @ v - b @ v), np.zeros(5), opt.init(np.zeros(5)))
    assert_close(x, np.linalg.solve(a, b), rtol=1e-8)
    assert state.n_iter <= 12
