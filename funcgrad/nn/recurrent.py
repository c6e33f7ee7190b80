"""Recurrent layers with PyTorch's equations, parameter layout and names (so torch state_dicts load):
LSTMCell, GRUCell, RNNCell, and the sequence layers LSTM, GRU and RNN (stacked, batch_first).

A sequence layer runs its cell with fg.scan over time, so it differentiates like any code and
unrolls under jit.
"""
from __future__ import annotations

import math

from .. import dtypes
from .. import numpy as fnp
from .. import random
from ..control import scan
from . import _functional as F
from .module import Module

_GATES = {"lstm": 4, "gru": 3, "rnn_tanh": 1, "rnn_relu": 1}


def _init(key, shape, hidden: int, dtype):
    bound = 1.0 / math.sqrt(hidden)
    return random.uniform(key, shape, dtype, -bound, bound)


def _cell_params(key, input_size: int, hidden_size: int, gates: int, bias: bool, dtype):
    k1, k2, k3, k4 = random.split(key, 4)
    weights = (_init(k1, (gates * hidden_size, input_size), hidden_size, dtype),
               _init(k2, (gates * hidden_size, hidden_size), hidden_size, dtype))
    biases = (_init(k3, (gates * hidden_size,), hidden_size, dtype),
              _init(k4, (gates * hidden_size,), hidden_size, dtype)) if bias else (None, None)
    return weights + biases


def _step(mode: str, x, state, w_ih, w_hh, b_ih, b_hh):
    """One time step of the cell: (new state, output)."""
    h = state[0] if mode == "lstm" else state
    gi = F.linear(x, w_ih, b_ih)
    gh = F.linear(h, w_hh, b_hh)
    if mode == "lstm":
        i, f, g, o = fnp.split(gi + gh, 4, axis=-1)
        c = F.sigmoid(f) * state[1] + F.sigmoid(i) * fnp.tanh(g)
        h = F.sigmoid(o) * fnp.tanh(c)
        return (h, c), h
    if mode == "gru":
        ir, iz, i_n = fnp.split(gi, 3, axis=-1)
        hr, hz, h_n = fnp.split(gh, 3, axis=-1)
        r, z = F.sigmoid(ir + hr), F.sigmoid(iz + hz)
        n = fnp.tanh(i_n + r * h_n)
        h = (1.0 - z) * n + z * h
        return h, h
    h = fnp.tanh(gi + gh) if mode == "rnn_tanh" else F.relu(gi + gh)
    return h, h


class _Cell(Module):
    """A cell; each subclass names its equations as `mode` (a key of _GATES)."""

    def __init__(self, input_size: int, hidden_size: int, bias: bool = True, *, key, dtype=dtypes.float32):
        self.input_size, self.hidden_size = input_size, hidden_size
        self.weight_ih, self.weight_hh, self.bias_ih, self.bias_hh = _cell_params(
            key, input_size, hidden_size, _GATES[self.mode], bias, dtype)

    def _zeros(self, x):
        return fnp.zeros(x.shape[:-1] + (self.hidden_size,), x.dtype, device=x.device)

    def __call__(self, x, state=None, *, key=None):
        x = fnp.asarray(x)
        if x.shape[-1] != self.input_size:
            raise ValueError(f"{type(self).__name__}: input has {x.shape[-1]} features, expected {self.input_size}")
        if state is None:
            state = (self._zeros(x), self._zeros(x)) if self.mode == "lstm" else self._zeros(x)
        new, _ = _step(self.mode, x, state, self.weight_ih, self.weight_hh, self.bias_ih, self.bias_hh)
        return new


class LSTMCell(_Cell):
    """(h, c) = cell(x, (h, c)); gates i, f, g, o stacked in the weights, as torch.nn.LSTMCell."""
    mode = "lstm"


class GRUCell(_Cell):
    """h = cell(x, h), with PyTorch's r, z, n gates (the reset gate scales W_hn h + b_hn)."""
    mode = "gru"


class RNNCell(_Cell):
    """h = tanh(W_ih x + b_ih + W_hh h + b_hh) (or relu with nonlinearity='relu')."""

    def __init__(self, input_size: int, hidden_size: int, bias: bool = True, nonlinearity: str = "tanh", *, key,
                 dtype=dtypes.float32):
        if nonlinearity not in ("tanh", "relu"):
            raise ValueError(f"nonlinearity must be 'tanh' or 'relu', got {nonlinearity!r}")
        self.mode = f"rnn_{nonlinearity}"
        super().__init__(input_size, hidden_size, bias, key=key, dtype=dtype)


class _Recurrent(Module):
    """A stack of cells run over time; each subclass names its equations as `mode`."""

    def __init__(self, input_size: int, hidden_size: int, num_layers: int = 1, bias: bool = True,
                 batch_first: bool = False, *, key, dtype=dtypes.float32):
        self.input_size, self.hidden_size, self.num_layers = input_size, hidden_size, num_layers
        self.bias, self.batch_first = bias, batch_first
        for layer, k in enumerate(random.split(key, num_layers)):
            params = _cell_params(k, input_size if layer == 0 else hidden_size, hidden_size, _GATES[self.mode],
                                  bias, dtype)
            for name, value in zip(("weight_ih", "weight_hh", "bias_ih", "bias_hh"), params):
                if value is not None:
                    setattr(self, f"{name}_l{layer}", value)

    def _layer(self, layer: int):
        get = lambda name: getattr(self, f"{name}_l{layer}", None)  # noqa: E731
        return get("weight_ih"), get("weight_hh"), get("bias_ih"), get("bias_hh")

    def __call__(self, x, state=None, *, key=None):
        """x: (L, N, input) or (N, L, input) with batch_first, or unbatched (L, input). Returns
        (outputs of the last layer for every step, final state (h_n, c_n) for LSTM or h_n),
        each final state of shape (num_layers, N, hidden)."""
        x = fnp.asarray(x)
        if x.ndim not in (2, 3) or x.shape[-1] != self.input_size:
            raise ValueError(f"{type(self).__name__}: expected input (L, N, {self.input_size}) (or batch_first, or "
                             f"unbatched (L, {self.input_size})), got shape {x.shape}")
        unbatched = x.ndim == 2
        seq = fnp.expand_dims(x, 1) if unbatched else (fnp.swapaxes(x, 0, 1) if self.batch_first else x)
        batch = seq.shape[1]
        lstm = self.mode == "lstm"
        if state is None:
            zeros = fnp.zeros((self.num_layers, batch, self.hidden_size), seq.dtype, device=seq.device)
            state = (zeros, zeros) if lstm else zeros
        elif unbatched:
            state = tuple(fnp.expand_dims(s, 1) for s in state) if lstm else fnp.expand_dims(state, 1)
        finals = []
        for layer in range(self.num_layers):
            params = self._layer(layer)
            start = (state[0][layer], state[1][layer]) if lstm else state[layer]
            last, seq = scan(lambda carry, xt, p=params: _step(self.mode, xt, carry, *p), start, seq)
            finals.append(last)
        if lstm:
            final = (fnp.stack([f[0] for f in finals]), fnp.stack([f[1] for f in finals]))
        else:
            final = fnp.stack(finals)
        if unbatched:
            return fnp.squeeze(seq, 1), (tuple(fnp.squeeze(f, 1) for f in final) if lstm else fnp.squeeze(final, 1))
        return (fnp.swapaxes(seq, 0, 1) if self.batch_first else seq), final


class LSTM(_Recurrent):
    """torch.nn.LSTM: parameters weight_ih_l{k}, weight_hh_l{k}, bias_ih_l{k}, bias_hh_l{k}."""
    mode = "lstm"


class GRU(_Recurrent):
    mode = "gru"


class RNN(_Recurrent):
    def __init__(self, input_size: int, hidden_size: int, num_layers: int = 1, nonlinearity: str = "tanh",
                 bias: bool = True, batch_first: bool = False, *, key, dtype=dtypes.float32):
        if nonlinearity not in ("tanh", "relu"):
            raise ValueError(f"nonlinearity must be 'tanh' or 'relu', got {nonlinearity!r}")
        self.mode = f"rnn_{nonlinearity}"
        super().__init__(input_size, hidden_size, num_layers, bias, batch_first, key=key, dtype=dtype)
