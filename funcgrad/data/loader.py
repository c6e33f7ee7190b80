"""Samplers and the DataLoader (PyTorch's shapes of these ideas, reproducible by seed)."""
from __future__ import annotations

import abc
import itertools
import math
import queue
import threading
from typing import Any, Callable, Iterable, Iterator, Sequence

import numpy as np

from .. import random
from ..array import Array, ArrayBase
from ..devices import device_put
from . import workers
from .dataset import Dataset, checked_index


def _epoch_key(seed: int, epoch: int):
    return random.fold_in(random.key(seed), epoch)


def _batch_size(value, none_allowed: bool = False):
    """A batch size: an integer >= 1 (a float or bool would fail later with a message naming neither)."""
    if value is None and none_allowed:
        return None
    if isinstance(value, (bool, np.bool_)) or not isinstance(value, (int, np.integer)) or value < 1:
        raise ValueError(f"batch_size must be an integer >= 1{' (or None: no batching)' if none_allowed else ''}, "
                         f"got {value!r}")
    return int(value)


def _size(data_source) -> int:
    """The number of examples: an int, or len() of a dataset (PyTorch's samplers take the dataset)."""
    if isinstance(data_source, (int, np.integer)) and not isinstance(data_source, bool):
        return int(data_source)
    return len(data_source)


class _EpochSampler:
    """A sampler whose order depends on (seed, epoch): the loader sets the epoch each pass."""
    seed, epoch = 0, 0

    def set_epoch(self, epoch: int) -> None:
        self.epoch = epoch

    def _key(self):
        return _epoch_key(self.seed, self.epoch)


class Sampler(abc.ABC):
    """The base of samplers (torch.utils.data.Sampler): subclass it and define __iter__ over
    dataset indices (and __len__ if the loader's len() is wanted)."""

    @abc.abstractmethod
    def __iter__(self):
        """The indices, in the order to read them."""


class SequentialSampler(Sampler):
    def __init__(self, data_source: "Dataset | int"):
        self.n = _size(data_source)

    def __iter__(self):
        return iter(range(self.n))

    def __len__(self) -> int:
        return self.n


class RandomSampler(_EpochSampler, Sampler):
    """A fresh permutation every epoch, determined by (seed, epoch); with replacement, num_samples
    uniform draws (PyTorch's arguments, a seed for its generator)."""

    def __init__(self, data_source: "Dataset | int", seed: int = 0, *, replacement: bool = False,
                 num_samples: int | None = None):
        if isinstance(seed, bool):  # PyTorch's second argument is replacement
            raise TypeError("RandomSampler's second argument is the seed; pass replacement= by name")
        self.n, self.seed, self.replacement = _size(data_source), seed, replacement
        self.num_samples = self.n if num_samples is None else int(num_samples)
        if self.num_samples < 0 or (not replacement and num_samples is not None and self.num_samples > self.n):
            raise ValueError(f"RandomSampler: num_samples={num_samples} for {self.n} examples "
                             f"{'without' if not replacement else 'with'} replacement")

    def __iter__(self):
        if self.replacement:
            return iter(np.asarray(random.randint(self._key(), (self.num_samples,), 0, max(self.n, 1))).tolist())
        order = np.asarray(random.permutation(self._key(), self.n))
        return iter(order[:self.num_samples].tolist())

    def __len__(self) -> int:
        return self.num_samples


class SubsetRandomSampler(_EpochSampler, Sampler):
    """The given indices in a fresh random order every epoch (torch's SubsetRandomSampler)."""

    def __init__(self, indices: Sequence[int], seed: int = 0):
        self.indices, self.seed = list(indices), seed

    def __iter__(self):
        order = np.asarray(random.permutation(self._key(), len(self.indices)))
        return iter([self.indices[i] for i in order])

    def __len__(self) -> int:
        return len(self.indices)


class WeightedRandomSampler(_EpochSampler, Sampler):
    """num_samples indices drawn with probability proportional to weights (with replacement by
    default), fresh every epoch: PyTorch's answer to imbalanced classes."""

    def __init__(self, weights: Sequence[float], num_samples: int, replacement: bool = True, seed: int = 0):
        self.weights = np.asarray(weights, dtype=np.float64)
        if self.weights.ndim != 1 or not np.isfinite(self.weights).all() or (self.weights < 0).any() \
                or self.weights.sum() <= 0:
            raise ValueError("WeightedRandomSampler: weights must be a 1-d sequence of finite, non-negative numbers "
                             "with a positive sum")
        if not replacement and num_samples > np.count_nonzero(self.weights):
            raise ValueError(f"WeightedRandomSampler: cannot draw {num_samples} distinct indices from "
                             f"{np.count_nonzero(self.weights)} of positive weight without replacement")
        self.num_samples, self.replacement, self.seed = int(num_samples), replacement, seed

    def __iter__(self):
        p = self.weights / self.weights.sum()
        draws = random.choice(self._key(), len(p), (self.num_samples,), replace=self.replacement, p=p)
        return iter(np.asarray(draws).tolist())

    def __len__(self) -> int:
        return self.num_samples


class BatchSampler(Sampler):
    """Lists of batch_size indices from a sampler (the last shorter unless drop_last)."""

    def __init__(self, sampler: Iterable[int], batch_size: int, drop_last: bool):
        self.sampler, self.batch_size, self.drop_last = sampler, _batch_size(batch_size), drop_last

    def set_epoch(self, epoch: int) -> None:
        if hasattr(self.sampler, "set_epoch"):
            self.sampler.set_epoch(epoch)

    def __iter__(self):
        batch = []
        for index in self.sampler:
            batch.append(index)
            if len(batch) == self.batch_size:
                yield batch
                batch = []
        if batch and not self.drop_last:
            yield batch

    def __len__(self) -> int:
        n = len(self.sampler)
        return n // self.batch_size if self.drop_last else math.ceil(n / self.batch_size)


class DistributedSampler(Sampler):
    """The shard of the data one of num_replicas processes reads (torch's DistributedSampler):
    without drop_last the indices are padded by wrapping around so every rank gets as many;
    with it the tail is dropped. Shards are disjoint and, together, cover the data."""

    def __init__(self, dataset: "Dataset | int", num_replicas: int, rank: int, shuffle: bool = True,
                 seed: int = 0, drop_last: bool = False):
        n = dataset if isinstance(dataset, int) else len(dataset)
        if num_replicas < 1 or not 0 <= rank < num_replicas:
            raise ValueError(f"rank {rank} is not in [0, num_replicas={num_replicas})")
        self.n, self.num_replicas, self.rank = n, num_replicas, rank
        self.shuffle, self.seed, self.drop_last, self.epoch = shuffle, seed, drop_last, 0
        if drop_last and n % num_replicas:
            self.num_samples = math.ceil((n - num_replicas) / num_replicas)
        else:
            self.num_samples = math.ceil(n / num_replicas)
        self.total_size = self.num_samples * num_replicas

    def set_epoch(self, epoch: int) -> None:
        self.epoch = epoch

    def __iter__(self):
        if self.shuffle:
            indices = np.asarray(random.permutation(_epoch_key(self.seed, self.epoch), self.n))
        else:
            indices = np.arange(self.n)
        if self.drop_last:
            indices = indices[:self.total_size]
        elif self.total_size > self.n:
            indices = np.resize(indices, self.total_size)  # wraps around, repeating from the start
        return iter(indices[self.rank:self.total_size:self.num_replicas].tolist())

    def __len__(self) -> int:
        return self.num_samples


def default_collate(examples: Sequence) -> Any:
    """Stack a list of examples field by field, as PyTorch's default_collate: tuples (named ones
    keep their type), lists and dicts nest; strings and None are gathered into a list."""
    first = examples[0]
    if isinstance(first, (str, bytes)) or first is None:
        return examples if isinstance(examples, (list, tuple)) else list(examples)
    if isinstance(first, (tuple, list)):
        if any(len(e) != len(first) for e in examples):
            raise ValueError(f"default_collate: each element in the list of batch should be of equal size, got "
                             f"sizes {sorted({len(e) for e in examples})}")
        fields = [default_collate(tuple(e[i] for e in examples)) for i in range(len(first))]
        if isinstance(first, list):
            return fields
        return type(first)(*fields) if hasattr(first, "_fields") else tuple(fields)
    if isinstance(first, dict):
        return {k: default_collate([e[k] for e in examples]) for k in first}
    arrays = [np.asarray(e.numpy() if isinstance(e, ArrayBase) else e) for e in examples]
    for i, a in enumerate(arrays):
        if a.shape != arrays[0].shape:
            raise ValueError(f"default_collate: stack expects each example to have one shape, got {arrays[0].shape} "
                             f"({type(first).__name__}) at entry 0 and {a.shape} ({type(examples[i]).__name__}) "
                             f"at entry {i}")
    return np.stack(arrays)


def _to_arrays(batch, device):
    """Host arrays as Arrays on device, through the collated structure; strings, Python numbers and
    None stay as they are (PyTorch's default_convert)."""
    if isinstance(batch, tuple):
        converted = [_to_arrays(b, device) for b in batch]
        return type(batch)(*converted) if hasattr(batch, "_fields") else tuple(converted)
    if isinstance(batch, list):
        return [_to_arrays(b, device) for b in batch]
    if isinstance(batch, dict):
        return {k: _to_arrays(v, device) for k, v in batch.items()}
    if batch is None or type(batch) in (str, bytes, bool, int, float, complex) or (
            isinstance(batch, np.ndarray) and batch.dtype.kind in "USO"):
        return batch
    out = batch if isinstance(batch, ArrayBase) else Array(np.ascontiguousarray(batch) if np.ndim(batch) else
                                                           np.asarray(batch))  # (ascontiguousarray makes 0-d 1-d)
    if device is not None:
        out = device_put(out, device)
    return out


def _iterable_only(dataset) -> bool:
    """A stream (PyTorch's IterableDataset): iterated, not indexed."""
    return hasattr(dataset, "__iter__") and not hasattr(dataset, "__getitem__")


class DataLoader:
    """Batches from a dataset, in a reproducible order, built in a background thread, or with
    num_workers > 0 in that many worker processes (same batches, same order).

    shuffle with a seed reshuffles every epoch (the epoch counts up as you iterate, or set it);
    `state_dict()` records the epoch and how many batches of it were consumed so a resumed run
    continues with exactly the batches it would have seen. Every sampler index is checked: an
    index that is not an integer in [0, len(dataset)) raises, naming it. batch_sampler gives whole
    batches of indices (then batch_size, shuffle, sampler and drop_last stay at their defaults, as
    PyTorch requires). A dataset with __iter__ and no __getitem__ (PyTorch's IterableDataset) is
    read in its own order, batch_size examples at a time. pin_memory and persistent_workers are
    accepted for PyTorch code and change nothing here; prefetch_factor is prefetch's other name.
    """

    def __init__(self, dataset: Dataset, batch_size: int = 1, shuffle: bool = False, seed: int = 0,
                 drop_last: bool = False, sampler: Iterable[int] | None = None,
                 collate_fn: Callable[[list], Any] | None = None, prefetch: int = 2, device=None,
                 num_workers: int = 0, worker_init_fn: Callable[[int], None] | None = None, timeout: float = 0.0,
                 multiprocessing_context: str | None = None, *, batch_sampler: Iterable[list] | None = None,
                 pin_memory: bool = False, persistent_workers: bool = False, prefetch_factor: int | None = None):
        batch_size = _batch_size(batch_size, none_allowed=True)
        if batch_size is None and drop_last:
            raise ValueError("batch_size=None option disables auto-batching and is mutually exclusive with drop_last")
        if sampler is not None and shuffle:
            raise ValueError("give either shuffle=True or a sampler, not both")
        if batch_sampler is not None and (batch_size != 1 or shuffle or sampler is not None or drop_last):
            raise ValueError("batch_sampler makes the batches: leave batch_size, shuffle, sampler and drop_last at "
                             "their defaults (PyTorch's rule)")
        if num_workers < 0 or timeout < 0:
            raise ValueError(f"num_workers and timeout must be >= 0, got {num_workers} and {timeout}")
        self.streamed = _iterable_only(dataset)
        if self.streamed and (shuffle or sampler is not None or batch_sampler is not None):
            raise ValueError("a dataset that is only iterable (an IterableDataset) gives its own order: shuffle, "
                             "sampler and batch_sampler do not apply")
        if self.streamed and num_workers:
            raise ValueError("an iterable-only dataset is read in this process (num_workers=0): worker processes "
                             "would each replay the whole stream")
        self.dataset, self.batch_size, self.drop_last = dataset, batch_size, drop_last
        self.batch_sampler = batch_sampler
        self.sampler = sampler if sampler is not None or self.streamed or batch_sampler is not None else (
            RandomSampler(len(dataset), seed) if shuffle else SequentialSampler(len(dataset)))
        self.collate_fn, self.device = collate_fn, device
        self.prefetch = prefetch if prefetch_factor is None else prefetch_factor
        self.num_workers, self.worker_init_fn, self.timeout = num_workers, worker_init_fn, timeout
        self.multiprocessing_context, self.seed = multiprocessing_context, seed
        self.epoch, self._skip = 0, 0
        self._consumed = 0

    def __len__(self) -> int:
        if self.batch_sampler is not None:
            return len(self.batch_sampler)
        if self.streamed:
            if not hasattr(self.dataset, "__len__"):
                raise TypeError("len() of a DataLoader over an iterable-only dataset without __len__")
            n = len(self.dataset)
        else:
            n = len(self.sampler)
        size = self.batch_size or 1  # None: one example at a time
        return n // size if self.drop_last else math.ceil(n / size)

    def set_epoch(self, epoch: int) -> None:
        self.epoch = epoch

    def state_dict(self) -> dict[str, int]:
        return {"epoch": self.epoch, "batches_consumed": self._consumed}

    def load_state_dict(self, state: dict[str, int]) -> None:
        self.epoch, self._skip = int(state["epoch"]), int(state["batches_consumed"])

    def _batches_of_indices(self) -> list[np.ndarray]:
        source = self.sampler if self.batch_sampler is None else self.batch_sampler
        if hasattr(source, "set_epoch"):
            source.set_epoch(self.epoch)
        if self.batch_sampler is not None:
            return [self._checked_order(list(batch)) for batch in self.batch_sampler]
        order = self._checked_order(list(self.sampler))
        if self.batch_size is None:
            return [np.asarray(i) for i in order]  # 0-d: one example, uncollated
        stop = len(order) - len(order) % self.batch_size if self.drop_last else len(order)
        return [order[i:i + self.batch_size] for i in range(0, stop, self.batch_size)]

    def _streamed_batches(self, skip: int) -> Iterator:
        """Batches of the iterable-only dataset, in its order (the first `skip`, consumed before a
        resume, are read and dropped)."""
        examples = iter(self.dataset)
        if self.batch_size is None:  # no batching: each example converted as it is
            for example in itertools.islice(examples, skip, None):
                yield _to_arrays(example, self.device)
            return
        while True:
            chunk = [example for _, example in zip(range(self.batch_size), examples)]
            if not chunk or (self.drop_last and len(chunk) < self.batch_size):
                return
            if skip:
                skip -= 1
                continue
            yield _to_arrays((self.collate_fn or default_collate)(chunk), self.device)

    def _checked_order(self, indices: list) -> np.ndarray:
        """The sampler's indices as int64, each an integer in [0, len(dataset)) or an error naming it
        (a negative index would wrap around, a float be truncated)."""
        n = len(self.dataset)
        try:
            order = np.array(indices, dtype=np.int64) if indices else np.zeros(0, np.int64)
            exact = all(isinstance(i, (int, np.integer)) and not isinstance(i, bool) for i in indices)
        except (OverflowError, TypeError, ValueError):
            exact = False
        if not exact:
            for i in indices:
                checked_index(i, n, "sampler index")
        bad = np.flatnonzero((order < 0) | (order >= n))
        if bad.size:
            checked_index(int(order[bad[0]]), n, "sampler index")
        return order

    def _host_batch(self, indices: np.ndarray):
        """The batch as host arrays (what a worker process builds); a 0-d index: one example,
        through collate_fn only if one was given (PyTorch's batch_size=None)."""
        if indices.ndim == 0:
            example = self.dataset[int(indices)]
            return example if self.collate_fn is None else self.collate_fn(example)
        if self.collate_fn is None and hasattr(self.dataset, "get_batch"):
            return self.dataset.get_batch(indices)
        return (self.collate_fn or default_collate)([self.dataset[int(i)] for i in indices])

    def _make(self, indices: np.ndarray):
        return _to_arrays(self._host_batch(indices), self.device)

    def __iter__(self) -> Iterator:
        if self.streamed:
            skip, self._skip = self._skip, 0
            self._consumed = skip
            for batch in self._streamed_batches(skip):
                self._consumed += 1
                yield batch
            self._consumed = 0
            self.epoch += 1
            return
        plan = self._batches_of_indices()
        self._consumed, self._skip = self._skip, 0
        plan = plan[self._consumed:]
        if self.num_workers > 0:
            seed = self.seed * 1_000_003 + self.epoch * 1_009  # per epoch; worker w adds w
            for batch in workers.run(plan, self._host_batch, self.num_workers, seed, self.prefetch, self.timeout,
                                     self.worker_init_fn, self.multiprocessing_context):
                self._consumed += 1
                yield _to_arrays(batch, self.device)
        elif self.prefetch <= 0:
            for indices in plan:
                batch = self._make(indices)
                self._consumed += 1
                yield batch
        else:
            yield from self._prefetched(plan)
        self.epoch += 1
        self._consumed = 0

    def _prefetched(self, plan):
        out: queue.Queue = queue.Queue(maxsize=self.prefetch)
        stop = threading.Event()
        done = object()

        def produce():
            try:
                for indices in plan:
                    if stop.is_set():
                        return
                    out.put(self._make(indices))
                out.put(done)
            except BaseException as e:  # noqa: BLE001  (handed to the consumer, which re-raises)
                out.put(e)

        worker = threading.Thread(target=produce, daemon=True, name="funcgrad-dataloader")
        worker.start()
        try:
            while True:
                item = out.get()
                if item is done:
                    return
                if isinstance(item, BaseException):
                    raise item
                self._consumed += 1
                yield item
        finally:
            stop.set()
            while worker.is_alive():  # unblock a producer waiting on a full queue
                try:
                    out.get_nowait()
                except queue.Empty:
                    worker.join(timeout=0.01)
