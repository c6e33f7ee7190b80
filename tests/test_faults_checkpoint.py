"""Checkpoints against damage and crafted files: every changed bit is found, every crafted header is
a CheckpointError naming what is wrong, a reserved name cannot be saved, a killed save leaves
nothing behind for long."""
import json
import os
import signal
import struct
import subprocess
import sys
import time

import numpy as np
import pytest

import funcgrad as fg
from funcgrad.checkpoint import CheckpointError


def _file(tmp_path):
    path = tmp_path / "c.safetensors"
    fg.checkpoint.save(path, {"w": fg.asarray(np.arange(3.0, dtype=np.float32)), "b": fg.ones(1)},
                       metadata={"epoch": 10, "lr": 0.001})
    return path


def test_every_flipped_bit_is_found(tmp_path):
    """Single-bit flips anywhere (header length, JSON header, data) never load silently: 'epoch': 10
    once became 30, lr 0.001 became 1.001, tensor b became c."""
    path = _file(tmp_path)
    raw = bytearray(path.read_bytes())
    damaged = tmp_path / "d.safetensors"
    for position in range(len(raw)):
        for bit in range(8):
            flipped = bytearray(raw)
            flipped[position] ^= 1 << bit
            damaged.write_bytes(bytes(flipped))
            with pytest.raises(CheckpointError):
                fg.checkpoint.load(damaged)


def _crafted(tmp_path, header: str, data: bytes = b"") -> str:
    blob = header.encode()
    path = tmp_path / "x.safetensors"
    path.write_bytes(struct.pack("<Q", len(blob)) + blob + data)
    return path


@pytest.mark.parametrize("entry, says", [
    ('{"dtype": "F32", "shape": [4294967296, 4294967296], "data_offsets": [0, 0]}', "claims 0 bytes"),
    ('{"dtype": "F32", "shape": [1000000000000000000000000000000], "data_offsets": [0, 4]}', "claims 4 bytes"),
    ('{"dtype": "F32", "shape": [-1], "data_offsets": [0, 4]}', "non-negative integers"),
    ('{"dtype": "F32", "shape": [1.5], "data_offsets": [0, 4]}', "non-negative integers"),
    ('{"dtype": "F32", "shape": ["1"], "data_offsets": [0, 4]}', "non-negative integers"),
    ('{"dtype": "F32", "shape": [true], "data_offsets": [0, 4]}', "non-negative integers"),
    ('{"dtype": "X9", "shape": [1], "data_offsets": [0, 4]}', "unknown dtype"),
    ('{"dtype": "F32", "shape": [1], "data_offsets": [4, 0]}', "ordered"),
    ('[1, 2]', "malformed"),
])
def test_crafted_entries_are_checkpoint_errors_naming_the_entry(tmp_path, entry, says):
    path = _crafted(tmp_path, '{"t": ' + entry + '}', b"\0" * 8)
    with pytest.raises(CheckpointError, match=f"entry 't'.*{says}"):
        fg.checkpoint.load(path, foreign=True)


@pytest.mark.parametrize("header, says", [
    ('{"t": {"dtype": "F32", "shape": [1], "data_offsets": [0, 4]}, '
     '"t": {"dtype": "F32", "shape": [1], "data_offsets": [0, 4]}}', "names 't' twice"),
    ('{"t": {"dtype": "F32", "shape": [1], "data_offsets": [4, 8]}}', "nothing there"),
    ("[" * 100000 + "]" * 100000, "corrupted header"),
    ('{"__metadata__": {"funcgrad.metadata": "{not json"}}', "metadata .* is malformed"),
    ('{"__metadata__": {"funcgrad.metadata": 5}}', "must map strings to strings"),
    ('{"__metadata__": {"funcgrad.metadata": "[1]"}}', "metadata .* is malformed"),
])
def test_crafted_headers_are_checkpoint_errors(tmp_path, header, says):
    path = _crafted(tmp_path, header, b"\0" * 8)
    with pytest.raises(CheckpointError, match=says):
        fg.checkpoint.load(path, foreign=True)


def test_the_header_length_is_bounded_by_the_file(tmp_path):
    path = tmp_path / "x.safetensors"
    path.write_bytes(struct.pack("<Q", 10 ** 12) + b"{}")
    with pytest.raises(CheckpointError, match="truncated"):
        fg.checkpoint.load(path)


def test_a_file_without_the_digest_needs_foreign(tmp_path):
    path = _file(tmp_path)
    raw = path.read_bytes()
    n = struct.unpack("<Q", raw[:8])[0]
    header = json.loads(raw[8:8 + n])
    meta = header["__metadata__"]
    meta["funcgrad.digeSt"] = meta.pop("funcgrad.digest")  # renaming the key once turned the check off
    blob = json.dumps(header).encode()
    path.write_bytes(struct.pack("<Q", len(blob)) + blob + raw[8 + n:])
    with pytest.raises(CheckpointError, match="no funcgrad digest"):
        fg.checkpoint.load(path)


def test_a_reserved_leaf_name_is_refused_at_save(tmp_path):
    with pytest.raises(ValueError, match="__metadata__"):
        fg.checkpoint.save(tmp_path / "c.safetensors", {"__metadata__": fg.ones(2)})
    assert not list(tmp_path.iterdir())


def test_a_killed_save_leaves_its_temporary_file_only_until_the_next_save(tmp_path):
    path = tmp_path / "big.safetensors"
    code = ("import sys, funcgrad as fg, funcgrad.numpy as fnp\n"
            "x = fnp.ones((4096, 4096))\n"
            "print('ready', flush=True)\n"
            "while True:\n    fg.checkpoint.save(sys.argv[1], {'x': x})\n")
    leaked = 0
    for _ in range(4):
        proc = subprocess.Popen([sys.executable, "-c", code, str(path)], stdout=subprocess.PIPE, text=True)
        assert proc.stdout.readline().strip() == "ready"
        time.sleep(0.15)
        os.kill(proc.pid, signal.SIGKILL)
        proc.wait(timeout=10)
        leaked += len([p for p in tmp_path.iterdir() if p.name.endswith(".tmp")])
    assert leaked  # at least one kill landed mid-save
    fg.checkpoint.save(path, {"x": fg.ones(2)})
    assert sorted(p.name for p in tmp_path.iterdir()) == ["big.safetensors"]
    # a temporary file of a save still running (our own pid) is left alone
    live = tmp_path / f".big.safetensors.{os.uname().nodename}.{os.getpid()}.abc.tmp"
    live.write_bytes(b"x")
    fg.checkpoint.save(path, {"x": fg.ones(2)})
    assert live.exists()
