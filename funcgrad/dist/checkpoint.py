"""Checkpoints of sharded training state (torch.distributed.checkpoint's idea).

    dist.checkpoint.save("runs/gpt/step-100", trainer)        # every process: its shard; rank 0: the manifest
    dist.checkpoint.load("runs/gpt/step-100", trainer)        # any layout: resharded if it differs
    model, opt_state, meta = dist.checkpoint.load_whole("runs/gpt/step-100", GPT(...), optim.adamw(1e-3))

Each process writes its parameters and optimiser state as it holds them (a funcgrad checkpoint:
safetensors, atomic, with a digest), and rank 0 then writes manifest.json naming the layout and
the files, so a directory with a manifest is complete. A trainer of the same layout reads back
its own file, exactly. Any other layout, or one process, reshards: the parts a layout gives its
ranks are slices of the whole (Layout.part), so for each saved rank the transpose of its slicing
(a vjp at the whole model's shapes, computed in one process at that rank's Place) puts its file's
values where they belong; elements several ranks hold (norms, data-parallel copies) are averaged
over their copies, which hold the same value.
"""
from __future__ import annotations

import json
import os
from pathlib import Path
from typing import Any

from .. import checkpoint as ckpt
from .. import numpy as fnp
from ..tree import tree_leaves, tree_map
from ..vjp import vjp
from .errors import DistError
from .layout import Layout, map_model_trees, zip_model_trees
from .mesh import Place

__all__ = ["save", "load", "load_whole", "MANIFEST"]

MANIFEST = "manifest.json"
FORMAT = "funcgrad-sharded/1"


def _shard_file(rank: int, nproc: int) -> str:
    return f"shard-{rank:05d}-of-{nproc:05d}.safetensors"


def _fields(layout: Layout) -> dict:
    return {"nproc": layout.nproc, "tp": layout.tp, "pp": layout.pp, "zero": layout.zero,
            "microbatches": layout.microbatches, "schedule": layout.schedule}


def save(directory: "str | os.PathLike", trainer, metadata: dict | None = None) -> None:
    """Every process of the trainer's job writes its shard; rank 0 then writes the manifest."""
    from . import barrier, get_rank
    directory = Path(directory)
    layout, rank = trainer.layout, get_rank()
    if rank == 0:
        directory.mkdir(parents=True, exist_ok=True)
        (directory / MANIFEST).unlink(missing_ok=True)  # an overwritten directory is incomplete until the end
    barrier()
    ckpt.save(directory / _shard_file(rank, layout.nproc), {"params": trainer.params, "opt_state": trainer.opt_state},
              metadata={"rank": rank, "layout": _fields(layout)})
    barrier()  # every shard is written before the manifest says so
    if rank == 0:
        manifest = {"format": FORMAT, "layout": _fields(layout),
                    "files": [_shard_file(r, layout.nproc) for r in range(layout.nproc)], "metadata": metadata or {}}
        tmp = directory / f".{MANIFEST}.tmp"
        tmp.write_text(json.dumps(manifest, indent=1))
        os.replace(tmp, directory / MANIFEST)
    barrier()


def _manifest(directory: Path) -> tuple[dict, Layout]:
    path = directory / MANIFEST
    if not path.exists():
        raise DistError(f"{directory} holds no {MANIFEST}: not a sharded checkpoint, or one whose saving did not "
                        f"finish")
    manifest = json.loads(path.read_text())
    if manifest.get("format") != FORMAT:
        raise DistError(f"{path} is not a {FORMAT} manifest (format {manifest.get('format')!r})")
    return manifest, Layout(**manifest["layout"])


def load(directory: "str | os.PathLike", trainer) -> dict:
    """Fill trainer (every process calls this) with the checkpoint's state, resharded when its
    layout differs from the trainer's. Returns the metadata given to save."""
    from . import get_rank
    directory = Path(directory)
    manifest, saved = _manifest(directory)
    if _fields(saved) == _fields(trainer.layout):
        tree, _ = ckpt.load(directory / manifest["files"][get_rank()],
                            like={"params": trainer.params, "opt_state": trainer.opt_state})
        trainer.params, trainer.opt_state = tree["params"], tree["opt_state"]
        return manifest["metadata"]
    model, state, metadata = load_whole(directory, trainer.like, trainer.inner)
    with trainer.mesh:
        trainer.params = trainer.layout.part(model)
        trainer.opt_state = trainer.layout.state_part(state, model)
    return metadata


def load_whole(directory: "str | os.PathLike", model, optimizer) -> tuple[Any, Any, dict]:
    """(the whole model, the optimiser's whole state as optimizer.init(model) shapes it, the
    metadata) from a sharded checkpoint of any layout, in one process: no process group needed.
    model and optimizer give the structure (their values are not used)."""
    directory = Path(directory)
    manifest, saved = _manifest(directory)
    like_state = optimizer.init(model)
    trees = []
    map_model_trees(like_state, model, lambda tree: trees.append(tree) or tree)
    sums = counts = None
    first_state = None
    for rank, name in enumerate(manifest["files"]):
        with Place.of_rank(saved.axes, rank):
            def split(params, moments):
                return saved.part(params), [saved.tree_part(t) for t in moments]
            (part, parts), pullback = vjp(split, model, trees)
            piece, _ = ckpt.load(directory / name, like={"params": part,
                                                         "opt_state": saved.state_part(like_state, model)})
        inner = piece["opt_state"].inner if saved.zero else piece["opt_state"]
        got = []
        zip_model_trees(like_state, inner, model, lambda _, theirs: got.append(theirs) or theirs, lambda a, b: a)
        values = pullback((piece["params"], got))
        ones = pullback(tree_map(fnp.ones_like, (part, parts)))
        sums = values if sums is None else tree_map(lambda a, b: a + b, sums, values)
        counts = ones if counts is None else tree_map(lambda a, b: a + b, counts, ones)
        first_state = inner if first_state is None else first_state
    for c in tree_leaves(counts):
        if not bool(fnp.all(c > 0)):
            raise DistError(f"{directory}: the shards do not cover every element of the model (layout {saved!r})")
    whole_params, whole_trees = tree_map(lambda s, c: s / c, sums, counts)
    rebuilt = iter(whole_trees)
    state = zip_model_trees(like_state, first_state, model, lambda *_: next(rebuilt), lambda _, theirs: theirs)
    return whole_params, state, manifest["metadata"]

