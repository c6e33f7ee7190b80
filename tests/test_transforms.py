"""grad / value_and_grad / vjp / jvp / jacobians / hessian, custom rules and checkpointing."""
from collections import namedtuple

import numpy as np
import pytest
from hypothesis import given
from hypothesis import strategies as st

import funcgrad as fg
import funcgrad.numpy as fnp
from funcgrad import nn

from .helpers import assert_close, floats_array, numeric_grad, shapes

RNG = np.random.default_rng(1)


def mlp_params(rng=RNG, n_in=3, n_hidden=5, n_out=2):
    return {"w1": rng.standard_normal((n_in, n_hidden)), "b1": rng.standard_normal(n_hidden),
            "w2": rng.standard_normal((n_hidden, n_out)), "b2": rng.standard_normal(n_out)}


def loss_fn(params, x, y):
    h = fnp.tanh(x @ params["w1"] + params["b1"])
    pred = h @ params["w2"] + params["b2"]
    return fnp.mean((pred - y) ** 2)


def test_issue_example_mlp_gradients_match_finite_differences():
    params = mlp_params()
    x, y = RNG.standard_normal((4, 3)), RNG.standard_normal((4, 2))
    grads = fg.grad(loss_fn)(params, x, y)
    assert fg.tree_structure(grads) == fg.tree_structure(params)
    for name, p in params.items():
        def along(v, name=name):
            return loss_fn({**params, name: v}, x, y)
        assert_close(grads[name], numeric_grad(along, p), rtol=1e-6, atol=1e-8)
    loss, grads2 = fg.value_and_grad(loss_fn)(params, x, y)
    assert_close(loss, loss_fn(params, x, y))
    for k in params:
        assert_close(grads2[k], grads[k])


def test_float32_params_give_float32_grads():
    params = {k: v.astype(np.float32) for k, v in mlp_params().items()}
    x, y = RNG.standard_normal((4, 3)).astype(np.float32), RNG.standard_normal((4, 2)).astype(np.float32)
    grads = fg.grad(loss_fn)(params, x, y)
    ref = fg.grad(loss_fn)({k: v.astype(np.float64) for k, v in params.items()}, x.astype(np.float64), y)
    for k in params:
        assert grads[k].dtype == fg.float32
        assert_close(grads[k], ref[k], rtol=2e-3, atol=2e-4)


def test_argnums_tuple_negative_and_kwargs():
    f = lambda a, b, c, scale=1.0: scale * fnp.sum(a * b * c)  # noqa: E731
    a, b, c = np.array([1.0, 2.0]), np.array([3.0, 4.0]), np.array([5.0, 6.0])
    ga, gc = fg.grad(f, argnums=(0, -1))(a, b, c, scale=2.0)
    assert_close(ga, 2 * b * c)
    assert_close(gc, 2 * a * b)
    assert_close(fg.grad(f, argnums=1)(a, b, c), a * c)


def test_allow_int_holds_integer_inputs_constant_with_float0_gradients():
    f = lambda p: fnp.sum(p["w"] * p["steps"]) + p["flag"] * 1.0  # noqa: E731  a model with a counter and a flag
    params = {"w": np.array([1.0, -2.0, 0.5]), "steps": np.array([3, 4, 5]), "flag": True}
    with pytest.raises(TypeError, match=r"argument 0 at \['flag'\] has dtype bool; only floating-point"):
        fg.grad(f)(params)
    value, g = fg.value_and_grad(f, allow_int=True)(params)
    assert float(value) == 1.0 * 3 - 2.0 * 4 + 0.5 * 5 + 1.0
    assert_close(g["w"], [3.0, 4.0, 5.0])
    assert g["steps"].dtype == fg.dtypes.float0 and g["steps"].shape == (3,) and g["steps"].nbytes == 0
    assert g["flag"].dtype == fg.dtypes.float0 and g["flag"].shape == ()
    ga, gn = fg.grad(lambda x, n: fnp.sum(x * n), argnums=(0, 1), allow_int=True)(np.ones(2), np.array([7, 9]))
    assert_close(ga, [7.0, 9.0])
    assert gn.dtype == fg.dtypes.float0
    jx, jn = fg.jacrev(lambda x, n: x * n, argnums=(0, 1), allow_int=True)(np.ones(2), np.array([7, 9]))
    assert_close(jx, np.diag([7.0, 9.0]))
    assert jn.dtype == np.int64 and jn.shape == (2, 2) and not np.any(np.asarray(jn))


def test_has_aux():
    def f(x):
        y = fnp.sum(x ** 2)
        return y, {"norm": fnp.sqrt(y), "n": 3}
    g, aux = fg.grad(f, has_aux=True)(np.array([3.0, 4.0]))
    assert_close(g, [6.0, 8.0])
    assert float(aux["norm"]) == 5.0 and aux["n"] == 3
    assert isinstance(aux["norm"], fg.Array)  # the value, not a tracer
    (v, aux), g = fg.value_and_grad(f, has_aux=True)(np.array([3.0, 4.0]))
    assert float(v) == 25.0


def test_higher_order_derivatives():
    f = lambda x: x ** 4  # noqa: E731
    assert float(fg.grad(f)(2.0)) == 32.0
    assert float(fg.grad(fg.grad(f))(2.0)) == 48.0
    assert float(fg.grad(fg.grad(fg.grad(f)))(2.0)) == 48.0
    assert float(fg.grad(fg.grad(fg.grad(fg.grad(f))))(2.0)) == 24.0
    assert_close(fg.grad(fg.grad(fnp.sin))(np.float64(0.7)), -np.sin(0.7))


def test_hessian_of_quadratic_form():
    a = RNG.standard_normal((3, 3))
    f = lambda x: x @ a @ x + fnp.sum(fnp.sin(x))  # noqa: E731
    x = RNG.standard_normal(3)
    assert_close(fg.hessian(f)(x), a + a.T - np.diag(np.sin(x)), atol=1e-10)


@given(data=st.data())
def test_jacfwd_equals_jacrev_and_finite_differences(data):
    shape = data.draw(shapes(min_dims=0, max_dims=2, min_side=1, max_side=3))
    x = floats_array(data.draw, shape, -1, 1)
    w = RNG.standard_normal((x.size, 2))

    def f(v):
        flat = fnp.reshape(v, (-1,))
        return {"a": fnp.tanh(flat @ w), "b": fnp.sum(fnp.exp(v))}

    jr, jf = fg.jacrev(f)(x), fg.jacfwd(f)(x)
    assert jr["a"].shape == (2,) + shape and jr["b"].shape == shape
    assert_close(jr["a"], jf["a"], atol=1e-12)
    assert_close(jr["b"], jf["b"], atol=1e-12)
    for k in range(2):
        assert_close(jr["a"][k], numeric_grad(lambda v: f(v)["a"][k], x), rtol=1e-6, atol=1e-8)


def test_jacobians_with_several_argnums():
    f = lambda x, y: x[:, None] * y[None, :]  # noqa: E731
    x, y = np.array([1.0, 2.0]), np.array([3.0, 4.0, 5.0])
    jx, jy = fg.jacrev(f, argnums=(0, 1))(x, y)
    assert jx.shape == (2, 3, 2) and jy.shape == (2, 3, 3)
    jx2, jy2 = fg.jacfwd(f, argnums=(0, 1))(x, y)
    assert_close(jx, jx2)
    assert_close(jy, jy2)
    assert_close(jx[1, 2], [0, 5])


def test_jvp_and_vjp_against_each_other():
    f = lambda x, y: (fnp.sin(x) * y, fnp.sum(x * y))  # noqa: E731
    x, y = RNG.standard_normal(3), RNG.standard_normal(3)
    tx, ty = RNG.standard_normal(3), RNG.standard_normal(3)
    out, tout = fg.jvp(f, (x, y), (tx, ty))
    assert_close(out[0], np.sin(x) * y)
    assert_close(tout[0], np.cos(x) * tx * y + np.sin(x) * ty)
    assert_close(tout[1], np.sum(tx * y + x * ty))
    out2, f_vjp = fg.vjp(f, x, y)
    ct = (RNG.standard_normal(3), np.array(0.7))
    gx, gy = f_vjp(ct)
    assert_close(np.dot(gx, tx) + np.dot(gy, ty), np.dot(ct[0], tout[0]) + 0.7 * float(tout[1]))


def test_vjp_has_aux_and_pytree_primals():
    params = {"a": np.array([1.0, 2.0]), "b": (np.array(3.0),)}
    out, f_vjp, aux = fg.vjp(lambda p: (p["a"] * p["b"][0], "aux"), params, has_aux=True)
    (g,) = f_vjp(np.ones(2))
    assert aux == "aux"
    assert_close(g["a"], [3, 3])
    assert_close(g["b"][0], 3.0)


def test_python_control_flow_on_traced_values():
    def f(x):
        y = x
        while fnp.sum(y ** 2) < 100.0:
            y = y * 2.0
        if y[0] > 0:
            return fnp.sum(y * y)
        return fnp.sum(-y)
    x = np.array([1.0, 1.0])
    assert_close(fg.grad(f)(x), [2 * 8 * 8, 2 * 8 * 8])  # y = 8x after 3 doublings
    assert_close(fg.grad(f)(-x), [-8, -8])  # at v = -x: y = 8v, f = sum(-y) = -8 sum(v)


def test_stop_gradient():
    f = lambda x: fnp.sum(x * fg.stop_gradient(x))  # noqa: E731
    assert_close(fg.grad(f)(np.array([1.0, 2.0])), [1.0, 2.0])
    assert_close(fg.jvp(f, (np.array([1.0, 2.0]),), (np.ones(2),))[1], 3.0)
    tree = fg.stop_gradient({"a": fg.array([1.0])})
    assert isinstance(tree["a"], fg.Array)


def test_no_perturbation_confusion():
    # d/dx [x * d/dy (x + y)] = d/dx x = 1   (Siskind & Pearlmutter)
    f = lambda x: x * fg.grad(lambda y: x + y)(1.0)  # noqa: E731
    assert float(fg.grad(f)(3.0)) == 1.0
    g = lambda x: fg.grad(lambda y: x * y)(2.0)  # noqa: E731
    assert float(fg.grad(g)(3.0)) == 1.0
    h = lambda x: fg.jvp(lambda y: x * y, (2.0,), (1.0,))[1]  # noqa: E731
    assert float(fg.jvp(h, (3.0,), (1.0,))[1]) == 1.0


def test_grad_of_constant_function_is_zero():
    g = fg.grad(lambda x, y: fnp.sum(y))(np.array([1.0, 2.0]), np.array([3.0]))
    assert_close(g, [0.0, 0.0])


def test_pytree_containers_namedtuple_and_dataclass():
    Pair = namedtuple("Pair", ["w", "b"])

    @fg.register_dataclass
    class Affine:
        w: object
        b: object
        name: str = fg.static_field(default="affine")

    for params in [Pair(np.array([2.0]), np.array([1.0])), Affine(np.array([2.0]), np.array([1.0])),
                   [np.array([2.0]), np.array([1.0])], (np.array([2.0]), np.array([1.0]))]:
        w_b = (lambda p: (p.w, p.b)) if hasattr(params, "w") else (lambda p: (p[0], p[1]))
        g = fg.grad(lambda p: fnp.sum(w_b(p)[0] * 3.0 + w_b(p)[1] ** 2))(params)
        assert type(g) is type(params)
        gw, gb = w_b(g)
        assert_close(gw, [3.0])
        assert_close(gb, [2.0])


def test_custom_vjp_replaces_the_gradient():
    @fg.custom_vjp
    def clip_gradient(x):
        return x

    clip_gradient.defvjp(lambda x: (x, None), lambda res, g: (fnp.clip(g, -1.0, 1.0),))
    g = fg.grad(lambda x: fnp.sum(clip_gradient(x) * np.array([0.5, 5.0, -3.0])))(np.ones(3))
    assert_close(g, [0.5, 1.0, -1.0])
    assert_close(clip_gradient(np.array([2.0])), [2.0])


def test_custom_vjp_stable_log1pexp_residuals_nondiff_and_second_order():
    @fg.custom_vjp
    def log1pexp(x):
        return fnp.log1p(fnp.exp(x))

    def fwd(x):
        return log1pexp(x), x

    def bwd(x, g):
        return (g * nn.sigmoid(x),)

    log1pexp.defvjp(fwd, bwd)
    x = np.array([-3.0, 0.0, 50.0])
    assert_close(fg.grad(lambda v: fnp.sum(log1pexp(v)))(x), 1 / (1 + np.exp(-x)))
    s = 1 / (1 + np.exp(-x))
    assert_close(fg.grad(lambda v: fnp.sum(fg.grad(lambda u: fnp.sum(log1pexp(u)))(v)))(x), s * (1 - s))
    assert_close(fg.jacrev(fg.grad(lambda v: fnp.sum(log1pexp(v))))(x), np.diag(s * (1 - s)), atol=1e-12)
    with pytest.raises(TypeError, match="forward-mode"):
        fg.jvp(log1pexp, (x,), (x,))

    @fg.custom_vjp
    def scale(factor, x):
        return factor * x

    scale = fg.custom_vjp(scale.fun, nondiff_argnums=(0,))
    scale.defvjp(lambda f, x: (f * x, None), lambda f, res, g: (g * f * 10,))
    assert_close(fg.grad(lambda v: fnp.sum(scale(2.0, v)))(np.ones(2)), [20.0, 20.0])


def test_custom_vjp_errors():
    @fg.custom_vjp
    def f(x):
        return x
    with pytest.raises(TypeError, match="defvjp"):
        f(np.ones(2))
    f.defvjp(lambda x: (x, None), lambda res, g: g)  # not a tuple
    with pytest.raises(TypeError, match="tuple of 1"):
        fg.grad(lambda v: fnp.sum(f(v)))(np.ones(2))


def test_checkpoint_recomputes_and_matches():
    calls = []

    def block(x, w):
        calls.append(1)
        return fnp.tanh(x @ w) * 2.0

    w = RNG.standard_normal((3, 3))
    x = RNG.standard_normal((2, 3))
    plain = fg.grad(lambda w: fnp.sum(block(block(x, w), w)))(w)
    calls.clear()
    remat = fg.grad(lambda w: fnp.sum(fg.checkpoint(block)(fg.checkpoint(block)(x, w), w)))(w)
    assert len(calls) == 4  # each block once forward, once more in the backward pass
    assert_close(remat, plain, atol=1e-12)
    fg.check_grads(lambda w: fnp.sum(fg.checkpoint(block)(x, w)), (w,), order=2)


def test_checkpoint_stores_fewer_nodes():
    def block(x):
        for _ in range(10):
            x = fnp.sin(x)
        return x

    def nodes_kept(f):
        seen = {}

        def probe(x):
            out = f(x)
            stack = [out._node]
            while stack:
                n = stack.pop()
                if id(n) not in seen:
                    seen[id(n)] = n
                    stack.extend(n.parents[1::3])
            return fnp.sum(out)
        fg.grad(probe)(np.ones(3))
        return len(seen)

    assert nodes_kept(fg.checkpoint(block)) < nodes_kept(block) - 5


def test_grad_frees_each_activation_once_its_node_is_done():
    """The backward pass drops a node's arguments as soon as its cotangents are out and lets go of
    the node: by the time the first operation's rule runs, every later activation is freed."""
    import weakref
    later = []

    @fg.custom_vjp
    def first(x):
        return fnp.sin(x)

    def first_bwd(x, g):
        alive.append(sum(ref() is not None for ref in later))
        return (g * fnp.cos(x),)
    first.defvjp(lambda x: (fnp.sin(x), x), first_bwd)
    alive = []

    def f(x):
        z = first(x)
        for _ in range(6):
            z = fnp.tanh(z) * 1.5
            later.append(weakref.ref(z._value._value))  # the activation's NumPy data
        return fnp.sum(z)
    x = np.linspace(-1, 1, 5)
    g = fg.grad(f)(x)
    assert alive == [0]
    expected = np.cos(x)
    z = np.sin(x)
    for _ in range(6):
        expected = expected * 1.5 * (1 - np.tanh(z) ** 2)
        z = np.tanh(z) * 1.5
    assert_close(g, expected, atol=1e-12)


def test_using_a_leaked_tracer_raises():
    leaked = []

    def f(x):
        leaked.append(x)
        return fnp.sum(x)
    fg.grad(f)(np.ones(2))
    with pytest.raises(fg.TracerLeakError, match="grad"):
        fnp.sin(leaked[0]) * 2.0


def test_arrays_built_from_traced_values_stay_on_the_tape():
    assert float(fg.grad(lambda x: fnp.sum(fnp.array([x, 2 * x])))(1.0)) == 3.0  # jax.numpy: 3.0
    assert float(fg.grad(lambda x: fnp.mean([x, x + 2]))(1.0)) == 1.0
    assert float(fg.grad(lambda x: fnp.sum(fnp.asarray([[x, 1.0], [3.0, x * x]])))(2.0)) == 5.0
    assert fnp.array([fnp.ones(2, dtype=fg.float64), fnp.zeros(2, dtype=fg.float64)]).dtype == fg.float64
    assert fnp.array([fnp.asarray(1, dtype=fg.int32), 2]).dtype == fg.int32  # a Python int is weak
    assert fnp.array([fnp.asarray(1, dtype=fg.int32), 2.5]).dtype == fg.float32
    with pytest.raises(fg.ShapeError, match="shapes"):
        fnp.array([fnp.ones(2), fnp.ones(3)])
    assert fg.jit(lambda x: fnp.array([x, x * 3.0]))(fnp.asarray(2.0)).tolist() == [2.0, 6.0]


def test_linspace_is_differentiable_in_its_endpoints():
    jac = fg.jacrev(lambda s: fnp.linspace(s, fnp.asarray(1.0), 5))(fnp.asarray(0.0))
    assert_close(jac, [1.0, 0.75, 0.5, 0.25, 0.0])  # jax.numpy's
    jac = fg.jacrev(lambda s: fnp.linspace(0.0, s, 5))(fnp.asarray(2.0))
    assert_close(jac, [0.0, 0.25, 0.5, 0.75, 1.0])
    x = fnp.linspace(fnp.asarray(0.0, dtype=fg.float64), 1.0, 7)
    assert x.dtype == fg.float64 and x.numpy().tolist() == np.linspace(0.0, 1.0, 7).tolist()
    assert fnp.linspace(0, 1, 5).dtype == fg.float32
    assert_close(fnp.linspace(fnp.asarray([0.0, 1.0]), 2.0, 3), np.linspace([0.0, 1.0], 2.0, 3))


@pytest.mark.parametrize("name, second", [("logaddexp", 0.25), ("logaddexp2", 0.17328679513998632),
                                         ("hypot", 0.3535533905932738)])
def test_second_derivatives_at_equal_arguments(name, second):
    """PyTorch's values at x1 == x2 == 1; built on maximum/minimum they were 0."""
    f = getattr(fnp, name)
    one = fnp.asarray(1.0, dtype=fg.float64)
    assert abs(float(fg.grad(fg.grad(lambda x: f(x, one)))(one)) - second) < 1e-12
    x = np.array([0.3, -1.2, 2.0])
    fg.check_grads(lambda v: f(v, fnp.asarray([0.3, 0.5, 2.0], dtype=fg.float64)), (x,), order=2)
    # a Python float beside a float64 array keeps its precision (was rounded to float32)
    got = f(fnp.asarray(np.array([1e-3])), 0.1).numpy()[0]
    assert abs(got - getattr(np, name)(1e-3, 0.1)) < 1e-15
