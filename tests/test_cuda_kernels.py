"""Every CUDA kernel against the CPU implementation (NumPy), in numba's simulator: odd small
shapes, broadcasting, size 0 and 1, non-contiguous operands, every supported dtype."""
from __future__ import annotations

import ml_dtypes
import numpy as np
import pytest

import funcgrad as fg
import funcgrad.numpy as fnp
from funcgrad import nn
from funcgrad.ops import core
from funcgrad.ops import elementwise as E
from funcgrad.ops import reductions as R

pytestmark = pytest.mark.skipif(not fg.cuda.is_available(), reason="no CUDA device or simulator")
BF16 = np.dtype(ml_dtypes.bfloat16)
TOL = {np.float64: 1e-12, np.float32: 2e-6, np.float16: 2e-3, BF16: 1e-2}
rng = np.random.default_rng(0)


def to_cuda(x):
    return fg.device_put(fg.asarray(x), "cuda")


def same(cpu, gpu, dtype=None, tol=None):
    """The CUDA result equals the CPU one: same shape, dtype and device placement, close values
    (tol: for results of many float32 operations, whose rounding depends on the order of sums)."""
    assert gpu.device == "cuda:0"
    assert gpu.shape == cpu.shape and gpu.dtype == cpu.dtype, (gpu.shape, gpu.dtype, cpu.shape, cpu.dtype)
    c = np.asarray(cpu.numpy(), np.float64) if cpu.dtype != np.bool_ else cpu.numpy()
    g = np.asarray(gpu.numpy(), np.float64) if gpu.dtype != np.bool_ else gpu.numpy()
    if tol is None:
        tol = TOL.get(np.dtype(dtype or cpu.dtype).type, 0) if np.dtype(dtype or cpu.dtype) != BF16 else TOL[BF16]
    np.testing.assert_allclose(g, c, rtol=tol, atol=tol, equal_nan=True)


def both(fn, *args, **kw):
    """fn on the CPU arrays and on copies on the device."""
    cpu = fn(*[fg.asarray(a) if isinstance(a, np.ndarray) else a for a in args], **kw)
    gpu = fn(*[to_cuda(a) if isinstance(a, np.ndarray) else a for a in args], **kw)
    return cpu, gpu


# ---- elementwise: every primitive, its domain, broadcasting and a transposed operand ----------------
POSITIVE = {"log", "log1p", "log2", "log10", "sqrt", "reciprocal", "pow"}
UNIT = {"arcsin", "arccos", "arctanh"}
INTEGER = {"bitwise_and", "bitwise_or", "bitwise_xor", "left_shift", "right_shift", "invert"}
UNARY = [n for n in ("neg abs sign floor ceil round trunc exp expm1 log log1p log2 log10 sqrt square reciprocal "
                     "sin cos tan tanh sinh cosh arctan arcsin arccos arcsinh arccosh arctanh erf sigmoid softplus "
                     "relu isnan isinf isfinite not invert").split()]
BINARY = ("add sub mul div pow maximum minimum arctan2 remainder floor_divide eq ne lt le gt ge and or xor "
          "bitwise_and bitwise_or bitwise_xor left_shift right_shift").split()


def _values(name, shape, dtype):
    if name in INTEGER:
        return rng.integers(0, 7, shape).astype(np.int64)
    x = rng.uniform(-3, 3, shape)
    if name in POSITIVE:
        x = np.abs(x) + 0.2
    elif name in UNIT:
        x = x / 3.5
    elif name == "arccosh":
        x = np.abs(x) + 1.1
    elif name in ("remainder", "floor_divide"):
        x = np.where(np.abs(x) < 0.3, 1.0, x)
    return x.astype(dtype)


@pytest.mark.parametrize("name", UNARY)
@pytest.mark.parametrize("dtype", [np.float32, np.float64, np.float16, BF16])
def test_unary(name, dtype):
    prim = core.registry[name]
    if name in INTEGER or name == "not":
        dtype = np.int64
    x = _values(name, (3, 5), dtype)
    if np.dtype(dtype).kind == "f":
        x[0, :2] = [np.nan, np.inf] if name not in INTEGER else x[0, :2]
    same(*both(prim, x))
    xt = _values(name, (5, 3), dtype)  # a transposed (non-contiguous) operand
    same(*both(lambda a: prim(fnp.transpose(a)), xt))


@pytest.mark.parametrize("name", BINARY)
@pytest.mark.parametrize("dtype", [np.float32, np.float64, np.float16, BF16, np.int32])
def test_binary_broadcasting(name, dtype):
    prim = core.registry[name]
    if name in INTEGER:
        dtype = np.int64
    if np.dtype(dtype).kind == "i" and name in ("pow", "arctan2", "div"):
        dtype = np.float32
    a = _values(name, (3, 1, 5), dtype)
    b = _values(name, (4, 5), dtype)
    if np.dtype(dtype).kind == "i" and name in ("remainder", "floor_divide"):
        b = np.where(b == 0, 3, b).astype(dtype)
    same(*both(prim, a, b))
    same(*both(prim, a, 2))  # a weak Python scalar
    same(*both(prim, a[:0], b[:1]))  # size 0


@pytest.mark.parametrize("dtype", [np.float32, np.float16, BF16])
def test_parametrised_elementwise(dtype):
    x = _values("x", (4, 3), dtype)
    for approximate in (False, True):
        same(*both(lambda a: E.gelu_p(a, approximate=approximate), x))
    same(*both(lambda a: E.clip_p(a, -1.0, 0.5), x))
    for fused in ("tanh_vjp", "sigmoid_vjp", "relu_vjp"):  # a cotangent and a residual
        same(*both(core.registry[fused], x[::-1], x))
    same(*both(lambda a: E.clip_p(a, None, 0.5), x))
    same(*both(lambda a, lo: E.clip_p(a, lo, 2.0), x, x[:1] - 1))
    cond = x > 0
    same(*both(lambda c, a, b: E.select_p(c, a, b), cond, x, -x[:1]))
    for target in (np.float32, np.float64, np.float16, BF16, np.int32, np.int64, np.bool_, np.uint8):
        same(*both(lambda a: E.convert_p(a, dtype=np.dtype(target)), x))


def test_half_types_round_like_ml_dtypes():
    x = rng.standard_normal(37).astype(np.float32) * 100
    x[:3] = [np.nan, np.inf, 3.0e38]
    for dtype in (BF16, np.float16):
        same(*both(lambda a: E.convert_p(a, dtype=np.dtype(dtype)), x))
        same(*both(lambda a: E.convert_p(a, dtype=np.dtype(np.float32)), x.astype(dtype)))


# ---- reductions and the softmax family ----------------------------------------------------------------
AXES = [(0,), (1,), (2,), (0, 2), (0, 1, 2), ()]


@pytest.mark.parametrize("op", ["sum", "prod", "max", "min", "all", "any"])
@pytest.mark.parametrize("dtype", [np.float32, np.float64, np.float16, BF16, np.int32, np.bool_])
def test_reductions_over_axis_sets(op, dtype):
    prim = core.registry[op]
    x = (rng.standard_normal((3, 11, 2)) * 2).astype(dtype) if dtype != np.bool_ else rng.random((3, 11, 2)) > 0.3
    if op == "prod" and np.dtype(dtype).kind == "f":
        x = (rng.uniform(0.8, 1.2, (3, 11, 2))).astype(dtype)
    # every axis set for float32; the simulator is slow, so two for the other dtypes
    for axes in AXES if dtype == np.float32 else [(1,), (0, 2)]:
        for keepdims in (False, True) if dtype == np.float32 else (False,):
            same(*both(lambda a: prim(a, axes=axes, keepdims=keepdims), x))
    same(*both(lambda a: prim(fnp.transpose(a, (2, 0, 1)), axes=(0, 2), keepdims=False), x))
    if op in ("sum", "prod", "all", "any"):
        same(*both(lambda a: prim(a, axes=(1,), keepdims=False), x[:, :0]))  # empty: the identity


def test_max_of_empty_raises_like_numpy():
    with pytest.raises(ValueError, match="zero-size"):
        R.max_p(to_cuda(np.zeros((2, 0), np.float32)), axes=(1,), keepdims=False)


@pytest.mark.parametrize("dtype", [np.float32, np.float64, np.float16, BF16, np.int64])
def test_argmax_argmin_ties_and_nan(dtype):
    x = rng.integers(0, 4, (4, 21)).astype(dtype)  # many ties: the first wins
    if np.dtype(dtype).kind == "f":
        x[2, 7] = np.nan
        x[2, 3] = np.nan  # the first NaN wins, as in NumPy
    for prim in (R.argmax_p, R.argmin_p):
        for axis in (0, 1, None):
            same(*both(lambda a: prim(a, axis=axis, keepdims=False), x))
        same(*both(lambda a: prim(a, axis=1, keepdims=True), x))


@pytest.mark.parametrize("dtype", [np.float32, np.float64, np.float16, BF16])
def test_softmax_family(dtype):
    x = (rng.standard_normal((2, 11, 3)) * 3).astype(dtype)
    x[1, :, 2] = -np.inf  # a row of -inf: logsumexp is -inf, as on the CPU
    for axes in [(1,), (0, 2)]:
        same(*both(lambda a: R.logsumexp_p(a, axes=axes, keepdims=False), x))
        same(*both(lambda a: R.logsumexp_p(a, axes=axes, keepdims=True), x))
        finite = np.where(np.isinf(x), 0, x).astype(dtype)
        same(*both(lambda a: R.softmax_p(a, axes=axes), finite))
        same(*both(lambda a: R.log_softmax_p(a, axes=axes), finite))
    odd = x[:, :4].copy()  # rows (over the last axis) of -inf, one holding +inf, one holding NaN
    odd[0, 1, 1] = np.inf
    odd[0, 2, 0] = np.nan
    for prim in (R.softmax_p, R.log_softmax_p):  # NaN rows where a row holds +inf, as the CPU (and PyTorch)
        same(*both(lambda a: prim(a, axes=(2,)), odd))
    same(*both(lambda a: R.logsumexp_p(a, axes=(2,), keepdims=False), odd))  # +inf there


@pytest.mark.parametrize("dtype", [np.float32, np.float64, np.float16, np.int32, np.bool_])
def test_cumsum(dtype):
    """The block scan, over rows of several tiles (the simulator's tile: 8 threads x 2 elements)."""
    x = (rng.standard_normal((3, 37)) * 3).astype(dtype) if dtype != np.bool_ else rng.random((3, 37)) > 0.5
    for axis in (0, 1):
        for reverse in (False, True):
            same(*both(lambda a: R.cumsum_p(a, axis=axis, reverse=reverse), x))


# ---- matmul and einsum --------------------------------------------------------------------------------
@pytest.mark.parametrize("shapes", [((1, 1), (1, 1)), ((5, 7), (7, 3)), ((9, 1), (1, 6)), ((2, 3, 5), (5, 4)),
                                    ((2, 1, 3, 5), (4, 5, 2)), ((3, 0), (0, 2)), ((0, 4), (4, 3)), ((6, 9), (9, 11))])
@pytest.mark.parametrize("dtype", [np.float32, np.float64, np.float16, BF16])
def test_matmul_every_shape(shapes, dtype):
    a = rng.standard_normal(shapes[0]).astype(dtype)
    b = rng.standard_normal(shapes[1]).astype(dtype)
    same(*both(lambda x, y: fnp.matmul(x, y), a, b))


def test_matmul_transposed_operands_and_autocast_precision():
    """Every layout the kernel specialises its loads for: x @ W, x @ W.T, x.T @ g and both transposed
    (sizes not multiples of the simulator's 4 x 4 x 4 tile, several steps along K)."""
    a = rng.standard_normal((7, 9)).astype(np.float32)
    b = rng.standard_normal((9, 6)).astype(np.float32)
    for ta in (False, True):
        for tb in (False, True):
            x, y = (np.ascontiguousarray(a.T) if ta else a), (np.ascontiguousarray(b.T) if tb else b)
            same(*both(lambda p, q: fnp.matmul(fnp.transpose(p) if ta else p, fnp.transpose(q) if tb else q), x, y))
    a, b = rng.standard_normal((7, 5)).astype(np.float32), rng.standard_normal((6, 7)).astype(np.float32)
    from funcgrad.ops import linalg as L
    for precision in (np.dtype(BF16), np.dtype(np.float16)):
        same(*both(lambda x, y: L.matmul_p(x, y, precision=precision, out_dtype=np.dtype(np.float32)), a.T, b.T),
             dtype=precision)


@pytest.mark.parametrize("spec,shapes", [("ij,jk->ik", [(3, 4), (4, 5)]), ("ij->ji", [(3, 4)]), ("ii->i", [(4, 4)]),
                                         ("ij->", [(3, 4)]), ("bij,bjk->bki", [(2, 3, 4), (2, 4, 5)]),
                                         ("i,j->ij", [(3,), (4,)]), ("ij,ij->i", [(3, 4), (3, 4)]),
                                         ("ijk,ik,kl->jl", [(2, 3, 4), (2, 4), (4, 5)]),
                                         ("nchwkl,ockl->nohw", [(2, 3, 4, 4, 2, 2), (5, 3, 2, 2)])])
def test_einsum(spec, shapes):
    ops = [rng.standard_normal(s).astype(np.float32) for s in shapes]
    same(*both(lambda *xs: fnp.einsum(spec, *xs), *ops))


def test_every_launch_fits_the_hardware_at_any_size():
    """The GPU's launch configurations checked against its limits without a GPU: grid-stride
    launches at any n, and matmul's grid for a convolution-sized m (5M rows: above 65,535 row
    tiles) and a batch above 65,535, which the grid's y and z axes could not hold."""
    from funcgrad.cuda import runtime
    from funcgrad.cuda.kernels import matmul
    for n in (1, 255, 2**20, 2**40):
        runtime.check_launch(*runtime.launch_shape(n, runtime.GPU_BLOCK, runtime.GPU_MAX_BLOCKS))
    for m, n, batch in [(1, 1, 1), (5_000_000, 64, 1), (3, 5, 70_000), (2**21, 2**21, 1), (64, 64, 2**40)]:
        grid, block, _ = matmul.launch_config(m, n, batch, matmul.GPU_TILE)
        runtime.check_launch(grid, block)
    with pytest.raises(ValueError, match=r"grid \(1, 78125, 1\): axis y must be in 1..65535"):
        runtime.check_launch((1, 78125, 1), (16, 16))
    with pytest.raises(ValueError, match="2048 threads, above 1024"):
        runtime.check_launch(1, (64, 32))


def test_matmul_blocks_loop_over_tiles_when_the_grid_is_capped(monkeypatch):
    from funcgrad.cuda.kernels import matmul
    monkeypatch.setattr(matmul, "MAX_GRID", (3, 1, 1))  # 3 blocks for 2 x 3 x 5 tiles
    a, b = rng.standard_normal((5, 7, 6)).astype(np.float32), rng.standard_normal((6, 9)).astype(np.float32)
    same(*both(fnp.matmul, a, b))


def test_launches_are_counted():
    x = to_cuda(rng.standard_normal((3, 4)).astype(np.float32))
    fg.cuda.reset_launch_count()
    y = fnp.sum(fnp.exp(x) * 2.0, axis=0)
    assert fg.cuda.launch_count() == 3 and y.device == "cuda:0"  # exp, mul, the row reduction


# ---- structure, indexing, scatter ----------------------------------------------------------------------
def test_views_and_copies():
    x = rng.standard_normal((3, 4, 5)).astype(np.float32)
    same(*both(lambda a: fnp.reshape(fnp.transpose(a, (2, 0, 1)), (5, -1)), x))
    same(*both(lambda a: fnp.broadcast_to(a[:, :1], (2, 3, 4, 5)), x))
    same(*both(lambda a: fnp.pad(a, ((1, 0), (0, 2), (3, 1)), constant_values=2.5), x))
    same(*both(lambda a, b: fnp.concatenate([a, b, a], axis=1), x, x[:, :2]))
    same(*both(lambda a: a[::-1, 1:3, ::2], x))
    same(*both(lambda a: a[..., None, 2], x))
    same(*both(lambda a: a[1, 2, 3], x))  # a single element: a 0-d view
    same(*both(lambda a: a[-1, ..., 0], x))


@pytest.mark.parametrize("view, shape, copies", [  # view(xp, a): the same view in NumPy and funcgrad
    (lambda xp, a: xp.transpose(a, (2, 0, 1)), (5, 12), False),  # its last two axes still walk as one
    (lambda xp, a: xp.transpose(a, (1, 0, 2)), (2, 2, 3, 5), False),  # a split axis
    (lambda xp, a: a[::2], (2, 20), False),                    # a stride-2 slice before merged axes
    (lambda xp, a: xp.broadcast_to(a[:1], (3, 4, 5)), (3, 20), False),  # a broadcast axis kept apart
    (lambda xp, a: a[..., None], (1, 3, 1, 20, 1), False),
    (lambda xp, a: xp.transpose(a, (1, 0, 2)), (4, 15), True),  # these axes no longer walk in order
    (lambda xp, a: xp.transpose(a, (0, 2, 1)), (3, 20), True),
    (lambda xp, a: a[:, ::2], (3, 10), True),
    (lambda xp, a: xp.broadcast_to(a[:, :1], (3, 4, 5)), (3, 20), True),  # a stride-0 axis merged
])
def test_reshape_views_where_numpy_views_and_copies_where_it_copies(view, shape, copies):
    """reshape of a strided view on the device is a view (no launch) exactly where NumPy's is, and
    the right values either way."""
    x = rng.standard_normal((3, 4, 5)).astype(np.float32)
    host = view(np, x)
    assert np.shares_memory(np.reshape(host, shape), x) != copies  # NumPy's own answer
    on_device = view(fnp, to_cuda(x))
    fg.cuda.reset_launch_count()
    out = fnp.reshape(on_device, shape)
    assert fg.cuda.launch_count() == int(copies)
    np.testing.assert_array_equal(out.numpy(), np.reshape(host, shape))


@pytest.mark.parametrize("index", [
    lambda i, j: (i,), lambda i, j: (slice(None), i), lambda i, j: (i, j), lambda i, j: (i, slice(1, 3), j),
    lambda i, j: (Ellipsis, i), lambda i, j: (0, slice(None), i), lambda i, j: (None, i, None, j),
    lambda i, j: (slice(None), -1, i)])
def test_gather_and_scatter_match_numpy(index):
    x = rng.standard_normal((4, 5, 3)).astype(np.float32)
    i = np.array([[0, -1], [2, 2]])
    j = np.array([1, 0])
    idx_c = index(fg.asarray(i), fg.asarray(j))
    idx_g = index(to_cuda(i), to_cuda(j))
    cpu, gpu = fg.asarray(x)[idx_c], to_cuda(x)[idx_g]
    same(cpu, gpu)
    g = rng.standard_normal(cpu.shape).astype(np.float32)

    def scatter(arr, idx, g):
        return fg.vjp(lambda a: a[idx], arr)[1](g)[0]  # the gather's transpose: repeated indices add
    same(scatter(fg.asarray(x), idx_c, fg.asarray(g)), scatter(to_cuda(x), idx_g, to_cuda(g)))


@pytest.mark.filterwarnings("ignore:overflow encountered:RuntimeWarning")  # the simulator wraps as the GPU does
@pytest.mark.parametrize("dtype", ["int8", "uint8", "int16", "uint16", "bool", "int32", "uint64", "float16", "bfloat16"])
def test_index_add_on_every_dtype_is_numpys_add_at(dtype):
    """Scatter-add on dtypes without CUDA atomics accumulates wider and converts back: repeated
    indices wrap as NumPy's add.at does (true where any was, for bool)."""
    dtype = np.dtype(dtype)
    x = (np.array([100, 3, 250, 7, 1]) if dtype.kind in "iu" else np.array([1, 0, 0, 1, 0])).astype(dtype)
    index = np.array([0, 0, 2, 2, 4, 0])
    values = (np.array([100, 60, 9, 1, 0, 120]) if dtype.kind in "iu" else np.array([1, 1, 0, 1, 1, 0])).astype(dtype)
    expected = x.copy()
    np.add.at(expected, index, values)
    out = to_cuda(x).at[to_cuda(index)].add(to_cuda(values))
    assert out.device == "cuda:0" and out.dtype == dtype
    np.testing.assert_array_equal(out.numpy().astype(np.float64), expected.astype(np.float64))


def test_embedding_gradient_accumulates_repeated_rows():
    table = rng.standard_normal((6, 3)).astype(np.float32)
    tokens = np.array([[1, 4, 1], [5, 1, 0]])
    same(*both(lambda t, k: fg.grad(lambda w: fnp.sum(fnp.take(w, k, axis=0) ** 2))(t), table, tokens))


def test_out_of_range_constant_index_raises():
    with pytest.raises(IndexError, match="out of bounds"):
        to_cuda(np.zeros((3, 4), np.float32))[5, to_cuda(np.array([0]))]


def test_prng_matches_cpu_bit_for_bit():
    key = fg.random.key(7)
    ck = fg.device_put(key, "cuda")
    assert (fg.random.random_bits(key, (5, 3)).numpy() == fg.random.random_bits(ck, (5, 3)).numpy()).all()
    same(fg.random.normal(key, (4, 5)), fg.random.normal(ck, (4, 5)))
    same(fg.random.uniform(fg.random.split(key)[1], (7,)), fg.random.uniform(fg.random.split(ck)[1], (7,)))


@pytest.mark.parametrize("dtype", [np.float32, np.int64, BF16])
def test_argsort_is_stable_with_nan_last(dtype):
    """Rows within one block's shared memory (9, 3), and rows longer than it (the simulator's LOCAL
    is 16 pairs: 37 pads to 64, four chunks and then the network's global steps)."""
    for shape in ((3, 9), (2, 37)):
        x = rng.integers(0, 3, shape).astype(dtype)
        if dtype == np.float32:  # (ml_dtypes' bfloat16 sort on the CPU does not order NaN)
            x[1, 4] = x[0, -1] = np.nan
            x[1, -2] = -np.inf
        for axis in (0, 1):
            same(*both(lambda a: fnp.argsort(a, axis=axis), x))
    same(*both(lambda a: fnp.argsort(a, axis=None), x))


def test_bitcast_views():
    x = rng.standard_normal((3, 4)).astype(np.float32)
    from funcgrad.ops import prng
    same(*both(lambda a: prng.bitcast_p(a, dtype=np.dtype(np.uint32)), x))
    same(*both(lambda a: prng.bitcast_p(a, dtype=np.dtype(np.uint16)), x))


def test_conv_pool_windows_and_their_gradients():
    x = rng.standard_normal((2, 3, 6, 5)).astype(np.float32)
    w = rng.standard_normal((4, 3, 3, 2)).astype(np.float32)
    from funcgrad.nn import functional as F

    def loss(x, w):
        y = F.conv2d(x, w, stride=(2, 1), padding=1, dilation=(1, 2))
        return fnp.sum(F.max_pool2d(y, 2) ** 2) + fnp.sum(F.avg_pool2d(y, 2))
    for c, g in zip(*both(lambda a, b: fg.grad(loss, argnums=(0, 1))(a, b), x, w)):
        same(c, g, tol=1e-4)


@pytest.mark.parametrize("dtype", [np.float32, BF16])
def test_grouped_convolution_and_all_its_derivatives(dtype):
    """conv, conv_input_grad and conv_weight_grad (each the others' derivative) with groups and
    the uneven padding of 'same' on an even kernel; in float32 second derivatives reach all three."""
    from funcgrad.nn import functional as F
    x = rng.standard_normal((1, 4, 4, 3)).astype(dtype)
    w = rng.standard_normal((4, 2, 2, 3)).astype(dtype)

    def loss(x, w):
        return fnp.sum(fnp.astype(F.conv2d(x, w, padding="same", groups=2), np.float32) ** 2)

    def grad_norm(x, w):
        gx, gw = fg.grad(loss, argnums=(0, 1))(x, w)
        return fnp.sum(fnp.astype(gx, np.float32) ** 2) + fnp.sum(fnp.astype(gw, np.float32) ** 2)
    outer = grad_norm if dtype == np.float32 else loss
    for c, g in zip(*both(lambda a, b: fg.grad(outer, argnums=(0, 1))(a, b), x, w)):
        same(c, g, tol=2e-4 if dtype == np.float32 else 5e-2)


@pytest.mark.parametrize("dtype", [np.float32, BF16, np.int32])
def test_max_pool_positions_with_padding_ties_and_nan(dtype):
    """window_argmax's kernel skips padding, keeps the first of tied maxima and lets a NaN win;
    the gradient scatters back to those positions (gather_plane / scatter_plane)."""
    from funcgrad.nn import functional as F
    x = np.round(rng.standard_normal((2, 3, 7, 6)) * 2)
    if dtype != np.int32:
        x[1, 2, 3, 3] = np.nan
    x = x.astype(dtype)
    for kernel, stride, padding, dilation, ceil in [(2, None, 0, 1, False), (3, 2, 1, 1, False),
                                                    ((3, 2), (1, 2), (1, 0), (2, 1), False), (3, 3, 0, 1, True)]:
        # the last: ceil_mode's trailing padding, wider than half the window
        pool = lambda a: F.max_pool2d(a, kernel, stride, padding, dilation, ceil)  # noqa: E731
        same(*both(pool, x))
        if dtype != np.int32:
            same(*both(lambda a: fg.grad(lambda b: fnp.sum(fnp.astype(pool(b), np.float32)))(a), x))


ATTENTION_CASES = [  # q, k, v shapes; the bias's shape (None: none); causal
    (((2, 2, 5, 4), (2, 2, 6, 4), (2, 2, 6, 3)), (5, 6), True),  # more keys than queries, a shared bias
    (((3, 11, 10), (3, 9, 10), (3, 9, 12)), (3, 11, 9), False),  # rows, keys and columns over a block's threads
    (((13, 3), (4, 3), (4, 2)), None, True),  # no leading dims; queries past the last key see every key
    (((2, 0, 3), (2, 4, 3), (2, 4, 2)), None, False),  # no queries
]


@pytest.mark.parametrize("shapes,bias_shape,causal", ATTENTION_CASES)
def test_attention_kernels_and_their_gradients(shapes, bias_shape, causal):
    """attention (one launch) and its backward pass (two) against the CPU's blocked BLAS form: the
    output, and the gradients of q, k, v and an additive bias (the scores' gradient); the weights
    alone (one launch) against the CPU's."""
    from funcgrad.nn import functional as F
    q, k, v = (rng.standard_normal(s).astype(np.float32) for s in shapes)
    extra = () if bias_shape is None else (rng.standard_normal(bias_shape).astype(np.float32),)

    def attend(*a):
        return F.scaled_dot_product_attention(*a, is_causal=causal)

    from funcgrad.ops import attention as A
    cpu, gpu = both(attend, q, k, v, *extra)
    same(cpu, gpu, tol=1e-5)
    operands = [to_cuda(a) for a in (q, k, v) + extra] + ([] if extra else [0.0])
    fg.cuda.reset_launch_count()
    out = A.attention_p(*operands, scale=0.5, causal=causal)
    assert fg.cuda.launch_count() == (1 if q.shape[-2] else 0)  # no queries: an empty result
    fg.cuda.reset_launch_count()
    A.attention_grads_p(*operands, out, to_cuda(np.ones(out.shape, np.float32)), scale=0.5, causal=causal,
                        score_grad=bool(extra))
    assert fg.cuda.launch_count() == (2 if q.shape[-2] else 1)  # with no queries the key side alone
    bias = extra[0] if extra else 0.0
    fg.cuda.reset_launch_count()
    weights = A.attention_weights_p(operands[0], operands[1], operands[3], scale=0.5, causal=causal)
    assert fg.cuda.launch_count() == (1 if q.shape[-2] else 0)
    same(A.attention_weights_p(q, k, bias, scale=0.5, causal=causal), weights, tol=1e-6)
    t = rng.standard_normal(cpu.shape).astype(np.float32)

    def loss(*a):
        return fnp.sum(attend(*a) * t)
    argnums = tuple(range(3 + len(extra)))
    for c, g in zip(*both(lambda *a: fg.grad(loss, argnums=argnums)(*a), q, k, v, *extra)):
        same(c, g, tol=1e-5)


@pytest.mark.parametrize("dtype", [np.float64, np.float16, BF16])
def test_attention_kernels_in_every_float_dtype_and_on_head_views(dtype):
    """Half types compute in float32 and round once; q, k, v read in place as the head-split views
    of one projection (strided leading dims); the weights alone too."""
    from funcgrad.nn import functional as F
    from funcgrad.ops import attention as A
    proj = rng.standard_normal((2, 9, 3, 2, 4)).astype(dtype)

    def attend(p, causal):
        q, k, v = (fnp.transpose(p[:, :, i], (0, 2, 1, 3)) for i in range(3))
        return F.scaled_dot_product_attention(q, k, v, is_causal=causal)
    tol = {np.dtype(np.float64): 1e-12, np.dtype(np.float16): 4e-3, BF16: 3e-2}[np.dtype(dtype)]
    for causal in (False, True):
        same(*both(attend, proj, causal), tol=tol)
        same(*both(lambda p: A.attention_weights_p(*(fnp.transpose(p[:, :, i], (0, 2, 1, 3)) for i in range(2)), 0.0,
                                                   scale=0.5, causal=causal), proj), tol=tol)
        same(*both(lambda p: fg.grad(lambda p: fnp.sum(fnp.astype(attend(p, causal), np.float32) ** 2))(p), proj),
             tol=tol * 8)


def test_attention_kernels_follow_the_cpu_on_masked_rows_no_keys_and_non_finite_scores():
    """A row whose keys are all masked (bias -inf) is zeros as on the CPU (and in PyTorch), with
    zero gradients; a NaN score makes its row NaN, an infinite bias leaves the shift at 0; with no
    keys the output is zeros. The weights kernel follows the same rules."""
    from funcgrad.nn import functional as F
    from funcgrad.ops import attention as A
    q, k, v = (rng.standard_normal(s).astype(np.float32) for s in ((2, 4, 3), (2, 5, 3), (2, 5, 2)))
    bias = np.zeros((2, 4, 5), np.float32)
    bias[0, 1] = -np.inf
    bias[1, 2, 3] = np.nan
    bias[1, 0, 2] = np.inf
    bias[0, 3, :2] = -np.inf
    cpu, gpu = both(F.scaled_dot_product_attention, q, k, v, bias)
    assert (cpu.numpy()[0, 1] == 0).all() and np.isnan(cpu.numpy()[1, 2]).all()
    same(cpu, gpu, tol=1e-5)
    same(*both(lambda *a: A.attention_weights_p(*a, scale=0.5, causal=False), q, k, bias), tol=1e-6)
    finite = bias.copy()
    finite[1] = 0  # no NaN or inf score: every gradient finite, the masked row's zero
    grads = both(lambda *a: fg.grad(lambda *a: fnp.sum(F.scaled_dot_product_attention(*a) ** 2), argnums=(0, 1, 2))(*a),
                 q, k, v, finite)
    for c, g in zip(*grads):
        assert np.isfinite(c.numpy()).all()
        same(c, g, tol=1e-5)
    assert (grads[0][0].numpy()[0, 1] == 0).all()
    empty = (q, np.zeros((2, 0, 3), np.float32), np.zeros((2, 0, 2), np.float32))
    cpu, gpu = both(F.scaled_dot_product_attention, *empty)
    same(cpu, gpu)
    for c, g in zip(*both(lambda *a: fg.grad(lambda *a: fnp.sum(F.scaled_dot_product_attention(*a)),
                                             argnums=(0, 1, 2))(*a), *empty)):
        same(c, g)


def test_layer_and_rms_norm_and_their_fused_gradients():
    """norm and norm_grad on the device (sums and elementwise kernels composed)."""
    x = (rng.standard_normal((3, 2, 7)) * 2 + 1).astype(np.float32)
    w, t = rng.standard_normal(7).astype(np.float32), rng.standard_normal((3, 2, 7)).astype(np.float32)
    for f in (lambda x, w: nn.layer_norm(x, 7, w, w), lambda x, w: nn.rms_norm(x, (2, 7), w[None].repeat(2, 0))):
        same(*both(f, x, w), tol=1e-5)
        for c, g in zip(*both(lambda *a: fg.grad(lambda x, w: fnp.sum(f(x, w) * a[2]), argnums=(0, 1))(*a[:2]),
                              x, w, t)):
            same(c, g, tol=1e-4)


@pytest.mark.parametrize("dtype", [np.float64, np.float16, BF16])
def test_norm_rows_take_one_launch_each_way(dtype):
    """norm_p and norm_grad_p on the device are one row kernel each (a block per row: rows longer
    than the block, a transposed input, a cotangent of another dtype), equal to the CPU's kernels."""
    from funcgrad.ops import normalization as N
    x = (rng.standard_normal((37, 5)) * 3 + 1).astype(dtype)
    g = rng.standard_normal((5, 37)).astype(np.float32)
    for center in (True, False):
        fg.cuda.reset_launch_count()
        out = N.norm_p(fnp.transpose(to_cuda(x)), eps=1e-5, center=center)
        assert fg.cuda.launch_count() == 1
        same(N.norm_p(fg.asarray(x.T), eps=1e-5, center=center), out)
        fg.cuda.reset_launch_count()
        dx = N.norm_grad_p(fnp.transpose(to_cuda(x)), to_cuda(g), eps=1e-5, center=center)
        assert fg.cuda.launch_count() == 1
        same(N.norm_grad_p(fg.asarray(x.T), fg.asarray(g), eps=1e-5, center=center), dx, tol=1e-5)
    with pytest.raises(TypeError, match="floating-point"):
        N.norm_p(to_cuda(np.arange(6)), eps=1e-5, center=True)


@pytest.mark.parametrize("op", ["sum", "prod", "max", "min", "all", "any"])
def test_few_long_rows_reduce_in_two_passes(op):
    """A full reduction (and one of few rows) splits each row across blocks and combines the
    partial results in a second launch, in the accumulator's type (float32 for bfloat16)."""
    from funcgrad.cuda.kernels import reduce as RK
    prim = core.registry[op]
    n = 2 * RK.SPLIT_COLUMNS + 45  # long enough to split, in the simulator's blocks and a GPU's
    for dtype in (np.float32, BF16, np.int32):
        x = rng.uniform(0.9, 1.1, (3, n)) if op == "prod" else rng.standard_normal((3, n)) * 3
        x = (x > 0) if op in ("all", "any") and dtype == np.int32 else x.astype(dtype)
        assert RK._splits(3, n)[0] > 1 and RK._splits(1, 3 * n)[0] > 1
        on_device = to_cuda(x)
        fg.cuda.reset_launch_count()
        prim(on_device, axes=(1,), keepdims=False)
        assert fg.cuda.launch_count() == 2  # the split rows, then their partial results
        same(*both(lambda a: prim(a, axes=(1,), keepdims=False), x), tol=1e-4 if dtype == np.float32 else None)
        same(*both(lambda a: prim(a, axes=(0, 1), keepdims=True), x), tol=1e-4 if dtype == np.float32 else None)


@pytest.mark.parametrize("op", ["sum", "max", "any"])
def test_reduction_layouts_warps_for_short_rows_and_columns_along_contiguous_kept_axes(op):
    """Many short rows take a warp each; a reduction over axis 0 of a matrix (a bias gradient) puts
    the threads along the contiguous kept axis, splitting long columns across blocks (two passes)."""
    from funcgrad.cuda.kernels import reduce as RK
    prim = core.registry[op]
    x = rng.standard_normal((2 * RK.SPLIT_COLUMNS + 44, 9)).astype(np.float32)  # columns long enough to split
    x = (x > 1) if op == "any" else x
    for axes, layout in (((1,), "warps"), ((0,), "columns")):
        view = to_cuda(x)._value
        kshape, kstrides, rshape, _ = RK.rows_and_columns(view.shape, view.strides, axes)
        assert RK._layout(kshape, kstrides, int(np.prod(kshape)), int(np.prod(rshape))) == layout
        same(*both(lambda a: prim(a, axes=axes, keepdims=False), x), tol=1e-5)
    on_device = to_cuda(x)
    fg.cuda.reset_launch_count()
    prim(on_device, axes=(0,), keepdims=False)
    assert fg.cuda.launch_count() == 2  # the axis-0 case: long columns split across blocks, then combined
    same(*both(lambda a: prim(a[:, :, None] * 1, axes=(0, 2), keepdims=True), x), tol=1e-5)
