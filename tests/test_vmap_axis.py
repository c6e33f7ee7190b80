"""vmap(f, axis_name=...): collectives across the batch members, against NumPy constructions of
what each member receives, finite differences, and the sum-over-members objective's closed forms."""
import numpy as np
import pytest

import funcgrad as fg
import funcgrad.numpy as fnp
from funcgrad import dist, lax

from .helpers import assert_close, numeric_grad

RNG = np.random.default_rng(7)
N = 4
X = RNG.standard_normal((N, 3, 2))


def named(f, **kw):
    return fg.vmap(f, axis_name="i", **kw)


def test_reductions_and_the_member_index():
    assert_close(named(lambda v: lax.psum(v, "i"))(X), np.broadcast_to(X.sum(0), X.shape))
    assert_close(named(lambda v: lax.pmean(v, "i"))(X), np.broadcast_to(X.mean(0), X.shape))
    assert_close(named(lambda v: lax.pmax(v, "i") - lax.pmin(v, "i"))(X), np.broadcast_to(np.ptp(X, 0), X.shape))
    assert_close(named(lambda v: v / lax.psum(v, "i"), in_axes=1, out_axes=2)(X),
                 np.moveaxis(X / X.sum(1, keepdims=True), 1, 2))
    index = named(lambda v: lax.axis_index("i") * lax.axis_size("i"))(X)
    np.testing.assert_array_equal(index, np.arange(N) * N)
    assert index.dtype == np.int32
    counts = named(lambda v: lax.psum(np.int32(3), "i"))(X)  # a constant: every member's, counted N times
    np.testing.assert_array_equal(counts, np.full(N, 3 * N))
    assert counts.dtype == np.int32
    assert_close(fg.vmap(lambda: lax.pmean(2.5, "i"), axis_name="i", axis_size=3)(), [2.5] * 3)
    assert lax.psum is dist.psum


def test_gathers_and_scatters_give_each_member_its_part():
    stacked = named(lambda v: lax.all_gather(v, "i", axis=1))(X)
    assert_close(stacked, np.broadcast_to(np.moveaxis(X, 0, 1), (N,) + np.moveaxis(X, 0, 1).shape))
    tiled = named(lambda v: lax.all_gather(v, "i", axis=1, tiled=True))(X)
    assert_close(tiled, np.broadcast_to(np.concatenate(list(X), axis=1), (N, 3, 2 * N)))
    Y = RNG.standard_normal((N, 2, N * 3))
    assert_close(named(lambda v: lax.psum_scatter(v, "i", scatter_dimension=1, tiled=True))(Y),
                 np.stack([Y.sum(0)[:, 3 * i:3 * i + 3] for i in range(N)]))
    Z = RNG.standard_normal((N, N, 5))
    assert_close(named(lambda v: lax.psum_scatter(v, "i"))(Z), Z.sum(0))  # member i: row i of the sum
    with pytest.raises(ValueError, match="dimension 0 of shape .* must equal 4"):
        named(lambda v: lax.psum_scatter(v, "i"))(X)


def test_point_to_point():
    shifted = named(lambda v: lax.ppermute(v, "i", [(i, (i + 1) % N) for i in range(N)]))(X)
    assert_close(shifted, np.roll(X, 1, axis=0))
    partial = named(lambda v: lax.ppermute(v, "i", [(0, 2), (3, 1)]))(X)  # members 0 and 3 receive nothing
    assert_close(partial, np.stack([np.zeros((3, 2)), X[3], X[0], np.zeros((3, 2))]))
    A = RNG.standard_normal((N, N, 3))  # member s sends its row d to member d, which stacks them at axis 1
    expected = np.stack([np.stack([A[s, d] for s in range(N)], axis=1) for d in range(N)])
    assert_close(named(lambda v: lax.all_to_all(v, "i", 0, 1))(A), expected)
    T = RNG.standard_normal((N, 2, 2 * N))  # tiled: member s's tile d goes to d, concatenated along axis 0
    expected = np.stack([np.concatenate([T[s][:, 2 * d:2 * d + 2] for s in range(N)], axis=0) for d in range(N)])
    assert_close(named(lambda v: lax.all_to_all(v, "i", 1, 0, tiled=True))(T), expected)
    assert_close(named(lambda v: lax.pswapaxes(v, "i", 0))(A), np.swapaxes(A, 0, 1))
    assert_close(named(lambda v: lax.pshuffle(v, "i", [2, 0, 3, 1]))(X), X[[2, 0, 3, 1]])
    with pytest.raises(ValueError, match="not a permutation"):
        named(lambda v: lax.pshuffle(v, "i", [0, 0, 1, 2]))(X)


def test_gradients_differentiate_the_sum_over_members():
    x = X[:, 0, 0]
    # d/dx_j of sum_i x_i / sum(x) is 0; of x_0 / sum(x) alone it is [j == 0] / S - x_0 / S^2
    assert_close(fg.vmap(fg.grad(lambda v: v / lax.psum(v, "i")), axis_name="i")(x), np.zeros(N), atol=1e-12)
    s = x.sum()
    assert_close(fg.grad(lambda x: named(lambda v: v / lax.psum(v, "i"))(x)[0])(x),
                 (np.arange(N) == 0) / s - x[0] / s ** 2)
    assert_close(fg.vmap(fg.grad(lambda v: lax.psum(v * v, "i")), axis_name="i")(x), 2 * N * x)

    def loss(flat):  # every collective at once, through jit: against finite differences
        X_ = fnp.reshape(flat, (N, 3, 2))

        def member(v):
            gathered = lax.all_gather(v, "i", axis=0, tiled=True)
            passed = lax.ppermute(v, "i", [(i, (i + 2) % N) for i in range(N)])
            swapped = lax.all_to_all(fnp.concatenate([v, v[:1]], axis=0), "i", 0, 1)
            return fnp.sum(gathered[:3] * passed) + lax.pmax(fnp.sum(v * v), "i") + fnp.sum(swapped ** 3) * 0.1 \
                + fnp.sum(lax.psum_scatter(fnp.tile(v[0], 2), "i", tiled=True) * v[1])
        return fnp.sum(fg.jit(named(member))(X_))
    assert_close(fg.grad(loss)(X.ravel()), numeric_grad(loss, X.ravel()), rtol=1e-6, atol=1e-7)


def test_nested_named_vmaps():
    G = RNG.standard_normal((2, 3, 4))
    both = fg.vmap(fg.vmap(lambda v: lax.psum(v, ("i", "j")) + lax.axis_index(("i", "j")), axis_name="j"),
                   axis_name="i")(G)
    assert_close(both, G.sum((0, 1)) + np.arange(6).reshape(2, 3, 1))
    outer = fg.vmap(fg.vmap(lambda v: lax.pmax(v, "i"), axis_name="j"), axis_name="i")(G)
    assert_close(outer, np.broadcast_to(G.max(0), G.shape))
    inner_gather = fg.vmap(fg.vmap(lambda v: lax.all_gather(v, "j"), axis_name="j"), axis_name="i")(G)
    assert_close(inner_gather, np.broadcast_to(G[:, None], (2, 3, 3, 4)))


def test_the_value_every_member_shares_below_a_nested_transform():
    v = X[:, 1, 1]  # w does not vary over the members, though grad traces it: its psum is N w^2 on each,
    # and psum's transpose sums the cotangents v_i: 2 w sum(v) (jax.vmap gives the same)
    assert_close(named(lambda vi: lax.psum(2.0 ** 2, "i") * vi)(v), N * 4.0 * v)
    assert_close(named(lambda vi: fg.grad(lambda w: lax.psum(w * w, "i") * vi)(2.0))(v), np.full(N, 4.0 * v.sum()))
    with pytest.raises(ValueError, match="over the vmap axis 'i' of a value that is the same for every member"):
        named(lambda vi: fg.grad(lambda w: fnp.sum(lax.psum_scatter(w * fnp.ones(N), "i")) * vi)(2.0))(v)


def test_wrong_axis_names_are_named():
    with pytest.raises(dist.DistError, match="no mesh"):
        named(lambda v: lax.psum(v, "j"))(X)
    with pytest.raises(ValueError, match=r"all_gather over the axes \['i', 'j'\], of which 'j' is a vmap's"):
        fg.vmap(fg.vmap(lambda v: lax.all_gather(v, ("i", "j")), axis_name="j"), axis_name="i")(X)
    with pytest.raises(TypeError, match="axis_name must be a non-empty string"):
        fg.vmap(lambda v: v, axis_name=3)
    with pytest.raises(ValueError, match="repeat an axis"):
        named(lambda v: lax.psum(v, ("i", "i")))(X)
