"""Meshes: the job's ranks laid out on named axes, as in JAX (`jax.make_mesh`) and PyTorch's
DeviceMesh. `make_mesh({"dp": 2, "tp": 2})` puts rank r at the row-major coordinates of r (the
last axis varies fastest: ranks 0 and 1 share a `tp` group, ranks 0 and 2 a `dp` group). Each
rank forms only the groups it belongs to, one per axis and, when a collective first names them
together, one per tuple of axes.

The collectives of funcgrad.dist.collectives name mesh axes; they use the current mesh: the one
made last, or the one of an enclosing `with mesh:`.
"""
from __future__ import annotations

import math
from typing import Mapping, Sequence

from .errors import DistError
from .group import ProcessGroup


class Place:
    """A position on named axes (row-major coordinates), without processes: what a mesh tells the
    code that splits a model, so one process can compute what any rank of a layout holds (to
    reshard a checkpoint). As the current mesh (`with place:`), collectives on it are an error."""

    def __init__(self, axes: Mapping[str, int], coords: Sequence[int]):
        self.axes = dict(axes)
        self.names = tuple(self.axes)
        self.coords = tuple(coords)
        self._previous: list = []

    @classmethod
    def of_rank(cls, axes: Mapping[str, int], rank: int) -> "Place":
        return cls(axes, _unravel(rank, tuple(dict(axes).values())))

    def __repr__(self) -> str:
        return f"{type(self).__name__}({self.axes}, coords={dict(zip(self.names, self.coords))})"

    def axis_names(self, axis_name: str | Sequence[str]) -> tuple[str, ...]:
        """axis_name as a tuple of these axes; an unknown name is an error naming the axes."""
        names = (axis_name,) if isinstance(axis_name, str) else tuple(axis_name)
        for name in names:
            if name not in self.axes:
                raise NameError(f"unbound axis name {name!r}: the mesh's axes are {list(self.names)}")
        if len(set(names)) != len(names):
            raise ValueError(f"axis names {list(names)} repeat an axis")
        return names

    def axis_size(self, axis_name: str | Sequence[str]) -> int:
        return math.prod(self.axes[n] for n in self.axis_names(axis_name))

    def axis_index(self, axis_name: str | Sequence[str]) -> int:
        """This position along the axes (row-major over a tuple of them, in its order)."""
        index = 0
        for name in self.axis_names(axis_name):
            index = index * self.axes[name] + self.coords[self.names.index(name)]
        return index

    def group(self, axis_name: str | Sequence[str]) -> ProcessGroup:
        raise DistError(f"{self!r} is a position without processes: no collective runs on it")

    # ---- the current mesh ---------------------------------------------------------------------------
    def __enter__(self):
        global _current
        self._previous.append(_current)
        _current = self
        return self

    def __exit__(self, *exc) -> None:
        global _current
        _current = self._previous.pop()


class Mesh(Place):
    """Named axes over a group's ranks; this process's coordinates and its group along each axis."""

    def __init__(self, axes: Mapping[str, int], world: ProcessGroup, scope: str):
        super().__init__(axes, _unravel(world.rank, tuple(dict(axes).values())))
        self.world, self.scope = world, scope
        self._groups: dict[tuple[str, ...], ProcessGroup] = {}

    def group(self, axis_name: str | Sequence[str]) -> ProcessGroup:
        """This process's group along the axes: the ranks that differ from it only there, in the
        order of axis_index."""
        names = self.axis_names(axis_name)
        if names not in self._groups:
            members = [r for r in range(self.world.world_size) if self._same_elsewhere(r, names)]
            members.sort(key=lambda r: self._index_of(r, names))
            self._groups[names] = self.world.group(members, f"{self.scope}{','.join(names)}/")
        return self._groups[names]

    def _same_elsewhere(self, rank: int, names: tuple[str, ...]) -> bool:
        theirs = _unravel(rank, tuple(self.axes.values()))
        return all(a == b for name, a, b in zip(self.names, theirs, self.coords) if name not in names)

    def _index_of(self, rank: int, names: tuple[str, ...]) -> int:
        theirs = _unravel(rank, tuple(self.axes.values()))
        index = 0
        for name in names:
            index = index * self.axes[name] + theirs[self.names.index(name)]
        return index

    def close(self) -> None:
        for group in self._groups.values():
            group.close()


_current: Place | None = None


def forget() -> None:
    """No current mesh (the process group it was made on is gone)."""
    global _current
    _current = None


def current() -> Place:
    if _current is None:
        raise DistError("no mesh: make one with dist.make_mesh({'dp': 2, 'tp': 2}) (after init_process_group)")
    return _current


def make(axes: Mapping[str, int], world: ProcessGroup) -> Mesh:
    """The mesh over world's ranks; it becomes the current mesh. Every rank calls it with the same
    axes (a disagreement is an error on every rank)."""
    global _current
    if not isinstance(axes, Mapping) or not axes:
        raise TypeError(f"make_mesh takes a dict of axis names to sizes, e.g. {{'dp': 2, 'tp': 2}}; got {axes!r}")
    for name, size in axes.items():
        if not isinstance(name, str) or not name:
            raise TypeError(f"mesh axis names must be non-empty strings, got {name!r}")
        if not isinstance(size, int) or isinstance(size, bool) or size < 1:
            raise ValueError(f"mesh axis {name!r} must have a positive integer size, got {size!r}")
    if math.prod(axes.values()) != world.world_size:
        raise DistError(f"the mesh {dict(axes)} has {math.prod(axes.values())} positions but the job has "
                        f"{world.world_size} ranks: the axis sizes must multiply to the world size")
    world._begin("make_mesh", None, axes=",".join(f"{k}={v}" for k, v in axes.items()))
    mesh = Mesh(axes, world, f"m{world.seq}/")
    for name in mesh.names:  # every rank forms its groups now, in the same order
        mesh.group(name)
    _current = mesh
    return mesh


def _unravel(index: int, shape: tuple[int, ...]) -> tuple[int, ...]:
    coords = []
    for size in reversed(shape):
        coords.append(index % size)
        index //= size
    return tuple(reversed(coords))
