"""The building blocks: each scale_by_* is one of PyTorch's update rules without its learning
rate, as an optax transformation; weight decay, momentum, clipping."""
from __future__ import annotations

from typing import Any, NamedTuple

import numpy as np

from .. import numpy as fnp
from ..array import Array
from ..control import cond
from ..tree import tree_leaves, tree_map
from ._base import (GradientTransformation, ScalarOrSchedule, _at_least, _betas, _count, _in_dtype, _need_params,
                    _nonzero, _step_number, _tree_zeros_like, _value, over_shards)
from ._wrappers import masked

class CountState(NamedTuple):
    count: Array


def scale_by_learning_rate(learning_rate: ScalarOrSchedule) -> GradientTransformation:
    """Multiply by -learning_rate (a schedule is evaluated at this transformation's step count)."""
    if not callable(learning_rate):
        _at_least(learning_rate, 0.0, "learning rate")

    def update(updates, state, params=None):
        lr = _value(learning_rate, state.count)
        return tree_map(lambda u: u * _in_dtype(-lr, u), updates), CountState(state.count + 1)
    return GradientTransformation(lambda params: CountState(_count()), update)


def scale(factor: float) -> GradientTransformation:
    """Multiply the updates by a constant (optax's scale; -1 turns a minimiser into a maximiser)."""
    return GradientTransformation(lambda params: (), lambda updates, state, params=None: (
        tree_map(lambda u: u * factor, updates), state))


def add_decayed_weights(weight_decay: ScalarOrSchedule, mask=None) -> GradientTransformation:
    """updates + weight_decay * params: L2 before a scaling rule, decoupled decay after one.
    weight_decay may be a schedule of the step count; mask (optax's: a pytree of bools or a function
    of the parameters) limits the decay to some parameters."""
    if mask is not None:
        return masked(add_decayed_weights(weight_decay), mask)
    if not callable(weight_decay):
        _at_least(weight_decay, 0.0, "weight_decay value")

    def update(updates, state, params=None):
        decay = _value(weight_decay, state.count if callable(weight_decay) else 0)
        new_state = CountState(state.count + 1) if callable(weight_decay) else state
        if isinstance(decay, float) and not decay:
            return updates, new_state
        params = _need_params(params, "add_decayed_weights")
        return tree_map(lambda u, p: u + _in_dtype(decay, p) * p, updates, params), new_state
    return GradientTransformation(lambda params: CountState(_count()) if callable(weight_decay) else (), update)


class TraceState(NamedTuple):
    count: Array
    momentum: Any


def trace(momentum: float, dampening: float = 0.0, nesterov: bool = False) -> GradientTransformation:
    """PyTorch SGD momentum: buf = g on the first step, then momentum * buf + (1 - dampening) * g."""
    _at_least(momentum, 0.0, "momentum value")
    if nesterov and (momentum <= 0 or dampening != 0):
        raise ValueError("Nesterov momentum requires a momentum and zero dampening")

    def update(updates, state, params=None):
        buf = cond(state.count == 0, lambda: updates,
                   lambda: tree_map(lambda b, g: momentum * b + (1 - dampening) * g, state.momentum, updates))
        out = tree_map(lambda g, b: g + momentum * b, updates, buf) if nesterov else buf
        return out, TraceState(state.count + 1, buf)
    return GradientTransformation(lambda params: TraceState(_count(), _tree_zeros_like(params)), update)


class AdamState(NamedTuple):
    count: Array
    mu: Any
    nu: Any


def _zero_moments(params) -> AdamState:
    """A count and two moment trees of zeros: the state of Adam's relatives."""
    return AdamState(_count(), _tree_zeros_like(params), _tree_zeros_like(params))


def scale_by_adam(b1: float = 0.9, b2: float = 0.999, eps: float = 1e-8, amsgrad: bool = False, *,
                  eps_root: float = 0.0, nesterov: bool = False) -> GradientTransformation:
    """m_hat / (sqrt(v_hat) + eps) with bias-corrected moments (torch.optim.Adam); optax's eps_root
    goes inside the root, sqrt(v_hat + eps_root), and nesterov takes the next step's momentum,
    b1 m_hat(t + 1) + (1 - b1) g_hat(t) (optax's NAdamW)."""
    _betas(b1, b2)
    _at_least(eps, 0.0, "epsilon value")

    def init(params):
        nu = _tree_zeros_like(params)
        return AdamState(_count(), _tree_zeros_like(params), (nu, _tree_zeros_like(params)) if amsgrad else nu)

    def update(updates, state, params=None):
        t = _step_number(state.count)  # exact Python arithmetic eagerly, as PyTorch; float64 under jit
        mu = tree_map(lambda m, g: b1 * m + (1 - b1) * g, state.mu, updates)
        nu_raw = state.nu[0] if amsgrad else state.nu
        nu = tree_map(lambda v, g: b2 * v + (1 - b2) * (g * g), nu_raw, updates)
        nu_max = tree_map(fnp.maximum, state.nu[1], nu) if amsgrad else nu
        c1, c2 = 1 - b1 ** t, (1 - b2 ** t) ** 0.5
        root = _nonzero(eps_root)

        def step(m_hat, v):  # the step's scalars (float64 under jit) in each leaf's dtype
            if root:
                return m_hat / (fnp.sqrt(v * _in_dtype(1 / (c2 * c2), v) + eps_root) + eps)
            return m_hat / (fnp.sqrt(v) * _in_dtype(1 / c2, v) + eps)
        if nesterov:
            c1_next = 1 - b1 ** (t + 1)
            out = tree_map(lambda m, g, v: step(b1 * (m * _in_dtype(1 / c1_next, m))
                                                + (1 - b1) * (g * _in_dtype(1 / c1, g)), v), mu, updates, nu_max)
        else:  # one pass over the tree: each tree_map of a model costs its flattening
            out = tree_map(lambda m, v: step(m * _in_dtype(1 / c1, m), v), mu, nu_max)
        return out, AdamState(state.count + 1, mu, (nu, nu_max) if amsgrad else nu)
    return GradientTransformation(init, update)


class AdamaxState(NamedTuple):
    count: Array
    mu: Any
    inf_norm: Any


def scale_by_adamax(b1: float = 0.9, b2: float = 0.999, eps: float = 1e-8) -> GradientTransformation:
    """torch.optim.Adamax: m / (1 - b1^t) / u, u = max(b2 u, |g| + eps)."""
    _betas(b1, b2)
    _at_least(eps, 0.0, "epsilon value")

    def init(params):
        return AdamaxState(_count(), _tree_zeros_like(params), _tree_zeros_like(params))

    def update(updates, state, params=None):
        t = _step_number(state.count)
        mu = tree_map(lambda m, g: b1 * m + (1 - b1) * g, state.mu, updates)
        u = tree_map(lambda u, g: fnp.maximum(b2 * u, fnp.abs(g) + eps), state.inf_norm, updates)
        out = tree_map(lambda m, n: m * _in_dtype(1 / (1 - b1 ** t), m) / n, mu, u)
        return out, AdamaxState(state.count + 1, mu, u)
    return GradientTransformation(init, update)


class NadamState(NamedTuple):
    count: Array
    mu_product: Array
    mu: Any
    nu: Any


def scale_by_nadam(b1: float = 0.9, b2: float = 0.999, eps: float = 1e-8,
                   momentum_decay: float = 4e-3) -> GradientTransformation:
    """torch.optim.NAdam: Nesterov momentum with the momentum schedule
    mu_t = b1 (1 - 0.5 * 0.96^(t * momentum_decay))."""
    _betas(b1, b2)
    _at_least(eps, 0.0, "epsilon value")
    _at_least(momentum_decay, 0.0, "momentum_decay value")

    def init(params):
        return NadamState(_count(), fnp.ones((), dtype=np.float64), _tree_zeros_like(params),
                          _tree_zeros_like(params))

    def update(updates, state, params=None):
        t = _step_number(state.count)
        mu_t = b1 * (1 - 0.5 * 0.96 ** (t * momentum_decay))
        mu_next = b1 * (1 - 0.5 * 0.96 ** ((t + 1) * momentum_decay))
        product = state.mu_product * mu_t
        mu = tree_map(lambda m, g: b1 * m + (1 - b1) * g, state.mu, updates)
        nu = tree_map(lambda v, g: b2 * v + (1 - b2) * (g * g), state.nu, updates)
        c2 = (1 - b2 ** t) ** 0.5
        grad_coef, mom_coef = (1 - mu_t) / (1 - product), mu_next / (1 - product * mu_next)

        def step(g, m, v):
            denom = fnp.sqrt(v) * _in_dtype(1 / c2, v) + eps
            return (fnp.astype(grad_coef, g.dtype) * g + fnp.astype(mom_coef, g.dtype) * m) / denom
        out = tree_map(step, updates, mu, nu)
        return out, NadamState(state.count + 1, product, mu, nu)
    return GradientTransformation(init, update)


def scale_by_radam(b1: float = 0.9, b2: float = 0.999, eps: float = 1e-8, *,
                   threshold: float = 5.0) -> GradientTransformation:
    """torch.optim.RAdam: Adam with the variance rectification term, plain momentum while the
    variance estimate is unreliable (rho_t <= threshold: 5, PyTorch's and optax's default)."""
    _betas(b1, b2)
    _at_least(eps, 0.0, "epsilon value")
    rho_inf = 2 / (1 - b2) - 1

    def update(updates, state, params=None):
        t = _step_number(state.count)
        mu = tree_map(lambda m, g: b1 * m + (1 - b1) * g, state.mu, updates)
        nu = tree_map(lambda v, g: b2 * v + (1 - b2) * (g * g), state.nu, updates)
        decay = b2 ** t
        rho_t = rho_inf - 2 * t * decay / (1 - decay)
        usable = rho_t > threshold
        safe = fnp.where(usable, rho_t, 6.0) if not isinstance(rho_t, float) else (rho_t if usable else 6.0)
        rect = ((safe - 4) * (safe - 2) * rho_inf / ((rho_inf - 4) * (rho_inf - 2) * safe)) ** 0.5
        c1, c2 = 1 - b1 ** t, (1 - decay) ** 0.5

        def step(m, v):
            corrected = m * _in_dtype(1 / c1, m)
            adaptive = corrected * _in_dtype(rect, m) * (_in_dtype(c2, m) / (fnp.sqrt(v) + eps))  # PyTorch's eps
            return fnp.where(usable, adaptive, corrected)
        out = tree_map(step, mu, nu)
        return out, AdamState(state.count + 1, mu, nu)
    return GradientTransformation(_zero_moments, update)


class RMSState(NamedTuple):
    square_avg: Any
    grad_avg: Any
    momentum: Any


def scale_by_rms(alpha: float = 0.99, eps: float = 1e-8, centered: bool = False,
                 momentum: float = 0.0) -> GradientTransformation:
    """torch.optim.RMSprop without its learning rate: g / (sqrt(E[g^2] - centered E[g]^2) + eps)."""
    _at_least(alpha, 0.0, "alpha value")
    _at_least(eps, 0.0, "epsilon value")
    _at_least(momentum, 0.0, "momentum value")

    def init(params):
        return RMSState(_tree_zeros_like(params), _tree_zeros_like(params), _tree_zeros_like(params))

    def update(updates, state, params=None):
        sq = tree_map(lambda s, g: alpha * s + (1 - alpha) * (g * g), state.square_avg, updates)
        ga = tree_map(lambda a, g: alpha * a + (1 - alpha) * g, state.grad_avg, updates) if centered else state.grad_avg
        avg = tree_map(lambda s, a: fnp.sqrt(s - a * a) + eps, sq, ga) if centered else \
            tree_map(lambda s: fnp.sqrt(s) + eps, sq)
        step = tree_map(lambda g, a: g / a, updates, avg)
        buf = state.momentum
        if _nonzero(momentum):
            buf = tree_map(lambda b, s: momentum * b + s, buf, step)
            step = buf
        return step, RMSState(sq, ga, buf)
    return GradientTransformation(init, update)


class AdagradState(NamedTuple):
    count: Array
    sum_of_squares: Any


def scale_by_adagrad(lr_decay: float = 0.0, eps: float = 1e-10,
                     initial_accumulator_value: float = 0.0) -> GradientTransformation:
    """torch.optim.Adagrad without its learning rate: g / (sqrt(sum g^2) + eps) / (1 + (t-1) lr_decay)."""
    _at_least(lr_decay, 0.0, "lr_decay value")
    _at_least(initial_accumulator_value, 0.0, "initial_accumulator_value value")
    _at_least(eps, 0.0, "epsilon value")

    def init(params):
        return AdagradState(_count(), tree_map(lambda p: fnp.full_like(p, initial_accumulator_value), params))

    def update(updates, state, params=None):
        decay = 1.0 / (1.0 + (_step_number(state.count) - 1) * lr_decay)
        acc = tree_map(lambda s, g: s + g * g, state.sum_of_squares, updates)
        out = tree_map(lambda g, s: g / (fnp.sqrt(s) + eps) * _in_dtype(decay, g), updates, acc)
        return out, AdagradState(state.count + 1, acc)
    return GradientTransformation(init, update)


class LionState(NamedTuple):
    mu: Any


def scale_by_lion(b1: float = 0.9, b2: float = 0.99) -> GradientTransformation:
    """Lion (Chen et al. 2023): sign(b1 m + (1 - b1) g), then m = b2 m + (1 - b2) g."""
    _betas(b1, b2)

    def update(updates, state, params=None):
        direction = tree_map(lambda m, g: fnp.sign(b1 * m + (1 - b1) * g), state.mu, updates)
        mu = tree_map(lambda m, g: b2 * m + (1 - b2) * g, state.mu, updates)
        return direction, LionState(mu)
    return GradientTransformation(lambda params: LionState(_tree_zeros_like(params)), update)


class AdadeltaState(NamedTuple):
    square_avg: Any
    acc_delta: Any


def scale_by_adadelta(rho: float = 0.9, eps: float = 1e-6) -> GradientTransformation:
    """torch.optim.Adadelta without its learning rate: g * sqrt(E[dx^2] + eps) / sqrt(E[g^2] + eps)."""
    _at_least(rho, 0.0, "rho value")
    _at_least(eps, 0.0, "epsilon value")

    def update(updates, state, params=None):
        sq = tree_map(lambda s, g: rho * s + (1 - rho) * (g * g), state.square_avg, updates)
        delta = tree_map(lambda g, s, a: fnp.sqrt(a + eps) / fnp.sqrt(s + eps) * g, updates, sq, state.acc_delta)
        acc = tree_map(lambda a, d: rho * a + (1 - rho) * (d * d), state.acc_delta, delta)
        return delta, AdadeltaState(sq, acc)
    return GradientTransformation(lambda params: AdadeltaState(_tree_zeros_like(params), _tree_zeros_like(params)),
                                  update)


class RpropState(NamedTuple):
    previous: Any
    step_size: Any


def scale_by_rprop(initial_step: float, etas: tuple = (0.5, 1.2), step_sizes: tuple = (1e-6, 50.0)
                   ) -> GradientTransformation:
    """torch.optim.Rprop: each entry moves by its own step against the gradient's sign; the step
    grows by etas[1] while the sign holds and shrinks by etas[0] when it flips (and that step is
    skipped), kept within step_sizes. The result is the step itself: chain it with scale(-1)."""
    (minus, plus), (lowest, highest) = etas, step_sizes
    if not 0.0 < minus < 1.0 < plus:
        raise ValueError(f"Rprop needs 0 < etaminus < 1 < etaplus, got etas {etas}")

    def update(updates, state, params=None):
        agree = tree_map(lambda g, p: fnp.sign(g * p), updates, state.previous)
        step = tree_map(lambda s, a: fnp.clip(fnp.where(a > 0, s * plus, fnp.where(a < 0, s * minus, s)),
                                              lowest, highest), state.step_size, agree)
        kept = tree_map(lambda g, a: fnp.where(a < 0, 0.0, g), updates, agree)
        return tree_map(lambda g, s: fnp.sign(g) * s, kept, step), RpropState(kept, step)
    return GradientTransformation(
        lambda params: RpropState(_tree_zeros_like(params), tree_map(lambda p: fnp.full_like(p, initial_step), params)),
        update)


def global_norm(tree) -> Array:
    """The 2-norm of all leaves together, accumulated in float32 (float64 if a leaf is float64)."""
    leaves = tree_leaves(tree)
    if not leaves:
        return fnp.zeros(())
    wide = np.float64 if any(np.dtype(g.dtype) == np.float64 for g in leaves) else np.float32
    return fnp.sqrt(over_shards(sum(fnp.sum(fnp.astype(g, wide) ** 2) for g in leaves)))


def clip_by_global_norm(max_norm: float) -> GradientTransformation:
    """Scale all gradients by max_norm / (norm + 1e-6) when their global norm exceeds max_norm
    (torch.nn.utils.clip_grad_norm_). A negative max_norm, which would flip every gradient, raises."""
    _at_least(max_norm, 0.0, "max_norm value")

    def update(updates, state, params=None):
        norm = global_norm(updates)
        coef = fnp.minimum(max_norm / (norm + 1e-6), 1.0)
        return tree_map(lambda g: g * fnp.astype(coef, g.dtype), updates), state
    return GradientTransformation(lambda params: (), update)


def clip(max_delta: float) -> GradientTransformation:
    """Clamp every gradient element to [-max_delta, max_delta] (torch.nn.utils.clip_grad_value_)."""
    def update(updates, state, params=None):
        return tree_map(lambda g: fnp.clip(g, -max_delta, max_delta), updates), state
    return GradientTransformation(lambda params: (), update)
