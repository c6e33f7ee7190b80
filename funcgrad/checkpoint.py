"""Checkpoints: any pytree plus metadata in the safetensors format, written atomically.

    fg.checkpoint.save("ckpt.safetensors", {"model": model, "opt": state}, metadata={"step": 10})
    tree, metadata = fg.checkpoint.load("ckpt.safetensors", like={"model": model, "opt": state})

The file is plain safetensors (an 8-byte header length, a JSON header, raw little-endian data), so
PyTorch and other tools read it; bfloat16 is stored as BF16. Nothing is pickled. A save goes to a
temporary file that is fsynced and renamed over the target, so a crash never leaves a half-written
checkpoint in place; a load checks the header, the data's extent and a SHA-256 of the data, and,
given `like`, every name, shape and dtype.
"""
from __future__ import annotations

import contextlib
import hashlib
import json
import os
import re
import sys
import tempfile
import types
from pathlib import Path
from typing import Any

import numpy as np

from . import dtypes
from .array import Array, ArrayBase, to_numpy
from .tree import tree_flatten, tree_flatten_with_path
from .custom import checkpoint as remat

_TAGS = {dtypes.bool_: "BOOL", dtypes.uint8: "U8", dtypes.int8: "I8", dtypes.int16: "I16",
         dtypes.float16: "F16", dtypes.bfloat16: "BF16", dtypes.int32: "I32", dtypes.uint32: "U32",
         dtypes.float32: "F32", dtypes.float64: "F64", dtypes.int64: "I64"}
_DTYPES = {tag: dt for dt, tag in _TAGS.items()}
_MAX_HEADER = 100 * 2 ** 20
_META_KEY, _HASH_KEY = "funcgrad.metadata", "funcgrad.sha256"


class CheckpointError(ValueError):
    """A checkpoint file that is not what it should be (truncated, corrupted, or another model's)."""


def _name(path: tuple[str, ...]) -> str:
    """("['model']", ".layers", "[0]") -> "model.layers.0"."""
    parts = []
    for p in path:
        p = p.lstrip(".")
        m = re.fullmatch(r"\[(?:'(.*)'|\"(.*)\"|(.*))\]", p)
        parts.append(next(g for g in m.groups() if g is not None) if m else p)
    return ".".join(parts) if parts else "value"


def named_leaves(tree: Any) -> dict[str, Any]:
    """{dotted name: leaf} in flattening order; names are unique or this raises."""
    out: dict[str, Any] = {}
    with_path, _ = tree_flatten_with_path(tree)
    for path, leaf in with_path:
        name = _name(path)
        if name in out:
            raise ValueError(f"two leaves of the tree share the checkpoint name {name!r}")
        out[name] = leaf
    return out


# ---- metadata: JSON, with arrays (an RNG key) tagged so they come back as arrays --------------------
def _encode(value):
    if isinstance(value, (ArrayBase, np.ndarray)):
        arr = np.asarray(value)
        return {"__array__": arr.astype(np.float64 if dtypes.is_float(arr.dtype) else arr.dtype).tolist(),
                "dtype": str(arr.dtype), "shape": list(arr.shape)}
    if isinstance(value, np.generic):
        return value.item()
    if isinstance(value, dict):
        return {str(k): _encode(v) for k, v in value.items()}
    if isinstance(value, (list, tuple)):
        return [_encode(v) for v in value]
    return value


def _decode(value):
    if isinstance(value, dict):
        if "__array__" in value:
            return Array(np.asarray(value["__array__"]).astype(dtypes.canonicalize(value["dtype"]))
                         .reshape(value["shape"]))
        return {k: _decode(v) for k, v in value.items()}
    if isinstance(value, list):
        return [_decode(v) for v in value]
    return value


# ---- writing -------------------------------------------------------------------------------------------
def save(path: "str | os.PathLike", tree: Any, metadata: dict | None = None) -> None:
    """Write every array leaf of tree (named by its path) and metadata, atomically."""
    path = Path(path)
    arrays = {}
    for name, leaf in named_leaves(tree).items():
        if leaf is None:
            continue
        arr = to_numpy(leaf)
        if arr.dtype not in _TAGS:
            raise TypeError(f"checkpoint: leaf {name!r} has dtype {arr.dtype}, which safetensors cannot store")
        arrays[name] = np.asarray(arr, order="C").astype(arr.dtype.newbyteorder("<"), copy=False)
    header: dict[str, Any] = {}
    offset = 0
    for name, arr in arrays.items():
        header[name] = {"dtype": _TAGS[arr.dtype], "shape": list(arr.shape),
                        "data_offsets": [offset, offset + arr.nbytes]}
        offset += arr.nbytes
    digest = hashlib.sha256()
    for arr in arrays.values():
        digest.update(arr.tobytes())
    try:
        meta_json = json.dumps(_encode(metadata or {}))
    except TypeError as e:
        raise TypeError(f"checkpoint metadata must be JSON-serialisable (arrays allowed): {e}") from None
    header["__metadata__"] = {_META_KEY: meta_json, _HASH_KEY: digest.hexdigest()}
    blob = json.dumps(header, separators=(",", ":")).encode()
    blob += b" " * (-len(blob) % 8)  # the data starts 8-byte aligned, as safetensors writes it
    path.parent.mkdir(parents=True, exist_ok=True)
    fd, tmp = tempfile.mkstemp(prefix=f".{path.name}.", suffix=".tmp", dir=path.parent)
    try:
        with os.fdopen(fd, "wb") as f:
            f.write(len(blob).to_bytes(8, "little"))
            f.write(blob)
            for arr in arrays.values():
                f.write(arr.tobytes())
            f.flush()
            os.fsync(f.fileno())
        os.replace(tmp, path)
    except BaseException:
        if os.path.exists(tmp):
            os.unlink(tmp)
        raise
    _fsync_dir(path.parent)


def _fsync_dir(folder: Path) -> None:
    try:
        fd = os.open(folder, os.O_RDONLY)
    except OSError:
        return
    with contextlib.suppress(OSError):  # some filesystems cannot sync a directory; the rename is still atomic
        os.fsync(fd)
    os.close(fd)


# ---- reading ---------------------------------------------------------------------------------------------
def _read(path: Path) -> tuple[dict[str, np.ndarray], dict]:
    try:
        raw = path.read_bytes()
    except FileNotFoundError:
        raise FileNotFoundError(f"no checkpoint at {path}") from None
    if len(raw) < 8:
        raise CheckpointError(f"{path} is truncated: {len(raw)} bytes, not even a header length")
    n = int.from_bytes(raw[:8], "little")
    if n > _MAX_HEADER or 8 + n > len(raw):
        raise CheckpointError(f"{path} is truncated or not a safetensors file: header length {n}, file {len(raw)} bytes")
    try:
        header = json.loads(raw[8:8 + n])
    except (UnicodeDecodeError, json.JSONDecodeError) as e:
        raise CheckpointError(f"{path} has a corrupted header: {e}") from None
    if not isinstance(header, dict):
        raise CheckpointError(f"{path} has a corrupted header: not a JSON object")
    meta = header.pop("__metadata__", {}) or {}
    data = memoryview(raw)[8 + n:]
    arrays, spans = {}, []
    for name, info in header.items():
        try:
            dtype = _DTYPES[info["dtype"]]
            shape = tuple(int(d) for d in info["shape"])
            begin, end = (int(v) for v in info["data_offsets"])
        except (KeyError, TypeError, ValueError):
            raise CheckpointError(f"{path}: entry {name!r} of the header is malformed: {info!r}") from None
        if end - begin != int(np.prod(shape, dtype=np.int64)) * dtype.itemsize or begin < 0:
            raise CheckpointError(f"{path}: entry {name!r} claims {end - begin} bytes for shape {shape} {dtype}")
        spans.append((begin, end, name))
        arrays[name] = (dtype, shape, begin, end)
    expected = max((end for _, end, _ in spans), default=0)
    if len(data) < expected:
        raise CheckpointError(f"{path} is truncated: the header promises {expected} bytes of data, "
                              f"the file holds {len(data)}")
    spans.sort()
    for (b1, e1, n1), (b2, _, n2) in zip(spans, spans[1:]):
        if b2 != e1:
            raise CheckpointError(f"{path}: the data of {n1!r} and {n2!r} {'overlap' if b2 < e1 else 'leave a gap'}")
    if _HASH_KEY in meta and hashlib.sha256(data[:expected]).hexdigest() != meta[_HASH_KEY]:
        raise CheckpointError(f"{path} is corrupted: its data does not match the SHA-256 recorded when it was saved")
    out = {name: np.frombuffer(data, np.dtype(dtype).newbyteorder("<"), count=int(np.prod(shape, dtype=np.int64)),
                               offset=begin).reshape(shape).astype(dtype)
           for name, (dtype, shape, begin, end) in arrays.items()}
    user_meta = _decode(json.loads(meta[_META_KEY])) if _META_KEY in meta else dict(meta)
    return out, user_meta


def load(path: "str | os.PathLike", like: Any = None) -> tuple[Any, dict]:
    """(tree, metadata). With `like`, the tree has like's structure and every leaf is checked
    against like's name, shape and dtype; without it, a flat {name: Array} dict."""
    path = Path(path)
    arrays, metadata = _read(path)
    if like is None:
        return {k: Array(v) for k, v in arrays.items()}, metadata
    expected = named_leaves(like)
    wanted = {k for k, v in expected.items() if v is not None}
    missing = sorted(wanted - set(arrays))
    unexpected = sorted(set(arrays) - wanted)
    if missing or unexpected:
        raise CheckpointError(f"{path} does not fit the tree: missing {missing[:10]}"
                              f"{' ...' if len(missing) > 10 else ''}, unexpected {unexpected[:10]}"
                              f"{' ...' if len(unexpected) > 10 else ''}")
    leaves = []
    for name, ref in expected.items():
        if ref is None:
            leaves.append(None)
            continue
        got = arrays[name]
        ref_shape, ref_dtype = tuple(np.shape(ref)), to_numpy(ref).dtype if not hasattr(ref, "dtype") else ref.dtype
        if got.shape != ref_shape or got.dtype != ref_dtype:
            raise CheckpointError(f"{path}: {name!r} is {got.dtype}{list(got.shape)} in the file but "
                                  f"{ref_dtype}{list(ref_shape)} in the tree")
        leaves.append(Array(got))
    return tree_flatten(like)[1].unflatten(leaves), metadata


class _CheckpointModule(types.ModuleType):
    """`fg.checkpoint(f)` is rematerialisation (jax.checkpoint); `fg.checkpoint.save/load` are
    files. One name serves both, as both JAX and PyTorch users expect it."""

    def __call__(self, fun):
        return remat(fun)


sys.modules[__name__].__class__ = _CheckpointModule
