"""What every backend shares: checked collectives, the pytree collectives, and the default group.

Before moving data, every collective exchanges a small header (operation, sequence number,
shape, dtype, root) with all ranks and compares them, so a mismatch is an exception on every
rank that names both sides, never a hang or a silently wrong sum. After any error the group is
marked broken: later calls raise until it is created again.
"""
from __future__ import annotations

import json
import queue
import sys
import threading
from typing import Any, Sequence

import numpy as np

from .. import dtypes
from ..array import Array
from ..tree import tree_flatten
from .errors import DistError
from .store import Job

REDUCE_OPS = {"sum": np.add, "mean": np.add, "max": np.maximum, "min": np.minimum}


def finish(reduced: np.ndarray, op: str, world_size: int) -> None:
    """The last touch of a fully reduced piece: a mean divides it (where it is still in cache)."""
    if op == "mean":
        np.divide(reduced, world_size, out=reduced, casting="unsafe")


class ProcessGroup:
    """A backend implements _all_gather_bytes, _all_reduce, _broadcast_into, _subgroup and close.

    rank and world_size are this process's index in the group and the group's size; ranks holds
    the members' ranks in the job (the world), which is how messages name them."""

    backend = "none"

    def __init__(self, rank: int, world_size: int, local_rank: int, timeout: float,
                 ranks: Sequence[int] | None = None):
        self.rank, self.world_size, self.local_rank, self.timeout = rank, world_size, local_rank, timeout
        self.ranks = list(range(world_size)) if ranks is None else list(ranks)
        self.seq = 0
        self.broken: str | None = None
        self._outputs = _Recycler()
        self.channels: dict[tuple[int, int], ProcessGroup] = {}  # shared by the job's groups
        self.outbox: _Outbox | None = None  # a channel's sender thread, from its first isend

    def who(self, index: int) -> str:
        """How messages name the member at index: by its rank in the job."""
        return f"rank {self.ranks[index]}"

    def group(self, ranks: Sequence[int], scope: str) -> "ProcessGroup":
        """A group of the job's ranks `ranks` (this process among them), formed by its members
        alone; scope (with the members) names it in the rendezvous, identically on every member."""
        if len(ranks) == 1:
            return SingleProcessGroup(0, 1, self.local_rank, self.timeout, ranks)
        return self._subgroup(list(ranks), f"{scope}{','.join(map(str, ranks))}/")

    # ---- backend interface ------------------------------------------------------------------------
    def _subgroup(self, ranks: list[int], scope: str) -> "ProcessGroup":
        raise DistError(f"{type(self).__name__} cannot form groups")

    def _all_gather_bytes(self, data: bytes, what: str) -> list[bytes]:
        raise DistError(f"{type(self).__name__} cannot gather")

    def _all_gather_into(self, src: np.ndarray, out: np.ndarray, what: str) -> None:
        """Every member's bytes src (the same length on all: the header said so) into the rows of
        out; a backend with shared buffers copies them straight in."""
        for row, block in zip(out, self._all_gather_bytes(src.tobytes(), what)):
            row[:] = np.frombuffer(block, np.uint8)

    def _all_reduce(self, src: np.ndarray, out: np.ndarray, op: str, what: str) -> None:
        """Write the reduction over ranks of the flat array src into out (same shape, another
        buffer, so no rank copies its input first); op "mean" arrives divided by world_size."""
        raise DistError(f"{type(self).__name__} cannot reduce")

    def _broadcast_into(self, flat: np.ndarray, src: int, what: str) -> None:
        raise DistError(f"{type(self).__name__} cannot broadcast")

    def close(self) -> None:
        self.broken = self.broken or "the process group was destroyed"
        if self.outbox is not None:
            self.outbox.close()

    # ---- checking ---------------------------------------------------------------------------------
    def _begin(self, op: str, array: np.ndarray | None, **extra) -> str:
        if self.broken:
            raise DistError(f"{self.who(self.rank)}: the process group is unusable ({self.broken}); "
                            f"call init_process_group again")
        self.seq += 1
        what = f"{op} #{self.seq}"
        if self.world_size == 1:
            return what
        mine = _header(op, self.seq, array, extra)
        try:
            headers = self._all_gather_bytes(mine, what)
        except DistError as e:
            self.broken = str(e)
            raise
        for peer, theirs in enumerate(headers):
            if theirs != mine:  # compared as bytes; decoded only to explain a mismatch
                self.broken = f"mismatched collectives at {what}"
                raise DistError(f"{self.who(self.rank)}: collective mismatch: this rank called "
                                f"{_describe(json.loads(mine))} but {self.who(peer)} called "
                                f"{_describe(json.loads(theirs))}")
        return what

    def _run(self, fn, *args):
        try:
            return fn(*args)
        except DistError as e:
            self.broken = str(e)
            raise

    # ---- collectives on arrays ------------------------------------------------------------------------
    def all_reduce(self, x, op: str = "sum") -> Array:
        """The elementwise reduction (sum, mean, max, min) of x over all ranks, on every rank."""
        if op not in REDUCE_OPS:
            raise ValueError(f"all_reduce op must be one of {sorted(REDUCE_OPS)}, got {op!r}")
        arr = _host(x)
        if op == "mean" and not dtypes.is_float(arr.dtype):
            raise TypeError(f"all_reduce op='mean' needs a floating-point array, got {arr.dtype}")
        what = self._begin("all_reduce", arr, reduce=op)
        src = np.ascontiguousarray(arr).reshape(-1)
        if self.world_size == 1 or src.size == 0:
            return Array(src.copy().reshape(arr.shape))
        out = self._outputs.empty(src.size, src.dtype)
        self._run(self._all_reduce, src, out, op, what)
        return Array(out.reshape(arr.shape))

    def broadcast(self, x, src: int = 0) -> Array:
        """x from rank src, on every rank."""
        if not 0 <= src < self.world_size:
            raise ValueError(f"broadcast src {src} is not a rank of a group of {self.world_size}")
        arr = _host(x)
        what = self._begin("broadcast", arr, src=src)
        flat = np.array(arr, order="C").reshape(-1)
        if self.world_size > 1 and flat.size:
            self._run(self._broadcast_into, flat, src, what)
        return Array(flat.reshape(arr.shape))

    def all_gather(self, x) -> Array:
        """Every rank's x, stacked along a new leading axis (rank order)."""
        arr = _host(x)
        what = self._begin("all_gather", arr)
        if self.world_size == 1:
            return Array(arr[None].copy())
        out = np.empty((self.world_size, *arr.shape), arr.dtype)
        src = np.ascontiguousarray(arr).reshape(-1).view(np.uint8)
        self._run(self._all_gather_into, src, out.reshape(self.world_size, -1).view(np.uint8), what)
        return Array(out)

    def reduce_scatter(self, x, op: str = "sum") -> Array:
        """Reduce x over ranks and give rank r the r-th of world_size equal slices of axis 0."""
        if op not in REDUCE_OPS:
            raise ValueError(f"reduce_scatter op must be one of {sorted(REDUCE_OPS)}, got {op!r}")
        arr = _host(x)
        if arr.ndim == 0 or arr.shape[0] % self.world_size:
            raise ValueError(f"reduce_scatter needs a leading axis divisible by the world size "
                             f"{self.world_size}, got shape {arr.shape}")
        if op == "mean" and not dtypes.is_float(arr.dtype):
            raise TypeError(f"reduce_scatter op='mean' needs a floating-point array, got {arr.dtype}")
        what = self._begin("reduce_scatter", arr, reduce=op)
        src = np.ascontiguousarray(arr).reshape(-1)
        out = np.empty((arr.shape[0] // self.world_size, *arr.shape[1:]), arr.dtype)
        if self.world_size == 1:
            out[...] = arr
        elif src.size:
            self._run(self._reduce_scatter_into, src, out.reshape(-1), op, what)
        return Array(out)

    def _reduce_scatter_into(self, src: np.ndarray, out: np.ndarray, op: str, what: str) -> None:
        """This member's share (the rank-th of world_size equal pieces of the flat src) of the
        reduction into out; a backend with shared buffers reduces only its share."""
        reduced = np.empty_like(src)
        self._all_reduce(src, reduced, op, what)
        out[:] = reduced[self.rank * out.size:(self.rank + 1) * out.size]

    def barrier(self) -> None:
        self._begin("barrier", None)

    # ---- point to point ---------------------------------------------------------------------------------
    def send(self, x, dst: int) -> None:
        """x to the member at index dst, which takes it with recv(src=this index, like=x); returns
        when the transfer is done (so two members sending to each other at once wait for each
        other until the timeout: order them, or use isend)."""
        self.isend(x, dst).wait()

    def isend(self, x, dst: int) -> "Work":
        """Send x without waiting (torch.distributed.isend): the transfer runs on a thread of this
        process after this member's earlier sends to dst; the result's wait() returns when it is
        done and raises what went wrong. x is copied first, so the caller may go on using it."""
        arr = np.array(_host(x), order="C")
        channel = self._channel(self.rank, self._peer(dst, "send to"))
        if channel.outbox is None:
            channel.outbox = _Outbox(channel)
        return channel.outbox.put(arr, self.ranks[dst])

    def recv(self, src: int, like) -> Array:
        """What the member at index src sends; like (an array, or anything with shape and dtype)
        says what this member expects, and a different shape or dtype is an error on both."""
        shape, dtype = tuple(like.shape), np.dtype(like.dtype)
        channel = self._channel(self._peer(src, "receive from"), self.rank)
        flat = np.empty(int(np.prod(shape, dtype=np.int64)), dtype)
        what = channel._begin("send", flat.reshape(shape), dst=self.ranks[self.rank])
        channel._run(channel._broadcast_into, flat, 0, what)
        return Array(flat.reshape(shape))

    def _peer(self, index: int, verb: str) -> int:
        if not isinstance(index, (int, np.integer)) or isinstance(index, bool) or not 0 <= index < self.world_size:
            raise ValueError(f"cannot {verb} {index!r}: not a rank of this group ({self.world_size} ranks)")
        if index == self.rank:
            raise ValueError(f"{self.who(self.rank)} cannot {verb} itself")
        return int(index)

    def _channel(self, src: int, dst: int) -> "ProcessGroup":
        """The two-member group that carries messages from member src to member dst (the sender
        at index 0), formed by the pair at their first message, then kept: one per direction, so
        messages each way never meet in one channel."""
        key = (self.ranks[src], self.ranks[dst])
        if key not in self.channels:
            try:
                self.channels[key] = self._subgroup(list(key), f"p{key[0]}>{key[1]}/")
            except DistError as e:
                raise type(e)(f"{self.who(self.rank)}: at the first send from rank {key[0]} to rank {key[1]}: "
                              f"{e}") from None
        return self.channels[key]

    # ---- pytrees ------------------------------------------------------------------------------------
    def all_reduce_tree(self, tree, op: str = "mean", bucket_bytes: int = 25 * 2 ** 20):
        """all_reduce every leaf, packing leaves of one dtype into flat buckets of about
        bucket_bytes so many small gradients travel as few messages (Horovod's tensor fusion)."""
        return _bucketed(tree, lambda flat: self.all_reduce(flat, op), bucket_bytes)

    def broadcast_tree(self, tree, src: int = 0, bucket_bytes: int = 25 * 2 ** 20):
        """Every leaf of src's tree, on every rank (parameters identical before training)."""
        return _bucketed(tree, lambda flat: self.broadcast(flat, src), bucket_bytes)


def _bucketed(tree, collective, bucket_bytes: int):
    """Apply a flat-array collective to the leaves of tree, bucket by bucket, and unpack."""
    leaves, treedef = tree_flatten(tree)
    arrays = [_host(leaf) for leaf in leaves]
    out: list[Any] = [None] * len(arrays)
    for bucket in _buckets(arrays, bucket_bytes):
        result = np.asarray(collective(np.concatenate([arrays[i].reshape(-1) for i in bucket])))
        offset = 0
        for i in bucket:
            n = arrays[i].size
            out[i] = Array(result[offset:offset + n].reshape(arrays[i].shape))
            offset += n
    return treedef.unflatten(out)


def _buckets(arrays: list[np.ndarray], bucket_bytes: int) -> list[list[int]]:
    """Indices grouped by dtype, each group split where it passes bucket_bytes (order kept)."""
    by_dtype: dict[np.dtype, list[int]] = {}
    for i, a in enumerate(arrays):
        by_dtype.setdefault(a.dtype, []).append(i)
    buckets = []
    for indices in by_dtype.values():
        current, size = [], 0
        for i in indices:
            if current and size + arrays[i].nbytes > bucket_bytes:
                buckets.append(current)
                current, size = [], 0
            current.append(i)
            size += arrays[i].nbytes
        if current:
            buckets.append(current)
    return buckets


def _refcount_when_only_listed() -> int:
    """What sys.getrefcount reports, read as below, for an object only a list holds: measured
    rather than assumed, since interpreters differ in the references a call itself takes."""
    held = [np.empty(0)]
    return sys.getrefcount(held[0])


_ONLY_LISTED = _refcount_when_only_listed()


class Work:
    """A pending isend: wait() blocks until it is done and raises the error it met."""

    def __init__(self):
        self._done = threading.Event()
        self.error: BaseException | None = None

    def _finish(self, error: BaseException | None) -> None:
        self.error = error
        self._done.set()

    def is_completed(self) -> bool:
        return self._done.is_set()

    def wait(self) -> None:
        self._done.wait()  # the transfer's own steps are bounded by the group's timeout
        if self.error is not None:
            raise self.error


class _Outbox:
    """A channel's sends, in order, on a thread of their own. After a failure every later send
    fails with the same error (the channel is broken)."""

    def __init__(self, channel: "ProcessGroup"):
        self.channel = channel
        self.queue: queue.SimpleQueue = queue.SimpleQueue()
        self.error: BaseException | None = None
        threading.Thread(target=self._run, daemon=True, name=f"funcgrad-send-{channel.ranks}").start()

    def put(self, arr: np.ndarray, dst: int) -> Work:
        work = Work()
        self.queue.put((arr, dst, work))
        return work

    def close(self) -> None:
        self.queue.put(None)

    def _run(self) -> None:
        while (item := self.queue.get()) is not None:
            arr, dst, work = item
            if self.error is None:
                try:
                    what = self.channel._begin("send", arr, dst=dst)
                    self.channel._run(self.channel._broadcast_into, arr.reshape(-1), 0, what)
                except BaseException as e:  # noqa: BLE001  (handed to the waiting thread)
                    self.error = e
            work._finish(self.error)


class _Recycler:
    """Output buffers of earlier all-reduces, handed out again once nothing refers to them.
    A fresh large array pays a page fault per page on first touch, a large part of an all-reduce;
    gradients are dropped after each step, so their buffers come back."""
    MIN_BYTES = 1 << 20  # smaller arrays come from malloc's heap without faults
    MAX_BYTES = 256 << 20  # what the group may hold on to

    def __init__(self):
        self.buffers: list[np.ndarray] = []

    def empty(self, size: int, dtype: np.dtype) -> np.ndarray:
        if size * dtype.itemsize < self.MIN_BYTES:
            return np.empty(size, dtype)
        for i in range(len(self.buffers)):
            # referenced only by the list: no Array or view holds it
            if sys.getrefcount(self.buffers[i]) == _ONLY_LISTED and self.buffers[i].size == size and \
                    self.buffers[i].dtype == dtype:
                return self.buffers[i]
        buf = np.empty(size, dtype)
        self.buffers.append(buf)
        while sum(b.nbytes for b in self.buffers) > self.MAX_BYTES:
            self.buffers.pop(0)
        return buf


def _host(x) -> np.ndarray:
    return np.asarray(x)


def _header(op: str, seq: int, array: np.ndarray | None, extra: dict) -> bytes:
    """The collective's signature as JSON text, written out by hand: this runs on every call."""
    fields = [f'"op":"{op}"', f'"seq":{seq}']
    fields += [f'"{k}":{v}' if isinstance(v, int) else f'"{k}":"{v}"' for k, v in extra.items()]
    if array is not None:
        fields += [f'"shape":{list(array.shape)}', f'"dtype":"{array.dtype.str}"']
    return ("{" + ",".join(fields) + "}").encode()


def _describe(header: dict) -> str:
    parts = [f"{header['op']} #{header['seq']}"]
    for key in ("reduce", "src", "dst", "ranks", "dtype", "shape"):
        if key in header:
            value = np.dtype(header[key]).name if key == "dtype" else header[key]
            parts.append(f"{key}={value}")
    return "(" + ", ".join(parts) + ")"


class JobGroup(ProcessGroup):
    """A backend whose groups meet through the job's store (shm, tcp): the world group joins the
    job and owns its store; every other group is formed by its members under a scope of its own."""

    def __init__(self, rank: int, ranks: Sequence[int], local_rank: int, timeout: float, job: Job, scope: str):
        """The member at index rank of ranks (the job's ranks of this group); scope is '' for the world."""
        super().__init__(rank, len(ranks), local_rank, timeout, ranks)
        self.job, self.scope = job, scope
        self.channels = job.channels

    @classmethod
    def world(cls, rank: int, world_size: int, local_rank: int, timeout: float, master_addr: str,
              master_port: int, secret: bytes) -> "JobGroup":
        cls._before_joining()
        job = Job.join(rank, world_size, timeout, master_addr, master_port, secret)
        try:
            return cls(rank, range(world_size), local_rank, timeout, job, "")
        except BaseException:
            job.close()
            raise

    @classmethod
    def _before_joining(cls) -> None:
        """What the backend checks of this host first."""

    def _subgroup(self, ranks: list[int], scope: str) -> "JobGroup":
        return type(self)(ranks.index(self.ranks[self.rank]), ranks, self.local_rank, self.timeout, self.job, scope)

    def close(self) -> None:
        super().close()
        if self.scope == "" and self.job is not None:  # the world group owns the job's store
            self.job.close()
            self.job = None


class SingleProcessGroup(ProcessGroup):
    """world_size 1: every collective is local."""
    backend = "single"
