"""Structural functions, indexing and contractions: values against NumPy, gradients by finite differences."""
import numpy as np
import pytest
from hypothesis import given
from hypothesis import strategies as st

import funcgrad as fg
import funcgrad.numpy as fnp

from .helpers import assert_close, floats_array, shapes

RNG = np.random.default_rng(0)


def rand(*shape):
    return RNG.standard_normal(shape)


def check(f, ref, *args, order=1):
    """f(*args) equals ref(*args) and f's derivatives match finite differences."""
    assert_close(f(*args), ref(*args), rtol=1e-6, atol=1e-9)
    fg.check_grads(f, args, order=order)


CASES = {
    "reshape": (lambda x: fnp.reshape(x, (3, -1)), lambda x: np.reshape(x, (3, -1)), [(2, 3, 2)]),
    "reshape_method": (lambda x: x.reshape(2, 6), lambda x: x.reshape(2, 6), [(2, 3, 2)]),
    "transpose": (lambda x: fnp.transpose(x, (2, 0, 1)), lambda x: np.transpose(x, (2, 0, 1)), [(2, 3, 4)]),
    "T": (lambda x: fg.asarray(x).T, lambda x: x.T, [(2, 3, 4)]),
    "swapaxes": (lambda x: fnp.swapaxes(x, 0, -1), lambda x: np.swapaxes(x, 0, -1), [(2, 3, 4)]),
    "moveaxis": (lambda x: fnp.moveaxis(x, 0, -1), lambda x: np.moveaxis(x, 0, -1), [(2, 3, 4)]),
    "moveaxis_multi": (lambda x: fnp.moveaxis(x, [0, 1], [-1, 0]), lambda x: np.moveaxis(x, [0, 1], [-1, 0]),
                       [(2, 3, 4)]),
    "expand_dims": (lambda x: fnp.expand_dims(x, (0, -1)), lambda x: np.expand_dims(x, (0, -1)), [(2, 3)]),
    "squeeze": (lambda x: fnp.squeeze(x), lambda x: np.squeeze(x), [(1, 3, 1)]),
    "squeeze_axis": (lambda x: fnp.squeeze(x, -1), lambda x: np.squeeze(x, -1), [(1, 3, 1)]),
    "broadcast_to": (lambda x: fnp.broadcast_to(x, (4, 2, 3)), lambda x: np.broadcast_to(x, (4, 2, 3)),
                     [(2, 1)]),
    "concatenate": (lambda a, b: fnp.concatenate([a, b], axis=1),
                    lambda a, b: np.concatenate([a, b], axis=1), [(2, 3), (2, 1)]),
    "concatenate_none": (lambda a, b: fnp.concatenate([a, b], axis=None),
                         lambda a, b: np.concatenate([a, b], axis=None), [(2, 3), (4,)]),
    "stack": (lambda a, b: fnp.stack([a, b], axis=-1), lambda a, b: np.stack([a, b], axis=-1), [(2, 3), (2, 3)]),
    "split": (lambda x: fnp.split(x, [1, 3], axis=1)[1], lambda x: np.split(x, [1, 3], axis=1)[1], [(2, 5)]),
    "split_sections": (lambda x: fnp.split(x, 2)[1], lambda x: np.split(x, 2)[1], [(4, 3)]),
    "flip": (lambda x: fnp.flip(x, 1), lambda x: np.flip(x, 1), [(2, 3, 2)]),
    "flip_all": (lambda x: fnp.flip(x), lambda x: np.flip(x), [(2, 3)]),
    "pad_constant": (lambda x: fnp.pad(x, ((1, 2), (0, 1)), constant_values=3.0),
                     lambda x: np.pad(x, ((1, 2), (0, 1)), constant_values=3.0), [(2, 3)]),
    "pad_reflect": (lambda x: fnp.pad(x, 2, mode="reflect"), lambda x: np.pad(x, 2, mode="reflect"), [(3, 4)]),
    "pad_edge": (lambda x: fnp.pad(x, (1, 2), mode="edge"), lambda x: np.pad(x, (1, 2), mode="edge"), [(3,)]),
    "pad_wrap": (lambda x: fnp.pad(x, 1, mode="wrap"), lambda x: np.pad(x, 1, mode="wrap"), [(2, 3)]),
    "pad_maximum": (lambda x: fnp.pad(x, ((1, 2), (2, 0)), mode="maximum"),
                    lambda x: np.pad(x, ((1, 2), (2, 0)), mode="maximum"), [(3, 4)]),
    "pad_minimum_stat_length": (lambda x: fnp.pad(x, (2, 1), mode="minimum", stat_length=(2, 3)),
                                lambda x: np.pad(x, (2, 1), mode="minimum", stat_length=(2, 3)), [(2, 5)]),
    "pad_mean": (lambda x: fnp.pad(x, 2, mode="mean", stat_length=((1, 2), (3, 3))),
                 lambda x: np.pad(x, 2, mode="mean", stat_length=((1, 2), (3, 3))), [(3, 4)]),
    "pad_median": (lambda x: fnp.pad(x, ((0, 1), (2, 2)), mode="median"),
                   lambda x: np.pad(x, ((0, 1), (2, 2)), mode="median"), [(3, 4)]),
    "pad_linear_ramp": (lambda x: fnp.pad(x, ((1, 3), (2, 1)), mode="linear_ramp", end_values=((-2, 4), (1.5, 0))),
                        lambda x: np.pad(x, ((1, 3), (2, 1)), mode="linear_ramp", end_values=((-2, 4), (1.5, 0))),
                        [(3, 4)]),
    "take": (lambda x: fnp.take(x, np.array([2, 0, 2]), axis=1),
             lambda x: np.take(x, np.array([2, 0, 2]), axis=1), [(2, 3)]),
    "take_flat": (lambda x: fnp.take(x, np.array([[5, 0], [1, 1]])), lambda x: np.take(x, [[5, 0], [1, 1]]),
                  [(2, 3)]),
    "take_wrap": (lambda x: fnp.take(x, np.array([4, -5, 1]), axis=1, mode="wrap"),
                  lambda x: np.take(x, np.array([4, -5, 1]), axis=1, mode="wrap"), [(2, 3)]),
    "take_clip": (lambda x: fnp.take(x, np.array([[9, -2], [1, 3]]), mode="clip"),
                  lambda x: np.take(x, np.array([[9, -2], [1, 3]]), mode="clip"), [(2, 3)]),
    "take_along_axis": (lambda x: fnp.take_along_axis(x, np.array([[0, 2, 2], [1, 1, 0]]), axis=1),
                        lambda x: np.take_along_axis(x, np.array([[0, 2, 2], [1, 1, 0]]), axis=1), [(2, 3)]),
    "tril": (lambda x: fnp.tril(x, -1), lambda x: np.tril(x, -1), [(2, 3, 3)]),
    "triu": (lambda x: fnp.triu(x, 1), lambda x: np.triu(x, 1), [(3, 4)]),
    "matmul": (fnp.matmul, np.matmul, [(2, 3), (3, 4)]),
    "matmul_batched_broadcast": (fnp.matmul, np.matmul, [(2, 1, 3, 4), (3, 4, 2)]),
    "matmul_vec_mat": (fnp.matmul, np.matmul, [(3,), (2, 3, 4)]),
    "matmul_mat_vec": (fnp.matmul, np.matmul, [(2, 3, 4), (4,)]),
    "matmul_vec_vec": (fnp.matmul, np.matmul, [(4,), (4,)]),
    "dot_2d": (fnp.dot, np.dot, [(2, 3), (3, 2)]),
    "dot_nd": (fnp.dot, np.dot, [(2, 2, 3), (4, 3, 2)]),
    "dot_scalar": (fnp.dot, np.dot, [(), (3,)]),
    "outer": (fnp.outer, np.outer, [(3,), (2, 2)]),
    "inner": (fnp.inner, np.inner, [(2, 3), (4, 3)]),
    "tensordot": (lambda a, b: fnp.tensordot(a, b, axes=([1, 0], [0, 1])),
                  lambda a, b: np.tensordot(a, b, axes=([1, 0], [0, 1])), [(3, 4, 5), (4, 3, 2)]),
    "tensordot_int": (lambda a, b: fnp.tensordot(a, b, 1), lambda a, b: np.tensordot(a, b, 1), [(2, 3), (3, 2)]),
    "einsum_matmul": (lambda a, b: fnp.einsum("ij,jk->ik", a, b),
                      lambda a, b: np.einsum("ij,jk->ik", a, b), [(2, 3), (3, 4)]),
    "einsum_attention": (lambda q, k: fnp.einsum("bhqd,bhkd->bhqk", q, k),
                         lambda q, k: np.einsum("bhqd,bhkd->bhqk", q, k), [(2, 2, 3, 4), (2, 2, 5, 4)]),
    "einsum_ellipsis": (lambda a, b: fnp.einsum("...ij,...jk", a, b),
                        lambda a, b: np.einsum("...ij,...jk", a, b), [(2, 3, 4), (2, 4, 2)]),
    "einsum_trace": (lambda a: fnp.einsum("ii", a), lambda a: np.einsum("ii", a), [(3, 3)]),
    "einsum_diag": (lambda a: fnp.einsum("ii->i", a), lambda a: np.einsum("ii->i", a), [(3, 3)]),
    "einsum_sum_out": (lambda a, b: fnp.einsum("ij,k->k", a, b),
                       lambda a, b: np.einsum("ij,k->k", a, b), [(2, 3), (4,)]),
    "einsum_three": (lambda a, b, c: fnp.einsum("ij,jk,kl->il", a, b, c),
                     lambda a, b, c: np.einsum("ij,jk,kl->il", a, b, c), [(2, 3), (3, 4), (4, 2)]),
    "einsum_implicit_transpose": (lambda a: fnp.einsum("ji", a), lambda a: np.einsum("ji", a), [(2, 3)]),
    "getitem_basic": (lambda x: fg.asarray(x)[1:, ::-2, None, 0], lambda x: x[1:, ::-2, None, 0], [(3, 4, 2)]),
    "getitem_ellipsis": (lambda x: fg.asarray(x)[..., 1], lambda x: x[..., 1], [(2, 3, 4)]),
    "getitem_int_array_repeats": (lambda x: fg.asarray(x)[np.array([0, 2, 0])], lambda x: x[[0, 2, 0]], [(3, 2)]),
    "getitem_mixed_advanced": (lambda x: fg.asarray(x)[np.array([1, 0]), :, np.array([2, 2])],
                               lambda x: x[[1, 0], :, [2, 2]], [(2, 3, 4)]),
    "getitem_bool_mask": (lambda x: fg.asarray(x)[np.array([True, False, True])],
                          lambda x: x[np.array([True, False, True])], [(3, 2)]),
    "getitem_negative": (lambda x: fg.asarray(x)[-1, -2:], lambda x: x[-1, -2:], [(3, 4)]),
}


@pytest.mark.parametrize("name", sorted(CASES))
def test_structural_values_and_grads(name):
    f, ref, arg_shapes = CASES[name]
    args = [rand(*s) for s in arg_shapes]
    check(f, ref, *args, order=2 if name.startswith(("matmul", "einsum_attention", "getitem")) else 1)


@given(data=st.data())
def test_reshape_transpose_random_shapes(data):
    shape = data.draw(shapes(min_dims=1, max_dims=4, min_side=0, max_side=3))
    x = floats_array(data.draw, shape)
    perm = data.draw(st.permutations(range(len(shape))))
    assert_close(fnp.transpose(x, perm), np.transpose(x, perm))
    assert_close(fnp.reshape(x, (-1,)), x.reshape(-1))
    if x.size:
        fg.check_grads(lambda v: fnp.transpose(v, perm) * 2.0, (x,), order=1)


@given(data=st.data())
def test_matmul_random_shapes(data):
    n, k, m = (data.draw(st.integers(0, 4)) for _ in range(3))
    batch = data.draw(shapes(min_dims=0, max_dims=2, min_side=1, max_side=2))
    a = floats_array(data.draw, batch + (n, k))
    b = floats_array(data.draw, (k, m))
    assert_close(fnp.matmul(a, b), np.matmul(a, b))
    if a.size and b.size:
        fg.check_grads(fnp.matmul, (a, b), order=1)


def test_matmul_over_a_length_one_axis_is_numpys():
    # nothing to sum: computed as a broadcast multiply, which must agree with np.matmul in value and dtype
    rng = np.random.default_rng(3)
    for a, b in [(rng.standard_normal((5, 3, 1)).astype(np.float32), rng.standard_normal((5, 1, 4)).astype(np.float32)),
                 (rng.standard_normal((2, 1, 3, 1)), rng.standard_normal((4, 1, 2))),
                 (np.arange(3).reshape(3, 1), np.arange(4, dtype=np.int32).reshape(1, 4)),
                 (np.array([[True], [False]]), np.array([[True, False, True]]))]:
        got, want = np.asarray(fnp.matmul(a, b)), np.matmul(a, b)
        assert got.dtype == want.dtype and got.shape == want.shape
        assert np.array_equal(got, want)
    a, b = rng.standard_normal((3, 1)), rng.standard_normal((1, 2))
    fg.check_grads(fnp.matmul, (a, b), order=2)


def test_slicing_reads_like_numpy():
    x = np.arange(24.0).reshape(2, 3, 4)
    a = fg.asarray(x)
    for index in [0, -1, (1, 2), (slice(None), 1), (Ellipsis, slice(1, 3)), (None, 0), (slice(None, None, -1),),
                  (np.array([1, 0]), np.array([2, 0])), x > 10, (0, x[0] > 5), np.int64(1)]:
        assert_close(a[index], x[index])


def test_at_set_and_add_are_functional_updates():
    x = fnp.zeros((3, 2))
    y = x.at[1].set(5.0)
    assert_close(x, np.zeros((3, 2)))
    assert_close(y, [[0, 0], [5, 5], [0, 0]])
    z = x.at[np.array([0, 0, 2])].add(1.0)
    assert_close(z, [[2, 2], [0, 0], [1, 1]])
    g = fg.grad(lambda v, w: fnp.sum(v.at[1:].set(w) ** 2), argnums=(0, 1))(np.ones((3,)), np.array([2.0, 3.0]))
    assert_close(g[0], [2, 0, 0])
    assert_close(g[1], [4, 6])


def test_split_returns_every_piece():
    x = np.arange(10.0)
    for got, want in zip(fnp.split(x, [3, 7]), np.split(x, [3, 7])):
        assert_close(got, want)
    assert len(fnp.split(x, 5)) == 5


def test_broadcast_shapes_is_numpys_and_names_the_shapes_that_do_not_fit():
    for shapes in [((2, 1), (3,)), ((), (4, 1, 2)), (5, (2, 1)), ((0, 3), (1, 3))]:
        assert fnp.broadcast_shapes(*shapes) == np.broadcast_shapes(*shapes)
    with pytest.raises(fg.ShapeError, match=r"shapes \(2, 3\), \(4,\) do not broadcast"):
        fnp.broadcast_shapes((2, 3), (4,))


def test_pad_statistics_of_integers_round_as_numpy_and_bad_requests_raise():
    ints = np.array([[1, 2, 4, 4], [7, 0, 3, 3]])
    for mode in ("mean", "median", "maximum", "minimum", "linear_ramp"):
        got = fnp.pad(ints, ((1, 1), (2, 3)), mode=mode)
        want = np.pad(ints, ((1, 1), (2, 3)), mode=mode)
        assert got.dtype == want.dtype and np.array_equal(got, want), mode  # 1.5 -> 2, 2.5 -> 2; ramps floored
    assert np.array_equal(fnp.pad(ints, 1, mode="empty"), np.pad(ints, 1))  # NumPy leaves them undefined
    with pytest.raises(ValueError, match="stat_length 0 on axis 1"):
        fnp.pad(ints, ((0, 0), (1, 0)), mode="mean", stat_length=((1, 1), (0, 2)))
    with pytest.raises(ValueError, match="empty axis 0 can only be extended in mode 'constant'"):
        fnp.pad(np.zeros((0, 2)), 1, mode="median")
    with pytest.raises(ValueError, match="stat_length must be non-negative"):
        fnp.pad(ints, 1, mode="mean", stat_length=-1)
    with pytest.raises(ValueError, match="not supported"):
        fnp.pad(ints, 1, mode="nearest")


def test_take_modes_wrap_and_clip_and_refuse_others():
    x = np.arange(6.0)
    assert_close(fnp.take(x, np.array([7, -8]), mode="wrap"), [1.0, 4.0])
    assert_close(fg.grad(lambda v: fnp.sum(fnp.take(v, np.array([9, 9, -3]), mode="clip")))(x), [1, 0, 0, 0, 0, 2])
    with pytest.raises(IndexError, match="out of bounds"):
        fnp.take(x, np.array([6]))
    with pytest.raises(ValueError, match="mode must be one of"):
        fnp.take(x, np.array([0]), mode="bogus")
    # JAX's fill: a negative index counts from the end once; beyond, the fill (NaN, the lowest int, given)
    assert_close(fnp.take(x, np.array([0, -1, 6, -7]), mode="fill"), [0.0, 5.0, np.nan, np.nan])
    assert fnp.take(np.arange(3), np.array([3]), mode="fill").tolist() == [np.iinfo(np.int64).min]
    assert_close(fnp.take(np.ones((2, 3)), np.array([[0, 5]]), axis=1, mode="fill", fill_value=-2.0),
                 [[[1.0, -2.0]], [[1.0, -2.0]]])
    with pytest.raises(IndexError, match="empty axis"):
        fnp.take(np.zeros(0), np.array([0]), mode="wrap")


def test_at_modes_clip_drop_and_fill_as_jax():
    """Out-of-bounds indices raise by default; mode='clip' moves them to the nearest end, 'drop'
    skips their updates, 'fill' (or 'drop') reads fill_value there (expected values: jax.numpy's)."""
    v, x = fg.asarray(np.arange(6.0)), fg.asarray(np.arange(12.0).reshape(3, 4))
    with pytest.raises(IndexError, match="out of bounds"):
        v.at[np.array([0, 9])].set(7.0)
    assert v.at[np.array([0, 2, 9])].set(7.0, mode="drop").tolist() == [7, 1, 7, 3, 4, 5]
    assert v.at[np.array([0, 0, 2, -9])].add(1.0, mode="drop").tolist() == [2, 1, 3, 3, 4, 5]
    assert v.at[np.array([0, 2, 9])].set(7.0, mode="clip").tolist() == [7, 1, 7, 3, 4, 7]
    assert v.at[np.array([0, 0, 2, -9])].add(1.0, mode="clip").tolist() == [3, 1, 3, 3, 4, 5]  # -9 -> -3 -> 0
    assert_close(v.at[np.array([0, 2, 9])].get(mode="fill"), [0.0, 2.0, np.nan])
    got = x.at[np.array([[0], [7]]), np.array([1, -1, 4])].get(mode="fill", fill_value=-3)
    assert got.tolist() == [[1, 3, -3], [-3, -3, -3]]  # a pair with either index outside reads the fill
    assert x.at[1, np.array([0, 5])].set(9.0, mode="drop").tolist()[1] == [9, 5, 6, 7]
    assert x.at[..., 9].set(1.0, mode="clip")[:, 3].tolist() == [1, 1, 1]
    assert x.at[1:, np.array([3, 4])].max(100.0, mode="drop")[:, 3].tolist() == [3, 100, 100]
    assert fg.asarray(np.arange(6, dtype=np.uint8)).at[np.array([1, 9])].get(mode="fill").tolist() == [1, 255]
    assert fg.jit(lambda t, i: t.at[i].set(0.0, mode="drop"))(v, np.array([1, 9])).tolist() == [0, 0, 2, 3, 4, 5]
    grad = fg.grad(lambda t: fnp.sum(t.at[np.array([0, 9])].set(0.0, mode="drop") * np.arange(1.0, 7.0)))(v)
    assert grad.tolist() == [0, 2, 3, 4, 5, 6]  # the overwritten entry passes no gradient; the dropped write none
    with pytest.raises(ValueError, match="mode must be one of"):
        v.at[0].set(1.0, mode="wrap")
    assert v.at[np.array([1, 3])].power(2).tolist() == [0, 1, 2, 9, 4, 5]
    assert v.at[2:4].apply(lambda t: t * 10).tolist() == [0, 1, 20, 30, 4, 5]


def test_at_multiply_min_max_fold_repeated_indices_as_numpys_ufunc_at():
    x = np.array([1.0, 5.0, 3.0, -2.0])
    index = np.array([0, 0, 2, 0])
    for name, ufunc, v in (("multiply", np.multiply, np.array([2.0, 3.0, 0.5, -1.0])),
                           ("min", np.minimum, np.array([0.5, -1.0, 9.0, 3.0])),
                           ("max", np.maximum, np.array([4.0, 0.0, 2.0, 7.0]))):
        expected = x.copy()
        ufunc.at(expected, index, v)
        assert np.array_equal(getattr(fg.asarray(x).at[index], name)(v), expected), name
        assert np.array_equal(fg.jit(lambda a, vv: getattr(a.at[index], name)(vv))(x, v), expected), name
    grid = np.arange(12.0).reshape(3, 4)
    expected = grid.copy()
    np.maximum.at(expected, (np.array([0, 0, 2]), slice(None)), 6.0)
    assert np.array_equal(fg.asarray(grid).at[np.array([0, 0, 2]), :].max(6.0), expected)
    assert_close(fg.asarray(x).at[1].divide(2.0), [1.0, 2.5, 3.0, -2.0])
    # gradients: a product's factors each get the others' product; a maximum's gradient goes to the winner
    grads = fg.grad(lambda v: fnp.sum(fg.asarray(x).at[index].multiply(v)))(np.array([2.0, 3.0, 0.5, -1.0]))
    assert_close(grads, [1 * 3 * -1, 1 * 2 * -1, 3.0, 1 * 2 * 3])
    gx, gv = fg.grad(lambda a, v: fnp.sum(a.at[index].max(v) * np.array([5.0, 1, 2, 3])), argnums=(0, 1))(
        x, np.array([4.0, 0.0, 2.0, 0.5]))
    assert_close(gx, [0.0, 1.0, 2.0, 3.0])  # x[0] lost to v[0]; x[2] beat v[2]
    assert_close(gv, [5.0, 0.0, 0.0, 0.0])


def test_at_power_and_apply_act_once_per_occurrence_as_numpys_ufunc_at():
    """A repeated position is raised to each of its values in turn, and func applies once per
    occurrence (np.power.at, np.<ufunc>.at; jax.numpy's .at agrees), not once per position."""
    x = np.array([2.0, 3.0, -2.0, 5.0])
    index = np.array([0, 0, 2, 0, 2])
    values = np.array([2.0, 0.5, 3.0, 3.0, 1.0])
    expected = x.copy()
    np.power.at(expected, index, values)
    assert_close(fg.asarray(x).at[index].power(values), expected)
    assert_close(fg.jit(lambda a, i: a.at[i].power(values))(x, index), expected)  # traced indices too
    expected = x.copy()
    np.sqrt.at(expected[:2], np.array([0, 0, 1]))
    assert_close(fg.asarray(x).at[np.array([0, 0, 1])].apply(fnp.sqrt), expected)
    expected = np.arange(6.0).reshape(2, 3)
    np.negative.at(expected, (slice(None), np.array([1, 1, 1, 2])))
    assert_close(fg.asarray(np.arange(6.0).reshape(2, 3)).at[:, np.array([1, 1, 1, 2])].apply(fnp.negative), expected)
    # d/dx x ** (a b) = a b x ** (a b - 1); d/da = x ** (a b) log(x) b; an entry off the index passes 1 even below 0
    gx, gv = fg.grad(lambda a, v: fnp.sum(a.at[np.array([0, 0])].power(v)), argnums=(0, 1))(
        np.array([2.0, -1.0]), np.array([2.0, 3.0]))
    assert_close(gx, [6 * 2.0 ** 5, 1.0])
    assert_close(gv, [2.0 ** 6 * np.log(2.0) * 3, 2.0 ** 6 * np.log(2.0) * 2])


@pytest.mark.parametrize("mode", ["reflect", "symmetric"])
def test_odd_reflections_continue_the_trend_as_numpys(mode):
    """reflect_type='odd' pads with 2 edge - x; pads longer than the axis wrap several periods,
    each shifted by 2 (last - first), as NumPy's chunked padding does."""
    rng = np.random.default_rng(0)
    for n in (1, 2, 3, 5):
        x = rng.standard_normal((n, 3))
        for widths in [((0, 1), (1, 1)), ((2, 3), (0, 0)), ((9, 2), (2, 0)), ((0, 13), (1, 2))]:
            assert_close(fnp.pad(x, widths, mode=mode, reflect_type="odd"),
                         np.pad(x, widths, mode=mode, reflect_type="odd"), rtol=1e-12, atol=1e-12)
        ints = rng.integers(-50, 50, (n, 2))
        np.testing.assert_array_equal(fnp.pad(ints, ((7, 4), (0, 0)), mode=mode, reflect_type="odd"),
                                      np.pad(ints, ((7, 4), (0, 0)), mode=mode, reflect_type="odd"))
    fg.check_grads(lambda v: fnp.pad(v, ((3, 7), (2, 0)), mode=mode, reflect_type="odd"),
                   (rng.standard_normal((3, 4)),), order=1)
    with pytest.raises(ValueError, match="reflect_type must be 'even' or 'odd'"):
        fnp.pad(np.arange(3.0), 1, mode=mode, reflect_type="negative")
