"""Threefry-2x32 (Salmon et al., "Parallel random numbers: as easy as 1, 2, 3", SC'11), 20 rounds.

A counter-based generator: output block i depends only on (key, counter i), so a GPU thread
per element reproduces exactly these numbers.
"""
from __future__ import annotations

import numpy as np

_ROTATIONS = ((13, 15, 26, 6), (17, 29, 16, 24))
_PARITY = np.uint32(0x1BD11BDA)


def _rotl(x: np.ndarray, r: int) -> np.ndarray:
    return (x << np.uint32(r)) | (x >> np.uint32(32 - r))


def threefry2x32(key: np.ndarray, x0: np.ndarray, x1: np.ndarray) -> tuple[np.ndarray, np.ndarray]:
    """Encrypt counter pairs (x0[i], x1[i]) under the 2-word key; returns two uint32 arrays."""
    k0, k1 = np.asarray(key[..., 0], np.uint32), np.asarray(key[..., 1], np.uint32)
    ks = (k0, k1, k0 ^ k1 ^ _PARITY)
    x0 = np.asarray(x0, np.uint32) + ks[0]
    x1 = np.asarray(x1, np.uint32) + ks[1]
    for block in range(5):
        for r in _ROTATIONS[block % 2]:
            x0 = x0 + x1
            x1 = _rotl(x1, r) ^ x0
        x0 = x0 + ks[(block + 1) % 3]
        x1 = x1 + ks[(block + 2) % 3] + np.uint32(block + 1)
    return x0, x1
