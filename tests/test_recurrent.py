"""LSTM, GRU and RNN against NumPy transcriptions of PyTorch's equations; gradients, jit and names."""
import numpy as np
import pytest

import funcgrad as fg
import funcgrad.numpy as fnp
from funcgrad import nn

from .helpers import assert_close

RNG = np.random.default_rng(0)
X = RNG.standard_normal((5, 3, 4))  # (time, batch, features)


def sigmoid(v):
    return 1 / (1 + np.exp(-v))


def ref_step(mode, x, state, w_ih, w_hh, b_ih, b_hh):
    h = state[0] if mode == "lstm" else state
    gi, gh = x @ w_ih.T + b_ih, h @ w_hh.T + b_hh
    if mode == "lstm":
        i, f, g, o = np.split(gi + gh, 4, axis=-1)
        c = sigmoid(f) * state[1] + sigmoid(i) * np.tanh(g)
        h = sigmoid(o) * np.tanh(c)
        return (h, c), h
    if mode == "gru":
        (ir, iz, i_n), (hr, hz, h_n) = np.split(gi, 3, axis=-1), np.split(gh, 3, axis=-1)
        r, z = sigmoid(ir + hr), sigmoid(iz + hz)
        h = (1 - z) * np.tanh(i_n + r * h_n) + z * h
        return h, h
    h = np.tanh(gi + gh)
    return h, h


def reference(layer, mode, x):
    seq = x
    finals = []
    for k in range(layer.num_layers):
        p = [np.asarray(getattr(layer, f"{n}_l{k}")) for n in ("weight_ih", "weight_hh", "bias_ih", "bias_hh")]
        zeros = np.zeros((x.shape[1], layer.hidden_size))
        state = (zeros, zeros) if mode == "lstm" else zeros
        outs = []
        for t in range(seq.shape[0]):
            state, out = ref_step(mode, seq[t], state, *p)
            outs.append(out)
        seq = np.stack(outs)
        finals.append(state)
    return seq, finals


@pytest.mark.parametrize("cls,mode", [(nn.LSTM, "lstm"), (nn.GRU, "gru"), (nn.RNN, "rnn")])
def test_sequence_layers_match_the_equations(cls, mode):
    layer = cls(4, 6, 2, key=fg.random.key(0), dtype=fg.float64)
    out, final = layer(X)
    expected, finals = reference(layer, mode, X)
    assert_close(out, expected, rtol=1e-12)
    if mode == "lstm":
        assert_close(final[0], np.stack([f[0] for f in finals]), rtol=1e-12)
        assert_close(final[1], np.stack([f[1] for f in finals]), rtol=1e-12)
    else:
        assert_close(final, np.stack(finals), rtol=1e-12)
    batch_first = cls(4, 6, 2, batch_first=True, key=fg.random.key(0), dtype=fg.float64)
    assert_close(batch_first(np.swapaxes(X, 0, 1))[0], np.swapaxes(expected, 0, 1), rtol=1e-12)
    assert_close(layer(X[:, 1])[0], expected[:, 1], rtol=1e-12)  # unbatched input
    assert_close(fg.jit(lambda m, x: m(x)[0])(layer, X), expected, rtol=1e-12)


def test_cells_gradients_and_torch_names():
    cell = nn.LSTMCell(4, 3, key=fg.random.key(1), dtype=fg.float64)
    h, c = cell(X[0])
    p = [np.asarray(getattr(cell, n)) for n in ("weight_ih", "weight_hh", "bias_ih", "bias_hh")]
    zeros = np.zeros((3, 3))
    (rh, rc), _ = ref_step("lstm", X[0], (zeros, zeros), *p)
    assert_close(h, rh, rtol=1e-12)
    assert_close(c, rc, rtol=1e-12)
    gru = nn.GRUCell(4, 3, key=fg.random.key(2), dtype=fg.float64)
    fg.check_grads(lambda x, h0: gru(x, h0), (X[0], RNG.standard_normal((3, 3))), order=1)
    layer = nn.GRU(4, 5, key=fg.random.key(3), dtype=fg.float64)
    fg.check_grads(lambda m: fnp.sum(m(X[:3])[0] ** 2), (layer,), order=1)
    assert list(nn.LSTM(4, 6, 2, key=fg.random.key(0)).state_dict()) == [
        f"{n}_l{k}" for k in range(2) for n in ("weight_ih", "weight_hh", "bias_ih", "bias_hh")]
    with pytest.raises(ValueError, match="expected input"):
        layer(np.ones((5, 3, 7)))
