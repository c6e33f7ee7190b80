"""Elementwise functions: values against NumPy, derivatives against finite differences."""
import math

import numpy as np
import pytest
from hypothesis import given
from hypothesis import strategies as st

import funcgrad as fg
import funcgrad.numpy as fnp
from funcgrad import nn

from .helpers import assert_close, broadcast_pair, floats_array, numeric_grad, shapes

_erf = np.vectorize(math.erf, otypes=[np.float64])


def _np_sigmoid(x):
    return 1 / (1 + np.exp(-x))


# name: (funcgrad function, NumPy reference, (lo, hi) domain, kink to stay away from)
UNARY = {
    "negative": (fnp.negative, np.negative, (-2, 2), None),
    "abs": (fnp.abs, np.abs, (-2, 2), 0.0),
    "exp": (fnp.exp, np.exp, (-2, 2), None),
    "expm1": (fnp.expm1, np.expm1, (-2, 2), None),
    "log": (fnp.log, np.log, (0.2, 3), None),
    "log1p": (fnp.log1p, np.log1p, (-0.5, 3), None),
    "log2": (fnp.log2, np.log2, (0.2, 3), None),
    "log10": (fnp.log10, np.log10, (0.2, 3), None),
    "sqrt": (fnp.sqrt, np.sqrt, (0.2, 3), None),
    "square": (fnp.square, np.square, (-2, 2), None),
    "reciprocal": (fnp.reciprocal, np.reciprocal, (0.3, 3), None),
    "sin": (fnp.sin, np.sin, (-3, 3), None),
    "cos": (fnp.cos, np.cos, (-3, 3), None),
    "tan": (fnp.tan, np.tan, (-1.2, 1.2), None),
    "tanh": (fnp.tanh, np.tanh, (-3, 3), None),
    "sinh": (fnp.sinh, np.sinh, (-2, 2), None),
    "cosh": (fnp.cosh, np.cosh, (-2, 2), None),
    "arctan": (fnp.arctan, np.arctan, (-3, 3), None),
    "arcsin": (fnp.arcsin, np.arcsin, (-0.9, 0.9), None),
    "arccos": (fnp.arccos, np.arccos, (-0.9, 0.9), None),
    "arcsinh": (fnp.arcsinh, np.arcsinh, (-2, 2), None),
    "arccosh": (fnp.arccosh, np.arccosh, (1.2, 3), None),
    "arctanh": (fnp.arctanh, np.arctanh, (-0.9, 0.9), None),
    "relu": (nn.relu, lambda x: np.maximum(x, 0), (-2, 2), 0.0),
    "sigmoid": (nn.sigmoid, _np_sigmoid, (-4, 4), None),
    "softplus": (nn.softplus, lambda x: np.log1p(np.exp(x)), (-4, 4), None),
    "silu": (nn.silu, lambda x: x * _np_sigmoid(x), (-4, 4), None),
    "gelu": (nn.gelu, lambda x: 0.5 * x * (1 + _erf(x / np.sqrt(2))), (-3, 3), None),
    "gelu_tanh": (lambda x: nn.gelu(x, approximate=True),
                  lambda x: 0.5 * x * (1 + np.tanh(np.sqrt(2 / np.pi) * (x + 0.044715 * x ** 3))), (-3, 3), None),
}

BINARY = {
    "add": (fnp.add, np.add, (-2, 2), (-2, 2)),
    "subtract": (fnp.subtract, np.subtract, (-2, 2), (-2, 2)),
    "multiply": (fnp.multiply, np.multiply, (-2, 2), (-2, 2)),
    "divide": (fnp.divide, np.divide, (-2, 2), (0.5, 2)),
    "power": (fnp.power, np.power, (0.3, 2), (-2, 2)),
    "maximum": (fnp.maximum, np.maximum, (-2, 2), (-2, 2)),
    "minimum": (fnp.minimum, np.minimum, (-2, 2), (-2, 2)),
    "arctan2": (fnp.arctan2, np.arctan2, (-2, 2), (0.5, 2)),
    "remainder": (fnp.remainder, np.remainder, (0.1, 0.9), (1.0, 2.0)),
}


@pytest.mark.parametrize("name", sorted(UNARY))
@given(data=st.data())
def test_unary_values_and_grads(name, data):
    f, ref, (lo, hi), kink = UNARY[name]
    x = floats_array(data.draw, data.draw(shapes(max_side=3)), lo, hi, away_from=kink)
    assert_close(f(x), ref(x), rtol=1e-6, atol=1e-9)
    if x.size:
        fg.check_grads(f, (x,), order=1)


@pytest.mark.parametrize("name", sorted(UNARY))
def test_unary_second_order(name):
    f, _, (lo, hi), kink = UNARY[name]
    x = np.linspace(lo, hi, 5)
    if kink is not None:
        x = x[np.abs(x - kink) > 0.1]
    fg.check_grads(f, (x,), order=2)


@pytest.mark.parametrize("name", sorted(UNARY))
def test_unary_float32(name):
    f, ref, (lo, hi), kink = UNARY[name]
    x = np.linspace(lo, hi, 7).astype(np.float32)
    out = f(x)
    assert out.dtype == fg.float32
    assert_close(out, ref(x.astype(np.float64)), rtol=2e-6, atol=2e-6)


@pytest.mark.parametrize("name", sorted(BINARY))
@given(data=st.data())
def test_binary_values_and_grads_with_broadcasting(name, data):
    f, ref, (xlo, xhi), (ylo, yhi) = BINARY[name]
    sx, sy = data.draw(broadcast_pair(max_side=3))
    x = floats_array(data.draw, sx, xlo, xhi)
    y = floats_array(data.draw, sy, ylo, yhi)
    out = f(x, y)
    assert_close(out, ref(x, y), rtol=1e-6, atol=1e-9)
    if x.size and y.size and name not in ("maximum", "minimum"):
        fg.check_grads(f, (x, y), order=1)


@pytest.mark.parametrize("name", sorted(BINARY))
def test_binary_second_order(name):
    f, _, (xlo, xhi), (ylo, yhi) = BINARY[name]
    x = np.linspace(xlo, xhi, 4).reshape(4, 1)
    y = np.linspace(ylo, yhi, 3)[::-1].copy()
    if name in ("maximum", "minimum"):
        y = y + 0.123  # no ties
    fg.check_grads(f, (x, y), order=2)


def test_maximum_minimum_share_the_gradient_on_ties():
    x = np.array([1.0, 2.0, 3.0])
    y = np.array([1.0, 5.0, 0.0])
    gx, gy = fg.grad(lambda a, b: fnp.sum(fnp.maximum(a, b)), argnums=(0, 1))(x, y)
    assert_close(gx, [0.5, 0.0, 1.0])
    assert_close(gy, [0.5, 1.0, 0.0])
    gx, gy = fg.grad(lambda a, b: fnp.sum(fnp.minimum(a, b)), argnums=(0, 1))(x, y)
    assert_close(gx, [0.5, 1.0, 0.0])
    assert_close(gy, [0.5, 0.0, 1.0])


def test_pytorch_conventions_at_kinks():
    zero = np.array([0.0, 0.0])
    assert_close(fg.grad(lambda x: fnp.sum(fnp.abs(x)))(zero), [0, 0])
    assert_close(fg.grad(lambda x: fnp.sum(nn.relu(x)))(zero), [0, 0])
    # 0 ** y: d/dy is 0 (not nan); x ** 0: d/dx is 0 even at x == 0
    gx, gy = fg.grad(lambda x, y: fnp.sum(x ** y), argnums=(0, 1))(np.array([0.0, 2.0]), np.array([0.0, 3.0]))
    assert_close(gx, [0.0, 12.0])
    assert_close(gy, [0.0, 8 * np.log(2)])
    # fmod has slope 1 in x and -trunc(x / y) in y also where the remainder is 0 (it was 0 there)
    x, y = np.array([-3.0, 0.0, 1.5, 4.0, -0.7]), np.array([1.5, 2.0, -1.5, -1.5, 0.3])
    gx, gy = fg.grad(lambda x, y: fnp.sum(fnp.fmod(x, y)), argnums=(0, 1))(x, y)
    assert_close(gx, np.ones(5), rtol=0)
    assert_close(gy, -np.trunc(x / y), rtol=0)
    # atan2 at the origin: both partials 0 (PyTorch's; 0 / 0 gave NaN)
    assert_close(fg.grad(lambda a, b: fnp.arctan2(a, b), argnums=(0, 1))(np.float64(0.0), np.float64(0.0)), (0.0, 0.0),
                 rtol=0)


def test_softplus_beta_and_threshold_as_pytorch():
    # log1p(exp(beta x)) / beta, and x itself where beta x exceeds threshold (PyTorch's linear branch)
    x = np.array([-30.0, -1.0, 0.0, 0.4, 0.6, 2.0, 19.0, 21.0, 40.0])
    for beta, threshold in [(1.0, 20.0), (2.0, 1.0), (0.5, 0.25), (-1.0, 20.0)]:
        smooth = np.log1p(np.exp(beta * x)) / beta
        linear = beta * x > threshold
        assert_close(nn.softplus(x, beta, threshold), np.where(linear, x, smooth), rtol=1e-12)
        slope = 1 / (1 + np.exp(-beta * x))
        assert_close(fg.grad(lambda v: fnp.sum(nn.softplus(v, beta=beta, threshold=threshold)))(x),
                     np.where(linear, 1.0, slope), rtol=1e-12)
    assert np.asarray(nn.softplus(np.array([37.5]))) == 37.5  # float64: log1p(exp(-37.5)) would show
    assert_close(nn.Softplus(beta=2.0, threshold=1.0)(x), nn.softplus(x, 2.0, 1.0))


def test_clip_gradient_flows_inside_the_closed_range():
    x = np.array([-2.0, -1.0, 0.0, 1.0, 2.0])
    assert_close(fnp.clip(x, -1, 1), np.clip(x, -1, 1))
    assert_close(fg.grad(lambda v: fnp.sum(fnp.clip(v, -1.0, 1.0)))(x), [0, 1, 1, 1, 0])
    lo, hi = np.array(-1.5), np.array(0.5)
    glo, ghi = fg.grad(lambda a, b: fnp.sum(fnp.clip(x, a, b)), argnums=(0, 1))(lo, hi)
    assert float(glo) == 1.0 and float(ghi) == 2.0
    assert_close(fnp.clip(x, min=0.0), np.clip(x, 0, None))
    assert_close(fnp.clip(x, max=0.0), np.clip(x, None, 0))
    # float bounds lift integers to the default float, as torch.clamp's (NumPy's float64 was kept)
    ints = fg.asarray([7, -7, 0, 5])
    for got in (fnp.clip(ints, 0.5, 5.5), fnp.clip(ints, 0.5), fnp.clip(ints, max=5.5)):
        assert got.dtype == fg.float32
    assert_close(fnp.clip(ints, 0.5, 5.5), [5.5, 0.5, 0.5, 5.0])
    assert fnp.clip(ints, 1, 3).dtype == fg.int64 and fnp.clip(ints, np.zeros(4), None).dtype == fg.float64


@given(data=st.data())
def test_where_values_and_grads(data):
    sx, sy = data.draw(broadcast_pair(max_side=3))
    x = floats_array(data.draw, sx)
    y = floats_array(data.draw, sy)
    cond = np.broadcast_to(x, np.broadcast_shapes(sx, sy)) > 0
    assert_close(fnp.where(cond, x, y), np.where(cond, x, y))
    if x.size and y.size:
        fg.check_grads(lambda a, b: fnp.where(cond, a, b), (x, y), order=2)


COMPARISONS = [(fnp.equal, np.equal), (fnp.not_equal, np.not_equal), (fnp.less, np.less),
               (fnp.less_equal, np.less_equal), (fnp.greater, np.greater),
               (fnp.greater_equal, np.greater_equal), (fnp.logical_and, np.logical_and),
               (fnp.logical_or, np.logical_or), (fnp.logical_xor, np.logical_xor)]


@pytest.mark.parametrize("f,ref", COMPARISONS)
def test_comparisons_and_logic(f, ref):
    x = np.array([[0.0, 1.0, 2.0], [2.0, 0.0, -1.0]])
    y = np.array([1.0, 1.0, -1.0])
    out = f(x, y)
    assert out.dtype == fg.bool_
    assert_close(out, ref(x, y))


def test_operators_and_comparisons_on_arrays():
    a = fg.array([[1.0, 2.0], [3.0, 4.0]])
    n = np.array([[1.0, 2.0], [3.0, 4.0]], np.float32)
    assert_close(a + 1, n + 1)
    assert_close(1 - a, 1 - n)
    assert_close(2 / a, 2 / n)
    assert_close(a // 2, n // 2)
    assert_close(a % 3, n % 3)
    assert_close(a ** 2, n ** 2)
    assert_close(2 ** a, 2 ** n)
    assert_close(-a, -n)
    assert_close(abs(-a), n)
    assert_close(a @ a, n @ n)
    assert_close(a == 2, n == 2)
    assert_close((a > 1) & (a < 4), (n > 1) & (n < 4))
    assert_close(~(a > 1), ~(n > 1))
    assert_close(n * a, n * n)  # a NumPy array on the left defers to funcgrad
    assert isinstance(n * a, fg.Array)
    assert_close(fnp.logical_not(a > 2), ~(n > 2))
    assert_close(fnp.isnan(fnp.log(a - 2)), np.isnan(np.log(n - 2)))
    assert_close(fnp.sign(a - 2), np.sign(n - 2))
    assert_close(fnp.floor(a / 3), np.floor(n / 3))
    assert_close(fnp.round(a / 3, 2), np.round(n / 3, 2), atol=1e-6)


def test_integers_round_in_their_own_dtype_with_numpys_ties_to_even():
    """Non-negative decimals leave integers as they are (NumPy, JAX); negative ones round to the
    nearest multiple of a power of ten, a tie to the even multiple; int8 -128 goes to -100."""
    x = np.array([15, 25, -15, -25, 7, 149, 150, 250, -128, 127], np.int64)
    for dtype in (np.int64, np.int32, np.int8, np.uint8):
        v = x[x >= 0] if dtype == np.uint8 else x
        v = v.astype(dtype)
        for decimals in (2, 0, -1, -2):
            got = fnp.round(v, decimals)
            assert got.dtype == dtype
            np.testing.assert_array_equal(got, np.round(v, decimals))
    np.testing.assert_array_equal(fnp.round(x, -1)[:4], [20, 20, -20, -20])
    np.testing.assert_array_equal(fnp.round(x.astype(np.int8), -3), np.zeros(10))  # 1000 is past int8


def test_rounding_and_comparisons_have_zero_gradient():
    x = np.array([0.3, 1.7])
    assert_close(fg.grad(lambda v: fnp.sum(fnp.floor(v) + fnp.ceil(v) + fnp.round(v) + fnp.sign(v)))(x), [0, 0])


# ---- fused first-order VJPs (PyTorch's tanh_backward and kin) ---------------------------------------------
FUSED_VJP = {"tanh": (fnp.tanh, lambda x: 1 - np.tanh(x) ** 2),
             "sigmoid": (nn.sigmoid, lambda x: _np_sigmoid(x) * (1 - _np_sigmoid(x))),
             "relu": (nn.relu, lambda x: (x > 0).astype(x.dtype))}


@pytest.mark.parametrize("name", FUSED_VJP)
def test_fused_vjp_is_bound_once_and_matches_the_derivative(name):
    f, slope = FUSED_VJP[name]
    x = np.array([-2.0, -0.5, 0.0, 0.3, 1.7], np.float64)
    g = np.array([0.5, -1.0, 2.0, 3.0, -0.25])
    loss = lambda x: fnp.sum(f(x) * g)  # noqa: E731
    with fg.profiler.profile() as prof:
        grad = fg.grad(loss)(x)
    names = [r["name"] for r in prof.key_averages()]
    assert f"{name}_vjp" in names and not {"sub", "gt", "convert"} & set(names)
    assert_close(grad, g * slope(x), rtol=1e-12, atol=0)
    assert_close(fg.jit(fg.grad(loss))(x), g * slope(x), rtol=1e-12, atol=0)
    per_row = fg.vmap(fg.grad(lambda r: fnp.sum(f(r))))(np.stack([x, -x]))
    assert_close(per_row, np.stack([slope(x), slope(-x)]), rtol=1e-12, atol=0)
    # The cotangent differentiated again: the composed derivative, against central differences.
    if name != "relu":
        hess_diag = fg.grad(lambda x: fnp.sum(fg.grad(loss)(x)))(x)
        assert_close(hess_diag, numeric_grad(lambda v: np.sum(g * slope(v)), x), rtol=1e-6, atol=1e-8)


def test_fused_vjp_keeps_pytorchs_relu_at_infinite_cotangents():
    """threshold_backward: where(x > 0, g, 0), so an infinite cotangent on an inactive unit gives 0."""
    x = fg.asarray(np.array([-1.0, 2.0], np.float32))
    _, pullback = fg.vjp(nn.relu, x)
    assert_close(pullback(fg.asarray(np.array([np.inf, 3.0], np.float32)))[0], np.array([0.0, 3.0], np.float32))


@pytest.mark.parametrize("dtype", [np.int8, np.int32, np.int64])
def test_integer_powers_with_negative_exponents_are_pytorchs_and_jaxs(dtype):
    """NumPy refuses them; PyTorch and JAX give the truncated quotient (0 ** -1 is 0), and so do
    the eager primitive, jit's fused kernel and the CUDA kernel (in the simulator)."""
    from fractions import Fraction
    base, exponent = np.meshgrid(np.arange(-3, 4), np.arange(-4, 4))
    base, exponent = base.ravel().astype(dtype), exponent.ravel().astype(dtype)
    expected = [0 if b == 0 and e < 0 else int(Fraction(int(b)) ** int(e)) for b, e in zip(base, exponent)]
    x, y = fg.asarray(base), fg.asarray(exponent)
    fused = fg.jit(lambda a, b: a ** b + 0)  # the + keeps power in a fused elementwise group
    on_gpu = fg.device_put((x, y), "cuda")
    for out in (x ** y, fnp.power(x, y), fused(x, y), on_gpu[0] ** on_gpu[1]):
        assert out.dtype == dtype and out.tolist() == expected
    with pytest.raises(ValueError, match="negative integer powers"):
        x ** -1  # a negative Python exponent raises, as in NumPy, PyTorch and JAX
    with pytest.raises(ValueError, match="negative integer powers"):
        fnp.power(base, -1)  # host integers too (they went round the check and gave 0)


def test_bfloat16_clip_and_integer_casts_keep_their_rules():
    """clip keeps bfloat16 with Python-number bounds (its shape rule: maximum, then minimum), and a
    bfloat16 -> integer cast wraps as float16's does (PyTorch's; ml_dtypes 0.7's own cast gives 0)."""
    x = fnp.asarray(np.array([-2.0, -0.5, 0.25, 3.0, 300.0]), fnp.bfloat16)
    clipped = fnp.clip(x, -1.0, 0.5)
    assert clipped.dtype == fnp.bfloat16
    np.testing.assert_array_equal(np.asarray(clipped, np.float32), [-1.0, -0.5, 0.25, 0.5, 0.5])
    assert fg.jit(lambda v: fnp.clip(v, -1.0, 0.5))(x).dtype == fnp.bfloat16
    half = np.array([-2.0, -1.0, 2.5, 300.0], np.float16)
    for target in (np.uint8, np.int8, np.int32):
        np.testing.assert_array_equal(fnp.astype(fnp.asarray(half, fnp.bfloat16), target), half.astype(target))
