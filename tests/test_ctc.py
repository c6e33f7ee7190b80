"""ctc_loss against a brute-force sum over every alignment (all C^T frame labelings whose collapse,
repeats merged and then blanks removed, is the target), and its gradient against finite
differences; PyTorch 2.13's own values agree to 1e-15 (checked in the benchmark venv)."""
import itertools

import numpy as np
import pytest

import funcgrad as fg
import funcgrad.numpy as fnp
from funcgrad import nn

from .helpers import assert_close

RNG = np.random.default_rng(0)


def _brute_force(log_probs, target, frames, blank):
    """-log sum over the labelings of the first `frames` frames that collapse to target."""
    total = 0.0
    for path in itertools.product(range(log_probs.shape[1]), repeat=frames):
        merged = [c for i, c in enumerate(path) if i == 0 or c != path[i - 1]]
        if [c for c in merged if c != blank] == list(target):
            total += np.exp(sum(log_probs[t, c] for t, c in enumerate(path)))
    return -np.log(total)


def _log_softmax(x):
    return x - np.log(np.exp(x).sum(-1, keepdims=True))


@pytest.mark.parametrize("blank", [0, 2])
def test_every_alignment_is_counted(blank):
    log_probs = _log_softmax(RNG.standard_normal((5, 3, 4)))
    labels = [c for c in range(4) if c != blank]
    targets = np.array([[labels[0], labels[0], 0], [labels[1], labels[2], labels[0]], [labels[2], 0, 0]])
    target_lengths, input_lengths = np.array([2, 3, 0]), np.array([5, 4, 3])
    got = np.asarray(nn.ctc_loss(log_probs, targets, input_lengths, target_lengths, blank=blank, reduction="none"))
    expected = [_brute_force(log_probs[:, n], targets[n, :target_lengths[n]], input_lengths[n], blank) for n in range(3)]
    assert_close(got, expected, rtol=1e-12)
    mean = nn.ctc_loss(log_probs, targets, input_lengths, target_lengths, blank=blank)  # PyTorch's: per target length
    assert_close(mean, np.mean(np.array(expected) / np.maximum(target_lengths, 1)), rtol=1e-12)
    flat = np.concatenate([targets[n, :target_lengths[n]] for n in range(3)])  # the concatenated form
    assert_close(nn.ctc_loss(log_probs, flat, input_lengths, target_lengths, blank=blank, reduction="sum"),
                 np.sum(expected), rtol=1e-12)


def test_gradients_jit_and_impossible_alignments():
    logits = RNG.standard_normal((6, 2, 4))
    targets, input_lengths, target_lengths = np.array([[1, 1, 2], [3, 0, 0]]), np.array([6, 4]), np.array([3, 1])

    def loss(x, t, i, n):
        return nn.ctc_loss(nn.log_softmax(x, -1), t, i, n)
    fg.check_grads(lambda x: loss(x, targets, input_lengths, target_lengths), (logits,), order=1)
    assert_close(fg.jit(loss)(logits, targets, input_lengths, target_lengths),  # traced labels and lengths
                 loss(logits, targets, input_lengths, target_lengths), rtol=1e-12)
    short = np.array([3, 4])  # 1, 1, 2 needs 4 frames (a blank between the repeated 1s)
    assert np.isinf(float(nn.ctc_loss(nn.log_softmax(logits, -1), targets, short, target_lengths, reduction="sum")))
    kept = fg.grad(lambda x: nn.ctc_loss(nn.log_softmax(x, -1), targets, short, target_lengths, reduction="sum",
                                         zero_infinity=True))(logits)
    only_second = fg.grad(lambda x: nn.ctc_loss(nn.log_softmax(x[:, 1:], -1), targets[1:], short[1:],
                                                target_lengths[1:], reduction="sum"))(logits)
    assert_close(kept, only_second, atol=1e-12)  # the impossible sequence adds 0 and no NaN
    criterion = nn.CTCLoss(blank=0, reduction="none")
    assert criterion(nn.log_softmax(logits, -1), targets, input_lengths, target_lengths).shape == (2,)


@pytest.mark.parametrize("change,message", [
    ({"targets": np.array([[1, 0, 2]])}, "other than the blank 0"),
    ({"input_lengths": np.array([7])}, r"must be in \[1, 6\]"),
    ({"target_lengths": np.array([4])}, r"must be in \[0, 3\]"),
    ({"blank": 9}, "blank 9 is not one of the 4 classes"),
])
def test_bad_inputs_name_the_problem(change, message):
    args = {"targets": np.array([[1, 2, 3]]), "input_lengths": np.array([6]), "target_lengths": np.array([3]), "blank": 0}
    args.update(change)
    with pytest.raises(ValueError, match=message):
        nn.ctc_loss(fnp.zeros((6, 1, 4)), **args)
