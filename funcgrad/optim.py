"""Optimisers as pure gradient transformations (optax's interface, PyTorch's algorithms).

    opt = optim.adamw(learning_rate=optim.cosine_schedule(1e-3, decay_steps=1000), weight_decay=1e-2)
    state = opt.init(params)
    updates, state = opt.update(grads, state, params)
    params = optim.apply_updates(params, updates)

An optimiser is two pure functions; its state is a pytree of arrays, so it checkpoints like the
model. Every algorithm follows the update rule in PyTorch's documentation step for step.
Learning rates are floats or schedules (functions of the step count, starting at 0).
"""
from __future__ import annotations

import contextlib
import math
from typing import Any, Callable, Iterator, NamedTuple

import numpy as np

from . import numpy as fnp
from .array import Array
from .control import concrete_int, cond
from .tree import keystr, tree_flatten, tree_flatten_with_path, tree_leaves, tree_map

Schedule = Callable[[int], float]
ScalarOrSchedule = float | Schedule


class GradientTransformation(NamedTuple):
    init: Callable[[Any], Any]
    update: Callable[..., tuple[Any, Any]]


_over_shards: Callable[[Any], Any] = lambda x: x  # noqa: E731  (the identity: whole gradients)


@contextlib.contextmanager
def sharded(total: Callable[[Any], Any]) -> Iterator[None]:
    """Within it, the gradients a transformation sees are one process's shards, and total(x) sums
    a per-shard statistic over the processes (ZeRO sets it to a psum), so that statistics over all
    gradients (a global norm, whether every gradient is finite) are the whole model's."""
    global _over_shards
    previous, _over_shards = _over_shards, total
    try:
        yield
    finally:
        _over_shards = previous


def _count() -> Array:
    return fnp.zeros((), dtype=np.int64)


def _tree_zeros_like(tree):
    return tree_map(lambda p: fnp.zeros_like(p), tree)


def _value(lr: ScalarOrSchedule, count):
    """The learning rate at step count: a float eagerly, a traced scalar inside jit."""
    if not callable(lr):
        return float(lr)
    count = concrete_int(count)
    return float(lr(count)) if isinstance(count, int) else lr(count)


def _at_least(value: float, lowest: float, what: str) -> None:
    """PyTorch's check and message for a hyperparameter that must not fall below `lowest`."""
    if not float(value) >= lowest:  # NaN fails too
        raise ValueError(f"Invalid {what}: {value}")


def _betas(b1: float, b2: float) -> None:
    for index, beta in enumerate((b1, b2)):
        if not 0.0 <= float(beta) < 1.0:
            raise ValueError(f"Invalid beta parameter at index {index}: {beta}")


def _check_fits(updates, params) -> None:
    """Gradients of another model (or of one whose sizes changed) name their first difference."""
    g_leaves, g_def = tree_flatten(updates)
    p_leaves, p_def = tree_flatten(params)
    if g_def != p_def:
        raise ValueError(f"opt.update: the gradients do not have the parameters' structure: "
                         f"{p_def.difference(g_def)}")
    for g, p in zip(g_leaves, p_leaves):
        if tuple(np.shape(g)) != tuple(np.shape(p)):
            path, _ = next((path, leaf) for (path, leaf) in tree_flatten_with_path(params)[0] if leaf is p)
            raise ValueError(f"opt.update: the gradient of parameter {keystr(path)} has shape {tuple(np.shape(g))}, "
                             f"the parameter {tuple(np.shape(p))}")


def _need_params(params, name: str):
    if params is None:
        raise ValueError(f"{name} needs the current parameters: call update(grads, state, params)")
    return params


def apply_updates(params, updates):
    """params + updates, leaf by leaf, keeping each parameter's dtype."""
    return tree_map(lambda p, u: fnp.add(p, fnp.astype(u, p.dtype)), params, updates)


def chain(*transforms: GradientTransformation) -> GradientTransformation:
    def init(params):
        return tuple(t.init(params) for t in transforms)

    def update(updates, state, params=None):
        if state is None:
            raise TypeError("opt.update(grads, state, params) needs the optimiser's state: opt.init(params) "
                            "for the first step, then the state each update returns")
        if params is not None:
            _check_fits(updates, params)
        new_state = []
        for t, s in zip(transforms, state):
            updates, s = t.update(updates, s, params)
            new_state.append(s)
        return updates, tuple(new_state)

    return GradientTransformation(init, update)


# ---- building blocks ---------------------------------------------------------------------------
class CountState(NamedTuple):
    count: Array


def scale_by_learning_rate(learning_rate: ScalarOrSchedule) -> GradientTransformation:
    """Multiply by -learning_rate (a schedule is evaluated at this transformation's step count)."""
    if not callable(learning_rate):
        _at_least(learning_rate, 0.0, "learning rate")

    def update(updates, state, params=None):
        lr = _value(learning_rate, state.count)
        return tree_map(lambda u: u * -lr, updates), CountState(state.count + 1)
    return GradientTransformation(lambda params: CountState(_count()), update)


def add_decayed_weights(weight_decay: float) -> GradientTransformation:
    """updates + weight_decay * params: L2 before a scaling rule, decoupled decay after one."""
    _at_least(weight_decay, 0.0, "weight_decay value")

    def update(updates, state, params=None):
        if not weight_decay:
            return updates, state
        params = _need_params(params, "add_decayed_weights")
        return tree_map(lambda u, p: u + weight_decay * p, updates, params), state
    return GradientTransformation(lambda params: (), update)


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


def scale_by_adam(b1: float = 0.9, b2: float = 0.999, eps: float = 1e-8, amsgrad: bool = False) -> GradientTransformation:
    """m_hat / (sqrt(v_hat) + eps) with bias-corrected moments (torch.optim.Adam)."""
    _betas(b1, b2)
    _at_least(eps, 0.0, "epsilon value")

    def init(params):
        nu = _tree_zeros_like(params)
        return AdamState(_count(), _tree_zeros_like(params), (nu, _tree_zeros_like(params)) if amsgrad else nu)

    def update(updates, state, params=None):
        t = concrete_int(state.count) + 1  # exact Python arithmetic eagerly, as PyTorch
        mu = tree_map(lambda m, g: b1 * m + (1 - b1) * g, state.mu, updates)
        nu_raw = state.nu[0] if amsgrad else state.nu
        nu = tree_map(lambda v, g: b2 * v + (1 - b2) * (g * g), nu_raw, updates)
        nu_max = tree_map(fnp.maximum, state.nu[1], nu) if amsgrad else nu
        c1, c2 = 1 - b1 ** t, (1 - b2 ** t) ** 0.5
        out = tree_map(lambda m, v: (m * (1 / c1)) / (fnp.sqrt(v) * (1 / c2) + eps), mu, nu_max)
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
        t = concrete_int(state.count) + 1
        mu = tree_map(lambda m, g: b1 * m + (1 - b1) * g, state.mu, updates)
        u = tree_map(lambda u, g: fnp.maximum(b2 * u, fnp.abs(g) + eps), state.inf_norm, updates)
        out = tree_map(lambda m, n: m * (1 / (1 - b1 ** t)) / n, mu, u)
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
        t = concrete_int(state.count) + 1
        mu_t = b1 * (1 - 0.5 * 0.96 ** (t * momentum_decay))
        mu_next = b1 * (1 - 0.5 * 0.96 ** ((t + 1) * momentum_decay))
        product = state.mu_product * mu_t
        mu = tree_map(lambda m, g: b1 * m + (1 - b1) * g, state.mu, updates)
        nu = tree_map(lambda v, g: b2 * v + (1 - b2) * (g * g), state.nu, updates)
        c2 = (1 - b2 ** t) ** 0.5
        grad_coef, mom_coef = (1 - mu_t) / (1 - product), mu_next / (1 - product * mu_next)

        def step(g, m, v):
            denom = fnp.sqrt(v) * (1 / c2) + eps
            return (fnp.astype(grad_coef, g.dtype) * g + fnp.astype(mom_coef, g.dtype) * m) / denom
        out = tree_map(step, updates, mu, nu)
        return out, NadamState(state.count + 1, product, mu, nu)
    return GradientTransformation(init, update)


def scale_by_radam(b1: float = 0.9, b2: float = 0.999, eps: float = 1e-8) -> GradientTransformation:
    """torch.optim.RAdam: Adam with the variance rectification term, plain momentum while the
    variance estimate is unreliable (rho_t <= 5)."""
    _betas(b1, b2)
    _at_least(eps, 0.0, "epsilon value")
    rho_inf = 2 / (1 - b2) - 1

    def update(updates, state, params=None):
        t = concrete_int(state.count) + 1
        mu = tree_map(lambda m, g: b1 * m + (1 - b1) * g, state.mu, updates)
        nu = tree_map(lambda v, g: b2 * v + (1 - b2) * (g * g), state.nu, updates)
        decay = b2 ** t
        rho_t = rho_inf - 2 * t * decay / (1 - decay)
        usable = rho_t > 5
        safe = fnp.where(usable, rho_t, 6.0) if not isinstance(rho_t, float) else (rho_t if usable else 6.0)
        rect = ((safe - 4) * (safe - 2) * rho_inf / ((rho_inf - 4) * (rho_inf - 2) * safe)) ** 0.5
        c1, c2 = 1 - b1 ** t, (1 - decay) ** 0.5

        def step(m, v):
            adaptive = m * (1 / c1) * fnp.astype(rect, m.dtype) * (c2 / (fnp.sqrt(v) + eps))  # PyTorch's eps
            return fnp.where(usable, adaptive, m * (1 / c1))
        out = tree_map(step, mu, nu)
        return out, AdamState(state.count + 1, mu, nu)
    return GradientTransformation(lambda params: AdamState(_count(), _tree_zeros_like(params),
                                                           _tree_zeros_like(params)), update)


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
        if momentum:
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
        decay = 1.0 / (1.0 + concrete_int(state.count) * lr_decay)
        acc = tree_map(lambda s, g: s + g * g, state.sum_of_squares, updates)
        out = tree_map(lambda g, s: g / (fnp.sqrt(s) + eps) * decay, updates, acc)
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


def global_norm(tree) -> Array:
    """The 2-norm of all leaves together, accumulated in float32 (float64 if a leaf is float64)."""
    leaves = tree_leaves(tree)
    if not leaves:
        return fnp.zeros(())
    wide = np.float64 if any(np.dtype(g.dtype) == np.float64 for g in leaves) else np.float32
    return fnp.sqrt(_over_shards(sum(fnp.sum(fnp.astype(g, wide) ** 2) for g in leaves)))


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


# ---- the optimisers -----------------------------------------------------------------------------
def sgd(learning_rate: ScalarOrSchedule, momentum: float = 0.0, dampening: float = 0.0, nesterov: bool = False,
        weight_decay: float = 0.0) -> GradientTransformation:
    _at_least(momentum, 0.0, "momentum value")
    parts = [add_decayed_weights(weight_decay)]
    if momentum or nesterov:  # trace refuses nesterov without momentum, as PyTorch's SGD
        parts.append(trace(momentum, dampening, nesterov))
    return chain(*parts, scale_by_learning_rate(learning_rate))


def adam(learning_rate: ScalarOrSchedule = 1e-3, b1: float = 0.9, b2: float = 0.999, eps: float = 1e-8,
         weight_decay: float = 0.0, amsgrad: bool = False) -> GradientTransformation:
    """torch.optim.Adam; weight_decay is L2 added to the gradient."""
    return chain(add_decayed_weights(weight_decay), scale_by_adam(b1, b2, eps, amsgrad),
                 scale_by_learning_rate(learning_rate))


def adamw(learning_rate: ScalarOrSchedule = 1e-3, b1: float = 0.9, b2: float = 0.999, eps: float = 1e-8,
          weight_decay: float = 1e-2, amsgrad: bool = False) -> GradientTransformation:
    """torch.optim.AdamW: decoupled weight decay, p -= lr * (adam step + weight_decay * p)."""
    return chain(scale_by_adam(b1, b2, eps, amsgrad), add_decayed_weights(weight_decay),
                 scale_by_learning_rate(learning_rate))


def rmsprop(learning_rate: ScalarOrSchedule = 1e-2, alpha: float = 0.99, eps: float = 1e-8,
            weight_decay: float = 0.0, momentum: float = 0.0, centered: bool = False) -> GradientTransformation:
    return chain(add_decayed_weights(weight_decay), scale_by_rms(alpha, eps, centered, momentum),
                 scale_by_learning_rate(learning_rate))


def adagrad(learning_rate: ScalarOrSchedule = 1e-2, lr_decay: float = 0.0, weight_decay: float = 0.0,
            initial_accumulator_value: float = 0.0, eps: float = 1e-10) -> GradientTransformation:
    return chain(add_decayed_weights(weight_decay), scale_by_adagrad(lr_decay, eps, initial_accumulator_value),
                 scale_by_learning_rate(learning_rate))


def adamax(learning_rate: ScalarOrSchedule = 2e-3, b1: float = 0.9, b2: float = 0.999, eps: float = 1e-8,
           weight_decay: float = 0.0) -> GradientTransformation:
    return chain(add_decayed_weights(weight_decay), scale_by_adamax(b1, b2, eps), scale_by_learning_rate(learning_rate))


def nadam(learning_rate: ScalarOrSchedule = 2e-3, b1: float = 0.9, b2: float = 0.999, eps: float = 1e-8,
          weight_decay: float = 0.0, momentum_decay: float = 4e-3) -> GradientTransformation:
    return chain(add_decayed_weights(weight_decay), scale_by_nadam(b1, b2, eps, momentum_decay),
                 scale_by_learning_rate(learning_rate))


def radam(learning_rate: ScalarOrSchedule = 1e-3, b1: float = 0.9, b2: float = 0.999, eps: float = 1e-8,
          weight_decay: float = 0.0) -> GradientTransformation:
    return chain(add_decayed_weights(weight_decay), scale_by_radam(b1, b2, eps), scale_by_learning_rate(learning_rate))


def lion(learning_rate: ScalarOrSchedule = 1e-4, b1: float = 0.9, b2: float = 0.99,
         weight_decay: float = 0.0) -> GradientTransformation:
    return chain(scale_by_lion(b1, b2), add_decayed_weights(weight_decay), scale_by_learning_rate(learning_rate))


# ---- wrappers ------------------------------------------------------------------------------------
class MultiStepsState(NamedTuple):
    mini_step: Array
    accumulated: Any
    inner: Any


def multi_steps(inner: GradientTransformation, every_k: int) -> GradientTransformation:
    """Gradient accumulation: average the gradients of every_k micro-batches, then take one
    step of `inner`; the micro-steps in between return zero updates."""
    if every_k < 1:
        raise ValueError(f"every_k must be >= 1, got {every_k}")

    def init(params):
        return MultiStepsState(_count(), _tree_zeros_like(params), inner.init(params))

    def update(updates, state, params=None):
        k = concrete_int(state.mini_step) + 1
        acc = tree_map(lambda a, g: a + (g - a) * (1.0 / k), state.accumulated, updates)

        def accumulate():
            return _tree_zeros_like(updates), MultiStepsState(state.mini_step + 1, acc, state.inner)

        def step():
            out, inner_state = inner.update(acc, state.inner, params)
            return out, MultiStepsState(state.mini_step * 0, _tree_zeros_like(acc), inner_state)

        return cond(k < every_k, accumulate, step)

    return GradientTransformation(init, update)


class FiniteState(NamedTuple):
    inner: Any
    notfinite_count: Array
    total_notfinite: Array


def apply_if_finite(inner: GradientTransformation) -> GradientTransformation:
    """Skip (zero updates, unchanged state) any step whose gradients hold inf or nan."""
    def init(params):
        return FiniteState(inner.init(params), _count(), _count())

    def update(updates, state, params=None):
        bad = sum((fnp.sum(fnp.astype(~fnp.isfinite(g), np.int32)) for g in tree_leaves(updates)),
                  fnp.zeros((), np.int32))
        finite = _over_shards(bad) == 0

        def skip():
            return _tree_zeros_like(updates), FiniteState(state.inner, state.notfinite_count + 1,
                                                           state.total_notfinite + 1)

        def step():
            out, inner_state = inner.update(updates, state.inner, params)
            return out, FiniteState(inner_state, state.notfinite_count * 0, state.total_notfinite)

        return cond(finite, step, skip)

    return GradientTransformation(init, update)


# ---- schedules: count (0 for the first step) -> learning rate ---------------------------------------
# Each works on a Python int (exact float arithmetic, as PyTorch's schedulers) and on a traced count.
def _is_int(count) -> bool:
    return isinstance(count, (int, np.integer))


def _min(count, limit):
    return min(count, limit) if _is_int(count) else fnp.minimum(count, limit)


def _cos(x):
    return math.cos(x) if isinstance(x, float) else fnp.cos(x)


def constant_schedule(value: float) -> Schedule:
    return lambda count: value


def step_schedule(init_value: float, step_size: int, gamma: float = 0.1) -> Schedule:
    """StepLR: init_value * gamma ** (count // step_size)."""
    return lambda count: init_value * gamma ** (count // step_size)


def exponential_schedule(init_value: float, gamma: float) -> Schedule:
    """ExponentialLR: init_value * gamma ** count."""
    return lambda count: init_value * gamma ** count


def cosine_schedule(init_value: float, decay_steps: int, alpha: float = 0.0) -> Schedule:
    """CosineAnnealingLR with T_max = decay_steps and eta_min = alpha * init_value; stays at
    eta_min after decay_steps."""
    if decay_steps <= 0:
        raise ValueError(f"decay_steps must be positive, got {decay_steps}")
    eta_min = alpha * init_value
    return lambda count: eta_min + (init_value - eta_min) * (1 + _cos(math.pi * _min(count, decay_steps) / decay_steps)) / 2


def linear_schedule(init_value: float, end_value: float, transition_steps: int) -> Schedule:
    return lambda count: init_value + (end_value - init_value) * _min(count, transition_steps) / max(transition_steps, 1)


def warmup_cosine_schedule(peak_value: float, warmup_steps: int, decay_steps: int, init_value: float = 0.0,
                           end_value: float = 0.0) -> Schedule:
    """Linear warmup from init_value to peak_value over warmup_steps, then cosine decay to
    end_value at decay_steps (counted from the start, as optax)."""
    if decay_steps <= warmup_steps:
        raise ValueError(f"decay_steps ({decay_steps}) must exceed warmup_steps ({warmup_steps})")
    warmup = linear_schedule(init_value, peak_value, warmup_steps)
    cosine = cosine_schedule(peak_value, decay_steps - warmup_steps, alpha=end_value / peak_value if peak_value else 0)
    return lambda count: cond(count < warmup_steps, lambda: warmup(count),
                              lambda: cosine(fnp.maximum(count - warmup_steps, 0) if not _is_int(count)
                                             else count - warmup_steps))


def polynomial_schedule(init_value: float, end_value: float, power: float, transition_steps: int,
                        transition_begin: int = 0) -> Schedule:
    """optax's polynomial decay: from init_value to end_value over transition_steps after
    transition_begin, as (1 - fraction) ** power."""
    if transition_steps <= 0:
        raise ValueError(f"transition_steps must be positive, got {transition_steps}")

    def schedule(count):
        done = _min(fnp.maximum(count - transition_begin, 0) if not _is_int(count) else max(count - transition_begin, 0),
                    transition_steps)
        return (init_value - end_value) * (1 - done / transition_steps) ** power + end_value
    return schedule


def piecewise_constant_schedule(init_value: float, boundaries_and_scales: dict[int, float] | None = None) -> Schedule:
    """init_value, multiplied by scale once the count reaches each boundary (MultiStepLR)."""
    steps = sorted((boundaries_and_scales or {}).items())

    def schedule(count):
        value = init_value
        for boundary, scale in steps:
            value = value * (scale if count >= boundary else 1.0) if _is_int(count) else \
                value * fnp.where(count >= boundary, scale, 1.0)
        return value
    return schedule


def join_schedules(schedules: list[Schedule], boundaries: list[int]) -> Schedule:
    """schedules[i] from boundaries[i - 1] on, each restarted at its boundary (optax)."""
    if len(schedules) != len(boundaries) + 1:
        raise ValueError(f"join_schedules needs one more schedule than boundaries, got {len(schedules)} and "
                         f"{len(boundaries)}")

    def schedule(count):
        if _is_int(count):
            starts = [0] + list(boundaries)
            i = sum(count >= b for b in boundaries)
            return schedules[i](count - starts[i])
        value = schedules[0](count)
        for fn, boundary in zip(schedules[1:], boundaries):
            value = fnp.where(count >= boundary, fn(fnp.maximum(count - boundary, 0)), value)
        return value
    return schedule
