"""Variable-length sequences, as torch.nn.utils.rnn: padding lists of sequences into one array, and
PackedSequence (the valid time steps only, longest sequences first) for the recurrent layers,
which run each sequence to its own length. Lengths must be concrete (PyTorch keeps them on the CPU);
the packed data is an array of the computation, so gradients flow through packing."""
from __future__ import annotations

from typing import NamedTuple, Sequence

import numpy as np

from ... import numpy as fnp
from ...array import Array
from ...tree import register_pytree_node

__all__ = ["PackedSequence", "pad_sequence", "unpad_sequence", "pack_padded_sequence", "pad_packed_sequence",
           "pack_sequence", "unpack_sequence"]


class PackedSequence(NamedTuple):
    """data: the steps of every sequence, time step by time step, each step's sequences longest
    first; batch_sizes[t]: how many sequences reach step t; sorted_indices: the original batch
    positions in that order (None when the batch was given sorted); unsorted_indices: its inverse."""
    data: Array
    batch_sizes: np.ndarray
    sorted_indices: np.ndarray | None = None
    unsorted_indices: np.ndarray | None = None

    def lengths(self) -> np.ndarray:
        """Each sequence's length, in the original batch order."""
        sorted_lengths = np.sum(np.arange(self.batch_sizes[0])[:, None] < self.batch_sizes[None, :], axis=1)
        return sorted_lengths if self.unsorted_indices is None else sorted_lengths[self.unsorted_indices]


def _flatten(packed: PackedSequence):
    aux = tuple(None if a is None else tuple(int(v) for v in a)
                for a in (packed.batch_sizes, packed.sorted_indices, packed.unsorted_indices))
    return [packed.data], aux


def _unflatten(aux, children):
    return PackedSequence(children[0], *(None if a is None else np.asarray(a, np.int64) for a in aux))


register_pytree_node(PackedSequence, _flatten, _unflatten)


def _concrete_lengths(lengths, batch: int, what: str) -> np.ndarray:
    known = fnp.concrete_or_none(fnp.asarray(lengths))
    if known is None:
        raise TypeError(f"{what}: the lengths must be concrete (PyTorch keeps them on the CPU), not traced under jit")
    known = np.asarray(known).reshape(-1)
    if known.shape[0] != batch:
        raise ValueError(f"{what}: {known.shape[0]} lengths for a batch of {batch} sequences")
    if known.size and known.min() <= 0:
        raise ValueError(f"{what}: every length must be positive (PyTorch packs no empty sequence), "
                         f"got {known.tolist()}")
    if not np.array_equal(known, np.floor(known)):
        raise ValueError(f"{what}: lengths must be integers, got {known.tolist()}")
    return known.astype(np.int64)


def pad_sequence(sequences: Sequence, batch_first: bool = False, padding_value: float = 0.0,
                 padding_side: str = "right") -> Array:
    """Sequences of shapes (L_i, *) stacked into (max L, B, *) (or (B, max L, *)), padded with
    padding_value on the right (or the left)."""
    if padding_side not in ("right", "left"):
        raise ValueError(f"Expected padding_side to be one of left or right, but got {padding_side}.")
    sequences = [fnp.asarray(s) for s in sequences]
    if not sequences:
        raise ValueError("pad_sequence: received an empty list of sequences")
    trailing = {tuple(s.shape[1:]) for s in sequences}
    if len(trailing) != 1:
        raise ValueError(f"pad_sequence: the sequences' shapes after the first axis differ: {sorted(trailing)}")
    longest = max(s.shape[0] for s in sequences)
    dtype = fnp.result_type(*sequences)

    def padded(s):
        widths = [(0, longest - s.shape[0]) if padding_side == "right" else (longest - s.shape[0], 0)]
        return fnp.pad(fnp.astype(s, dtype), widths + [(0, 0)] * (s.ndim - 1), constant_values=padding_value)
    out = fnp.stack([padded(s) for s in sequences], axis=0)
    return out if batch_first else fnp.swapaxes(out, 0, 1)


def unpad_sequence(padded_sequences, lengths, batch_first: bool = False) -> list:
    """The inverse of pad_sequence (right padding): each sequence cut to its length."""
    padded_sequences = fnp.asarray(padded_sequences)
    batch_major = padded_sequences if batch_first else fnp.swapaxes(padded_sequences, 0, 1)
    lengths = _concrete_lengths(lengths, batch_major.shape[0], "unpad_sequence")
    return [batch_major[i, :int(n)] for i, n in enumerate(lengths)]


def pack_padded_sequence(input, lengths, batch_first: bool = False, enforce_sorted: bool = True) -> PackedSequence:
    """A padded batch (L, B, *) (or (B, L, *)) and each sequence's length to a PackedSequence; with
    enforce_sorted=False the batch is sorted by decreasing length first (ties keep their order)."""
    padded = fnp.asarray(input)
    time_major = fnp.swapaxes(padded, 0, 1) if batch_first else padded
    lengths = _concrete_lengths(lengths, time_major.shape[1], "pack_padded_sequence")
    if lengths.size and lengths.max() > time_major.shape[0]:
        raise ValueError(f"pack_padded_sequence: a length {int(lengths.max())} exceeds the {time_major.shape[0]} "
                         f"time steps of the input")
    if enforce_sorted:
        if np.any(np.diff(lengths) > 0):
            raise RuntimeError("`lengths` array must be sorted in decreasing order when `enforce_sorted` is True. "
                               "You can pass `enforce_sorted=False` to pack_padded_sequence and/or pack_sequence to "
                               "sidestep this requirement if you do not need ONNX exportability.")
        order, sorted_indices, unsorted_indices = np.arange(lengths.size), None, None
    else:
        order = np.argsort(-lengths, kind="stable")
        sorted_indices, unsorted_indices = order, np.argsort(order)
    sorted_lengths = lengths[order]
    batch_sizes = np.sum(sorted_lengths[None, :] > np.arange(sorted_lengths[0])[:, None], axis=1).astype(np.int64)
    rows, columns = _positions(batch_sizes, sorted_indices)
    return PackedSequence(time_major[rows, columns], batch_sizes, sorted_indices, unsorted_indices)


def _positions(batch_sizes, sorted_indices) -> tuple[np.ndarray, np.ndarray]:
    """(time step, batch position) of each row of a PackedSequence's data."""
    order = np.arange(int(batch_sizes[0])) if sorted_indices is None else sorted_indices
    rows = np.concatenate([np.full(int(b), t) for t, b in enumerate(batch_sizes)])
    return rows, np.concatenate([order[:int(b)] for b in batch_sizes])


def repack(padded, like: PackedSequence) -> PackedSequence:
    """A time-major padded batch (L, B, *) packed as `like` is (the recurrent layers' outputs)."""
    rows, columns = _positions(like.batch_sizes, like.sorted_indices)
    return like._replace(data=fnp.asarray(padded)[rows, columns])


def pad_packed_sequence(sequence: PackedSequence, batch_first: bool = False, padding_value: float = 0.0,
                        total_length: int | None = None) -> tuple[Array, np.ndarray]:
    """(the padded batch (L, B, *) or (B, L, *) in the original order, each sequence's length)."""
    lengths = sequence.lengths()
    steps = len(sequence.batch_sizes)
    if total_length is not None:
        if total_length < steps:
            raise ValueError(f"Expected total_length to be at least the length of the longest sequence in input, "
                             f"but got total_length={total_length} and max sequence length being {steps}")
        steps = total_length
    batch = int(sequence.batch_sizes[0])
    rows, columns = _positions(sequence.batch_sizes, sequence.sorted_indices)
    data = sequence.data
    padded = fnp.full((steps, batch) + tuple(data.shape[1:]), padding_value, data.dtype, device=data.device)
    padded = padded.at[rows, columns].set(data)
    return (fnp.swapaxes(padded, 0, 1) if batch_first else padded), lengths


def pack_sequence(sequences: Sequence, enforce_sorted: bool = True) -> PackedSequence:
    """A list of sequences (L_i, *) packed directly."""
    lengths = np.array([fnp.asarray(s).shape[0] for s in sequences], np.int64)
    return pack_padded_sequence(pad_sequence(sequences), lengths, enforce_sorted=enforce_sorted)


def unpack_sequence(packed_sequences: PackedSequence) -> list:
    """The list of sequences a PackedSequence holds, in the original order."""
    padded, lengths = pad_packed_sequence(packed_sequences, batch_first=True)
    return unpad_sequence(padded, lengths, batch_first=True)
