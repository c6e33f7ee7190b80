"""Array: construction, dtypes and promotion, conversions, methods, immutability."""
import numpy as np
import pytest

import funcgrad as fg
import funcgrad.numpy as fnp

from .helpers import assert_close


def test_python_data_gets_pytorch_default_dtypes():
    assert fg.array([1.0, 2.0]).dtype == fg.float32
    assert fg.array([1, 2]).dtype == fg.int64
    assert fg.array([True]).dtype == fg.bool_
    assert fg.array(np.arange(3.0)).dtype == fg.float64  # NumPy arrays keep their dtype
    assert fg.array([1, 2], dtype=fg.bfloat16).dtype == fg.bfloat16
    assert fg.asarray(3.5).shape == ()


def test_constructors_match_numpy():
    assert_close(fg.zeros((2, 3)), np.zeros((2, 3)))
    assert fg.zeros(3).dtype == fg.float32
    assert_close(fg.ones(4, dtype=fg.int32), np.ones(4))
    assert fg.ones(4, dtype=fg.int32).dtype == fg.int32
    assert_close(fg.full((2, 2), 7), np.full((2, 2), 7))
    assert fg.full((2,), 7).dtype == fg.int64 and fg.full((2,), 7.0).dtype == fg.float32
    assert_close(fg.arange(5), np.arange(5))
    assert fg.arange(5).dtype == fg.int64 and fg.arange(0.0, 1.0, 0.25).dtype == fg.float32
    assert_close(fg.arange(1, 10, 3), np.arange(1, 10, 3))
    assert_close(fg.linspace(0, 1, 5), np.linspace(0, 1, 5))
    assert_close(fg.eye(3, 4, k=1), np.eye(3, 4, k=1))
    x = fg.array([[1.0, 2.0]])
    assert_close(fg.zeros_like(x), [[0, 0]])
    assert_close(fg.ones_like(x), [[1, 1]])
    assert_close(fg.full_like(x, 3.0), [[3, 3]])
    assert fg.zeros_like(x, dtype=fg.int32).dtype == fg.int32


def test_array_attributes_and_conversions():
    x = fg.array([[1.0, 2.0, 3.0], [4.0, 5.0, 6.0]])
    assert x.shape == (2, 3) and x.ndim == 2 and x.size == 6 and x.dtype == fg.float32
    assert x.device == "cpu" and str(x.device) == "cpu"
    assert_close(x.T, [[1, 4], [2, 5], [3, 6]])
    assert_close(x.reshape(3, 2), np.arange(1, 7).reshape(3, 2))
    assert_close(x.reshape((6,)), np.arange(1, 7))
    assert float(x.sum()) == 21.0 and float(x.mean()) == 3.5 and float(x.max()) == 6.0
    assert_close(x.sum(axis=0), [5, 7, 9])
    assert x.astype(fg.int32).dtype == fg.int32
    assert x[1, 2].item() == 6.0 and isinstance(x[1, 2].item(), float)
    assert x.tolist() == [[1, 2, 3], [4, 5, 6]]
    assert np.asarray(x).dtype == np.float32
    assert len(x) == 2 and [float(r.sum()) for r in x] == [6.0, 15.0]
    assert int(fg.array(3)) == 3 and bool(fg.array(True))
    assert f"{fg.array(0.5):.2f}" == "0.50"
    # NumPy's and JAX's item(index), divmod and tobytes
    assert x.item(4) == 5.0 and x.item((1, 2)) == 6.0 and x.item(0, 1) == 2.0
    with pytest.raises(ValueError, match="size 1"):
        x.item()
    quotient, rest = divmod(x, 4.0)
    assert_close(quotient, [[0, 0, 0], [1, 1, 1]])
    assert_close(rest, [[1, 2, 3], [0, 1, 2]])
    assert_close(divmod(7, fg.array([2, -3]))[1], [1, -2])
    assert x.tobytes() == np.arange(1, 7, dtype=np.float32).reshape(2, 3).tobytes()
    assert x.clone().tolist() == x.tolist() and x.devices() == {x.device}  # jax.Array's (clone: PyTorch's too)
    partitioned = fg.array([3.0, 1.0, 2.0, 5.0, 4.0]).argpartition(2)
    assert set(partitioned[:2].tolist()) == {1, 2} and int(partitioned[2]) == 0


def test_repr_is_readable():
    assert repr(fg.array([1.0, 2.5])) == "Array([1. , 2.5], dtype=float32)"
    assert repr(fg.array([[1, 2], [3, 4]], dtype=fg.int32)) == "Array([[1, 2],\n       [3, 4]], dtype=int32)"


def test_arrays_are_immutable():
    x = fg.array([1.0, 2.0])
    with pytest.raises(TypeError, match="immutable"):
        x[0] = 5.0
    view = x.numpy()
    with pytest.raises(ValueError):
        view[0] = 5.0
    copy = np.array(x)
    copy[0] = 5.0
    assert float(x[0]) == 1.0
    source = np.array([1.0, 2.0])
    y = fg.array(source)
    source[0] = 9.0
    assert float(y[0]) == 1.0  # fg.array copies


def test_pytorch_type_promotion():
    f32 = fg.array([1.0], dtype=fg.float32)
    f64 = fg.array([1.0], dtype=fg.float64)
    i64 = fg.array([1], dtype=fg.int64)
    i32 = fg.array([1], dtype=fg.int32)
    bf16 = fg.array([1.0], dtype=fg.bfloat16)
    f16 = fg.array([1.0], dtype=fg.float16)
    b = fg.array([True])
    assert (f32 + f64).dtype == fg.float64
    assert (i64 + f32).dtype == fg.float32  # NumPy would say float64
    assert (i32 + i64).dtype == fg.int64
    assert (bf16 + f16).dtype == fg.float32
    assert (b + i32).dtype == fg.int32
    assert (f32 * 2.5).dtype == fg.float32 and (bf16 * 2.5).dtype == fg.bfloat16
    assert (i64 * 2.5).dtype == fg.float32  # a float scalar lifts ints to the default float
    assert (i32 + 1).dtype == fg.int32
    assert (i64 / 2).dtype == fg.float32 and float((i64 / 2)[0]) == 0.5
    assert fnp.exp(i64).dtype == fg.float32
    assert fnp.mean(i64).dtype == fg.float32
    assert (f16 * np.float64(2.0)).dtype == fg.float16  # NumPy scalars are weak, as in PyTorch
    # a Python number first and NumPy data second is as weak as the other way round
    assert fnp.add(7, np.arange(3, dtype=np.int16)).dtype == fg.int16
    assert fnp.subtract(2.5, np.ones(3, np.float16)).dtype == fg.float16
    assert fnp.multiply(3, np.ones(3, np.uint8)).dtype == fg.uint8


def test_python_floats_stay_weak_in_composed_functions():
    """A Python float beside float64 data is a float64 constant everywhere, not fnp.asarray's float32
    default: 0.1 rounded to float32 made isclose(0.1, 0.1, rtol=0, atol=0) and isin(0.7, [0.7])
    false and moved fmod, fmax, interp, append, insert, dot and polyadd by ~1e-8."""
    x = np.array([0.1, 0.7, 1.2345678912345, -2.5])
    cases = {
        "isclose": lambda m: m.isclose(x, 0.1, rtol=0, atol=0), "fmod": lambda m: m.fmod(x, 0.7),
        "fmax": lambda m: m.fmax(x, 0.7), "fmin": lambda m: m.fmin(0.7, x),
        "interp": lambda m: m.interp(0.7, x[:3], x[:3] * 3),
        "append": lambda m: m.append(x, 0.7), "ediff1d": lambda m: m.ediff1d(x, to_end=0.7),
        "dot": lambda m: m.dot(x, 0.7), "outer": lambda m: m.outer(x, 0.7), "polyadd": lambda m: m.polyadd(x, 0.7),
        "polymul": lambda m: m.polymul(0.7, x), "isin": lambda m: m.isin(x, [0.7, 0.1]),
        "array_equal": lambda m: m.array_equal(x[:2], [0.1, 0.7]), "insert": lambda m: m.insert(x, 1, [0.7]),
    }
    for name, f in cases.items():
        got, want = f(fnp), np.asarray(f(np))
        assert got.dtype == want.dtype, name
        np.testing.assert_array_equal(got, want, err_msg=name)
    assert fnp.allclose(x, [0.1, 0.7, 1.2345678912345, -2.5], rtol=0, atol=0)
    assert fnp.append(np.ones(2, np.float16), 0.5).dtype == fg.float16  # weak beside half precision too (JAX)
    assert fnp.append(np.arange(2), 0.5).dtype == fg.float32  # beside integers: the default float
    with pytest.raises(TypeError, match="cannot make an array from list"):  # ragged: asarray's own error
        fnp.append(x, [[1.0, 2.0], [3.0]])


@pytest.mark.parametrize("dtype", [fg.float16, fg.bfloat16, fg.float32, fg.float64])
def test_low_and_high_precision_arithmetic(dtype):
    a = fg.array([[1.5, -2.0], [0.25, 3.0]], dtype=dtype)
    ref = np.array([[1.5, -2.0], [0.25, 3.0]])
    for got, want in [(a @ a, ref @ ref), (fnp.tanh(a), np.tanh(ref)), (a * 2 + 1, ref * 2 + 1),
                      (fnp.sum(a, axis=0), ref.sum(0))]:
        assert got.dtype == dtype
        assert_close(got, want, rtol=1e-2, atol=1e-2)


def test_unsupported_inputs_are_rejected_by_name():
    with pytest.raises(TypeError, match="str"):
        fg.array(["a", "b"])
    with pytest.raises(TypeError, match="datetime64"):
        fg.array(np.array(["2026-01-01"], "datetime64[D]"))
    with pytest.raises(TypeError, match="complex256 is not supported"):
        fg.array(np.array([1j], np.clongdouble))
    with pytest.raises(TypeError, match="not a dtype"):
        fg.zeros(2, dtype="float7")


def test_array_copies_and_asarray_does_not():
    import funcgrad.numpy as fnp
    a = fg.ones(3)
    copied = fnp.array(a)
    assert copied is not a and not np.shares_memory(np.asarray(a), np.asarray(copied))
    assert fnp.asarray(a) is a and fnp.array(a, copy=False) is a
    donated_step = fg.jit(lambda v: v * 2.0, donate_argnums=0)
    donated_step(copied)
    assert np.asarray(a).tolist() == [1.0, 1.0, 1.0]  # the original survives its copy's donation


def test_host_data_is_copied_so_writing_to_it_never_changes_an_array():
    """jnp.asarray semantics: an Array made from a NumPy array (asarray, device_put, a constant in
    an operation or a jitted function) keeps its value when that NumPy array is written to."""
    import funcgrad.numpy as fnp
    source = np.arange(4, dtype=np.float32)
    jitted = fg.jit(lambda t: t * source)
    made = [fnp.asarray(source), fg.asarray(source), fg.device_put(source), fnp.ones(4) + source,
            jitted(fnp.ones(4)), fnp.asarray(source[::2])]
    source[:] = -1.0
    expected = [[0, 1, 2, 3]] * 3 + [[1, 2, 3, 4], [0, 1, 2, 3], [0, 2]]
    assert [m.tolist() for m in made] == expected
    assert jitted(fnp.ones(4)).tolist() == [0, 1, 2, 3]  # the traced constant, as jax.jit keeps it
    fresh = np.asarray([1.5, 2.5])  # made from a list: converted once, not copied twice
    assert fnp.asarray([1.5, 2.5]).dtype == np.float32 and fnp.asarray(fresh).tolist() == [1.5, 2.5]


def test_dlpack_export_shares_read_only_memory_and_copies_for_legacy_consumers():
    a = fg.asarray(np.arange(4.0))
    shared = np.from_dlpack(a)  # DLPack 1.0: a zero-copy view marked read-only
    assert np.shares_memory(shared, a.numpy()) and not shared.flags.writeable

    class LegacyConsumerView:  # a producer as a pre-1.0 consumer sees it: no max_version
        def __dlpack__(self, stream=None):
            return a.__dlpack__(stream=stream)

        def __dlpack_device__(self):
            return a.__dlpack_device__()

    copied = np.from_dlpack(LegacyConsumerView())  # could be written to: it must not be a's memory
    assert np.array_equal(copied, [0.0, 1.0, 2.0, 3.0]) and not np.shares_memory(copied, a.numpy())
    with pytest.raises(BufferError, match="cannot mark an export read-only"):
        a.__dlpack__(copy=False)
    a.__dlpack__(max_version=(1, 0), copy=False)


def test_device_get_gives_numpy_leaves():
    tree = fg.device_get({"a": fg.ones(2), "b": (3, fnp.zeros(1))})
    assert type(tree["a"]) is np.ndarray and tree["b"][0] == 3 and type(tree["b"][1]) is np.ndarray
    assert fg.default_backend() in ("cpu", "gpu") and fg.device_count() == len(fg.local_devices())
