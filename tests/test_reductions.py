"""Reductions, scans and the softmax family: values against NumPy, gradients by finite differences."""
import numpy as np
import pytest
from hypothesis import given
from hypothesis import strategies as st

import funcgrad as fg
import funcgrad.numpy as fnp
from funcgrad import nn

from .helpers import assert_close, floats_array, shapes


@st.composite
def array_and_axis(draw, min_side=0, allow_tuple=True):
    shape = draw(shapes(min_dims=0, max_dims=3, min_side=min_side, max_side=3))
    x = floats_array(draw, shape, -2, 2)
    nd = len(shape)
    choices = [st.none()]
    if nd:
        choices.append(st.integers(-nd, nd - 1))
        if allow_tuple:
            choices.append(st.lists(st.integers(0, nd - 1), unique=True, min_size=1, max_size=nd).map(
                lambda axes: tuple(a - nd if i % 2 else a for i, a in enumerate(axes))))
    axis = draw(st.one_of(*choices))
    return x, axis, draw(st.booleans())


def _np_logsumexp(x, axis, keepdims):
    m = np.max(x, axis=axis, keepdims=True)
    out = np.log(np.sum(np.exp(x - m), axis=axis, keepdims=True)) + m
    return out if keepdims else np.squeeze(out, axis=axis)


REDUCTIONS = {
    "sum": (fnp.sum, np.sum, 0),
    "mean": (fnp.mean, np.mean, 1),
    "prod": (fnp.prod, np.prod, 0),
    "max": (fnp.max, np.max, 1),
    "min": (fnp.min, np.min, 1),
    "var": (fnp.var, np.var, 1),
    "std": (fnp.std, np.std, 1),
    "logsumexp": (fnp.logsumexp, _np_logsumexp, 1),
}


@pytest.mark.parametrize("name", sorted(REDUCTIONS))
@given(data=st.data())
def test_reduction_values_and_grads(name, data):
    f, ref, min_side = REDUCTIONS[name]
    x, axis, keepdims = data.draw(array_and_axis(min_side=min_side))
    if name == "std" and x.size and np.min(np.var(x, axis=axis)) < 1e-3:
        return  # at zero variance std has no derivative (PyTorch gives nan too)
    if name == "logsumexp" and axis is None:
        axis = tuple(range(x.ndim))
    out = f(x, axis=axis, keepdims=keepdims)
    assert_close(out, ref(x, axis=axis, keepdims=keepdims), rtol=1e-6, atol=1e-9)
    well_separated = x.size < 2 or np.min(np.diff(np.sort(x, axis=None))) > 0.05  # finite differences
    if x.size and (name not in ("max", "min") or well_separated):  # would straddle a near-tie
        fg.check_grads(lambda v: f(v, axis=axis, keepdims=keepdims), (x,), order=1)


@pytest.mark.parametrize("name", sorted(REDUCTIONS))
def test_reduction_second_order(name):
    f, _, _ = REDUCTIONS[name]
    x = np.array([[0.3, -1.2, 0.7], [1.1, 0.4, -0.5]])
    fg.check_grads(lambda v: f(v, axis=1), (x,), order=2)
    fg.check_grads(lambda v: f(v), (x,), order=2)


def test_prod_gradient_is_exact_with_zeros():
    x = np.array([[2.0, 0.0, 3.0], [0.0, 0.0, 5.0], [1.0, 4.0, 2.0]])
    g = fg.grad(lambda v: fnp.sum(fnp.prod(v, axis=1)))(x)
    assert_close(g, [[0, 6, 0], [0, 0, 0], [8, 2, 4]])
    h = fg.hessian(lambda v: fnp.prod(v))(np.array([0.0, 2.0, 3.0]))
    assert_close(h, [[0, 3, 2], [3, 0, 0], [2, 0, 0]])


def test_max_shares_gradient_among_ties():
    x = np.array([[1.0, 3.0, 3.0], [2.0, 0.0, 1.0]])
    assert_close(fg.grad(lambda v: fnp.sum(fnp.max(v, axis=1)))(x), [[0, 0.5, 0.5], [1, 0, 0]])


def test_var_ddof_and_torch_correction():
    x = np.array([[1.0, 2.0, 4.0], [0.0, 1.0, 1.0]])
    assert_close(fnp.var(x, axis=1, ddof=1), np.var(x, axis=1, ddof=1))
    assert_close(fnp.std(x, axis=0, correction=1), np.std(x, axis=0, ddof=1))


@given(data=st.data())
def test_arg_reductions_and_boolean(data):
    x, axis, keepdims = data.draw(array_and_axis(min_side=1, allow_tuple=False))
    assert_close(fnp.argmax(x, axis=axis, keepdims=keepdims), np.argmax(x, axis=axis, keepdims=keepdims))
    assert_close(fnp.argmin(x, axis=axis, keepdims=keepdims), np.argmin(x, axis=axis, keepdims=keepdims))
    b = x > 0
    assert_close(fnp.all(b, axis=axis, keepdims=keepdims), np.all(b, axis=axis, keepdims=keepdims))
    assert_close(fnp.any(b, axis=axis, keepdims=keepdims), np.any(b, axis=axis, keepdims=keepdims))


@given(data=st.data())
def test_cumsum(data):
    x, axis, _ = data.draw(array_and_axis(min_side=0, allow_tuple=False))
    if x.ndim == 0 and axis is not None:
        return
    assert_close(fnp.cumsum(x, axis=axis), np.cumsum(x, axis=axis))
    if x.size:
        fg.check_grads(lambda v: fnp.cumsum(v, axis=axis), (x,), order=2)


@pytest.mark.parametrize("fn,ref", [
    (nn.softmax, lambda x, a: np.exp(x - _np_logsumexp(x, a, True))),
    (nn.log_softmax, lambda x, a: x - _np_logsumexp(x, a, True)),
])
@given(data=st.data())
def test_softmax_family(fn, ref, data):
    shape = data.draw(shapes(min_dims=1, max_dims=3, min_side=1, max_side=4))
    x = floats_array(data.draw, shape, -5, 5)
    axis = data.draw(st.integers(-len(shape), len(shape) - 1))
    assert_close(fn(x, axis=axis), ref(x, axis), rtol=1e-6, atol=1e-9)
    fg.check_grads(lambda v: fn(v, axis=axis), (x,), order=2)


def test_softmax_family_takes_pytorchs_dtype():
    """dtype= casts the input first (PyTorch's way to take a float16 softmax in float64)."""
    x = np.random.default_rng(0).standard_normal((3, 5)).astype(np.float16)
    wide = x.astype(np.float64)
    for got, want in ((nn.softmax(x, 1, dtype=fg.float64), np.exp(wide - _np_logsumexp(wide, 1, True))),
                      (nn.log_softmax(x, dim=1, dtype=fg.float64), wide - _np_logsumexp(wide, 1, True)),
                      (nn.softmin(x, 1, dtype=fg.float64), np.exp(-wide - _np_logsumexp(-wide, 1, True)))):
        assert got.dtype == fg.float64
        assert_close(got, want, rtol=1e-12, atol=1e-15)


def test_softmax_is_stable_for_large_logits():
    x = np.array([[1000.0, 1001.0, 1002.0], [-1000.0, -1000.0, -1000.0]], np.float32)
    p = nn.softmax(x)
    assert np.all(np.isfinite(np.asarray(p)))
    assert_close(p[0], np.exp([-2, -1, 0]) / np.exp([-2, -1, 0]).sum(), rtol=1e-5)
    assert_close(nn.log_softmax(x)[1], np.full(3, -np.log(3)), rtol=1e-5)
    assert_close(fnp.logsumexp(x, axis=1), [1002 + np.log(np.exp([-2, -1, 0]).sum()), -1000 + np.log(3)],
                 rtol=1e-6)


def _shifted_log_softmax(x):
    """NumPy's log_softmax over the last axis, shifted by each row's maximum or by 0 where that is
    -inf (NaN rows stay NaN; a row holding +inf is NaN, as in PyTorch and JAX)."""
    m = np.max(x, axis=-1, keepdims=True)
    shifted = x - np.where(m == -np.inf, 0, m)
    return shifted - np.log(np.exp(shifted).sum(-1, keepdims=True))


@pytest.mark.parametrize("dtype", [np.float32, np.float64])
def test_softmax_of_long_rows_with_nan_and_inf_anywhere(dtype):
    """Rows of 19, so vector loops leave a remainder: a NaN (of either sign: the maximum is taken
    over the values' bits as integers, where the sign orders NaNs), an inf or the maximum itself in
    a lane, in the remainder and first; every row against NumPy, logsumexp too."""
    rng = np.random.default_rng(7)
    x = rng.uniform(-5, 5, (12, 19)).astype(dtype)
    x[1, 0] = x[2, 13] = x[3, 18] = np.nan
    x[10, 7] = x[11, 18] = -np.array(np.nan, dtype)  # the sign bit set, as x86's 0 * inf leaves it
    x[11, 2] = 1000
    assert np.signbit(x[10, 7]) and np.isnan(x[10, 7])
    x[4, 5] = x[5, 17] = np.inf  # the whole row NaN, as torch.softmax and jax.nn.softmax (logsumexp: +inf)
    x[6] = -np.inf
    x[7, :18] = -np.inf
    x[8, 18] = 1000  # the maximum in the remainder: exp overflows unless shifted by it
    x[9, 3] = 1000  # and in a lane
    with np.errstate(invalid="ignore", over="ignore", divide="ignore"):
        expected = _shifted_log_softmax(x.astype(np.float64))
    tol = 1e-6 if dtype == np.float32 else 1e-12
    assert_close(nn.log_softmax(x), expected, rtol=tol, atol=tol)
    assert_close(nn.softmax(x), np.exp(expected), rtol=tol, atol=tol)
    with np.errstate(invalid="ignore", over="ignore", divide="ignore"):
        wide = x.astype(np.float64)
        m = np.max(wide, axis=-1)
        shift = np.where(np.isinf(m), 0, m)
        lse = np.log(np.exp(wide - shift[:, None]).sum(-1)) + shift
    assert_close(fnp.logsumexp(x, axis=-1), lse, rtol=tol, atol=tol)


def test_low_precision_sums_accumulate_in_float32():
    x = fnp.ones(4096, dtype=fg.bfloat16)
    s = fnp.sum(x)
    assert s.dtype == fg.bfloat16
    assert float(s) == 4096.0  # a bfloat16 accumulator would stall at 256


@pytest.mark.parametrize("dtype", [fg.float16, fg.bfloat16])
def test_low_precision_means_and_variances_are_computed_in_float32(dtype):
    """A float16 total of 20000 values near 100 overflows (65504) although their mean does not;
    PyTorch and JAX average in float32 and round once: so does funcgrad, in its dtype."""
    x = (100 + np.random.default_rng(0).uniform(0, 1, (20000, 3))).astype(dtype)
    wide = x.astype(np.float64)
    with_nan = np.concatenate([x, np.full((1, 3), np.nan, dtype)])
    for got, want in ((fnp.mean(x, axis=0), wide.mean(0)), (fnp.var(x), wide.var()), (fnp.std(x, axis=0), wide.std(0)),
                      (fnp.nanmean(with_nan, axis=0), wide.mean(0))):
        assert got.dtype == dtype
        np.testing.assert_array_equal(got, want.astype(np.float32).astype(dtype))
    g = fg.grad(lambda v: fnp.mean(v))(x)  # the gradient comes back in the input's dtype
    assert g.dtype == dtype and float(g[0, 0]) == float(np.asarray(1 / 60000, dtype))


@pytest.mark.parametrize("dtype", [np.float32, np.complex64])
def test_single_precision_cumsum_runs_in_double_as_pytorchs(dtype):
    """Each partial sum correctly rounded (PyTorch's CPU cumsum accumulates in double): NumPy's
    float32 running sum of 100003 tenths ends at 9998.855, 1.4e-4 off."""
    x = np.full(100003, 0.1, dtype)
    double = x.astype(np.complex128 if dtype == np.complex64 else np.float64)
    got = fnp.cumsum(x)
    assert got.dtype == dtype
    np.testing.assert_array_equal(got, np.cumsum(double).astype(dtype))
    np.testing.assert_array_equal(fg.lax.cumsum(x, reverse=True), np.cumsum(double[::-1])[::-1].astype(dtype))


WHERE_CASES = {
    "sum": lambda m, a, w: m.sum(a, axis=1, where=w, initial=2.5),
    "prod": lambda m, a, w: m.prod(a, axis=0, keepdims=True, where=w),
    "mean": lambda m, a, w: m.mean(a, axis=1, where=w),
    "var": lambda m, a, w: m.var(a, axis=0, where=w),
    "std": lambda m, a, w: m.std(a, ddof=1, where=w),
    "max": lambda m, a, w: m.max(a, axis=1, initial=-0.25, where=w),
    "min": lambda m, a, w: m.min(a, axis=0, keepdims=True, initial=0.25, where=w),
}


@pytest.mark.parametrize("name", sorted(WHERE_CASES))
def test_numpys_where_and_initial(name):
    a = np.random.default_rng(3).standard_normal((3, 4))
    w = np.array([[True, False, True, True], [False, False, True, False], [True, True, True, False]])
    f = WHERE_CASES[name]
    assert_close(f(fnp, a, w), f(np, a, w), rtol=1e-12)
    assert_close(f(fnp, a, w[0]), f(np, a, w[0]), rtol=1e-12)  # a mask broadcasts to a's shape
    fg.check_grads(lambda x: f(fnp, x, w), (a,), order=1)


def test_where_and_initial_edge_cases_follow_numpy():
    a = np.arange(6.0).reshape(2, 3)
    none = np.zeros((2, 3), bool)
    assert np.isnan(np.asarray(fnp.mean(a, axis=1, where=none))).all()  # nothing selected: NaN, as NumPy
    assert_close(fnp.max(np.zeros((0, 3)), axis=0, initial=1.5), [1.5, 1.5, 1.5])  # initial makes empty maxima
    assert_close(fnp.sum(np.zeros((2, 0)), axis=1, initial=1.0), [1.0, 1.0])
    assert fnp.all(a > 2, where=a > 2) and not fnp.any(a > 2, where=a <= 2)
    with pytest.raises(ValueError, match="where mask needs initial"):
        fnp.max(a, where=a > 1)
    with pytest.raises(fg.ShapeError, match="pass initial"):
        fnp.min(np.zeros((0, 2)))
    with pytest.raises(fg.ShapeError):
        fnp.sum(a[0], where=np.ones((2, 3), bool))  # a mask may not widen the array


def test_arg_reductions_over_a_filled_axis_of_an_empty_batch():
    empty_batch = np.zeros((0, 3))
    assert fnp.argmax(empty_batch, axis=1).shape == (0,)  # no rows: no answers, nothing undefined
    assert fnp.argmin(empty_batch, axis=1, keepdims=True).shape == (0, 1)
    with pytest.raises(fg.ShapeError, match="empty selection"):
        fnp.argmax(empty_batch, axis=0)


@pytest.mark.parametrize("dtype", [np.float32, np.float64])
def test_row_max_is_numpys_max_with_infinities_signed_zeros_and_nan(dtype):
    """The shift of every softmax and logsumexp row: an integer maximum of the values' bits, over
    row[:n] of any length (vector body and remainder), the specials included."""
    from numba import njit

    from funcgrad.cpu.row_kernels import row_max
    kernel = njit(lambda row, n: row_max(row, n))
    rng = np.random.default_rng(0)
    for _ in range(300):
        n = int(rng.integers(1, 70))
        row = (rng.standard_normal(n + 3) * dtype(10.0) ** rng.integers(-30, 30)).astype(dtype)
        row[rng.integers(0, n, size=int(rng.integers(0, 4)))] = rng.choice([np.inf, -np.inf, -0.0, 0.0, np.nan])
        row[n:] = np.inf  # past n: never read
        got, want = kernel(row, n), np.max(row[:n])
        assert (np.isnan(got) and np.isnan(want)) or got == want, row[:n]
