"""Recurrent layers with PyTorch's equations, parameter layout and names (so torch state_dicts load):
LSTMCell, GRUCell, RNNCell, and the sequence layers LSTM, GRU and RNN (stacked, batch_first,
bidirectional, dropout between layers, an LSTM's proj_size).

A sequence layer runs its cell with fg.scan over time, so it differentiates like any code and
unrolls under jit.
"""
from __future__ import annotations

import math

import numpy as np

from .. import dtypes
from .. import numpy as fnp
from .. import random
from ..control import scan
from ..tree import tree_map
from . import _functional as F
from .module import Module
from .utils.rnn import PackedSequence, pad_packed_sequence, repack

_GATES = {"lstm": 4, "gru": 3, "rnn_tanh": 1, "rnn_relu": 1}


def _init(key, shape, hidden: int, dtype):
    bound = 1.0 / math.sqrt(hidden)
    return random.uniform(key, shape, dtype, -bound, bound)


def _cell_params(key, input_size: int, hidden_size: int, gates: int, bias: bool, dtype,
                 recurrent_size: int | None = None):
    """PyTorch's weight_ih, weight_hh, bias_ih, bias_hh; recurrent_size is the width of the state
    fed back (an LSTM's proj_size), hidden_size by default."""
    k1, k2, k3, k4 = random.split(key, 4)
    weights = (_init(k1, (gates * hidden_size, input_size), hidden_size, dtype),
               _init(k2, (gates * hidden_size, recurrent_size or hidden_size), hidden_size, dtype))
    biases = (_init(k3, (gates * hidden_size,), hidden_size, dtype),
              _init(k4, (gates * hidden_size,), hidden_size, dtype)) if bias else (None, None)
    return weights + biases


def _step(mode: str, x, state, w_ih, w_hh, b_ih, b_hh, w_hr=None):
    """One time step of the cell: (new state, output); an LSTM with w_hr projects its h (proj_size)."""
    h = state[0] if mode == "lstm" else state
    gi = F.linear(x, w_ih, b_ih)
    gh = F.linear(h, w_hh, b_hh)
    if mode == "lstm":
        i, f, g, o = fnp.split(gi + gh, 4, axis=-1)
        c = F.sigmoid(f) * state[1] + F.sigmoid(i) * fnp.tanh(g)
        h = F.sigmoid(o) * fnp.tanh(c)
        if w_hr is not None:
            h = F.linear(h, w_hr)
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


def _masked_step(mode: str, step, carry, params):
    """_step where the step lies inside the sequence (valid None: every step does); past a
    sequence's end its state is carried through unchanged, so a packed sequence ends at its length
    (and the reverse direction starts there)."""
    xt, valid = step
    new, y = _step(mode, xt, carry, *params)
    if valid is None:
        return new, y
    return tree_map(lambda n, old: fnp.where(valid, n, old), new, carry), y


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
    """A stack of cells run over time, each layer forward or both ways (bidirectional); each
    subclass names its equations as `mode`."""

    def __init__(self, input_size: int, hidden_size: int, num_layers: int = 1, bias: bool = True,
                 batch_first: bool = False, dropout: float = 0.0, bidirectional: bool = False, proj_size: int = 0, *,
                 key, dtype=dtypes.float32):
        name = type(self).__name__
        for what, value, low in (("input_size", input_size, 1), ("hidden_size", hidden_size, 1),
                                 ("num_layers", num_layers, 1), ("proj_size", proj_size, 0)):
            if not isinstance(value, int) or isinstance(value, bool) or value < low:
                raise ValueError(f"{name}: {what} must be an integer >= {low}, got {value!r}")
        if not 0.0 <= dropout <= 1.0:
            raise ValueError(f"{name}: dropout must be a probability in [0, 1], got {dropout}")
        if proj_size and self.mode != "lstm":
            raise ValueError(f"{name}: proj_size is an LSTM option (got {proj_size})")
        if proj_size >= hidden_size:
            raise ValueError(f"{name}: proj_size {proj_size} must be smaller than hidden_size {hidden_size}")
        self.input_size, self.hidden_size, self.num_layers = input_size, hidden_size, num_layers
        self.bias, self.batch_first, self.dropout = bias, batch_first, dropout
        self.bidirectional, self.proj_size = bidirectional, proj_size
        out_size, directions = proj_size or hidden_size, 2 if bidirectional else 1
        keys = random.split(key, num_layers * directions)
        for layer in range(num_layers):
            for direction, suffix in enumerate(self._suffixes()):
                k = keys[layer * directions + direction]
                params = _cell_params(k, input_size if layer == 0 else out_size * directions, hidden_size,
                                      _GATES[self.mode], bias, dtype, recurrent_size=out_size)
                for what, value in zip(("weight_ih", "weight_hh", "bias_ih", "bias_hh"), params):
                    if value is not None:
                        setattr(self, f"{what}_l{layer}{suffix}", value)
                if proj_size:
                    setattr(self, f"weight_hr_l{layer}{suffix}",
                            _init(random.fold_in(k, 1), (proj_size, hidden_size), hidden_size, dtype))

    def _suffixes(self) -> tuple[str, ...]:
        return ("", "_reverse") if self.bidirectional else ("",)

    def _cell(self, layer: int, suffix: str):
        get = lambda name: getattr(self, f"{name}_l{layer}{suffix}", None)  # noqa: E731
        return get("weight_ih"), get("weight_hh"), get("bias_ih"), get("bias_hh"), get("weight_hr")

    def __call__(self, x, state=None, *, key=None):
        """x: (L, N, input) or (N, L, input) with batch_first, unbatched (L, input), or a
        PackedSequence (each sequence run to its own length). Returns (outputs of the last layer for
        every step, both directions' side by side, packed like a packed input; final state (h_n, c_n)
        for LSTM or h_n), each final state of shape (num_layers * directions, N, size), layer by layer
        with the forward direction first, batch in the input's original order. With a key (training)
        dropout zeroes each layer's outputs but the last's, as PyTorch's dropout option."""
        packed = x if isinstance(x, PackedSequence) else None
        if packed is not None:
            x, lengths = pad_packed_sequence(packed)
        x = fnp.asarray(x)
        name = type(self).__name__
        if x.ndim not in (2, 3) or x.shape[-1] != self.input_size:
            raise ValueError(f"{name}: expected input (L, N, {self.input_size}) (or batch_first, or "
                             f"unbatched (L, {self.input_size})), got shape {x.shape}")
        unbatched = x.ndim == 2
        seq = (fnp.expand_dims(x, 1) if unbatched else
               (fnp.swapaxes(x, 0, 1) if self.batch_first and packed is None else x))
        valid = None if packed is None else fnp.asarray(
            (np.arange(seq.shape[0])[:, None] < lengths[None, :])[..., None])  # (L, N, 1): inside each sequence
        lstm, suffixes = self.mode == "lstm", self._suffixes()
        h, c = self._initial_state(state, seq, unbatched, len(suffixes))
        layer_keys = random.split(key, self.num_layers) if key is not None and self.dropout else None
        finals = []
        for layer in range(self.num_layers):
            outputs = []
            for direction, suffix in enumerate(suffixes):
                i = layer * len(suffixes) + direction
                params = self._cell(layer, suffix)
                last, ys = scan(lambda carry, step, p=params: _masked_step(self.mode, step, carry, p),
                                (h[i], c[i]) if lstm else h[i], (seq, valid), reverse=direction == 1)
                finals.append(last)
                outputs.append(ys)
            seq = outputs[0] if len(outputs) == 1 else fnp.concatenate(outputs, axis=-1)
            if layer_keys is not None and layer < self.num_layers - 1:
                seq = F.dropout(seq, self.dropout, layer_keys[layer])
        final = ((fnp.stack([f[0] for f in finals]), fnp.stack([f[1] for f in finals])) if lstm
                 else fnp.stack(finals))
        if packed is not None:
            return repack(seq, packed), final
        if unbatched:
            return fnp.squeeze(seq, 1), (tuple(fnp.squeeze(f, 1) for f in final) if lstm else fnp.squeeze(final, 1))
        return (fnp.swapaxes(seq, 0, 1) if self.batch_first else seq), final

    def _initial_state(self, state, seq, unbatched: bool, directions: int):
        """(h_0, c_0) as (layers * directions, N, size) arrays (c_0 None but for LSTM): zeros
        without a state, else the given one, whose shapes must be PyTorch's."""
        lstm, batch = self.mode == "lstm", seq.shape[1]
        stacked = self.num_layers * directions
        h_shape, c_shape = (stacked, batch, self.proj_size or self.hidden_size), (stacked, batch, self.hidden_size)
        if state is None:
            h = fnp.zeros(h_shape, seq.dtype, device=seq.device)
            return h, (fnp.zeros(c_shape, seq.dtype, device=seq.device) if lstm else None)
        name = type(self).__name__
        if lstm and not (isinstance(state, (tuple, list)) and len(state) == 2):
            raise TypeError(f"{name}: the initial state is a pair (h_0, c_0), got {type(state).__name__}")
        given = [fnp.asarray(s) for s in (state if lstm else (state,))]
        for what, s, shape in zip(("h_0", "c_0"), given, (h_shape, c_shape)):
            expected = (shape[0], shape[2]) if unbatched else shape
            if tuple(s.shape) != expected:
                raise ValueError(f"{name}: expected {what} of shape {expected}, got {tuple(s.shape)}")
        if unbatched:
            given = [fnp.expand_dims(s, 1) for s in given]
        return given[0], (given[1] if lstm else None)


class LSTM(_Recurrent):
    """torch.nn.LSTM: parameters weight_ih_l{k}, weight_hh_l{k}, bias_ih_l{k}, bias_hh_l{k}
    (and weight_hr_l{k} with proj_size), each with a _reverse twin when bidirectional."""
    mode = "lstm"


class GRU(_Recurrent):
    mode = "gru"


class RNN(_Recurrent):
    def __init__(self, input_size: int, hidden_size: int, num_layers: int = 1, nonlinearity: str = "tanh",
                 bias: bool = True, batch_first: bool = False, dropout: float = 0.0, bidirectional: bool = False, *,
                 key, dtype=dtypes.float32):
        if nonlinearity not in ("tanh", "relu"):
            raise ValueError(f"nonlinearity must be 'tanh' or 'relu', got {nonlinearity!r}")
        self.mode = f"rnn_{nonlinearity}"
        super().__init__(input_size, hidden_size, num_layers, bias, batch_first, dropout, bidirectional, key=key,
                         dtype=dtype)
