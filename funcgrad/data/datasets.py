"""Built-in datasets, all available without a network at run time.

digits         real 8x8 handwritten digits (UCI, bundled; see DIGITS_NOTICE.txt)
mnist          28x28 digits, fashion_mnist 28x28 clothes: read from IDX files you download once
spirals        interleaved 2-D spirals, a nonlinear classification toy
linear         y = 2x + 1 + noise
sort, reverse  token sequences for a small transformer: learn to sort / reverse digits
"""
from __future__ import annotations

import gzip
import os
from importlib import resources
from pathlib import Path

import numpy as np

SPLITS = ("train", "test")


def _check_split(split: str) -> None:
    if split not in SPLITS:
        raise ValueError(f"split must be one of {SPLITS}, got {split!r}")


def _train_test(x, y, split: str, test_fraction: float = 0.2, seed: int = 0):
    order = np.random.default_rng(seed).permutation(len(x))
    n_test = int(round(len(x) * test_fraction))
    chosen = order[n_test:] if split == "train" else order[:n_test]
    return x[chosen], y[chosen]


def digits(split: str = "train", flatten: bool = True):
    """1797 8x8 digit images (1437 train / 360 test, a fixed split), pixels scaled to [0, 1]."""
    _check_split(split)
    with resources.files("funcgrad.data").joinpath("digits.csv.gz").open("rb") as f:
        table = np.loadtxt(gzip.open(f), delimiter=",", dtype=np.float32)
    x = table[:, :64] / 16.0
    y = table[:, 64].astype(np.int64)
    x, y = _train_test(x, y, split)
    return (x if flatten else x.reshape(-1, 1, 8, 8)), y


# ---- IDX files (MNIST and Fashion-MNIST) ----------------------------------------------------------
_IDX_FILES = {"train": ("train-images-idx3-ubyte", "train-labels-idx1-ubyte"),
              "test": ("t10k-images-idx3-ubyte", "t10k-labels-idx1-ubyte")}
_IDX_DTYPES = {0x08: np.uint8, 0x09: np.int8, 0x0B: np.dtype(">i2"), 0x0C: np.dtype(">i4"),
               0x0D: np.dtype(">f4"), 0x0E: np.dtype(">f8")}


def data_dir() -> Path:
    """Where datasets are looked for: $FUNCGRAD_DATA_DIR, else ~/.funcgrad/data."""
    return Path(os.environ.get("FUNCGRAD_DATA_DIR", Path.home() / ".funcgrad" / "data"))


def read_idx(path: "str | Path") -> np.ndarray:
    """An IDX file (gzipped or not) as an array: magic 0, 0, dtype code, rank; big-endian sizes."""
    path = Path(path)
    opener = gzip.open if path.suffix == ".gz" else open
    with opener(path, "rb") as f:
        raw = f.read()
    if len(raw) < 4 or raw[0] != 0 or raw[1] != 0 or raw[2] not in _IDX_DTYPES:
        raise ValueError(f"{path} is not an IDX file (bad magic number {raw[:4].hex()})")
    dtype, rank = np.dtype(_IDX_DTYPES[raw[2]]), raw[3]
    shape = tuple(int(d) for d in np.frombuffer(raw, ">u4", count=rank, offset=4))
    size = int(np.prod(shape, dtype=np.int64)) * dtype.itemsize
    if len(raw) != 4 + 4 * rank + size:
        raise ValueError(f"{path}: header says shape {shape} ({size} bytes) but the file holds "
                         f"{len(raw) - 4 - 4 * rank} bytes of data")
    return np.frombuffer(raw, dtype, offset=4 + 4 * rank).reshape(shape).astype(dtype.newbyteorder("="))


def _find(folder: Path, stem: str) -> Path | None:
    for name in (stem, stem + ".gz"):
        if (folder / name).exists():
            return folder / name
    return None


def idx_dataset(name: str, split: str = "train", root: "str | Path | None" = None, flatten: bool = True):
    """MNIST-format images and labels from <root>/<name>/, pixels scaled to [0, 1]."""
    _check_split(split)
    folder = Path(root) if root is not None else data_dir() / name
    images_stem, labels_stem = _IDX_FILES[split]
    images_path, labels_path = _find(folder, images_stem), _find(folder, labels_stem)
    if images_path is None or labels_path is None:
        raise FileNotFoundError(
            f"{name} {split} files not found in {folder}: put {images_stem}.gz and {labels_stem}.gz there "
            f"(the standard MNIST-format downloads), or pass root=... or set FUNCGRAD_DATA_DIR")
    images, labels = read_idx(images_path), read_idx(labels_path)
    if len(images) != len(labels):
        raise ValueError(f"{images_path} has {len(images)} images but {labels_path} has {len(labels)} labels")
    x = images.astype(np.float32) / 255.0
    x = x.reshape(len(x), -1) if flatten else x.reshape(len(x), 1, *x.shape[1:])
    return x, labels.astype(np.int64)


# ---- synthetic data ----------------------------------------------------------------------------------
def _split_seed(split: str, seed: int) -> int:
    return seed * 2 + (0 if split == "train" else 1)


def spirals(split: str = "train", n: int = 600, classes: int = 3, noise: float = 0.2, seed: int = 0):
    """`classes` interleaved spiral arms in 2-D (float32 points, int64 labels)."""
    _check_split(split)
    rng = np.random.default_rng(_split_seed(split, seed))
    per = n // classes
    t = np.tile(np.linspace(0.0, 1.0, per), classes)
    labels = np.repeat(np.arange(classes), per)
    angle = labels * (2 * np.pi / classes) + 4.0 * t + rng.normal(0.0, noise, t.shape)
    x = np.stack([t * np.sin(angle), t * np.cos(angle)], axis=1).astype(np.float32)
    return x, labels.astype(np.int64)


def linear(split: str = "train", n: int = 256, noise: float = 0.05, seed: int = 0):
    """x uniform in [-1, 1), y = 2x + 1 + N(0, noise^2); shapes (n, 1)."""
    _check_split(split)
    rng = np.random.default_rng(_split_seed(split, seed))
    x = rng.uniform(-1.0, 1.0, (n, 1)).astype(np.float32)
    return x, (2.0 * x + 1.0 + rng.normal(0.0, noise, x.shape)).astype(np.float32)


SEQUENCE_VOCAB = 11  # digits 0..9 and the separator 10
IGNORE = -100


def sequence_task(task: str, split: str = "train", n: int = 2000, length: int = 6, seed: int = 0):
    """Next-token data for a small causal transformer: [digits, SEP, answer].

    Returns (inputs, targets) of shape (n, 2 * length): targets are the inputs shifted by one,
    with IGNORE (-100) wherever the next token is still part of the question.
    """
    _check_split(split)
    rng = np.random.default_rng(_split_seed(split, seed) + 7)
    digits_ = rng.integers(0, 10, (n, length))
    answers = {"sort": np.sort(digits_, axis=1), "reverse": digits_[:, ::-1]}[task]
    seq = np.concatenate([digits_, np.full((n, 1), 10), answers], axis=1)
    inputs, targets = seq[:, :-1].copy(), seq[:, 1:].copy()
    targets[:, :length] = IGNORE
    return inputs.astype(np.int64), targets.astype(np.int64)


def load(name: str, split: str = "train", **kwargs):
    """(x, y) arrays of a built-in dataset; see the module docstring for the names."""
    loaders = {
        "digits": digits,
        "mnist": lambda split, **kw: idx_dataset("mnist", split, **kw),
        "fashion_mnist": lambda split, **kw: idx_dataset("fashion_mnist", split, **kw),
        "spirals": spirals,
        "linear": linear,
        "sort": lambda split, **kw: sequence_task("sort", split, **kw),
        "reverse": lambda split, **kw: sequence_task("reverse", split, **kw),
    }
    if name not in loaders:
        raise ValueError(f"unknown dataset {name!r}; built in: {sorted(loaders)}")
    return loaders[name](split, **kwargs)


NAMES = ("digits", "mnist", "fashion_mnist", "spirals", "linear", "sort", "reverse")
