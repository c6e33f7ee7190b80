"""Bad input gets an error that names what was wrong, never a wrong number."""
import numpy as np
import pytest

import funcgrad as fg
import funcgrad.numpy as fnp


def test_grad_of_non_scalar_output_names_the_shape():
    with pytest.raises(TypeError, match=r"scalar.*shape \(3,\)"):
        fg.grad(lambda x: x * 2)(np.ones(3))


def test_grad_of_integer_leaf_names_its_path():
    params = {"w": np.ones(2), "layers": [{"steps": np.array([1, 2])}]}
    with pytest.raises(TypeError, match=r"argument 0 at \['layers'\]\[0\]\['steps'\] has dtype int64"):
        fg.grad(lambda p: fnp.sum(p["w"]))(params)
    with pytest.raises(TypeError, match="argument 1 has dtype int64"):
        fg.grad(lambda a, b: fnp.sum(a), argnums=(0, 1))(np.ones(2), 3)


def test_unsupported_leaf_types_are_named():
    with pytest.raises(TypeError, match=r"argument 0 at \['name'\] is a str"):
        fg.grad(lambda p: fnp.sum(p["w"]))({"w": np.ones(2), "name": "layer"})


def test_argnums_out_of_range():
    with pytest.raises(ValueError, match="argnums 2 is out of range for a call with 2 positional arguments"):
        fg.grad(lambda a, b: a * b, argnums=2)(1.0, 2.0)
    with pytest.raises(ValueError, match="out of range"):
        fg.jacrev(lambda a: a, argnums=(0, 1))(np.ones(2))


def test_shape_mismatches_show_both_shapes():
    with pytest.raises(fg.ShapeError, match=r"\(2, 3\).*\(4, 5\)"):
        fg.zeros((2, 3)) @ fg.zeros((4, 5))
    with pytest.raises(fg.ShapeError, match=r"float32\[2, 3\].*float32\[4\]"):
        fg.zeros((2, 3)) + fg.zeros(4)
    with pytest.raises(fg.ShapeError, match=r"cannot reshape an array of shape \(2, 3\)"):
        fnp.reshape(fg.zeros((2, 3)), (4, 2))
    with pytest.raises(fg.ShapeError, match="axis 2 is out of range for an array of rank 2"):
        fnp.sum(fg.zeros((2, 3)), axis=2)
    with pytest.raises(fg.ShapeError, match="stack needs arrays of one shape"):
        fnp.stack([fg.zeros(2), fg.zeros(3)])
    with pytest.raises(fg.ShapeError, match="einsum"):
        fnp.einsum("ij,jk->ik", fg.zeros((2, 3)), fg.zeros((4, 5)))
    with pytest.raises(IndexError, match="out of bounds"):
        fg.zeros(3)[5]
    with pytest.raises(IndexError, match="too many indices"):
        fg.zeros(3)[0, 0]


def test_shape_errors_inside_grad_too():
    with pytest.raises(fg.ShapeError, match=r"\(3,\).*\(4,\)|\[3\].*\[4\]"):
        fg.grad(lambda x: fnp.sum(x + fg.zeros(4)))(np.ones(3))


def test_vjp_and_jvp_check_their_inputs():
    _, f_vjp = fg.vjp(lambda x: x * 2, np.ones(3))
    with pytest.raises(fg.ShapeError, match=r"cotangent has shape \(2,\), but the output has shape \(3,\)"):
        f_vjp(np.ones(2))
    with pytest.raises(fg.ShapeError, match="tangent has shape"):
        fg.jvp(lambda x: x, (np.ones(3),), (np.ones(2),))
    with pytest.raises(ValueError, match="structure"):
        fg.jvp(lambda x, y: x, (np.ones(3), np.ones(3)), (np.ones(3),))
    with pytest.raises(TypeError, match="tangent has dtype float64 but its primal has dtype float32"):
        fg.jvp(lambda x: x * 2, (fnp.ones(3),), (fnp.ones(3, dtype=fg.float64),))  # it gave a float64 tangent


def test_vmap_out_axes_out_of_range_and_negative_layer_sizes_raise():
    """Both gave a result: out_axes wrapped modulo the rank (2 acted as 0), a negative size failed
    deep inside the initialiser with 'math domain error'."""
    with pytest.raises(ValueError, match="out_axes 2 is out of range for a batched output of rank 2"):
        fg.vmap(lambda v: v, out_axes=2)(np.ones((3, 2)))
    with pytest.raises(ValueError, match="out_axes 1 is out of range for a batched output of rank 1"):
        fg.vmap(lambda v: fnp.sum(v), out_axes=1)(np.ones((3, 2)))
    assert fg.vmap(lambda v: v, out_axes=-1)(np.ones((3, 2))).shape == (2, 3)
    with pytest.raises(ValueError, match=r"parameter of shape \(3, -1\): it has a negative dimension"):
        fg.nn.Linear(-1, 3, key=fg.random.key(0))
    with pytest.raises(ValueError, match=r"parameter of shape \(-2, 4\)"):
        fg.nn.Embedding(-2, 4, key=fg.random.key(0))


def test_has_aux_needs_a_pair():
    with pytest.raises(TypeError, match=r"pair \(output, aux\)"):
        fg.grad(lambda x: fnp.sum(x), has_aux=True)(np.ones(2))


def test_debug_nans_names_the_primitive_and_the_user_line():
    def f(x):
        return fnp.log(x - 2.0)  # the NaN is made here

    fg.config.debug_nans = True
    try:
        with pytest.raises(fg.NonFiniteError, match=r"'log' produced NaN.*test_errors.py:\d+ in f"):
            f(fg.array([1.0, 3.0]))
        with pytest.raises(fg.NonFiniteError, match="'log'"):
            fg.grad(lambda x: fnp.sum(f(x)))(fg.array([1.0]))
        f(fg.array([3.0]))  # no NaN, no error
    finally:
        fg.config.debug_nans = False
    with np.errstate(invalid="ignore"):
        assert np.isnan(float(f(fg.array([1.0]))[0]))  # off again: NaN flows as in NumPy
    with pytest.raises(AttributeError, match="unknown config option"):
        fg.config.update("debug_nan", True)


def test_check_grads_catches_a_wrong_rule():
    @fg.custom_vjp
    def double(x):
        return 2.0 * x

    double.defvjp(lambda x: (2.0 * x, None), lambda res, g: (3.0 * g,))  # wrong on purpose
    with pytest.raises(AssertionError, match="VJP check failed"):
        fg.check_grads(double, (np.array([1.0, 2.0]),), order=1, modes=("rev",))
    fg.check_grads(lambda x: 2.0 * x, (np.array([1.0, 2.0]),), order=2)


def test_host_copies_of_differentiated_values_refuse_or_warn():
    """.numpy() / np.asarray() would silently cut the gradient (true: [2, 4]): they raise, as in
    PyTorch; float() and .item() give constants and warn, naming the user's line; stop_gradient is
    the explicit way."""
    x = fg.array([1.0, 2.0])
    with pytest.raises(TypeError, match=r"\.numpy\(\) of a value being differentiated.*stop_gradient"):
        fg.grad(lambda v: fnp.sum(v * v.numpy()))(x)
    with pytest.raises(TypeError, match="NumPy array of a value being differentiated"):
        fg.grad(lambda v: fnp.sum(v * np.asarray(v)))(x)
    with pytest.warns(fg.GradientCutWarning, match="float") as caught:
        assert float(fg.grad(lambda v: v * float(v))(fg.array(3.0))) == 3.0
    assert caught[0].filename == __file__
    assert fg.grad(lambda v: fnp.sum(v * fg.stop_gradient(v).numpy()))(x).tolist() == [1.0, 2.0]
    assert fg.grad(lambda v: v * 2.0 if v > 0 else -v)(fg.array(1.5)) == 2.0  # control flow stays free


def test_custom_rules_are_checked_against_the_primal():
    @fg.custom_vjp
    def double(x):
        return x * 2.0
    double.defvjp(lambda x: (x * 2.0, None), lambda res, g: (fnp.ones(2),))
    with pytest.raises(fg.ShapeError, match=r"bwd rule of double returned shape \(2,\) for argument 0.*\(3, 4\)"):
        fg.grad(lambda x: fnp.sum(double(x)))(fnp.ones((3, 4)))
    double.defvjp(lambda x: (x * 2.0, None), lambda res, g: ({"a": g},))
    with pytest.raises(TypeError, match="structure"):
        fg.grad(lambda x: fnp.sum(double(x)))(fnp.ones(3))

    @fg.custom_jvp
    def triple(x):
        return x * 3.0

    @triple.defjvp
    def _rule(primals, tangents):
        return triple(primals[0]), fnp.ones(3, dtype=fg.float64)
    with pytest.raises(TypeError, match="jvp rule of triple returned dtype float64 for output 0.*float32"):
        fg.jvp(triple, (fnp.ones(3),), (fnp.ones(3),))


def test_grad_of_a_tuple_suggests_has_aux_and_one_element_outputs_are_scalars():
    with pytest.raises(TypeError, match="has_aux=True"):
        fg.grad(lambda x: (fnp.sum(x), x))(fnp.ones(3))
    assert fg.grad(lambda x: fnp.sum(x * x, keepdims=True))(fnp.ones(3)).tolist() == [2.0, 2.0, 2.0]  # shape (1,)
    assert fg.grad(lambda x: fnp.reshape(fnp.sum(x), (1, 1)))(fnp.ones(2)).tolist() == [1.0, 1.0]


def test_debug_nans_under_jit_names_the_primitive():
    f = fg.jit(lambda x: fnp.sum(fnp.log(x) * 2.0))
    fg.config.debug_nans = True
    try:
        with pytest.raises(fg.NonFiniteError, match="'log' produced NaN.*test_errors.py"):
            f(fnp.asarray([-1.0, 2.0]))
        assert abs(float(f(fnp.asarray([1.0, 2.0]))) - 2 * np.log(2.0)) < 1e-6
    finally:
        fg.config.debug_nans = False


@pytest.mark.parametrize("make, message", [
    (lambda: fg.optim.adam(-1.0), "Invalid learning rate: -1.0"),
    (lambda: fg.optim.sgd(-1.0), "Invalid learning rate: -1.0"),
    (lambda: fg.optim.sgd(0.1, momentum=-0.5), "Invalid momentum value: -0.5"),
    (lambda: fg.optim.adamw(1e-3, b1=1.0), "Invalid beta parameter at index 0: 1.0"),
    (lambda: fg.optim.adam(1e-3, b2=-0.1), "Invalid beta parameter at index 1: -0.1"),
    (lambda: fg.optim.adam(1e-3, eps=-1e-8), "Invalid epsilon value: -1e-08"),
    (lambda: fg.optim.rmsprop(1e-3, alpha=-0.9), "Invalid alpha value: -0.9"),
    (lambda: fg.optim.adagrad(1e-3, lr_decay=-1), "Invalid lr_decay value: -1"),
    (lambda: fg.optim.adamw(1e-3, weight_decay=-0.1), "Invalid weight_decay value: -0.1"),
    (lambda: fg.optim.sgd(0.1, momentum=0.9, dampening=0.1, nesterov=True), "Nesterov momentum requires"),
])
def test_bad_hyperparameters_get_pytorchs_messages(make, message):
    with pytest.raises(ValueError, match=message.replace("(", r"\(")):
        make()


def test_random_key_needs_an_integer_seed():
    with pytest.raises(TypeError, match="seed must be an integer, got float 1.5"):
        fg.random.key(1.5)
    assert fg.random.key(np.int64(3)).tolist() == fg.random.key(3).tolist()


def test_losses_refuse_silent_broadcasting():
    for loss in (fg.nn.mse_loss, fg.nn.l1_loss, fg.nn.huber_loss, fg.nn.smooth_l1_loss,
                 fg.nn.binary_cross_entropy, fg.nn.binary_cross_entropy_with_logits):
        with pytest.raises(fg.ShapeError, match=r"input of shape \(4, 1\) and target of shape \(4,\)"):
            loss(fnp.full((4, 1), 0.5), fnp.full(4, 0.5))
    assert float(fg.nn.mse_loss(fnp.ones(3), 1.0)) == 0.0  # a Python number is one target for all
    assert float(fg.nn.mse_loss(fnp.zeros((4, 1)), fnp.broadcast_to(fnp.zeros(4)[:, None], (4, 1)))) == 0.0


def test_losses_refuse_values_pytorch_refuses():
    with pytest.raises(ValueError, match=r"every input must be a probability in \[0, 1\], got 1.5"):
        fg.nn.binary_cross_entropy(np.array([0.5, 1.5]), np.array([1.0, 0.0]))  # logits passed by mistake: not NaN
    with pytest.raises(ValueError, match=r"every target must be a probability in \[0, 1\], got 1.5"):
        fg.nn.binary_cross_entropy(np.array([0.5, 0.5]), np.array([1.5, 0.0]))  # PyTorch refuses it too
    with pytest.raises(ValueError, match="delta must be positive, got -1.0"):
        fg.nn.huber_loss(np.ones(2), np.zeros(2), delta=-1.0)
    with pytest.raises(ValueError, match="beta must be non-negative, got -0.5"):
        fg.nn.smooth_l1_loss(np.ones(2), np.zeros(2), beta=-0.5)


def test_softmax_over_nothing_is_empty():
    for fn in (fg.nn.softmax, fg.nn.log_softmax):  # PyTorch's: an empty result, not a reduction error
        assert fn(np.zeros((2, 0), np.float32), axis=1).shape == (2, 0)
        assert fn(np.zeros((0, 3), np.float32), axis=1).shape == (0, 3)


def test_mismatched_trees_name_their_first_difference():
    opt = fg.optim.adam(1e-3)
    m1 = fg.nn.MLP(4, [8], 2, key=fg.random.key(0))
    state = opt.init(m1)
    other = fg.tree_map(lambda p: p * 0, fg.nn.MLP(4, [9], 2, key=fg.random.key(0)))
    with pytest.raises(ValueError, match=r"at \.linears\[0\]\.out_features: 8 against 9"):
        opt.update(other, state, m1)
    sliced = fg.tree_map(lambda p: p[:1] if p.ndim == 2 else p, m1)
    with pytest.raises(ValueError, match=r"gradient of parameter \.linears\.0\.weight has shape \(1, 4\)"):
        opt.update(sliced, state, m1)
    with pytest.raises(TypeError, match="needs the optimiser's state: opt.init"):
        opt.update(fg.tree_map(lambda p: p * 0, m1), None, m1)
    relu = fg.nn.Sequential([fg.nn.Linear(4, 3, key=fg.random.key(0)), fg.nn.relu])
    gelu = fg.nn.Sequential([fg.nn.Linear(4, 3, key=fg.random.key(0)), fg.nn.gelu])
    with pytest.raises(ValueError, match=r"at \.layers\[2\]: relu against gelu"):
        fg.tree_map(lambda a, b: a, relu, gelu)
    with pytest.raises(ValueError, match=r"keys \['a', 'b'\] against \['a', 'c'\]"):
        fg.tree_map(lambda a, b: a, {"a": 1, "b": 2}, {"a": 1, "c": 2})


def test_scan_names_a_carry_that_changes_shape():
    with pytest.raises(TypeError, match=r"scan: the carry returned at step 0 has shape \(2,\).*initial carry has "
                                        r"shape \(1,\)"):
        fg.scan(lambda c, x: (fnp.concatenate([c, x[None]]), x), fnp.zeros(1), fnp.arange(3.0))
    with pytest.raises(TypeError, match="the y returned at step 1"):
        fg.scan(lambda c, x: (c, fnp.ones(int(x) + 1)), fnp.zeros(()), fnp.arange(3.0))


def test_an_axis_out_of_range_is_also_an_index_error():
    # NumPy's AxisError is a ValueError and an IndexError; the Array API asks for the IndexError
    for call in (lambda: fg.numpy.expand_dims(np.ones((2, 3)), 3), lambda: fg.numpy.sum(np.ones(3), axis=1)):
        with pytest.raises(IndexError, match="out of range for an array of rank"):
            call()
        with pytest.raises(fg.ShapeError):
            call()
