"""lax-style control flow (switch, loops, scan), custom_jvp, linearize, eval_shape and disable_jit."""
import numpy as np
import pytest

import funcgrad as fg
import funcgrad.numpy as fnp

from .helpers import assert_close


def test_fori_loop_runs_eagerly_under_jit_and_grad():
    power = lambda x: fg.fori_loop(0, 3, lambda i, v: v * x + i, fnp.ones_like(x))  # noqa: E731
    x = np.array([2.0, -0.5])
    expected = ((x + 0) * x + 1) * x + 2
    assert_close(power(x), expected)
    assert_close(fg.jit(power)(x), expected)
    assert_close(fg.grad(lambda v: fnp.sum(power(v)))(x), 3 * x ** 2 + 1)
    with pytest.raises(fg.ConcretizationError, match="fori_loop: the upper bound is traced"):
        fg.jit(lambda n: fg.fori_loop(0, n, lambda i, v: v + 1.0, 0.0))(fnp.asarray(3))


def test_while_loop_needs_a_concrete_condition():
    assert fg.while_loop(lambda v: v < 100, lambda v: v * 3, 1) == 243
    assert_close(fg.grad(lambda x: fg.while_loop(lambda v: v < 10.0, lambda v: v * x, x))(2.0), 4 * 2.0 ** 3)
    with pytest.raises(fg.ConcretizationError, match="while_loop: the loop condition depends on a value traced"):
        fg.jit(lambda x: fg.while_loop(lambda v: v < 10, lambda v: v * 2, x))(fnp.asarray(1.0))



def test_loops_and_traced_branches_keep_one_type_as_jax_lax():
    """A loop whose value changes shape or dtype, a non-scalar loop condition, or traced branches of
    different shapes raise a TypeError naming both (jax.lax's rule; eagerly such a loop ran and gave
    a value that jit could not reproduce)."""
    with pytest.raises(TypeError, match=r"fori_loop: the value body_fun returned at i=0 has shape \(5,\)"):
        fg.lax.fori_loop(0, 3, lambda i, c: fnp.ones(5), fnp.ones(2))
    with pytest.raises(TypeError, match="dtype float32 .* but init_val has shape \\(2,\\) dtype int32"):
        fg.lax.fori_loop(0, 3, lambda i, c: c * 1.0, fnp.ones(2, dtype=fg.int32))
    with pytest.raises(TypeError, match="while_loop: the value body_fun returned differs from init_val in structure"):
        fg.lax.while_loop(lambda c: c[0] < 3, lambda c: (c[0] + 1, c[1], c[1]), (0, fnp.ones(2)))
    with pytest.raises(TypeError, match=r"while_loop: cond_fun must return a scalar boolean, got shape \(2,\)"):
        fg.lax.while_loop(lambda c: c > 0, lambda c: c - 1, fnp.ones(2))
    with pytest.raises(TypeError, match=r"cond: false_fun's result has shape \(3,\)"):
        fg.jit(lambda a: fg.lax.cond(a.sum() > 0, lambda: a, lambda: fnp.ones(3)))(fnp.ones(2))
    with pytest.raises(TypeError, match="switch: branch 1's result differs from branch 0's in structure"):
        fg.jit(lambda i: fg.lax.switch(i, [lambda: fnp.ones(2), lambda: (fnp.ones(2),)]))(1)
    # a Python number takes the other side's dtype, as JAX's weak types; counts and arrays mix freely
    count, value = fg.lax.fori_loop(0, 3, lambda i, c: (c[0] + i, c[1] * 2.0), (0, fnp.ones(2)))
    assert int(count) == 3 and value.tolist() == [8.0, 8.0]
    assert float(fg.jit(lambda a: fg.lax.cond(a.sum() > 0, lambda: 1.0, lambda: a[0]))(fnp.ones(2))) == 1.0

def test_while_loop_under_vmap_runs_each_member_to_its_own_stop():
    def collatz_steps(n):  # a trip count that differs per member, in an integer and a float carry
        return fg.while_loop(lambda c: c[0] != 1, lambda c: (fnp.where(c[0] % 2 == 0, c[0] // 2, 3 * c[0] + 1),
                                                             c[1] + 1.5), (n, 0.0))

    def reference(n):
        steps = 0
        while n != 1:
            n, steps = (n // 2 if n % 2 == 0 else 3 * n + 1), steps + 1
        return 1.5 * steps
    ns = np.array([[1, 6, 7], [27, 2, 9]])
    ones, steps = fg.vmap(fg.vmap(collatz_steps))(ns)
    np.testing.assert_array_equal(ones, np.ones_like(ns))
    assert_close(steps, np.vectorize(reference)(ns))

    power = lambda x: fg.while_loop(lambda v: v < 10.0, lambda v: v * x, x)  # noqa: E731  x**k, k per member
    x = np.array([2.0, 3.0, 11.0, 1.5])
    k = np.array([4, 3, 1, 6])
    assert_close(fg.vmap(power)(x), x ** k)
    assert_close(fg.vmap(fg.grad(power))(x), k * x ** (k - 1.0))
    assert_close(fg.grad(lambda v: fnp.sum(fg.vmap(power)(v)))(x), k * x ** (k - 1.0))
    with pytest.raises(fg.ConcretizationError, match="while_loop: the batched loop condition depends on a value"):
        fg.jit(fg.vmap(power))(x)
    with pytest.raises(TypeError, match="cond_fun must return a scalar boolean, got shape"):
        fg.vmap(lambda v: fg.while_loop(lambda c: c < 3.0, lambda c: c + 1.0, v))(np.ones((2, 3)))


def test_scan_matches_a_python_loop():
    xs = {"a": np.arange(5.0), "b": np.arange(10.0).reshape(5, 2)}

    def step(carry, x):
        carry = carry * 0.5 + x["a"] + fnp.sum(x["b"])
        return carry, (carry, x["b"] * carry)
    carry, ys = 0.0, ([], [])
    for i in range(5):
        carry = carry * 0.5 + xs["a"][i] + xs["b"][i].sum()
        ys[0].append(carry)
        ys[1].append(xs["b"][i] * carry)
    for fn in (fg.scan, lambda *a: fg.jit(lambda x: fg.scan(step, 0.0, x))(a[2])):
        got_carry, (first, second) = fn(step, 0.0, xs)
        assert_close(got_carry, carry)
        assert_close(first, ys[0])
        assert_close(second, np.stack(ys[1]))
    carry_r, ys_r = fg.scan(lambda c, x: (c + x, c), 0.0, np.arange(4.0), reverse=True)
    assert float(carry_r) == 6.0 and np.asarray(ys_r).tolist() == [6.0, 5.0, 3.0, 0.0]
    _, empty = fg.scan(lambda c, x: (c, x * 2), 0.0, np.zeros((0, 3)))
    assert empty.shape == (0, 3)
    assert_close(fg.lax.map(lambda x: x ** 2, np.arange(3.0)), [0.0, 1.0, 4.0])
    grad = fg.grad(lambda w: fg.scan(lambda c, x: (c * w + x, None), 0.0, np.ones(3))[0])(2.0)
    assert_close(grad, 2 * 2.0 + 1)  # d/dw (w^2 + w + 1)
    with pytest.raises(ValueError, match="leading axes of xs have lengths"):
        fg.scan(lambda c, x: (c, x), 0.0, {"a": np.zeros(2), "b": np.zeros(3)})


def test_switch_clamps_and_traces():
    branches = [lambda x: x, lambda x: x * 2, lambda x: x * 3]
    assert fg.switch(1, branches, 5.0) == 10.0 and fg.switch(9, branches, 5.0) == 15.0
    traced = fg.jit(lambda i, x: fg.switch(i, branches, x))
    assert [float(traced(fnp.asarray(i), fnp.asarray(5.0))) for i in (-1, 0, 1, 2, 3)] == [5, 5, 10, 15, 15]


def test_custom_jvp_in_forward_and_reverse_mode():
    @fg.custom_jvp
    def softplus(x):
        return fnp.log1p(fnp.exp(x))

    @softplus.defjvp
    def softplus_jvp(primals, tangents):
        (x,), (t,) = primals, tangents
        return softplus(x), t * fg.nn.sigmoid(x)
    x = np.array([-1.0, 0.5, 100.0])
    sig = 1 / (1 + np.exp(-x))
    _, tangent = fg.jvp(softplus, (x,), (np.ones(3),))
    assert_close(tangent, sig)
    assert_close(fg.grad(lambda v: fnp.sum(softplus(v)))(x), sig)  # finite at 100, where autodiff gives NaN
    assert_close(fg.jit(fg.grad(lambda v: fnp.sum(softplus(v))))(x), sig)
    assert_close(fg.vmap(fg.grad(softplus))(x), sig)
    assert_close(np.diag(np.asarray(fg.hessian(lambda v: fnp.sum(softplus(v)))(x[:2]))), sig[:2] * (1 - sig[:2]))

    def scale(k, v):
        return k * fnp.sin(v)
    scaled = fg.custom_jvp(scale, nondiff_argnums=(0,))
    scaled.defjvp(lambda k, primals, tangents: (scale(k, *primals), k * fnp.cos(primals[0]) * tangents[0]))
    assert_close(fg.grad(lambda v: scaled(3.0, v))(0.5), 3 * np.cos(0.5))
    with pytest.raises(TypeError, match="has no rule"):
        fg.grad(fg.custom_jvp(fnp.sin))(1.0)


def test_custom_jvp_rules_serve_every_order_of_reverse_mode():
    """A rule that calls the function again (its output in the derivative) is used at every level
    of a nested grad: no level differentiates the body, whose derivative is NaN at 0 here."""
    @fg.custom_jvp
    def sine(x):
        return fnp.sqrt(x * x) * 0.0 + fnp.sin(x)

    @sine.defjvp
    def sine_jvp(primals, tangents):
        y = sine(primals[0])
        return y, tangents[0] * fnp.sqrt(1.0 - y * y)  # cos x for |x| < pi / 2
    derivative = fg.grad(sine)
    for x in (0.0, 0.3):
        x = np.float64(x)
        third = [fg.grad(fg.grad(derivative))(x), fg.jacfwd(fg.grad(derivative))(x), fg.grad(fg.jacfwd(derivative))(x)]
        assert_close(third, [-np.cos(x)] * 3, rtol=1e-12)
        assert_close(fg.hessian(sine)(x), -np.sin(x), atol=1e-15)


def test_linearize_eval_shape_disable_jit_and_aliases():
    out, f_jvp = fg.linearize(fnp.sin, 1.0)
    assert_close(out, np.sin(1.0))
    assert_close(f_jvp(2.0), 2 * np.cos(1.0))
    shapes = fg.eval_shape(lambda a, b: {"prod": a @ b, "total": fnp.sum(a)},
                           fg.ShapeDtypeStruct((100000, 30), fg.float32), fnp.ones((30, 4)))
    assert shapes["prod"] == fg.ShapeDtypeStruct((100000, 4), np.dtype(np.float32))
    assert shapes["total"].shape == ()
    with fg.disable_jit():
        assert fg.jit(lambda v: float(v.sum()))(fnp.ones(3)) == 3.0  # float() of a traced value would raise
    with pytest.raises(fg.ConcretizationError):
        fg.jit(lambda v: float(v.sum()))(fnp.ones(3))
    assert fg.jacobian is fg.jacrev and fg.tree_util.tree_map is fg.tree_map
    assert fg.block_until_ready({"a": fnp.ones(2)})["a"].shape == (2,)
