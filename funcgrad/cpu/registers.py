"""The host's vector registers, which the register-blocked kernels (cpu/direct) size their tiles for.

A tile's accumulators, with the vectors it loads beside them, must fit the register file, or LLVM
spills them to the stack at every step of the reduction: blocked for AVX-512's 32 registers of 64
bytes, the 8x8 digits CNN's convolutions ran at 0.45-0.7x PyTorch's speed on an AVX2 machine (Zen 3,
16 registers of 32 bytes; each 64-byte vector two registers, 48 accumulators for 16), and 1.4-4.8x
the time of the same passes blocked for 16 registers of 32 bytes there (MNIST's conv2: 63 -> 14-18 ms
forward). The registers are those of the CPU that numba compiles for (host, _features).
"""
from __future__ import annotations

import os
import platform
from functools import cache
from typing import NamedTuple

# The tiles' fixed sides; the register count sets the others (Registers' properties).
OUT_BLOCK = 4  # output channels of a forward tile (its other side: vectors of pixels)
ROW_GRAD_TAPS = 9  # taps of one input channel in a row weight-gradient tile (a 3x3 kernel's)


class Registers(NamedTuple):
    """`count` vector registers of `vector_bytes` each; a kernel's simd.Vec is one register.
    half_vectors: vectors of half the lanes run at the FMA units' speed, so that whole output rows
    of them may pay: AVX-512 on Zen 4 (a 64-byte FMA is two 32-byte halves). Elsewhere a half
    vector does half a whole one's work in the same time: SSE on AVX2, and ymm on Zen 5, whose
    FMA units are 64 bytes wide (the 8x8 CNN's three conv passes in half vectors took 1.4-1.5x
    their time in whole ones there, which Zen 4's halves had run 0.9x)."""
    vector_bytes: int
    count: int
    half_vectors: bool = False

    @property
    def out_vectors(self) -> tuple[int, ...]:
        """The forward tile's choices of vectors of pixels, by OUT_BLOCK output channels: at most as
        many as leave room for the tile's loaded pixels and a broadcast weight (OUT_BLOCK v + v + 1
        <= count: 6 of 32 registers, 3 of 16), and the two fewer (for outputs that they pad less)."""
        most = (self.count - 1) // (OUT_BLOCK + 1)
        return tuple(range(most, max(0, most - 3), -1))

    @property
    def grad_registers(self) -> int:
        """Accumulators of a weight-gradient tile (vectors of output channels x (channel, tap) pairs):
        half the registers, leaving room for up to 4 cotangent vectors and a broadcast input. Not 24
        of AVX-512's 32: with six pairs a tile (64 channels) the pixel loop needs more integer
        registers than x86-64 has (a plane offset a pair, q, z, the bounds), LLVM reloaded ~10 of them
        from the stack every pixel, and the pass ran at 0.4x its speed with 16 (4 pairs: 3 reloads)
        on a Zen 4 VM, on two threads; on an Intel Xeon VM (AVX-512) 24 and 16 ran within 3% of each
        other (MNIST's conv2, 8x8, 56x56)."""
        return self.count // 2

    @property
    def row_grad_channels(self) -> int:
        """Output channels of a row weight-gradient tile of ROW_GRAD_TAPS taps: 2 where their 18
        accumulators, 2 cotangent vectors and an input fit (32 registers), else 1 (11 of 16)."""
        return 2 if 2 * (ROW_GRAD_TAPS + 1) + 1 <= self.count else 1


@cache
def host() -> Registers:
    """The registers of the CPU numba compiles for, from its features (_features): AVX-512 (32 of
    64 bytes, in halves on Zen 4: _cpu_name), AVX2 with FMA (16 of 32), other x86-64 (16 of 16: SSE),
    AArch64 (32 of 16: NEON), else 16 of 16."""
    machine, features = platform.machine().lower(), _features()
    if machine in ("x86_64", "amd64"):
        if features.get("avx512f"):
            return Registers(64, 32, half_vectors=_cpu_name() == "znver4")
        return Registers(32, 16) if features.get("avx2") and features.get("fma") else Registers(16, 16)
    return Registers(16, 32) if machine in ("aarch64", "arm64") else Registers(16, 16)


def _features() -> dict:
    """As numba's config reads them: NUMBA_CPU_FEATURES where set ("+avx2,+fma,-avx512f"), none for
    NUMBA_CPU_NAME=generic (a cache portable between machines), else LLVM's features of the host
    CPU, from llvmlite alone (~40 ms, once), so that planning a convolution does not import numba;
    none where llvmlite cannot read them."""
    text = os.environ.get("NUMBA_CPU_FEATURES") or None
    if text is None and os.environ.get("NUMBA_CPU_NAME", "").lower() == "generic":
        text = ""
    if text is not None:
        flags = [flag.strip() for flag in text.split(",")]
        return {flag[1:]: flag[0] == "+" for flag in flags if len(flag) > 1 and flag[0] in "+-"}
    try:
        from llvmlite import binding
        return binding.get_host_cpu_features()
    except (ImportError, RuntimeError):  # llvmlite reads no features of this CPU
        return {}


def _cpu_name() -> str:
    """The CPU numba compiles for, as LLVM names it: NUMBA_CPU_NAME where set, else the host's."""
    name = os.environ.get("NUMBA_CPU_NAME", "").strip().lower()
    if name and name != "host":
        return name
    try:
        from llvmlite import binding
        return binding.get_host_cpu_name()
    except (ImportError, RuntimeError):
        return ""
