"""NumPy's remaining functions in funcgrad.numpy against NumPy itself: roots, kaiser, spacing,
bitwise_count, put, place, packbits/unpackbits, sort_complex, mask_indices, einsum_path, the
C-style dtype aliases and the input/output helpers."""
import itertools

import numpy as np
import pytest

import funcgrad as fg
import funcgrad.numpy as fnp

from .helpers import assert_close

RNG = np.random.default_rng(0)


def test_roots_and_kaiser():
    for p in ([1.0, -3, 2], [1.0, 0, 1], [2.0, -1, 0, 0], [0.0, 0, 1, -1]):
        np.testing.assert_allclose(np.sort_complex(np.asarray(fnp.roots(p))), np.sort_complex(np.roots(p)), atol=1e-12)
    assert fnp.roots([5.0]).shape == (0,)
    kept = np.asarray(fnp.roots(np.array([0.0, 1, -3, 2]), strip_zeros=False))
    assert np.isnan(kept[-1]) and np.allclose(np.sort(kept[:2].real), [1, 2])
    with pytest.raises(TypeError, match="no derivative"):
        fg.grad(lambda p: fnp.real(fnp.roots(p)).sum())(np.array([1.0, -3, 2]))
    assert_close(fnp.kaiser(9, 4.0), np.kaiser(9, 4.0), rtol=1e-6)
    assert fnp.kaiser(1, 4.0).shape == (1,) and fnp.kaiser(0, 4.0).shape == (0,)


def test_spacing_and_bitwise_count():
    x = np.array([0.0, -0.0, 1.0, -3.5, 1e-310, 1e308, np.inf, np.nan])
    with np.errstate(invalid="ignore"):
        assert_close(fnp.spacing(x), np.spacing(x))
        assert_close(fnp.spacing(x.astype(np.float32)), np.spacing(x.astype(np.float32)))
    for dt in (np.int8, np.uint8, np.int16, np.uint16, np.int32, np.uint32, np.int64, np.uint64, np.bool_):
        v = np.array([True, False]) if dt == np.bool_ else \
            np.array([0, 1, 7, 100, np.iinfo(dt).max, np.iinfo(dt).min], dt)
        out = fnp.bitwise_count(v)
        assert out.dtype == np.uint8 and np.array_equal(np.asarray(out), np.bitwise_count(v)), dt


def test_put_and_place_copy_as_numpy_edits_in_place():
    a = RNG.standard_normal((3, 4))
    for ind, v, mode in [([0, 5, -1], [10.0, 20.0, 30.0], None), ([1, 2, 3, 4], [7.0, 8.0], None),
                         ([15, -20], [1.0], "wrap"), ([15, -20], [1.0, 2.0], "clip")]:
        expected = a.copy()
        np.put(expected, ind, v, mode=mode or "raise")
        assert_close(fnp.put(a, ind, v, mode, inplace=False), expected)
    with pytest.raises(IndexError, match="out of bounds"):
        fnp.put(a, [12], [1.0], inplace=False)
    with pytest.raises(ValueError, match="immutable"):
        fnp.put(a, [1], [1.0])
    expected = a.copy()
    np.place(expected, a > 0, [1.0, 2.0, 3.0])
    assert_close(fnp.place(a, a > 0, [1.0, 2.0, 3.0], inplace=False), expected)
    assert_close(fg.grad(lambda v: fnp.put(a, [0, 5], v, inplace=False).sum())(np.array([1.0, 2.0])), [1.0, 1.0])


def test_bits_sorting_and_indices():
    b = RNG.integers(0, 256, (3, 5)).astype(np.uint8)
    for axis, order, count in itertools.product((None, 0, 1), ("big", "little"), (None, 3, -2, 50)):
        assert np.array_equal(np.asarray(fnp.unpackbits(b, axis=axis, count=count, bitorder=order)),
                              np.unpackbits(b, axis=axis, count=count, bitorder=order))
    bits = RNG.integers(0, 3, (3, 13))
    for axis, order in itertools.product((None, 0, 1), ("big", "little")):
        assert np.array_equal(np.asarray(fnp.packbits(bits, axis=axis, bitorder=order)),
                              np.packbits(bits, axis=axis, bitorder=order))
    z = np.array([1 + 2j, 1 - 1j, -3 + 0j, 1 + 0j])
    assert np.array_equal(np.asarray(fnp.sort_complex(z)), np.sort_complex(z))
    rows, cols = fnp.mask_indices(4, fnp.triu, 1)
    expected = np.mask_indices(4, np.triu, 1)
    assert np.array_equal(np.asarray(rows), expected[0]) and np.array_equal(np.asarray(cols), expected[1])
    ops = np.ones((2, 3)), np.ones((3, 4)), np.ones((4, 5))
    assert fnp.einsum_path("ij,jk,kl->il", *ops)[0] == np.einsum_path("ij,jk,kl->il", *ops, optimize="greedy")[0]


@pytest.mark.parametrize("order", ["C", "F"])
def test_multi_indices_in_both_orders_and_per_axis_modes(order):
    dims, flat = (4, 5, 3), RNG.integers(0, 60, 9)
    for got, want in zip(fnp.unravel_index(flat, dims, order=order), np.unravel_index(flat, dims, order=order)):
        assert np.array_equal(np.asarray(got), want)
    index = ([1, 7, 0], [3, -1, 4], [0, 9, 2])
    for mode in ("clip", "wrap", ("clip", "wrap", "clip")):
        assert np.array_equal(np.asarray(fnp.ravel_multi_index(index, dims, mode=mode, order=order)),
                              np.ravel_multi_index(index, dims, mode=mode, order=order))
    # too few index arrays were zipped against the dimensions and silently gave a wrong index
    with pytest.raises(ValueError, match=r"2 index arrays and 3 modes for 3 dimensions"):
        fnp.ravel_multi_index(index[:2], dims, order=order)
    with pytest.raises(ValueError, match="only 'C' or 'F' order"):
        fnp.unravel_index(flat, dims, order="K")
    with pytest.raises(ValueError, match="mode must be 'raise', 'clip' or 'wrap'"):
        fnp.ravel_multi_index(index, dims, mode="bogus", order=order)


def test_aliases_and_io(tmp_path):
    assert fnp.float_ == np.float64 and fnp.single == np.float32 and fnp.int_ == np.int64 and fnp.uint == np.uint64
    assert fnp.cdouble == np.complex128 and fnp.csingle == np.complex64 and fnp.int_(3.7).dtype == np.int64
    assert fnp.euler_gamma == np.euler_gamma
    x = fnp.arange(6.0).reshape(2, 3)
    fnp.save(tmp_path / "a.npy", x)
    loaded = fnp.load(tmp_path / "a.npy")
    assert isinstance(loaded, fg.Array) and np.array_equal(np.asarray(loaded), np.asarray(x))
    fnp.savez(tmp_path / "b.npz", x, w=x * 2)
    assert np.array_equal(fnp.load(tmp_path / "b.npz")["w"], np.asarray(x) * 2)
    assert np.array_equal(np.asarray(fnp.frombuffer(np.arange(3.0).tobytes())), [0.0, 1.0, 2.0])
    assert fnp.frombuffer(np.arange(3.0).tobytes()).dtype == np.float64  # NumPy's float
    path = tmp_path / "raw.bin"
    np.arange(6, dtype=np.int32).tofile(path)
    assert np.array_equal(np.asarray(fnp.fromfile(path, np.int32, count=4, offset=8)), [2, 3, 4, 5])
    (tmp_path / "text.txt").write_text("1.5, 2.5,3")
    assert np.array_equal(np.asarray(fnp.fromfile(tmp_path / "text.txt", sep=",")), [1.5, 2.5, 3.0])
    assert np.array_equal(np.asarray(fnp.fromiter(range(4), int)), [0, 1, 2, 3])
    assert np.array_equal(np.asarray(fnp.fromstring("1 2 3", sep=" ")), [1.0, 2.0, 3.0])
    assert fnp.array_str(x) == np.array_str(np.asarray(x)) and fnp.iterable(x)


def test_ndarray_is_the_type_of_values_under_every_transform():
    seen = []

    def f(x):
        seen.append(isinstance(x, fnp.ndarray))
        return (x * x).sum()
    fg.grad(f)(np.ones(2))
    fg.jit(f)(np.ones(2))
    fg.vmap(f)(np.ones((3, 2)))
    assert seen == [True, True, True] and isinstance(fnp.asarray(1.0), fnp.ndarray)
    assert not isinstance(np.ones(2), fnp.ndarray)  # a NumPy array is not one (as jnp.ndarray)


@pytest.mark.parametrize("name", ["add", "multiply", "maximum", "minimum", "subtract", "logaddexp", "hypot",
                                  "divide", "fmax", "logical_xor", "bitwise_or"])
def test_ufunc_methods_match_numpy(name):
    rng = np.random.default_rng(1)
    x = {"logical_xor": rng.random((3, 4)) > 0.5, "bitwise_or": rng.integers(0, 8, (3, 4))}.get(
        name, np.abs(rng.normal(size=(3, 4))) + 0.5)
    ours, theirs = getattr(fnp, name), getattr(np, name)
    assert isinstance(ours, fnp.ufunc) and ours.nin == 2
    for axis in (0, 1):
        assert_close(ours.reduce(x, axis=axis), theirs.reduce(x, axis=axis), rtol=1e-12)
        assert_close(ours.accumulate(x, axis=axis), theirs.accumulate(x, axis=axis), rtol=1e-12)
    assert_close(ours.outer(x[0], x[1, :3]), theirs.outer(x[0], x[1, :3]), rtol=1e-12)
    assert_close(ours.reduceat(x, [0, 2, 1], axis=1), theirs.reduceat(x, [0, 2, 1], axis=1), rtol=1e-12)


def test_ufunc_at_initial_where_and_frompyfunc():
    x, idx, y = np.zeros(5), np.array([0, 1, 1, 3]), np.arange(1.0, 5.0)
    for name in ("add", "subtract", "multiply", "maximum", "minimum"):
        want = np.full(5, 2.0)
        getattr(np, name).at(want, idx, y)
        assert_close(getattr(fnp, name).at(np.full(5, 2.0), idx, y, inplace=False), want)
    with pytest.raises(ValueError, match="pass inplace=False"):
        fnp.add.at(x, idx, y)
    a = np.random.default_rng(2).normal(size=(3, 4))
    masked = a > 0
    assert_close(fnp.add.reduce(a, axis=1, initial=5.0, where=masked), np.add.reduce(a, axis=1, initial=5.0, where=masked))
    assert fnp.add.reduce(a, axis=None, keepdims=True).shape == (1, 1)
    with pytest.raises(ValueError, match="maximum, which has no identity"):
        fnp.maximum.reduce(np.zeros((0, 3)))
    step = fnp.frompyfunc(lambda u, v: u * v + 1, 2, 1)
    assert_close(step.accumulate(np.arange(1.0, 5.0)), [1, 3, 10, 41])  # left to right, as NumPy's
    assert_close(fg.grad(lambda v: fnp.multiply.reduce(v))(np.array([1.0, 2.0, 3.0])), [6.0, 3.0, 2.0])
    assert_close(fg.jit(lambda v: fnp.maximum.accumulate(v))(np.array([1.0, 3.0, 2.0, 5.0])), [1, 3, 3, 5])
    assert_close(fg.asarray(np.ones(2)) + 1.0, [2.0, 2.0])  # Array's operators are the ufunc objects
