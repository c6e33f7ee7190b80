"""Losses with PyTorch's definitions and defaults (reduction="mean")."""
from __future__ import annotations

import inspect
import math

import numpy as np

from .. import dtypes
from .. import numpy as fnp
from ..custom import custom_jvp
from ..errors import ShapeError
from ..ops import reductions as R
from ..trace import bind
from ._functional import _softplus, log_softmax, relu

__all__ = [
    "cross_entropy", "nll_loss", "mse_loss", "l1_loss", "huber_loss", "smooth_l1_loss", "kl_div",
    "binary_cross_entropy", "binary_cross_entropy_with_logits", "pairwise_distance", "margin_ranking_loss",
    "hinge_embedding_loss", "cosine_embedding_loss", "triplet_margin_loss", "soft_margin_loss",
    "multilabel_soft_margin_loss", "multi_margin_loss", "poisson_nll_loss", "gaussian_nll_loss", "pdist", "cdist",
    "triplet_margin_with_distance_loss", "multilabel_margin_loss",
]
LOSSES = [
    "CrossEntropyLoss", "NLLLoss", "MSELoss", "L1Loss", "HuberLoss", "SmoothL1Loss", "KLDivLoss", "BCELoss",
    "BCEWithLogitsLoss", "MarginRankingLoss", "HingeEmbeddingLoss", "CosineEmbeddingLoss", "TripletMarginLoss",
    "SoftMarginLoss", "MultiLabelSoftMarginLoss", "MultiMarginLoss", "PoissonNLLLoss", "GaussianNLLLoss",
    "TripletMarginWithDistanceLoss", "MultiLabelMarginLoss",
]


def _reduce(loss, reduction: str, weight_sum=None):
    if reduction == "mean":
        return fnp.sum(loss) / weight_sum if weight_sum is not None else fnp.mean(loss)
    if reduction == "sum":
        return fnp.sum(loss)
    if reduction == "none":
        return loss
    raise ValueError(f"reduction must be 'mean', 'sum' or 'none', got {reduction!r}")


def _labels(logits, labels, fname):
    idx = fnp._index_array(labels, logits.device)
    expected = tuple(logits.shape[:1] + logits.shape[2:]) if logits.ndim > 1 else ()
    if tuple(idx.shape) != expected:
        raise ShapeError(f"{fname}: labels of shape {idx.shape} do not fit logits of shape {logits.shape} "
                         f"(expected labels of shape {expected})")
    return idx


def nll_loss(log_probs, labels, weight=None, reduction: str = "mean", ignore_index: int = -100):
    """Negative log-likelihood of integer labels; classes on axis 1 (or 0 for one example).
    weight (C,) scales each class's terms; the mean then divides by the counted labels' weights."""
    log_probs = fnp.asarray(log_probs)
    idx = _labels(log_probs, labels, "nll_loss")
    weight = _class_weight(weight, log_probs, "nll_loss")
    return _label_loss(*_from_log_probs(log_probs, weight), idx, weight, reduction, ignore_index, label_smoothing=0.0)


def cross_entropy(logits, labels, weight=None, reduction: str = "mean", ignore_index: int = -100,
                  label_smoothing: float = 0.0):
    """torch.nn.functional.cross_entropy: logits (N, C) or (N, C, d...) with integer labels, or
    with class probabilities of the logits' shape (soft targets). weight (C,) scales each class's
    terms, as PyTorch's: with integer labels the mean divides by the counted labels' weights, with
    probabilities by the number of examples."""
    logits, targets = (fnp.asarray(v) for v in fnp.follow(logits, labels))
    weight = _class_weight(weight, logits, "cross_entropy")
    if dtypes.is_float(targets.dtype):
        if targets.shape != logits.shape:
            raise ShapeError(f"cross_entropy: class-probability targets of shape {targets.shape} must have the "
                             f"logits' shape {logits.shape} (integer labels drop the class axis)")
        return _soft_cross_entropy(logits, targets, weight, reduction, label_smoothing)
    idx = _labels(logits, labels, "cross_entropy")
    if not 0.0 <= label_smoothing <= 1.0:
        raise ValueError(f"label_smoothing must be in [0, 1], got {label_smoothing}")
    if logits.ndim > 2:  # (N, C, d...): classes are not the last axis
        parts = _from_log_probs(log_softmax(logits, axis=1), weight)
    else:  # -log p[label] = logsumexp - logit[label]: two primitives, no log-probability array
        lse = fnp.logsumexp(logits, axis=-1)
        smooth = (lambda: lse - fnp.mean(logits, axis=-1)) if weight is None else \
            (lambda: fnp.mean(weight * (fnp.expand_dims(lse, -1) - logits), axis=-1))
        parts = (logits.shape[-1], lambda safe: lse - bind(R.pick_p, logits, safe), smooth)
    return _label_loss(*parts, idx, weight, reduction, ignore_index, label_smoothing)


def _not_a_reduction(weight, fname: str, name: str) -> None:
    """funcgrad once took reduction third, where PyTorch takes weight: a string there raises."""
    if isinstance(weight, str):
        raise TypeError(f"{fname}: {name} must be an array, got {weight!r}; pass reduction by name "
                        f"(reduction={weight!r})")


def _class_weight(weight, scores, fname: str):
    """weight as a float array of one value per class (PyTorch's `weight`), or None."""
    if weight is None:
        return None
    _not_a_reduction(weight, fname, "weight")
    weight = fnp.follow(scores, weight)[1]  # a NumPy array goes to the scores' device, and a float64 one
    weight = fnp.asarray(weight, dtype=scores.dtype if dtypes.is_float(scores.dtype) else None)  # keeps float32
    classes = scores.shape[1] if scores.ndim > 1 else scores.shape[0]
    if tuple(weight.shape) != (classes,):
        raise ShapeError(f"{fname}: weight of shape {tuple(weight.shape)} must hold one weight per class, "
                         f"shape ({classes},), for scores of shape {tuple(scores.shape)}")
    return weight


def _along_classes(weight, ndim: int):
    """weight (C,) shaped to broadcast along axis 1 of an (N, C, d...) array (axis 0 of (C,))."""
    return fnp.reshape(weight, (-1,) + (1,) * (ndim - 2)) if ndim > 1 else weight


def _from_log_probs(log_probs, weight=None):
    """(classes, nll of safe labels, mean over classes of each class's weighted nll) for
    log-probabilities."""
    class_axis = 1 if log_probs.ndim > 1 else 0

    def nll(safe):
        picked = fnp.take_along_axis(log_probs, fnp.expand_dims(safe, class_axis), axis=class_axis)
        return -fnp.squeeze(picked, class_axis)

    def smooth():
        weighted = log_probs if weight is None else log_probs * _along_classes(weight, log_probs.ndim)
        return -fnp.mean(weighted, axis=class_axis)
    return log_probs.shape[class_axis], nll, smooth


def _label_loss(n_classes, nll, smooth, idx, weight, reduction, ignore_index, label_smoothing):
    """PyTorch's loss of integer labels: (1 - s) w[y] nll + s mean_c(w_c nll_c) per counted label,
    0 for ignored ones; the mean divides by the counted labels' weights (their number unweighted)."""
    valid = idx != ignore_index
    safe = fnp.where(valid, idx, 0)
    known = fnp.concrete_or_none(safe)
    if known is not None and known.size and (known.min() < 0 or known.max() >= n_classes):
        raise IndexError(f"label out of range: labels span [{known.min()}, {known.max()}] for {n_classes} classes")
    loss = nll(safe)
    label_weight = None
    if weight is not None:
        label_weight = fnp.take(weight, safe)
        loss = loss * label_weight
    if label_smoothing:
        loss = (1.0 - label_smoothing) * loss + label_smoothing * smooth()
    loss = fnp.where(valid, loss, 0.0)
    if reduction != "mean":
        return _reduce(loss, reduction)
    counted = fnp.sum(valid, dtype=loss.dtype) if label_weight is None else fnp.sum(fnp.where(valid, label_weight, 0.0))
    return _reduce(loss, reduction, counted)


def _matching(pred, target, fname: str, float_target: bool = False):
    """pred and target of one shape: a loss of (4, 1) predictions against (4,) targets would
    broadcast to 4 x 4 pairs and average the wrong thing (PyTorch warns; this raises). A Python
    number target is one value for every element, as the user wrote it."""
    pred, target = fnp.follow(pred, target)  # a NumPy target goes to pred's device
    pred = fnp._float_arg(pred) if float_target else fnp.asarray(pred)
    if isinstance(target, (int, float)) and not isinstance(target, bool):
        return pred, target
    target = fnp.asarray(target, dtype=pred.dtype) if float_target else fnp.asarray(target)
    if tuple(target.shape) != tuple(pred.shape):
        raise ShapeError(f"{fname}: input of shape {tuple(pred.shape)} and target of shape {tuple(target.shape)} "
                         f"differ, and broadcasting them would pair every input with every target; reshape one, "
                         f"or broadcast it explicitly (fnp.broadcast_to) if that is what you mean")
    return pred, target


def mse_loss(pred, target, reduction: str = "mean", weight=None):
    """(pred - target)^2; weight (PyTorch 2's) scales each element, and its mean is the weighted one."""
    pred, target = _matching(pred, target, "mse_loss")
    return _weighted_reduce(fnp.square(fnp.subtract(pred, target)), weight, reduction, "mse_loss")


def l1_loss(pred, target, reduction: str = "mean", weight=None):
    pred, target = _matching(pred, target, "l1_loss")
    return _weighted_reduce(fnp.abs(fnp.subtract(pred, target)), weight, reduction, "l1_loss")


def _weighted_reduce(loss, weight, reduction: str, fname: str, mean_over_weights: bool = True):
    """The loss reduced; with an elementwise weight (torch 2's regression losses), the weighted
    elements, whose mean divides by the sum of the weights (mse, l1) or, as torch's huber_loss does,
    by their count (mean_over_weights=False)."""
    if weight is None:
        return _reduce(loss, reduction)
    weight = _elementwise_weight(weight, loss, fname)
    total = fnp.sum(fnp.broadcast_to(weight, loss.shape)) if mean_over_weights else None
    return _reduce(loss * weight, reduction, weight_sum=total)


def _elementwise_weight(weight, like, fname: str, name: str = "weight"):
    """weight as an array of like's dtype (on its device) that broadcasts to like's shape without
    enlarging it (PyTorch scales the loss in place, so a weight that would widen it raises there too)."""
    _not_a_reduction(weight, fname, name)
    shape = like.shape
    weight = fnp.asarray(fnp.follow(like, weight)[1], dtype=like.dtype)
    try:
        widened = fnp.broadcast_shapes(tuple(weight.shape), tuple(shape)) != tuple(shape)
    except ShapeError:
        widened = True
    if widened:
        raise ShapeError(f"{fname}: {name} of shape {tuple(weight.shape)} does not broadcast to the input's shape "
                         f"{tuple(shape)}")
    return weight


def _clamp_min_0(x):
    """max(x, 0) with PyTorch's clamp_min gradient, 1 at 0: its margin losses clamp (a hinge exactly
    at the margin still pushes), where relu's is 0 there."""
    return fnp.clip(x, 0.0, None)


def binary_cross_entropy_with_logits(logits, targets, weight=None, reduction: str = "mean", pos_weight=None):
    """-w [p y log sigmoid(x) + (1 - y) log(1 - sigmoid(x))], computed stably from logits, with
    PyTorch's weight (per element, broadcast) and pos_weight (p: per class, weighting positives)."""
    logits, targets = _matching(logits, targets, "binary_cross_entropy_with_logits", float_target=True)
    if pos_weight is None:
        # softplus(x) - x y, written for each sign so that no large terms cancel; relu(x) - x y +
        # softplus(-|x|) did that too, but its kinks' zero gradients at x = 0 made a zero logit's
        # gradient -y instead of sigmoid(0) - y = 1/2 - y (a zero-initialised head's first step)
        positive = logits >= 0
        loss = fnp.where(positive, (1.0 - targets) * logits + _softplus(-logits),
                         _softplus(logits) - logits * targets)
    else:
        pos_weight = _elementwise_weight(pos_weight, logits, "binary_cross_entropy_with_logits",
                                         "pos_weight")
        log_weight = 1.0 + (pos_weight - 1.0) * targets
        loss = (1.0 - targets) * logits + log_weight * _softplus(-logits)
    if weight is not None:
        loss = loss * _elementwise_weight(weight, logits, "binary_cross_entropy_with_logits")
    return _reduce(loss, reduction)


def _soft_cross_entropy(logits, probs, weight, reduction, label_smoothing):
    class_axis = 1 if logits.ndim > 1 else 0
    if not 0.0 <= label_smoothing <= 1.0:
        raise ValueError(f"label_smoothing must be in [0, 1], got {label_smoothing}")
    if label_smoothing:
        probs = probs * (1.0 - label_smoothing) + label_smoothing / logits.shape[class_axis]
    if weight is not None:
        probs = probs * _along_classes(weight, logits.ndim)
    loss = -fnp.sum(probs * log_softmax(logits, axis=class_axis), axis=class_axis)
    return _reduce(loss, reduction)


def huber_loss(pred, target, reduction: str = "mean", delta: float = 1.0, weight=None):
    """Quadratic within delta of the target, linear beyond (torch.nn.functional.huber_loss)."""
    if not delta > 0:
        raise ValueError(f"huber_loss: delta must be positive, got {delta}")
    diff = fnp.abs(fnp.subtract(*_matching(pred, target, "huber_loss")))
    loss = fnp.where(diff < delta, 0.5 * diff * diff, delta * (diff - 0.5 * delta))
    return _weighted_reduce(loss, weight, reduction, "huber_loss", mean_over_weights=False)


def smooth_l1_loss(pred, target, reduction: str = "mean", beta: float = 1.0):
    """huber_loss / beta (beta = 0 is the L1 loss)."""
    if beta < 0:
        raise ValueError(f"smooth_l1_loss: beta must be non-negative, got {beta}")
    diff = fnp.abs(fnp.subtract(*_matching(pred, target, "smooth_l1_loss")))
    if beta == 0:
        return _reduce(diff, reduction)
    return _reduce(fnp.where(diff < beta, 0.5 * diff * diff / beta, diff - 0.5 * beta), reduction)


def kl_div(input, target, reduction: str = "mean", log_target: bool = False):  # noqa: A002  (PyTorch's name)
    """KL(target || exp(input)) pointwise, input being log-probabilities (torch's kl_div):
    reduction 'batchmean' divides the sum by the batch size (the mathematically correct mean)."""
    input, target = _matching(input, target, "kl_div", float_target=True)  # noqa: A001
    if log_target:
        loss = fnp.exp(target) * (target - input)
    else:
        safe = fnp.where(target > 0, target, 1.0)
        loss = fnp.where(target > 0, target * (fnp.log(safe) - input), 0.0)
    if reduction == "batchmean":
        return fnp.sum(loss) / (input.shape[0] if input.ndim else 1)
    return _reduce(loss, reduction)


def _clamped_logs(probs):
    return fnp.maximum(fnp.log(probs), -100.0), fnp.maximum(fnp.log1p(-probs), -100.0)


@custom_jvp
def _binary_cross_entropy(probs, targets):
    """-[y log p + (1 - y) log(1 - p)], each log clamped at -100 as PyTorch's."""
    log_p, log_q = _clamped_logs(probs)
    return -(targets * log_p + (1.0 - targets) * log_q)


@_binary_cross_entropy.defjvp
def _binary_cross_entropy_jvp(primals, tangents):
    """PyTorch's derivatives: (p - y) / max(p (1 - p), 1e-12) for p, finite at p = 0 or 1 (where
    the clamped logs' would be 0 * inf), and log(1 - p) - log p (unclamped) for y."""
    (probs, targets), (t_probs, t_targets) = primals, tangents
    slope = (probs - targets) / fnp.maximum(probs * (1.0 - probs), 1e-12)
    log_odds_against = fnp.log1p(-probs) - fnp.log(probs)
    return _binary_cross_entropy(probs, targets), t_probs * slope + t_targets * log_odds_against


def _check_probabilities(values, what: str, hint: str) -> None:
    """Raise unless every (concrete) value is in [0, 1]; traced values (under jit) go unchecked."""
    known = fnp.concrete_or_none(values)
    if known is not None and known.size and not ((known >= 0) & (known <= 1)).all():
        bad = known[~((known >= 0) & (known <= 1))].ravel()[0]
        raise ValueError(f"binary_cross_entropy: every {what} must be a probability in [0, 1], got {bad}{hint}")


def binary_cross_entropy(probs, targets, weight=None, reduction: str = "mean"):
    """-w [y log p + (1 - y) log(1 - p)] on probabilities, each log clamped at -100 as PyTorch."""
    probs, targets = _matching(probs, targets, "binary_cross_entropy", float_target=True)
    _check_probabilities(probs, "input", " (for logits use binary_cross_entropy_with_logits)")
    _check_probabilities(targets, "target", "")  # PyTorch's check too: 1.5 gave a loss of nothing
    loss = _binary_cross_entropy(probs, targets)
    if weight is not None:
        loss = loss * _elementwise_weight(weight, probs, "binary_cross_entropy")
    return _reduce(loss, reduction)


# ---- margin, distance and likelihood losses -----------------------------------------------------------
def _same_shape(fname: str, *arrays):
    """The arrays (floats) of one shape, or a ShapeError naming them all (no silent pairing)."""
    arrays = [fnp._float_arg(a) for a in arrays]
    shapes = {tuple(a.shape) for a in arrays}
    if len(shapes) > 1:
        raise ShapeError(f"{fname}: inputs of shapes {[tuple(a.shape) for a in arrays]} differ")
    return arrays


def _signs(target, like, fname: str):
    """A target of +1 / -1 labels shaped as `like` (a Python number: one label for all)."""
    target = fnp.asarray(fnp.follow(like, target)[1], dtype=like.dtype)
    if target.shape != like.shape and target.ndim:
        raise ShapeError(f"{fname}: target of shape {tuple(target.shape)} for inputs of shape {tuple(like.shape)}")
    return target


def pairwise_distance(x1, x2, p: float = 2.0, eps: float = 1e-6, keepdim: bool = False):
    """The p-norm of x1 - x2 + eps along the last axis (torch.nn.functional.pairwise_distance)."""
    x1, x2 = fnp._float_pair(x1, x2)
    return fnp.linalg.vector_norm(x1 - x2 + eps, ord=p, axis=-1, keepdims=keepdim)


def pdist(x, p: float = 2.0):
    """The p-norm distances between the rows of x (N, M), the pairs i < j in row-major order
    (torch.nn.functional.pdist); identical rows are 0 apart with a zero gradient."""
    x = fnp._float_arg(x)
    if x.ndim != 2:
        raise ShapeError(f"pdist expects an (N, M) input, got shape {x.shape}")
    if p < 0:
        raise ValueError(f"pdist: p must be non-negative, got {p}")
    i, j = np.triu_indices(x.shape[0], 1)
    return _p_distance(fnp.abs(x[fnp._placed(fnp.asarray(i), x.device)] - x[fnp._placed(fnp.asarray(j), x.device)]), p)


def _p_distance(diff, p: float):
    """The p-norm of the absolute differences diff along the last axis (p = 0 counts the nonzero)."""
    if p == 0:
        return fnp.sum(fnp.astype(diff != 0, diff.dtype), axis=-1)
    if math.isinf(p):
        return fnp.max(diff, axis=-1, initial=0.0)
    # the powers and the root through where: a zero difference (and a zero distance) passes a zero
    # gradient, not 0 * inf from 0 ** (p - 1) or 0 ** (1/p - 1), as PyTorch's backward
    moved = diff > 0
    total = fnp.sum(fnp.where(moved, fnp.where(moved, diff, 1.0) ** p, 0.0), axis=-1)
    return _root_or_zero(total, p)


def _root_or_zero(total, p: float):
    apart = total > 0
    return fnp.where(apart, fnp.where(apart, total, 1.0) ** (1.0 / p), 0.0)


_CDIST_MODES = ("use_mm_for_euclid_dist_if_necessary", "use_mm_for_euclid_dist", "donot_use_mm_for_euclid_dist")


def cdist(x1, x2, p: float = 2.0, compute_mode: str = "use_mm_for_euclid_dist_if_necessary"):
    """torch.cdist: the p-norm distances between the rows of x1 (..., P, M) and of x2 (..., R, M),
    shape (..., P, R), batch axes broadcast. For p = 2 over more than 25 rows on either side (or
    compute_mode 'use_mm_for_euclid_dist') as PyTorch: |a|^2 + |b|^2 - 2 a.b, one matmul instead of
    P R M differences; equal points are 0 apart with a zero gradient."""
    x1, x2 = fnp._float_pair(x1, x2)
    if x1.ndim < 2 or x2.ndim < 2 or x1.shape[-1] != x2.shape[-1]:
        raise ShapeError(f"cdist expects (..., P, M) and (..., R, M) inputs, got shapes {x1.shape} and {x2.shape}")
    if p < 0:
        raise ValueError(f"cdist: p must be non-negative, got {p}")
    if compute_mode not in _CDIST_MODES:
        raise ValueError(f"cdist: compute_mode must be one of {_CDIST_MODES}, got {compute_mode!r}")
    large = x1.shape[-2] > 25 or x2.shape[-2] > 25
    if p == 2 and (compute_mode == _CDIST_MODES[1] or compute_mode == _CDIST_MODES[0] and large):
        squares = (fnp.expand_dims(fnp.sum(x1 * x1, axis=-1), -1) + fnp.expand_dims(fnp.sum(x2 * x2, axis=-1), -2)
                   - 2 * fnp.matmul(x1, fnp.swapaxes(x2, -1, -2)))
        return _root_or_zero(squares, 2.0)  # rounding may leave a small negative for equal points: 0
    return _p_distance(fnp.abs(fnp.expand_dims(x1, -2) - fnp.expand_dims(x2, -3)), p)


def margin_ranking_loss(x1, x2, target, margin: float = 0.0, reduction: str = "mean"):
    """max(0, -y (x1 - x2) + margin): y = 1 wants x1 ranked above x2, y = -1 below."""
    x1, x2 = _same_shape("margin_ranking_loss", x1, x2)
    return _reduce(_clamp_min_0(-_signs(target, x1, "margin_ranking_loss") * (x1 - x2) + margin), reduction)


def hinge_embedding_loss(x, target, margin: float = 1.0, reduction: str = "mean"):
    """x where y = 1, max(0, margin - x) where y = -1 (PyTorch's: other labels count in both terms)."""
    x = fnp._float_arg(x)
    y = _signs(target, x, "hinge_embedding_loss")
    return _reduce(fnp.where(y != 1, _clamp_min_0(margin - x), 0.0) + fnp.where(y != -1, x, 0.0), reduction)


def cosine_embedding_loss(x1, x2, target, margin: float = 0.0, reduction: str = "mean"):
    """1 - cos(x1, x2) where y = 1, max(0, cos - margin) where y = -1; rows along the last axis, the
    squared norms offset by 1e-12 as PyTorch's."""
    x1, x2 = _same_shape("cosine_embedding_loss", x1, x2)
    squares = (fnp.sum(x1 * x1, axis=-1) + 1e-12) * (fnp.sum(x2 * x2, axis=-1) + 1e-12)
    cos = fnp.sum(x1 * x2, axis=-1) / fnp.sqrt(squares)
    y = _signs(target, cos, "cosine_embedding_loss")
    return _reduce(fnp.where(y == 1, 1.0 - cos, 0.0) + fnp.where(y == -1, _clamp_min_0(cos - margin), 0.0), reduction)


def triplet_margin_loss(anchor, positive, negative, margin: float = 1.0, p: float = 2.0, eps: float = 1e-6,
                        swap: bool = False, reduction: str = "mean"):
    """max(d(a, p) - d(a, n) + margin, 0) with pairwise_distance d; swap takes the closer of the
    negative's distances to the anchor and to the positive."""
    anchor, positive, negative = _same_shape("triplet_margin_loss", anchor, positive, negative)
    d_pos = pairwise_distance(anchor, positive, p, eps)
    d_neg = pairwise_distance(anchor, negative, p, eps)
    if swap:
        d_neg = fnp.minimum(d_neg, pairwise_distance(positive, negative, p, eps))
    return _reduce(_clamp_min_0(d_pos - d_neg + margin), reduction)


def triplet_margin_with_distance_loss(anchor, positive, negative, *, distance_function=None, margin: float = 1.0,
                                      swap: bool = False, reduction: str = "mean"):
    """triplet_margin_loss with any distance (a function of two batches; pairwise_distance by
    default), as torch.nn.functional.triplet_margin_with_distance_loss."""
    distance = pairwise_distance if distance_function is None else distance_function
    if margin <= 0:
        raise ValueError(f"triplet_margin_with_distance_loss: margin must be positive, got {margin}")
    d_pos, d_neg = distance(anchor, positive), distance(anchor, negative)
    if swap:
        d_neg = fnp.minimum(d_neg, distance(positive, negative))
    return _reduce(_clamp_min_0(d_pos - d_neg + margin), reduction)


def multilabel_margin_loss(x, target, reduction: str = "mean"):
    """sum over target classes j and other classes i of max(0, 1 - (x[j] - x[i])) / C, per example
    (torch.nn.functional.multilabel_margin_loss): target (N, C) or (C,) lists the classes, ended by
    the first -1 (a class listed twice counts twice, as there)."""
    x = fnp._float_arg(x)
    target = np.asarray(fnp._concrete(target, "multilabel_margin_loss's target")).astype(np.int64)
    if x.ndim not in (1, 2) or target.shape != x.shape:
        raise ShapeError(f"multilabel_margin_loss: input (N, C) or (C,) and a target of its shape, got {x.shape} "
                         f"and {target.shape}")
    rows, classes = (x, target) if x.ndim == 2 else (fnp.expand_dims(x, 0), target[None])
    c = rows.shape[1]
    if ((classes < -1) | (classes >= c)).any():
        raise IndexError(f"multilabel_margin_loss: target classes must be in [-1, {c}), got {classes.tolist()}")
    listings = np.zeros(classes.shape, np.int64)  # how often each class is listed
    for n, row in enumerate(classes):
        np.add.at(listings[n], row[:np.argmax(row < 0)] if (row < 0).any() else row, 1)
    mask = fnp._placed(fnp.asarray(listings > 0), x.device)
    picked = fnp._placed(fnp.asarray(listings.astype(rows.dtype)), x.device)
    # hinge of every (target j, non-target i) pair: (N, C_j, C_i)
    hinge = relu(1.0 - (fnp.expand_dims(rows, 2) - fnp.expand_dims(rows, 1)))
    pairs = fnp.expand_dims(picked, 2) * fnp.expand_dims(fnp.where(mask, 0.0, 1.0), 1)
    loss = fnp.sum(hinge * pairs, axis=(1, 2)) / c
    return _reduce(loss if x.ndim == 2 else loss[0], reduction)


def soft_margin_loss(x, target, reduction: str = "mean"):
    """log(1 + exp(-y x)) for labels y = +-1."""
    x = fnp._float_arg(x)
    return _reduce(_softplus(-_signs(target, x, "soft_margin_loss") * x), reduction)


def multilabel_soft_margin_loss(x, target, weight=None, reduction: str = "mean"):
    """The mean over classes (last axis) of -[y log sigmoid(x) + (1 - y) log sigmoid(-x)], weight
    per class."""
    x, target = _matching(x, target, "multilabel_soft_margin_loss", float_target=True)
    loss = target * _softplus(-x) + (1.0 - target) * _softplus(x)
    if weight is not None:
        loss = loss * _elementwise_weight(weight, x, "multilabel_soft_margin_loss")
    return _reduce(fnp.mean(loss, axis=-1), reduction)


def multi_margin_loss(x, target, p: int = 1, margin: float = 1.0, weight=None, reduction: str = "mean"):
    """sum over the wrong classes i of max(0, margin - x[y] + x[i])^p, divided by the classes and
    weighted by weight[y] (torch.nn.functional.multi_margin_loss); x (N, C) or (C,)."""
    if p not in (1, 2):
        raise ValueError(f"multi_margin_loss: p must be 1 or 2, got {p}")
    x = fnp._float_arg(x)
    idx = _labels(x, target, "multi_margin_loss")
    rows = x if x.ndim == 2 else fnp.reshape(x, (1, -1))
    labels = fnp.reshape(idx, (-1, 1))
    chosen = fnp.take_along_axis(rows, labels, axis=1)
    terms = relu(margin - chosen + rows) ** p
    classes = fnp.arange(rows.shape[1], device=rows.device)[None, :]
    terms = fnp.where(classes == labels, 0.0, terms)  # the true class is not a margin
    if weight is not None:
        terms = terms * fnp.take(_class_weight(weight, rows, "multi_margin_loss"), fnp.ravel(idx))[:, None]
    loss = fnp.sum(terms, axis=1) / rows.shape[1]
    return _reduce(loss if x.ndim == 2 else loss[0], reduction)


def poisson_nll_loss(x, target, log_input: bool = True, full: bool = False, eps: float = 1e-8,
                     reduction: str = "mean"):
    """Negative log-likelihood of target under Poisson(rate): rate = exp(x) where log_input, else x
    (+ eps inside the log); full adds Stirling's term for the targets above 1."""
    x, target = _matching(x, target, "poisson_nll_loss", float_target=True)
    loss = fnp.exp(x) - target * x if log_input else x - target * fnp.log(x + eps)
    if full:
        safe = fnp.where(target > 1, target, 1.0)
        loss = loss + fnp.where(target > 1, safe * fnp.log(safe) - safe + 0.5 * fnp.log(2 * math.pi * safe), 0.0)
    return _reduce(loss, reduction)


def gaussian_nll_loss(x, target, var, full: bool = False, eps: float = 1e-6, reduction: str = "mean"):
    """0.5 (log var + (x - target)^2 / var) (+ 0.5 log 2 pi where full); var of x's shape, or with its
    last axis 1 or dropped (one variance per example). var is clamped at eps for the value only, its
    gradient passing as through the identity, as PyTorch's."""
    x, target = _matching(x, target, "gaussian_nll_loss", float_target=True)
    var = fnp.asarray(fnp.follow(x, var)[1], dtype=x.dtype)
    if var.shape != x.shape:
        if var.shape == x.shape[:-1]:
            var = fnp.expand_dims(var, -1)
        if var.shape[:-1] != x.shape[:-1] or var.shape[-1] != 1:
            raise ShapeError(f"gaussian_nll_loss: var of shape {tuple(var.shape)} for inputs of shape {tuple(x.shape)}")
    known = fnp.concrete_or_none(var)
    if known is not None and (known < 0).any():
        raise ValueError("gaussian_nll_loss: var has negative entries")
    var = var + fnp.stop_gradient(fnp.maximum(var, eps) - var)
    loss = 0.5 * (fnp.log(var) + (x - target) ** 2 / var)
    return _reduce(loss + 0.5 * math.log(2 * math.pi) if full else loss, reduction)


class _Loss:
    """A loss as an object holding its options, as torch.nn's loss modules: criterion(input, target)
    (or three inputs, `arity`). Each subclass names its function as `fn`; options are its parameters
    after the inputs, so nn.CrossEntropyLoss(w) holds weight=w as PyTorch's does, and an unknown
    option raises here."""
    arity = 2

    def __init__(self, *args, **options):
        try:
            bound = inspect.signature(type(self).fn).bind_partial(*[None] * self.arity, *args, **options)
        except TypeError as e:
            raise TypeError(f"{type(self).__name__}: {e}") from None
        self.options = dict(list(bound.arguments.items())[self.arity:])

    def __call__(self, *inputs):
        if len(inputs) != self.arity:
            raise TypeError(f"{type(self).__name__} takes {self.arity} inputs, got {len(inputs)}")
        return type(self).fn(*inputs, **self.options)

    def __repr__(self) -> str:
        return f"{type(self).__name__}({', '.join(f'{k}={v!r}' for k, v in self.options.items())})"


def _loss_class(name: str, fn, doc: str, arity: int = 2):
    return type(name, (_Loss,), {"fn": staticmethod(fn), "__doc__": doc, "arity": arity})


CrossEntropyLoss = _loss_class("CrossEntropyLoss", cross_entropy, "nn.CrossEntropyLoss(weight=, reduction=, "
                               "ignore_index=, label_smoothing=)")
NLLLoss = _loss_class("NLLLoss", nll_loss, "nn.NLLLoss(weight=, reduction=, ignore_index=)")
MSELoss = _loss_class("MSELoss", mse_loss, "nn.MSELoss(reduction=)")
L1Loss = _loss_class("L1Loss", l1_loss, "nn.L1Loss(reduction=)")
HuberLoss = _loss_class("HuberLoss", huber_loss, "nn.HuberLoss(reduction=, delta=)")
SmoothL1Loss = _loss_class("SmoothL1Loss", smooth_l1_loss, "nn.SmoothL1Loss(reduction=, beta=)")
KLDivLoss = _loss_class("KLDivLoss", kl_div, "nn.KLDivLoss(reduction=, log_target=)")
BCELoss = _loss_class("BCELoss", binary_cross_entropy, "nn.BCELoss(weight=, reduction=)")
BCEWithLogitsLoss = _loss_class("BCEWithLogitsLoss", binary_cross_entropy_with_logits,
                                "nn.BCEWithLogitsLoss(weight=, reduction=, pos_weight=)")
MarginRankingLoss = _loss_class("MarginRankingLoss", margin_ranking_loss, "nn.MarginRankingLoss(margin=, reduction=)",
                                arity=3)
HingeEmbeddingLoss = _loss_class("HingeEmbeddingLoss", hinge_embedding_loss,
                                 "nn.HingeEmbeddingLoss(margin=, reduction=)")
CosineEmbeddingLoss = _loss_class("CosineEmbeddingLoss", cosine_embedding_loss,
                                  "nn.CosineEmbeddingLoss(margin=, reduction=)", arity=3)
TripletMarginLoss = _loss_class("TripletMarginLoss", triplet_margin_loss,
                                "nn.TripletMarginLoss(margin=, p=, eps=, swap=, reduction=)", arity=3)
SoftMarginLoss = _loss_class("SoftMarginLoss", soft_margin_loss, "nn.SoftMarginLoss(reduction=)")
MultiLabelSoftMarginLoss = _loss_class("MultiLabelSoftMarginLoss", multilabel_soft_margin_loss,
                                       "nn.MultiLabelSoftMarginLoss(weight=, reduction=)")
MultiMarginLoss = _loss_class("MultiMarginLoss", multi_margin_loss,
                              "nn.MultiMarginLoss(p=, margin=, weight=, reduction=)")
PoissonNLLLoss = _loss_class("PoissonNLLLoss", poisson_nll_loss,
                             "nn.PoissonNLLLoss(log_input=, full=, eps=, reduction=)")
GaussianNLLLoss = _loss_class("GaussianNLLLoss", gaussian_nll_loss, "nn.GaussianNLLLoss(full=, eps=, reduction=)",
                              arity=3)
TripletMarginWithDistanceLoss = _loss_class(
    "TripletMarginWithDistanceLoss", triplet_margin_with_distance_loss,
    "nn.TripletMarginWithDistanceLoss(distance_function=, margin=, swap=, reduction=)", arity=3)
MultiLabelMarginLoss = _loss_class("MultiLabelMarginLoss", multilabel_margin_loss, "nn.MultiLabelMarginLoss(reduction=)")
