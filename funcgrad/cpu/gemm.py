"""GEMMs over the kernel threads (cpu/threads.py), BLAS on one thread in each part, inside the
jitted programs whose other steps split their work over those threads too (lowering.py).

OpenBLAS's own threads spin for ~0.1 s after each threaded GEMM (2^28 cycles, fixed when the
library loads), and a numba kernel split over the cores in that time shares a core with the
spinner: the MNIST CNN's direct convolutions took 1.6-2x their time right after a GEMM. So in
such a program BLAS stays on one thread (threads.serial_blas) and its GEMMs are split here; its
workers sleep. Elsewhere (eager code, a program of GEMMs) BLAS's own threads run them: on the
MLP's small GEMMs they were ~10% faster than two single-threaded halves. A product is cut along
its largest extent: the batch, the rows of a, the columns of b, or the contraction, whose parts
are summed (64 x 12544 times 12544 x 128: halves of its rows would each pack all of b)."""
from __future__ import annotations

import math

import numpy as np

from . import threads


def matmul(a: np.ndarray, b: np.ndarray, out: np.ndarray | None = None) -> np.ndarray:
    """np.matmul(a, b, out=out) for operands of rank >= 2 (batch dimensions broadcast): split over
    the kernel threads inside a threads.serial_blas block, else BLAS's own threads."""
    if not threads.serial_blas.active or a.ndim < 2 or b.ndim < 2 or threads.THREADS == 1:
        return np.matmul(a, b, out=out)
    batch = np.broadcast_shapes(a.shape[:-2], b.shape[:-2])
    (m, k), n = a.shape[-2:], b.shape[-1]
    if out is None:
        out = np.empty(batch + (m, n), np.result_type(a, b))
    work, lead = math.prod(batch) * m * n * k, batch[0] if batch else 1
    if lead >= max(m, n, k) / 4 and a.ndim == b.ndim == out.ndim and a.shape[0] == b.shape[0] == lead:
        threads.split(lambda i, j: np.matmul(a[i:j], b[i:j], out=out[i:j]), lead, work, per_thread=1)
    elif m >= n and m >= k:
        threads.split(lambda i, j: np.matmul(a[..., i:j, :], b, out=out[..., i:j, :]), m, work, per_thread=1)
    elif n >= k:
        threads.split(lambda i, j: np.matmul(a, b[..., i:j], out=out[..., i:j]), n, work, per_thread=1)
    else:
        _split_contraction(a, b, out, k, work)
    return out


def _split_contraction(a, b, out, k: int, work: int) -> None:
    """out = a @ b as the sum of the products of parts of the contraction: the first part written
    into out, each other into a part of its own, added to out at the end in the parts' order
    (threads.split_parts: the same bits every run)."""
    def run(i: int, j: int):
        return np.matmul(a[..., i:j], b[..., i:j, :], out=out if i == 0 else None)
    for part in threads.split_parts(run, k, work, per_thread=1)[1:]:
        out += part
