"""funcgrad.numpy's composed functions against NumPy, with gradients, jit and vmap where they apply."""
import numpy as np
import pytest

import funcgrad as fg
import funcgrad.numpy as fnp

from .helpers import assert_close

RNG = np.random.default_rng(0)
M = RNG.standard_normal((3, 4)).astype(np.float32)
V = RNG.standard_normal(5).astype(np.float32)
C = RNG.standard_normal((2, 3, 4)).astype(np.float32)
WITH_NAN = np.array([[1.0, np.nan, 3.0, -2.0], [np.nan, np.nan, np.nan, np.nan], [0.5, 4.0, -1.0, 2.0]], np.float32)
INTS = np.array([3, 1, 4, 1, 5, 9, 2, 6], np.int64)


def _flat(parts):
    """Several results (a fit and its covariance) as one array, with each one's shape kept apart."""
    return np.concatenate([np.ravel(np.asarray(p)) for p in parts] + [np.float64(np.shape(p)) for p in parts])


# (label, funcgrad call, NumPy call): both called with the module as the argument
CASES = [
    ("atleast_3d", lambda m: m.atleast_3d(V), None),
    ("hstack", lambda m: m.hstack([M, M[:, :2]]), None),
    ("vstack", lambda m: m.vstack([V, V]), None),
    ("dstack", lambda m: m.dstack([M, M]), None),
    ("column_stack", lambda m: m.column_stack([V, V * 2]), None),
    ("append", lambda m: m.append(M, V), None),
    ("array_split", lambda m: m.array_split(V, 3)[0], None),
    ("array_split_last", lambda m: m.array_split(V, 3)[2], None),
    ("hsplit", lambda m: m.hsplit(M, 2)[1], None),
    ("diagonal", lambda m: m.diagonal(C, 1, 1, 2), None),
    ("diagonal_neg", lambda m: m.diagonal(M, -1), None),
    ("diag_vec", lambda m: m.diag(V, -2), None),
    ("diag_mat", lambda m: m.diag(M, 1), None),
    ("diagflat", lambda m: m.diagflat(M[:2, :2], 1), None),
    ("trace", lambda m: m.trace(C, 0, 0, 2), None),
    ("diff", lambda m: m.diff(M, 2, axis=1), None),
    ("diff_prepend", lambda m: m.diff(V, prepend=0.0, append=V[:2]), None),
    ("diff_bool", lambda m: m.diff(V > 0), None),
    ("ediff1d", lambda m: m.ediff1d(M, to_begin=[9.0]), None),
    ("cumprod", lambda m: m.cumprod(M, axis=1), None),
    ("cumprod_flat", lambda m: m.cumprod(INTS), None),
    ("nancumsum", lambda m: m.nancumsum(WITH_NAN, axis=1), None),
    ("isclose", lambda m: m.isclose(V, V + 1e-6), None),
    ("isclose_nan", lambda m: m.isclose(WITH_NAN, WITH_NAN, equal_nan=True), None),
    ("logaddexp", lambda m: m.logaddexp(V, V[::-1] * 30), None),
    ("logaddexp_inf", lambda m: m.logaddexp(np.float32([-np.inf, np.inf, 1]), np.float32([-np.inf, np.inf, -np.inf])),
     None),
    ("logaddexp2", lambda m: m.logaddexp2(V, V[::-1]), None),
    ("exp2", lambda m: m.exp2(np.arange(-3.0, 10.0, dtype=np.float32)), None),
    ("cbrt", lambda m: m.cbrt(np.float32([-27, -1, 0, 8, 2.5])), None),
    ("copysign", lambda m: m.copysign(V, np.float32([1, -1, -0.0, 0.0, -3])), None),
    ("signbit", lambda m: m.signbit(np.float32([-1, -0.0, 0.0, 2])), None),
    ("deg2rad", lambda m: m.deg2rad(V * 90), None),
    ("rad2deg", lambda m: m.degrees(V), None),
    ("fmax", lambda m: m.fmax(WITH_NAN, 1.5), None),
    ("fmin", lambda m: m.fmin(WITH_NAN[0], np.float32([np.nan, 0, np.nan, 5])), None),
    ("fmod_float", lambda m: m.fmod(np.float32([-7.5, 7.5, -7, 7, 0]), np.float32([2, -2, 3, -3, 1])), None),
    ("fmod_int", lambda m: m.fmod(np.array([-7, 7, -7, 7, 6]), np.array([3, -3, -3, 3, 3])), None),
    # an infinite divisor leaves the dividend; a zero remainder keeps the dividend's sign bit
    ("fmod_special", lambda m: m.fmod(np.float32([1, -1, 0, -0.0, 5, np.inf, 2]),
                                       np.float32([-np.inf, np.inf, -2, 2, -np.inf, 3, 0])), None),
    ("copysign_promotes", lambda m: m.copysign(V, np.float64([1, -1, -0.0, 0.0, -3])), None),
    ("heaviside", lambda m: m.heaviside(np.float32([-1, 0, 2, np.nan]), 0.5), None),
    ("hypot", lambda m: m.hypot(V, M[0, 0]), None),
    ("hypot_big", lambda m: m.hypot(np.float32([3e30, 0, np.inf]), np.float32([4e30, 0, np.nan])), None),
    ("float_power", lambda m: m.float_power(np.arange(1, 5), -1.5), None),
    ("ldexp", lambda m: m.ldexp(V, np.array([1, 2, -1, 0, 3])), None),
    ("rint", lambda m: m.rint(np.float32([0.5, 1.5, 2.5, -0.5, 2.6])), None),
    ("around", lambda m: m.around(V, 2), None),
    ("fix", lambda m: m.fix(np.float32([-1.7, 1.7, 0.2])), None),
    ("sinc", lambda m: m.sinc(np.float32([0, 0.5, -1.5, 2])), None),
    ("nan_to_num", lambda m: m.nan_to_num(np.float32([np.nan, np.inf, -np.inf, 1]), posinf=9.0), None),
    ("nan_to_num_default", lambda m: m.nan_to_num(np.float32([np.nan, np.inf, -np.inf, 1])), None),
    ("nansum", lambda m: m.nansum(WITH_NAN, axis=1), None),
    ("nanprod", lambda m: m.nanprod(WITH_NAN, axis=0), None),
    ("nanmean", lambda m: m.nanmean(WITH_NAN[[0, 2]], axis=1), None),
    ("nanvar", lambda m: m.nanvar(WITH_NAN[[0, 2]], axis=1, ddof=1), None),
    ("nanstd", lambda m: m.nanstd(WITH_NAN[[0, 2]]), None),
    # an infinity among the values makes its slice's variance NaN, as without the NaNs
    ("nanvar_inf", lambda m: m.nanvar(np.float32([[1.5, np.inf, -np.inf, np.nan], [np.inf, 1, np.nan, 2]]), axis=1),
     None),
    ("nanvar_complex", lambda m: m.nanvar(np.complex64([1 + 2j, 3 - 1j, np.nan, 2j])), None),
    ("nanmax", lambda m: m.nanmax(WITH_NAN[[0, 2]], axis=1), None),
    ("nanmin_keep", lambda m: m.nanmin(WITH_NAN[[0, 2]], axis=0, keepdims=True), None),
    ("nanargmax", lambda m: m.nanargmax(WITH_NAN[[0, 2]], axis=1), None),
    ("nanargmin", lambda m: m.nanargmin(WITH_NAN[0]), None),
    ("quantile", lambda m: m.quantile(M, 0.3, axis=1), None),
    ("quantile_vec", lambda m: m.quantile(C, np.float32([0.1, 0.5, 1.0]), axis=(0, 2), keepdims=True), None),
    ("quantile_methods", lambda m: m.stack([m.quantile(V, 0.4, method=k) for k in
                                             ("lower", "higher", "nearest", "midpoint")]), None),
    ("percentile", lambda m: m.percentile(M, 75), None),
    ("median", lambda m: m.median(C, axis=1), None),
    ("median_nan", lambda m: m.median(WITH_NAN, axis=1), None),
    ("nanmedian", lambda m: m.nanmedian(WITH_NAN[[0, 2]], axis=1), None),
    ("nanquantile", lambda m: m.nanquantile(WITH_NAN[[0, 2]], 0.25, axis=1), None),
    ("average", lambda m: m.average(M, axis=1, weights=np.float32([1, 2, 3, 4])), None),
    ("average_returned", lambda m: m.average(M, axis=0, weights=M * M, returned=True)[1], None),
    ("ptp", lambda m: m.ptp(M, axis=0), None),
    ("count_nonzero", lambda m: m.count_nonzero(np.array([[0, 1, 2], [3, 0, 0]]), axis=0), None),
    ("meshgrid_xy", lambda m: m.meshgrid(V[:3], V[:2])[0], None),
    ("meshgrid_ij", lambda m: m.meshgrid(V[:3], V[:2], V, indexing="ij")[2], None),
    ("meshgrid_sparse", lambda m: m.meshgrid(V[:3], V[:2], sparse=True)[1], None),
    ("repeat", lambda m: m.repeat(M, 2, axis=0), None),
    ("repeat_counts", lambda m: m.repeat(V, np.array([1, 0, 2, 3, 1])), None),
    ("tile", lambda m: m.tile(M, (2, 1, 3)), None),
    ("tile_int", lambda m: m.tile(V, 2), None),
    ("roll", lambda m: m.roll(M, -1, axis=1), None),
    ("roll_flat", lambda m: m.roll(M, 5), None),
    ("roll_multi", lambda m: m.roll(C, (1, -2), axis=(0, 2)), None),
    ("rot90", lambda m: m.rot90(C, 1, (1, 2)), None),
    ("rot90_3", lambda m: m.rot90(M, 3), None),
    ("rot90_2", lambda m: m.rot90(M, 2), None),
    ("fliplr", lambda m: m.fliplr(M), None),
    ("flipud", lambda m: m.flipud(M), None),
    ("searchsorted", lambda m: m.searchsorted(np.sort(V), M), None),
    ("searchsorted_right", lambda m: m.searchsorted(np.float32([1, 2, 2, 3]), np.float32([2, 0, 5]), side="right"),
     None),
    ("digitize", lambda m: m.digitize(V, np.float32([-1, 0, 1])), None),
    ("digitize_right_dec", lambda m: m.digitize(V, np.float32([1, 0, -1]), right=True), None),
    ("bincount", lambda m: m.bincount(INTS, minlength=12), None),
    ("bincount_w", lambda m: m.bincount(INTS, weights=np.arange(8.0, dtype=np.float32)), None),
    ("histogram", lambda m: m.histogram(M, bins=4)[0], lambda m: np.histogram(M, bins=4)[0].astype(np.float32)),
    ("histogram_edges", lambda m: m.histogram(M, bins=4, range=(-1, 1))[1], None),
    ("histogram_w", lambda m: m.histogram(V, bins=np.float32([-2, 0, 0.5, 2]), weights=V, density=True)[0], None),
    ("cross", lambda m: m.cross(C[:, :, :3], C[:, :, 1:]), None),
    ("cross_2d", lambda m: m.cross(M[:, :2], M[:, 2:]), None),
    ("cross_axis", lambda m: m.cross(M[:3, :3], M[:3, 1:], axis=0), None),
    ("kron", lambda m: m.kron(M[:2, :3], M[:2, :2]), None),
    ("cov", lambda m: m.cov(M), None),
    ("cov_y", lambda m: m.cov(M, M * 2 + 1, rowvar=False, ddof=0), None),
    ("cov_weights", lambda m: m.cov(M, fweights=np.array([1, 2, 1, 3]), aweights=np.float32([0.5, 1, 2, 1])), None),
    ("corrcoef", lambda m: m.corrcoef(M), None),
    ("interp", lambda m: m.interp(V, np.float32([-1, 0, 0.5, 2]), np.float32([3, 1, 2, 0])), None),
    ("interp_lr", lambda m: m.interp(V * 3, np.float32([-1, 0, 2]), np.float32([3, 1, 0]), left=-5, right=5), None),
    ("interp_period", lambda m: m.interp(V * 200, np.float32([-180, -90, 0, 90]), np.float32([1, 2, 3, 4]), period=360),
     None),
    ("trapezoid", lambda m: m.trapezoid(M, dx=0.5), None),
    ("trapezoid_x", lambda m: m.trapezoid(M, x=np.float32([0, 1, 3, 4])), None),
    ("polyval", lambda m: m.polyval(np.float32([2, -1, 3]), V), None),
    ("isin", lambda m: m.isin(INTS, [1, 9, 7]), None),
    ("isin_invert", lambda m: m.isin(INTS, np.array([1, 9]), invert=True), None),
    ("nonzero", lambda m: m.nonzero(M > 0)[1], None),
    ("argwhere", lambda m: m.argwhere(M > 0), None),
    ("flatnonzero", lambda m: m.flatnonzero(M > 0), None),
    ("unique", lambda m: m.unique(INTS), None),
    ("unique_counts", lambda m: m.unique(INTS, return_counts=True)[1], None),
    ("intersect1d", lambda m: m.intersect1d(INTS, [1, 2, 10]), None),
    ("intersect1d_indices_1", lambda m: m.intersect1d(INTS, [2, 1, 10], return_indices=True)[1], None),
    ("intersect1d_indices_2", lambda m: m.intersect1d(INTS, [2, 1, 10], return_indices=True)[2], None),
    ("einsum_optimize", lambda m: m.einsum("ij,jk->ik", M, M.T, optimize=True), None),
    ("union1d", lambda m: m.union1d(INTS, [1, 2, 10]), None),
    ("setdiff1d", lambda m: m.setdiff1d(INTS, [1, 2, 10]), None),
    ("identity", lambda m: m.identity(3), None),
    ("logspace", lambda m: m.logspace(0, 2, 5), None),
    ("geomspace", lambda m: m.geomspace(1, 1000, 4), None),
    ("indices", lambda m: m.indices((2, 3)), None),
    ("tril_indices", lambda m: m.tril_indices(4, -1)[1], None),
    ("triu_indices_from", lambda m: m.triu_indices_from(M, 1)[0], None),
    ("unravel_index", lambda m: m.unravel_index(np.array([0, 5, 11, 7]), (3, 4))[0], None),
    ("ravel_multi_index", lambda m: m.ravel_multi_index((np.array([0, 2]), np.array([3, 1])), (3, 4)), None),
    ("mgrid", lambda m: m.mgrid[0:3, 0:1:0.25][1], lambda m: np.mgrid[0:3, 0:1:0.25][1].astype(np.float32)),
    ("ogrid", lambda m: m.ogrid[0:4, 0:3][0], None),
    ("select", lambda m: m.select([V < -0.5, V > 0.5], [V * 10, V * 100], -1.0), None),
    ("choose", lambda m: m.choose(np.array([0, 2, 1, 0]), [M[0], M[1], M[2]]), None),
    ("choose_wrap", lambda m: m.choose(np.array([0, 4, -1, 1]), [M[0], M[1], M[2]], mode="wrap"), None),
    ("piecewise", lambda m: m.piecewise(V, [V < 0, V >= 0], [lambda x: -x, lambda x: x * 2]), None),
    ("piecewise_default", lambda m: m.piecewise(V, [V < -0.5], [0.0, lambda x: x + 1]), None),
    ("compress", lambda m: m.compress([True, False, True], M, axis=0), None),
    ("extract", lambda m: m.extract(M > 0, M), None),
    ("delete", lambda m: m.delete(M, [0, 2], axis=1), None),
    ("delete_flat", lambda m: m.delete(M, 3), None),
    ("resize", lambda m: m.resize(V, (3, 4)), None),
    ("block", lambda m: m.block([[M, M[:, :1]], [M[:1], M[:1, :1]]]), None),
    ("block_1d", lambda m: m.block([V, V[:2]]), None),
    ("trim_zeros", lambda m: m.trim_zeros(np.array([0, 0, 1, 2, 0, 3, 0])), None),
    ("trim_zeros_f", lambda m: m.trim_zeros(np.array([0, 0, 1, 2, 0]), "f"), None),
    ("gcd", lambda m: m.gcd(np.array([12, 18, 7]), 6), None),
    ("lcm", lambda m: m.lcm(np.array([4, 6, 7]), 6), None),
    ("frexp", lambda m: m.frexp(V)[0], None),
    ("lexsort", lambda m: m.lexsort((INTS, INTS % 3)), None),
    ("vecdot", lambda m: m.vecdot(M, M), lambda m: np.sum(M * M, axis=-1)),
    ("matrix_transpose", lambda m: m.matrix_transpose(C), lambda m: np.swapaxes(C, -1, -2)),
    ("cumulative_sum", lambda m: m.cumulative_sum(V, include_initial=True), lambda m: np.concatenate([[0], np.cumsum(V)])),
    ("fill_diagonal", lambda m: m.fill_diagonal(M, 7.0, inplace=False),
     lambda m: np.where(np.eye(3, 4, dtype=bool), 7, M)),
    ("polyadd", lambda m: m.polyadd(V[:3], V[3:]), None),
    ("polysub_scalar", lambda m: m.polysub(V[:3], 2.0), None),
    ("polymul", lambda m: m.polymul(V[:3], V[:2]), None),
    ("polyder", lambda m: m.polyder(V, 2), None),
    ("polyder_past_degree", lambda m: m.polyder(V[:2], 3), None),
    ("polyint", lambda m: m.polyint(V[:4], 2, k=[1.0, -2.0]), None),
    ("polyfit", lambda m: m.polyfit(np.float32([0, 1, 2, 3, 5]), np.float32([1, 3, 2, 5, 4]), 2), None),
    ("polyfit_weights_columns", lambda m: m.polyfit(np.float32([0, 1, 2, 3, 5]), np.float32([[1, 2], [3, 1], [2, 2],
                                                                                           [5, 0], [4, 1]]), 1,
                                                   w=np.float32([1, 2, 1, 0.5, 1])), None),
    ("polyfit_cov", lambda m: _flat(m.polyfit(np.float64([0, 1, 2, 3, 5, 6]), np.float64([1, 3, 2, 5, 4, 7]), 2,
                                              cov=True)), None),
    ("polyfit_cov_unscaled_columns", lambda m: _flat(m.polyfit(np.float64([0, 1, 2, 3, 5]), np.float64(
        [[1, 2], [3, 1], [2, 2], [5, 0], [4, 1]]), 1, w=np.float64([1, 2, 1, 0.5, 1]), cov="unscaled")), None),
    ("polyfit_cov_columns", lambda m: _flat(m.polyfit(np.float64([0, 1, 2, 3, 5]), np.float64(
        [[1, 2], [3, 1], [2, 2], [5, 0], [4, 1]]), 1, w=np.float64([1, 2, 1, 0.5, 1]), cov=True)), None),
    ("poly", lambda m: m.poly(np.float32([1, -2, 0.5])), None),
    ("vander", lambda m: m.vander(V[:3], 4, increasing=True), None),
    ("unwrap", lambda m: m.unwrap(np.cumsum(V * 4)), None),
    ("unwrap_period_axis", lambda m: m.unwrap(M * 5, period=3.0, axis=0), None),
    ("hamming", lambda m: m.hamming(7), None),
    ("hanning", lambda m: m.hanning(6), None),
    ("bartlett", lambda m: m.bartlett(5), None),
    ("blackman", lambda m: m.blackman(8), None),
    ("modf", lambda m: m.modf(np.float32([-3.5, -2.0, 0.25, np.inf]))[0], None),
    ("divmod", lambda m: m.divmod(np.array([-7, 7, 9]), np.array([2, -3, 4]))[1], None),
    ("isposinf", lambda m: m.isposinf(np.float32([np.inf, -np.inf, 1])), None),
    ("isneginf", lambda m: m.isneginf(np.float32([np.inf, -np.inf, 1])), None),
    ("setxor1d", lambda m: m.setxor1d(INTS, [1, 2, 10]), None),
    ("histogram_bin_edges", lambda m: m.histogram_bin_edges(V, 4, (-1, 2)), None),
    *((f"histogram_bins_{rule}", lambda m, rule=rule: m.histogram(M.ravel(), bins=rule)[1], None)
      for rule in ("auto", "fd", "doane", "scott", "stone", "rice", "sturges", "sqrt")),
    ("insert_block", lambda m: m.insert(M, 1, V[:3], axis=1), None),
    ("insert_several", lambda m: m.insert(M, [3, 0, 0], np.float32([[1], [2], [3]]), axis=1), None),
    ("insert_one_listed", lambda m: m.insert(M, [2], np.float32([[7, 8, 9, 6]]), axis=0), None),
    ("insert_flat_slice", lambda m: m.insert(M, slice(1, 5, 2), [5.0, 6.0]), None),
    ("insert_none", lambda m: m.insert(M, [], 9.0, axis=1), None),
    ("apply_over_axes", lambda m: m.apply_over_axes(m.sum, C, [0, 2]), None),
    ("fromfunction", lambda m: m.fromfunction(lambda i, j: i * 10 + j, (3, 4)),
     lambda m: np.fromfunction(lambda i, j: i * 10 + j, (3, 4), dtype=np.float32)),
    ("histogram2d", lambda m: m.histogram2d(M[0], M[1], [2, np.float32([-2, 0, 1, 2])], weights=M[2])[0], None),
    ("histogramdd_density", lambda m: m.histogramdd(C.reshape(-1, 3)[:6], (2, 1, 3), density=True)[0], None),
    ("polydiv", lambda m: m.polydiv(np.float32([1, -3, 2, 5]), np.float32([1, -1]))[1], None),
    ("tensorinv", lambda m: m.linalg.tensorinv(np.eye(6, dtype=np.float32).reshape(2, 3, 6) * 2 + 0.1), None),
    ("tensorsolve", lambda m: m.linalg.tensorsolve(np.eye(6, dtype=np.float32).reshape(2, 3, 2, 3) + 0.1, M[:2, :3]),
     None),
    ("matvec", lambda m: m.matvec(C, M[:2]), lambda m: np.einsum("bij,bj->bi", C, M[:2])),
    ("matvec_broadcast", lambda m: m.matvec(C, M[:1]), lambda m: np.einsum("bij,j->bi", C, M[0])),
    ("vecmat", lambda m: m.vecmat(M[:, :1].T, C), lambda m: np.einsum("zi,bij->bj", M[:, :1].T, C)),
]


@pytest.mark.parametrize("label,ours,theirs", CASES, ids=[c[0] for c in CASES])
def test_matches_numpy(label, ours, theirs):
    expected = (theirs or ours)(np)
    got = ours(fnp)
    got, expected = (np.asarray(got), np.asarray(expected))
    assert got.shape == expected.shape, (got.shape, expected.shape)
    if expected.dtype.kind in "biu":
        assert got.dtype.kind == expected.dtype.kind and np.array_equal(got, expected)
    else:
        assert_close(got, expected.astype(np.float64), rtol=2e-6, atol=1e-6)


def test_dtype_helpers():
    assert fnp.promote_types(fnp.int32, fnp.float16) == np.float16
    assert fnp.result_type(fnp.ones(2, fnp.bfloat16), 2.0) == fnp.bfloat16
    assert fnp.result_type(fnp.ones(2, fnp.int32), 2.5) == np.float32
    assert fnp.finfo(fnp.bfloat16).eps == 2.0 ** -7 and fnp.iinfo(fnp.int32).max == 2 ** 31 - 1
    assert fnp.issubdtype(fnp.bfloat16, np.floating) and not fnp.issubdtype(fnp.int32, np.floating)
    assert fnp.isscalar(3.0) and fnp.isscalar(fnp.asarray(2.0)) and not fnp.isscalar(fnp.ones(2))
    assert fnp.array_equal(M, M.copy()) and not fnp.array_equal(M, M[:2]) and fnp.array_equiv(M[0], M[[0, 0]])
    assert fnp.empty((2, 3)).shape == (2, 3) and fnp.empty_like(M, dtype=fnp.int32).dtype == np.int32


X64 = RNG.standard_normal(6)
GRAD_CASES = {
    "cumprod": lambda x: fnp.sum(fnp.cumprod(x * fnp.asarray([1.0, 0.0, 1.0, 1.0, 1.0, 1.0])) * x),
    "logaddexp": lambda x: fnp.sum(fnp.logaddexp(x, x[::-1] * 3)),
    "hypot": lambda x: fnp.sum(fnp.hypot(x, 2.0)),
    "sinc": lambda x: fnp.sum(fnp.sinc(x)),
    "median_quantile": lambda x: fnp.median(x) + fnp.quantile(x, 0.3) + fnp.percentile(x, 90),
    "interp": lambda x: fnp.sum(fnp.interp(x, np.array([-3.0, 0.0, 3.0]), np.array([1.0, 4.0, 2.0]))),
    "cross": lambda x: fnp.sum(fnp.cross(x[:3], x[3:]) ** 2),
    "cov_corrcoef": lambda x: fnp.sum(fnp.cov(fnp.reshape(x, (2, 3)))) + fnp.sum(fnp.corrcoef(fnp.reshape(x, (3, 2)))),
    "kron_trace": lambda x: fnp.trace(fnp.kron(fnp.reshape(x[:4], (2, 2)), fnp.reshape(x[2:], (2, 2)))),
    "convolve": lambda x: fnp.sum(fnp.convolve(x, np.array([1.0, -2.0, 0.5]), "same") ** 2),
    "tile_roll": lambda x: fnp.sum(fnp.tile(x, (2, 2)) * fnp.roll(fnp.tile(x, (2, 2)), 1)),
    "diff_nan": lambda x: fnp.sum(fnp.diff(x, 2) ** 2) + fnp.nanmean(x) + fnp.nanstd(x) + fnp.ptp(x),
    "diag_block": lambda x: fnp.sum(fnp.diag(x) @ fnp.block([[fnp.diag(x[:3]), fnp.zeros((3, 3))],
                                                              [fnp.zeros((3, 3)), fnp.diag(x[3:])]])),
    "average_trapezoid": lambda x: fnp.average(x, weights=fnp.abs(x) + 1) + fnp.trapezoid(x ** 2, x=fnp.cumsum(x * x)),
    "polyfit_poly": lambda x: fnp.sum(fnp.polyfit(fnp.arange(6.0), x, 2) ** 2) + fnp.sum(fnp.poly(x[:3])),
    "polyint_polyder_vander": lambda x: fnp.sum(fnp.polyint(fnp.polyder(x, 1), 2, k=1.0)) + fnp.sum(fnp.vander(x, 3)),
    "unwrap_modf": lambda x: fnp.sum(fnp.unwrap(x * 4) ** 2) + fnp.sum(fnp.modf(x * 3)[0] ** 2),
}


@pytest.mark.parametrize("name", GRAD_CASES)
def test_gradients_match_finite_differences(name):
    fg.check_grads(GRAD_CASES[name], (X64,), order=2)


def test_traceable_functions_run_under_jit_and_vmap():
    def f(x):
        return (fnp.median(x) + fnp.sum(fnp.cumprod(x)) + fnp.sum(fnp.roll(x, 2) * fnp.diff(x, prepend=0.0))
                + fnp.sum(fnp.searchsorted(fnp.sort(x), x)) + fnp.sum(fnp.nonzero(x > 0, size=3)[0]))
    batch = RNG.standard_normal((4, 6)).astype(np.float32)
    expected = np.stack([np.asarray(f(fnp.asarray(row))) for row in batch])
    assert_close(fg.jit(fg.vmap(f))(batch), expected, rtol=1e-5)
    assert_close(fg.jit(f)(batch[0]), expected[0], rtol=1e-5)


def test_nonzero_with_size_pads_and_truncates():
    x = np.array([[0, 3], [4, 0], [0, 5]])
    rows, cols = fg.jit(lambda a: fnp.nonzero(a, size=5, fill_value=-1))(x)
    assert rows.tolist() == [0, 1, 2, -1, -1] and cols.tolist() == [1, 0, 1, -1, -1]
    assert fnp.argwhere(x, size=2).tolist() == [[0, 1], [1, 0]]



@pytest.mark.parametrize("size", [2, 4, 7])
def test_unique_with_size_runs_under_jit_as_jaxs(size):
    """jnp.unique's size= and fill_value: the first size distinct values (NaNs one value), their
    first indices, the inverse and the counts, padded (by default with the smallest value, index
    0 and count 0); NumPy's unique gives the reference."""
    x = np.array([3.0, 1.0, 2.0, 3.0, 1.0, np.nan, np.nan, 5.0])
    values, index, inverse, counts = np.unique(x, return_index=True, return_inverse=True, return_counts=True)
    k = min(size, len(values))
    for fill, pad in ((None, values[0]), (-1.0, -1.0)):
        got = fg.jit(lambda a: fnp.unique(a, True, True, True, size=size, fill_value=fill))(x)
        np.testing.assert_array_equal(got[0], np.r_[values[:k], [pad] * (size - k)])
        np.testing.assert_array_equal(got[1], np.r_[index[:k], [index[0]] * (size - k)])
        np.testing.assert_array_equal(got[2], inverse)
        np.testing.assert_array_equal(got[3], np.r_[counts[:k], [0] * (size - k)])
    assert fnp.unique(np.zeros((0,)), size=2, fill_value=7.0).tolist() == [7.0, 7.0]
    with pytest.raises(ValueError, match="needs fill_value"):
        fnp.unique(np.zeros((0,)), size=2)

def test_value_dependent_shapes_need_concrete_values():
    with pytest.raises(fg.ConcretizationError, match="nonzero"):
        fg.jit(lambda a: fnp.nonzero(a)[0])(np.array([0, 1]))
    with pytest.raises(fg.ConcretizationError, match="unique"):
        fg.jit(fnp.unique)(np.array([0, 1]))


def test_bad_input_errors_name_the_problem():
    with pytest.raises(fg.ShapeError, match="rank >= 2"):
        fnp.diagonal(V)
    with pytest.raises(ValueError, match="quantiles must be in the range"):
        fnp.quantile(V, 1.5)
    with pytest.raises(ValueError, match="quantile method"):
        fnp.quantile(V, 0.5, method="cubic")
    with pytest.raises(ValueError, match="inplace=False"):
        fnp.fill_diagonal(M, 1.0)
    with pytest.raises(ValueError, match="3 choices"):
        fnp.choose(np.array([0, 3]), [V, V, V])
    with pytest.raises(fg.ShapeError, match="length 2 or 3"):
        fnp.cross(M, M)
    with pytest.raises(ValueError, match="2 conditions but 1 choices"):
        fnp.select([V > 0, V < 0], [V])


def test_array_methods_follow_numpy():
    x = fg.asarray(M)
    assert_close(x.sort(axis=0), np.sort(M, axis=0))
    assert x.argsort().tolist() == np.argsort(M, kind="stable").tolist()
    assert_close(x.cumprod(axis=1), np.cumprod(M, axis=1), rtol=1e-6)
    assert_close(x.diagonal(1), M.diagonal(1))
    assert_close(x.trace(), M.trace(), rtol=1e-6)
    assert_close(x.ptp(axis=1), np.ptp(M, axis=1))
    assert_close(x.repeat(2, axis=1), M.repeat(2, axis=1))
    assert_close(x.take([2, 0], axis=1), M.take([2, 0], axis=1))
    assert [i.tolist() for i in (x > 0).nonzero()] == [i.tolist() for i in (M > 0).nonzero()]
    assert x.nbytes == M.nbytes and x.itemsize == 4 and float(M[1, 2]) in x and 1e6 not in x
    assert_close(x.real, M)
    assert np.array_equal(np.asarray(x.imag), np.zeros_like(M))
    assert x.block_until_ready() is x and str(x.cpu().device) == "cpu"


def test_vectorize_apply_along_axis_and_ix():
    dot = fnp.vectorize(lambda a, b: fnp.dot(a, b), signature="(n),(n)->()")
    a, b = RNG.standard_normal((3, 4)), RNG.standard_normal(4)
    assert_close(dot(a, b), a @ b)
    assert_close(fnp.vectorize(lambda x, y: x + 2 * y)(V[:, None], V[:3]), V[:, None] + 2 * V[:3])
    assert fnp.vectorize(lambda m, v: m @ v, signature="(m,n),(n)->(m)")(np.ones((5, 2, 3)), np.ones(3)).shape == (5, 2)
    scaled = fnp.vectorize(lambda x, k: x * k, excluded={1})
    assert_close(scaled(V, 3.0), V * 3)
    assert_close(fnp.apply_along_axis(lambda r: fnp.stack([r.min(), r.max()]), 1, C),
                 np.apply_along_axis(lambda r: np.stack([r.min(), r.max()]), 1, C))
    assert_close(fnp.apply_along_axis(lambda r: fnp.outer(r, r), 0, C), np.apply_along_axis(lambda r: np.outer(r, r), 0, C))
    assert [i.tolist() for i in fnp.ix_([0, 1], [2, 3])] == [i.tolist() for i in np.ix_([0, 1], [2, 3])]
    with pytest.raises(ValueError, match="invalid gufunc signature"):
        fnp.vectorize(lambda a: a, signature="(n)")(V)


DEVICE_CASES = {
    "quantile": lambda a: fnp.quantile(a, [0.1, 0.9], axis=1),
    "cumprod_roll_diff": lambda a: fnp.cumprod(a, axis=1) + fnp.roll(a, 1, axis=1) + fnp.pad(fnp.diff(a), ((0, 0), (0, 1)),
                                                                                             mode="edge"),
    "isin_histogram": lambda a: fnp.histogram(a, 3)[0] + fnp.sum(fnp.isin(fnp.round(a), [0.0, 1.0])),
    "interp_searchsorted": lambda a: fnp.interp(a, fnp.sort(fnp.ravel(a)), fnp.sort(fnp.ravel(a)) * 2.0),
    "bilinear": lambda a: fg.nn.interpolate(a[None, None], size=(5, 7), mode="bilinear"),
    "pad_statistics_take_modes": lambda a: fnp.pad(a, 1, mode="median") + fnp.pad(a, 1, mode="linear_ramp")
    + fnp.take(a, [7, -1, 0, 20, 3, 1], mode="clip", axis=1)[:1],
    # NumPy constants beside the device array follow it there (JAX's and PyTorch's rule)
    "contractions_with_host_operands": lambda a: fnp.tensordot(a, np.ones((4, 2), np.float32), 1)
    + fnp.dot(a, np.ones((4, 2), np.float32)) + fnp.einsum("ij,jk->ik", a, np.ones((4, 2), np.float32))
    + fnp.inner(a, np.ones((2, 4), np.float32)) + fnp.outer(a[:, 0], np.ones(2, np.float32)),
    "signal_with_host_operands": lambda a: fnp.convolve(a[0], np.array([1.0, -1.0], np.float32))[:3]
    + fnp.interp(a[0], np.array([-3.0, 0.0, 3.0], np.float32), np.array([0.0, 1.0, 5.0], np.float32))[:3]
    + fnp.kron(a[0, :1], np.ones(3, np.float32)) + fnp.append(a[0], np.ones(1, np.float32))[:3]
    + fnp.diff(a[0], prepend=np.float32(0.0))[:3] + fnp.average(a, axis=1, weights=np.arange(1.0, 5.0,
                                                                                              dtype=np.float32)),
    "statistics_with_host_operands": lambda a: fnp.searchsorted(np.array([-1.0, 0.0, 1.0], np.float32), a)
    + fnp.cov(a, aweights=np.ones(4, np.float32))[:, :1] + fnp.copysign(a, np.full(4, -1.0, np.float32))
    + fnp.choose(np.array([0, 1, 0, 1]), [a[0], np.zeros(4, np.float32)])
    + fnp.linalg.solve(a[:, :3] + 3 * np.eye(3, dtype=np.float32), np.ones(3, np.float32))[:, None],
}


@pytest.mark.skipif(not fg.cuda.is_available(), reason="no CUDA device or simulator")
@pytest.mark.parametrize("name", DEVICE_CASES)
def test_composed_functions_run_on_the_device(name):
    """Constants the functions make (index vectors, quantiles, interpolation weights) follow the data."""
    host = fg.asarray(RNG.standard_normal((3, 4)).astype(np.float32))
    on_device = DEVICE_CASES[name](fg.device_put(host, "cuda"))
    assert on_device.device == "cuda:0"
    assert_close(on_device.numpy(), DEVICE_CASES[name](host), rtol=1e-5, atol=1e-5)


def test_nan_reductions_differentiate_the_values_beside_a_nan():
    """The left-out NaN must not reach the others' gradients (0 * NaN in the squares' rule)."""
    x = np.array([[0.3, np.nan, -1.2, 2.0], [1.0, 0.5, -0.25, 4.0]])
    for ours, theirs in ((fnp.nanvar, np.nanvar), (fnp.nanstd, np.nanstd)):
        grad = fg.grad(lambda t: fnp.sum(ours(t, axis=1, ddof=1)))(x).numpy()
        numeric = np.zeros_like(x)
        for i in zip(*np.nonzero(~np.isnan(x))):
            step = np.zeros_like(x)
            step[i] = 1e-6
            numeric[i] = (theirs(x + step, axis=1, ddof=1).sum() - theirs(x - step, axis=1, ddof=1).sum()) / 2e-6
        assert_close(grad, numeric, rtol=1e-6, atol=1e-8)


def test_fmod_sign_bits_and_copysign_dtype_follow_numpy():
    x, y = np.float32([0, -0.0, 1, -1, 4]), np.float32([-2, 2, -np.inf, np.inf, -2])
    np.testing.assert_array_equal(np.signbit(fnp.fmod(x, y).numpy()), np.signbit(np.fmod(x, y)))
    assert fnp.copysign(np.float32([2]), np.float64([-1])).dtype == np.float64  # both operands' precision
    assert fnp.copysign(np.float32(2), -1.0).dtype == np.float32  # a Python number is weak


def test_jax_forms_of_tri_repeat_where_and_complex_correlation():
    assert fnp.tri(3, 4, 1).dtype == np.float32 and np.array_equal(fnp.tri(3, 4, 1), np.tri(3, 4, 1))  # NumPy's floats
    # total_repeat_length cuts, or fills out with the last value (jax.numpy's), not cyclically
    assert fnp.repeat(np.arange(1.0, 4.0), [1, 0, 2], total_repeat_length=5).tolist() == [1, 3, 3, 3, 3]
    assert fnp.repeat(np.arange(3.0), [0, 0, 0], total_repeat_length=2).tolist() == [2, 2]
    assert fnp.repeat(np.arange(3.0), 2, total_repeat_length=3).tolist() == [0, 0, 1]
    x = np.array([[0.5, -1.0], [2.0, 0.0]])
    assert [i.tolist() for i in fnp.where(x > 0, size=3, fill_value=-1)] == [[0, 1, -1], [0, 0, -1]]
    a, v = np.array([1 + 2j, 3, -1j, 2]), np.array([1j, 2 - 1j, 0.5])
    for mode in ("full", "same", "valid"):  # NumPy conjugates the second operand of correlate, not of convolve
        assert_close(fnp.correlate(a, v, mode), np.correlate(a, v, mode), rtol=1e-12)
        assert_close(fnp.convolve(a, v, mode), np.convolve(a, v, mode), rtol=1e-12)


def test_matvec_and_vecmat_need_a_matrix():
    with pytest.raises(fg.ShapeError, match="matvec: the matrix operand"):
        fnp.matvec(np.ones(3), np.ones(3))  # NumPy raises; a silent dot product would hide the mistake
    with pytest.raises(fg.ShapeError, match="vecmat: the matrix operand"):
        fnp.vecmat(np.ones(3), np.ones(3))


def test_sort_and_argsort_of_the_flattened_array_with_axis_none():
    x = np.array([[3.0, 1.0, 2.0], [0.5, 3.0, -1.0]], np.float32)
    np.testing.assert_array_equal(fnp.argsort(x, axis=None).numpy(), np.argsort(x, axis=None, kind="stable"))
    np.testing.assert_array_equal(fnp.sort(x, axis=None).numpy(), np.sort(x, axis=None))


def test_linspace_retstep_and_sort_kinds_as_numpy():
    samples, step = fnp.linspace(0.0, 1.0, 5, endpoint=False, retstep=True)
    assert_close(samples, np.linspace(0, 1, 5, endpoint=False))
    assert abs(float(step) - 0.2) < 1e-7
    samples, step = fnp.linspace(fnp.asarray(1.0), fnp.asarray([2.0, 5.0]), 3, retstep=True)
    assert_close(step, [0.5, 2.0])
    assert samples.shape == (3, 2)
    assert np.isnan(float(fnp.linspace(0, 1, 1, retstep=True)[1]))  # no interval: NumPy's NaN
    ties = np.array([3, 1, 3, 1, 2])
    for kind in ("quicksort", "mergesort", "heapsort", "stable"):
        assert np.array_equal(fnp.argsort(ties, kind=kind), np.argsort(ties, kind="stable"))
        assert np.array_equal(fnp.sort(ties, 0, kind), np.sort(ties))
    with pytest.raises(ValueError, match="sort kind"):
        fnp.sort(ties, kind="bogo")


def test_put_along_axis_writes_where_take_along_axis_reads():
    a = RNG.standard_normal((3, 4))
    idx = np.array([[0, 3], [1, 1], [2, 0]])
    expected = a.copy()
    np.put_along_axis(expected, idx, -1.0, axis=1)
    got = fnp.put_along_axis(a, idx, -1.0, 1, inplace=False)
    assert_close(got, expected)
    assert_close(fnp.take_along_axis(got, idx, 1), np.full((3, 2), -1.0))
    wrapped = fnp.put_along_axis(a, idx + 4, np.float64([[1, 2]]), 1, inplace=False, mode="wrap")
    expected = a.copy()
    np.put_along_axis(expected, idx, np.float64([[1, 2]]), axis=1)
    assert_close(wrapped, expected)
    grad = fg.grad(lambda x: fnp.sum(fnp.put_along_axis(x, idx, 0.0, 1, inplace=False) * 3.0))(a)
    assert_close(grad, np.where(np.isin(np.arange(4)[None, :], idx) & (np.arange(4)[None, :] == idx[:, :1])
                                | (np.arange(4)[None, :] == idx[:, 1:]), 0.0, 3.0))
    with pytest.raises(ValueError, match="inplace=False"):
        fnp.put_along_axis(a, idx, 0.0, 1)
    with pytest.raises(fg.ShapeError, match="rank 1 for an array of rank 2"):
        fnp.put_along_axis(a, np.array([0]), 0.0, 1, inplace=False)


def test_insert_refuses_what_numpy_refuses_and_differentiates():
    a = RNG.standard_normal((2, 3))
    with pytest.raises(IndexError):
        fnp.insert(a, 5, 1.0, axis=1)
    with pytest.raises(fg.ShapeError, match="do not fit 2 slices"):
        fnp.insert(a, [0, 1], np.ones((3, 3)), axis=1)
    fg.check_grads(lambda x, v: fnp.insert(x, [2, 0], v, axis=1), (a, RNG.standard_normal((2, 2))), order=2)


def test_abstract_dtype_names_and_index_expressions():
    assert fnp.issubdtype(fnp.ones(2).dtype, fnp.floating) and fnp.issubdtype(fnp.bfloat16, fnp.inexact)
    assert fnp.issubdtype(fnp.int32, fnp.signedinteger) and not fnp.issubdtype(fnp.uint8, fnp.signedinteger)
    assert fnp.issubdtype(fnp.complex64, fnp.complexfloating) and fnp.issubdtype(fnp.bool_, fnp.generic)
    assert np.array_equal(fnp.arange(10)[fnp.s_[2:8:3]], [2, 5]) and fnp.index_exp[1:2] == (slice(1, 2),)


def test_histogram_counts_every_value_and_has_numpys_edges():
    # the last edge was lo + (hi - lo) * 1.0, which can round below the maximum: that value was dropped
    rng = np.random.default_rng(1)
    for dtype in (np.float64, np.float32):
        for _ in range(50):
            x = (rng.standard_normal(int(rng.integers(1, 30))) * rng.choice([1e-3, 1.0, 1e4])).astype(dtype)
            for bins in (1, 2, 7):
                counts, edges = fnp.histogram(x, bins)
                assert float(fnp.sum(counts)) == x.size
                np.testing.assert_array_equal(edges, np.histogram(x, bins)[1])
                np.testing.assert_array_equal(counts, np.histogram(x, bins)[0])
    points = rng.standard_normal((6, 3))
    assert float(fnp.sum(fnp.histogramdd(points, (2, 1, 3))[0])) == 6


def test_histogram_weights_must_match_the_values():
    with pytest.raises(fg.ShapeError, match="1 weights for 5 values"):
        fnp.histogram(np.arange(5.0), 2, weights=np.ones(1))  # broadcasting would weigh every value by w[0]
    assert_close(fnp.histogram(np.arange(6.0).reshape(2, 3), 2, weights=np.ones((2, 3)) * 2)[0], [6.0, 6.0])


def test_bincount_and_cov_weights_must_be_one_per_value():
    with pytest.raises(fg.ShapeError, match="bincount: weights of shape"):
        fnp.bincount(np.array([0, 1, 1, 3]), weights=np.ones(1))
    with pytest.raises(fg.ShapeError, match="fweights of shape"):
        fnp.cov(np.ones((2, 4)), fweights=np.ones(1, int))
    with pytest.raises(fg.ShapeError, match="aweights of shape"):
        fnp.cov(np.ones((2, 4)), aweights=np.ones((4, 1)))


def test_refusals_numpy_makes_and_its_1d_and_flattened_forms():
    v, m = np.arange(5.0), np.arange(12.0).reshape(3, 4)
    with pytest.raises(fg.ShapeError, match="sorter of shape"):
        fnp.searchsorted(v, 2.0, sorter=np.array([0, 1]))
    with pytest.raises(ValueError, match="monotonically"):
        fnp.digitize(v, np.array([3.0, 1.0, 2.0]))
    with pytest.raises(ValueError, match="non-negative"):
        fnp.resize(v, (-1, 2))
    with pytest.raises(TypeError, match="exponent must be an integer"):
        fnp.linalg.matrix_power(np.eye(2), 1.5)
    with pytest.raises(ValueError, match="maximum below its minimum"):
        fnp.histogram(v, 3, range=(2, 1))
    with pytest.raises(ValueError, match="not finite"):
        fnp.histogram(np.array([1.0, np.nan]), 2)
    assert np.array_equal(fnp.tril(v), np.tril(v)) and np.array_equal(fnp.triu(v, 1), np.triu(v, 1))
    assert np.array_equal(fnp.take_along_axis(m, np.array([1, 7]), None), [1.0, 7.0])
