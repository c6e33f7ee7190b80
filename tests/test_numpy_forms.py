"""Argument forms NumPy and jax.numpy accept, each against NumPy's values and (where the result
is differentiable) central finite differences of funcgrad's own gradient."""
from __future__ import annotations

import numpy as np
import pytest

import funcgrad as fg
import funcgrad.numpy as fnp

from .helpers import assert_close, numeric_grad

rng = np.random.default_rng(3)


def check_grad(fn, x: np.ndarray):
    """fg.grad of sum(fn(x) * weights) against central differences, float64."""
    weights = rng.standard_normal(np.shape(np.asarray(fn(x)))) if np.ndim(np.asarray(fn(x))) else 1.0

    def loss(a):
        return fnp.sum(fn(a) * weights)
    assert_close(fg.grad(loss)(fg.asarray(x)), numeric_grad(lambda a: loss(fg.asarray(a)), x), rtol=1e-6, atol=1e-7)


def test_stacks_take_one_array_as_the_sequence_of_its_rows():
    a = rng.standard_normal((3, 4))
    for name in ("vstack", "hstack", "dstack", "column_stack", "row_stack"):
        fn = getattr(fnp, name)
        reference = getattr(np, name) if name != "row_stack" else np.vstack
        assert_close(fn(fg.asarray(a)), reference(a))
        check_grad(lambda x, fn=fn: fn(x), a)  # a traced array is a sequence too
    with pytest.raises(ValueError, match="vstack needs a sequence of arrays, or an array of at least one dim"):
        fnp.vstack(fg.asarray(1.0))
    with pytest.raises(ValueError, match="hstack needs a sequence"):
        fnp.hstack([])


def test_einsum_sublist_form():
    a, b, c = rng.standard_normal((2, 3)), rng.standard_normal((3, 4)), rng.standard_normal((5, 2, 3))
    assert_close(fnp.einsum(fg.asarray(a), [0, 1], fg.asarray(b), [1, 2], [0, 2]),
                 np.einsum(a, [0, 1], b, [1, 2], [0, 2]))
    assert_close(fnp.einsum(fg.asarray(a), [0, 1], fg.asarray(b), [1, 2]), np.einsum(a, [0, 1], b, [1, 2]))
    assert_close(fnp.einsum(fg.asarray(c), [Ellipsis, 0, 1], fg.asarray(b), [1, 2], [Ellipsis, 0, 2]),
                 np.einsum(c, [Ellipsis, 0, 1], b, [1, 2], [Ellipsis, 0, 2]))
    check_grad(lambda x: fnp.einsum(x, [0, 1], fg.asarray(b), [1, 2], [2]), a)
    with pytest.raises(ValueError, match=r"a sublist label must be an int in \[0, 52\) or Ellipsis, got 'i'"):
        fnp.einsum(fg.asarray(a), ["i", "j"])


def test_einsum_broadcasts_axes_of_size_one_but_tensordot_and_dot_general_do_not():
    """NumPy's, JAX's and PyTorch's einsum broadcast a labelled axis of size 1 (a summed one too);
    tensordot (NumPy) and lax.dot_general (XLA) require equal sizes and still raise."""
    for spec, shapes in [("ij,ij->i", [(3, 4), (1, 4)]), ("ij,jk->ik", [(3, 1), (4, 2)]),
                         ("...i,...i", [(2, 1, 4), (3, 4)]), ("bij,bjk->bik", [(1, 2, 3), (5, 3, 4)])]:
        operands = [rng.standard_normal(shape) for shape in shapes]
        assert_close(fnp.einsum(spec, *operands), np.einsum(spec, *operands))
    right = fg.asarray(rng.standard_normal((4, 2)))
    check_grad(lambda x: fnp.einsum("ij,jk->ik", x, right), rng.standard_normal((3, 1)))  # summed over the 4 copies
    with pytest.raises(fg.ShapeError, match="index 'i' has sizes 3 and 2"):
        fnp.einsum("ij,ij->i", np.ones((3, 4)), np.ones((2, 4)))
    with pytest.raises(fg.ShapeError, match="shape-mismatch for sum"):
        fnp.tensordot(np.ones((3, 1)), np.ones((4, 2)), 1)
    with pytest.raises(fg.ShapeError, match="contracting dimensions to have the same shape"):
        fg.lax.dot_general(np.ones((3, 1)), np.ones((4, 2)), (((1,), (0,)), ((), ())))


def test_r_and_c_concatenate_as_numpys():
    a, b = rng.standard_normal(3), rng.standard_normal(3)
    m = rng.standard_normal((2, 3))
    cases = [
        (lambda x, y: fnp.r_[x, 0.5, y], lambda x, y: np.r_[x, 0.5, y]),
        (lambda x, y: fnp.r_[x, 1:4, 0:1:5j], lambda x, y: np.r_[x, 1:4, 0:1:5j]),
        (lambda x, y: fnp.c_[x, y], lambda x, y: np.c_[x, y]),
        (lambda x, y: fnp.r_["0,2", x, y], lambda x, y: np.r_["0,2", x, y]),
        (lambda x, y: fnp.r_["0,2,0", x, y], lambda x, y: np.r_["0,2,0", x, y]),
        (lambda x, y: fnp.r_["1,2,0", x, y], lambda x, y: np.r_["1,2,0", x, y]),
        (lambda x, y: fnp.r_["-1", fg.asarray(m), fg.asarray(m)], lambda x, y: np.r_["-1", m, m]),
        (lambda x, y: fnp.c_[fg.asarray(m.T), x], lambda x, y: np.c_[m.T, x]),
    ]
    for ours, theirs in cases:
        assert_close(ours(fg.asarray(a), fg.asarray(b)), theirs(a, b))
        check_grad(lambda x: ours(x, fg.asarray(b)), a)
    assert fnp.r_[fnp.arange(3, dtype=fnp.int32), 7].dtype == np.int32  # Python scalars are weak
    with pytest.raises(ValueError, match="the matrix directives 'r' and 'c'"):
        fnp.r_["r", fg.asarray(a)]


@pytest.mark.parametrize("edge_order", [1, 2])
def test_gradient_is_numpys_for_uniform_and_coordinate_spacing(edge_order):
    f = rng.standard_normal((5, 4))
    x = np.cumsum(rng.uniform(0.5, 1.5, 5))
    for args, kwargs in [((), {}), ((0.7,), {}), ((x, 2.0), {}), ((x,), {"axis": 0}), ((), {"axis": -1})]:
        ours = fnp.gradient(fg.asarray(f), *args, edge_order=edge_order, **kwargs)
        theirs = np.gradient(f, *args, edge_order=edge_order, **kwargs)
        if isinstance(theirs, (list, tuple)):
            assert isinstance(ours, tuple) and len(ours) == len(theirs)
            for o, t in zip(ours, theirs):
                assert_close(o, t, rtol=1e-12, atol=1e-12)
        else:
            assert_close(ours, theirs, rtol=1e-12, atol=1e-12)
    check_grad(lambda a: fnp.gradient(a, fg.asarray(x), axis=0, edge_order=edge_order), f)
    with pytest.raises(ValueError, match="axis 0 has 2 elements; edge_order 2 needs at least 3"):
        fnp.gradient(fg.asarray(f[:2]), axis=0, edge_order=2)
    with pytest.raises(ValueError, match=r"the coordinates of axis 0 must be 1-D of length 5, got shape \(4,\)"):
        fnp.gradient(fg.asarray(f), x[:4], axis=0)


def test_rollaxis_and_inner_with_a_0d_operand():
    a = rng.standard_normal((2, 3, 4, 5))
    for axis, start in [(3, 1), (2, 0), (1, 4), (-1, 0), (0, 2), (2, -1)]:
        assert fnp.rollaxis(fg.asarray(a), axis, start).shape == np.rollaxis(a, axis, start).shape
        assert_close(fnp.rollaxis(fg.asarray(a), axis, start), np.rollaxis(a, axis, start))
    with pytest.raises(fg.ShapeError, match="rollaxis: start 6 is out of range for an array of rank 4"):
        fnp.rollaxis(fg.asarray(a), 0, 6)
    v = rng.standard_normal(4)
    assert_close(fnp.inner(fg.asarray(v), 2.5), np.inner(v, 2.5))
    assert_close(fnp.inner(fg.asarray(3.0), fg.asarray(v)), np.inner(3.0, v))
    check_grad(lambda x: fnp.inner(x, fg.asarray(2.5)), v)


def test_dtype_names_are_dtypes_and_casts():
    x = fg.asarray(np.array([1.7, -2.2, 3.5]))
    assert fnp.int64(x).dtype == np.int64 and fnp.int64(x).tolist() == [1, -2, 3]
    assert fnp.float64(0.1).dtype == np.float64 and float(fnp.float64(0.1)) == 0.1  # no float32 detour
    assert fnp.bool_([0, 2]).tolist() == [False, True]
    assert fnp.zeros(2, fnp.int32).dtype == np.int32 and np.dtype(fnp.bfloat16) == fg.bfloat16
    assert x.dtype == fnp.float64 and fnp.float32 == np.float32 and fnp.float32 != fnp.float64
    assert {np.dtype("float32"): "f"}[fnp.float32] == "f" and fnp.float32.itemsize == 4
    assert np.zeros(2, fnp.uint8).dtype == np.uint8 and str(fnp.int16) == "int16"
    check_grad(lambda a: fnp.float64(a) * 2.0, np.array([0.3, -1.2]))


def test_numpys_own_functions_accept_funcgrad_arrays():
    a = rng.standard_normal((3, 4))
    x = fg.asarray(a)
    for name in ("sum", "mean", "max", "min", "prod", "std", "var", "argmax", "argmin", "any", "all", "cumsum", "ptp"):
        assert_close(getattr(np, name)(x), getattr(np, name)(a), rtol=1e-12, atol=1e-12)
    assert_close(np.sum(x, axis=1, keepdims=True), np.sum(a, axis=1, keepdims=True), rtol=1e-12)
    assert_close(np.clip(x, -0.5, 0.5), np.clip(a, -0.5, 0.5))
    assert_close(np.round(x, 2), np.round(a, 2))
    assert_close(np.trace(x), np.trace(a))
    with pytest.raises(TypeError, match="funcgrad arrays are immutable, so out= cannot be written"):
        x.sum(out=np.empty(()))


def test_clip_takes_numpys_older_bound_names():
    a = rng.standard_normal(6)
    assert_close(fnp.clip(fg.asarray(a), a_min=-0.3, a_max=0.4), np.clip(a, -0.3, 0.4))
    assert_close(fnp.clip(fg.asarray(a), a_max=0.1), np.clip(a, None, 0.1))
    with pytest.raises(TypeError, match="give each bound once"):
        fnp.clip(fg.asarray(a), 0.0, a_min=0.1)


@pytest.mark.filterwarnings("ignore:invalid value encountered:RuntimeWarning")  # 0 / 0, as NumPy warns
def test_std_where_the_variance_is_zero_has_a_zero_gradient():
    """PyTorch's convention (sqrt's infinite slope at 0 times the variance's zero slope)."""
    for x in (np.array([2.0]), np.full((3,), 1.5)):
        assert float(fnp.std(fg.asarray(x))) == 0.0
        assert fg.grad(lambda a: fnp.std(a))(fg.asarray(x)).tolist() == [0.0] * x.size
    x = rng.standard_normal(5)
    check_grad(lambda a: fnp.std(a, ddof=1), x)
    assert np.isnan(float(fnp.std(fg.asarray(np.array([1.0])), ddof=1)))  # n - ddof = 0: NaN, as NumPy
    assert fnp.std(fg.asarray(x), dtype=fnp.float32).dtype == np.float32


@pytest.mark.parametrize("shape", [(1,), (1, 1), (1, 1, 1)])
def test_grad_accepts_any_one_element_output(shape):
    x = rng.standard_normal(3)
    g = fg.grad(lambda a: fnp.reshape(fnp.sum(a ** 2), shape))(fg.asarray(x))
    assert_close(g, 2 * x)


@pytest.mark.parametrize("shape,index,values", [
    ((5,), (np.array([0, 0, 3]),), np.array([1.0, 2.0, 3.0])),
    ((3, 4), (np.array([1, 1]), slice(None)), np.arange(8.0).reshape(2, 4)),
    ((3, 4), (slice(None), np.array([2, 0, 2])), np.arange(9.0).reshape(3, 3)),
    ((3, 4, 2), (np.array([0, 0]), slice(1, 3), np.array([1, 1])), np.arange(4.0).reshape(2, 2)),
    ((3, 4, 2), (np.array([[0], [0]]), Ellipsis, np.array([1, 1, 0])), np.arange(24.0).reshape(2, 3, 4)),
    ((4, 3), (np.array([3, -1]), 1), np.array([5.0, 6.0])),
    ((4, 3), (np.array([1, 1]), np.array([2, 2])), np.array([5.0, 6.0])),
    ((4, 3), (np.array([True, False, True, False]),), 7.0)])
def test_index_set_with_repeated_positions_keeps_the_last_write(shape, index, values):
    """NumPy's x[index] = values: where a position repeats, the last value (C order) wins, never
    the sum; gradients reach only the values that were kept."""
    base = rng.standard_normal(shape)
    expected = base.copy()
    expected[index] = values
    as_fg = tuple(fg.asarray(i) if isinstance(i, np.ndarray) else i for i in index)
    assert_close(fg.asarray(base).at[as_fg].set(values), expected, rtol=0, atol=0)
    if np.ndim(values):
        kept = np.zeros(shape)
        kept[index] = np.arange(1, np.size(values) + 1).reshape(np.shape(values))  # the survivor of each position
        weights = rng.standard_normal(shape)
        grad = fg.grad(lambda v: fnp.sum(fg.asarray(base).at[as_fg].set(v) * weights))(fg.asarray(values))
        survivors = np.isin(np.arange(1, np.size(values) + 1), kept).reshape(np.shape(values))
        assert_close(grad, np.where(survivors, weights[index], 0.0))


def test_index_set_under_jit_with_traced_repeated_indices_sums_them():
    """What jit cannot check (the index is an argument): repeated positions get the sum, as
    documented; JAX leaves which write wins undefined."""
    update = fg.jit(lambda a, i: a.at[i].set(fnp.asarray([1.0, 2.0])))
    assert update(fnp.zeros(3), fg.asarray([0, 0])).tolist() == [3.0, 0.0, 0.0]
    assert update(fnp.zeros(3), fg.asarray([0, 2])).tolist() == [1.0, 0.0, 2.0]
