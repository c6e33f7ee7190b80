"""Connectionist temporal classification (torch.nn.functional.ctc_loss, nn.CTCLoss): -log of the
total probability of every alignment of a label sequence to the frames, by the forward (alpha)
recursion of Graves et al. (2006) in log space over the blank-interleaved labels, one frame at a
time. The loss is composed of differentiable operations, so its gradient is the true derivative
in log_probs (PyTorch's own kernel returns exp(log_probs) - posteriors, which differs from it by
exp(log_probs) but gives the same gradient through the log_softmax that produces log_probs)."""
from __future__ import annotations

import numpy as np

from .. import numpy as fnp
from ..errors import ShapeError
from .losses import _loss_class

__all__ = ["ctc_loss"]
LAYERS = ["CTCLoss"]


def _safe_logsumexp(terms, axis: int):
    """logsumexp that gives -inf, with zero gradients, where every term is -inf (no alignment
    reaches there), instead of NaN."""
    peak = fnp.stop_gradient(fnp.max(terms, axis=axis, keepdims=True))
    peak = fnp.where(fnp.isfinite(peak), peak, 0.0)
    total = fnp.sum(fnp.exp(terms - peak), axis=axis)
    some = total > 0
    return fnp.where(some, fnp.log(fnp.where(some, total, 1.0)) + fnp.squeeze(peak, axis), -np.inf)


def _lengths(values, batch: int, name: str):
    """(N,) int64 lengths, and their values where they are known (None under jit)."""
    values = fnp.asarray(values)
    if values.dtype.kind not in "iu":
        raise TypeError(f"ctc_loss: {name} must be integers, got {values.dtype}")
    lengths = fnp.broadcast_to(fnp.astype(values, np.int64), (batch,))
    return lengths, fnp.concrete_or_none(lengths)


def _padded_targets(targets, target_lengths):
    """targets as (N, S) labels: PyTorch's padded (N, S) form, or its 1-D concatenation (which
    needs concrete lengths to split)."""
    labels = fnp.asarray(targets)
    if labels.ndim == 2:
        return labels
    if labels.ndim != 1 or target_lengths is None or labels.shape[0] != target_lengths.sum():
        raise ShapeError(f"ctc_loss: targets of shape {labels.shape} are neither (N, S) padded labels nor the "
                         f"concatenation of sequences of lengths {target_lengths}")
    width = max(int(target_lengths.max(initial=0)), 1)
    starts = np.concatenate([[0], np.cumsum(target_lengths)[:-1]])
    index = np.minimum(starts[:, None] + np.arange(width), max(labels.shape[0] - 1, 0))
    inside = np.arange(width) < target_lengths[:, None]
    return fnp.where(inside, fnp.take(labels, index), 0) if labels.shape[0] else fnp.zeros(index.shape, labels.dtype)


def _check(known_in, known_tgt, labels, frames: int, classes: int, blank: int) -> None:
    if not 0 <= blank < classes:
        raise ValueError(f"ctc_loss: blank {blank} is not one of the {classes} classes")
    if known_in is not None and ((known_in < 1).any() or (known_in > frames).any()):
        raise ValueError(f"ctc_loss: input lengths {known_in.tolist()} must be in [1, {frames}]")
    if known_tgt is not None and ((known_tgt < 0).any() or (known_tgt > labels.shape[1]).any()):
        raise ValueError(f"ctc_loss: target lengths {known_tgt.tolist()} must be in [0, {labels.shape[1]}]")
    known = fnp.concrete_or_none(labels)
    if known is not None and known_tgt is not None:
        used = np.asarray(known)[np.arange(labels.shape[1]) < known_tgt[:, None]]
        if used.size and ((used < 0) | (used >= classes) | (used == blank)).any():
            raise ValueError(f"ctc_loss: target labels must be classes in [0, {classes}) other than the blank "
                             f"{blank}, got {sorted(set(used.tolist()))}")


def ctc_loss(log_probs, targets, input_lengths, target_lengths, blank: int = 0, reduction: str = "mean",
             zero_infinity: bool = False):
    """log_probs (T, N, C) (or (T, C) for one sequence) of log-probabilities; targets (N, S) padded or
    the 1-D concatenation of the N label sequences; input_lengths and target_lengths (N,). 'mean'
    divides each sequence's loss by its target length before averaging, as PyTorch; an impossible
    alignment (a target too long for its frames) gives inf, or 0 with its gradient with
    zero_infinity. Padded targets and the lengths may be traced (under jit)."""
    log_probs = fnp._float_arg(log_probs)
    unbatched = log_probs.ndim == 2
    if unbatched:
        log_probs = fnp.expand_dims(log_probs, 1)
        targets = fnp.expand_dims(fnp.asarray(targets), 0) if fnp.asarray(targets).ndim == 1 else targets
    if log_probs.ndim != 3:
        raise ShapeError(f"ctc_loss: log_probs must be (T, N, C) or (T, C), got shape {log_probs.shape}")
    frames, batch, classes = log_probs.shape
    in_len, known_in = _lengths(input_lengths, batch, "input_lengths")
    tgt_len, known_tgt = _lengths(target_lengths, batch, "target_lengths")
    labels = fnp.astype(_padded_targets(targets, known_tgt), np.int64)
    if labels.shape[0] != batch:
        raise ShapeError(f"ctc_loss: targets of shape {labels.shape} for a batch of {batch}")
    _check(known_in, known_tgt, labels, frames, classes, blank)
    # the blank-interleaved labels l' (N, L) and where a path may skip a blank (l'(s) != l'(s - 2))
    extended = fnp.full((batch, 2 * labels.shape[1] + 1), blank, np.int64, device=log_probs.device)
    extended = extended.at[:, 1::2].set(labels)
    skip = fnp.concatenate([fnp.zeros((batch, 2), bool, device=log_probs.device),
                            (extended[:, 2:] != blank) & (extended[:, 2:] != extended[:, :-2])], axis=1)
    emit = fnp.take_along_axis(log_probs, fnp.broadcast_to(extended, (frames,) + extended.shape), axis=2)  # (T, N, L)
    never = np.asarray(-np.inf, log_probs.dtype)
    unreached = fnp.full((batch, 2), never, device=log_probs.device)
    alpha = fnp.where(np.arange(extended.shape[1]) < 2, emit[0], never)
    for t in range(1, frames):
        stay, step = alpha, fnp.concatenate([unreached[:, :1], alpha[:, :-1]], axis=1)
        jump = fnp.where(skip, fnp.concatenate([unreached, alpha[:, :-2]], axis=1), never)
        moved = _safe_logsumexp(fnp.stack([stay, step, jump]), 0) + emit[t]
        alpha = fnp.where((t < in_len)[:, None], moved, alpha)  # a sequence's frames end at its input length
    last = 2 * tgt_len  # the final blank; the final label is one before it
    at = lambda s: fnp.take_along_axis(alpha, s[:, None], axis=1)[:, 0]  # noqa: E731  (alpha at each s[n])
    ends = fnp.stack([at(last), fnp.where(tgt_len > 0, at(fnp.maximum(last - 1, 0)), never)])
    loss = -_safe_logsumexp(ends, 0)
    if zero_infinity:
        loss = fnp.where(fnp.isinf(loss), fnp.zeros((), loss.dtype), loss)
    if reduction == "mean":
        return fnp.mean(loss / fnp.astype(fnp.maximum(tgt_len, 1), loss.dtype))
    if reduction == "sum":
        return fnp.sum(loss)
    if reduction == "none":
        return loss[0] if unbatched else loss
    raise ValueError(f"reduction must be 'mean', 'sum' or 'none', got {reduction!r}")


CTCLoss = _loss_class("CTCLoss", ctc_loss, "nn.CTCLoss(blank=, reduction=, zero_infinity=): "
                      "criterion(log_probs, targets, input_lengths, target_lengths)", arity=4)
