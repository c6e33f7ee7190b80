"""funcgrad.lax: jax.lax's functions with lax's semantics where they differ from NumPy's, checked
against NumPy formulas (jax itself is not a test dependency; the same cases equal jax.lax's)."""
import numpy as np
import pytest

import funcgrad as fg
import funcgrad.numpy as fnp
from funcgrad import lax

from .helpers import assert_close

RNG = np.random.default_rng(0)
A = RNG.standard_normal((4, 5))


def test_integer_division_truncates_and_rounding_goes_away_from_zero():
    i, j = np.array([-7, 7, -8, 9, 0]), np.array([2, -2, 3, -4, 5])
    assert np.array_equal(lax.div(i, j), np.trunc(i / j).astype(np.int64))  # -7 / 2 = -3, NumPy's // gives -4
    assert np.array_equal(lax.rem(i, j), np.fmod(i, j))
    assert_close(lax.div(A, 2.0), A / 2)
    halves = np.array([0.5, 1.5, 2.5, -0.5, -2.5, 0.49999999999999994, 3.7])
    assert np.array_equal(lax.round(halves), [1, 2, 3, -1, -3, 0, 4])
    assert np.array_equal(lax.round(halves, 1), np.round(halves))
    assert np.array_equal(lax.round(halves, lax.RoundingMethod.TO_NEAREST_EVEN), np.round(halves))
    assert np.array_equal(lax.round(halves, lax.RoundingMethod.AWAY_FROM_ZERO), [1, 2, 3, -1, -3, 0, 4])
    assert np.array_equal(lax.shift_right_logical(np.array([-8, 8], np.int32), np.int32(1)), [2147483644, 4])
    assert np.array_equal(lax.shift_right_arithmetic(np.array([-8, 8], np.int32), np.int32(1)), [-4, 4])
    assert np.array_equal(lax.select_n(np.array([0, 2, 1]), np.zeros(3), np.ones(3), np.full(3, 5.0)), [0, 5, 1])
    narrow = lax.div(np.array([-7, 7], np.int32), np.int32(2))  # a scalar keeps the array's dtype, as lax's
    assert narrow.dtype == np.int32 and narrow.tolist() == [-3, 3]
    assert lax.div(7, np.array([2, -3], np.int16)).dtype == np.int16
    assert_close(lax.logistic(np.array([-50.0, 0.0, 3.0])), 1 / (1 + np.exp([50.0, 0.0, -3.0])), rtol=1e-12)
    # floats to integers as XLA: toward zero, saturating at the range, NaN to 0 (jax.lax's values)
    x = np.array([np.nan, np.inf, -np.inf, 1e10, -1e10, 300.7, -5.5, 2.5, -2.5, 127.9, -128.9], np.float32)
    assert lax.convert_element_type(x, np.int8).tolist() == [0, 127, -128, 127, -128, 127, -5, 2, -2, 127, -128]
    assert lax.convert_element_type(x, np.uint8).tolist() == [0, 255, 0, 255, 0, 255, 0, 2, 0, 127, 0]
    assert lax.convert_element_type(x[:5], np.int32).tolist() == [0, 2 ** 31 - 1, -2 ** 31, 2 ** 31 - 1, -2 ** 31]
    assert lax.convert_element_type(np.array([300, -5]), np.uint8).tolist() == [44, 251]  # integers wrap


def test_dynamic_slices_clamp_their_start_like_xla_and_take_traced_starts():
    for start, clamped in [((1, 2), (1, 2)), ((3, 4), (2, 2)), ((-2, 1), (2, 1)), ((10, -10), (2, 0))]:
        assert_close(lax.dynamic_slice(A, start, (2, 3)), A[clamped[0]:clamped[0] + 2, clamped[1]:clamped[1] + 3])
        expected = A.copy()
        expected[clamped[0]:clamped[0] + 2, clamped[1]:clamped[1] + 3] = 1.0
        assert_close(lax.dynamic_update_slice(A, np.ones((2, 3)), start), expected)
    assert_close(fg.jit(lambda a, i: lax.dynamic_slice_in_dim(a, i, 2, 1))(A, 4), A[:, 3:5])
    assert_close(lax.dynamic_index_in_dim(A, 2, 0, keepdims=False), A[2])
    assert_close(lax.dynamic_update_index_in_dim(A, np.zeros(5), 1, 0), np.where(np.arange(4)[:, None] == 1, 0, A))
    grad = fg.grad(lambda a: fnp.sum(lax.dynamic_update_slice(a, np.zeros((2, 2)), (1, 1)) * 3.0))(A)
    assert_close(grad, np.where((np.arange(4)[:, None] % 3 != 0) & (np.arange(5) % 4 != 0)
                                & (np.arange(5) < 3), 0.0, 3.0))
    with pytest.raises(ValueError, match="window of size 5 does not fit an axis of 4"):
        lax.dynamic_slice(A, (0, 0), (5, 1))


def test_pad_with_interior_and_negative_edges():
    assert np.array_equal(lax.pad(np.arange(3.0), -1.0, [(1, 2, 2)]), [-1, 0, -1, -1, 1, -1, -1, 2, -1, -1])
    assert np.array_equal(lax.pad(np.arange(5.0), 9.0, [(-2, -1, 0)]), [2, 3])
    out = lax.pad(A, 0.0, ((1, 0, 1), (0, -1, 0)))
    expected = np.zeros((8, 4))
    expected[1::2] = A[:, :4]
    assert_close(out, expected)
    assert_close(fg.grad(lambda a: fnp.sum(lax.pad(a, 0.0, ((1, 0, 1), (0, -1, 0)))))(A),
                 np.broadcast_to(np.arange(5) < 4, A.shape).astype(float))
    assert_close(fg.grad(lambda v: fnp.sum(lax.pad(np.ones(2), v, [(1, 1, 1)])))(2.0), 3.0)  # a traced fill value


def test_scans_and_associative_scan_match_sequential_folds():
    for n in (1, 2, 5, 8, 13):
        x = np.arange(1.0, n + 1)
        assert_close(lax.associative_scan(fnp.add, x), np.cumsum(x))
        assert_close(lax.associative_scan(fnp.add, x, reverse=True), np.cumsum(x[::-1])[::-1])
    mats = RNG.standard_normal((7, 2, 2))
    prefix = [mats[0]]
    for m in mats[1:]:
        prefix.append(prefix[-1] @ m)
    assert_close(lax.associative_scan(fnp.matmul, mats), np.stack(prefix))  # associative, not commutative
    sums, maxima = lax.associative_scan(lambda a, b: (a[0] + b[0], fnp.maximum(a[1], b[1])), (A, -A), axis=1)
    assert_close(sums, np.cumsum(A, 1))
    assert_close(maxima, np.maximum.accumulate(-A, 1))
    assert_close(lax.cummax(A, axis=1, reverse=True), np.maximum.accumulate(A[:, ::-1], 1)[:, ::-1])
    assert_close(lax.cummin(A, axis=0), np.minimum.accumulate(A, 0))
    assert_close(lax.cumlogsumexp(A, axis=1), np.logaddexp.accumulate(A, 1))
    assert_close(lax.cumsum(A, 1, reverse=True), np.cumsum(A[:, ::-1], 1)[:, ::-1])
    fg.check_grads(lambda v: lax.associative_scan(fnp.multiply, v), (np.arange(1.0, 8.0),), order=2)


def test_sort_several_operands_by_keys_and_dot_general():
    keys = np.array([[3, 1, 2, 1], [0, 0, 1, 1]])
    values = np.arange(8.0).reshape(2, 4)
    sorted_keys, sorted_values = lax.sort((keys, values), dimension=1)
    order = np.argsort(keys, 1, kind="stable")
    assert np.array_equal(sorted_keys, np.take_along_axis(keys, order, 1))
    assert np.array_equal(sorted_values, np.take_along_axis(values, order, 1))
    by_two = lax.sort((keys[1], keys[0], values[0]), num_keys=2)
    assert np.array_equal(by_two[2], values[0][np.lexsort((keys[0], keys[1]))])
    b, c = RNG.standard_normal((3, 5, 2)), RNG.standard_normal((3, 2, 4))
    assert_close(lax.dot_general(b, c, (((2,), (1,)), ((0,), (0,)))), b @ c)
    x, y = RNG.standard_normal((2, 3, 4)), RNG.standard_normal((4, 2, 5))
    assert_close(lax.dot_general(x, y, (((2,), (0,)), ((0,), (1,)))), np.einsum("bik,kbj->bij", x, y))


def test_shape_helpers():
    assert np.array_equal(lax.iota(np.int32, 3, 1, (2, 3)), [[0, 1, 2], [0, 1, 2]])
    assert lax.broadcast(A, (2,)).shape == (2, 4, 5) and lax.collapse(np.zeros((2, 3, 4, 5)), 1, 3).shape == (2, 12, 5)
    assert_close(lax.reshape(A, (5, 4), (1, 0)), A.T)
    assert_close(lax.slice(A, (1, 0), (4, 5), (2, 2)), A[1:4:2, 0:5:2])
    assert_close(lax.index_in_dim(A, -1, 1, keepdims=False), A[:, -1])
    assert_close(lax.rev(A, (0, 1)), A[::-1, ::-1])


@pytest.mark.parametrize("dtype", [np.int8, np.uint8, np.int16, np.int32, np.uint32, np.int64, np.uint64])
def test_bit_counts_high_products_and_xor_reductions_against_python_integers(dtype):
    info = np.iinfo(dtype)
    rng = np.random.default_rng(3)
    a = rng.integers(info.min, info.max, 24, dtype=dtype, endpoint=True)
    b = rng.integers(info.min, info.max, 24, dtype=dtype, endpoint=True)
    a[:4], b[:4] = [0, 1, info.max, info.min], [info.max, info.min, info.max, info.min]
    width = 8 * np.dtype(dtype).itemsize
    unsigned = [int(v) % 2 ** width for v in a]  # two's complement bits
    np.testing.assert_array_equal(lax.clz(a), [width - u.bit_length() for u in unsigned])
    np.testing.assert_array_equal(lax.population_count(a), [bin(u).count("1") for u in unsigned])
    high = [(int(x) * int(y)) >> width for x, y in zip(a, b)]  # Python's exact product, floor-shifted
    np.testing.assert_array_equal(lax.mulhi(a, b), np.array([h % 2 ** width for h in high], np.uint64).astype(dtype))
    assert lax.clz(a).dtype == dtype and lax.mulhi(a, b).dtype == dtype
    grid = a[:21].reshape(3, 7)
    np.testing.assert_array_equal(lax.reduce_xor(grid, (1,)), np.bitwise_xor.reduce(grid, axis=1))
    np.testing.assert_array_equal(lax.reduce_xor(grid, (0, 1)), np.bitwise_xor.reduce(grid.ravel()))


def test_reduce_precision_rounds_as_the_narrow_formats_and_bitcasts_reshape():
    import ml_dtypes
    rng = np.random.default_rng(4)
    x = (rng.standard_normal(400) * 10.0 ** rng.integers(-6, 6, 400)).astype(np.float32)
    for (e, m), narrow in [((8, 7), ml_dtypes.bfloat16), ((5, 10), np.float16), ((5, 2), ml_dtypes.float8_e5m2)]:
        normal = np.abs(x) >= float(ml_dtypes.finfo(narrow).smallest_normal)  # XLA flushes narrow subnormals
        with np.errstate(over="ignore"):  # past the narrow format's largest: inf, as reduce_precision's
            expected = x[normal].astype(narrow).astype(np.float32)
        np.testing.assert_array_equal(np.asarray(lax.reduce_precision(x, e, m))[normal], expected)
    edges = np.array([1e-6, -1e-6, 70000.0, -1e30, np.inf, np.nan, -0.0], np.float32)
    np.testing.assert_array_equal(lax.reduce_precision(edges, 5, 10),
                                  [0.0, -0.0, np.inf, -np.inf, np.inf, np.nan, -0.0])
    assert np.signbit(np.asarray(lax.reduce_precision(edges, 5, 10))[1])
    np.testing.assert_array_equal(lax.reduce_precision(np.float64(1 + 2 ** -30), 11, 23), 1.0)  # a tie goes to even
    parts = lax.bitcast_convert_type(np.array([1.0, -2.0], np.float32), np.uint16)
    assert parts.shape == (2, 2)
    np.testing.assert_array_equal(parts, np.array([1.0, -2.0], np.float32).view(np.uint16).reshape(2, 2))
    np.testing.assert_array_equal(lax.bitcast_convert_type(parts, np.float32), [1.0, -2.0])
    with pytest.raises(ValueError, match="needs a last axis of 2"):
        lax.bitcast_convert_type(np.ones(3, np.uint16), np.float32)


def test_array_helpers_as_jax_lax():
    x = np.arange(24).reshape(2, 3, 4)
    np.testing.assert_array_equal(lax.index_take(x, (np.array([0, 1, -1]), np.array([1, 5, 2])), (0, 2)),
                                  [x[0, :, 1], x[1, :, 1], x[1, :, 2]])
    first, rest = lax.split(np.arange(10), [3, 7])
    np.testing.assert_array_equal(rest, np.arange(3, 10))
    with pytest.raises(ValueError, match="add up to 10"):
        lax.split(np.arange(10), [3, 3])
    v = np.array([[3.0, 1, 4, 1, 5], [9, 2, 6, 5, 3]])
    values, indices = lax.approx_min_k(v, 1, reduction_dimension=0)
    np.testing.assert_array_equal(values, v.min(0, keepdims=True))
    np.testing.assert_array_equal(indices, v.argmin(0)[None])
    values, indices = lax.approx_max_k(v, 2)
    np.testing.assert_array_equal(values, [[5, 4], [9, 6]])
    np.testing.assert_array_equal(lax.broadcasted_iota(np.int32, (2, 3), 1), [[0, 1, 2], [0, 1, 2]])
    assert lax.broadcast_to_rank(np.ones(3), 3).shape == (1, 1, 3)
    np.testing.assert_array_equal(lax.unstack(x, axis=2)[3], x[:, :, 3])
    assert lax.optimization_barrier((1.0, x))[1] is not None


def test_fft_kinds_and_patches():
    x = np.arange(6.0).reshape(2, 3)
    assert_close(lax.fft(x.astype(np.complex128), "fft", (3,)), np.fft.fft(x))
    assert_close(lax.fft(x.astype(np.complex128), lax.FftType.IFFT, (2, 3)), np.fft.ifft2(x))
    assert_close(lax.fft(x, lax.FftType.RFFT, (3,)), np.fft.rfft(x))
    assert_close(lax.fft(np.fft.rfft(x), lax.FftType.IRFFT, (3,)), x)
    with pytest.raises(ValueError, match=r"needs trailing axes \(4,\)"):
        lax.fft(x.astype(np.complex128), "fft", (4,))
    img = np.random.default_rng(6).standard_normal((2, 3, 4, 5))
    patches = np.asarray(lax.conv_general_dilated_patches(img, (2, 3), (1, 2), "VALID"))
    assert patches.shape == (2, 3 * 6, 3, 2)
    for c, i, j, oy, ox in [(0, 0, 0, 0, 0), (2, 1, 2, 2, 1), (1, 0, 1, 1, 0)]:  # feature c*6 + (i*3 + j)
        np.testing.assert_allclose(patches[:, c * 6 + i * 3 + j, oy, ox], img[:, c, oy + i, 2 * ox + j])


def test_custom_gradient_gives_the_hand_written_vjp():
    @fg.custom_gradient
    def clipped_product(x, y):
        return x * y, lambda g: (fnp.clip(g * y, -1.0, 1.0), g * x)
    assert float(clipped_product(2.0, 5.0)) == 10.0
    gx, gy = fg.grad(clipped_product, argnums=(0, 1))(2.0, 5.0)
    assert (float(gx), float(gy)) == (1.0, 2.0)  # 5 clipped to 1

    @fg.custom_gradient
    def square(x):
        return x ** 2, lambda g: g * x  # a deliberately halved derivative, one cotangent
    assert float(fg.grad(square)(3.0)) == 3.0
    assert float(fg.grad(fg.grad(lambda x: square(x) * x))(3.0)) == 12.0  # d/dx (x * x + x^2)


def test_gather_and_scatter_by_dimension_numbers():
    rng = np.random.default_rng(8)
    x = rng.standard_normal((5, 6, 4))
    G, S = lax.GatherDimensionNumbers, lax.ScatterDimensionNumbers
    rows = np.array([[1], [4], [0]])
    take_rows = G(offset_dims=(1, 2), collapsed_slice_dims=(0,), start_index_map=(0,))
    assert_close(lax.gather(x, rows, take_rows, (1, 6, 4)), x[[1, 4, 0]])
    starts = np.array([[1, 2], [3, 5]])  # (row, column) starts of 2 x 3 windows in plane 0 of axis 2
    windows = G(offset_dims=(1, 2), collapsed_slice_dims=(2,), start_index_map=(0, 1))
    clipped = [x[1:3, 2:5, 0], x[3:5, 3:6, 0]]  # column 5 + 3 runs past 6: the window moves back to 3
    assert_close(lax.gather(x, starts, windows, (2, 3, 1), mode="clip"), np.stack(clipped))
    filled = np.asarray(lax.gather(x, starts, windows, (2, 3, 1), mode="fill"))
    assert_close(filled[0], clipped[0])
    assert np.isnan(filled[1]).all()
    assert_close(fg.jit(lambda s: lax.gather(x, s, windows, (2, 3, 1), mode="clip"))(starts), np.stack(clipped))
    per_row = G(offset_dims=(1,), collapsed_slice_dims=(1,), start_index_map=(1,), operand_batching_dims=(0,),
                start_indices_batching_dims=(0,))
    cols = np.array([[2], [0], [3], [1], [2]])
    assert_close(lax.gather(x, cols, per_row, (1, 1, 4)), x[np.arange(5), cols[:, 0]])
    upd = rng.standard_normal((3, 6, 4))
    into_rows = S(update_window_dims=(1, 2), inserted_window_dims=(0,), scatter_dims_to_operand_dims=(0,))
    expected = x.copy()
    np.add.at(expected, [1, 4, 1], upd)
    assert_close(lax.scatter_add(x, np.array([[1], [4], [1]]), upd, into_rows), expected)
    expected = x.copy()
    np.maximum.at(expected, [1, 4, 1], upd)
    assert_close(lax.scatter_max(x, np.array([[1], [4], [1]]), upd, into_rows), expected)
    assert_close(fg.grad(lambda u: fnp.sum(lax.scatter_add(x, np.array([[1], [4], [1]]), u, into_rows) ** 2))(upd),
                 2 * np.asarray(lax.scatter_add(x, np.array([[1], [4], [1]]), upd, into_rows))[[1, 4, 1]])
    spans = S(update_window_dims=(1,), inserted_window_dims=(), scatter_dims_to_operand_dims=(0,))
    starts = np.array([[4], [-1], [1]])  # windows of 3 in a length-6 axis: two run off it
    weights = np.ones((3, 3)) * np.array([[1.0], [10.0], [100.0]])
    assert_close(lax.scatter_add(np.zeros(6), starts, weights, spans), [0, 100, 100, 100, 0, 0])  # dropped
    assert_close(lax.scatter_add(np.zeros(6), starts, weights, spans, mode="clip"), [10, 110, 110, 101, 1, 1])
    twice = lax.scatter_apply(x, np.array([[1], [4], [1]]), lambda v: v * 10, into_rows, update_shape=(3, 6, 4))
    assert_close(np.asarray(twice) / x, np.broadcast_to(np.array([1, 100, 1, 1, 10.0])[:, None, None], x.shape))
