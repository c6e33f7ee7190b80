"""Gradients at kinks, zeros and saturated inputs, where a composed formula's conventions (a relu's
or abs's zero slope at 0, 0 * inf) gave a value PyTorch's rules do not: each against the
closed-form derivative PyTorch uses, written in NumPy."""
import math

import numpy as np

import funcgrad as fg
import funcgrad.numpy as fnp
from funcgrad import nn
from funcgrad.scipy import special as S

from .helpers import assert_close


def _grads(f, *args):
    return [np.asarray(g) for g in fg.grad(lambda *a: fnp.sum(f(*a)), argnums=tuple(range(len(args))))(
        *[fnp.asarray(np.asarray(a, np.float64)) for a in args])]


def test_binary_cross_entropy_with_logits_at_a_zero_logit_and_far_out():
    """sigmoid(x) - y: 1/2 - y at x = 0 (it was -y: a zero-initialised head's first step); values
    exact to the last bit of float64 at |x| = 30 and 100, against softplus(x) - x y in 60 digits."""
    x, y = np.array([0.0, 0.0, 30.0, -30.0, 100.0, -100.0, 1e-3]), np.array([0.0, 1.0, 1.0, 0.0, 0.0, 1.0, 0.5])
    (g,) = _grads(lambda v: nn.binary_cross_entropy_with_logits(v, fnp.asarray(y), reduction="none"), x)
    assert_close(g, (1 - y) / (1 + np.exp(-x)) - y / (1 + np.exp(x)), rtol=1e-15, atol=1e-16)
    expected = [0.6931471805599453, 0.6931471805599453, 9.357622968840175e-14, 9.357622968840175e-14, 100.0, 100.0,
                0.6931471807849453]  # log(1 + e^x) - x y, by Python's decimal at 60 digits
    assert_close(nn.binary_cross_entropy_with_logits(x, y, reduction="none"), expected, rtol=1e-15)


def test_binary_cross_entropy_is_finite_at_saturated_probabilities():
    p, y = np.array([0.0, 0.5, 1.0, 1e-20]), np.array([0.0, 1.0, 1.0, 1.0])
    g_p, g_y = _grads(lambda a, b: nn.binary_cross_entropy(a, b, reduction="none"), p, y)
    assert_close(g_p, (p - y) / np.maximum(p * (1 - p), 1e-12), rtol=1e-15)  # PyTorch's formula
    with np.errstate(divide="ignore"):
        assert_close(g_y, np.log1p(-p) - np.log(p), rtol=1e-15)
    losses = nn.binary_cross_entropy(p, y, reduction="none")
    assert_close(losses, [0.0, math.log(2), 0.0, 20 * math.log(10)], rtol=1e-15)


def test_margin_losses_clamp_as_pytorch_so_a_hinge_at_its_margin_still_pushes():
    x1, x2, y = np.array([0.5, 1.0]), np.array([0.0, 0.5]), np.array([1.0, -1.0])
    g1, g2 = _grads(lambda a, b: nn.margin_ranking_loss(a, b, fnp.asarray(y), margin=0.5, reduction="sum"), x1, x2)
    assert_close(g1, -y)  # both terms sit exactly at the margin: slope 1, not 0
    assert_close(g2, y)
    (g,) = _grads(lambda a: nn.hinge_embedding_loss(a, fnp.asarray([1.0, -1.0]), reduction="sum"), [0.5, 1.0])
    assert_close(g, [1.0, -1.0])
    a, p, n = np.array([[0.0, 1.0]]), np.array([[0.0, 1.0]]), np.array([[1.0, 1.0]])
    (g,) = _grads(lambda v: nn.triplet_margin_loss(fnp.asarray(a), fnp.asarray(p), v, margin=1.0, eps=0.0), n)
    assert_close(g, [[-1.0, 0.0]])  # d_pos - d_neg + margin = 0 - 1 + 1: the negative is still pushed away


def test_rrelu_cosine_similarity_and_p_norms_at_zero():
    (g,) = _grads(lambda v: nn.rrelu(v, 0.1, 0.3), [-1.0, 0.0, 1.0])
    assert_close(g, [0.2, 0.2, 1.0])  # the slope at 0, as leaky_relu
    x, other = np.zeros(2), np.array([1.0, 2.0])
    (g,) = _grads(lambda v: nn.cosine_similarity(v[None], fnp.asarray(other)[None]), x)
    assert_close(g, other / (1e-8 * np.linalg.norm(other)), rtol=1e-12)  # the clamped norm's, not NaN
    for p in (0.5, 3.0):
        (g,) = _grads(lambda v: fnp.linalg.vector_norm(v, p), [1.0, -3.0, 0.0])
        norm = (1 + 3 ** p) ** (1 / p)
        assert_close(g, [norm ** (1 - p), -(3 ** (p - 1)) * norm ** (1 - p), 0.0], rtol=1e-14)
        assert_close(_grads(lambda v: fnp.linalg.vector_norm(v, p), [0.0, 0.0])[0], [0.0, 0.0])


def test_special_functions_differentiate_at_zero_and_one_half():
    x = np.array([0.0, 1e-3, 3.0])
    i1_slope = np.asarray(S.i0(x)) - np.where(x == 0, 0.5, np.asarray(S.i1(x)) / np.where(x == 0, 1, x))
    (g,) = _grads(S.i1, x)
    assert_close(g, i1_slope, rtol=1e-14)  # I1' = I0 - I1 / x: 1/2 at 0 (it was 0)
    (g,) = _grads(S.i1e, x)
    assert_close(g, np.exp(-x) * i1_slope - S.i1e(x), rtol=1e-13)
    q = np.array([1e-10, 0.3, 0.5, 0.999])
    (g,) = _grads(S.ndtri, q)
    assert_close(g, np.sqrt(2 * np.pi) * np.exp(np.asarray(S.ndtri(q)) ** 2 / 2), rtol=1e-13)


def test_adaptive_max_pooling_gives_tied_windows_gradient_at_their_first_maximum():
    """As PyTorch's (and max_pool's here): after a relu many windows tie at 0; the gradient goes to
    the first maximal position of each window (it was split among them), windows from PyTorch's
    bounds floor(i L / m) .. ceil((i + 1) L / m)."""
    x = np.array([[[0.0, 0.0, 2.0, 2.0, 0.0, 1.0, 1.0]]])
    weights = np.array([1.0, 10.0, 100.0])
    (g,) = _grads(lambda v: nn.adaptive_max_pool1d(v, 3) * fnp.asarray(weights), x)
    expected = np.zeros(7)
    for i, w in enumerate(weights):
        start, stop = i * 7 // 3, -(-(i + 1) * 7 // 3)
        expected[start + int(np.argmax(x[0, 0, start:stop]))] += w
    assert_close(g[0, 0], expected)
    volume = np.zeros((1, 1, 2, 2, 2))
    (g,) = _grads(lambda v: nn.adaptive_max_pool3d(v, 1), volume)
    assert g.ravel().tolist() == [1.0] + [0.0] * 7


def test_grid_sample_border_padding_counts_the_border_as_outside():
    """PyTorch's clip_coordinates_set_grad: a grid point exactly on the border has a zero gradient
    along that axis (the clip's slope 1 gave another); along the other axis it is the bilinear
    slope, (x[r1] - x[r0]) (H - 1) / 2 with align_corners."""
    image = np.arange(20.0).reshape(1, 1, 4, 5) ** 1.5
    grid = np.array([[[[1.0, 0.2], [-1.0, -0.4]]]])  # x on the right and left borders

    def sampled(g):
        return nn.grid_sample(fnp.asarray(image), g, padding_mode="border", align_corners=True)
    (g,) = _grads(sampled, grid)
    rows = (np.array([0.2, -0.4]) + 1) * 1.5  # y in pixels: 1.8 and 0.9
    slopes = [(image[0, 0, int(r) + 1, col] - image[0, 0, int(r), col]) * 1.5 for r, col in zip(rows, (4, 0))]
    assert_close(g[0, 0], [[0.0, slopes[0]], [0.0, slopes[1]]], rtol=1e-14)


def test_xlogy_keeps_its_slope_in_x_at_zero_and_categoricals_differentiate_through_zero_probabilities():
    """d/dx x log y = log y also at x = 0 (it was 0: a Dirichlet's or Beta's concentration of 1 lost
    its log x term); log(y) outside its domain gives 0 there, and the value stays 0. Categorical,
    OneHotCategorical and Multinomial from probs with zeros: d log p_k / d p_j = [j = k] / p_k - 1 / sum p
    (PyTorch's; it was NaN, 0 * inf through log 0)."""
    from funcgrad import distributions as D
    x, y = np.array([0.0, 0.0, 0.0, 2.0]), np.array([0.2, 0.0, np.inf, 3.0])
    g_x, g_y = _grads(S.xlogy, x, y)
    assert_close(g_x, [math.log(0.2), 0.0, 0.0, math.log(3.0)])
    assert_close(g_y, [0.0, 0.0, 0.0, 2 / 3])
    g_x, _ = _grads(S.xlog1py, x, np.array([-0.8, -1.0, -3.0, 2.0]))
    assert_close(g_x, [math.log(0.2), 0.0, 0.0, math.log(3.0)])
    values = S.xlog1py(fnp.asarray(x), fnp.asarray([-0.8, -1.0, -3.0, 2.0]))
    assert_close(values, [0, 0, 0, 2 * math.log(3)], rtol=1e-15)
    alpha, point = np.array([1.0, 2.0, 3.0]), np.array([0.2, 0.3, 0.5])
    (g,) = _grads(lambda a: D.Dirichlet(a).log_prob(fnp.asarray(point)), alpha)
    digamma = np.asarray(S.digamma(alpha)), float(S.digamma(np.float64(alpha.sum())))
    assert_close(g, np.log(point) - digamma[0] + digamma[1], rtol=1e-13)
    probs, k = np.array([0.0, 0.8, 1.2]), 1
    expected = -np.ones(3) / probs.sum()
    expected[k] += 1 / probs[k]
    for make, value in ((lambda p: D.Categorical(probs=p), k), (lambda p: D.OneHotCategorical(probs=p), np.eye(3)[k]),
                        (lambda p: D.Multinomial(1, probs=p), np.eye(3)[k])):
        (g,) = _grads(lambda p: make(p).log_prob(fnp.asarray(value)), probs)
        assert_close(g, expected, rtol=1e-14)
