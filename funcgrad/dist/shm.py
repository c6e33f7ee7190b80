"""The shm backend: the ranks of one host exchange data through shared memory (/dev/shm).

Each rank owns a data segment and a slot of a shared control block. all_reduce is a
reduce-scatter plus an all-gather over the segments: every rank copies its data in, reduces its
1/N slice across all segments, and copies the reduced slices out, with a barrier between the
phases. Barriers spin briefly, then sleep, on per-rank sequence counters, watch the other ranks'
pids so a dead peer is reported within a fraction of a second, and time out naming the rank
that did not arrive. Segments are named by job, pid, group and rank, unlinked on close, at exit,
on SIGTERM and when a peer dies; stale ones of killed runs are removed at the next start. A group
of some of the ranks (new_group, a mesh axis, a send/recv channel) has segments of its own (sparse:
only what a message touches takes memory).
"""
from __future__ import annotations

import atexit
import contextlib
import hashlib
import mmap
import os
import re
import signal
import struct
import threading
import time
from pathlib import Path
from typing import Sequence

import numpy as np

from ..process import alive
from .errors import DistError, DistTimeoutError
from .group import REDUCE_OPS, JobGroup, finish
from .store import Job

SHM_DIR = Path("/dev/shm")
CAPACITY = 64 * 2 ** 20  # bytes per rank per round; larger messages go in rounds
HEADER = 4096  # bytes per rank for the header exchange (two of them, used alternately)
SMALL = 64 * 2 ** 10  # all-reduces up to this size take the one-barrier path (two buffers, alternately)
PIPELINE = 4 * 2 ** 20  # bytes per step of a broadcast or send: written and read at once, in alternate halves
_SLOT = 64  # control bytes per rank: sequence counter, pid


def _segment(name: str, size: int, create: bool) -> tuple[mmap.mmap, Path]:
    path = SHM_DIR / name
    flags = os.O_RDWR | (os.O_CREAT | os.O_EXCL if create else 0)
    fd = os.open(path, flags, 0o600)
    try:
        if create:
            os.ftruncate(fd, size)
        return mmap.mmap(fd, size), path
    finally:
        os.close(fd)


def remove_stale_segments(pids=None) -> list[str]:
    """Unlink funcgrad segments whose creating process is gone (a run that was killed), or, given
    pids, those these (finished) processes created: the launcher's clean-up after its workers."""
    removed = []
    for path in SHM_DIR.glob("funcgrad_*"):
        m = re.match(r"funcgrad_[0-9a-f]+_p(\d+)_", path.name)
        if m and (int(m.group(1)) in pids if pids is not None else not alive(int(m.group(1)))):
            with contextlib.suppress(OSError):  # another process may remove it first
                path.unlink()
                removed.append(path.name)
    return removed


_open_groups: list["SHMGroup"] = []  # what a SIGTERM must unlink


def _close_on_sigterm() -> None:
    """SIGTERM skips atexit: unlink this process's segments first, then end as SIGTERM would.
    Only where SIGTERM still has its default action (the program's own handler wins) and only
    from the main thread (where Python runs handlers)."""
    if threading.current_thread() is not threading.main_thread() or \
            signal.getsignal(signal.SIGTERM) is not signal.SIG_DFL:
        return

    def handler(signum, frame):
        for group in list(_open_groups):
            group.close()
        signal.signal(signal.SIGTERM, signal.SIG_DFL)
        os.kill(os.getpid(), signal.SIGTERM)
    signal.signal(signal.SIGTERM, handler)


class SHMGroup(JobGroup):
    backend = "shm"

    def __init__(self, rank: int, ranks: Sequence[int], local_rank: int, timeout: float, job: Job, scope: str):
        super().__init__(rank, ranks, local_rank, timeout, job, scope)
        self.paths: list[Path] = []
        self.maps: list[mmap.mmap] = []
        self.counter = 0
        try:
            self._rendezvous()
        except BaseException:
            self.close()
            raise
        _open_groups.append(self)
        atexit.register(self.close)
        _close_on_sigterm()

    @classmethod
    def _before_joining(cls) -> None:
        if not SHM_DIR.is_dir():
            raise DistError("the shm backend needs /dev/shm (Linux); use backend='tcp'")
        remove_stale_segments()

    def _rendezvous(self):
        n, r, t, store = self.world_size, self.rank, self.timeout, self.job.store
        tag = hashlib.sha256(self.scope.encode()).hexdigest()[:8] if self.scope else "w"
        mine = f"funcgrad_{self.job.id.decode()[:16]}_p{os.getpid()}_{tag}_r{self.ranks[r]}"
        size = CAPACITY + 2 * HEADER + _SLOT
        self.data_map, path = _segment(mine, size, create=True)
        self.paths.append(path)
        store.set(f"{self.scope}shm/{r}", f"{mine} {os.getpid()}".encode())
        self.segments, self.pids = [], []
        for peer in range(n):
            try:
                name, pid = store.wait_get(f"{self.scope}shm/{peer}", t).decode().split()
            except DistTimeoutError:
                raise DistTimeoutError(f"{self.who(peer)} did not join within {t:g}s: the group has {n} ranks "
                                       f"({self.ranks}); were fewer processes started?") from None
            segment = self.data_map if peer == r else _segment(name, size, create=False)[0]
            self.maps.append(segment)
            self.segments.append(segment)
            self.pids.append(int(pid))
            self.paths.append(SHM_DIR / name)
        self.data = [np.frombuffer(m, np.uint8, CAPACITY) for m in self.segments]
        self.headers = [np.frombuffer(m, np.uint8, 2 * HEADER, CAPACITY) for m in self.segments]
        self.slots = [np.frombuffer(m, np.int64, 1, CAPACITY + 2 * HEADER) for m in self.segments]
        self.small_ops = 0
        self._barrier("rendezvous")

    # ---- synchronisation ------------------------------------------------------------------------------
    def _barrier(self, what: str) -> None:
        self.counter += 1
        self.slots[self.rank][0] = self.counter
        deadline = time.monotonic() + self.timeout
        spins = 0
        while True:
            behind = [p for p in range(self.world_size) if self.slots[p][0] < self.counter]
            if not behind:
                return
            spins += 1
            if spins < 64:
                continue  # spin: the others are usually a few microseconds away
            if spins % 256 == 0:
                for p in behind:
                    if not alive(self.pids[p]):
                        self._unlink_peer(p)
                        raise DistError(f"{self.who(self.rank)}: {self.who(p)} (pid {self.pids[p]}) died during {what}")
                if time.monotonic() > deadline:
                    raise DistTimeoutError(f"{self.who(self.rank)}: timed out after {self.timeout:g}s in {what} waiting "
                                           f"for rank{'s' if len(behind) > 1 else ''} "
                                           f"{', '.join(str(self.ranks[p]) for p in behind)} "
                                           f"(did {'they' if len(behind) > 1 else 'it'} skip the collective?)")
            if spins < 4096:
                os.sched_yield()  # give the core to a rank that still has work (more ranks than cores)
            else:
                time.sleep(0.0005)

    def _unlink_peer(self, peer: int) -> None:
        with contextlib.suppress(OSError):  # the dead peer's segment may already be gone
            self.paths[1 + peer].unlink()

    # ---- collectives ----------------------------------------------------------------------------------
    def _all_gather_bytes(self, data: bytes, what: str) -> list[bytes]:
        """One barrier: the header buffers alternate, and any rank can write this one again only
        after a later barrier that every rank reaches once it has finished reading."""
        if len(data) > HEADER - 8:
            return self._all_gather_large(data, what)
        self.small_ops += 1
        start = CAPACITY + (self.small_ops % 2) * HEADER
        self.segments[self.rank][start:start + 8 + len(data)] = struct.pack("<q", len(data)) + data
        self._barrier(what)
        out = []
        for segment in self.segments:
            (n,) = struct.unpack("<q", segment[start:start + 8])
            out.append(segment[start + 8:start + 8 + n])
        return out

    def _all_gather_large(self, data: bytes, what: str) -> list[bytes]:
        sizes = [int(s) for s in self._all_gather_bytes(str(len(data)).encode(), what)]
        out = [bytearray(s) for s in sizes]
        for start in range(0, max(sizes), CAPACITY):
            piece = data[start:start + CAPACITY]
            self.data[self.rank][:len(piece)] = np.frombuffer(piece, np.uint8)
            self._barrier(what)
            for p, size in enumerate(sizes):
                k = min(CAPACITY, max(size - start, 0))
                out[p][start:start + k] = self.data[p][:k].tobytes()
            self._barrier(what)
        return [bytes(b) for b in out]

    def _rounds(self, src: np.ndarray, what: str):
        """src through the segments a chunk at a time: each rank writes its chunk, then (after a
        barrier) the caller reads every rank's chunk from the yielded views, (start, views); the
        next round begins after a barrier that every rank reaches once it has finished reading."""
        per_round = CAPACITY // src.itemsize
        for start in range(0, src.size, per_round):
            block = src[start:start + per_round]
            views = [np.frombuffer(d, src.dtype, block.size) for d in self.data]
            views[self.rank][:] = block
            self._barrier(what)
            yield start, views
            self._barrier(what)

    def _all_gather_into(self, src: np.ndarray, out: np.ndarray, what: str) -> None:
        """Every rank's chunk copied straight into the output (two copies of the data in all)."""
        for start, views in self._rounds(src, what):
            for p, view in enumerate(views):
                out[p, start:start + view.size] = view

    def _reduce_scatter_into(self, src: np.ndarray, out: np.ndarray, op: str, what: str) -> None:
        """Each rank reduces (in rank order) only where a round's chunk meets its own share,
        straight into out: half an all-reduce's copies."""
        mine = self.rank * out.size
        for start, views in self._rounds(src, what):
            lo, hi = max(start, mine), min(start + views[0].size, mine + out.size)
            if lo < hi:
                _reduce_in_order(out[lo - mine:hi - mine], [v[lo - start:hi - start] for v in views], op)
        finish(out, op, self.world_size)

    def _all_reduce(self, src: np.ndarray, out: np.ndarray, op: str, what: str) -> None:
        n, r = self.world_size, self.rank
        reduce = REDUCE_OPS[op]
        if src.nbytes <= SMALL:  # one barrier: every rank reduces the whole (small) array, in rank order
            self.small_ops += 1
            offset = (self.small_ops % 2) * SMALL
            views = [np.frombuffer(d, src.dtype, src.size, offset) for d in self.data]
            views[r][:] = src
            self._barrier(what)
            _reduce_in_order(out, views, op)
            finish(out, op, n)
            return
        for start, views in self._rounds(src, what):  # each rank reduces a slice, then all copy all
            bounds = np.linspace(0, views[0].size, n + 1).astype(np.int64)
            lo, hi = bounds[r], bounds[r + 1]
            acc = views[r][lo:hi]
            for p in range(n):
                if p != r:
                    reduce(acc, views[p][lo:hi], out=acc)
            finish(acc, op, n)
            self._barrier(what)
            result = out[start:start + views[0].size]
            for p in range(n):
                result[bounds[p]:bounds[p + 1]] = views[p][bounds[p]:bounds[p + 1]]

    def _broadcast_into(self, flat: np.ndarray, src: int, what: str) -> None:
        """Pipelined through two halves of src's segment: at step i src writes chunk i into one
        half while the others read chunk i - 1 from the other, so the two copies overlap; the
        barrier closing step i frees the half that step i + 1 writes (its readers are done)."""
        raw = flat.view(np.uint8)
        step = min(PIPELINE, CAPACITY // 2)
        halves = (self.data[src][:step], self.data[src][step:2 * step])
        starts = range(0, raw.size, step)
        for i in range(len(starts) + 1):
            if self.rank == src and i < len(starts):
                piece = raw[starts[i]:starts[i] + step]
                halves[i % 2][:piece.size] = piece
            elif self.rank != src and i > 0:
                piece = raw[starts[i - 1]:starts[i - 1] + step]
                piece[:] = halves[(i - 1) % 2][:piece.size]
            self._barrier(what)

    def close(self) -> None:
        super().close()
        for path in self.paths[:1]:  # our own segment
            with contextlib.suppress(OSError):  # a survivor may have removed it after our peer died
                path.unlink()
        if self in _open_groups:
            _open_groups.remove(self)


def _reduce_in_order(out: np.ndarray, parts: list, op: str) -> None:
    """out = parts[0] op parts[1] op ..., in rank order (every rank gets the same rounding)."""
    reduce = REDUCE_OPS[op]
    out[:] = parts[0]
    for part in parts[1:]:
        reduce(out, part, out=out)
