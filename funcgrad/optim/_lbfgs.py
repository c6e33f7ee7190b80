"""torch.optim.LBFGS as a pure step: one call runs PyTorch's inner loop (up to max_iter
quasi-Newton iterations, each re-evaluating the function), so it takes the function, not
gradients. It runs eagerly (its loop branches on values, as PyTorch's does on the host).

    opt = optim.lbfgs(line_search_fn="strong_wolfe")
    state = opt.init(params)
    params, state, loss = opt.step(fg.value_and_grad(loss_fn), params, state)
"""
from __future__ import annotations

import math
from typing import Any, Callable, NamedTuple

from .. import numpy as fnp
from ..flatten_util import ravel_pytree


class LBFGSState(NamedTuple):
    """PyTorch's state: the curvature pairs (old_dirs y, old_stps s, ro = 1 / y.s), the last
    direction d and step t, H_diag, the previous flat gradient and loss, and the counters."""
    old_dirs: list
    old_stps: list
    ro: list
    d: Any = None
    t: float = 0.0
    h_diag: float = 1.0
    prev_flat_grad: Any = None
    prev_loss: float = 0.0
    n_iter: int = 0
    func_evals: int = 0


class LBFGS(NamedTuple):
    init: Callable
    step: Callable


def _dot(a, b) -> float:
    return float(fnp.sum(a * b))


def _max_abs(a) -> float:
    return float(fnp.max(fnp.abs(a)))


def _cubic_interpolate(x1, f1, g1, x2, f2, g2, bounds=None) -> float:
    """The minimiser of the cubic through (x1, f1, g1) and (x2, f2, g2), kept within bounds."""
    low, high = bounds if bounds is not None else ((x1, x2) if x1 <= x2 else (x2, x1))
    d1 = g1 + g2 - 3 * (f1 - f2) / (x1 - x2)
    d2_square = d1 ** 2 - g1 * g2
    if d2_square < 0:
        return (low + high) / 2.0
    d2 = math.sqrt(d2_square)
    if x1 <= x2:
        position = x2 - (x2 - x1) * ((g2 + d2 - d1) / (g2 - g1 + 2 * d2))
    else:
        position = x1 - (x1 - x2) * ((g1 + d2 - d1) / (g1 - g2 + 2 * d2))
    return min(max(position, low), high)


def _strong_wolfe(evaluate, t, d, f, g, gtd, c1=1e-4, c2=0.9, tolerance_change=1e-9, max_ls=25):
    """PyTorch's line search along d from step t: a bracket with the strong Wolfe conditions,
    then zoomed by cubic interpolation. (loss, flat gradient, step, evaluations)."""
    d_norm = _max_abs(d)
    f_new, g_new = evaluate(t)
    evals, gtd_new = 1, _dot(g_new, d)
    t_prev, f_prev, g_prev, gtd_prev = 0.0, f, g, gtd
    done, ls_iter = False, 0
    bracket = bracket_f = bracket_g = bracket_gtd = None
    while ls_iter < max_ls:
        if f_new > (f + c1 * t * gtd) or (ls_iter > 1 and f_new >= f_prev):
            bracket, bracket_f, bracket_g, bracket_gtd = [t_prev, t], [f_prev, f_new], [g_prev, g_new], [gtd_prev,
                                                                                                         gtd_new]
            break
        if abs(gtd_new) <= -c2 * gtd:
            bracket, bracket_f, bracket_g, done = [t], [f_new], [g_new], True
            break
        if gtd_new >= 0:
            bracket, bracket_f, bracket_g, bracket_gtd = [t_prev, t], [f_prev, f_new], [g_prev, g_new], [gtd_prev,
                                                                                                         gtd_new]
            break
        previous = t
        t = _cubic_interpolate(t_prev, f_prev, gtd_prev, t, f_new, gtd_new, bounds=(t + 0.01 * (t - t_prev), t * 10))
        t_prev, f_prev, g_prev, gtd_prev = previous, f_new, g_new, gtd_new
        f_new, g_new = evaluate(t)
        evals, gtd_new, ls_iter = evals + 1, _dot(g_new, d), ls_iter + 1
    if ls_iter == max_ls:
        bracket, bracket_f, bracket_g = [0, t], [f, f_new], [g, g_new]
    low, high = (0, 1) if bracket_f[0] <= bracket_f[-1] else (1, 0)
    stalled = False
    while not done and ls_iter < max_ls:
        if abs(bracket[1] - bracket[0]) * d_norm < tolerance_change:
            break
        t = _cubic_interpolate(bracket[0], bracket_f[0], bracket_gtd[0], bracket[1], bracket_f[1], bracket_gtd[1])
        eps = 0.1 * (max(bracket) - min(bracket))
        if min(max(bracket) - t, t - min(bracket)) < eps:  # too near an end: move inwards
            if stalled or t >= max(bracket) or t <= min(bracket):
                t = max(bracket) - eps if abs(t - max(bracket)) < abs(t - min(bracket)) else min(bracket) + eps
                stalled = False
            else:
                stalled = True
        else:
            stalled = False
        f_new, g_new = evaluate(t)
        evals, gtd_new, ls_iter = evals + 1, _dot(g_new, d), ls_iter + 1
        if f_new > (f + c1 * t * gtd) or f_new >= bracket_f[low]:
            bracket[high], bracket_f[high], bracket_g[high], bracket_gtd[high] = t, f_new, g_new, gtd_new
            low, high = (0, 1) if bracket_f[0] <= bracket_f[1] else (1, 0)
        else:
            if abs(gtd_new) <= -c2 * gtd:
                done = True
            elif gtd_new * (bracket[high] - bracket[low]) >= 0:
                bracket[high], bracket_f[high] = bracket[low], bracket_f[low]
                bracket_g[high], bracket_gtd[high] = bracket_g[low], bracket_gtd[low]
            bracket[low], bracket_f[low], bracket_g[low], bracket_gtd[low] = t, f_new, g_new, gtd_new
    return bracket_f[low], bracket_g[low], bracket[low], evals


def lbfgs(learning_rate: float = 1.0, max_iter: int = 20, max_eval: int | None = None, tolerance_grad: float = 1e-7,
          tolerance_change: float = 1e-9, history_size: int = 100, line_search_fn: str | None = None) -> LBFGS:
    """torch.optim.LBFGS: step(value_and_grad, params, state) -> (params, state, loss at the start),
    value_and_grad(params) giving (loss, gradients), e.g. fg.value_and_grad(loss_fn)."""
    if not learning_rate >= 0.0:
        raise ValueError(f"Invalid learning rate: {learning_rate}")
    if line_search_fn not in (None, "strong_wolfe"):
        raise ValueError("only 'strong_wolfe' is supported")
    max_eval = max_eval if max_eval is not None else max_iter * 5 // 4

    def init(params) -> LBFGSState:
        return LBFGSState([], [], [])

    def step(value_and_grad: Callable, params, state: LBFGSState):
        x, unravel = ravel_pytree(params)

        def evaluate(at):
            loss, grads = value_and_grad(unravel(at))
            flat, _ = ravel_pytree(grads)
            return float(loss), fnp.astype(flat, x.dtype)

        old_dirs, old_stps, ro = list(state.old_dirs), list(state.old_stps), list(state.ro)
        d, t, h_diag, prev_flat_grad, prev_loss = state.d, state.t, state.h_diag, state.prev_flat_grad, state.prev_loss
        n_total, func_evals = state.n_iter, state.func_evals
        orig_loss, flat_grad = evaluate(x)
        loss, current_evals, func_evals = orig_loss, 1, func_evals + 1
        if _max_abs(flat_grad) <= tolerance_grad:
            return params, state._replace(func_evals=func_evals), orig_loss
        n_iter = 0
        while n_iter < max_iter:
            n_iter, n_total = n_iter + 1, n_total + 1
            if n_total == 1:
                d, old_dirs, old_stps, ro, h_diag = -flat_grad, [], [], [], 1.0
            else:  # the two-loop recursion over the stored curvature pairs
                y, s = flat_grad - prev_flat_grad, d * t
                ys = _dot(y, s)
                if ys > 1e-10:
                    if len(old_dirs) == history_size:
                        old_dirs, old_stps, ro = old_dirs[1:], old_stps[1:], ro[1:]
                    old_dirs, old_stps, ro, h_diag = old_dirs + [y], old_stps + [s], ro + [1.0 / ys], ys / _dot(y, y)
                q, al = -flat_grad, [0.0] * len(old_dirs)
                for i in range(len(old_dirs) - 1, -1, -1):
                    al[i] = _dot(old_stps[i], q) * ro[i]
                    q = q - al[i] * old_dirs[i]
                d = q * h_diag
                for i in range(len(old_dirs)):
                    d = d + (al[i] - _dot(old_dirs[i], d) * ro[i]) * old_stps[i]
            prev_flat_grad, prev_loss = flat_grad, loss
            t = (min(1.0, 1.0 / float(fnp.sum(fnp.abs(flat_grad)))) if n_total == 1 else 1.0) * learning_rate
            gtd = _dot(flat_grad, d)
            if gtd > -tolerance_change:  # not a descent direction
                break
            ls_evals = 0
            if line_search_fn is not None:
                start = x
                loss, flat_grad, t, ls_evals = _strong_wolfe(lambda step_t: evaluate(start + step_t * d), t, d, loss,
                                                             flat_grad, gtd, tolerance_change=tolerance_change)
                x = start + t * d
            else:
                x = x + t * d
                if n_iter != max_iter:
                    loss, flat_grad = evaluate(x)
                    ls_evals = 1
            current_evals, func_evals = current_evals + ls_evals, func_evals + ls_evals
            if (n_iter == max_iter or current_evals >= max_eval or _max_abs(flat_grad) <= tolerance_grad
                    or _max_abs(d * t) <= tolerance_change or abs(loss - prev_loss) < tolerance_change):
                break
        new_state = LBFGSState(old_dirs, old_stps, ro, d, t, h_diag, prev_flat_grad, prev_loss, n_total, func_evals)
        return unravel(x), new_state, orig_loss

    return LBFGS(init, step)
