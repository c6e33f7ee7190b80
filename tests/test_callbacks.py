"""fg.pure_callback and fg.io_callback: results of the declared shapes and dtypes from host Python,
eagerly, at every call of a jitted function, under vmap by each vmap_method, with no derivative
unless custom_jvp gives one, and on the GPU (the simulator) through the host."""
import numpy as np
import pytest

import funcgrad as fg
import funcgrad.numpy as fnp


def _sin_callback(calls):
    def host_sin(x):
        calls.append(x.shape)
        return np.sin(x)
    return lambda x: fg.pure_callback(host_sin, fg.ShapeDtypeStruct(x.shape, x.dtype), x)


def test_pure_callback_computes_eagerly_and_at_every_jitted_call():
    calls = []
    f = _sin_callback(calls)
    x = np.array([0.0, 1.0, 2.0], np.float32)
    np.testing.assert_allclose(f(x), np.sin(x), rtol=1e-7)
    jitted = fg.jit(lambda x: f(x) * 2)
    np.testing.assert_allclose(jitted(x), 2 * np.sin(x), rtol=1e-7)
    np.testing.assert_allclose(jitted(x + 1), 2 * np.sin(x + 1), rtol=1e-7)  # the new values, not the traced ones
    assert calls == [(3,)] * 3
    calls.clear()
    fg.jit(lambda x: (f(x), x + 1)[1])(x)
    assert calls == []  # pure: a call whose result nothing reads is dropped


def test_several_results_of_several_dtypes_come_back_as_declared():
    def host(x, n, *, scale):
        return {"cos": np.cos(x) * scale, "parts": (np.arange(n), x > 0.5)}
    declared = {"cos": fg.ShapeDtypeStruct((3,), np.float32),
                "parts": (fg.ShapeDtypeStruct((4,), np.int64), fg.ShapeDtypeStruct((3,), np.bool_))}
    x = np.array([0.25, 0.5, 1.0], np.float32)
    for transform in (lambda f: f, fg.jit):
        out = transform(lambda x: fg.pure_callback(host, declared, x, 4, scale=2.0))(x)
        np.testing.assert_allclose(out["cos"], 2 * np.cos(x), rtol=1e-7)
        assert out["cos"].dtype == np.float32  # the float64 result cast to the declared dtype
        np.testing.assert_array_equal(out["parts"][0], np.arange(4))
        np.testing.assert_array_equal(out["parts"][1], x > 0.5)


@pytest.mark.parametrize("method", ["sequential", "expand_dims", "broadcast_all"])
def test_vmap_method_says_how_the_callback_takes_a_batch(method):
    seen = []

    def host(x, w):
        seen.append((x.shape, w.shape))
        return (x * w).sum(-1)

    def f(x, w):
        return fg.pure_callback(host, fg.ShapeDtypeStruct(x.shape[:-1], x.dtype), x, w, vmap_method=method)
    xs, w = np.arange(6.0).reshape(2, 3), np.array([1.0, 2.0, 3.0])
    for transform in (fg.vmap(f, in_axes=(0, None)), fg.jit(fg.vmap(f, in_axes=(0, None)))):
        np.testing.assert_allclose(transform(xs, w), xs @ w)
    expected = {"sequential": [((3,), (3,))] * 2, "expand_dims": [((2, 3), (1, 3))],
                "broadcast_all": [((2, 3), (2, 3))]}[method]
    assert seen == expected * 2


def test_vmap_without_a_method_and_a_wrong_shape_raise():
    f = _sin_callback([])
    with pytest.raises(NotImplementedError, match="vmap_method"):
        fg.vmap(f)(np.ones((2, 3)))
    with pytest.raises(ValueError, match=r"shape \(4,\), declared \(3,\)"):
        fg.pure_callback(lambda x: np.ones(4), fg.ShapeDtypeStruct((3,), np.float32), np.ones(3))
    with pytest.raises(ValueError, match="structure"):
        fg.pure_callback(lambda x: (x, x), fg.ShapeDtypeStruct((3,), np.float32), np.ones(3))
    with pytest.raises(TypeError, match="shape and dtype"):
        fg.pure_callback(lambda x: x, (3,), np.ones(3))


def test_a_callback_has_no_derivative_unless_custom_jvp_gives_one():
    f = _sin_callback([])
    x = np.array([0.5, 1.0])
    with pytest.raises(ValueError, match="custom_jvp"):
        fg.grad(lambda x: fnp.sum(f(x)))(x)

    @fg.custom_jvp
    def host_sin(x):
        return f(x)

    @host_sin.defjvp
    def _(primals, tangents):
        (x,), (t,) = primals, tangents
        return host_sin(x), fg.pure_callback(np.cos, fg.ShapeDtypeStruct(x.shape, x.dtype), x) * t
    for transform in (fg.grad, lambda g: fg.jit(fg.grad(g))):
        np.testing.assert_allclose(transform(lambda x: fnp.sum(host_sin(x)))(x), np.cos(x))
    # a callback on values that are not differentiated is fine under grad
    np.testing.assert_allclose(fg.grad(lambda y: fnp.sum(y * f(x)))(x), np.sin(x))


def test_the_callback_gets_copies_it_may_keep():
    kept = []

    def keep(x):
        kept.append(x)
        return x  # returning an argument: the result is still a new array
    step = fg.jit(lambda x: fg.pure_callback(keep, fg.ShapeDtypeStruct((2,), np.float64), x * 2) + 1)
    out = [np.asarray(step(np.array([1.0, 2.0]))), np.asarray(step(np.array([5.0, 6.0])))]
    np.testing.assert_allclose(kept, [[2.0, 4.0], [10.0, 12.0]])
    np.testing.assert_allclose(out, [[3.0, 5.0], [11.0, 13.0]])


def test_io_callback_runs_every_call_in_order_and_refuses_ordered_vmap():
    log = []

    def record(x):
        log.append(float(x.sum()))
        return np.float32(len(log))

    def step(x):
        count = fg.io_callback(record, fg.ShapeDtypeStruct((), np.float32), x)
        fg.io_callback(record, fg.ShapeDtypeStruct((), np.float32), x * 10)  # result unused: kept
        return x + count
    jitted = fg.jit(step)
    np.testing.assert_allclose(jitted(np.ones(2, np.float32)), [2.0, 2.0])
    np.testing.assert_allclose(jitted(np.ones(2, np.float32)), [4.0, 4.0])
    assert log == [2.0, 20.0, 2.0, 20.0]
    with pytest.raises(NotImplementedError, match="ordered io_callback"):
        fg.vmap(lambda x: fg.io_callback(record, fg.ShapeDtypeStruct((), np.float32), x, ordered=True))(np.ones((2, 2)))
    log.clear()
    fg.vmap(lambda x: fg.io_callback(record, fg.ShapeDtypeStruct((), np.float32), x))(np.ones((2, 2)))
    assert log == [2.0, 2.0]


def test_pure_callback_on_the_gpu_goes_through_the_host():
    x = fg.device_put(fnp.asarray(np.array([0.5, 1.5], np.float32)), "cuda")
    f = _sin_callback([])
    for transform in (lambda g: g, fg.jit):
        out = transform(lambda x: f(x) + 1)(x)
        assert out.device == x.device
        np.testing.assert_allclose(np.asarray(fg.device_get(out)), np.sin([0.5, 1.5]) + 1, rtol=1e-6)


def test_a_callback_without_results_runs_for_its_effects():
    log = []
    step = fg.jit(lambda x: (fg.io_callback(lambda v: log.append(float(v.sum())), None, x), x + 1)[1])
    np.testing.assert_allclose(step(np.ones(3)), [2.0, 2.0, 2.0])
    step(np.full(3, 2.0))
    assert log == [3.0, 6.0]
    assert fg.pure_callback(lambda v: (), (), np.ones(2)) == ()
    with pytest.raises(ValueError, match="structure"):
        fg.io_callback(lambda v: 5, None, np.ones(2))
