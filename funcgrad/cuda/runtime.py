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
# Threads per block. The simulator runs each thread as a Python thread: keep blocks small there.
BLOCK = 8 if SIMULATOR else 256
MAX_BLOCKS = 2 if SIMULATOR else 65535
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


def launch_shape(n: int, block: int = BLOCK) -> tuple[int, int]:
    """(blocks, threads) for a grid-stride loop over n items."""
    return max(1, min(MAX_BLOCKS, -(-n // block))), block
