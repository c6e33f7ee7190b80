"""jit: same numbers as eager, caching and retracing, fusion, donation, and errors a user can act on."""
import functools
import logging
import re

import numpy as np
import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

import funcgrad as fg
import funcgrad.numpy as fnp
from funcgrad import data, nn, optim
from funcgrad.cpu import fusion
from funcgrad.models import GPT, RECIPES, sequence_loss
from funcgrad.train import classification_loss

from .helpers import assert_close
from .test_elementwise import BINARY, UNARY
from .test_shapes import CASES

RNG = np.random.default_rng(0)


@pytest.mark.parametrize("name", sorted(UNARY))
def test_jit_matches_eager_unary(name):
    f, _, (lo, hi), _ = UNARY[name]
    x = np.linspace(lo, hi, 7).astype(np.float32)
    assert_close(fg.jit(f)(x), f(x), rtol=1e-6, atol=1e-6)
    g = fg.grad(lambda v: fnp.sum(f(v) * 1.5))
    assert_close(fg.jit(g)(x), g(x), rtol=2e-5, atol=2e-6)


@pytest.mark.parametrize("name", sorted(BINARY))
def test_jit_matches_eager_binary(name):
    f, _, (xlo, xhi), (ylo, yhi) = BINARY[name]
    x = np.linspace(xlo, xhi, 6).reshape(3, 2)
    y = np.linspace(ylo, yhi, 2) + 0.01
    assert_close(fg.jit(f)(x, y), f(x, y), rtol=1e-12)
    g = fg.grad(lambda a, b: fnp.sum(f(a, b) ** 2), argnums=(0, 1))
    for got, want in zip(fg.jit(g)(x, y), g(x, y)):
        assert_close(got, want, rtol=1e-10, atol=1e-12)


@pytest.mark.parametrize("name", sorted(CASES))
def test_jit_matches_eager_structural(name):
    f, _, shapes = CASES[name]
    args = [RNG.standard_normal(s) for s in shapes]
    assert_close(fg.jit(f)(*args), f(*args), rtol=1e-12, atol=1e-12)
    g = fg.grad(lambda *a: fnp.sum(fnp.sin(fg.asarray(f(*a)))), argnums=tuple(range(len(args))))
    for got, want in zip(fg.jit(g)(*args), g(*args)):
        assert_close(got, want, rtol=1e-10, atol=1e-12)


def _step_fn(loss_fn, opt):
    def step(model, state, batch, key):
        (loss, _), grads = fg.value_and_grad(loss_fn, has_aux=True)(model, batch, key)
        updates, state = opt.update(grads, state, model)
        return optim.apply_updates(model, updates), state, loss
    return step


@pytest.mark.parametrize("name", ["mlp", "cnn", "gpt"])
def test_jitted_training_step_matches_eager(name):
    if name == "gpt":
        x, y = data.load("sort", n=16, length=3)
        model = GPT(data.SEQUENCE_VOCAB, x.shape[1], dim=16, depth=1, heads=2, dropout=0.1, key=fg.random.key(0))
        loss_fn = sequence_loss
    else:
        x, y = data.load("digits")
        x, y = x[:32], y[:32]
        model = RECIPES[name].build(x, y, fg.random.key(0))
        loss_fn = classification_loss
    opt = optim.sgd(optim.cosine_schedule(0.1, 10), momentum=0.9)  # (Adam would amplify rounding noise)
    step = _step_fn(loss_fn, opt)
    jstep = fg.jit(step)
    m1 = m2 = model
    s1 = s2 = opt.init(model)
    key = fg.random.key(1)
    for i in range(3):
        k = fg.random.fold_in(key, i)
        m1, s1, l1 = step(m1, s1, (x, y), k)
        m2, s2, l2 = jstep(m2, s2, (x, y), k)
        assert_close(l2, l1, rtol=1e-5, atol=1e-6)
    for a, b in zip(fg.tree_leaves(m1), fg.tree_leaves(m2)):
        assert_close(b, a, rtol=1e-4, atol=1e-6)
    assert len(jstep.cache) == 1


def test_jitted_adamw_step_trains():
    x, y = data.load("digits")
    model = RECIPES["mlp"].build(x, y, fg.random.key(0))
    opt = optim.adamw(3e-3)
    jstep = fg.jit(_step_fn(classification_loss, opt), donate_argnums=(0, 1))
    state = opt.init(model)
    losses = []
    for i in range(30):
        model, state, loss = jstep(model, state, (x[:256], y[:256]), fg.random.key(i))
        losses.append(float(loss))
    assert losses[-1] < 0.3 * losses[0]


def test_cache_hits_and_retraces():
    traces = []

    def f(x, scale):
        traces.append(1)
        return x * scale

    jf = fg.jit(f, static_argnums=1)
    jf(fg.ones(3), 2.0)
    jf(fg.ones(3) * 5, 2.0)  # same shape: hit
    assert len(traces) == 1
    jf(fg.ones(4), 2.0)  # new shape: retrace
    jf(fg.ones(4), 3.0)  # new static value: retrace
    jf(fg.ones(4, dtype=fg.float64), 3.0)  # new dtype: retrace
    assert len(traces) == 4
    assert_close(jf(fg.ones(4), 3.0), np.full(4, 3.0))
    assert len(traces) == 4


def test_static_argnames_kwargs_and_pytrees():
    @fg.jit
    def f(params, x, *, flip=False):
        out = {"y": params["w"] * x + params["b"], "n": x.shape[0]}
        return out
    out = f({"w": fg.ones(2), "b": fg.zeros(2)}, fg.array([1.0, 2.0]))
    assert_close(out["y"], [1, 2])
    assert out["n"] == 2
    g = fg.jit(lambda x, n: x * n if n > 1 else x, static_argnames="n")
    assert_close(g(fg.ones(2), n=3), [3, 3])
    assert_close(g(fg.ones(2), n=1), [1, 1])


def test_jit_composes_with_grad_both_ways_and_nests():
    f = lambda x: fnp.sum(fnp.sin(x) * x)  # noqa: E731
    x = np.linspace(0, 1, 5)
    want = np.cos(x) * x + np.sin(x)
    assert_close(fg.jit(fg.grad(f))(x), want)
    assert_close(fg.grad(fg.jit(f))(x), want)
    inner = fg.jit(lambda v: v * 2.0)
    assert_close(fg.jit(lambda v: inner(v) + 1.0)(x), 2 * x + 1)
    assert_close(fg.jit(fg.hessian(lambda v: fnp.sum(v ** 3)))(x), np.diag(6 * x))
    closure = lambda y: fg.grad(lambda v: fg.jit(lambda u: u * y)(v))(2.0)  # noqa: E731  (closes over a tracer)
    assert float(fg.grad(closure)(3.0)) == 1.0


@settings(deadline=None, max_examples=8)
@given(data=st.data())
def test_fused_chains_match_unfused(data):
    ops = [lambda a, b: a + b, lambda a, b: a * b, lambda a, b: a - b * 0.5, lambda a, b: fnp.maximum(a, b),
           lambda a, b: fnp.tanh(a) + b, lambda a, b: fnp.where(a > b, a, b), lambda a, b: fnp.exp(-a * a) * b,
           lambda a, b: nn.sigmoid(a) * b, lambda a, b: fnp.sqrt(fnp.abs(a) + 1.0) - b]
    chain = data.draw(st.lists(st.integers(0, len(ops) - 1), min_size=2, max_size=6))
    shape = data.draw(st.sampled_from([(5,), (3, 4), (2, 1, 3), ()]))
    other = data.draw(st.sampled_from([shape, shape[-1:], (), shape[:1] + (1,) * (len(shape) - 1), (1,) + shape[1:]]))
    x = RNG.standard_normal(shape).astype(np.float32)
    y = RNG.standard_normal(other).astype(np.float32)

    total = data.draw(st.sampled_from([None, (), (0,), (-1,)]))  # a sum fuses into the chain's kernel too

    def f(a, b):
        for i in chain:
            a = ops[i](a, b)
        if total is None or (total and not shape):
            return (a,)
        return a, fnp.sum(a * 2.0, axis=total or None)
    for got, want in zip(fg.jit(f)(x, y), f(x, y)):
        assert_close(got, want, rtol=2e-5, atol=2e-5)


def _calls(source: str) -> list[str]:
    """The lines of a jitted program's source that call a kernel or a primitive's implementation."""
    return [line for line in source.splitlines() if re.match(r"\s*(\w+ = )?c\d+\(", line)]


def test_broadcast_operands_fuse_into_one_loop():
    # a bias row (inner) and a per-row column (outer) read in one nested loop beside full operands
    x, w = RNG.standard_normal((6, 3)).astype(np.float32), RNG.standard_normal((3, 5)).astype(np.float32)
    b, c = RNG.standard_normal(5).astype(np.float32), RNG.standard_normal((6, 1)).astype(np.float32)
    f = lambda x, w, b, c: fnp.maximum(x @ w + b, 0.0) * c - b  # noqa: E731
    jf = fg.jit(f)
    assert_close(jf(x, w, b, c), np.maximum(x @ w + b, 0) * c - b, rtol=1e-6)
    source = next(iter(jf.cache.values())).run.source
    calls = [line for line in source.splitlines()[1:-1] if "(" in line and "np.empty" not in line
             and "_is_array(" not in line]
    assert len(calls) == 2, source  # the matmul, then one kernel for add, maximum, mul and sub
    assert calls[1].rstrip().endswith(", 5)")  # the kernel's inner length: the bias row's
    # middle-axis operands (a conv's bias over NCHW, a (C, H, 1) scale) cycle along the outer rows
    for y_shape, s_shape, n_inner in [((2, 3, 2, 2), (3, 1, 1), 4), ((2, 3, 4, 5), (1, 3, 4, 1), 5),
                                      ((4, 3, 2), (3, 1), 2)]:
        y, s = RNG.standard_normal(y_shape), RNG.standard_normal(s_shape)
        g = fg.jit(lambda y, s: fnp.maximum(fnp.tanh(y * s) + s, 0.0))
        assert_close(g(y, s), np.maximum(np.tanh(y * s) + s, 0))
        source = next(iter(g.cache.values())).run.source
        calls = _calls(source)
        assert len(calls) == 1 and calls[0].rstrip().endswith(f", {n_inner})"), source  # one nested loop
    # an operand broadcast along an axis between two it spans has no such loop: it runs unfused
    y, s = RNG.standard_normal((2, 3, 4)), RNG.standard_normal((2, 1, 4))
    assert_close(fg.jit(lambda y, s: fnp.tanh(y * s) + s)(y, s), np.tanh(y * s) + s)
    empty = fg.jit(lambda y, b: fnp.exp(y + b) * 2.0)(np.zeros((0, 4)), np.ones(4))
    assert empty.shape == (0, 4)


def test_sums_fuse_into_the_kernel_of_what_they_sum():
    x, b = RNG.standard_normal((6, 5)).astype(np.float32), RNG.standard_normal(5).astype(np.float32)

    def f(x, b):
        h = fnp.tanh(x + b)
        return h * 2.0, fnp.sum(h * x, axis=0), fnp.sum(h), fnp.sum(h - 1.0, axis=0, keepdims=True)
    jf = fg.jit(f)
    for got, want in zip(jf(x, b), f(x, b)):
        assert_close(got, want, rtol=1e-6, atol=1e-6)
    source = next(iter(jf.cache.values())).run.source
    calls = _calls(source)
    assert len(calls) == 1, source  # one kernel: the chain, its two sums over rows and its total
    # a later step that reads a sum cannot be in the loop that makes it; a big total stays NumPy's
    g = lambda x: fnp.exp(x) - fnp.sum(fnp.exp(x), axis=0)  # noqa: E731
    assert_close(fg.jit(g)(x), g(x), rtol=1e-6)
    big = RNG.standard_normal((3, 4000))
    h = lambda x: (fnp.sum(x * x), fnp.sum(x * 3.0, axis=(0, 1)), fnp.sum(x + 1.0, axis=-2))  # noqa: E731
    for got, want in zip(fg.jit(h)(big), h(big)):
        assert_close(got, want, rtol=1e-12)
    cube = RNG.standard_normal((2, 3, 4)).astype(np.float32)
    k = lambda c: fnp.sum(c * c, axis=(1, 0))  # noqa: E731  (the two leading axes, in any order)
    assert_close(fg.jit(k)(cube), np.sum(cube * cube, axis=(0, 1)), rtol=1e-6)
    assert_close(fg.jit(fg.grad(lambda c: fnp.sum(fnp.sum(c * c, axis=0) ** 2)))(cube),
                 4 * cube * np.sum(cube * cube, axis=0), rtol=1e-5)


def test_sums_over_all_but_middle_axes_fuse_and_match_float64():
    """A convolution's bias gradient sums a (N, C, H, W) value over N, H and W: its kernel keeps a
    float64 accumulator per channel and inner position, so it fuses and is as exact as a float64 sum."""
    def f(x, b, axes):
        h = fnp.maximum(x + b, 0.0) * x
        return h * 2.0, fnp.sum(h, axis=axes)
    # (shape, summed axes, kernel calls): the last keeps axes 1 and 2, whose loop cannot read the
    # channel bias, so its sum runs apart
    for shape, axes, calls in [((5, 3, 4, 6), (0, 2, 3), 1), ((5, 3, 4, 6), (-1, -2), 1), ((7, 3, 9), (2, 0), 1),
                               ((4, 2, 3, 5), (0, 3), 2)]:
        x = RNG.standard_normal(shape).astype(np.float32)
        b = RNG.standard_normal(shape[1:2] + (1,) * (len(shape) - 2)).astype(np.float32)
        jf = fg.jit(lambda x, b: f(x, b, axes))
        doubled, total = jf(x, b)
        h = np.maximum(x + b, 0) * x
        assert_close(doubled, 2 * h, rtol=1e-6)
        assert_close(total, np.sum(h.astype(np.float64), axis=axes), rtol=1e-6, atol=1e-6)
        source = next(iter(jf.cache.values())).run.source
        assert len(_calls(source)) == calls, source
    empty = fg.jit(lambda x: fnp.sum(fnp.exp(x), axis=(0, 2)))(np.zeros((0, 3, 4), np.float32))
    assert empty.shape == (3,) and not np.asarray(empty).any()


def test_sums_over_trailing_axes_fuse_as_row_totals_and_match_float64(monkeypatch):
    """A softmax's Jacobian sums p * g over each row's last axis: its kernel keeps the row's values
    in float64 and totals them, at any size (a cycling sum's accumulators were capped at 2^20), with
    NaN and inf carried into their row's total, a row of -0.0 summing to +0.0 (as NumPy's,
    PyTorch's and JAX's sums) and empty rows to 0."""
    p, g = RNG.random((1100, 1000)).astype(np.float32), RNG.standard_normal((1100, 1000)).astype(np.float32)
    p[3, 7], g[5, 0], g[9, :] = np.nan, np.inf, -0.0
    p[9, :] = 1.0

    def jacobian(p, g):
        return p * (g - fnp.sum(p * g, axis=-1, keepdims=True))
    jf = fg.jit(lambda p, g: fnp.sum(p * g, axis=-1, keepdims=True))
    total = np.asarray(jf(p, g))
    want = np.sum(p.astype(np.float64) * g, axis=-1, keepdims=True)
    assert_close(total, want, rtol=1e-6, atol=1e-5)
    assert np.isnan(total[3, 0]) and total[5, 0] == np.inf and total[9, 0] == 0 and not np.signbit(total[9, 0])
    assert len(_calls(next(iter(jf.cache.values())).run.source)) == 1  # the product and its row totals: one kernel
    assert_close(fg.jit(jacobian)(p[:20], g[:20]), jacobian(p[:20], g[:20]), rtol=1e-5, atol=1e-5)
    cube = RNG.standard_normal((3, 4, 5))
    assert_close(fg.jit(lambda c: fnp.sum(fnp.tanh(c), axis=(1, 2)))(cube), np.tanh(cube).sum((1, 2)), rtol=1e-12)
    from funcgrad import arena
    fresh = arena.Recycler.take

    def garbage(self, k):  # an output buffer as reused memory may hold it: a row the kernel skips shows
        out = fresh(self, k)
        out.fill(np.nan)
        return out
    monkeypatch.setattr(arena.Recycler, "take", garbage)
    for shape in ((3, 0), (2, 3, 0)):
        empty = fg.jit(lambda x: fnp.sum(fnp.exp(x), axis=-1))(np.zeros(shape, np.float32))
        assert empty.shape == shape[:-1] and np.array_equal(np.asarray(empty), np.zeros(shape[:-1]))


def test_program_is_optimised_and_printable():
    def f(x):
        unused = fnp.exp(x)  # noqa: F841  (dead code)
        a = fnp.sin(x) * 2.0
        b = fnp.sin(x) * 2.0  # common subexpression
        c = fnp.ones(3) * 4.0 + 1.0  # constant folded
        return a + b + c
    x = fg.ones(3)
    raw = fg.make_program(f)(x)
    text = repr(raw)
    assert text.startswith("{ lambda a:f32[3] .") and "exp" in text and "sin a" in text
    optimized = fg.make_program(f, optimized=True)(x)
    names = [e.prim.name for e in optimized.eqns]
    assert "exp" not in names and names.count("sin") == 1
    assert_close(fg.jit(f)(x), np.full(3, 4 * np.sin(1.0) + 5.0))


def test_transposes_of_transposes_fold():
    x = RNG.standard_normal((2, 3, 4))
    f = lambda a: fnp.transpose(fnp.transpose(a, (1, 2, 0)), (1, 0, 2)) * 2.0  # noqa: E731
    program = fg.make_program(f, optimized=True)(x)
    assert [e.prim.name for e in program.eqns].count("transpose") == 1
    assert_close(fg.jit(f)(x), np.transpose(np.transpose(x, (1, 2, 0)), (1, 0, 2)) * 2)
    identity = fg.make_program(lambda a: a.T.T + 1.0, optimized=True)(x[0])
    assert [e.prim.name for e in identity.eqns] == ["add"]


def test_broadcasts_into_elementwise_operands_fold():
    x, b, s = RNG.standard_normal((3, 4)), RNG.standard_normal(4), RNG.standard_normal(())

    def f(a, b, s):
        return fnp.broadcast_to(b, (3, 4)) * a + fnp.broadcast_to(fnp.reshape(s, (1, 1)), (3, 4))
    names = [e.prim.name for e in fg.make_program(f, optimized=True)(x, b, s).eqns]
    assert "broadcast_to" not in names and "reshape" not in names
    assert_close(fg.jit(f)(x, b, s), b * x + s)
    # the broadcast stays where the other operands do not give the output its shape
    g = lambda b: fnp.broadcast_to(b, (3, 4)) + 1.0  # noqa: E731
    assert "broadcast_to" in [e.prim.name for e in fg.make_program(g, optimized=True)(b).eqns]
    assert_close(fg.jit(g)(b), np.broadcast_to(b + 1, (3, 4)))
    # a reshape that moves elements is not a broadcast: (4, 1) -> (1, 4) against a (4, 4) operand
    c, d = RNG.standard_normal((4, 1)), RNG.standard_normal((4, 4))
    h = lambda c, d: fnp.reshape(c, (1, 4)) * d  # noqa: E731
    assert_close(fg.jit(h)(c, d), c.reshape(1, 4) * d)
    # the gradient of a mean is a scalar broadcast to the input's shape
    mean_grad = fg.grad(lambda a: fnp.mean(a * a))
    assert "broadcast_to" not in [e.prim.name for e in fg.make_program(mean_grad, optimized=True)(x).eqns]
    assert_close(fg.jit(mean_grad)(x), 2 * x / x.size)


def test_generated_code_writes_the_epilogue_into_the_matmul_buffer():
    def f(x, y):
        h = x @ y
        return fnp.tanh(h + 1.0) * 2.0
    jf = fg.jit(f)
    x, y = RNG.standard_normal((4, 3)), RNG.standard_normal((3, 5))
    assert_close(jf(x, y), np.tanh(x @ y + 1) * 2)
    source = next(iter(jf.cache.values())).run.source
    assert "_is_array(" in source  # the fused epilogue writes into the matmul's buffer


def test_donated_arguments_are_reused_and_invalidated():
    step = fg.jit(lambda p, g: p - 0.1 * g * g, donate_argnums=0)
    p = fg.asarray(np.arange(4.0))
    out = step(p, fg.ones(4))
    assert_close(out, np.arange(4.0) - 0.1)
    with pytest.raises(RuntimeError, match="donated"):
        np.asarray(p)


def test_donation_never_changes_another_array():
    """A donated buffer that something else reads (a view, a NumPy view, the same array passed twice,
    the caller's own NumPy array) is copied, not overwritten; the donated arrays are deleted."""
    f = fg.jit(lambda a, b: a * 2.0 + b, donate_argnums=(0,))
    a = fnp.ones(1000)
    head, flat, host = a[:3], a.reshape(10, 100), a.numpy()
    out = f(a, fnp.ones(1000))
    assert_close(out, np.full(1000, 3.0))
    assert head.tolist() == [1.0, 1.0, 1.0] and float(flat.sum()) == 1000.0 and host[:3].tolist() == [1.0, 1.0, 1.0]
    assert a.is_deleted() and not head.is_deleted()
    twice = fg.jit(lambda x, y: (x + 1.0, y * 3.0), donate_argnums=(0, 1))
    z = fnp.ones(600)
    x1, y1 = twice(z, z)
    assert_close(x1, np.full(600, 2.0))
    assert_close(y1, np.full(600, 3.0))
    mine = np.ones(600, np.float32)
    fg.jit(lambda x: x * 5.0, donate_argnums=0)(fg.asarray(mine))
    assert mine.tolist() == [1.0] * 600


def test_fused_select_keeps_the_dtype_of_its_constant_branch():
    # a literal branch of where() once took the condition's bool dtype inside a fused kernel (-7.5 -> 1.0)
    x = np.float32([1, -1, 2])
    assert_close(fg.jit(lambda a: fnp.where(a > 0, a * 2.0, -7.5))(x), [2, -7.5, 4])
    # an infinite or NaN literal is valid kernel source too (it once raised NameError: 'inf')
    assert_close(fg.jit(lambda a: fnp.where(a > 0, a * 2.0, -np.inf))(x), [2, -np.inf, 4])
    assert_close(fg.jit(lambda a: fnp.minimum(a * 2.0, np.inf) + fnp.where(a > 1, np.nan, 0.0))(x), [2, -2, np.nan])
    assert fg.jit(lambda a: fnp.where(a > 0, a * 2, -7))(np.array([1, -1, 2])).tolist() == [2, -7, 4]


def test_fused_update_writes_donated_buffers_in_place():
    def update(p, m, g):
        m = 0.9 * m + 0.1 * g
        return p - 0.01 * m / (fnp.sqrt(m * m) + 1e-8), m
    p0, m0, g = (RNG.standard_normal((6, 5)).astype(np.float32) for _ in range(3))
    expected = update(fg.asarray(p0), fg.asarray(m0), fg.asarray(g))
    p, m = fg.asarray(p0.copy()), fg.asarray(m0.copy())
    buffers = {id(p._value), id(m._value)}  # ids, not references: a buffer still referenced is not reused
    new_p, new_m = fg.jit(update, donate_argnums=(0, 1))(p, m, fg.asarray(g))
    assert_close(new_p, expected[0], rtol=1e-6)
    assert_close(new_m, expected[1], rtol=1e-6)
    assert {id(new_p._value), id(new_m._value)} == buffers
    # the kernel stores through the input parameters it overwrites (so LLVM vectorises the loop)
    source = fusion.kernel_source(["full", "full", "full"], [fusion.Step("(x0 * x1)", np.dtype(np.float32)),
                                                             fusion.Step("(t0 + x2)", np.dtype(np.float32))],
                                  [0, 1], in_place={1: 2})
    assert "def kernel(in0, in1, in2, out0):" in source and "in2[i] = t1" in source


def test_same_shape_updates_split_into_kernels_of_a_few_arrays_each():
    """The scheduler puts an optimiser's update of every parameter of one shape in one group; its
    kernel would read 4 arrays a parameter, past what LLVM vectorises, so the group runs as its
    independent chains packed into kernels of at most fusion.KERNEL_INPUTS arrays, each parameter's
    chain whole in one of them, and the donated buffers are still written in place."""
    def update(ps, ms, vs, gs):
        out = []
        for p, m, v, g in zip(ps, ms, vs, gs):
            m, v = 0.9 * m + 0.1 * g, 0.99 * v + 0.01 * g * g
            out.append((p - 0.01 * m / (fnp.sqrt(v) + 1e-8), m, v))
        return [o[0] for o in out], [o[1] for o in out], [o[2] for o in out]
    arrays = [[RNG.standard_normal((6, 5)).astype(np.float32) for _ in range(5)] for _ in range(4)]
    arrays[2] = [np.abs(v) for v in arrays[2]]
    expected = update(*[[fg.asarray(a) for a in group] for group in arrays])
    state = [[fg.asarray(a.copy()) for a in group] for group in arrays]
    buffers = {id(a._value) for group in state[:3] for a in group}
    jf = fg.jit(update, donate_argnums=(0, 1, 2))
    got = jf(*state)
    for got_group, want_group in zip(got, expected):
        for g, w in zip(got_group, want_group):
            assert_close(g, w, rtol=1e-6)
    assert {id(a._value) for group in got for a in group} == buffers
    calls = _calls(next(iter(jf.cache.values())).run.source)
    # a kernel's arrays: read ones (_flat) and the donated ones it reads and overwrites in place
    arrays = sorted(len(re.findall(r"_flat\(\w+\)|\w+\.reshape\(-1\)", line)) for line in calls)
    assert arrays == [4, 8, 8] and arrays[-1] <= fusion.KERNEL_INPUTS, calls  # 2 + 2 + 1 parameters, each whole


def test_concretization_error_names_argument_and_line():
    def f(x, n):
        if x.sum() > 0:  # a Python branch on a traced value
            return x
        return -x
    with pytest.raises(fg.ConcretizationError, match=r"bool\(\) of a traced array \(derived from argument 'x'\)"
                                                     r".*test_jit.py:\d+.*static_argnums"):
        fg.jit(f)(fg.ones(2), 3)
    with pytest.raises(fg.ConcretizationError, match=r"float\(\).*argument 'n'"):
        fg.jit(lambda x, n: x * float(n))(fg.ones(2), fg.array(3.0))
    with pytest.raises(fg.ConcretizationError, match=r"\.item\(\)"):
        fg.jit(lambda x: x.sum().item())(fg.ones(2))
    assert_close(fg.jit(lambda x: fnp.where(x.sum() > 0, x, -x))(fg.ones(2)), [1, 1])
    assert_close(fg.jit(lambda x: fg.cond(x.sum() > 0, lambda: x, lambda: -x))(-fg.ones(2)), [1, 1])



def test_a_jitted_function_in_a_class_binds_as_a_method():
    """jax.jit's descriptor: a Module's jitted __call__ gets self (a pytree, traced, differentiable);
    a plain object goes through static_argnums=0. It was called without self."""
    from funcgrad import nn

    class Net(nn.Module):
        def __init__(self):
            self.lin = nn.Linear(2, 3, key=fg.random.key(0))

        @fg.jit
        def __call__(self, x):
            return self.lin(x)

    net, x = Net(), np.ones((4, 2), np.float32)
    assert_close(net(x), np.asarray(net.lin(x)), rtol=1e-6)
    grads = fg.grad(lambda m: fnp.sum(m(x)))(net)
    assert_close(grads.lin.weight, np.full((3, 2), 4.0))

    class Scaler:
        factor = 3.0

        @functools.partial(fg.jit, static_argnums=0)
        def scale(self, a):
            return a * self.factor
    assert Scaler().scale(np.ones(2, np.float32)).tolist() == [3.0, 3.0]
    assert isinstance(Net.__call__, fg.jit(lambda a: a).__class__)  # looked up on the class: unbound

def test_tracer_leak_error():
    leaked = []

    @fg.jit
    def f(x):
        leaked.append(x)
        return x * 2.0
    f(fg.ones(2))
    with pytest.raises(fg.TracerLeakError, match="jit"):
        leaked[0] + 1.0


def test_log_compiles_says_why(caplog):
    fg.config.log_compiles = True
    try:
        f = fg.jit(lambda x: x + 1.0)
        with caplog.at_level(logging.WARNING, logger="funcgrad.jit"):
            f(fg.ones(2))
            f(fg.ones(3))
    finally:
        fg.config.log_compiles = False
    messages = [r.getMessage() for r in caplog.records]
    assert "first call" in messages[0]
    assert "leaf 0 changed from f32[2] to f32[3]" in messages[1]


def test_random_sampling_traces():
    f = fg.jit(lambda key: fg.random.normal(key, (1000,)))
    k = fg.random.key(3)
    assert_close(f(k), fg.random.normal(k, (1000,)), rtol=1e-6, atol=1e-6)
    g = fg.jit(lambda key, step: fg.random.uniform(fg.random.fold_in(key, step), (4,)))
    assert_close(g(k, fg.array(5)), fg.random.uniform(fg.random.fold_in(k, 5), (4,)))


def test_fused_float32_exp_sigmoid_and_softplus_are_within_a_few_ulp():
    # float32 kernels compute exp as a polynomial (vecmath.exp32), so the loops vectorise
    x = np.concatenate([np.linspace(-110, 95, 200001), [0.0, -0.0, 1e-30, 88.72283, 88.7229, -87.33655,
                                                         -103.9, -104.5, np.inf, -np.inf, np.nan]]).astype(np.float32)
    wide = x.astype(np.float64)
    with np.errstate(over="ignore", invalid="ignore"):
        want = np.exp(wide)
        exp = np.asarray(fg.jit(lambda a: fnp.exp(a * 1.0) * 1.0)(x))
        assert exp.dtype == np.float32
        normal = np.isfinite(want.astype(np.float32)) & (want > np.finfo(np.float32).tiny)
        ulp = np.spacing(want[normal].astype(np.float32)).astype(np.float64)
        assert np.max(np.abs(exp[normal] - want[normal]) / ulp) <= 1.5
        subnormal = (want > 0) & ~normal & (want < 1)
        assert np.max(np.abs(exp[subnormal] - want[subnormal])) <= 1.5e-45  # a subnormal's step
        assert np.array_equal(exp[~np.isfinite(want.astype(np.float32))], want[~np.isfinite(want.astype(np.float32))]
                              .astype(np.float32), equal_nan=True)  # inf, 0 below -103.97, nan
        assert exp[-3] == np.inf and exp[-2] == 0 and np.isnan(exp[-1])
        for fn, ref in [(nn.sigmoid, 1 / (1 + np.exp(-wide))), (nn.softplus, np.logaddexp(0, wide))]:
            got = np.asarray(fg.jit(lambda a, fn=fn: fn(a * 1.0) * 1.0)(x))
            finite = np.isfinite(ref)
            assert_close(got[finite], ref[finite], rtol=3e-7, atol=1e-45)
            assert np.array_equal(got[~finite], ref[~finite].astype(np.float32), equal_nan=True)


@pytest.mark.parametrize("transform", [fg.jit, lambda f: f], ids=["jit", "eager"])
def test_fused_float32_erf_and_gelu_match_the_exact_functions(transform):
    # float32 kernels use a rational erf (no libm call, so the loop vectorises): within a few ulp;
    # eager erf (cpu/special.py) computes the same polynomial
    from math import erf, sqrt, tanh
    x = np.concatenate([np.linspace(-6, 6, 4001), [0.0, 1e-30, -1e-20, 3.9, -3.92, np.inf, -np.inf, np.nan]])
    exact = np.array([erf(v) if np.isfinite(v) else (np.sign(v) if np.isinf(v) else np.nan) for v in x])
    x32 = x.astype(np.float32)
    got = np.asarray(transform(lambda a: fnp.tanh(fg.lax.erf(a * 1.0) * 1.0) * 1.0)(x32))  # erf fused in a chain
    assert_close(got, np.tanh(exact), rtol=1e-6, atol=1e-6)
    gelu = np.asarray(transform(lambda a: nn.gelu(a + 0.0))(x32))
    cdf = np.array([0.5 * (1 + erf(v / sqrt(2))) if np.isfinite(v) else (v > 0) * 1.0 for v in x])
    with np.errstate(invalid="ignore"):  # the float32 tail (x << 0) is 0.5 x (1 + erf), a cancellation
        assert_close(gelu, x * cdf, rtol=2e-6, atol=4e-6)
    tanh_gelu = np.asarray(transform(lambda a: nn.gelu(a + 0.0, approximate=True))(x32))
    want = np.array([0.5 * v * (1 + tanh(sqrt(2 / np.pi) * (v + 0.044715 * v ** 3))) if np.isfinite(v) else np.nan
                     for v in x])
    finite = np.isfinite(x)
    assert_close(tanh_gelu[finite], want[finite], rtol=2e-6, atol=4e-6)
    assert got.dtype == gelu.dtype == np.float32
    # float64 keeps libm's erf exactly
    assert_close(transform(lambda a: fg.lax.erf(a * 1.0) + 0.0)(x[finite]), exact[finite], rtol=1e-15, atol=1e-16)
