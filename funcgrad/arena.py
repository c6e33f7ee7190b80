"""Planned buffers for jitted CPU programs (XLA's buffer assignment): the sizes of a program's
intermediates are known when it is compiled, so each one that does not leave the program gets a
slot, a slot is reused once its occupant is dead, and the slots are allocated once and kept for
the next call. A training step then writes its activations and gradients into memory it touched
on the previous step instead of asking malloc for fresh megabytes that fault in page by page
(glibc hands large blocks back to the OS on free; funcgrad does not change malloc's settings).

Each call takes a set of buffers from the program's free list and gives it back when it returns,
so calls from several threads, or a program that calls itself, each get their own.

What a program returns cannot live in a slot, but a training loop without donation drops each
step's parameters and optimiser state once the next step has read them: a Recycler keeps the last
two results of each output and hands one to a later call once nothing else refers to it (automatic
donation of dead outputs), so those megabytes too are written where they were before.
"""
from __future__ import annotations

import sys
import threading

import numpy as np

from .host_buffers import track


def nbytes_of(shape: tuple, dtype) -> int:
    return int(np.prod(shape, dtype=np.int64)) * np.dtype(dtype).itemsize


class BufferPlan:
    """Slots (byte sizes) and, per planned value, its slot, shape and dtype. Values are planned
    in program order: assign(start, end) at the position that defines the value, with end the
    position of its last reader (or of the last reader of any view of it)."""

    def __init__(self):
        self.slot_bytes: list[int] = []
        self.busy_until: list[int] = []  # per slot: the position its occupant is last read at
        self.values: list[tuple[int, tuple, np.dtype]] = []

    def assign(self, shape: tuple, dtype: np.dtype, start: int, end: int) -> int:
        """The index of a new planned value: the smallest free slot that holds it (of equal ones,
        the one freed last, whose lines are likeliest still in cache, as a caching allocator's
        LIFO free list gives: the GPT-128 step 0.97-0.99x the time, the others 0.99-1.0x), else
        the largest free one grown to fit, else a new slot."""
        nbytes = max(1, nbytes_of(shape, dtype))
        free = [s for s, busy in enumerate(self.busy_until) if busy < start]
        fits = [s for s in free if self.slot_bytes[s] >= nbytes]
        if fits:
            slot = min(fits, key=lambda s: (self.slot_bytes[s], -self.busy_until[s]))
        elif free:
            slot = max(free, key=self.slot_bytes.__getitem__)
            self.slot_bytes[slot] = nbytes
        else:
            slot = len(self.slot_bytes)
            self.slot_bytes.append(nbytes)
            self.busy_until.append(end)
        self.busy_until[slot] = end
        self.values.append((slot, tuple(shape), np.dtype(dtype)))
        return len(self.values) - 1

    def extend(self, value: int, end: int) -> None:
        """Value's slot stays busy until end (another value now lives in its buffer)."""
        slot = self.values[value][0]
        self.busy_until[slot] = max(self.busy_until[slot], end)

    @property
    def nbytes(self) -> int:
        return sum(self.slot_bytes)


class PlannedBuffers(list):
    """One call's arrays of the planned values (views of the slots), with the slots' ids."""
    __slots__ = ("slot_ids",)


class Arenas:
    """A plan's buffers: `take()` gives a call the arrays of its planned values, `give(buffers)`
    takes them back for the next call."""

    def __init__(self, plan: BufferPlan):
        self.plan = plan
        self.free: list[PlannedBuffers] = []

    def take(self) -> PlannedBuffers:
        try:
            return self.free.pop()  # atomic under the GIL: two threads never get one set
        except IndexError:
            return self._build()

    def give(self, buffers: PlannedBuffers) -> None:
        self.free.append(buffers)

    def _build(self) -> PlannedBuffers:
        slots = [np.empty(n, np.uint8) for n in self.plan.slot_bytes]
        for slot in slots:
            track(slot)  # counted by fg.memory_allocated() while the program keeps it
        buffers = PlannedBuffers(slots[s][:nbytes_of(shape, dtype)].view(dtype).reshape(shape)
                                 for s, shape, dtype in self.plan.values)
        buffers.slot_ids = frozenset(map(id, slots))
        return buffers


def unplanned(out, buffers: PlannedBuffers):
    """out, or a copy of it if it views a planned buffer (which the next call overwrites). The
    plan keeps what a program returns out of its slots; this check on the way out turns a
    primitive that wrongly claims a fresh result into a copy instead of a corrupted output."""
    base = getattr(out, "base", None)
    return np.array(out) if base is not None and id(base) in buffers.slot_ids else out


class Recycler:
    """Buffers for a program's outputs: take(k) is a kept result of output k that nothing outside
    refers to any more, or a new array; keep(k, array) remembers what a call returned. Two are kept
    per output: a step's result is the next step's argument, free again only the step after."""
    KEEP = 2

    def __init__(self, avals: list[tuple[tuple, np.dtype]]):
        self.avals = avals
        self.kept: list[list[np.ndarray]] = [[] for _ in avals]
        self.lock = threading.Lock()

    def take(self, k: int) -> np.ndarray:
        with self.lock:
            kept = self.kept[k]
            for i in range(len(kept)):
                if sys.getrefcount(kept[i]) <= _SOLE_REFERENCES:  # only this list holds it
                    return kept.pop(i)
        shape, dtype = self.avals[k]
        return np.empty(shape, dtype)

    def keep(self, k: int, array: np.ndarray) -> None:
        with self.lock:
            kept = self.kept[k]
            kept.append(array)
            if len(kept) > self.KEEP:
                del kept[0]


def _sole_references() -> int:
    """sys.getrefcount of an array only a list holds, in Recycler.take's expression."""
    kept = [np.empty(1)]
    return sys.getrefcount(kept[0])


_SOLE_REFERENCES = _sole_references()
