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


def _python(x) -> bool:
    return isinstance(x, (int, float, np.integer, np.floating))


def _min(count, limit):
    return min(count, limit) if _python(count) else fnp.minimum(count, limit)


def _max(value, limit):
    return max(value, limit) if _python(value) else fnp.maximum(value, limit)


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
        done = _min(_max(count - transition_begin, 0), transition_steps)
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


def warmup_constant_schedule(init_value: float, peak_value: float, warmup_steps: int) -> Schedule:
    """optax's: linear from init_value to peak_value over warmup_steps, then peak_value."""
    return linear_schedule(init_value, peak_value, warmup_steps)


def piecewise_interpolate_schedule(interpolate_type: str, init_value: float,
                                   boundaries_and_scales: dict[int, float] | None = None) -> Schedule:
    """optax's: the values init_value, init_value * s1, init_value * s1 * s2, ... reached at the
    boundaries (0 first), interpolated linearly or by a half cosine between them, the last held."""
    if interpolate_type not in ("linear", "cosine"):
        raise ValueError(f"interpolate_type must be 'linear' or 'cosine', got {interpolate_type!r}")
    steps = sorted((boundaries_and_scales or {}).items())
    if any(scale < 0 for _, scale in steps):
        raise ValueError(f"piecewise_interpolate_schedule expects non-negative scales, got {dict(steps)}")
    bounds = [0] + [b for b, _ in steps]
    values = list(np.cumprod([init_value] + [scale for _, scale in steps]))

    def between(start, end, fraction):
        if interpolate_type == "linear":
            return start + (end - start) * fraction
        return end + (start - end) / 2 * (_cos(math.pi * fraction) + 1)

    def schedule(count):
        value = float(values[-1]) if _is_int(count) else fnp.where(count >= bounds[-1], values[-1], 0.0)
        for lo, hi, start, end in zip(bounds, bounds[1:], values, values[1:]):
            if _is_int(count):
                if lo <= count < hi:
                    return between(float(start), float(end), (count - lo) / max(hi - lo, 1))
            else:
                inside = fnp.logical_and(count >= lo, count < hi)
                value = value + fnp.where(inside, between(start, end, (count - lo) / max(hi - lo, 1)), 0.0)
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


def _floor(x):
    return math.floor(x) if _python(x) else fnp.floor(x)


def _where(condition, a, b):
    if isinstance(condition, (bool, np.bool_)):
        return a if condition else b
    return fnp.where(condition, a, b)


def _anneal(start: float, end: float, pct, strategy: str):
    """From start (pct 0) to end (pct 1), along a half cosine or a line (OneCycleLR's anneal_func)."""
    if strategy == "cos":
        return end + (start - end) / 2 * (_cos(math.pi * pct) + 1)
    return (end - start) * pct + start


def onecycle_schedule(max_lr: float, total_steps: int, pct_start: float = 0.3, anneal_strategy: str = "cos",
                      div_factor: float = 25.0, final_div_factor: float = 1e4, three_phase: bool = False) -> Schedule:
    """torch.optim.lr_scheduler.OneCycleLR's learning rate: from max_lr / div_factor up to max_lr over
    pct_start of the steps, then down to max_lr / (div_factor * final_div_factor) (three_phase: back to
    the start first). Momentum is not cycled: a learning-rate schedule sets the learning rate only."""
    if total_steps <= 0:
        raise ValueError(f"Expected positive integer total_steps, but got {total_steps}")
    if not 0 <= pct_start <= 1:
        raise ValueError(f"Expected float between 0 and 1 pct_start, but got {pct_start}")
    if anneal_strategy not in ("cos", "linear"):
        raise ValueError(f"anneal_strategy must be one of 'cos' or 'linear', instead got {anneal_strategy}")
    initial = max_lr / div_factor
    lowest = initial / final_div_factor
    up_end = float(pct_start * total_steps) - 1
    if three_phase:
        phases = [(up_end, initial, max_lr), (float(2 * pct_start * total_steps) - 2, max_lr, initial),
                  (total_steps - 1.0, initial, lowest)]
    else:
        phases = [(up_end, initial, max_lr), (total_steps - 1.0, max_lr, lowest)]

    def schedule(count):
        if _is_int(count) and count > total_steps:
            raise ValueError(f"Tried to step {count} times. The specified number of total steps is {total_steps}")
        value, start = None, 0.0
        for end, first, last in phases:  # the first phase whose end the count has not passed
            lr = _anneal(first, last, (count - start) / (end - start), anneal_strategy)
            value = lr if value is None else _where(count <= start, value, lr)
            start = end
        return value
    return schedule


def cosine_restarts_schedule(init_value: float, first_period: int, period_mult: int = 1,
                             eta_min: float = 0.0) -> Schedule:
    """torch.optim.lr_scheduler.CosineAnnealingWarmRestarts (T_0 = first_period, T_mult =
    period_mult): a cosine from init_value to eta_min that restarts, each period period_mult times
    the last."""
    if first_period <= 0 or not isinstance(first_period, (int, np.integer)):
        raise ValueError(f"Expected positive integer T_0, but got {first_period}")
    if period_mult < 1 or not isinstance(period_mult, (int, np.integer)):
        raise ValueError(f"Expected integer T_mult >= 1, but got {period_mult}")

    def schedule(count):
        if period_mult == 1:
            t_cur, t_i = count % first_period, first_period
        else:
            if _is_int(count):
                n = int(math.log(count / first_period * (period_mult - 1) + 1, period_mult))
            else:
                n = fnp.floor(fnp.log(count / first_period * (period_mult - 1) + 1) / math.log(period_mult))
            t_cur = count - first_period * (period_mult ** n - 1) / (period_mult - 1)
            t_i = first_period * period_mult ** n
        return eta_min + (init_value - eta_min) * (1 + _cos(math.pi * t_cur / t_i)) / 2
    return schedule


def cyclic_schedule(base_lr: float, max_lr: float, step_size_up: int = 2000, step_size_down: int | None = None,
                    mode: str = "triangular", gamma: float = 1.0) -> Schedule:
    """torch.optim.lr_scheduler.CyclicLR's learning rate: triangles between base_lr and max_lr
    (triangular), halving each cycle (triangular2), or scaled by gamma ** step (exp_range)."""
    if mode not in ("triangular", "triangular2", "exp_range"):
        raise ValueError("mode is invalid and scale_fn is None")
    up = float(step_size_up)
    down = float(step_size_down) if step_size_down is not None else up
    total = up + down
    ratio = up / total

    def schedule(count):
        cycle = _floor(1 + count / total)
        x = 1.0 + count / total - cycle
        factor = _where(x <= ratio, x / ratio, (x - 1) / (ratio - 1))
        scale_by = {"triangular": 1.0, "triangular2": 1 / (2.0 ** (cycle - 1)), "exp_range": gamma ** count}[mode]
        return base_lr + (max_lr - base_lr) * factor * scale_by
    return schedule


# optax's names and signatures
def exponential_decay(init_value: float, transition_steps: int, decay_rate: float, transition_begin: int = 0,
                      staircase: bool = False, end_value: float | None = None) -> Schedule:
    """optax.exponential_decay: init_value * decay_rate ** ((count - transition_begin) / transition_steps)
    (floored with staircase), held at init_value before transition_begin and bounded by end_value."""
    if transition_steps <= 0 or decay_rate == 0.0:
        return constant_schedule(init_value)
    if transition_begin < 0:
        raise ValueError(f"transition_begin must be non-negative, got {transition_begin}")

    def schedule(count):
        steps = count - transition_begin
        p = steps / transition_steps
        decayed = init_value * decay_rate ** (_floor(p) if staircase else p)
        decayed = _where(steps <= 0, init_value, decayed) if transition_begin else decayed
        if end_value is not None:  # a floor while decaying, a ceiling while growing
            decayed = _max(decayed, end_value) if decay_rate < 1 else _min(decayed, end_value)
        return decayed
    return schedule


def cosine_decay_schedule(init_value: float, decay_steps: int, alpha: float = 0.0,
                          exponent: float = 1.0) -> Schedule:
    """optax.cosine_decay_schedule: init_value * ((1 - alpha) * cosine ** exponent + alpha), the
    cosine going from 1 to 0 over decay_steps."""
    if decay_steps <= 0:
        raise ValueError(f"decay_steps must be positive, got {decay_steps}")
    return lambda count: init_value * ((1 - alpha) * (0.5 * (1 + _cos(math.pi * _min(count, decay_steps)
                                                                          / decay_steps))) ** exponent + alpha)


def warmup_cosine_decay_schedule(init_value: float, peak_value: float, warmup_steps: int, decay_steps: int,
                                 end_value: float = 0.0, exponent: float = 1.0) -> Schedule:
    """optax.warmup_cosine_decay_schedule: linear from init_value to peak_value over warmup_steps,
    then cosine decay to end_value at decay_steps (counted from the start)."""
    if decay_steps < warmup_steps:
        raise ValueError(f"warmup_cosine_decay_schedule: decay_steps ({decay_steps}) counts from the start and so "
                         f"includes the {warmup_steps} warmup steps")
    alpha = end_value / peak_value if peak_value else 0.0
    return join_schedules([linear_schedule(init_value, peak_value, warmup_steps),
                           cosine_decay_schedule(peak_value, max(decay_steps - warmup_steps, 1), alpha, exponent)],
                          [warmup_steps])


def warmup_exponential_decay_schedule(init_value: float, peak_value: float, warmup_steps: int,
                                      transition_steps: int, decay_rate: float, transition_begin: int = 0,
                                      staircase: bool = False, end_value: float | None = None) -> Schedule:
    """optax's: linear warmup to peak_value, then exponential_decay from it."""
    return join_schedules([linear_schedule(init_value, peak_value, warmup_steps),
                           exponential_decay(peak_value, transition_steps, decay_rate, transition_begin, staircase,
                                             end_value)], [warmup_steps])


def sgdr_schedule(cosine_kwargs: list[dict]) -> Schedule:
    """optax.sgdr_schedule: warmup_cosine_decay_schedule pieces one after another (warm restarts)."""
    pieces = [warmup_cosine_decay_schedule(**kwargs) for kwargs in cosine_kwargs]
    boundaries = list(np.cumsum([kwargs["decay_steps"] for kwargs in cosine_kwargs])[:-1])
    return join_schedules(pieces, [int(b) for b in boundaries])


def cosine_onecycle_schedule(transition_steps: int, peak_value: float, pct_start: float = 0.3,
                             div_factor: float = 25.0, final_div_factor: float = 1e4) -> Schedule:
    """optax.cosine_onecycle_schedule: cosine up to peak_value over pct_start of the steps, then down."""
    if transition_steps <= 0:
        raise ValueError(f"transition_steps must be positive, got {transition_steps}")
    start, rise = peak_value / div_factor, int(pct_start * transition_steps)
    low = start / final_div_factor
    return _piecewise_interpolate([0, rise, transition_steps], [start, peak_value, low], "cos")


def linear_onecycle_schedule(transition_steps: int, peak_value: float, pct_start: float = 0.3,
                             pct_final: float = 0.85, div_factor: float = 25.0,
                             final_div_factor: float = 1e4) -> Schedule:
    """optax.linear_onecycle_schedule: linear up to peak_value, down to the start by pct_final, then
    to the final value."""
    if transition_steps <= 0:
        raise ValueError(f"transition_steps must be positive, got {transition_steps}")
    start = peak_value / div_factor
    knots = [0, int(pct_start * transition_steps), int(pct_final * transition_steps), transition_steps]
    return _piecewise_interpolate(knots, [start, peak_value, start, start / final_div_factor], "linear")


def _piecewise_interpolate(knots: list[int], values: list[float], strategy: str) -> Schedule:
    """values[i] at knots[i], annealed between them; the last value after the last knot."""
    def schedule(count):
        value = values[0]
        for (a, b), (va, vb) in zip(zip(knots, knots[1:]), zip(values, values[1:])):
            if b <= a:
                continue
            pct = _min(_max(count - a, 0), b - a) / (b - a)
            value = _where(count >= a, _anneal(va, vb, pct, strategy), value)
        return value
    return schedule
