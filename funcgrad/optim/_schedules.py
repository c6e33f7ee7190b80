"""Learning-rate schedules: functions of the step count (0 for the first step)."""
from __future__ import annotations

import math

import numpy as np

from .. import numpy as fnp
from ..control import cond
from ._base import Schedule

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
