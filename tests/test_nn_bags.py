"""Embedding bags, bilinear forms, pdist, the new margin losses and the random activations, against
NumPy loops over PyTorch's definitions (and, in the benchmark venv, 67 comparisons with torch 2.13
equal); gradients by finite differences; the random ones by their statistics."""
import itertools

import numpy as np
import pytest

import funcgrad as fg
from funcgrad import nn
from funcgrad.nn import functional as F

from .helpers import assert_close

RNG = np.random.default_rng(0)
W = RNG.standard_normal((10, 3))


@pytest.mark.parametrize("mode, padding_idx", list(itertools.product(["sum", "mean", "max"], [None, 2])))
def test_embedding_bag_reduces_each_bag(mode, padding_idx):
    indices, offsets = np.array([1, 2, 4, 5, 4, 3, 2, 9, 2]), np.array([0, 2, 2, 5])  # bag 1 is empty
    reduce = {"sum": np.sum, "mean": np.mean, "max": np.max}[mode]
    expected = []
    for start, stop in zip(offsets, list(offsets[1:]) + [len(indices)]):
        bag = [i for i in indices[start:stop] if i != padding_idx]
        expected.append(reduce(W[bag], axis=0) if bag else np.zeros(3))
    assert_close(F.embedding_bag(indices, W, offsets, mode=mode, padding_idx=padding_idx), np.array(expected))
    rows = np.array([[1, 2, 4], [2, 2, 9]])
    assert_close(F.embedding_bag(rows, W, mode=mode, padding_idx=padding_idx),
                 np.stack([reduce(W[[i for i in r if i != padding_idx]], axis=0) for r in rows]))
    fg.check_grads(lambda w: F.embedding_bag(indices, w, offsets, mode=mode, padding_idx=padding_idx), (W,), order=1)


def test_embedding_bag_options_and_refusals():
    indices, offsets, weights = np.array([1, 2, 4, 5]), np.array([0, 1, 4]), RNG.standard_normal(4)
    out = F.embedding_bag(indices, W, offsets, mode="sum", per_sample_weights=weights, include_last_offset=True)
    assert_close(out, np.stack([W[1] * weights[0], (W[[2, 4, 5]] * weights[1:, None]).sum(0)]))
    with pytest.raises(ValueError, match="last offset ends the last bag and must be the number of indices, 6; got 3"):
        F.embedding_bag(np.array([1, 2, 4, 5, 7, 8]), W, np.array([0, 1, 3]), include_last_offset=True)
    with pytest.raises(ValueError, match="per_sample_weights need mode='sum'"):
        F.embedding_bag(indices, W, offsets, per_sample_weights=weights)
    with pytest.raises(ValueError, match="offsets must start at 0"):
        F.embedding_bag(indices, W, np.array([1, 3]))
    with pytest.raises(IndexError, match="out of range"):
        F.embedding_bag(np.array([[1, 10]]), W)
    bag = nn.EmbeddingBag(10, 3, mode="sum", padding_idx=0, key=fg.random.key(0))
    assert np.array_equal(np.asarray(bag.weight)[0], np.zeros(3))
    assert_close(bag(np.array([[0, 3]])), np.asarray(bag.weight)[[3]])


def test_bilinear_form():
    x1, x2, w, b = RNG.standard_normal((2, 4)), RNG.standard_normal((2, 5)), RNG.standard_normal((3, 4, 5)), \
        RNG.standard_normal(3)
    expected = np.array([[x1[n] @ w[o] @ x2[n] + b[o] for o in range(3)] for n in range(2)])
    assert_close(F.bilinear(x1, x2, w, b), expected, atol=1e-12)
    fg.check_grads(lambda a, c, m: F.bilinear(a, c, m), (x1, x2, w), order=1)
    layer = nn.Bilinear(4, 5, 3, key=fg.random.key(1))
    assert layer(x1, x2).shape == (2, 3) and np.abs(np.asarray(layer.weight)).max() <= 0.5  # 1 / sqrt(4)


def test_pdist_of_every_norm_with_identical_rows():
    x = RNG.standard_normal((5, 4))
    x[3] = x[1]
    pairs = list(itertools.combinations(range(5), 2))
    for p in (0, 0.5, 1, 2, 3, np.inf):
        expected = [np.count_nonzero(x[i] - x[j]) if p == 0 else np.linalg.norm(x[i] - x[j], p) for i, j in pairs]
        assert_close(F.pdist(x, p), expected, atol=1e-12)
    grad = np.asarray(fg.grad(lambda v: F.pdist(v).sum())(x))
    assert np.isfinite(grad).all()  # rows 1 and 3 are 0 apart: a zero gradient, not NaN
    fg.check_grads(lambda v: F.pdist(v, 3.0), (RNG.standard_normal((4, 3)),), order=1)



@pytest.mark.parametrize("mode", ["use_mm_for_euclid_dist_if_necessary", "use_mm_for_euclid_dist",
                                  "donot_use_mm_for_euclid_dist"])
def test_cdist_of_every_norm_batched_and_through_the_matmul(mode):
    """torch.cdist: (..., P, M) against (..., R, M), batch axes broadcast; p = 2 over more than 25
    rows goes through |a|^2 + |b|^2 - 2 a.b (PyTorch's default compute_mode); equal points are 0
    apart with a finite gradient."""
    for rows in (4, 30):
        a, b = RNG.standard_normal((2, rows, 3)), RNG.standard_normal((1, 5, 3))
        b[0, 2] = a[1, 0]
        for p in (0, 0.5, 1, 2, 3, np.inf):
            expected = [[[np.count_nonzero(u - v) if p == 0 else np.linalg.norm(u - v, p) for v in b[0]] for u in m]
                        for m in a]
            assert_close(F.cdist(a, b, p, compute_mode=mode), expected, atol=1e-7)  # the matmul's sqrt(rounding)
        grads = fg.grad(lambda u, v: F.cdist(u, v, compute_mode=mode).sum(), argnums=(0, 1))(a, b)
        assert all(np.isfinite(np.asarray(g)).all() for g in grads)
    others = RNG.standard_normal((3, 2))
    fg.check_grads(lambda u: F.cdist(u, others, 3.0), (RNG.standard_normal((4, 2)),), order=1)
    with pytest.raises(fg.ShapeError, match="cdist expects"):
        F.cdist(np.ones((2, 3)), np.ones((2, 4)))

def test_margin_losses():
    a, p, n = RNG.standard_normal((4, 6)), RNG.standard_normal((4, 6)), RNG.standard_normal((4, 6))
    assert_close(F.triplet_margin_with_distance_loss(a, p, n), F.triplet_margin_loss(a, p, n))
    manhattan = lambda u, v: np.abs(np.asarray(u) - np.asarray(v)).sum(-1)  # noqa: E731
    assert_close(nn.TripletMarginWithDistanceLoss(distance_function=lambda u, v: fg.numpy.abs(u - v).sum(-1),
                                                  margin=0.5, swap=True)(a, p, n),
                 np.maximum(manhattan(a, p) - np.minimum(manhattan(a, n), manhattan(p, n)) + 0.5, 0).mean())
    # a class listed twice counts twice (PyTorch walks the list): the last row
    x, target = RNG.standard_normal((3, 4)), np.array([[3, 0, -1, 1], [1, 2, 3, 0], [2, 2, -1, 0]])
    expected = []
    for row, t in zip(x, target):
        listed = list(t[:list(t).index(-1)]) if -1 in t else list(t)
        others = [i for i in range(4) if i not in listed]
        expected.append(sum(max(0, 1 - (row[j] - row[i])) for j in listed for i in others) / 4)
    assert_close(F.multilabel_margin_loss(x, target, reduction="none"), expected)
    assert_close(nn.MultiLabelMarginLoss()(x, target), np.mean(expected))
    fg.check_grads(lambda v: F.multilabel_margin_loss(v, target), (x,), order=1)


def test_random_activations():
    x = RNG.standard_normal(200_000)
    out = np.asarray(F.alpha_dropout(x, 0.2, fg.random.key(0)))
    assert abs(out.mean()) < 0.01 and abs(out.std() - 1) < 0.01  # SELU's fixed point kept
    alpha = 1.7580993408473766  # every value is a x + b (kept) or -alpha a + b (dropped), PyTorch's a and b
    a = 1 / np.sqrt((alpha ** 2 * 0.2 + 1) * 0.8)
    kept = np.isclose(out, a * x + alpha * a * 0.2)
    assert (kept | np.isclose(out, -alpha * a + alpha * a * 0.2)).all() and abs(kept.mean() - 0.8) < 0.005
    assert np.array_equal(np.asarray(F.alpha_dropout(x, 0.2)), x)  # no key: evaluation
    assert_close(F.rrelu(np.array([-2.0, 3.0])), [-2 * (1 / 8 + 1 / 3) / 2, 3.0])
    slopes = -np.asarray(F.rrelu(-np.ones(100_000), key=fg.random.key(1)))
    assert 1 / 8 <= slopes.min() and slopes.max() <= 1 / 3 and abs(slopes.mean() - (1 / 8 + 1 / 3) / 2) < 1e-3
    with pytest.raises(ValueError, match="needs key="):
        F.rrelu(x, training=True)
    logits = RNG.standard_normal((3, 5))
    hard = F.gumbel_softmax(logits, 0.5, hard=True, key=fg.random.key(2))
    soft = F.gumbel_softmax(logits, 0.5, key=fg.random.key(2))
    assert np.array_equal(np.asarray(hard), np.eye(5)[np.asarray(soft).argmax(1)])
    grad_hard = fg.grad(lambda v: (F.gumbel_softmax(v, 0.5, hard=True, key=fg.random.key(2)) * logits).sum())(logits)
    grad_soft = fg.grad(lambda v: (F.gumbel_softmax(v, 0.5, key=fg.random.key(2)) * logits).sum())(logits)
    assert_close(grad_hard, grad_soft)  # the straight-through estimator
    channels = np.asarray(nn.FeatureAlphaDropout(0.5)(np.ones((8, 16, 3)), key=fg.random.key(3)))
    assert np.ptp(channels, axis=-1).max() == 0 and len(np.unique(channels)) == 2  # whole channels
