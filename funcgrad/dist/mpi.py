"""The mpi backend: collectives through mpi4py, for clusters (`mpiexec -n 4 python train.py`).

Ranks and the world size come from MPI itself. Headers are checked as in every backend (with
an MPI allgather); waits are MPI's own, so a dead rank is handled by mpiexec, which ends the job.
bfloat16 travels as float32, since MPI has no bfloat16 type.
"""
from __future__ import annotations

import os

import numpy as np

from .. import dtypes
from .errors import DistError
from .group import ProcessGroup, finish

try:
    from mpi4py import MPI
except ImportError as e:  # reported by init_process_group("mpi")
    MPI = None
    IMPORT_ERROR = e


class MPIGroup(ProcessGroup):
    backend = "mpi"

    def __init__(self, timeout: float):
        if MPI is None:
            raise ImportError(f"the mpi backend needs mpi4py and an MPI library: pip install 'funcgrad[mpi]' "
                              f"({IMPORT_ERROR})")
        self.comm = MPI.COMM_WORLD
        expected = os.environ.get("WORLD_SIZE")
        if expected is not None and expected != str(self.comm.Get_size()):
            raise DistError(f"init_process_group('mpi'): MPI started this process in a world of {self.comm.Get_size()}, "
                            f"but WORLD_SIZE={expected} (RANK={os.environ.get('RANK')}) says the job has {expected}: the "
                            f"mpi backend takes its ranks from MPI, so start the job with `mpiexec -n {expected} python "
                            f"script.py`; `funcgrad launch` starts independent processes (use it with shm or tcp)")
        local = self.comm.Split_type(MPI.COMM_TYPE_SHARED)
        super().__init__(self.comm.Get_rank(), self.comm.Get_size(), local.Get_rank(), timeout)
        local.Free()

    def _all_gather_bytes(self, data: bytes, what: str) -> list[bytes]:
        return self.comm.allgather(data)

    def _all_reduce(self, src: np.ndarray, out: np.ndarray, op: str, what: str) -> None:
        mpi_op = {"sum": MPI.SUM, "mean": MPI.SUM, "max": MPI.MAX, "min": MPI.MIN}[op]
        if src.dtype in dtypes.low_precision or src.dtype == np.bool_:  # types MPI does not know
            wide = src.astype(np.float32 if src.dtype != np.bool_ else np.int32)
            self.comm.Allreduce(MPI.IN_PLACE, wide, op=mpi_op)
            out[:] = wide.astype(out.dtype)
        else:
            self.comm.Allreduce(src, out, op=mpi_op)
        finish(out, op, self.world_size)

    def _broadcast_into(self, flat: np.ndarray, src: int, what: str) -> None:
        self.comm.Bcast(flat.view(np.uint8), root=src)
