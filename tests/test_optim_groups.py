"""Parameter groups (multi_transform, masked), reduce_on_plateau and the cyclic / restarting /
one-cycle and optax-named schedules, against NumPy transcriptions of PyTorch's schedulers and
optax's formulas, eagerly and under jit."""
import math

import numpy as np
import pytest

import funcgrad as fg
import funcgrad.numpy as fnp
from funcgrad import optim

from .helpers import assert_close

RNG = np.random.default_rng(0)


def _values(schedule, n):
    eager = np.array([float(schedule(i)) for i in range(n)])
    traced = fg.jit(schedule)
    assert_close([float(traced(fnp.asarray(i))) for i in range(n)], eager, rtol=2e-6, atol=1e-9)
    return eager


def onecycle_reference(step, max_lr, total, pct, div, final_div, three_phase, cos):
    """OneCycleLR.get_lr written out: phases (end step, start lr, end lr), annealed within the
    first phase whose end the step has not passed."""
    initial, low = max_lr / div, max_lr / div / final_div
    phases = ([(pct * total - 1, initial, max_lr), (2 * pct * total - 2, max_lr, initial), (total - 1, initial, low)]
              if three_phase else [(pct * total - 1, initial, max_lr), (total - 1, max_lr, low)])
    start = 0
    for i, (end, a, b) in enumerate(phases):
        if step <= end or i == len(phases) - 1:
            t = (step - start) / (end - start)
            return b + (a - b) / 2 * (math.cos(math.pi * t) + 1) if cos else (b - a) * t + a
        start = end


@pytest.mark.parametrize("three_phase,cos", [(False, True), (True, False), (True, True)])
def test_onecycle_is_pytorchs(three_phase, cos):
    schedule = optim.onecycle_schedule(0.1, 50, 0.25, "cos" if cos else "linear", 10.0, 100.0, three_phase)
    expected = [onecycle_reference(i, 0.1, 50, 0.25, 10.0, 100.0, three_phase, cos) for i in range(50)]
    assert_close(_values(schedule, 50), expected, rtol=1e-12)
    assert float(schedule(0)) == pytest.approx(0.01) and float(schedule(49)) == pytest.approx(1e-4)
    with pytest.raises(ValueError, match="Tried to step 51 times"):
        schedule(51)


def test_restarts_and_cyclic_are_pytorchs():
    restarts = optim.cosine_restarts_schedule(0.1, 3, period_mult=2, eta_min=0.01)
    expected, period, t = [], 3, 0
    for _ in range(40):  # T_cur counts up to T_i, which doubles at each restart
        expected.append(0.01 + 0.09 * (1 + math.cos(math.pi * t / period)) / 2)
        t += 1
        if t == period:
            t, period = 0, period * 2
    assert_close(_values(restarts, 40), expected, rtol=1e-12)
    assert_close(_values(optim.cosine_restarts_schedule(1.0, 4), 9)[[0, 2, 4, 6, 8]], [1, 0.5, 1, 0.5, 1], rtol=1e-12)
    for mode, scale in (("triangular", lambda cycle, i: 1.0), ("triangular2", lambda cycle, i: 0.5 ** (cycle - 1)),
                        ("exp_range", lambda cycle, i: 0.95 ** i)):
        schedule = optim.cyclic_schedule(0.01, 0.1, 3, 5, mode=mode, gamma=0.95)
        expected = []
        for i in range(30):  # up 3 steps from 0.01 to 0.1, down 5: the triangle, scaled
            cycle, phase = i // 8 + 1, i % 8
            height = phase / 3 if phase <= 3 else (8 - phase) / 5
            expected.append(0.01 + 0.09 * height * scale(cycle, i))
        assert_close(_values(schedule, 30), expected, rtol=1e-12, atol=1e-15)


def test_optax_named_schedules_are_its_formulas():
    decay = optim.exponential_decay(1.0, 4, 0.5, transition_begin=2, staircase=True, end_value=0.2)
    assert_close(_values(decay, 16), [1, 1, 1, 1, 1, 1, 0.5, 0.5, 0.5, 0.5, 0.25, 0.25, 0.25, 0.25, 0.2, 0.2])
    assert_close(_values(optim.exponential_decay(1.0, 2, 3.0, end_value=5.0), 6),
                 np.minimum(3.0 ** (np.arange(6) / 2), 5.0), rtol=1e-12)
    assert_close(_values(optim.exponential_decay(0.3, 0, 0.5), 3), [0.3] * 3)  # no transition: constant
    cosine = optim.cosine_decay_schedule(2.0, 10, alpha=0.1, exponent=2.0)
    i = np.minimum(np.arange(14), 10)
    assert_close(_values(cosine, 14), 2.0 * (0.9 * (0.5 * (1 + np.cos(np.pi * i / 10))) ** 2 + 0.1), rtol=1e-12)
    warm = optim.warmup_cosine_decay_schedule(0.0, 1.0, 4, 12, end_value=0.1)
    j = np.minimum(np.arange(4, 14) - 4, 8)
    assert_close(_values(warm, 14), np.r_[np.arange(4) / 4, 0.9 * 0.5 * (1 + np.cos(np.pi * j / 8)) + 0.1],
                 rtol=1e-12)
    restarts = optim.sgdr_schedule([dict(init_value=0.0, peak_value=1.0, warmup_steps=2, decay_steps=6),
                                    dict(init_value=0.0, peak_value=0.5, warmup_steps=1, decay_steps=5)])
    first = optim.warmup_cosine_decay_schedule(0.0, 1.0, 2, 6)
    second = optim.warmup_cosine_decay_schedule(0.0, 0.5, 1, 5)
    assert_close(_values(restarts, 11), [first(k) for k in range(6)] + [second(k) for k in range(5)], rtol=1e-12)
    with pytest.raises(ValueError, match=r"decay_steps \(5\) counts from the start"):
        optim.warmup_cosine_decay_schedule(0.0, 1.0, 10, 5)  # optax raises; it decayed over one step
    onecycle = optim.cosine_onecycle_schedule(20, 1.0, pct_start=0.25, div_factor=10.0, final_div_factor=100.0)
    up = [0.1 + (1 - 0.1) / 2 * (1 - math.cos(math.pi * k / 5)) for k in range(5)]
    down = [1.0 + (1e-3 - 1.0) / 2 * (1 - math.cos(math.pi * k / 15)) for k in range(16)]
    assert_close(_values(onecycle, 21), up + down, rtol=1e-12)
    linear = optim.linear_onecycle_schedule(10, 1.0, 0.2, 0.6, 4.0, 10.0)
    assert_close(_values(linear, 12), [0.25, 0.625, 1.0, 0.8125, 0.625, 0.4375, 0.25, 0.19375, 0.1375, 0.08125,
                                       0.025, 0.025], rtol=1e-12)


def _params():
    return {"w": RNG.standard_normal((3, 2)), "b": RNG.standard_normal(2), "norm": {"scale": RNG.standard_normal(2)}}



@pytest.mark.parametrize("kind", ["linear", "cosine"])
def test_piecewise_interpolate_and_warmup_constant_are_optaxs(kind):
    """optax's formulas: the cumulative products of the scales reached at the boundaries, moved
    between linearly or by a half cosine; eagerly and on a traced count."""
    sched = optim.piecewise_interpolate_schedule(kind, 2.0, {4: 0.5, 10: 0.1})
    knots, values = [0, 4, 10], [2.0, 1.0, 0.1]
    expected = []
    for k in range(14):
        if k >= 10:
            expected.append(0.1)
            continue
        i = 0 if k < 4 else 1
        frac = (k - knots[i]) / (knots[i + 1] - knots[i])
        lo, hi = values[i], values[i + 1]
        cosine = hi + (lo - hi) / 2 * (math.cos(math.pi * frac) + 1)
        expected.append(lo + (hi - lo) * frac if kind == "linear" else cosine)
    assert_close(_values(sched, 14), expected, rtol=1e-12)
    assert_close([float(fg.jit(sched)(np.float64(k))) for k in range(14)], expected, rtol=1e-6)
    assert_close(_values(optim.warmup_constant_schedule(0.0, 0.4, 4), 7), [0.0, 0.1, 0.2, 0.3, 0.4, 0.4, 0.4])
    with pytest.raises(ValueError, match="interpolate_type"):
        optim.piecewise_interpolate_schedule("step", 1.0, {})


def test_stateless_transformations_apply_a_function_of_updates_and_params():
    params, grads = {"w": np.ones(2), "b": np.full(3, 2.0)}, {"w": np.full(2, 3.0), "b": np.ones(3)}
    plus = optim.stateless_with_tree_map(lambda g, p: g + p)
    updates, state = plus.update(grads, plus.init(params), params)
    assert state == () and updates["w"].tolist() == [4.0, 4.0] and updates["b"].tolist() == [3.0] * 3
    halve = optim.stateless(lambda u, p: fg.tree_map(lambda x: x / 2, u))
    opt = optim.chain(halve, optim.sgd(1.0))
    updates, _ = opt.update(grads, opt.init(params), params)
    assert updates["w"].tolist() == [-1.5, -1.5]
    assert optim.stateless_with_tree_map(lambda g, p: g * (p is None)).update(grads, ())[0]["b"].tolist() == [1.0] * 3

def test_multi_transform_gives_each_group_its_optimiser():
    """PyTorch's parameter groups: Adam with weight decay on the weights, plain SGD on the rest."""
    params, grads = _params(), [_params() for _ in range(3)]
    labels = {"w": "decay", "b": "plain", "norm": {"scale": "plain"}}
    opt = optim.multi_transform({"decay": optim.adamw(0.01, weight_decay=0.1), "plain": optim.sgd(0.1)}, labels)
    alone = {"decay": optim.adamw(0.01, weight_decay=0.1), "plain": optim.sgd(0.1)}
    state = opt.init(params)
    separate = {label: t.init([leaf for leaf, mine in zip(fg.tree_leaves(params), fg.tree_leaves(labels))
                               if mine == label]) for label, t in alone.items()}
    p = params
    for g in grads:
        updates, state = opt.update(g, state, p)
        new = optim.apply_updates(p, updates)
        for label, t in alone.items():  # each group stepped by its optimiser alone over its own leaves
            pick = lambda tree: [x for x, mine in zip(fg.tree_leaves(tree), fg.tree_leaves(labels)) if mine == label]
            u, separate[label] = t.update(pick(g), separate[label], pick(p))
            for got, want in zip(pick(new), optim.apply_updates(pick(p), u)):
                assert_close(got, want, rtol=1e-13)
        p = new
    def by_rank(tree):
        return fg.tree_map(lambda x: "matrix" if np.ndim(x) == 2 else "vector", tree)
    by_shape = optim.multi_transform({"matrix": optim.sgd(1.0), "vector": optim.sgd(0.0)}, by_rank)
    updates, _ = by_shape.update(grads[0], by_shape.init(params), params)
    assert_close(updates["w"], -grads[0]["w"])
    assert_close(updates["b"], np.zeros(2))
    with pytest.raises(KeyError, match=r"labels \['plain'\] have no transformation"):
        optim.multi_transform({"decay": optim.sgd(0.1)}, labels).init(params)
    with pytest.raises(ValueError, match="does not have the parameters' structure"):
        optim.multi_transform({"decay": optim.sgd(0.1)}, {"w": "decay"}).init(params)


def test_masked_leaves_the_rest_untouched_and_sees_only_its_leaves():
    params, grads = _params(), _params()
    mask = {"w": True, "b": False, "norm": {"scale": False}}
    opt = optim.chain(optim.masked(optim.add_decayed_weights(0.5), mask), optim.scale(-1.0))
    updates, _ = opt.update(grads, opt.init(params), params)
    assert_close(updates["w"], -(grads["w"] + 0.5 * params["w"]), rtol=1e-13)
    assert_close(updates["b"], -grads["b"], rtol=1e-13)
    clipped = optim.masked(optim.clip_by_global_norm(0.1), lambda tree: fg.tree_map(lambda x: np.ndim(x) == 1, tree))
    updates, _ = clipped.update(grads, clipped.init(params), params)
    norm = math.sqrt(np.sum(grads["b"] ** 2) + np.sum(grads["norm"]["scale"] ** 2))  # the masked leaves' norm
    assert_close(updates["b"], grads["b"] * 0.1 / (norm + 1e-6), rtol=1e-12)
    assert_close(updates["w"], grads["w"])


def test_reduce_on_plateau_scales_after_patience_and_cooldown():
    """ReduceLROnPlateau's rule: a value not below (1 - rtol) best - atol counts towards patience;
    at patience the scale is multiplied by factor and cooldown checks pass without counting."""
    opt = optim.chain(optim.sgd(1.0), optim.reduce_on_plateau(factor=0.5, patience=2, cooldown=1, min_scale=0.2))
    params = {"x": np.ones(2)}
    grads = {"x": np.ones(2)}
    state = opt.init(params)
    values = [1.0, 0.5, 0.6, 0.6, 0.6, 0.6, 0.6, 0.4, 0.6, 0.6, 0.6, 0.6, 0.6, 0.6]
    expected, scale, best, plateau, cooling = [], 1.0, math.inf, 0, 0
    for v in values:
        if v < (1 - 1e-4) * best:
            best, plateau = v, 0
        else:
            plateau += 1
        if cooling:
            cooling, plateau = cooling - 1, 0
        elif plateau == 2:
            scale, plateau, cooling = max(scale * 0.5, 0.2), 0, 1
        expected.append(scale)
    step = fg.jit(lambda g, s, p, v: opt.update(g, s, p, value=v))
    for v, want in zip(values, expected):
        updates, state = step(grads, state, params, np.float64(v))
        assert_close(updates["x"], -np.full(2, want), rtol=1e-12)
    assert expected[-1] == 0.2 and len(set(expected)) == 4  # three reductions, the last held at min_scale
    with pytest.raises(TypeError, match="value"):
        opt.update(grads, state, params)
    with pytest.raises(ValueError, match="Factor must be in the range"):
        optim.reduce_on_plateau(factor=1.5)
