"""Checkpoints: any pytree plus metadata in the safetensors format, written atomically.

    fg.checkpoint.save("ckpt.safetensors", {"model": model, "opt": state}, metadata={"step": 10})
    tree, metadata = fg.checkpoint.load("ckpt.safetensors", like={"model": model, "opt": state})

The file is plain safetensors (an 8-byte header length, a JSON header, raw little-endian data), so
PyTorch and other tools read it; bfloat16 is stored as BF16. Nothing is pickled. A save goes to a
temporary file that is fsynced and renamed over the target, so a crash never leaves a half-written
checkpoint in place (and a later save removes a killed save's temporary file); a load checks every
header entry, the data's extent and a SHA-256 of the header and the data, and, given `like`, every
name, shape and dtype. Files other tools wrote load with foreign=True.
"""
from __future__ import annotations

import contextlib
import glob
import hashlib
import json
import math
import os
import re
import socket
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
from .process import alive

_TAGS = {dtypes.bool_: "BOOL", dtypes.uint8: "U8", dtypes.int8: "I8", dtypes.int16: "I16", dtypes.uint16: "U16",
         dtypes.float16: "F16", dtypes.bfloat16: "BF16", dtypes.int32: "I32", dtypes.uint32: "U32",
         dtypes.float32: "F32", dtypes.float64: "F64", dtypes.int64: "I64", dtypes.uint64: "U64",
         dtypes.complex64: "C64"}  # safetensors 0.7 added C64; the format has no complex128
_DTYPES = {tag: dt for dt, tag in _TAGS.items()}
_MAX_HEADER = 100 * 2 ** 20
_MAX_RANK = 64
_META_KEY = "funcgrad.metadata"
_DIGEST_KEY = "funcgrad.digest"  # SHA-256 of the header (without this field) and the data
_LEGACY_DIGEST_KEY = "funcgrad.sha256"  # before the header was covered: of the data only
_RESERVED = "__metadata__"  # safetensors' own header entry


# Python numbers in a tree are stored exactly (a float's 53 bits; funcgrad's default float32 would round it)
_PYTHON_SCALARS = {bool: np.bool_, int: np.int64, float: np.float64}


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
        if dtypes.is_complex(arr.dtype):  # JSON has no complex numbers: the parts, as a last axis of 2
            return {"__complex__": _encode(np.stack([arr.real, arr.imag], -1)), "dtype": str(arr.dtype)}
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
        if "__complex__" in value:
            parts = np.asarray(_decode(value["__complex__"]).numpy())
            out = np.empty(parts.shape[:-1], dtypes.canonicalize(value["dtype"]))
            out.real, out.imag = parts[..., 0], parts[..., 1]  # never re + 1j * im: 1j * inf has a NaN real part
            return Array(out)
        if "__array__" in value:
            return Array(np.asarray(value["__array__"]).astype(dtypes.canonicalize(value["dtype"]))
                         .reshape(value["shape"]))
        return {k: _decode(v) for k, v in value.items()}
    if isinstance(value, list):
        return [_decode(v) for v in value]
    return value


# ---- writing -------------------------------------------------------------------------------------------
def _canonical(header: dict) -> bytes:
    """The bytes the digest covers for a header: its JSON with sorted keys, whatever the file's order."""
    return json.dumps(header, sort_keys=True, separators=(",", ":")).encode()


def save(path: "str | os.PathLike", tree: Any, metadata: dict | None = None) -> None:
    """Write every array leaf of tree (named by its path) and metadata, atomically. A SHA-256 of
    the header and the data is stored with them, so any changed byte is found on load."""
    path = Path(path)
    arrays = {}
    for name, leaf in named_leaves(tree).items():
        if leaf is None:
            continue
        if name == _RESERVED:
            raise ValueError(f"checkpoint: a leaf may not be named {_RESERVED!r}, the safetensors format's own "
                             f"header entry (it could be saved but never loaded); rename it")
        arr = np.asarray(leaf, _PYTHON_SCALARS[type(leaf)]) if type(leaf) in _PYTHON_SCALARS else to_numpy(leaf)
        if arr.dtype not in _TAGS:
            hint = " (store its .real and .imag as two float64 leaves)" if arr.dtype == dtypes.complex128 else ""
            raise TypeError(f"checkpoint: leaf {name!r} has dtype {arr.dtype}, which safetensors cannot store{hint}")
        arrays[name] = np.asarray(arr, order="C").astype(arr.dtype.newbyteorder("<"), copy=False)
    header: dict[str, Any] = {}
    offset = 0
    for name, arr in arrays.items():
        header[name] = {"dtype": _TAGS[arr.dtype], "shape": list(arr.shape),
                        "data_offsets": [offset, offset + arr.nbytes]}
        offset += arr.nbytes
    try:
        meta_json = json.dumps(_encode(metadata or {}))
    except TypeError as e:
        raise TypeError(f"checkpoint metadata must be JSON-serialisable (arrays allowed): {e}") from None
    header[_RESERVED] = {_META_KEY: meta_json}
    digest = hashlib.sha256(_canonical(header))
    for arr in arrays.values():
        digest.update(arr.tobytes())
    header[_RESERVED][_DIGEST_KEY] = digest.hexdigest()
    blob = json.dumps(header, separators=(",", ":")).encode()
    blob += b" " * (-len(blob) % 8)  # the data starts 8-byte aligned, as safetensors writes it
    path.parent.mkdir(parents=True, exist_ok=True)
    _remove_abandoned_temporaries(path)
    fd, tmp = tempfile.mkstemp(prefix=f"{_temporary_prefix(path)}{os.getpid()}.", suffix=".tmp", dir=path.parent)
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


def _temporary_prefix(path: Path) -> str:
    """Temporary files of path's saves: .NAME.HOST.PID.random.tmp beside it (a rename is atomic only
    within one filesystem), so a later save can tell whose they are."""
    return f".{path.name}.{socket.gethostname()}."


def _remove_abandoned_temporaries(path: Path) -> None:
    """Delete the temporary files of earlier saves of path on this host whose writer is gone (a
    save killed by SIGKILL leaves its temporary file: without this they would pile up)."""
    prefix = _temporary_prefix(path)
    for candidate in path.parent.glob(glob.escape(prefix) + "*.tmp"):
        pid = candidate.name[len(prefix):].split(".", 1)[0]
        if pid.isdigit() and not alive(int(pid)):
            with contextlib.suppress(OSError):
                candidate.unlink()


def _fsync_dir(folder: Path) -> None:
    try:
        fd = os.open(folder, os.O_RDONLY)
    except OSError:
        return
    with contextlib.suppress(OSError):  # some filesystems cannot sync a directory; the rename is still atomic
        os.fsync(fd)
    os.close(fd)


# ---- reading ---------------------------------------------------------------------------------------------
def _no_duplicates(pairs: list) -> dict:
    keys = [k for k, _ in pairs]
    repeated = sorted({k for k in keys if keys.count(k) > 1})
    if repeated:
        raise CheckpointError(f"the header names {repeated[0]!r} twice")
    return dict(pairs)


def _header(path: Path, raw: bytes) -> tuple[dict, int]:
    """The JSON header and where the data starts, or a CheckpointError saying what is wrong."""
    if len(raw) < 8:
        raise CheckpointError(f"{path} is truncated: {len(raw)} bytes, not even a header length")
    n = int.from_bytes(raw[:8], "little")
    if n > min(_MAX_HEADER, len(raw) - 8):
        raise CheckpointError(f"{path} is truncated or not a safetensors file: header length {n}, file {len(raw)} bytes")
    try:
        header = json.loads(raw[8:8 + n], object_pairs_hook=_no_duplicates)
    except CheckpointError as e:
        raise CheckpointError(f"{path}: {e}") from None
    except (UnicodeDecodeError, json.JSONDecodeError, RecursionError, ValueError) as e:
        raise CheckpointError(f"{path} has a corrupted header: {str(e)[:200]}") from None
    if not isinstance(header, dict):
        raise CheckpointError(f"{path} has a corrupted header: not a JSON object")
    return header, 8 + n


def _entry(path: Path, name: str, info) -> tuple:
    """(dtype, shape, begin, end) of one header entry, each checked, sizes in Python integers."""
    def bad(why: str) -> CheckpointError:
        return CheckpointError(f"{path}: entry {name!r} of the header {why}: {str(info)[:200]}")
    if not isinstance(info, dict) or set(info) != {"dtype", "shape", "data_offsets"}:
        raise bad("is malformed")
    dtype, shape, offsets = info["dtype"], info["shape"], info["data_offsets"]
    if not isinstance(dtype, str) or dtype not in _DTYPES:
        raise bad("has an unknown dtype")
    if not isinstance(shape, list) or len(shape) > _MAX_RANK or \
            not all(type(d) is int and d >= 0 for d in shape):
        raise bad("has a shape that is not a list of non-negative integers")
    if not isinstance(offsets, list) or len(offsets) != 2 or not all(type(v) is int and v >= 0 for v in offsets) \
            or offsets[0] > offsets[1]:
        raise bad("has data_offsets that are not two ordered non-negative integers")
    itemsize = _DTYPES[dtype].itemsize
    if offsets[1] - offsets[0] != math.prod(shape) * itemsize:
        raise bad(f"claims {offsets[1] - offsets[0]} bytes for shape {tuple(shape)} {dtype}")
    return _DTYPES[dtype], tuple(shape), offsets[0], offsets[1]


def _read(path: Path, foreign: bool = False) -> tuple[dict[str, np.ndarray], dict]:
    try:
        raw = path.read_bytes()
    except FileNotFoundError:
        raise FileNotFoundError(f"no checkpoint at {path}") from None
    header, start = _header(path, raw)
    meta = header.get(_RESERVED, {})
    if not isinstance(meta, dict) or not all(isinstance(k, str) and isinstance(v, str) for k, v in meta.items()):
        raise CheckpointError(f"{path}: the {_RESERVED!r} entry must map strings to strings: {str(meta)[:200]}")
    data = memoryview(raw)[start:]
    arrays, spans = {}, []
    for name, info in header.items():
        if name != _RESERVED:
            arrays[name] = _entry(path, name, info)
            spans.append((arrays[name][2], arrays[name][3], name))
    spans.sort()
    expected = spans[-1][1] if spans else 0
    if len(data) < expected:
        raise CheckpointError(f"{path} is truncated: the header promises {expected} bytes of data, "
                              f"the file holds {len(data)}")
    if spans and spans[0][0] != 0:
        raise CheckpointError(f"{path}: the data starts {spans[0][0]} bytes after the header, with nothing there")
    for (b1, e1, n1), (b2, _, n2) in zip(spans, spans[1:]):
        if b2 != e1:
            raise CheckpointError(f"{path}: the data of {n1!r} and {n2!r} {'overlap' if b2 < e1 else 'leave a gap'}")
    _verify(path, header, meta, data[:expected], foreign)
    out = {name: np.frombuffer(data, np.dtype(dtype).newbyteorder("<"), count=math.prod(shape),
                               offset=begin).reshape(shape).astype(dtype)
           for name, (dtype, shape, begin, end) in arrays.items()}
    return out, _user_metadata(path, meta)


def _verify(path: Path, header: dict, meta: dict, data: memoryview, foreign: bool) -> None:
    """The digest over the header (less the digest itself) and the data; a file without one loads
    only as a foreign file (written by another tool), when the caller says so."""
    if _DIGEST_KEY in meta:
        covered = {**header, _RESERVED: {k: v for k, v in meta.items() if k != _DIGEST_KEY}}
        digest = hashlib.sha256(_canonical(covered))
        digest.update(data)
        if digest.hexdigest() != meta[_DIGEST_KEY]:
            raise CheckpointError(f"{path} is corrupted: its header or data does not match the SHA-256 recorded "
                                  f"when it was saved")
    elif _LEGACY_DIGEST_KEY in meta:  # written before the header was covered
        if hashlib.sha256(data).hexdigest() != meta[_LEGACY_DIGEST_KEY]:
            raise CheckpointError(f"{path} is corrupted: its data does not match the SHA-256 recorded when it was "
                                  f"saved")
    elif not foreign:
        raise CheckpointError(f"{path} has no funcgrad digest, so nothing shows it is intact: if another tool "
                              f"wrote it, load it with foreign=True")


def _user_metadata(path: Path, meta: dict):
    if _META_KEY not in meta:
        return {k: v for k, v in meta.items() if k not in (_DIGEST_KEY, _LEGACY_DIGEST_KEY)}
    try:
        value = json.loads(meta[_META_KEY])
        if not isinstance(value, dict):
            raise ValueError("not a JSON object")
        return _decode(value)
    except (RecursionError, TypeError, ValueError, KeyError) as e:  # JSONDecodeError is a ValueError
        raise CheckpointError(f"{path}: its metadata ({_META_KEY!r}) is malformed: {str(e)[:200]}") from None


def load(path: "str | os.PathLike", like: Any = None, foreign: bool = False) -> tuple[Any, dict]:
    """(tree, metadata). With `like`, the tree has like's structure and every leaf is checked
    against like's name, shape and dtype; without it, a flat {name: Array} dict. foreign=True loads
    a safetensors file another tool wrote, which carries no funcgrad digest."""
    path = Path(path)
    arrays, metadata = _read(path, foreign)
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
        if type(ref) in _PYTHON_SCALARS:  # a Python number comes back as one, with all its digits
            if got.shape != () or got.dtype.kind not in "biuf":
                raise CheckpointError(f"{path}: {name!r} is {got.dtype}{list(got.shape)} in the file but a Python "
                                      f"{type(ref).__name__} in the tree")
            leaves.append(type(ref)(got.item()))
            continue
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
