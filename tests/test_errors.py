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
