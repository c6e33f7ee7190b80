"""vmap: against a Python loop for every primitive, per-example gradients, nesting and composition."""
import numpy as np
import pytest

import funcgrad as fg
import funcgrad.numpy as fnp
from funcgrad import nn
from funcgrad.nn import functional as F

from .helpers import assert_close
from .test_elementwise import BINARY, UNARY
from .test_shapes import CASES

RNG = np.random.default_rng(0)
B = 3


def _loop(f, batched_args, in_axes):
    outs = []
    for i in range(B):
        outs.append(np.asarray(f(*[a if ax is None else np.take(a, i, axis=ax) for a, ax in zip(batched_args, in_axes)])))
    return np.stack(outs)


@pytest.mark.parametrize("name", sorted(UNARY))
def test_vmap_unary(name):
    f, _, (lo, hi), _ = UNARY[name]
    x = RNG.uniform(lo, hi, (B, 2, 3))
    assert_close(fg.vmap(f)(x), _loop(f, [x], [0]), rtol=1e-12)
    assert_close(fg.vmap(f, in_axes=2)(np.moveaxis(x, 0, 2)), _loop(f, [x], [0]), rtol=1e-12)


@pytest.mark.parametrize("name", sorted(BINARY))
@pytest.mark.parametrize("in_axes", [(0, 0), (0, None), (None, 1)])
def test_vmap_binary_with_broadcasting(name, in_axes):
    f, _, (xlo, xhi), (ylo, yhi) = BINARY[name]
    x = RNG.uniform(xlo, xhi, (B, 4, 1) if in_axes[0] == 0 else (4, 1))
    y = RNG.uniform(ylo, yhi, (B, 3) if in_axes[1] == 0 else (3, B) if in_axes[1] == 1 else (3,))
    assert_close(fg.vmap(f, in_axes=in_axes)(x, y), _loop(f, [x, y], in_axes), rtol=1e-12)


@pytest.mark.parametrize("name", sorted(CASES))
def test_vmap_structural_and_contractions(name):
    f, _, shapes = CASES[name]
    args = [RNG.standard_normal((B,) + s) for s in shapes]
    assert_close(fg.vmap(f)(*args), _loop(f, args, [0] * len(args)), rtol=1e-12, atol=1e-12)
    if len(args) == 2:  # one operand shared by the whole batch
        assert_close(fg.vmap(f, in_axes=(0, None))(args[0], args[1][0]),
                     _loop(f, [args[0], args[1][0]], [0, None]), rtol=1e-12, atol=1e-12)


REDUCTIONS = [lambda x: fnp.sum(x, axis=1), lambda x: fnp.max(x, axis=-1, keepdims=True), lambda x: fnp.prod(x),
              lambda x: fnp.argmax(x, axis=0), lambda x: fnp.logsumexp(x, axis=1), lambda x: nn.softmax(x, axis=0),
              lambda x: nn.log_softmax(x), lambda x: fnp.cumsum(x, axis=1), lambda x: fnp.sort(x, axis=0),
              lambda x: fnp.all(x > 0, axis=1), lambda x: fnp.var(x, axis=0), lambda x: fnp.clip(x, -0.5, 0.5)]


@pytest.mark.parametrize("index", range(len(REDUCTIONS)))
def test_vmap_reductions(index):
    f = REDUCTIONS[index]
    x = RNG.standard_normal((B, 4, 5))
    assert_close(fg.vmap(f)(x), _loop(f, [x], [0]), rtol=1e-12)


def test_vmap_conv_pool_attention_and_indexing():
    x = RNG.standard_normal((B, 2, 1, 5, 5))
    w = RNG.standard_normal((3, 1, 3, 3))
    conv = lambda v: F.max_pool2d(F.conv2d(v, w, padding=1), 2)  # noqa: E731
    assert_close(fg.vmap(conv)(x), _loop(conv, [x], [0]), rtol=1e-10)
    pool = lambda v: F.max_pool2d(v, 3, 2, 1)  # noqa: E731
    assert_close(fg.vmap(pool, in_axes=1, out_axes=2)(np.swapaxes(x, 0, 1)), np.moveaxis(_loop(pool, [x], [0]), 0, 2))
    q = RNG.standard_normal((B, 2, 4, 8))
    attn = lambda v: F.scaled_dot_product_attention(v, v, v, is_causal=True)  # noqa: E731
    assert_close(fg.vmap(attn)(q), _loop(attn, [q], [0]), rtol=1e-10)
    idx = np.array([[0, 2], [1, 1], [2, 0]])
    pick = lambda v, i: fg.asarray(v)[i, 1:]  # noqa: E731
    v = RNG.standard_normal((B, 3, 4))
    assert_close(fg.vmap(pick)(v, idx), _loop(pick, [v, idx], [0, 0]), rtol=1e-12)
    assert_close(fg.vmap(pick, in_axes=(None, 0))(v[0], idx), _loop(pick, [v[0], idx], [None, 0]), rtol=1e-12)
    emb = nn.Embedding(5, 2, key=fg.random.key(0))
    tokens = np.array([[1, 4], [0, 0], [3, 2]])
    assert_close(fg.vmap(emb)(tokens), np.asarray(emb.weight)[tokens])


def test_per_example_gradients_of_an_mlp():
    model = nn.MLP(4, [8], 3, key=fg.random.key(0))
    x, y = RNG.standard_normal((6, 4)), np.array([0, 1, 2, 1, 0, 2])

    def loss(m, xi, yi):
        return nn.cross_entropy(m(xi[None]), yi[None])

    per_example = fg.vmap(fg.grad(loss), in_axes=(None, 0, 0))(model, x, y)
    for i in range(6):
        single = fg.grad(loss)(model, x[i], y[i])
        for a, b in zip(fg.tree_leaves(per_example), fg.tree_leaves(single)):
            assert_close(np.asarray(a)[i], b, rtol=1e-10, atol=1e-12)
    jitted = fg.jit(fg.vmap(fg.grad(loss), in_axes=(None, 0, 0)))(model, x, y)
    for a, b in zip(fg.tree_leaves(jitted), fg.tree_leaves(per_example)):
        assert_close(a, b, rtol=1e-10, atol=1e-12)


def test_grad_of_vmap_nested_vmap_and_axes():
    x = RNG.standard_normal((B, 4))
    assert_close(fg.grad(lambda v: fnp.sum(fg.vmap(fnp.sin)(v)))(x), np.cos(x))
    outer = fg.vmap(fg.vmap(lambda a, b: a * b, in_axes=(0, None)), in_axes=(None, 0))
    a, b = np.arange(3.0), np.arange(4.0)
    assert_close(outer(a, b), np.outer(b, a))
    assert_close(fg.vmap(lambda v: v * 2, out_axes=1)(x), (x * 2).T)
    tree = {"p": x, "q": np.ones(4)}
    out = fg.vmap(lambda t: t["p"] + t["q"], in_axes=({"p": 0, "q": None},))(tree)
    assert_close(out, x + 1)
    key_batch = fg.random.split(fg.random.key(0), B)
    samples = fg.vmap(lambda k: fg.random.normal(k, (2,)))(key_batch)
    for i in range(B):
        assert_close(samples[i], fg.random.normal(key_batch[i], (2,)))


def test_vmap_errors():
    with pytest.raises(ValueError, match="disagree on the batch size"):
        fg.vmap(lambda a, b: a + b)(np.ones(3), np.ones(4))
    with pytest.raises(ValueError, match="no argument is batched"):
        fg.vmap(lambda a: a, in_axes=None)(np.ones(3))
    with pytest.raises(fg.ConcretizationError, match="vmap"):
        fg.vmap(lambda a: a if a > 0 else -a)(np.ones(3))
    assert_close(fg.vmap(lambda a: fnp.where(a > 0, a, -a))(np.array([-1.0, 2.0])), [1, 2])


@pytest.mark.parametrize("name", sorted(n for n in CASES if n.startswith(("take", "pad", "getitem", "split",
                                                                           "flip", "concatenate", "matmul"))))
def test_vmap_of_grad_through_indexing(name):
    f, _, shapes = CASES[name]
    args = [RNG.standard_normal((B,) + s) for s in shapes]
    g = fg.grad(lambda *a: fnp.sum(fnp.sin(fg.asarray(f(*a)))))
    got = fg.vmap(g)(*args)
    want = _loop(g, args, [0] * len(args))
    assert_close(got, want, rtol=1e-10, atol=1e-12)


def test_keyword_arguments_are_batched_and_axis_size_maps_unbatched_functions():
    out = fg.vmap(lambda x, scale=1.0: x * scale)(fnp.arange(3.0), scale=fnp.asarray([1.0, 2.0, 3.0]))
    assert np.asarray(out).tolist() == [0.0, 2.0, 6.0]
    assert fg.vmap(lambda: fnp.ones(2), axis_size=3)().shape == (3, 2)
    with pytest.raises(ValueError, match="pass axis_size"):
        fg.vmap(lambda x: x, in_axes=None)(fnp.ones(2))


@pytest.mark.parametrize("groups", [1, 2])
def test_vmap_conv_over_weights_and_per_example_gradients(groups):
    """Batched weights take the grouped path (the batch joins the channels); per-example gradients
    of a conv net batch all three convolution primitives at once."""
    x = RNG.standard_normal((2, 4, 5, 6))
    ws = RNG.standard_normal((B, 6, 4 // groups, 3, 2))
    conv = lambda w, v: F.conv2d(v, w, stride=(2, 1), padding=1, dilation=(1, 2), groups=groups)  # noqa: E731
    assert_close(fg.vmap(conv, in_axes=(0, None))(ws, x), _loop(conv, [ws, x], [0, None]), rtol=1e-10)
    xs = RNG.standard_normal((B, 2, 4, 5, 6))
    assert_close(fg.vmap(conv)(ws, xs), _loop(conv, [ws, xs], [0, 0]), rtol=1e-10)

    def loss(w, v):
        h = F.max_pool2d(fnp.tanh(F.conv2d(v[None], w, padding=1, groups=groups)), 2)
        return fnp.sum(F.conv2d(h, w, padding=1, groups=groups) ** 2)
    w = RNG.standard_normal((4, 4 // groups, 3, 3))
    per_example = fg.vmap(fg.grad(loss, argnums=(0, 1)), in_axes=(None, 0))(w, xs[:, 0])
    loop = [fg.grad(loss, argnums=(0, 1))(w, xs[i, 0]) for i in range(B)]
    for k in range(2):
        assert_close(per_example[k], np.stack([np.asarray(g[k]) for g in loop]), rtol=1e-10)
