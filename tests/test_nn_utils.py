"""nn.utils: gradient clipping and parameter vectors against NumPy formulas; nn.utils.rnn's packing
against hand-built layouts, and recurrent layers on packed batches against each sequence run alone."""
import math

import numpy as np
import pytest

import funcgrad as fg
import funcgrad.numpy as fnp
from funcgrad import nn
from funcgrad.nn import utils
from funcgrad.nn.utils import rnn

from .helpers import assert_close

RNG = np.random.default_rng(5)


def test_clip_grad_norm_and_value_are_pytorchs_formulas():
    grads = {"a": RNG.standard_normal((3, 4)), "b": RNG.standard_normal(5)}
    flat = np.concatenate([grads["a"].ravel(), grads["b"]])
    for norm_type, total in ((2.0, np.linalg.norm(flat)), (1.0, np.abs(flat).sum()), (math.inf, np.abs(flat).max()),
                             (3.0, np.sum(np.abs(flat) ** 3) ** (1 / 3))):
        clipped, norm = utils.clip_grad_norm(grads, 0.5, norm_type)
        assert_close(norm, total, rtol=1e-12)
        assert_close(clipped["a"], grads["a"] * min(1.0, 0.5 / (total + 1e-6)), rtol=1e-12)
    same, _ = utils.clip_grad_norm(grads, 100.0)
    assert_close(same["b"], grads["b"])  # under the limit: unchanged
    assert_close(utils.clip_grad_value(grads, 0.3)["a"], np.clip(grads["a"], -0.3, 0.3))
    with pytest.raises(RuntimeError, match="non-finite"):
        utils.clip_grad_norm({"a": np.array([np.inf, 1.0])}, 1.0, error_if_nonfinite=True)
    vec = utils.parameters_to_vector(grads)
    assert_close(vec, np.concatenate([grads["a"].ravel(), grads["b"]]))  # flattening order: keys sorted
    back = utils.vector_to_parameters(vec * 2, grads)
    assert_close(back["a"], 2 * grads["a"])
    assert_close(back["b"], 2 * grads["b"])
    with pytest.raises(ValueError, match="hold 17 values"):
        utils.vector_to_parameters(np.zeros(16), grads)


SEQUENCES = [RNG.standard_normal((n, 3)) for n in (3, 5, 1, 5, 2)]


def test_packing_lays_out_the_steps_longest_first():
    packed = rnn.pack_sequence(SEQUENCES, enforce_sorted=False)
    order = [1, 3, 0, 4, 2]  # by decreasing length, ties in their order
    assert packed.sorted_indices.tolist() == order and packed.unsorted_indices.tolist() == np.argsort(order).tolist()
    assert packed.batch_sizes.tolist() == [5, 4, 3, 2, 2]
    expected = [SEQUENCES[i][t] for t in range(5) for i in order if t < len(SEQUENCES[i])]
    assert_close(packed.data, np.stack(expected))
    padded, lengths = rnn.pad_packed_sequence(packed, batch_first=True, padding_value=-1.0, total_length=7)
    assert lengths.tolist() == [3, 5, 1, 5, 2] and padded.shape == (5, 7, 3)
    for i, s in enumerate(SEQUENCES):
        assert_close(padded[i, :len(s)], s)
        assert (padded.numpy()[i, len(s):] == -1).all()
    assert all(np.array_equal(a.numpy(), b) for a, b in zip(rnn.unpack_sequence(packed), SEQUENCES))
    left = rnn.pad_sequence(SEQUENCES, padding_side="left")
    assert left.shape == (5, 5, 3) and np.array_equal(left.numpy()[-1, 2], SEQUENCES[2][0])
    unpadded = rnn.unpad_sequence(rnn.pad_sequence(SEQUENCES), [3, 5, 1, 5, 2])
    assert all(np.array_equal(a.numpy(), b) for a, b in zip(unpadded, SEQUENCES))
    with pytest.raises(RuntimeError, match="sorted in decreasing order"):
        rnn.pack_sequence(SEQUENCES)
    with pytest.raises(ValueError, match="must be positive"):
        rnn.pack_padded_sequence(np.zeros((4, 2, 3)), [3, 0])
    with pytest.raises(ValueError, match="exceeds the 4 time steps"):
        rnn.pack_padded_sequence(np.zeros((4, 2, 3)), [5, 1])
    with pytest.raises(TypeError, match="concrete"):
        fg.jit(lambda lengths: rnn.pack_padded_sequence(np.zeros((4, 2, 3)), lengths).data)(np.array([3, 1]))


@pytest.mark.parametrize("cls,options", [(nn.LSTM, dict(num_layers=2, bidirectional=True)),
                                         (nn.GRU, dict(bidirectional=True)), (nn.LSTM, dict(proj_size=2)),
                                         (nn.RNN, dict(batch_first=True))])
def test_recurrent_layers_run_each_packed_sequence_to_its_length(cls, options):
    layer = cls(3, 4, key=fg.random.key(1), dtype=fg.float64, **options)
    packed = rnn.pack_sequence(SEQUENCES, enforce_sorted=False)
    out, final = layer(packed)
    assert isinstance(out, rnn.PackedSequence) and out.batch_sizes.tolist() == packed.batch_sizes.tolist()
    outputs = rnn.unpack_sequence(out)
    for i, s in enumerate(SEQUENCES):  # the same layer on the sequence alone (unbatched)
        alone_out, alone_final = layer(s)
        assert_close(outputs[i], alone_out, rtol=1e-12)
        for got, want in zip(fg.tree_leaves(final), fg.tree_leaves(alone_final)):
            assert_close(got[:, i], want, rtol=1e-12)
    grads = fg.grad(lambda m: fnp.sum(m(packed)[0].data ** 2))(layer)
    fg.check_grads(lambda m: fnp.sum(m(packed)[0].data ** 2), (layer,), order=1, modes=("rev",))
    assert fg.tree_leaves(grads)[0].shape == fg.tree_leaves(layer)[0].shape
