"""funcgrad.numpy as an Array API (2024.12) namespace: the standard's names, keywords and
defaults, against NumPy's values."""
from __future__ import annotations

import numpy as np
import pytest

import funcgrad as fg
import funcgrad.numpy as fnp

from .helpers import assert_close

rng = np.random.default_rng(5)


def test_the_namespace_announces_itself():
    x = fnp.ones(3)
    assert fnp.__array_api_version__ == "2024.12" and x.__array_namespace__() is fnp
    assert x.__array_namespace__(api_version="2023.12") is fnp
    with pytest.raises(ValueError, match="up to 2024.12, not '2099.12'"):
        x.__array_namespace__(api_version="2099.12")
    info = fnp.__array_namespace_info__()
    assert info.default_device() == "cpu" and "cpu" in info.devices()
    assert info.default_dtypes() == {"real floating": np.float32, "complex floating": np.complex64,
                                     "integral": np.int64, "indexing": np.int64}
    assert set(info.dtypes(kind="unsigned integer")) == {"uint8", "uint16", "uint32", "uint64"}
    assert set(info.dtypes(kind="complex floating")) == {"complex64", "complex128"}
    assert info.dtypes()["bool"] == np.bool_ and info.capabilities()["boolean indexing"]
    assert fnp.bool == np.bool_ and "bool" not in fnp.__all__  # a star import keeps Python's bool


def test_standard_spellings_are_the_numpy_functions():
    a, b = rng.uniform(-0.9, 0.9, 5), rng.uniform(0.5, 2.0, 5)
    for name, reference in [("acos", np.arccos), ("asin", np.arcsin), ("atan", np.arctan), ("asinh", np.arcsinh),
                            ("atanh", np.arctanh)]:
        assert_close(getattr(fnp, name)(fg.asarray(a)), reference(a), rtol=1e-12)
    assert_close(fnp.acosh(fg.asarray(b + 1)), np.arccosh(b + 1), rtol=1e-12)
    assert_close(fnp.atan2(fg.asarray(a), fg.asarray(b)), np.arctan2(a, b), rtol=1e-12)
    assert_close(fnp.pow(fg.asarray(b), 2.5), b ** 2.5, rtol=1e-12)
    ints = fg.asarray(np.array([1, 5, 12]))
    assert fnp.bitwise_left_shift(ints, 2).tolist() == [4, 20, 48]
    assert fnp.bitwise_right_shift(ints, 1).tolist() == [0, 2, 6]


def test_isdtype_kinds():
    assert fnp.isdtype(fnp.float32, "real floating") and not fnp.isdtype(fnp.int8, "real floating")
    assert fnp.isdtype(fnp.uint8, ("bool", "unsigned integer")) and fnp.isdtype(fnp.bool, "bool")
    assert fnp.isdtype(np.dtype("int16"), "signed integer") and fnp.isdtype(fnp.int64, "integral")
    assert fnp.isdtype(fnp.float64, "numeric") and not fnp.isdtype(fnp.bool_, "numeric")
    assert fnp.isdtype(fnp.ones(2).dtype, fnp.float32) and not fnp.isdtype(fnp.float32, fnp.float64)
    with pytest.raises(ValueError, match="unknown kind 'float'"):
        fnp.isdtype(fnp.float32, "float")


def test_unstack_and_the_unique_family():
    x = rng.standard_normal((3, 4))
    parts = fnp.unstack(fg.asarray(x), axis=1)
    assert isinstance(parts, tuple) and len(parts) == 4
    for i, part in enumerate(parts):
        assert_close(part, x[:, i])
    v = np.array([[3.0, 1.0, np.nan], [3.0, np.nan, 1.0]])
    values, indices, inverse, counts = fnp.unique_all(fg.asarray(v))
    assert values.shape == (4,) and np.isnan(values.numpy()[2:]).all()  # NaNs are distinct
    assert values.numpy()[:2].tolist() == [1.0, 3.0] and counts.tolist() == [2, 2, 1, 1]
    assert inverse.shape == v.shape and np.array_equal(values.numpy()[inverse.numpy()], v, equal_nan=True)
    assert np.array_equal(v.ravel()[indices.numpy()], values.numpy(), equal_nan=True)
    assert fnp.unique_values(fg.asarray([2, 1, 2])).tolist() == [1, 2]
    assert fnp.unique_counts(fg.asarray([2, 1, 2])).counts.tolist() == [1, 2]
    assert fnp.unique_inverse(fg.asarray([[2, 1], [2, 2]])).inverse_indices.tolist() == [[1, 0], [1, 1]]


def test_dlpack_both_ways_and_to_device():
    x = fg.asarray(np.arange(6.0).reshape(2, 3))
    assert x.__dlpack_device__() == (1, 0)
    assert np.array_equal(np.from_dlpack(x), x.numpy())
    a = np.arange(4.0)
    shared, copied = fnp.from_dlpack(a), fnp.from_dlpack(a, copy=True)
    a[0] = 9.0
    assert shared.tolist()[0] == 9.0 and copied.tolist()[0] == 0.0  # DLPack shares unless copy=True
    assert x.to_device("cpu") is x


def test_defaults_and_keywords_of_the_standard():
    assert fnp.zeros(2, dtype=None).dtype == np.float32 and fnp.ones((1,), None).dtype == np.float32
    assert fnp.empty(2, dtype=None).dtype == np.float32 and fnp.eye(2, dtype=None).dtype == np.float32
    assert fnp.full(2, 3).dtype == np.int64 and fnp.full(2, True).dtype == np.bool_
    ints = fg.asarray(np.array([-2, 3]))
    for name in ("ceil", "floor", "trunc"):
        out = getattr(fnp, name)(ints)
        assert out.dtype == np.int64 and out.tolist() == [-2, 3], name  # whole already: the same dtype
    assert fnp.floor(fg.asarray(np.array([-1.5, 2.5]))).tolist() == [-2.0, 2.0]
    small = fg.asarray(np.array([200, 100], np.uint8))
    assert fnp.sum(small, dtype=fnp.uint8).dtype == np.uint8 and int(fnp.sum(small, dtype=fnp.uint8)) == 44
    assert fnp.sum(small).dtype == np.uint64 and int(fnp.prod(small, dtype=np.uint8)) == (200 * 100) % 256


def test_sort_descending_stays_stable_and_differentiates():
    x = np.array([3, 1, 3, 2, 1, 2])
    assert fnp.argsort(fg.asarray(x), descending=True).tolist() == [0, 2, 3, 5, 1, 4]
    assert fnp.sort(fg.asarray(x), descending=True).tolist() == [3, 3, 2, 2, 1, 1]
    m = rng.standard_normal((3, 5))
    assert_close(fnp.sort(fg.asarray(m), axis=0, descending=True), -np.sort(-m, axis=0))
    weights = np.arange(5.0)
    g = fg.grad(lambda a: fnp.sum(fnp.sort(a, descending=True, stable=False) * weights))(fg.asarray(m[0]))
    assert_close(g, weights[np.argsort(np.argsort(-m[0]))])


def test_asarray_and_astype_copy_and_device():
    a = np.ones(3, np.float32)
    shared, copied = fnp.asarray(a, copy=False), fnp.asarray(a, copy=True)
    a[0] = 5.0
    assert shared.tolist()[0] == 5.0 and copied.tolist()[0] == 1.0
    with pytest.raises(ValueError, match="a ndarray of dtype float32 cannot become this array without a copy"):
        fnp.asarray(a, dtype=fnp.float64, copy=False)
    with pytest.raises(ValueError, match="a list of dtype list cannot become this array without a copy"):
        fnp.asarray([1.0], copy=False)
    x = fnp.arange(3)
    assert fnp.asarray(x, copy=False) is x and fnp.asarray(x, device="cpu") is x
    assert fnp.astype(x, fnp.int64) is x and fnp.astype(x, fnp.int64, copy=True) is not x
    assert fnp.astype(x, "float64", device="cpu").dtype == np.float64


def test_what_the_conformance_suite_found():
    """meshgrid of empty inputs, result_type of dtype names, cumulative sums in a given dtype,
    take_along_axis's default axis, complex() of a one-element array."""
    grids = fnp.meshgrid(fnp.zeros(0), fnp.zeros(3))
    assert [g.shape for g in grids] == [m.shape for m in np.meshgrid(np.zeros(0), np.zeros(3))] == [(3, 0)] * 2
    assert [g.shape for g in fnp.meshgrid(fnp.zeros(2), fnp.zeros(0), indexing="ij")] == [(2, 0)] * 2
    assert fnp.result_type(fnp.float32, fnp.int8, fnp.ones(1, fnp.float64)) == np.float64
    small = fg.asarray(np.array([200, 100], np.uint8))
    out = fnp.cumulative_sum(small, dtype=fnp.uint8)
    assert out.dtype == np.uint8 and out.tolist() == [200, 44]
    for ours, numpys in ((fnp.cumsum, np.cumsum), (fnp.cumprod, np.cumprod), (fnp.cumulative_prod, np.cumprod)):
        got, want = ours(small, dtype=fnp.uint8), numpys(np.array([200, 100], np.uint8), dtype=np.uint8)
        assert got.dtype == np.uint8 and got.tolist() == want.tolist()
    x = rng.standard_normal((3, 4))
    idx = np.argsort(x, axis=-1)
    assert_close(fnp.take_along_axis(fg.asarray(x), fg.asarray(idx)), np.take_along_axis(x, idx, axis=-1))
    assert complex(fg.asarray(2.5)) == 2.5 + 0j


@pytest.mark.parametrize("dtype", [np.float32, np.float64])
def test_nextafter_is_numpys_at_zeros_infinities_and_nans(dtype):
    a = np.array([1.0, -1.0, 0.0, -0.0, 0.0, -0.0, np.inf, np.finfo(dtype).max, 3.0, np.nan, 2.0, -np.inf], dtype)
    b = np.array([2.0, 0.0, 1.0, 0.0, -1.0, -1.0, 0.0, np.inf, 3.0, 1.0, np.nan, 0.0], dtype)
    ours = fnp.nextafter(fg.asarray(a), fg.asarray(b)).numpy()
    with np.errstate(over="ignore"):
        expected = np.nextafter(a, b)
    assert ours.dtype == dtype and np.array_equal(ours, expected, equal_nan=True)
    assert np.array_equal(np.signbit(ours), np.signbit(expected))  # -0 toward +0 is +0


@pytest.mark.parametrize("index", [True, False, (0, True), (True, 1), (Ellipsis, True), (slice(None), False, 1),
                                   (np.array(True),), (np.array([0, 1]), True), (True, np.array([0, 1]), Ellipsis, 2)])
def test_a_0d_boolean_index_is_a_new_axis_of_length_1_or_0(index):
    a = np.arange(24.0).reshape(2, 3, 4)
    got = fg.asarray(a)[index]
    assert got.shape == a[index].shape and np.array_equal(got.numpy(), a[index])
    values = np.full(a[index].shape, -1.0)
    expected = a.copy()
    expected[index] = values
    assert np.array_equal(fg.asarray(a).at[index].set(values).numpy(), expected)
    expected = a.copy()
    expected[index] += 2.0
    assert np.array_equal(fg.asarray(a).at[index].add(2.0).numpy(), expected)


def test_dtype_names_are_not_equal_to_none():
    """np.dtype(None) is float64, so a dtype compared with None naively says float64 == None."""
    assert fnp.float64 != None and not (None == fnp.float64) and fnp.float64 == "float64"  # noqa: E711
    assert {fnp.float64: 1}.get(None) is None


def test_finfo_gives_python_numbers():
    for dtype in (fnp.float32, fnp.float64, fnp.float16, fnp.bfloat16):
        info = fnp.finfo(dtype)
        assert all(isinstance(v, float) for v in (info.eps, info.max, info.min, info.smallest_normal))
        assert info.dtype == dtype and isinstance(info.bits, int)
    assert fnp.finfo(fnp.float32).eps == float(np.finfo(np.float32).eps)
    assert fnp.finfo(fnp.ones(2, fnp.float64)).max == float(np.finfo(np.float64).max)


def test_reshape_takes_the_standards_copy():
    x = fnp.arange(6)
    assert fnp.reshape(x, (2, 3)).shape == (2, 3) and fnp.reshape(x, (6,), copy=False) is x
    copied = fnp.reshape(x, (6,), copy=True)
    assert copied is not x and copied.tolist() == x.tolist()
    assert x.reshape(3, 2).shape == (3, 2)  # the method keeps NumPy's varargs form


def test_astype_of_a_python_float_is_exact_in_a_wider_dtype():
    third = 1 / 3
    assert float(fnp.astype(third, fnp.float64)) == third  # not third rounded to float32 first
    assert complex(fnp.astype(1j / 3, fnp.complex128)) == 1j / 3
    assert float(fnp.astype(third, fnp.float32)) == float(np.float32(third))
    assert int(fnp.astype(2.5, fnp.int32)) == 2 and fnp.astype(3, fnp.float64).dtype == np.float64


def test_uint16_is_a_dtype_as_in_numpy():
    """The standard's uint16 (16-bit images): arithmetic wraps, promotion and reductions as NumPy's."""
    a = np.array([65535, 40000, 7, 0], np.uint16)
    b = np.array([2, 30000, 9, 1], np.uint16)
    x, y = fnp.asarray(a), fnp.asarray(b)
    for op in (np.add, np.subtract, np.multiply, np.floor_divide, np.remainder, np.maximum, np.bitwise_xor):
        out = getattr(fnp, op.__name__)(x, y)
        assert out.dtype == np.uint16 and np.array_equal(np.asarray(out), op(a, b)), op.__name__
    for other in (np.int8, np.int16, np.uint8, np.uint32, np.int64):
        assert (x + fnp.ones(4, other)).dtype == np.promote_types(np.uint16, other)
    assert fnp.sum(x).dtype == np.uint64 and int(fnp.sum(x)) == int(a.astype(np.uint64).sum())
    assert np.array_equal(np.asarray(fnp.sort(x)), np.sort(a)) and fnp.uint16(fnp.asarray([70000])).dtype == np.uint16
    assert np.array_equal(np.asarray(fg.jit(lambda v: v * 3 + 1)(x)), a * np.uint16(3) + np.uint16(1))
