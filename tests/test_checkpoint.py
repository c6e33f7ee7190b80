"""Checkpoints: safetensors bytes, atomic writes, validation on load."""
import json
import os

import numpy as np
import pytest

import funcgrad as fg
from funcgrad import nn, optim
from funcgrad.checkpoint import CheckpointError


def _tree():
    model = nn.MLP(3, [4], 2, key=fg.random.key(0))
    opt = optim.adamw(1e-3)
    return {"model": model, "opt": opt.init(model), "extra": {"half": fg.ones(3, dtype=fg.bfloat16),
                                                             "count": fg.array(7, dtype=fg.int32)}}


def test_round_trip_with_metadata(tmp_path):
    tree = _tree()
    path = tmp_path / "ckpt.safetensors"
    key = fg.random.key(5)
    fg.checkpoint.save(path, tree, metadata={"step": 10, "epoch": 2, "key": key, "loader": {"epoch": 2}})
    loaded, meta = fg.checkpoint.load(path, like=tree)
    assert meta["step"] == 10 and meta["loader"] == {"epoch": 2}
    assert meta["key"].dtype == fg.uint32 and np.array_equal(meta["key"], key)
    for a, b in zip(fg.tree_leaves(tree), fg.tree_leaves(loaded)):
        assert a.dtype == b.dtype and np.array_equal(np.asarray(a), np.asarray(b))
    assert isinstance(loaded["model"], nn.MLP)
    flat, _ = fg.checkpoint.load(path)
    assert "model.linears.0.weight" in flat and "opt.0.mu.linears.1.bias" in flat


def test_every_integer_dtype_round_trips(tmp_path):
    tree = {name: fg.asarray(np.array([0, 1, np.iinfo(name).max], name))
            for name in ("int8", "uint8", "int16", "uint16", "int32", "uint32", "int64", "uint64")}
    fg.checkpoint.save(tmp_path / "ints.safetensors", tree)
    loaded, _ = fg.checkpoint.load(tmp_path / "ints.safetensors", like=tree)
    for name, value in tree.items():
        assert loaded[name].dtype == np.dtype(name) and np.array_equal(np.asarray(loaded[name]), np.asarray(value))



def test_python_numbers_in_the_tree_come_back_exactly(tmp_path):
    """A Python float in a state (an L-BFGS step size, a learning rate) was stored as float32 and
    loaded as a float32 Array, so a resumed run no longer equalled the uninterrupted one."""
    tree = {"lr": 0.1, "steps": 2 ** 40 + 1, "done": True, "w": fg.asarray(np.ones(2))}
    fg.checkpoint.save(tmp_path / "c.ckpt", tree)
    back, _ = fg.checkpoint.load(tmp_path / "c.ckpt", like=tree)
    assert back["lr"] == 0.1 and type(back["lr"]) is float
    assert back["steps"] == 2 ** 40 + 1 and type(back["steps"]) is int
    assert back["done"] is True
    with pytest.raises(fg.checkpoint.CheckpointError, match="'w' is float64\\[2\\] in the file but a Python float"):
        fg.checkpoint.load(tmp_path / "c.ckpt", like={**tree, "w": 1.0})

def test_file_is_plain_safetensors(tmp_path):
    path = tmp_path / "c.safetensors"
    fg.checkpoint.save(path, {"w": fg.array([[1.0, 2.0]]), "h": fg.array([1.5], dtype=fg.bfloat16)})
    raw = path.read_bytes()
    n = int.from_bytes(raw[:8], "little")
    header = json.loads(raw[8:8 + n])
    assert header["h"] == {"dtype": "BF16", "shape": [1], "data_offsets": [0, 2]}  # dict keys sorted
    assert header["w"] == {"dtype": "F32", "shape": [1, 2], "data_offsets": [2, 10]}
    assert (8 + n) % 8 == 0
    assert raw[8 + n:8 + n + 2] == np.array([1.5], dtype=fg.bfloat16).tobytes()
    assert np.frombuffer(raw[8 + n + 2:8 + n + 10], "<f4").tolist() == [1.0, 2.0]


def test_interoperates_with_the_safetensors_library(tmp_path):
    st = pytest.importorskip("safetensors.numpy")
    path = tmp_path / "ours.safetensors"
    fg.checkpoint.save(path, {"a": fg.arange(6).reshape(2, 3), "b": fg.ones(2)})
    theirs = st.load_file(str(path))
    assert theirs["a"].tolist() == [[0, 1, 2], [3, 4, 5]]
    other = tmp_path / "theirs.safetensors"
    st.save_file({"x": np.arange(4, dtype=np.float32)}, str(other))
    with pytest.raises(fg.checkpoint.CheckpointError, match="foreign=True"):
        fg.checkpoint.load(other)  # nothing shows a file without funcgrad's digest is intact
    flat, _ = fg.checkpoint.load(other, foreign=True)
    assert np.asarray(flat["x"]).tolist() == [0, 1, 2, 3]


def test_validation_names_what_is_wrong(tmp_path):
    tree = _tree()
    path = tmp_path / "c.safetensors"
    fg.checkpoint.save(path, tree)
    raw = path.read_bytes()
    (tmp_path / "trunc.safetensors").write_bytes(raw[:-5])
    with pytest.raises(CheckpointError, match="truncated"):
        fg.checkpoint.load(tmp_path / "trunc.safetensors", like=tree)
    corrupt = bytearray(raw)
    corrupt[-3] ^= 0xFF
    (tmp_path / "bad.safetensors").write_bytes(bytes(corrupt))
    with pytest.raises(CheckpointError, match="SHA-256"):
        fg.checkpoint.load(tmp_path / "bad.safetensors", like=tree)
    (tmp_path / "junk.safetensors").write_bytes(b"\x10\x00\x00\x00\x00\x00\x00\x00not json at all!")
    with pytest.raises(CheckpointError, match="corrupted header"):
        fg.checkpoint.load(tmp_path / "junk.safetensors")
    (tmp_path / "tiny.safetensors").write_bytes(b"\x01")
    with pytest.raises(CheckpointError, match="truncated"):
        fg.checkpoint.load(tmp_path / "tiny.safetensors")
    bigger = {**tree, "model": nn.MLP(3, [5], 2, key=fg.random.key(0))}
    with pytest.raises(CheckpointError, match=r"'model.linears.0.weight' is float32\[4, 3\] in the file but "
                                              r"float32\[5, 3\]"):
        fg.checkpoint.load(path, like=bigger)
    with pytest.raises(CheckpointError, match=r"missing \['more'\]"):
        fg.checkpoint.load(path, like={**tree, "more": fg.zeros(1)})
    with pytest.raises(CheckpointError, match="unexpected"):
        fg.checkpoint.load(path, like={"model": tree["model"]})
    wrong_dtype = {**tree, "extra": {**tree["extra"], "count": fg.array(7, dtype=fg.int64)}}
    with pytest.raises(CheckpointError, match="int32"):
        fg.checkpoint.load(path, like=wrong_dtype)
    with pytest.raises(FileNotFoundError, match="no checkpoint at"):
        fg.checkpoint.load(tmp_path / "absent.safetensors")


def test_a_failed_write_leaves_the_previous_checkpoint(tmp_path, monkeypatch):
    path = tmp_path / "c.safetensors"
    fg.checkpoint.save(path, {"w": fg.ones(3)}, metadata={"step": 1})
    before = path.read_bytes()

    def crash(*args):
        raise OSError("disk full")
    monkeypatch.setattr(os, "fsync", crash)
    with pytest.raises(OSError, match="disk full"):
        fg.checkpoint.save(path, {"w": fg.zeros(3)}, metadata={"step": 2})
    assert path.read_bytes() == before
    assert [p.name for p in tmp_path.iterdir()] == ["c.safetensors"]  # no temporary file left


def test_metadata_must_be_json(tmp_path):
    with pytest.raises(TypeError, match="JSON"):
        fg.checkpoint.save(tmp_path / "c.safetensors", {"w": fg.ones(1)}, metadata={"f": object()})


def test_checkpoint_is_also_remat():
    assert float(fg.grad(lambda x: fg.checkpoint(fg.numpy.sin)(x))(0.0)) == 1.0
