"""Datasets: the protocol, datasets over arrays, and the ways PyTorch users combine them (Subset,
ConcatDataset, StackDataset, random_split); streams (IterableDataset, ChainDataset)."""
from __future__ import annotations

import abc
import bisect
import itertools
import math
import operator
from typing import Any, Protocol, Sequence

import numpy as np

from .. import random


class Dataset(Protocol):
    """Anything with __len__ and __getitem__(int) -> example (an array or a tuple of them); a
    subclass (PyTorch's way) also concatenates with +."""

    def __len__(self) -> int: ...

    def __getitem__(self, index: int) -> Any: ...

    def __add__(self, other: "Dataset") -> "ConcatDataset":
        return ConcatDataset([self, other])


class IterableDataset(abc.ABC):
    """A stream of examples (torch.utils.data.IterableDataset): subclass it and define __iter__;
    the DataLoader reads it in its own order, batch_size examples at a time. + chains streams."""

    @abc.abstractmethod
    def __iter__(self):
        """The examples, one after another."""

    def __add__(self, other: "IterableDataset") -> "ChainDataset":
        return ChainDataset([self, other])


class ChainDataset(IterableDataset):
    """Streams one after another (torch.utils.data.ChainDataset)."""

    def __init__(self, datasets: Sequence):
        self.datasets = list(datasets)

    def __iter__(self):
        return itertools.chain.from_iterable(self.datasets)

    def __len__(self) -> int:
        return sum(len(d) for d in self.datasets)


class ArrayDataset(Dataset):
    """Examples are the rows of equally long arrays: ArrayDataset(x, y)[i] == (x[i], y[i])
    (PyTorch's TensorDataset, which is the same class here)."""

    def __init__(self, *arrays):
        if not arrays:
            raise ValueError("ArrayDataset needs at least one array")
        self.arrays = [np.asarray(a) for a in arrays]
        lengths = {len(a) for a in self.arrays}
        if len(lengths) != 1:
            raise ValueError(f"ArrayDataset arrays differ in length: {[len(a) for a in self.arrays]}")

    def __len__(self) -> int:
        return len(self.arrays[0])

    def __getitem__(self, index):
        return tuple(a[index] for a in self.arrays)

    def get_batch(self, indices: np.ndarray) -> tuple:
        """A whole batch by fancy indexing, without a per-example collate."""
        return tuple(a[indices] for a in self.arrays)


TensorDataset = ArrayDataset


def checked_index(index, length: int, kind: str = "index", of: str = "dataset", from_end: bool = False) -> int:
    """index as an int in [0, length): a float or an oversized index is an error naming it, never a
    truncated example; a negative one counts from the end where from_end (dataset[-1], as Python's
    and PyTorch's datasets) and is an error elsewhere (a sampler's -1 is a bug, not the last example)."""
    try:
        if isinstance(index, (bool, np.bool_)):
            raise TypeError
        i = operator.index(index)
    except TypeError:
        raise TypeError(f"{kind} {index!r} is not an integer ({type(index).__name__})") from None
    if from_end and -length <= i < 0:
        return i + length
    if not 0 <= i < length:
        raise IndexError(f"{kind} {i} is out of range for a {of} of {length} examples")
    return i


class Subset(Dataset):
    """The examples of `dataset` at `indices`, in that order (torch.utils.data.Subset)."""

    def __init__(self, dataset: Dataset, indices: Sequence[int]):
        n = len(dataset)
        self.dataset = dataset
        self.indices = [checked_index(i, n, from_end=True) for i in indices]
        if hasattr(dataset, "get_batch"):  # whole batches by fancy indexing, when the dataset can
            self.get_batch = self._get_batch

    def __len__(self) -> int:
        return len(self.indices)

    def __getitem__(self, index):
        return self.dataset[self.indices[checked_index(index, len(self), of="Subset", from_end=True)]]

    def _get_batch(self, indices: np.ndarray):
        return self.dataset.get_batch(np.asarray(self.indices, dtype=np.int64)[indices])


class ConcatDataset(Dataset):
    """Datasets one after another (torch.utils.data.ConcatDataset)."""

    def __init__(self, datasets: Sequence[Dataset]):
        self.datasets = list(datasets)
        if not self.datasets:
            raise ValueError("ConcatDataset needs at least one dataset")
        self.ends = np.cumsum([len(d) for d in self.datasets]).tolist()

    def __len__(self) -> int:
        return self.ends[-1]

    def __getitem__(self, index):
        i = checked_index(index, len(self), of="ConcatDataset", from_end=True)
        part = bisect.bisect_right(self.ends, i)
        return self.datasets[part][i - (self.ends[part - 1] if part else 0)]


class StackDataset(Dataset):
    """Datasets of one length read side by side: StackDataset(a, b)[i] == (a[i], b[i]), or with
    keywords a dict (torch.utils.data.StackDataset)."""

    def __init__(self, *args: Dataset, **kwargs: Dataset):
        if args and kwargs:
            raise ValueError("StackDataset takes either datasets as arguments (tuple examples) or as keywords "
                             "(dict examples), not both")
        if not args and not kwargs:
            raise ValueError("StackDataset needs at least one dataset")
        self.datasets: Any = args or kwargs
        lengths = [len(d) for d in (args or kwargs.values())]
        if len(set(lengths)) != 1:
            raise ValueError(f"StackDataset: the datasets differ in length: {lengths}")
        self.length = lengths[0]

    def __len__(self) -> int:
        return self.length

    def __getitem__(self, index):
        i = checked_index(index, self.length, of="StackDataset", from_end=True)
        if isinstance(self.datasets, dict):
            return {k: d[i] for k, d in self.datasets.items()}
        return tuple(d[i] for d in self.datasets)


def random_split(dataset: Dataset, lengths: Sequence[float], seed: int = 0) -> list[Subset]:
    """Disjoint random subsets of the given lengths, or fractions summing to 1 (the remainder of
    rounding going to the first subsets, as PyTorch does); reproducible from the seed."""
    n = len(dataset)
    lengths = list(lengths)
    if lengths and all(0 <= f <= 1 for f in lengths) and math.isclose(sum(lengths), 1.0) and sum(lengths) != n:
        counts = [int(math.floor(n * f)) for f in lengths]
        for k in range(n - sum(counts)):
            counts[k % len(counts)] += 1
        lengths = counts
    if any(int(k) != k or k < 0 for k in lengths) or sum(lengths) != n:
        raise ValueError(f"random_split: lengths {lengths} must be non-negative integers summing to the "
                         f"dataset's {n} examples, or fractions summing to 1")
    order = np.asarray(random.permutation(random.key(seed), n)).tolist()
    out, start = [], 0
    for k in lengths:
        out.append(Subset(dataset, order[start:start + int(k)]))
        start += int(k)
    return out
