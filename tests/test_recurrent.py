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


def reference_both_ways(layer, x, h0, c0):
    """PyTorch's bidirectional, projected LSTM written out: each layer runs its cell forward and
    backward over the sequence, outputs side by side, h projected by weight_hr."""
    seq, finals_h, finals_c = x, [], []
    for k in range(layer.num_layers):
        outputs = []
        for d, suffix in enumerate(("", "_reverse")):
            p = [np.asarray(getattr(layer, f"{n}_l{k}{suffix}"))
                 for n in ("weight_ih", "weight_hh", "bias_ih", "bias_hh", "weight_hr")]
            h, c = h0[2 * k + d], c0[2 * k + d]
            outs = [None] * len(seq)
            for t in (reversed(range(len(seq))) if d else range(len(seq))):
                (h, c), _ = ref_step("lstm", seq[t], (h, c), *p[:4])
                h = h @ p[4].T
                outs[t] = h
            outputs.append(np.stack(outs))
            finals_h.append(h)
            finals_c.append(c)
        seq = np.concatenate(outputs, axis=-1)
    return seq, np.stack(finals_h), np.stack(finals_c)


def test_bidirectional_projected_lstm_matches_the_equations():
    layer = nn.LSTM(4, 6, 2, bidirectional=True, proj_size=3, key=fg.random.key(4), dtype=fg.float64)
    assert list(layer.state_dict()) == [
        f"{n}_l{k}{s}" for k in range(2) for s in ("", "_reverse")
        for n in ("weight_ih", "weight_hh", "bias_ih", "bias_hh", "weight_hr")]
    assert layer.weight_ih_l1_reverse.shape == (24, 6) and layer.weight_hh_l0.shape == (24, 3)
    h0, c0 = RNG.standard_normal((4, 3, 3)), RNG.standard_normal((4, 3, 6))
    out, (h, c) = layer(X, (h0, c0))
    expected, eh, ec = reference_both_ways(layer, X, h0, c0)
    assert out.shape == (5, 3, 6) and h.shape == (4, 3, 3) and c.shape == (4, 3, 6)
    assert_close(out, expected, rtol=1e-12)
    assert_close(h, eh, rtol=1e-12)
    assert_close(c, ec, rtol=1e-12)
    out1, (h1, _) = layer(X[:, 1], (h0[:, 1], c0[:, 1]))  # unbatched
    assert_close(out1, expected[:, 1], rtol=1e-12)
    assert_close(h1, eh[:, 1], rtol=1e-12)
    fg.check_grads(lambda m, x: fnp.sum(m(x)[0] ** 2), (layer, X[:3]), order=1)


@pytest.mark.parametrize("cls", [nn.GRU, nn.RNN])
def test_bidirectional_gru_and_rnn_run_the_reverse_cell_backwards(cls):
    layer = cls(4, 5, bidirectional=True, key=fg.random.key(5), dtype=fg.float64)
    forward, backward = (cls(4, 5, key=fg.random.key(6), dtype=fg.float64) for _ in range(2))
    forward = forward.load_state_dict({k: v for k, v in layer.state_dict().items() if "reverse" not in k})
    backward = backward.load_state_dict({k.replace("_reverse", ""): v for k, v in layer.state_dict().items()
                                         if "reverse" in k})
    out, h = layer(X)
    f_out, f_h = forward(X)
    b_out, b_h = backward(X[::-1])
    assert_close(out, np.concatenate([f_out.numpy(), b_out.numpy()[::-1]], axis=-1), rtol=1e-12)
    assert_close(h, np.concatenate([f_h.numpy(), b_h.numpy()]), rtol=1e-12)


def test_dropout_between_layers_only_when_training():
    layer = nn.GRU(4, 5, 2, dropout=1.0, key=fg.random.key(7), dtype=fg.float64)
    out, _ = layer(X, key=fg.random.key(8))  # every output of layer 0 dropped: layer 1 reads zeros
    second = nn.GRU(5, 5, key=fg.random.key(9), dtype=fg.float64).load_state_dict(
        {k.replace("_l1", "_l0"): v for k, v in layer.state_dict().items() if "_l1" in k})
    assert_close(out, second(np.zeros((5, 3, 5)))[0], rtol=1e-12)
    evaluation, _ = layer(X)
    assert_close(evaluation, reference(layer, "gru", X)[0], rtol=1e-12)
    half = nn.GRU(4, 5, 2, dropout=0.5, key=fg.random.key(7), dtype=fg.float64)
    a, b = half(X, key=fg.random.key(1))[0], half(X, key=fg.random.key(2))[0]
    assert not np.allclose(a, b) and np.array_equal(a, half(X, key=fg.random.key(1))[0])


def test_recurrent_options_and_states_are_checked():
    with pytest.raises(ValueError, match="proj_size is an LSTM option"):
        nn.GRU(4, 5, proj_size=2, key=fg.random.key(0))
    with pytest.raises(ValueError, match="proj_size 5 must be smaller than hidden_size 5"):
        nn.LSTM(4, 5, proj_size=5, key=fg.random.key(0))
    with pytest.raises(ValueError, match="dropout"):
        nn.LSTM(4, 5, dropout=1.5, key=fg.random.key(0))
    with pytest.raises(ValueError, match="num_layers"):
        nn.RNN(4, 5, 0, key=fg.random.key(0))
    lstm = nn.LSTM(4, 6, 2, bidirectional=True, proj_size=3, key=fg.random.key(0))
    with pytest.raises(ValueError, match=r"h_0 of shape \(4, 3, 3\), got \(2, 3, 3\)"):
        lstm(X, (np.zeros((2, 3, 3)), np.zeros((4, 3, 6))))
    with pytest.raises(ValueError, match=r"c_0 of shape \(4, 3, 6\), got \(4, 3, 3\)"):
        lstm(X, (np.zeros((4, 3, 3)), np.zeros((4, 3, 3))))
    with pytest.raises(TypeError, match=r"pair \(h_0, c_0\)"):
        lstm(X, np.zeros((4, 3, 3)))
    with pytest.raises(ValueError, match=r"h_0 of shape \(1, 6\)"):
        nn.GRU(4, 6, key=fg.random.key(0))(X[:, 0], np.zeros((1, 3, 6)))
