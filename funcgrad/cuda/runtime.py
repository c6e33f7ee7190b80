"""The numba.cuda runtime as funcgrad uses it: the simulator flag, devices, launch shapes and
the count of host<->device copies.

numba is imported here, once, when the CUDA backend is first used: `import funcgrad` never pays
for it. NUMBA_ENABLE_CUDASIM=1 (set before numba is imported) runs every kernel in numba's CPU
simulator, a Python thread per GPU thread, so kernels are tested on machines without a GPU.
"""
from __future__ import annotations

import sys
import warnings

from numba import config as _numba_config
from numba import cuda

SIMULATOR: bool = bool(_numba_config.ENABLE_CUDASIM)
# Threads per block and blocks per grid-stride launch. The simulator runs each thread as a Python
# thread: keep blocks small there.
GPU_BLOCK, GPU_MAX_BLOCKS = 256, 65535
BLOCK = 8 if SIMULATOR else GPU_BLOCK
MAX_BLOCKS = 2 if SIMULATOR else GPU_MAX_BLOCKS
if SIMULATOR:
    # Simulated kernels compute on NumPy scalars: log(0) is -inf on a GPU, not a warning.
    warnings.filterwarnings("ignore", category=RuntimeWarning, module="funcgrad_fused_")
    # The simulator's scheduler polls its block's threads while holding the GIL; with Python's
    # default 5 ms switch interval the threads it waits for barely run and a simulated step
    # crawls. Only simulated runs change it.
    sys.setswitchinterval(5e-4)


class TransferCounts:
    """Host->device and device->host copies funcgrad made: a resident training step makes none."""
    __slots__ = ("host_to_device", "device_to_host")

    def __init__(self):
        self.host_to_device = 0
        self.device_to_host = 0

    def reset(self) -> None:
        self.host_to_device = 0
        self.device_to_host = 0


transfers = TransferCounts()

# What a launch may ask of the hardware (every NVIDIA GPU since compute capability 3.0). The
# simulator enforces none of it, so every launch is checked here.
MAX_GRID = (2**31 - 1, 65535, 65535)
MAX_BLOCK = (1024, 1024, 64)
MAX_THREADS = 1024
MAX_STATIC_SHARED = 48 << 10


class Launches:
    """Kernels launched so far: each costs 5-50 us of driver and dispatch time however small it is."""
    __slots__ = ("count",)

    def __init__(self):
        self.count = 0


launches = Launches()


def _dims(shape) -> tuple:
    return tuple(shape) + (1,) * (3 - len(shape)) if isinstance(shape, tuple) else (shape, 1, 1)


def check_launch(grid, block) -> None:
    """Raise when (grid, block) exceeds what a GPU can launch (static shared memory is bounded from
    the compiled PTX, in tests/ptx_check.py)."""
    g, b = _dims(grid), _dims(block)
    for name, dims, limits in (("grid", g, MAX_GRID), ("block", b, MAX_BLOCK)):
        for axis, (d, limit) in enumerate(zip(dims, limits)):
            if not 1 <= d <= limit:
                raise ValueError(f"a kernel launch with {name} {dims}: axis {'xyz'[axis]} must be in 1..{limit}")
    if b[0] * b[1] * b[2] > MAX_THREADS:
        raise ValueError(f"a kernel launch with block {b}: {b[0] * b[1] * b[2]} threads, above {MAX_THREADS}")


def launch(kernel, grid, block, *args) -> None:
    """kernel[grid, block](*args), checked against the hardware's limits and counted."""
    if not (type(grid) is int and type(block) is int and 0 < grid <= MAX_GRID[0] and 0 < block <= MAX_THREADS):
        check_launch(grid, block)  # 1-D launches that fit skip the full check (1.5 us)
    launches.count += 1
    kernel[grid, block](*args)


def is_available() -> bool:
    """Whether a CUDA device (or the simulator) can run kernels in this process."""
    try:
        return bool(cuda.is_available())
    except Exception:  # a broken driver install reads as "no GPU", not a crash at import
        return False


def device_count() -> int:
    if not is_available():
        return 0
    return len(cuda.gpus)


def require(index: int = 0) -> None:
    """Raise a clear error when device `index` cannot be used."""
    count = device_count()
    if index >= count:
        found = "no CUDA device" if count == 0 else f"{count} CUDA device(s)"
        raise RuntimeError(f"cuda:{index} is not available: this process sees {found} "
                           f"(an NVIDIA GPU and driver, or NUMBA_ENABLE_CUDASIM=1 for the simulator)")


def synchronize() -> None:
    """Wait for every kernel launched so far to finish (for timing; results never need it)."""
    cuda.synchronize()


def launch_shape(n: int, block: int = BLOCK, max_blocks: int = MAX_BLOCKS) -> tuple[int, int]:
    """(blocks, threads) for a grid-stride loop over n items."""
    return max(1, min(max_blocks, -(-n // block))), block
