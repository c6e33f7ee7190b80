"""PyTorch's optimisers whose rule uses the learning rate and the parameters inside the step, so
each is one transformation rather than a scaling rule chained with scale_by_learning_rate: ASGD
(averaged SGD), Adafactor (factored second moments) and Muon (orthogonalised momentum)."""
from __future__ import annotations

import math
from typing import Any, NamedTuple

import numpy as np

from .. import dtypes
from .. import numpy as fnp
from ..array import Array
from ..tree import tree_flatten, tree_leaves, tree_map
from ._base import GradientTransformation, ScalarOrSchedule, _at_least, _count, _need_params, _step_number, _value


def _signed(updates, maximize: bool):
    return tree_map(lambda g: -g, updates) if maximize else updates


class ASGDState(NamedTuple):
    count: Array
    eta: Array
    mu: Array
    ax: Any  # the running average of the parameters: evaluate with it


def asgd(learning_rate: ScalarOrSchedule = 1e-2, lambd: float = 1e-4, alpha: float = 0.75, t0: float = 1e6,
         weight_decay: float = 0.0, maximize: bool = False) -> GradientTransformation:
    """torch.optim.ASGD: p <- p (1 - lambd eta) - eta g with eta = lr / (1 + lambd lr t)^alpha, and
    state.ax the average of the parameters from step t0 on (the iterate to evaluate)."""
    if not callable(learning_rate):
        _at_least(learning_rate, 0.0, "learning rate")
    _at_least(weight_decay, 0.0, "weight_decay value")

    def init(params):
        lr = _value(learning_rate, 0)  # eta and mu kept in float32, as PyTorch's scalar state
        return ASGDState(_count(), fnp.asarray(lr, dtype=np.float32), fnp.ones((), np.float32),
                         tree_map(fnp.array, params))

    def update(updates, state, params=None):
        params = _need_params(params, "asgd")
        grads = tree_map(lambda g, p: g + weight_decay * p, _signed(updates, maximize), params)
        eta = fnp.astype(state.eta, np.float64)
        out = tree_map(lambda g, p: fnp.astype(-(lambd * eta) * p - eta * g, p.dtype), grads, params)
        new = tree_map(lambda p, u: p + u, params, out)
        ax = tree_map(lambda a, p: a + (p - a) * fnp.astype(state.mu, p.dtype), state.ax, new)
        t = _step_number(state.count)
        lr = _value(learning_rate, state.count)
        new_eta = lr / (1 + lambd * lr * t) ** alpha
        new_mu = 1 / (max(1, t - t0) if isinstance(t, int) else fnp.maximum(t - t0, 1))
        return out, ASGDState(state.count + 1, fnp.asarray(new_eta, dtype=np.float32),
                              fnp.asarray(new_mu, dtype=np.float32), ax)
    return GradientTransformation(init, update)


class AdafactorState(NamedTuple):
    count: Array
    moments: list  # per parameter leaf: (row variance, column variance) for matrices, (variance,) else


def _rms(x):
    return fnp.sqrt(fnp.sum(fnp.astype(x, np.float64) ** 2)) / math.sqrt(max(int(np.prod(x.shape)), 1))


def adafactor(learning_rate: ScalarOrSchedule = 1e-2, beta2_decay: float = -0.8, eps: tuple = (None, 1e-3),
              d: float = 1.0, weight_decay: float = 0.0, maximize: bool = False) -> GradientTransformation:
    """torch.optim.Adafactor: second moments factored into row and column means for matrices
    (batched over leading axes), beta2_t = 1 - t^beta2_decay, the step scaled by the parameter's
    RMS and clipped to RMS d, weight decay decoupled."""
    if not callable(learning_rate):
        _at_least(learning_rate, 0.0, "learning rate")
    if not beta2_decay <= 0.0:
        raise ValueError(f"beta2_decay should be <= 0 but is: {beta2_decay}")
    if eps[0] is not None and not eps[0] >= 0.0:
        raise ValueError(f"epsilon1 should be >= 0 but is: {eps[0]}")
    if not eps[1] >= 0.0:
        raise ValueError(f"epsilon2 should be >= 0 but is: {eps[1]}")
    if not d >= 1.0:
        raise ValueError(f"Clipping threshold d should be >= 1 but is: {d}")
    _at_least(weight_decay, 0.0, "weight_decay value")

    def init(params):
        def moments(p):
            if p.ndim > 1:
                return (fnp.zeros(tuple(p.shape[:-1]) + (1,), p.dtype),
                        fnp.zeros(tuple(p.shape[:-2]) + (1, p.shape[-1]), p.dtype))
            return (fnp.zeros_like(p),)
        return AdafactorState(_count(), [moments(p) for p in tree_leaves(params)])

    def update(updates, state, params=None):
        params = _need_params(params, "adafactor")
        grads, structure = tree_flatten(_signed(updates, maximize))
        t = _step_number(state.count)
        lr = _value(learning_rate, state.count)
        beta = t ** beta2_decay  # 1 - beta2_t
        rho = min(lr, 1 / t ** 0.5) if isinstance(t, int) and isinstance(lr, float) else \
            fnp.minimum(lr, 1 / fnp.sqrt(fnp.astype(t, np.float64)))
        out, new_moments = [], []
        for g, p, moments in zip(grads, tree_leaves(params), state.moments):
            eps1 = eps[0] if eps[0] is not None else float(fnp.finfo(p.dtype).eps)
            scale_by = fnp.maximum(_rms(p), eps[1]) * rho
            if g.ndim > 1:
                row = moments[0] + (fnp.mean(g * g, axis=-1, keepdims=True) - moments[0]) * beta
                col = moments[1] + (fnp.mean(g * g, axis=-2, keepdims=True) - moments[1]) * beta
                variance = row @ col / fnp.maximum(fnp.mean(row, axis=-2, keepdims=True), eps1)
                new_moments.append((row, col))
            else:
                variance = moments[0] + (g * g - moments[0]) * beta
                new_moments.append((variance,))
            step = g / fnp.sqrt(fnp.maximum(variance, eps1 * eps1))
            clip = fnp.maximum(_rms(step) / d, 1.0)
            out.append(fnp.astype(-(lr * weight_decay) * p - fnp.astype(scale_by / clip, p.dtype) * step, p.dtype))
        return structure.unflatten(out), AdafactorState(state.count + 1, new_moments)
    return GradientTransformation(init, update)


class MuonState(NamedTuple):
    count: Array
    momentum: Any


MUON_COEFFICIENTS = (3.4445, -4.7750, 2.0315)


def orthogonalize(g, coefficients: tuple = MUON_COEFFICIENTS, steps: int = 5, eps: float = 1e-7):
    """Muon's quintic Newton-Schulz iteration towards U V^T of g = U S V^T, in bfloat16 as PyTorch's
    (each product accumulated in float32 and rounded once, as addmm does)."""
    if g.ndim != 2:
        raise ValueError(f"Muon orthogonalises matrices: got a gradient of shape {tuple(g.shape)}")
    a, b, c = coefficients
    bf16, f32 = dtypes.bfloat16, np.float32
    tall = g.shape[0] > g.shape[1]
    x = fnp.astype(g, bf16)
    x = fnp.swapaxes(x, 0, 1) if tall else x
    norm = fnp.maximum(fnp.astype(fnp.linalg.norm(fnp.astype(x, f32)), bf16), eps)  # a bfloat16 norm, clamped
    x = fnp.astype(fnp.astype(x, f32) / fnp.astype(norm, f32), bf16)
    for _ in range(steps):
        x32 = fnp.astype(x, f32)
        gram = fnp.astype(x32 @ x32.T, bf16)
        g32 = fnp.astype(gram, f32)
        poly = fnp.astype(b * g32 + c * (g32 @ g32), bf16)
        x = fnp.astype(a * x32 + fnp.astype(poly, f32) @ x32, bf16)
    return fnp.swapaxes(x, 0, 1) if tall else x


def muon(learning_rate: ScalarOrSchedule = 1e-3, weight_decay: float = 0.1, momentum: float = 0.95,
         nesterov: bool = True, ns_coefficients: tuple = MUON_COEFFICIENTS, eps: float = 1e-7, ns_steps: int = 5,
         adjust_lr_fn: str | None = None) -> GradientTransformation:
    """torch.optim.Muon for matrix parameters (combine it with adamw for the rest through
    multi_transform): momentum (Nesterov's by default) orthogonalised by Newton-Schulz, the step
    scaled by sqrt(max(1, rows / cols)) ('original') or 0.2 sqrt(max(rows, cols)) ('match_rms_adamw'),
    weight decay decoupled."""
    if not callable(learning_rate):
        _at_least(learning_rate, 0.0, "learning rate")
    _at_least(momentum, 0.0, "momentum")
    _at_least(weight_decay, 0.0, "weight decay")
    if adjust_lr_fn not in (None, "original", "match_rms_adamw"):
        raise ValueError(f"Adjust learning rate function {adjust_lr_fn} is not supported")
    if ns_steps >= 100:
        raise ValueError("Number of steps must be less than 100 for computational efficiency")

    def ratio(shape) -> float:
        rows, cols = shape[:2]
        return 0.2 * math.sqrt(max(rows, cols)) if adjust_lr_fn == "match_rms_adamw" else math.sqrt(
            max(1, rows / cols))

    def init(params):
        for p in tree_leaves(params):
            if p.ndim != 2:
                raise ValueError(f"Muon only supports 2D parameters whereas we found a parameter with size: "
                                 f"{tuple(p.shape)} (give the others another optimiser with multi_transform)")
        return MuonState(_count(), tree_map(fnp.zeros_like, params))

    def update(updates, state, params=None):
        params = _need_params(params, "muon")
        lr = _value(learning_rate, state.count)
        buf = tree_map(lambda b, g: b + (g - b) * (1 - momentum), state.momentum, updates)
        direction = tree_map(lambda g, b: g + (b - g) * momentum, updates, buf) if nesterov else buf
        out = tree_map(lambda d, p: fnp.astype(-(lr * weight_decay) * p - (lr * ratio(p.shape)) * fnp.astype(
            orthogonalize(d, ns_coefficients, ns_steps, eps), p.dtype), p.dtype), direction, params)
        return out, MuonState(state.count + 1, buf)
    return GradientTransformation(init, update)
