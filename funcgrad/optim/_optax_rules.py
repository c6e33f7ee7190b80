"""optax's update rules that PyTorch has no optimiser for, each computed as optax 0.2 computes it:
Yogi, AdaBelief, AMSGrad (optax's bias-corrected maximum), NovoGrad, Adan, SM3, the centred and
summed second moments (scale_by_stddev, scale_by_rss), optimistic gradients, Polyak's step size,
and the per-parameter scalings that LAMB, LARS and Fromage chain (trust ratio, block norm/RMS)."""
from __future__ import annotations

from typing import Any, NamedTuple

import numpy as np

from .. import dtypes
from .. import numpy as fnp
from ..array import Array
from ..tree import tree_flatten, tree_leaves, tree_map
from ._base import (GradientTransformation, GradientTransformationExtraArgs, Schedule, _betas, _count, _debiased,
                    _in_dtype, _need_params, _step_number, _tree_zeros_like, _value)
from ._transforms import AdamState, CountState, _zero_moments


def _abs_sq(g):
    return fnp.real(g * fnp.conj(g)) if dtypes.is_complex(g.dtype) else g * g


def _moment(updates, moments, decay, order: int = 1):
    """optax's update_moment: (1 - decay) g^order + decay m (|g|^2 for order 2)."""
    return tree_map(lambda g, m: (1 - decay) * (g if order == 1 else _abs_sq(g)) + decay * m, updates, moments)


def _adaptive(numerators, second_moments, eps, eps_root):
    return tree_map(lambda m, v: m / (fnp.sqrt(v + eps_root) + eps), numerators, second_moments)


def scale_by_yogi(b1: float = 0.9, b2: float = 0.999, eps: float = 1e-3, eps_root: float = 0.0,
                  initial_accumulator_value: float = 1e-6) -> GradientTransformation:
    """Yogi (Zaheer et al. 2018): Adam whose second moment moves additively,
    v - (1 - b2) sign(v - g^2) g^2, so it cannot grow by a factor in one step."""
    _betas(b1, b2)

    def init(params):
        return AdamState(_count(), *(tree_map(lambda p: fnp.full_like(p, initial_accumulator_value), params)
                                     for _ in range(2)))

    def update(updates, state, params=None):
        mu = _moment(updates, state.mu, b1)
        nu = tree_map(lambda g, v: v - (1 - b2) * fnp.sign(v - _abs_sq(g)) * _abs_sq(g), updates, state.nu)
        t = _step_number(state.count)
        return _adaptive(_debiased(mu, b1, t), _debiased(nu, b2, t), eps, eps_root), AdamState(state.count + 1, mu, nu)
    return GradientTransformation(init, update)


def scale_by_belief(b1: float = 0.9, b2: float = 0.999, eps: float = 1e-16, eps_root: float = 1e-16, *,
                    nesterov: bool = False) -> GradientTransformation:
    """AdaBelief (Zhuang et al. 2020): the second moment is that of g - m, the gradient's surprise."""
    _betas(b1, b2)

    def update(updates, state, params=None):
        mu = _moment(updates, state.mu, b1)
        nu = tree_map(lambda v: v + eps_root, _moment(tree_map(fnp.subtract, updates, mu), state.nu, b2, 2))
        t = _step_number(state.count)
        if nesterov:
            mu_hat = tree_map(lambda m, g: b1 * m + (1 - b1) * g, _debiased(mu, b1, t + 1), _debiased(updates, b1, t))
        else:
            mu_hat = _debiased(mu, b1, t)
        return _adaptive(mu_hat, _debiased(nu, b2, t), eps, 0.0), AdamState(state.count + 1, mu, nu)
    return GradientTransformation(_zero_moments, update)


class AmsgradState(NamedTuple):
    count: Array
    mu: Any
    nu: Any
    nu_max: Any


def scale_by_amsgrad(b1: float = 0.9, b2: float = 0.999, eps: float = 1e-8, eps_root: float = 0.0,
                     bias_correction_mu: bool = True, bias_correction_nu: bool = True) -> GradientTransformation:
    """optax's AMSGrad: the running maximum of the bias-corrected second moment (PyTorch's
    Adam(amsgrad=True) keeps the maximum of the raw one)."""
    _betas(b1, b2)

    def init(params):
        return AmsgradState(_count(), *(_tree_zeros_like(params) for _ in range(3)))

    def update(updates, state, params=None):
        mu = _moment(updates, state.mu, b1)
        nu = _moment(updates, state.nu, b2, 2)
        t = _step_number(state.count)
        mu_hat = _debiased(mu, b1, t) if bias_correction_mu else mu
        nu_max = tree_map(fnp.maximum, state.nu_max, _debiased(nu, b2, t) if bias_correction_nu else nu)
        return _adaptive(mu_hat, nu_max, eps, eps_root), AmsgradState(state.count + 1, mu, nu, nu_max)
    return GradientTransformation(init, update)


def scale_by_novograd(b1: float = 0.9, b2: float = 0.25, eps: float = 1e-8, eps_root: float = 0.0,
                      weight_decay: float = 0.0) -> GradientTransformation:
    """NovoGrad (Ginsburg et al. 2019): a second moment per layer, the moving average of the
    gradient's squared norm (its first value the first norm), and momentum over the normalised
    gradient plus weight decay."""
    _betas(b1, b2)

    def init(params):
        return AdamState(_count(), _tree_zeros_like(params), tree_map(lambda p: fnp.zeros((), p.dtype), params))

    def update(updates, state, params=None):
        params = _need_params(params, "scale_by_novograd")
        first = state.count == 0
        sq_norms = tree_map(lambda g: fnp.astype(fnp.sum(_abs_sq(g)), g.dtype), updates)
        nu = tree_map(lambda s, v: fnp.where(first, s, (1 - b2) * s + b2 * v), sq_norms, state.nu)
        mu = tree_map(lambda g, p, m, v: fnp.where(first, 0.0, b1 * m) + g / (fnp.sqrt(v + eps_root) + eps)
                      + weight_decay * p, updates, params, state.mu, nu)
        return mu, AdamState(state.count + 1, mu, nu)
    return GradientTransformation(init, update)


class AdanState(NamedTuple):
    m: Any
    v: Any
    n: Any
    g: Any
    t: Array


def scale_by_adan(b1: float = 0.98, b2: float = 0.92, b3: float = 0.99, eps: float = 1e-8,
                  eps_root: float = 0.0) -> GradientTransformation:
    """Adan (Xie et al. 2022): Nesterov momentum estimated from the gradient's differences, with
    moments of g, of g_t - g_{t-1} and of (g + (1 - b2) difference)^2."""
    def init(params):
        return AdanState(*(_tree_zeros_like(params) for _ in range(4)), _count())

    def update(updates, state, params=None):
        diff = tree_map(lambda g, h: fnp.where(state.t == 0, 0.0, g - h), updates, state.g)
        m = _moment(updates, state.m, b1)
        v = _moment(diff, state.v, b2)
        n = _moment(tree_map(lambda g, d: g + (1 - b2) * d, updates, diff), state.n, b3, 2)
        t = _step_number(state.t)
        u = tree_map(lambda a, b: a + (1 - b2) * b, _debiased(m, b1, t), _debiased(v, b2, t))
        return _adaptive(u, _debiased(n, b3, t), eps, eps_root), AdanState(m, v, n, updates, state.t + 1)
    return GradientTransformation(init, update)


class SM3State(NamedTuple):
    mu: tuple  # per parameter (in tree_leaves' order), a tuple of one accumulator per axis
    nu: Any


def scale_by_sm3(b1: float = 0.9, b2: float = 1.0, eps: float = 1e-8) -> GradientTransformation:
    """SM3 (Anil et al. 2019): Adagrad's sum of squares kept per axis (a row and a column vector
    for a matrix), the entry's estimate the minimum over its axes; then momentum b1. A 0-d or 1-D
    parameter keeps its sum of squares whole."""
    coeffs = (1.0 - b2 if b2 != 1.0 else 1.0, b2)

    def axes_of(p):
        return tuple(fnp.zeros((p.shape[i],), p.dtype) for i in range(p.ndim)) or (fnp.zeros((), p.dtype),)

    def init(params):
        leaves = tree_leaves(params)
        for p in leaves:
            if dtypes.is_complex(p.dtype):
                raise ValueError("scale_by_sm3 does not support complex parameters")
        return SM3State(tuple(axes_of(p) for p in leaves), _tree_zeros_like(params))

    def accumulate(g, covers):
        if g.ndim < 2:
            return coeffs[0] * g * g + coeffs[1] * covers[0]
        expanded = [fnp.reshape(c, [1] * i + [g.shape[i]] + [1] * (g.ndim - i - 1)) for i, c in enumerate(covers)]
        smallest = expanded[0]
        for c in expanded[1:]:
            smallest = fnp.minimum(smallest, c)
        return coeffs[0] * g * g + coeffs[1] * smallest

    def covers_of(acc):
        if acc.ndim < 2:
            return (acc,)
        return tuple(fnp.max(acc, axis=tuple(j for j in range(acc.ndim) if j != i)) for i in range(acc.ndim))

    def update(updates, state, params=None):
        g_leaves, structure = tree_flatten(updates)
        accs = [accumulate(g, covers) for g, covers in zip(g_leaves, state.mu)]
        scaled = [g * fnp.where(a > 0, 1 / fnp.sqrt(a + eps), 0.0) for g, a in zip(g_leaves, accs)]
        nu = _moment(structure.unflatten(scaled), state.nu, b1)
        return nu, SM3State(tuple(covers_of(a) for a in accs), nu)
    return GradientTransformation(init, update)


class StdDevState(NamedTuple):
    count: Array
    mu: Any
    nu: Any


def scale_by_stddev(decay: float = 0.9, eps: float = 1e-8, initial_scale: float = 0.0, eps_in_sqrt: bool = True,
                    bias_correction: bool = False) -> GradientTransformation:
    """optax's centred RMSprop rule: g / sqrt(E[g^2] - E[g]^2 + eps) (eps outside the root with
    eps_in_sqrt=False), the moments optionally bias-corrected."""
    def init(params):
        return StdDevState(_count(), _tree_zeros_like(params),
                           tree_map(lambda p: fnp.full_like(p, initial_scale), params))

    def update(updates, state, params=None):
        mu, nu = _moment(updates, state.mu, decay), _moment(updates, state.nu, decay, 2)
        t = _step_number(state.count)
        mu_hat, nu_hat = (_debiased(mu, decay, t), _debiased(nu, decay, t)) if bias_correction else (mu, nu)
        if eps_in_sqrt:
            scaling = tree_map(lambda m, n: 1 / fnp.sqrt(n - _abs_sq(m) + eps), mu_hat, nu_hat)
        else:
            scaling = tree_map(lambda m, n: 1 / (fnp.sqrt(n - _abs_sq(m)) + eps), mu_hat, nu_hat)
        return tree_map(fnp.multiply, scaling, updates), StdDevState(state.count + 1, mu, nu)
    return GradientTransformation(init, update)


class RssState(NamedTuple):
    sum_of_squares: Any


def scale_by_rss(initial_accumulator_value: float = 0.1, eps: float = 1e-7) -> GradientTransformation:
    """optax's Adagrad rule: g / sqrt(sum of g^2 + eps), 0 where the sum is 0."""
    def update(updates, state, params=None):
        total = tree_map(lambda g, s: _abs_sq(g) + s, updates, state.sum_of_squares)
        out = tree_map(lambda g, s: fnp.where(s > 0, 1 / fnp.sqrt(s + eps), 0.0) * g, updates, total)
        return out, RssState(total)
    return GradientTransformation(
        lambda params: RssState(tree_map(lambda p: fnp.full_like(p, initial_accumulator_value), params)), update)


class OptimisticState(NamedTuple):
    is_initial_step: Array
    previous_gradient: Any


def scale_by_optimistic_gradient(alpha: float = 1.0, beta: float = 1.0) -> GradientTransformation:
    """Optimistic gradient (Daskalakis et al. 2018, for min-max games): (alpha + beta) g_t - beta g_{t-1}
    (g_{t-1} = g_t on the first step)."""
    def update(updates, state, params=None):
        out = tree_map(lambda g, h: (alpha + beta) * g - beta * fnp.where(state.is_initial_step, g, h),
                       updates, state.previous_gradient)
        return out, OptimisticState(fnp.zeros((), bool), updates)
    return GradientTransformation(lambda params: OptimisticState(fnp.ones((), bool), _tree_zeros_like(params)),
                                  update)


def scale_by_polyak(f_min: float = 0.0, max_learning_rate: float = 1.0, eps: float = 0.0,
                    variant: str = "sps") -> GradientTransformationExtraArgs:
    """Polyak's step size (Loizou et al. 2021's SPS): min((f(x) - f_min) / (|g|^2 + eps), max_learning_rate),
    with the loss given as update(..., value=loss); "sps+" clips a negative gap to 0."""
    if variant not in ("sps", "sps+"):
        raise ValueError(f"Invalid argument value for Polyak SGD: variant={variant!r}")

    def update(updates, state, params=None, *, value, **extra):
        leaves = tree_leaves(updates)
        sq_norm = sum((fnp.sum(_abs_sq(g)) for g in leaves), fnp.zeros((), leaves[0].dtype if leaves else np.float32))
        gap = fnp.astype(fnp.asarray(value) - f_min, sq_norm.dtype)
        if variant == "sps+":
            gap = fnp.maximum(gap, 0.0)
        step = fnp.where(sq_norm + eps <= np.finfo(float).eps, 0.0,
                         fnp.minimum(gap / (sq_norm + eps), max_learning_rate))
        return tree_map(lambda g: fnp.astype(step, g.dtype) * g, updates), state
    return GradientTransformationExtraArgs(lambda params: (), update)


def _safe_norm(x, min_norm):
    """max(|x|, min_norm) whose gradient is 0, not NaN, where |x| <= min_norm (optax's safe_norm)."""
    norm = fnp.sqrt(fnp.sum(_abs_sq(x)))
    small = norm <= min_norm
    return fnp.where(small, min_norm, fnp.sqrt(fnp.sum(_abs_sq(fnp.where(small, 1.0, x)))))


def _safe_rms(x, min_rms):
    rms = fnp.sqrt(fnp.mean(_abs_sq(x)))
    small = rms <= min_rms
    return fnp.where(small, min_rms, fnp.sqrt(fnp.mean(_abs_sq(fnp.where(small, 1.0, x)))))


def scale_by_trust_ratio(min_norm: float = 0.0, trust_coefficient: float = 1.0, eps: float = 0.0
                         ) -> GradientTransformation:
    """Each parameter's update scaled by trust_coefficient |p| / (|u| + eps) (LARS, LAMB), or left as
    it is where either norm is 0."""
    def scaled(u, p):
        p_norm, u_norm = _safe_norm(p, min_norm), _safe_norm(u, min_norm)
        ratio = trust_coefficient * p_norm / (u_norm + eps)
        return u * fnp.astype(fnp.where((p_norm == 0.0) | (u_norm == 0.0), 1.0, ratio), u.dtype)

    def update(updates, state, params=None):
        return tree_map(scaled, updates, _need_params(params, "scale_by_trust_ratio")), state
    return GradientTransformation(lambda params: (), update)


def scale_by_param_block_norm(min_scale: float = 1e-3) -> GradientTransformation:
    """Each parameter's update times max(|p|, min_scale)."""
    def update(updates, state, params=None):
        return tree_map(lambda u, p: u * fnp.astype(_safe_norm(p, min_scale), u.dtype), updates,
                        _need_params(params, "scale_by_param_block_norm")), state
    return GradientTransformation(lambda params: (), update)


def scale_by_param_block_rms(min_scale: float = 1e-3) -> GradientTransformation:
    """Each parameter's update times max(rms(p), min_scale)."""
    def update(updates, state, params=None):
        return tree_map(lambda u, p: u * fnp.astype(_safe_rms(p, min_scale), u.dtype), updates,
                        _need_params(params, "scale_by_param_block_rms")), state
    return GradientTransformation(lambda params: (), update)


def scale_by_sign() -> GradientTransformation:
    """sign(g) (signSGD)."""
    return GradientTransformation(lambda params: (), lambda updates, state, params=None: (
        tree_map(fnp.sign, updates), state))


def scale_by_schedule(step_size_fn: Schedule) -> GradientTransformation:
    """g times step_size_fn(count) (optax's: the schedule's value itself, no sign flip)."""
    def update(updates, state, params=None):
        size = _value(step_size_fn, state.count)
        return tree_map(lambda g: _in_dtype(size, g) * g, updates), CountState(state.count + 1)
    return GradientTransformation(lambda params: CountState(_count()), update)
