"""optax's optimisers, rules and wrappers that PyTorch lacks, against NumPy transcriptions of their
papers' update rules as optax states them, over several float64 steps, eagerly and under jit."""
import math

import numpy as np
import pytest

import funcgrad as fg
import funcgrad.numpy as fnp
from funcgrad import optim

from .helpers import assert_close

RNG = np.random.default_rng(11)
SHAPES = {"w": (4, 3), "b": (3,), "k": (2, 3, 2, 2)}
STEPS = 5


def _problem():
    params = {k: RNG.standard_normal(s) for k, s in SHAPES.items()}
    grads = [{k: RNG.standard_normal(s) for k, s in SHAPES.items()} for _ in range(STEPS)]
    return params, grads


PARAMS, GRADS = _problem()


def _run(opt, jit=False, params=None, grads=None, **extra):
    params, grads = params if params is not None else PARAMS, grads if grads is not None else GRADS
    update = fg.jit(opt.update) if jit else opt.update
    p, state = params, opt.init(params)
    for g in grads:
        u, state = update(g, state, p, **extra)
        p = optim.apply_updates(p, u)
    return p, state


def _check(opt, reference, rtol=1e-10, **extra):
    """reference(p, [g per step]) -> the parameter after the steps, leaf by leaf."""
    for jit in (False, True):
        got, _ = _run(opt, jit, **extra)
        for k in PARAMS:
            assert_close(got[k], reference(PARAMS[k].copy(), [g[k] for g in GRADS]), rtol=rtol, atol=1e-12)


def test_yogi_moves_its_second_moment_additively():
    b1, b2, eps = 0.9, 0.99, 1e-3

    def ref(p, gs):
        m, v = np.full_like(p, 1e-6), np.full_like(p, 1e-6)
        for t, g in enumerate(gs, 1):
            m, v = b1 * m + (1 - b1) * g, v - (1 - b2) * np.sign(v - g * g) * g * g
            p = p - 0.05 * (m / (1 - b1 ** t)) / (np.sqrt(v / (1 - b2 ** t)) + eps)
        return p
    _check(optim.yogi(0.05, b2=b2), ref)


@pytest.mark.parametrize("nesterov", [False, True])
def test_adabelief_takes_the_second_moment_of_the_surprise(nesterov):
    b1, b2, eps, eps_root = 0.9, 0.999, 1e-16, 1e-16

    def ref(p, gs):
        m, s = np.zeros_like(p), np.zeros_like(p)
        for t, g in enumerate(gs, 1):
            m = b1 * m + (1 - b1) * g
            s = b2 * s + (1 - b2) * (g - m) ** 2 + eps_root
            m_hat = b1 * m / (1 - b1 ** (t + 1)) + (1 - b1) * g / (1 - b1 ** t) if nesterov else m / (1 - b1 ** t)
            p = p - 0.05 * m_hat / (np.sqrt(s / (1 - b2 ** t)) + eps)
        return p
    _check(optim.adabelief(0.05, nesterov=nesterov), ref)


def test_amsgrad_keeps_the_largest_corrected_second_moment():
    b1, b2, eps = 0.9, 0.999, 1e-8

    def ref(p, gs):
        m, v, v_max = (np.zeros_like(p) for _ in range(3))
        for t, g in enumerate(gs, 1):
            m, v = b1 * m + (1 - b1) * g, b2 * v + (1 - b2) * g * g
            v_max = np.maximum(v_max, v / (1 - b2 ** t))
            p = p - 0.05 * (m / (1 - b1 ** t)) / (np.sqrt(v_max) + eps)
        return p
    _check(optim.amsgrad(0.05), ref)


def test_novograd_normalises_by_each_layers_gradient_norm():
    b1, b2, eps, wd = 0.9, 0.25, 1e-6, 0.1

    def ref(p, gs):
        m, v = np.zeros_like(p), 0.0
        for t, g in enumerate(gs, 1):
            v = np.sum(g * g) if t == 1 else b2 * v + (1 - b2) * np.sum(g * g)
            m = (0.0 if t == 1 else b1 * m) + g / (np.sqrt(v) + eps) + wd * p
            p = p - 0.05 * m
        return p
    _check(optim.novograd(0.05, weight_decay=wd), ref)


def test_adan_estimates_nesterov_momentum_from_gradient_differences():
    b1, b2, b3, eps, eps_root, wd, lr = 0.98, 0.92, 0.99, 1e-8, 1e-8, 0.01, 0.05

    def ref(p, gs):
        m, v, n, prev = (np.zeros_like(p) for _ in range(4))
        for t, g in enumerate(gs, 1):
            diff = g - prev if t > 1 else np.zeros_like(g)
            m, v = b1 * m + (1 - b1) * g, b2 * v + (1 - b2) * diff
            n = b3 * n + (1 - b3) * (g + (1 - b2) * diff) ** 2
            u = (m / (1 - b1 ** t) + (1 - b2) * v / (1 - b2 ** t)) / (np.sqrt(n / (1 - b3 ** t) + eps_root) + eps)
            p, prev = p - lr * (u + wd * p), g
        return p
    _check(optim.adan(lr, weight_decay=wd), ref)


def test_sm3_keeps_one_accumulator_per_axis():
    def ref(p, gs, lr=0.05, b1=0.9, eps=1e-8):
        covers, nu = [np.zeros(d) for d in p.shape], np.zeros_like(p)
        for g in gs:
            if p.ndim < 2:
                acc = g * g + covers[0]
            else:
                shaped = [c.reshape([1] * i + [p.shape[i]] + [1] * (p.ndim - i - 1)) for i, c in enumerate(covers)]
                acc = g * g + np.minimum.reduce(np.broadcast_arrays(*shaped))
            nu = b1 * nu + (1 - b1) * np.where(acc > 0, g / np.sqrt(acc + eps), 0.0)
            covers = [acc] if p.ndim < 2 else [acc.max(axis=tuple(j for j in range(p.ndim) if j != i))
                                                for i in range(p.ndim)]
            p = p - lr * nu
        return p
    _check(optim.sm3(0.05), ref)


def _trust(u, p, coefficient=1.0, eps=0.0, min_norm=0.0):
    p_norm, u_norm = max(np.linalg.norm(p), min_norm), max(np.linalg.norm(u), min_norm)
    return u if p_norm == 0 or u_norm == 0 else u * coefficient * p_norm / (u_norm + eps)


def test_lamb_scales_adams_step_by_the_trust_ratio():
    b1, b2, eps, wd, lr = 0.9, 0.999, 1e-6, 0.01, 0.05

    def ref(p, gs):
        m, v = np.zeros_like(p), np.zeros_like(p)
        for t, g in enumerate(gs, 1):
            m, v = b1 * m + (1 - b1) * g, b2 * v + (1 - b2) * g * g
            step = (m / (1 - b1 ** t)) / (np.sqrt(v / (1 - b2 ** t)) + eps) + wd * p
            p = p - lr * _trust(step, p)
        return p
    _check(optim.lamb(lr, weight_decay=wd), ref)


@pytest.mark.parametrize("nesterov", [False, True])
def test_lars_scales_by_the_trust_ratio_before_momentum(nesterov):
    lr, wd, mom, coef = 0.5, 0.01, 0.8, 0.001

    def ref(p, gs):
        buf = np.zeros_like(p)
        for g in gs:
            u = -lr * _trust(g + wd * p, p, coef)
            buf = u + mom * buf
            p = p + (u + mom * buf if nesterov else buf)
        return p
    _check(optim.lars(lr, weight_decay=wd, momentum=mom, nesterov=nesterov), ref)


@pytest.mark.parametrize("schedule", [False, True])
def test_fromage_takes_relative_steps_and_shrinks(schedule):
    def lr_at(t):
        return 0.1 * 0.5 ** t if schedule else 0.05

    def ref(p, gs):
        for t, g in enumerate(gs):
            shrink = 1 / math.sqrt(1 + lr_at(t) ** 2)
            p = p + (-lr_at(t) * shrink * _trust(g, p, min_norm=1e-6) + (shrink - 1) * p)
        return p
    # a schedule of a traced (int64) count computes in float32 under jit, funcgrad's default float
    _check(optim.fromage(lr_at if schedule else 0.05), ref, rtol=1e-6 if schedule else 1e-10)


def _nesterov_adam_ref(p, gs, lr, decay, b1=0.9, b2=0.999, eps=1e-8, eps_root=1e-5):
    """optax's Nesterov Adam (NAdamW) with eps_root inside the root and decoupled weight decay."""
    m, v = np.zeros_like(p), np.zeros_like(p)
    for t, g in enumerate(gs, 1):
        m, v = b1 * m + (1 - b1) * g, b2 * v + (1 - b2) * g * g
        m_hat = b1 * m / (1 - b1 ** (t + 1)) + (1 - b1) * g / (1 - b1 ** t)
        p = p - lr * (m_hat / (np.sqrt(v / (1 - b2 ** t) + eps_root) + eps) + decay * p)
    return p


def test_nadamw_and_adamaxw_decay_weights_after_the_step():
    b1, b2, eps, wd, lr = 0.9, 0.999, 1e-8, 0.1, 0.05
    _check(optim.nadamw(lr, eps_root=1e-5, weight_decay=wd), lambda p, gs: _nesterov_adam_ref(p, gs, lr, wd))

    def adamaxw_ref(p, gs):
        m, u = np.zeros_like(p), np.zeros_like(p)
        for t, g in enumerate(gs, 1):
            m, u = b1 * m + (1 - b1) * g, np.maximum(b2 * u, np.abs(g) + eps)
            p = p - lr * (m / (1 - b1 ** t) / u + wd * p)
        return p
    _check(optim.adamaxw(lr, weight_decay=wd), adamaxw_ref)


def test_adam_and_adamw_take_optaxs_keywords():
    """optax.adam's eps_root and nesterov, optax.adamw's mask, optax.radam's threshold, beside
    PyTorch's positional arguments (an optax user's call works unchanged)."""
    b1, wd, lr = 0.9, 0.1, 0.05
    _check(optim.adam(lr, eps_root=1e-5, nesterov=True), lambda p, gs: _nesterov_adam_ref(p, gs, lr, 0.0))
    decayed = {"w": True, "b": False, "k": True}
    got, _ = _run(optim.adamw(lr, weight_decay=wd, eps_root=1e-5, nesterov=True, mask=decayed))
    for k in PARAMS:
        expected = _nesterov_adam_ref(PARAMS[k].copy(), [g[k] for g in GRADS], lr, wd if decayed[k] else 0.0)
        assert_close(got[k], expected, rtol=1e-10)

    def momentum_only(p, gs):  # rho_t never passes a threshold of 1e9: bias-corrected momentum steps
        m = np.zeros_like(p)
        for t, g in enumerate(gs, 1):
            m = b1 * m + (1 - b1) * g
            p = p - lr * m / (1 - b1 ** t)
        return p
    _check(optim.radam(lr, threshold=1e9), momentum_only)

def test_centred_and_summed_second_moments():
    def stddev_ref(p, gs, decay=0.9, eps=1e-8):
        m, v = np.zeros_like(p), np.zeros_like(p)
        for g in gs:
            m, v = decay * m + (1 - decay) * g, decay * v + (1 - decay) * g * g
            p = p - 0.01 * g / np.sqrt(v - m * m + eps)
        return p
    _check(optim.chain(optim.scale_by_stddev(), optim.scale(-0.01)), stddev_ref)

    def rss_ref(p, gs):
        s = np.full_like(p, 0.1)
        for g in gs:
            s = s + g * g
            p = p - 0.1 * g / np.sqrt(s + 1e-7)
        return p
    _check(optim.chain(optim.scale_by_rss(), optim.scale(-0.1)), rss_ref)


def test_optimistic_gradient_and_sign_sgd():
    def optimistic_ref(p, gs, alpha=0.7, beta=0.4):
        prev = gs[0]
        for g in gs:
            p, prev = p - 0.05 * ((alpha + beta) * g - beta * prev), g
        return p
    _check(optim.optimistic_gradient_descent(0.05, alpha=0.7, beta=0.4), optimistic_ref)
    _check(optim.sign_sgd(0.05), lambda p, gs: p - 0.05 * sum(np.sign(g) for g in gs))


@pytest.mark.parametrize("variant,f_min", [("sps", 0.0), ("sps+", 1.0)])
def test_polyak_sgd_steps_by_the_gap_over_the_squared_norm(variant, f_min):
    loss = 0.7
    got, _ = _run(optim.polyak_sgd(max_learning_rate=0.5, f_min=f_min, variant=variant, scaling=0.5),
                  value=fnp.asarray(loss))
    p = {k: v.copy() for k, v in PARAMS.items()}
    for g in GRADS:
        sq = sum(np.sum((0.5 * g[k]) ** 2) for k in g)
        gap = max(loss - f_min, 0.0) if variant == "sps+" else loss - f_min
        step = min(gap / sq, 0.5)
        p = {k: p[k] - step * 0.5 * g[k] for k in p}
    for k in p:
        assert_close(got[k], p[k], rtol=1e-12)
    with pytest.raises(ValueError, match="variant"):
        optim.polyak_sgd(variant="sps-")


def test_per_parameter_scalings_and_edits():
    _check(optim.chain(optim.scale_by_param_block_norm(), optim.scale(-0.1)),
           lambda p, gs: _steps(p, gs, lambda g, p: -0.1 * g * max(np.linalg.norm(p), 1e-3)))
    _check(optim.chain(optim.scale_by_param_block_rms(), optim.scale(-0.1)),
           lambda p, gs: _steps(p, gs, lambda g, p: -0.1 * g * max(np.sqrt(np.mean(p * p)), 1e-3)))
    _check(optim.chain(optim.centralize(), optim.scale(-0.1)), lambda p, gs: _steps(
        p, gs, lambda g, p: -0.1 * (g - g.mean(axis=tuple(range(1, g.ndim)), keepdims=True) if g.ndim > 1 else g)))
    _check(optim.chain(optim.clip_by_block_rms(0.5), optim.scale(-0.1)),
           lambda p, gs: _steps(p, gs, lambda g, p: -0.1 * g / max(1.0, np.sqrt(np.mean(g * g)) / 0.5)))
    _check(optim.chain(optim.scale(-1.0), optim.keep_params_nonnegative()),
           lambda p, gs: _steps(p, gs, lambda g, p: np.where(p - g < 0, -p, -g)))
    _check(optim.chain(optim.scale_by_schedule(lambda c: 0.1 * 0.5 ** c), optim.scale(-1.0)),
           lambda p, gs: p - sum(0.1 * 0.5 ** t * g for t, g in enumerate(gs)), rtol=1e-6)


def _steps(p, gs, rule):
    for g in gs:
        p = p + rule(g, p)
    return p


def test_adaptive_grad_clip_limits_each_units_norm_relative_to_its_weights():
    def ref(p, gs, clipping=0.1, eps=1e-3):
        axes = {1: (0,), 2: (0,), 4: (0, 1, 2)}[p.ndim]
        for g in gs:
            g_norm = np.sqrt(np.sum(g * g, axis=axes, keepdims=True))
            max_norm = clipping * np.maximum(np.sqrt(np.sum(p * p, axis=axes, keepdims=True)), eps)
            p = p - 0.1 * np.where(g_norm < max_norm, g, g * max_norm / np.maximum(g_norm, 1e-6))
        return p
    _check(optim.chain(optim.adaptive_grad_clip(0.1), optim.scale(-0.1)), ref)
    with pytest.raises(ValueError, match=r"\(2, 2, 2, 2, 2, 2\).*axis="):
        optim.adaptive_grad_clip(0.1).update({"x": fnp.ones((2,) * 6)}, (), {"x": fnp.ones((2,) * 6)})


def test_zero_nans_zeroes_them_and_records_where():
    g = {"a": fnp.asarray([1.0, np.nan, 3.0]), "b": fnp.asarray([1.0, 2.0])}
    opt = optim.zero_nans()
    out, state = opt.update(g, opt.init(g))
    assert_close(out["a"], [1.0, 0.0, 3.0])
    assert bool(state.found_nan["a"]) and not bool(state.found_nan["b"])


def test_add_noise_anneals_its_variance_and_draws_from_the_state_key():
    eta, gamma = 0.5, 0.55
    zeros = {"a": fnp.zeros((20000,)), "b": fnp.zeros((3,))}
    opt = optim.add_noise(eta, gamma, key=fg.random.key(5))
    state = opt.init(zeros)
    for t in (1, 2, 3):
        key = state.rng_key
        out, state = opt.update(zeros, state)
        next_key, sample = fg.random.split(key)
        assert np.array_equal(np.asarray(state.rng_key), np.asarray(next_key))
        keys = fg.random.split(sample, 2)
        assert_close(out["b"], math.sqrt(eta / t ** gamma) * np.asarray(fg.random.normal(keys[1], (3,))), rtol=1e-6)
        assert abs(np.std(np.asarray(out["a"])) / math.sqrt(eta / t ** gamma) - 1) < 0.03
    with pytest.raises(ValueError, match="key"):
        optim.add_noise(0.1, 0.5)


def test_ema_and_apply_every():
    def ema_ref(p, gs, decay=0.9):
        e = np.zeros_like(p)
        for t, g in enumerate(gs, 1):
            e = decay * e + (1 - decay) * g
            p = p - 0.1 * e / (1 - decay ** t)
        return p
    _check(optim.chain(optim.ema(0.9), optim.scale(-0.1)), ema_ref)

    def every_ref(p, gs, k=2):
        acc = np.zeros_like(p)
        for t, g in enumerate(gs):
            acc = (acc if t % k else 0.0) + g
            p = p - 0.1 * (acc if t % k == k - 1 else 0.0)
        return p
    _check(optim.chain(optim.apply_every(2), optim.scale(-0.1)), every_ref)


@pytest.mark.parametrize("reset_state", [False, True])
def test_lookahead_pulls_the_slow_weights_every_sync_period(reset_state):
    lr, k, alpha = 0.1, 2, 0.5
    opt = optim.lookahead(optim.sgd(lr, momentum=0.9), k, alpha, reset_state=reset_state)
    for jit in (False, True):
        p = optim.LookaheadParams.init_synced({"w": PARAMS["w"]})
        state, update = opt.init(p), fg.jit(opt.update) if jit else opt.update
        fast, slow, buf = PARAMS["w"].copy(), PARAMS["w"].copy(), None
        for t, g in enumerate(GRADS, 1):
            u, state = update({"w": g["w"]}, state, p)
            p = optim.apply_updates(p, u)
            buf = g["w"] if buf is None else 0.9 * buf + g["w"]
            fast = fast - lr * buf
            if t % k == 0:
                slow = slow + alpha * (fast - slow)
                fast = slow.copy()
                buf = None if reset_state else buf
            assert_close(p.fast["w"], fast, rtol=1e-10)
            assert_close(p.slow["w"], slow, rtol=1e-10)
    with pytest.raises(TypeError, match="LookaheadParams"):
        opt.update({"w": GRADS[0]["w"]}, opt.init({"w": PARAMS["w"]}), {"w": PARAMS["w"]})


def test_flatten_runs_the_inner_optimiser_on_one_vector():
    plain, _ = _run(optim.adam(0.05))
    for jit in (False, True):
        flat, state = _run(optim.flatten(optim.adam(0.05)), jit)
        for k in PARAMS:
            assert_close(flat[k], plain[k], rtol=1e-12)
    assert state[1].mu.shape == (sum(int(np.prod(s)) for s in SHAPES.values()),)


def test_freeze_partition_identity_and_named_chain():
    labels = {"w": "train", "b": "frozen", "k": "train"}
    got, _ = _run(optim.partition({"train": optim.sgd(0.1), "frozen": optim.set_to_zero()}, labels))
    assert_close(got["b"], PARAMS["b"])
    assert_close(got["w"], PARAMS["w"] - 0.1 * sum(g["w"] for g in GRADS))
    frozen, _ = _run(optim.chain(optim.freeze({"w": False, "b": True, "k": True}), optim.sgd(0.1)))
    assert_close(frozen["k"], PARAMS["k"])
    assert_close(frozen["w"], got["w"])
    everything, _ = _run(optim.chain(optim.freeze(True), optim.sgd(0.1)))
    assert_close(everything["w"], PARAMS["w"])
    same, _ = _run(optim.chain(optim.identity(), optim.sgd(0.1)))
    assert_close(same["w"], got["w"])
    named = optim.named_chain(("clip", optim.clip(0.5)), ("sgd", optim.sgd(0.1, momentum=0.9)))
    _, state = _run(named)
    assert set(state) == {"clip", "sgd"}
    _, plain_state = _run(optim.chain(optim.clip(0.5), optim.sgd(0.1, momentum=0.9)))
    assert_close(state["sgd"][1].momentum["w"], plain_state[1][1].momentum["w"])
    with pytest.raises(ValueError, match="repeat"):
        optim.named_chain(("a", optim.identity()), ("a", optim.identity()))


def test_inject_hyperparams_holds_them_in_the_state():
    schedule = optim.exponential_schedule(0.1, 0.5)
    opt = optim.inject_hyperparams(optim.adam)(learning_rate=schedule, b1=0.8)
    for jit in (False, True):
        got, state = _run(opt, jit)
        want, _ = _run(optim.chain(optim.scale_by_adam(0.8), optim.scale_by_learning_rate(schedule)))
        for k in PARAMS:
            assert_close(got[k], want[k], rtol=1e-6)
        assert_close(state.hyperparams["learning_rate"], schedule(STEPS - 1), rtol=1e-6)
        assert state.hyperparams["b1"].dtype == np.float64  # the parameters' dtype
        assert int(state.count) == STEPS
    # a loop may change a hyperparameter between steps, without rebuilding or recompiling
    opt = optim.inject_hyperparams(optim.sgd)(learning_rate=0.1, momentum=0.0)
    update = fg.jit(opt.update)
    p, state = PARAMS, opt.init(PARAMS)
    for t, g in enumerate(GRADS):
        state.hyperparams["learning_rate"] = fnp.asarray(0.1 / (t + 1), np.float64)
        u, state = update(g, state, p)
        p = optim.apply_updates(p, u)
    assert_close(p["w"], PARAMS["w"] - sum(0.1 / (t + 1) * g["w"] for t, g in enumerate(GRADS)), rtol=1e-12)
    with pytest.raises(ValueError, match="static_args"):
        optim.inject_hyperparams(optim.sgd, static_args="nonsense")


def test_adam_under_jit_corrects_bias_in_float64():
    # the step count was an int64 under jit, so b ** t came out in float32: 1e-5 off eagerly in float64
    eager, _ = _run(optim.adam(0.05))
    jitted, _ = _run(optim.adam(0.05), jit=True)
    assert_close(jitted["w"], eager["w"], rtol=1e-13)


@pytest.mark.parametrize("make", [optim.adam, optim.adamax, optim.nadam, optim.radam, optim.adagrad, optim.yogi,
                                  optim.adabelief, optim.nadamw, optim.lamb,
                                  lambda lr: optim.inject_hyperparams(optim.adamw)(learning_rate=lr)])
def test_float32_steps_stay_float32_under_jit(make):
    # the step count is a float64 scalar under jit; each rule casts its scalars to the leaf's dtype, so
    # float32 parameters' updates are float32 and equal to the eager ones (not computed in float64)
    params = {k: v.astype(np.float32) for k, v in PARAMS.items()}
    grads = [{k: v.astype(np.float32) for k, v in g.items()} for g in GRADS]
    opt = make(0.05)
    eager, jitted = opt.update, fg.jit(opt.update)
    state_e = state_j = opt.init(params)
    for g in grads:
        u_e, state_e = eager(g, state_e, params)
        u_j, state_j = jitted(g, state_j, params)
        for k in params:
            assert u_j[k].dtype == np.float32 and u_e[k].dtype == np.float32
            assert_close(u_j[k], u_e[k], rtol=2e-5, atol=1e-7)
