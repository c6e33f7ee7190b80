"""The numba.cuda runtime as funcgrad uses it: the simulator flag, devices, launch shapes and
the count of host<->device copies.

numba is imported here, once, when the CUDA backend is first used: `import funcgrad` never pays
for it. NUMBA_ENABLE_CUDASIM=1 (set before numba is imported) runs every kernel in numba's CPU
simulator, a Python thread per GPU thread, so kernels are tested on machines without a GPU.
"""
from __future__ import annotations

import ctypes
import sys
import warnings
from functools import cache

import numpy as np
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
    """kernel[grid, block](*args), checked against the hardware's limits and counted. On a GPU a
    kernel's compiled overload is resolved once per argument types and launched directly (below)."""
    if not (type(grid) is int and type(block) is int and 0 < grid <= MAX_GRID[0] and 0 < block <= MAX_THREADS):
        check_launch(grid, block)  # 1-D launches that fit skip the full check (1.5 us)
    launches.count += 1
    if SIMULATOR:
        kernel[grid, block](*args)
        return
    key = (kernel, *map(_argument_key, args))
    resolved = _resolved.get(key, _UNRESOLVED)
    if resolved is None or resolved is _UNRESOLVED:
        kernel[grid, block](*args)  # numba types the arguments, compiles if it must, and launches
        if resolved is _UNRESOLVED:
            _resolved[key] = _resolve(kernel, args)
        return
    function, flatteners = resolved
    params: list = []
    for flatten, value in zip(flatteners, args):
        flatten(value, params)
    run, launch_config, stream = _launcher()
    config = _configs.get((grid, block))
    if config is None:
        config = _configs[grid, block] = launch_config(grid=grid, block=block, shmem_size=0)
    run(stream, config, function, *params)


# ---- Resolved launches ---------------------------------------------------------------------------
# numba's kernel[grid, block](*args) types every argument, looks its overload up, and marshals each
# array through a chain of isinstance checks and a wrapper object: 10-20 us per array argument, and a
# training step's fused optimiser update takes dozens. A launch here looks the compiled function up
# by its arguments' kinds and lays the parameters out as numba's _Kernel.launch does (an array as
# meminfo, parent, size, itemsize, data pointer, shape, byte strides), for the argument types funcgrad
# passes; a kernel with any other type keeps numba's own launch.
_UNRESOLVED = object()
_resolved: dict = {}    # (kernel, argument kinds) -> (function, flatteners), or None: numba launches
_configs: dict = {}     # (grid, block) -> LaunchConfig


def _argument_key(value):
    """What decides a kernel argument's numba type, cheaply: funcgrad's device arrays are flat and
    contiguous, typed (dtype, 1, 'C'); any other array is keyed by its numba type itself."""
    if type(value) is tuple:
        return (tuple, *map(_argument_key, value))
    if hasattr(value, "gpu_data"):
        flat = value.ndim == 1 and value.strides[0] == value.dtype.itemsize
        return value.dtype if flat else value._numba_type_
    return type(value)


def _resolve(kernel, args):
    """The compiled function and one flattener per argument, or None where some argument's type is
    not one of those _flattener lays out (or is a host array, which numba copies to the device)."""
    overload = kernel.overloads.get(tuple(kernel.typeof_pyval(a) for a in args))
    if overload is None or any(isinstance(a, np.ndarray) for a in args):
        return None
    flatteners = [_flattener(t) for t in overload.argument_types]
    if any(f is None for f in flatteners):
        return None
    return overload._codelibrary.get_cufunc().kernel, tuple(flatteners)


def _flattener(ty):
    """How a value of numba type ty becomes kernel parameters (as numba's _Kernel._prepare_args)."""
    from numba.cuda import types
    if isinstance(ty, types.Array):
        def array(value, params):
            params += (0, 0, value.size, value.dtype.itemsize, value.device_ctypes_pointer.value or 0,
                       *value.shape, *value.strides)
        return array
    if isinstance(ty, types.BaseTuple):
        parts = [_flattener(t) for t in ty]
        if any(p is None for p in parts):
            return None

        def tuple_(value, params):
            for part, item in zip(parts, value):
                part(item, params)
        return tuple_
    convert = {types.int64: int, types.float64: ctypes.c_double, types.float32: ctypes.c_float,
               types.boolean: bool}.get(ty)
    if convert is None and isinstance(ty, types.Integer):
        convert = getattr(ctypes, f"c_{ty}")
    if convert is None:
        return None
    return lambda value, params: params.append(convert(value))


@cache
def _launcher():
    """numba-cuda's own launcher (cuda.core's launch and LaunchConfig) and the stream numba launches
    on when given none: CUDA's default stream. Imported at the first launch on a GPU."""
    import cuda.core as core
    from numba.cuda.cudadrv import driver
    return core.launch, core.LaunchConfig, driver._to_core_stream(0)


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
