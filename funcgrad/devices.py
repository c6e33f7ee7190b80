"""Explicit placement of arrays on devices. Nothing moves between devices behind your back."""
from __future__ import annotations

from typing import Any

from .array import Array, ArrayBase, Device, parse_device, to_numpy
from .tree import tree_map


def devices() -> list[Device]:
    """The devices arrays can live on in this process."""
    return [Device("cpu")]


def device_put(tree: Any, device: "str | Device" = "cpu") -> Any:
    """Every array leaf of tree, on `device` ('cpu', 'cuda' or 'cuda:N')."""
    target = parse_device(device)
    if target not in devices():
        raise RuntimeError(f"device {target} is not available: this process has {devices()} "
                           f"(funcgrad runs on the CPU here; GPU arrays need an NVIDIA GPU and CUDA backend)")

    def put(x):
        return x if isinstance(x, ArrayBase) else Array(to_numpy(x))
    return tree_map(put, tree)
