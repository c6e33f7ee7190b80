"""Process groups, meshes and collectives (import funcgrad.dist as dist).

    dist.init_process_group("tcp")             # reads MASTER_ADDR, MASTER_PORT, WORLD_SIZE, RANK
    grads = dist.all_reduce_tree(grads, op="mean")
    params = dist.broadcast_tree(params, src=0)
    mesh = dist.make_mesh({"dp": 2, "tp": 2})   # named axes over the ranks, row-major
    y = dist.psum(x, "tp")                      # differentiable collectives over mesh axes

The collectives on groups (all_reduce, broadcast, send, ...) take and return arrays, eagerly, as
torch.distributed's do; those on mesh axes (psum, all_gather(x, axis_name), ppermute, ...) are
primitives with jax.lax's names and semantics, which grad, jit and vmap see through.

`funcgrad launch --nproc-per-node N script.py` (or `python -m funcgrad.dist.launch`) starts the
processes and sets the variables. world_size 1 works everywhere, with no network.
"""
from __future__ import annotations

import datetime
import os
from typing import Sequence

import numpy as np

from . import collectives as _collectives
from . import mesh as _mesh
from .collectives import (all_gather_invariant, all_to_all, axis_index, axis_size, pmax, pmean, pmin, ppermute, psum,
                          psum_invariant, psum_scatter, pvary)
from .errors import DistError, DistTimeoutError
from .group import ProcessGroup, SingleProcessGroup, Work
from .mesh import Mesh

__all__ = ["init_process_group", "destroy_process_group", "is_initialized", "get_rank", "get_world_size",
           "get_local_rank", "is_main_process", "barrier", "all_reduce", "broadcast", "all_gather",
           "reduce_scatter", "all_reduce_tree", "broadcast_tree", "new_group", "send", "isend", "recv", "Work", "make_mesh", "Mesh",
           "psum", "pmean", "pmax", "pmin", "psum_scatter", "ppermute", "all_to_all", "axis_index", "axis_size",
           "pvary", "psum_invariant", "all_gather_invariant", "DistError", "DistTimeoutError", "ProcessGroup",
           "BACKENDS"]

BACKENDS = ("shm", "tcp", "mpi")
_group: ProcessGroup | None = None
_groups: list[ProcessGroup] = []  # formed from the world by new_group: closed with it
_meshes: list[Mesh] = []


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
        _group = MPIGroup.world(float(timeout))
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
    _group = Group.world(rank, world_size, local_rank, float(timeout), master_addr, master_port, secret.encode())
    return _group


def _default() -> ProcessGroup:
    if _group is None:
        raise DistError("no process group: call dist.init_process_group() first")
    return _group


def destroy_process_group() -> None:
    """Close the world group and every group, mesh and channel formed from it."""
    global _group
    if _group is not None:
        for channel in _group.channels.values():
            channel.close()
        _group.channels.clear()
    for group in _groups:
        group.close()
    _groups.clear()
    for mesh in _meshes:
        mesh.close()
    _meshes.clear()
    _mesh.forget()
    if _group is not None:
        _group.close()
        _group = None


def is_initialized() -> bool:
    return _group is not None


def new_group(ranks: Sequence[int]) -> ProcessGroup | None:
    """A group of the job's ranks (torch.distributed.new_group). Every process of the job calls it
    with the same ranks, in the same order of calls, member or not (a disagreement is an error on
    every rank); a member gets the group, where its rank is its place in the sorted ranks, any
    other process None. Collectives take it as group=; ranks given to them stay the job's."""
    world = _default()
    members = _checked_ranks(ranks, world.world_size)
    world._begin("new_group", None, ranks=",".join(map(str, members)))
    return _formed(world, members, f"g{world.seq}/")


def make_mesh(axes: dict[str, int]) -> Mesh:
    """Named axes over the job's ranks (row-major: the last axis varies fastest), which becomes the
    current mesh of the collectives on axes (psum(x, "tp"), ...). Every rank calls it with the
    same axes; their sizes must multiply to the world size."""
    mesh = _mesh.make(axes, _default())
    _meshes.append(mesh)
    return mesh


def _formed(world: ProcessGroup, members: list[int], scope: str) -> ProcessGroup | None:
    if world.rank not in members:
        return None
    group = world.group(members, scope)
    _groups.append(group)
    return group


def _checked_ranks(ranks, world_size: int) -> list[int]:
    members = list(ranks)
    if not members:
        raise ValueError("a group needs at least one rank")
    for r in members:
        if not isinstance(r, (int, np.integer)) or isinstance(r, bool) or not 0 <= r < world_size:
            raise ValueError(f"rank {r!r} is not a rank of the job (world size {world_size})")
    if len(set(members)) != len(members):
        raise ValueError(f"ranks {members} name a rank twice")
    return sorted(int(r) for r in members)


def _resolve(group: ProcessGroup | None) -> ProcessGroup:
    if group is None:
        return _default()
    if not isinstance(group, ProcessGroup):
        raise TypeError(f"group must be a ProcessGroup from new_group or a mesh, got {type(group).__name__} "
                        f"(new_group returns None to a process outside the group)")
    return group


def _index(group: ProcessGroup, rank: int, role: str) -> int:
    """The place in group of the job's rank `rank` (torch's collectives take the job's ranks)."""
    if rank not in group.ranks:
        raise ValueError(f"{role} rank {rank!r} is not in the group (ranks {group.ranks})")
    return group.ranks.index(rank)


def get_rank(group: ProcessGroup | None = None) -> int:
    """This process's rank in the job, or its place in group."""
    return _resolve(group).rank


def get_world_size(group: ProcessGroup | None = None) -> int:
    return _resolve(group).world_size


def get_local_rank() -> int:
    return _default().local_rank


def is_main_process() -> bool:
    return _group is None or _group.rank == 0


def barrier(group: ProcessGroup | None = None) -> None:
    _resolve(group).barrier()


def all_reduce(x, op: str = "sum", group: ProcessGroup | None = None):
    return _resolve(group).all_reduce(x, op)


def broadcast(x, src: int = 0, group: ProcessGroup | None = None):
    """x from the job's rank src (a member of group), on every member."""
    g = _resolve(group)
    return g.broadcast(x, _index(g, src, "source"))


def all_gather(x, axis_name=None, *, axis: int = 0, tiled: bool = False, group: ProcessGroup | None = None):
    """With a mesh axis name: jax.lax.all_gather, differentiable (stacked at axis, or concatenated
    along it when tiled). Without: every member's x of group, stacked along a new first axis."""
    if axis_name is not None:
        return _collectives.all_gather(x, axis_name, axis=axis, tiled=tiled)
    return _resolve(group).all_gather(x)


def reduce_scatter(x, op: str = "sum", group: ProcessGroup | None = None):
    return _resolve(group).reduce_scatter(x, op)


def send(x, dst: int, group: ProcessGroup | None = None) -> None:
    """x to the job's rank dst, which takes it with recv(src=this rank, like=...)."""
    g = _resolve(group)
    g.send(x, _index(g, dst, "destination"))


def isend(x, dst: int, group: ProcessGroup | None = None) -> Work:
    """send without waiting: the transfer runs on a thread, after this rank's earlier sends to dst;
    the result's wait() returns when it is done and raises what went wrong."""
    g = _resolve(group)
    return g.isend(x, _index(g, dst, "destination"))


def recv(src: int, like, group: ProcessGroup | None = None):
    """What the job's rank src sends; like gives the shape and dtype expected (checked)."""
    g = _resolve(group)
    return g.recv(_index(g, src, "source"), like)


def all_reduce_tree(tree, op: str = "mean", bucket_bytes: int = 25 * 2 ** 20, group: ProcessGroup | None = None):
    return _resolve(group).all_reduce_tree(tree, op, bucket_bytes)


def broadcast_tree(tree, src: int = 0, bucket_bytes: int = 25 * 2 ** 20, group: ProcessGroup | None = None):
    g = _resolve(group)
    return g.broadcast_tree(tree, _index(g, src, "source"), bucket_bytes)
