"""Data parallelism: process groups and collectives (import funcgrad.dist as dist).

    dist.init_process_group("tcp")             # reads MASTER_ADDR, MASTER_PORT, WORLD_SIZE, RANK
    grads = dist.all_reduce_tree(grads, op="mean")
    params = dist.broadcast_tree(params, src=0)

`funcgrad launch --nproc-per-node N script.py` (or `python -m funcgrad.dist.launch`) starts the
processes and sets the variables. world_size 1 works everywhere, with no network.
"""
from __future__ import annotations

import datetime
import os

from .errors import DistError, DistTimeoutError
from .group import ProcessGroup, SingleProcessGroup

__all__ = ["init_process_group", "destroy_process_group", "is_initialized", "get_rank", "get_world_size",
           "get_local_rank", "is_main_process", "barrier", "all_reduce", "broadcast", "all_gather",
           "reduce_scatter", "all_reduce_tree", "broadcast_tree", "DistError", "DistTimeoutError", "ProcessGroup",
           "BACKENDS"]

BACKENDS = ("shm", "tcp", "mpi")
_group: ProcessGroup | None = None


def _env_int(name: str, default: int | None = None) -> int:
    value = os.environ.get(name)
    if value is None:
        if default is None:
            raise DistError(f"{name} is not set: start the job with `funcgrad launch` or set it yourself")
        return default
    try:
        return int(value)
    except ValueError:
        raise DistError(f"{name} must be an integer, got {value!r}") from None


def init_process_group(backend: str = "tcp", init_method: str = "env://", timeout=300.0,
                       rank: int | None = None, world_size: int | None = None) -> ProcessGroup:
    """Join the job as the default process group. timeout (seconds or a timedelta) bounds every
    wait: rendezvous and each collective."""
    global _group
    if _group is not None:
        raise DistError("a process group is already initialised: destroy_process_group() first")
    if backend not in BACKENDS:
        raise ValueError(f"backend must be one of {BACKENDS}, got {backend!r}")
    if init_method != "env://":
        raise ValueError(f"init_method must be 'env://' (MASTER_ADDR, MASTER_PORT, WORLD_SIZE, RANK), "
                         f"got {init_method!r}")
    if isinstance(timeout, datetime.timedelta):
        timeout = timeout.total_seconds()
    if timeout <= 0:
        raise ValueError(f"timeout must be positive, got {timeout}")
    if backend == "mpi":
        from .mpi import MPIGroup
        _group = MPIGroup(float(timeout))
        return _group
    world_size = _env_int("WORLD_SIZE", 1) if world_size is None else world_size
    rank = _env_int("RANK", 0) if rank is None else rank
    local_rank = _env_int("LOCAL_RANK", rank)
    if world_size < 1:
        raise DistError(f"WORLD_SIZE must be at least 1, got {world_size}")
    if not 0 <= rank < world_size:
        raise DistError(f"RANK {rank} is not below WORLD_SIZE {world_size}")
    if world_size == 1:
        _group = SingleProcessGroup(0, 1, local_rank, float(timeout))
        return _group
    master_addr = os.environ.get("MASTER_ADDR", "127.0.0.1")
    master_port = _env_int("MASTER_PORT")
    if not 0 < master_port < 65536:
        raise DistError(f"MASTER_PORT must be in 1..65535, got {master_port}")
    secret = os.environ.get("FUNCGRAD_DIST_SECRET")
    if not secret:
        raise DistError("FUNCGRAD_DIST_SECRET is not set: every process of a job needs the same secret "
                        "(funcgrad launch generates one)")
    if backend == "shm":
        from .shm import SHMGroup as Group
    else:
        from .tcp import TCPGroup as Group
    _group = Group(rank, world_size, local_rank, float(timeout), master_addr, master_port, secret.encode())
    return _group


def _default() -> ProcessGroup:
    if _group is None:
        raise DistError("no process group: call dist.init_process_group() first")
    return _group


def destroy_process_group() -> None:
    global _group
    if _group is not None:
        _group.close()
        _group = None


def is_initialized() -> bool:
    return _group is not None


def get_rank() -> int:
    return _default().rank


def get_world_size() -> int:
    return _default().world_size


def get_local_rank() -> int:
    return _default().local_rank


def is_main_process() -> bool:
    return _group is None or _group.rank == 0


def barrier() -> None:
    _default().barrier()


def all_reduce(x, op: str = "sum"):
    return _default().all_reduce(x, op)


def broadcast(x, src: int = 0):
    return _default().broadcast(x, src)


def all_gather(x):
    return _default().all_gather(x)


def reduce_scatter(x, op: str = "sum"):
    return _default().reduce_scatter(x, op)


def all_reduce_tree(tree, op: str = "mean", bucket_bytes: int = 25 * 2 ** 20):
    return _default().all_reduce_tree(tree, op, bucket_bytes)


def broadcast_tree(tree, src: int = 0, bucket_bytes: int = 25 * 2 ** 20):
    return _default().broadcast_tree(tree, src, bucket_bytes)
