"""optax.losses: per-example losses with optax's signatures and semantics (no reduction; the caller
averages), for code written against optax. funcgrad.nn has PyTorch's losses (reductions, weights,
ignore_index); these are the JAX ecosystem's, and reuse funcgrad.nn's numerics where they agree.

Regression: squared_error, l2_loss, huber_loss, log_cosh, cosine_similarity, cosine_distance.
Classification: softmax_cross_entropy (+ _with_integer_labels, safe_), sigmoid_binary_cross_entropy,
sigmoid_focal_loss, poly_loss_cross_entropy, hinge_loss, perceptron_loss, multiclass_hinge_loss,
multiclass_perceptron_loss, kl_divergence (+ _with_log_targets), generalized_kl_divergence
(convex_kl_divergence, its old name), smooth_labels. Metric learning: triplet_margin_loss, ntxent.
"""
from __future__ import annotations

import math

import numpy as np

from .. import dtypes
from .. import numpy as fnp
from ..errors import ShapeError
from ..nn import _functional as F

__all__ = ["squared_error", "l2_loss", "huber_loss", "log_cosh", "cosine_similarity", "cosine_distance",
           "softmax_cross_entropy", "softmax_cross_entropy_with_integer_labels", "safe_softmax_cross_entropy",
           "sigmoid_binary_cross_entropy", "sigmoid_focal_loss", "poly_loss_cross_entropy", "hinge_loss",
           "perceptron_loss", "multiclass_hinge_loss", "multiclass_perceptron_loss", "kl_divergence",
           "kl_divergence_with_log_targets", "generalized_kl_divergence", "convex_kl_divergence", "smooth_labels",
           "triplet_margin_loss", "ntxent"]


def _floating(x, what: str, name: str):
    x = fnp.asarray(x)
    if not dtypes.is_float(x.dtype):
        raise TypeError(f"{name}: {what} must be floating point, got {x.dtype}")
    return x


def _errors(predictions, targets, name: str, same_shape: bool = False):
    predictions = _floating(predictions, "predictions", name)
    if targets is None:
        return predictions
    targets = fnp.asarray(targets)
    if same_shape and tuple(targets.shape) != tuple(predictions.shape):
        raise ShapeError(f"{name}: predictions {tuple(predictions.shape)} and targets {tuple(targets.shape)} "
                         f"must have the same shape")
    return predictions - targets


def squared_error(predictions, targets=None):
    """(predictions - targets)^2 elementwise (targets of predictions' shape, or None for zeros)."""
    return _errors(predictions, targets, "squared_error", same_shape=True) ** 2


def l2_loss(predictions, targets=None):
    """squared_error / 2 (Bishop's convention)."""
    return 0.5 * squared_error(predictions, targets)


def huber_loss(predictions, targets=None, *, delta=1.0):
    """e^2 / 2 for |e| <= delta, delta (|e| - delta / 2) beyond, e = predictions - targets."""
    size = fnp.abs(_errors(predictions, targets, "huber_loss"))
    quadratic = fnp.minimum(size, delta)
    return 0.5 * quadratic ** 2 + delta * (size - quadratic)


def log_cosh(predictions, targets=None):
    """log cosh(e), as logaddexp(e, -e) - log 2: no overflow at large |e|."""
    e = _errors(predictions, targets, "log_cosh")
    return fnp.logaddexp(e, -e) - math.log(2.0)


def _where(where, like, axis):
    """optax's where: a mask of the logits' rank, or one with the reduced axis left out."""
    if where is None:
        return None
    where = fnp.asarray(where)
    return fnp.expand_dims(where, axis) if where.ndim != like.ndim else where


def cosine_similarity(predictions, targets, *, epsilon=0.0, axis=-1, where=None):
    """<a, b> / (|a| |b|) along axis, each squared norm raised to at least epsilon."""
    a = _floating(predictions, "predictions", "cosine_similarity")
    b = _floating(targets, "targets", "cosine_similarity")
    norms = [fnp.sqrt(fnp.maximum(fnp.sum(v * v, axis=axis, where=where, keepdims=True), epsilon)) for v in (a, b)]
    return fnp.sum((a / norms[0]) * (b / norms[1]), axis=axis, where=where)


def cosine_distance(predictions, targets, *, epsilon=0.0, axis=-1, where=None):
    """1 - cosine_similarity."""
    return 1.0 - cosine_similarity(predictions, targets, epsilon=epsilon, axis=axis, where=where)


def softmax_cross_entropy(logits, labels, axis=-1, where=None):
    """-sum labels * log_softmax(logits) along axis (labels: probabilities, e.g. one-hot)."""
    logits = _floating(logits, "logits", "softmax_cross_entropy")
    where = _where(where, logits, axis)
    return -fnp.sum(fnp.asarray(labels) * F.log_softmax(logits, axis, where=where), axis=axis, where=where)


def _masked_logsumexp(x, axis: int, where):
    masked = x if where is None else fnp.where(where, x, -math.inf)
    top = fnp.max(masked, axis=axis, keepdims=True)
    top = fnp.where(fnp.isfinite(top), top, 0.0)
    return fnp.log(fnp.sum(fnp.exp(masked - top), axis=axis)) + fnp.squeeze(top, axis)


def softmax_cross_entropy_with_integer_labels(logits, labels, axis=-1, where=None):
    """logsumexp(logits) - logits[label] along axis (an int, or a tuple of axes taken as one);
    with where, the masked logits are left out of the normaliser and an all-masked row is 0."""
    name = "softmax_cross_entropy_with_integer_labels"
    logits = _floating(logits, "logits", name)
    labels = fnp.asarray(labels)
    if np.dtype(labels.dtype).kind not in "iu":
        raise TypeError(f"{name}: labels must be integers, got {labels.dtype}")
    where = _where(where, logits, axis if isinstance(axis, int) else axis[0])
    if isinstance(axis, tuple):  # the class axes moved last and flattened into one
        classes = tuple(sorted(a % logits.ndim for a in axis))
        batch = tuple(a for a in range(logits.ndim) if a not in classes)
        logits = fnp.reshape(fnp.transpose(logits, batch + classes), tuple(logits.shape[a] for a in batch) + (-1,))
        if where is not None:
            where = fnp.reshape(fnp.transpose(where, batch + classes), tuple(where.shape[a] for a in batch) + (-1,))
        axis = len(batch)
    elif not isinstance(axis, int):
        raise ValueError(f"{name}: axis must be an int or a tuple of ints, got {type(axis).__name__}")
    axis = axis % logits.ndim
    if tuple(labels.shape) != tuple(logits.shape[:axis] + logits.shape[axis + 1:]):
        raise ShapeError(f"{name}: labels of shape {tuple(labels.shape)} for logits of shape "
                         f"{tuple(logits.shape)} with classes on axis {axis}")
    picked = fnp.squeeze(fnp.take_along_axis(logits, fnp.expand_dims(labels, axis), axis=axis), axis)
    out = _masked_logsumexp(logits, axis, where) - picked
    return out if where is None else fnp.where(fnp.any(where, axis=axis), out, 0.0)


def safe_softmax_cross_entropy(logits, labels):
    """softmax_cross_entropy over the last axis where a label of 0 times a logit of -inf counts 0, not
    NaN (0 log 0 = 0), in value and gradient."""
    logits = _floating(logits, "logits", "safe_softmax_cross_entropy")
    labels = fnp.asarray(labels)
    log_probs = F.log_softmax(logits, -1)
    return -fnp.sum(labels * fnp.where(labels != 0, log_probs, 0.0), axis=-1)


def sigmoid_binary_cross_entropy(logits, labels):
    """-labels log sigmoid(logits) - (1 - labels) log sigmoid(-logits), elementwise."""
    logits = _floating(logits, "logits", "sigmoid_binary_cross_entropy")
    labels = fnp.astype(fnp.asarray(labels), logits.dtype)
    return -labels * F.log_sigmoid(logits) - (1.0 - labels) * F.log_sigmoid(-logits)


def sigmoid_focal_loss(logits, labels, *, alpha=None, gamma=2.0):
    """The binary cross-entropy weighted by (1 - p_t)^gamma (Lin et al.), and by alpha for positives
    and 1 - alpha for negatives where alpha is given; 1 - p_t from log-sigmoids, not 1 - p."""
    logits = _floating(logits, "logits", "sigmoid_focal_loss")
    labels = fnp.astype(fnp.asarray(labels), logits.dtype)
    log_p, log_q = F.log_sigmoid(logits), F.log_sigmoid(-logits)
    log_miss = fnp.logaddexp(log_p + fnp.log(1 - labels), log_q + fnp.log(labels))  # log(1 - p_t)
    loss = sigmoid_binary_cross_entropy(logits, labels) * fnp.exp(gamma * log_miss)
    return loss if alpha is None else (alpha * labels + (1.0 - alpha) * (1.0 - labels)) * loss


def poly_loss_cross_entropy(logits, labels, *, epsilon=2.0, axis=-1, where=None):
    """Poly-1 (Leng et al.): softmax_cross_entropy + epsilon * sum labels (1 - softmax(logits))."""
    logits = _floating(logits, "logits", "poly_loss_cross_entropy")
    labels = _floating(labels, "labels", "poly_loss_cross_entropy")
    mask = _where(where, logits, axis)
    miss = fnp.sum(labels * (1 - F.softmax(logits, axis, where=mask)), axis=axis, where=mask)
    return softmax_cross_entropy(logits, labels, axis, where) + epsilon * miss


def hinge_loss(predictor_outputs, targets):
    """max(0, 1 - output * target), targets in {-1, 1}."""
    return fnp.maximum(0, 1 - fnp.asarray(predictor_outputs) * fnp.asarray(targets))


def perceptron_loss(predictor_outputs, targets):
    """max(0, -output * target), targets in {-1, 1}."""
    outputs, targets = fnp.asarray(predictor_outputs), fnp.asarray(targets)
    if tuple(outputs.shape) != tuple(targets.shape):
        raise ShapeError(f"perceptron_loss: outputs {tuple(outputs.shape)} and targets {tuple(targets.shape)} must "
                         f"have the same shape")
    return fnp.maximum(0, -outputs * targets)


def _label_scores(scores, labels):
    scores = fnp.asarray(scores)
    return scores, fnp.sum(scores * F.one_hot(labels, scores.shape[-1], dtype=scores.dtype), axis=-1)


def multiclass_hinge_loss(scores, labels):
    """max_k (scores_k + 1 - [k = label]) - scores_label (Crammer and Singer)."""
    scores, own = _label_scores(scores, labels)
    return fnp.max(scores + 1.0 - F.one_hot(labels, scores.shape[-1], dtype=scores.dtype), axis=-1) - own


def multiclass_perceptron_loss(scores, labels):
    """max_k scores_k - scores_label."""
    scores, own = _label_scores(scores, labels)
    return fnp.max(scores, axis=-1) - own


def kl_divergence(log_predictions, targets, axis=-1, where=None):
    """sum targets (log targets - log_predictions) along axis, 0 log 0 = 0."""
    log_predictions = _floating(log_predictions, "log_predictions", "kl_divergence")
    targets = _floating(targets, "targets", "kl_divergence")
    log_targets = fnp.where(targets == 0, 0.0, fnp.log(fnp.where(targets == 0, 1.0, targets)))
    return fnp.sum(targets * (log_targets - log_predictions), axis=axis, where=where)


def kl_divergence_with_log_targets(log_predictions, log_targets, axis=-1, where=None):
    """sum exp(log_targets) (log_targets - log_predictions) along axis."""
    log_predictions = _floating(log_predictions, "log_predictions", "kl_divergence_with_log_targets")
    log_targets = _floating(log_targets, "log_targets", "kl_divergence_with_log_targets")
    return fnp.sum(fnp.exp(log_targets) * (log_targets - log_predictions), axis=axis, where=where)


def generalized_kl_divergence(log_predictions, targets, axis=-1, where=None):
    """kl_divergence + sum (exp(log_predictions) - targets): the KL of unnormalised measures."""
    return (kl_divergence(log_predictions, targets, axis, where)
            + fnp.sum(fnp.exp(fnp.asarray(log_predictions)) - fnp.asarray(targets), axis=axis, where=where))


convex_kl_divergence = generalized_kl_divergence


def smooth_labels(labels, alpha, *, axis=-1, where=None):
    """(1 - alpha) labels + alpha / K, K the categories along axis (the unmasked ones with where)."""
    labels = _floating(labels, "labels", "smooth_labels")
    if where is None:
        count = np.prod([labels.shape[a] for a in np.atleast_1d(axis)])
    else:
        count = fnp.sum(fnp.asarray(where), axis=axis, keepdims=True, dtype=labels.dtype)
    return (1.0 - alpha) * labels + alpha / count


def triplet_margin_loss(anchors, positives, negatives, axis=-1, norm_degree=2, margin=1.0, eps=1e-6):
    """max(d(a, p) - d(a, n) + margin, 0) with d(x, y) = (sum (x - y)^p + eps)^(1 / p) along axis."""
    a = _floating(anchors, "anchors", "triplet_margin_loss")

    def distance(other):
        return fnp.power(fnp.sum(fnp.power(a - fnp.asarray(other), norm_degree), axis=axis) + eps, 1 / norm_degree)
    return fnp.maximum(distance(positives) - distance(negatives) + margin, 0)


def ntxent(embeddings, labels, temperature=0.07):
    """NT-Xent (SimCLR): for each pair of distinct embeddings with equal labels, -log of its scaled
    cosine similarity's softmax against the pairs of different labels; the mean over those pairs."""
    x = _floating(embeddings, "embeddings", "ntxent")
    labels = fnp.asarray(labels)
    if labels.shape[0] != x.shape[0]:
        raise ShapeError(f"ntxent: labels and embeddings must have the same leading dimension, found "
                         f"{labels.shape[0]} for labels and {x.shape[0]} for embeddings")
    eps = float(fnp.finfo(x.dtype).eps)
    similarity = cosine_similarity(x[None, :, :], x[:, None, :], epsilon=eps) / temperature
    same = labels[:, None] == labels[None, :]
    positive = same & ~fnp.eye(x.shape[0], dtype=bool)
    negatives = fnp.where(same, -math.inf, similarity)
    positives = fnp.where(positive, similarity, -math.inf)
    top = fnp.max(fnp.concatenate([negatives, positives], axis=-1), axis=1, keepdims=True)
    top = fnp.stop_gradient(fnp.where(fnp.isfinite(top), top, 0.0))  # a shift: no gradient through it
    shifted = positives - top
    denominator = fnp.sum(fnp.exp(negatives - top), axis=1, keepdims=True) + fnp.exp(shifted)
    log_ratio = shifted - fnp.log(denominator)
    return -fnp.sum(fnp.where(positive, log_ratio, 0.0)) / fnp.sum(positive)
