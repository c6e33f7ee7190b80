"""The mpi backend: collectives through mpi4py, for clusters (`mpiexec -n 4 python train.py`).

Ranks and the world size come from MPI itself. Headers are checked as in every backend (with
an MPI allgather). Every wait is bounded by the group's timeout (non-blocking collectives, tested
until the deadline): a late or stalled peer is a DistTimeoutError naming the collective, and the
job is then aborted, since MPI cannot take back a pending collective; a dead rank is handled by
mpiexec, which ends the job. bfloat16 travels as float32, since MPI has no bfloat16 type.
"""
from __future__ import annotations

import atexit
import os
import sys
import time
import zlib
from typing import Sequence

import numpy as np

from .. import dtypes
from .errors import DistError, DistTimeoutError
from .group import ProcessGroup, finish

try:
    from mpi4py import MPI
except ImportError as e:  # reported by init_process_group("mpi")
    MPI = None
    IMPORT_ERROR = e


class MPIGroup(ProcessGroup):
    backend = "mpi"

    def __init__(self, comm, local_rank: int, timeout: float, ranks: Sequence[int], channels: dict):
        super().__init__(comm.Get_rank(), comm.Get_size(), local_rank, timeout, ranks)
        self.comm, self.channels = comm, channels
        self.stalled = False  # a collective timed out and is still pending

    @classmethod
    def world(cls, timeout: float) -> "MPIGroup":
        if MPI is None:
            raise ImportError(f"the mpi backend needs mpi4py and an MPI library: pip install 'funcgrad[mpi]' "
                              f"({IMPORT_ERROR})")
        comm = MPI.COMM_WORLD
        expected = os.environ.get("WORLD_SIZE")
        if expected is not None and expected != str(comm.Get_size()):
            raise DistError(f"init_process_group('mpi'): MPI started this process in a world of {comm.Get_size()}, "
                            f"but WORLD_SIZE={expected} (RANK={os.environ.get('RANK')}) says the job has {expected}: the "
                            f"mpi backend takes its ranks from MPI, so start the job with `mpiexec -n {expected} python "
                            f"script.py`; `funcgrad launch` starts independent processes (use it with shm or tcp)")
        local = comm.Split_type(MPI.COMM_TYPE_SHARED)
        local_rank = local.Get_rank()
        local.Free()
        return cls(comm, local_rank, timeout, range(comm.Get_size()), {})

    def _subgroup(self, ranks: list[int], scope: str) -> "MPIGroup":
        """MPI_Comm_create_group: collective over the members only, as the other backends' rendezvous."""
        tag = zlib.crc32(scope.encode()) & 0x7FFF
        comm = MPI.COMM_WORLD.Create_group(MPI.COMM_WORLD.Get_group().Incl(ranks), tag)
        return MPIGroup(comm, self.local_rank, self.timeout, ranks, self.channels)

    def isend(self, x, dst: int):
        if MPI.Query_thread() < MPI.THREAD_MULTIPLE:
            raise DistError(f"send and isend on the mpi backend run on a thread of their own and need "
                            f"MPI_THREAD_MULTIPLE (mpi4py's default, mpi4py.rc.thread_level = 'multiple'); "
                            f"this MPI provides level {MPI.Query_thread()}")
        return super().isend(x, dst)

    def _wait(self, request, what: str) -> None:
        """Every MPI wait is bounded: a non-blocking collective is tested until the deadline. A peer
        that never arrives leaves the collective pending, so the group is broken and the job is
        aborted when it is destroyed or the process exits (MPI could not finalize otherwise)."""
        deadline = time.monotonic() + self.timeout
        pause = 1e-5
        while not request.Test():
            if time.monotonic() > deadline:
                self.stalled = True
                atexit.register(self._abort)
                raise DistTimeoutError(f"{self.who(self.rank)}: timed out after {self.timeout:g}s in {what} (another rank "
                                       f"did not join it); the MPI job is aborted when this process exits")
            time.sleep(pause)
            pause = min(pause * 2, 1e-3)

    def _abort(self) -> None:
        sys.stdout.flush()
        sys.stderr.flush()
        time.sleep(0.5)  # the abort tears mpiexec's proxies down at once: let them forward the error first
        self.comm.Abort(1)

    def _all_gather_bytes(self, data: bytes, what: str) -> list[bytes]:
        sizes = np.zeros(self.world_size, np.int64)
        self._wait(self.comm.Iallgather(np.array([len(data)], np.int64), sizes), what)
        out = np.empty(int(sizes.sum()), np.uint8)
        starts = np.concatenate([[0], np.cumsum(sizes)[:-1]])
        self._wait(self.comm.Iallgatherv(np.frombuffer(data, np.uint8),
                                         [out, sizes.astype(np.int32), starts.astype(np.int32), MPI.BYTE]), what)
        return [out[b:b + n].tobytes() for b, n in zip(starts, sizes)]

    def _all_reduce(self, src: np.ndarray, out: np.ndarray, op: str, what: str) -> None:
        mpi_op = {"sum": MPI.SUM, "mean": MPI.SUM, "max": MPI.MAX, "min": MPI.MIN}[op]
        if src.dtype in dtypes.low_precision or src.dtype == np.bool_:  # types MPI does not know
            wide = src.astype(np.float32 if src.dtype != np.bool_ else np.int32)
            self._wait(self.comm.Iallreduce(MPI.IN_PLACE, wide, op=mpi_op), what)
            out[:] = wide.astype(out.dtype)
        else:
            self._wait(self.comm.Iallreduce(src, out, op=mpi_op), what)
        finish(out, op, self.world_size)

    def _broadcast_into(self, flat: np.ndarray, src: int, what: str) -> None:
        self._wait(self.comm.Ibcast(flat.view(np.uint8), root=src), what)

    def close(self) -> None:
        super().close()
        if self.stalled:
            self._abort()
