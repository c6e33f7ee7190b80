"""Optimisers and schedules against NumPy transcriptions of PyTorch's documented algorithms."""
import math

import numpy as np
import pytest

import funcgrad as fg
from funcgrad import optim

from .helpers import assert_close

STEPS = 6


def grads_sequence(shape=(3, 2), seed=0):
    rng = np.random.default_rng(seed)
    return [rng.standard_normal(shape) for _ in range(STEPS)]


# Each reference: (p, grads, **hyper) -> list of parameters after each step, in float64.
def ref_sgd(p, gs, lr, momentum=0.0, dampening=0.0, nesterov=False, weight_decay=0.0):
    out, buf = [], None
    for t, g in enumerate(gs):
        g = g + weight_decay * p
        if momentum:
            buf = g.copy() if t == 0 else momentum * buf + (1 - dampening) * g
            g = g + momentum * buf if nesterov else buf
        p = p - lr * g
        out.append(p)
    return out


def ref_adam(p, gs, lr, b1=0.9, b2=0.999, eps=1e-8, weight_decay=0.0, decoupled=False, amsgrad=False):
    m = v = vmax = np.zeros_like(p)
    out = []
    for t, g in enumerate(gs, start=1):
        if decoupled:
            p = p * (1 - lr * weight_decay)
        else:
            g = g + weight_decay * p
        m = b1 * m + (1 - b1) * g
        v = b2 * v + (1 - b2) * g * g
        vmax = np.maximum(vmax, v)
        denom = np.sqrt(vmax if amsgrad else v) / math.sqrt(1 - b2 ** t) + eps
        p = p - lr / (1 - b1 ** t) * m / denom
        out.append(p)
    return out


def ref_rmsprop(p, gs, lr, alpha=0.99, eps=1e-8, weight_decay=0.0, momentum=0.0, centered=False):
    sq = ga = buf = np.zeros_like(p)
    out = []
    for g in gs:
        g = g + weight_decay * p
        sq = alpha * sq + (1 - alpha) * g * g
        if centered:
            ga = alpha * ga + (1 - alpha) * g
            avg = np.sqrt(sq - ga * ga) + eps
        else:
            avg = np.sqrt(sq) + eps
        if momentum:
            buf = momentum * buf + g / avg
            p = p - lr * buf
        else:
            p = p - lr * g / avg
        out.append(p)
    return out


def ref_adagrad(p, gs, lr, lr_decay=0.0, weight_decay=0.0, initial_accumulator_value=0.0, eps=1e-10):
    s = np.full_like(p, initial_accumulator_value)
    out = []
    for t, g in enumerate(gs, start=1):
        g = g + weight_decay * p
        clr = lr / (1 + (t - 1) * lr_decay)
        s = s + g * g
        p = p - clr * g / (np.sqrt(s) + eps)
        out.append(p)
    return out


def ref_lion(p, gs, lr, b1=0.9, b2=0.99, weight_decay=0.0):
    m = np.zeros_like(p)
    out = []
    for g in gs:
        p = p * (1 - lr * weight_decay)
        p = p - lr * np.sign(b1 * m + (1 - b1) * g)
        m = b2 * m + (1 - b2) * g
        out.append(p)
    return out


def ref_adamax(p, gs, lr, b1=0.9, b2=0.999, eps=1e-8, weight_decay=0.0):
    m = u = np.zeros_like(p)
    out = []
    for t, g in enumerate(gs, start=1):
        g = g + weight_decay * p
        m = b1 * m + (1 - b1) * g
        u = np.maximum(b2 * u, np.abs(g) + eps)
        p = p - lr / (1 - b1 ** t) * m / u
        out.append(p)
    return out


def _decay(p, g, lr, weight_decay, decoupled):
    """(p, g) after weight decay: L2 added to the gradient, or decoupled (p shrunk first)."""
    return (p * (1 - lr * weight_decay), g) if decoupled else (p, g + weight_decay * p)


def ref_nadam(p, gs, lr, b1=0.9, b2=0.999, eps=1e-8, weight_decay=0.0, momentum_decay=4e-3, decoupled=False):
    m = v = np.zeros_like(p)
    product, out = 1.0, []
    for t, g in enumerate(gs, start=1):
        p, g = _decay(p, g, lr, weight_decay, decoupled)
        mu_t = b1 * (1 - 0.5 * 0.96 ** (t * momentum_decay))
        mu_next = b1 * (1 - 0.5 * 0.96 ** ((t + 1) * momentum_decay))
        product *= mu_t
        m = b1 * m + (1 - b1) * g
        v = b2 * v + (1 - b2) * g * g
        denom = np.sqrt(v / (1 - b2 ** t)) + eps
        p = p - lr * (1 - mu_t) / (1 - product) * g / denom - lr * mu_next / (1 - product * mu_next) * m / denom
        out.append(p)
    return out


def ref_radam(p, gs, lr, b1=0.9, b2=0.999, eps=1e-8, weight_decay=0.0, decoupled=False):
    m = v = np.zeros_like(p)
    rho_inf, out = 2 / (1 - b2) - 1, []
    for t, g in enumerate(gs, start=1):
        p, g = _decay(p, g, lr, weight_decay, decoupled)
        m = b1 * m + (1 - b1) * g
        v = b2 * v + (1 - b2) * g * g
        m_hat = m / (1 - b1 ** t)
        rho_t = rho_inf - 2 * t * b2 ** t / (1 - b2 ** t)
        if rho_t > 5:
            rect = math.sqrt((rho_t - 4) * (rho_t - 2) * rho_inf / ((rho_inf - 4) * (rho_inf - 2) * rho_t))
            p = p - lr * m_hat * rect * math.sqrt(1 - b2 ** t) / (np.sqrt(v) + eps)  # eps before the correction
        else:
            p = p - lr * m_hat
        out.append(p)
    return out


def ref_adadelta(p, gs, lr, rho=0.9, eps=1e-6, weight_decay=0.0):
    square = delta_square = np.zeros_like(p)
    out = []
    for g in gs:
        g = g + weight_decay * p
        square = rho * square + (1 - rho) * g * g
        delta = np.sqrt(delta_square + eps) / np.sqrt(square + eps) * g
        delta_square = rho * delta_square + (1 - rho) * delta * delta
        p = p - lr * delta
        out.append(p)
    return out


def ref_rprop(p, gs, lr, etas=(0.5, 1.2), step_sizes=(1e-6, 50.0)):
    previous, step, out = np.zeros_like(p), np.full_like(p, lr), []
    for g in gs:
        g = g.copy()
        agree = g * previous
        step = np.clip(np.where(agree > 0, step * etas[1], np.where(agree < 0, step * etas[0], step)), *step_sizes)
        g[agree < 0] = 0  # a flipped sign: the step shrinks and this one is skipped
        p = p - np.sign(g) * step
        previous = g
        out.append(p)
    return out


def maximizing(ref):
    """PyTorch's maximize=True: the same algorithm on the negated gradients."""
    return lambda p, gs, maximize, **hyper: ref(p, [-g for g in gs], **hyper)


CASES = [
    (optim.sgd, ref_sgd, dict(lr=0.1)),
    (optim.sgd, ref_sgd, dict(lr=0.1, momentum=0.9)),
    (optim.sgd, ref_sgd, dict(lr=0.1, momentum=0.9, dampening=0.3, weight_decay=0.01)),
    (optim.sgd, ref_sgd, dict(lr=0.05, momentum=0.8, nesterov=True, weight_decay=0.1)),
    (optim.adam, ref_adam, dict(lr=0.01)),
    (optim.adam, ref_adam, dict(lr=0.01, weight_decay=0.1, amsgrad=True)),
    (optim.adamw, lambda p, gs, **h: ref_adam(p, gs, decoupled=True, **h), dict(lr=0.01, weight_decay=0.1)),
    (optim.rmsprop, ref_rmsprop, dict(lr=0.01)),
    (optim.rmsprop, ref_rmsprop, dict(lr=0.01, momentum=0.9, centered=True, weight_decay=0.01)),
    (optim.adagrad, ref_adagrad, dict(lr=0.1)),
    (optim.adagrad, ref_adagrad, dict(lr=0.1, lr_decay=0.1, weight_decay=0.05, initial_accumulator_value=0.1)),
    (optim.lion, ref_lion, dict(lr=0.01, weight_decay=0.1)),
    (optim.adamax, ref_adamax, dict(lr=0.01, weight_decay=0.1)),
    (optim.nadam, ref_nadam, dict(lr=0.01, weight_decay=0.1)),
    (optim.radam, ref_radam, dict(lr=0.01, weight_decay=0.1)),
    (optim.radam, ref_radam, dict(lr=0.01, eps=1e-3)),  # where eps goes shows
    (optim.nadam, ref_nadam, dict(lr=0.01, weight_decay=0.1, decoupled_weight_decay=True)),
    (optim.radam, ref_radam, dict(lr=0.01, weight_decay=0.1, decoupled_weight_decay=True)),
    (optim.adam, ref_adam, dict(lr=0.01, weight_decay=0.1, decoupled_weight_decay=True)),
    (optim.adadelta, ref_adadelta, dict(lr=1.0)),
    (optim.adadelta, ref_adadelta, dict(lr=0.5, rho=0.8, eps=1e-5, weight_decay=0.1)),
    (optim.rprop, ref_rprop, dict(lr=0.02)),
    (optim.rprop, ref_rprop, dict(lr=0.02, etas=(0.4, 1.3), step_sizes=(1e-3, 0.05))),
    (optim.adamw, maximizing(lambda p, gs, **h: ref_adam(p, gs, decoupled=True, **h)),
     dict(lr=0.01, weight_decay=0.1, maximize=True)),
    (optim.sgd, maximizing(ref_sgd), dict(lr=0.1, momentum=0.9, weight_decay=0.01, maximize=True)),
    (optim.rprop, maximizing(ref_rprop), dict(lr=0.02, maximize=True)),
]


@pytest.mark.parametrize("make,ref,hyper", CASES, ids=lambda c: getattr(c, "__name__", str(c)))
def test_optimizer_matches_pytorch_formula(make, ref, hyper):
    p0 = np.random.default_rng(1).standard_normal((3, 2))
    gs = grads_sequence()
    renamed = {"decoupled_weight_decay": "decoupled"}  # the references' own name
    expected = ref(p0, gs, **{renamed.get(k, k): v for k, v in hyper.items()})
    opt = make(hyper["lr"], **{k: v for k, v in hyper.items() if k != "lr"})
    params = {"w": fg.asarray(p0)}
    state = opt.init(params)
    for g, want in zip(gs, expected):
        updates, state = opt.update({"w": fg.asarray(g)}, state, params)
        params = optim.apply_updates(params, updates)
        assert_close(params["w"], want, rtol=1e-10, atol=1e-12)


def test_updates_keep_float32_and_state_is_a_pytree():
    params = {"w": fg.zeros((2,)), "b": fg.zeros(())}
    opt = optim.adamw(1e-3)
    state = opt.init(params)
    updates, state = opt.update({"w": fg.ones(2), "b": fg.ones(())}, state, params)
    assert optim.apply_updates(params, updates)["w"].dtype == fg.float32
    assert all(isinstance(leaf, fg.Array) for leaf in fg.tree_leaves(state))


def test_schedules_match_pytorch_lr_schedulers():
    step = optim.step_schedule(0.1, step_size=3, gamma=0.5)
    assert [step(t) for t in range(7)] == pytest.approx([0.1] * 3 + [0.05] * 3 + [0.025])
    cos = optim.cosine_schedule(0.1, decay_steps=10, alpha=0.1)
    for t in range(11):  # CosineAnnealingLR's closed form with eta_min = 0.01
        assert cos(t) == pytest.approx(0.01 + 0.09 * (1 + math.cos(math.pi * t / 10)) / 2)
    assert cos(25) == pytest.approx(0.01)
    exp = optim.exponential_schedule(1.0, 0.9)
    assert exp(3) == pytest.approx(0.729)
    warm = optim.warmup_cosine_schedule(1.0, warmup_steps=4, decay_steps=14, end_value=0.1)
    assert [warm(t) for t in range(5)] == pytest.approx([0, 0.25, 0.5, 0.75, 1.0])
    assert warm(9) == pytest.approx(0.1 + 0.9 * 0.5) and warm(14) == pytest.approx(0.1)
    assert optim.constant_schedule(0.3)(100) == 0.3


def test_optax_style_schedules_eagerly_and_under_jit():
    poly = optim.polynomial_schedule(1.0, 0.1, power=2.0, transition_steps=10, transition_begin=2)
    expected = [1.0, 1.0, 1.0] + [0.9 * (1 - k / 10) ** 2 + 0.1 for k in range(1, 11)] + [0.1]
    assert [poly(t) for t in range(14)] == pytest.approx(expected)
    multi = optim.piecewise_constant_schedule(1.0, {3: 0.5, 6: 0.1})
    assert [multi(t) for t in range(8)] == pytest.approx([1, 1, 1, 0.5, 0.5, 0.5, 0.05, 0.05])
    joined = optim.join_schedules([optim.linear_schedule(0.0, 1.0, 4), optim.cosine_schedule(1.0, 4)], [4])
    assert [joined(t) for t in range(9)] == pytest.approx(
        [0, 0.25, 0.5, 0.75, 1.0] + [(1 + math.cos(math.pi * k / 4)) / 2 for k in range(1, 5)])
    for schedule, values in ((poly, expected), (multi, [1, 1, 1, 0.5, 0.5, 0.5, 0.05, 0.05])):
        traced = fg.jit(schedule)
        assert [float(traced(fg.asarray(t))) for t in range(len(values))] == pytest.approx(values, rel=1e-6)
    with pytest.raises(ValueError, match="one more schedule than boundaries"):
        optim.join_schedules([poly], [3])


def test_clip_by_value():
    updates, _ = optim.clip(0.5).update({"g": fg.asarray(np.array([-2.0, 0.3, 0.9]))}, ())
    assert_close(updates["g"], [-0.5, 0.3, 0.5])


def test_schedule_drives_the_learning_rate():
    sched = optim.step_schedule(1.0, step_size=2, gamma=0.1)
    opt = optim.sgd(sched)
    params = fg.zeros(())
    state = opt.init(params)
    seen = []
    for _ in range(4):
        updates, state = opt.update(fg.ones(()), state, params)
        seen.append(-float(updates))
    assert seen == pytest.approx([1.0, 1.0, 0.1, 0.1])


def test_clip_by_global_norm():
    grads = {"a": fg.asarray(np.array([3.0, 0.0])), "b": fg.asarray(np.array([4.0]))}
    clipped, _ = optim.clip_by_global_norm(1.0).update(grads, (), None)
    assert_close(clipped["a"], [3 / (5 + 1e-6), 0], rtol=1e-7)
    same, _ = optim.clip_by_global_norm(10.0).update(grads, (), None)
    assert_close(same["b"], [4.0])
    assert float(optim.global_norm(grads)) == pytest.approx(5.0)
    with pytest.raises(ValueError, match="Invalid max_norm value: -1.0"):
        optim.clip_by_global_norm(-1.0)  # would flip every gradient


def test_sgd_refuses_nesterov_without_momentum_as_pytorch():
    for bad in (dict(nesterov=True), dict(nesterov=True, momentum=0.9, dampening=0.1)):
        with pytest.raises(ValueError, match="Nesterov momentum requires a momentum and zero dampening"):
            optim.sgd(0.1, **bad)


def test_multi_steps_averages_micro_batches():
    gs = grads_sequence((2,))
    opt = optim.multi_steps(optim.sgd(0.5), every_k=3)
    params = fg.asarray(np.zeros(2))
    state = opt.init(params)
    for i, g in enumerate(gs):
        updates, state = opt.update(fg.asarray(g), state, params)
        if i % 3 < 2:
            assert_close(updates, [0, 0])
        params = optim.apply_updates(params, updates)
    expected = -0.5 * (np.mean(gs[:3], axis=0) + np.mean(gs[3:], axis=0))
    assert_close(params, expected, rtol=1e-12)



def test_multi_steps_object_sums_or_averages_on_a_schedule_as_optaxs():
    """optax.MultiSteps: every_k_schedule a function of the inner steps taken (2, then 3, ...),
    use_grad_mean=False sums the micro-batches, has_updated says when the inner optimiser stepped."""
    gs = grads_sequence((2,))[:5]
    opt = optim.MultiSteps(optim.sgd(0.5), every_k_schedule=lambda step: 2 + step, use_grad_mean=False)
    params = fg.asarray(np.zeros(2))
    state, stepped = opt.init(params), []
    assert not bool(opt.has_updated(state))
    for g in gs:
        updates, state = opt.update(fg.asarray(g), state, params)
        params = optim.apply_updates(params, updates)
        stepped.append(bool(opt.has_updated(state)))
    assert stepped == [False, True, False, False, True]
    assert_close(params, -0.5 * (np.sum(gs[:2], axis=0) + np.sum(gs[2:5], axis=0)), rtol=1e-12)
    assert opt.gradient_transformation().init is opt.init and opt.inner_opt is not None
    with pytest.raises(ValueError, match="every_k must be an int >= 1"):
        optim.MultiSteps(optim.sgd(0.5), every_k_schedule=0)

def test_apply_if_finite_skips_bad_steps():
    opt = optim.apply_if_finite(optim.sgd(1.0, momentum=0.5))
    params = fg.asarray(np.zeros(2))
    state = opt.init(params)
    updates, state = opt.update(fg.asarray(np.array([1.0, np.inf])), state, params)
    assert_close(updates, [0, 0])
    assert int(state.notfinite_count) == 1
    updates, state = opt.update(fg.asarray(np.array([1.0, 1.0])), state, params)
    assert_close(updates, [-1, -1])  # momentum buffer untouched by the skipped step
    assert int(state.total_notfinite) == 1 and int(state.notfinite_count) == 0


def test_weight_decay_needs_params():
    opt = optim.adamw(0.1)
    state = opt.init(fg.zeros(2))
    with pytest.raises(ValueError, match="needs the current parameters"):
        opt.update(fg.ones(2), state)
