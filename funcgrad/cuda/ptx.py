"""Every CUDA kernel funcgrad can launch, for every dtype it supports, as (name, kernel, numba
argument types): the list the PTX check compiles for a real GPU on machines without one.

    python -m funcgrad.cuda.ptx        # compile them all for compute capability 9.0 (no simulator)
    python -m funcgrad.cuda.ptx --resources [NAME]   # registers, shared memory, spills, occupancy

The simulator does no type checking, so a kernel that runs there may still fail to compile;
compiling each case ahead of time catches that. Compiling needs NVVM (`pip install
funcgrad[cuda]`), not a GPU.
"""
from __future__ import annotations

import inspect
import itertools
import re
import sys
import time
from typing import NamedTuple

import numpy as np

from .. import dtypes
from ..ops import elementwise as E
from ..ops.core import Primitive, ShapedArray, registry
from .runtime import GPU_BLOCK
from .kernels import attention, decompositions, elementwise, indexing, matmul, pool, random, reduce, scan, sort

CANDIDATES = [dtypes.float32, dtypes.float64, dtypes.float16, dtypes.bfloat16, dtypes.int32, dtypes.int64,
              dtypes.uint32, dtypes.uint8, dtypes.bool_, dtypes.complex64, dtypes.complex128]
PARAM_VALUES = {"approximate": (False, True), "dtype": tuple(map(np.dtype, CANDIDATES)), "n": (0, 1, 3)}  # keyword params' values


def _signature(fn) -> tuple[int, list[str]]:
    """(number of operands, keyword parameter names) of a scalar expression."""
    params = inspect.signature(fn).parameters.values()
    return (sum(1 for p in params if p.kind in (p.POSITIONAL_ONLY, p.POSITIONAL_OR_KEYWORD)),
            [p.name for p in params if p.kind is p.KEYWORD_ONLY])


def _operand_kinds(n: int, dt: np.dtype) -> list[tuple]:
    """The operand kinds jit and eager calls give an n-ary step: all arrays; a weak Python scalar
    second (x * 2); for three operands, a boolean first (a condition) or absent and scalar bounds."""
    if n == 2:
        return [(dt, dt), (dt, int)]
    if n == 3:
        return [(dt, dt, dt), (np.dtype(np.bool_), dt, dt), (dt, None, float)]
    return [(dt,) * n]


def _out_dtype(op, kinds: tuple, params: dict):
    """The step's output dtype by op's shape rule, or None where the primitive rejects these operands."""
    if not isinstance(op, Primitive):
        return kinds[0] if kinds else None
    avals = [None if k is None else ShapedArray((1,), k) if isinstance(k, np.dtype) else k(0) for k in kinds]
    try:
        return op.shape_rule(*avals, **params).dtype
    except (TypeError, ValueError):
        return None


def _elementwise_cases():
    ops = [p for p in registry.values() if p.scalar is not None] + [elementwise.copy]
    for op in ops:
        n, keywords = _signature(elementwise.scalar_of(op))
        for params in (dict(zip(keywords, v)) for v in itertools.product(*(PARAM_VALUES[k] for k in keywords))):
            for dt in map(np.dtype, CANDIDATES):
                for kinds in _operand_kinds(n, dt):
                    out = _out_dtype(op, kinds, params)
                    if out is not None:
                        yield op, kinds, out, params
    for dt in (dtypes.int32, dtypes.int64):
        yield elementwise.iota, (), np.dtype(dt), {}


def _fused_cases():
    """Chains like those jit fuses: an AdamW update (two outputs) and a bias + GELU epilogue."""
    for dt in (np.dtype(np.float32), np.dtype(np.float64)):
        adam = ((E.mul_p, (), (("in", 0), ("in", 1)), dt), (E.mul_p, (), (("in", 2), ("in", 3)), dt),
                (E.add_p, (), (("t", 0), ("t", 1)), dt), (E.sqrt_p, (), (("t", 2),), dt),
                (E.add_p, (), (("t", 3), ("in", 4)), dt), (E.div_p, (), (("in", 5), ("t", 4)), dt),
                (E.sub_p, (), (("in", 6), ("t", 5)), dt))
        yield f"fused adamw[{dt.name}]", (dt, float, dt, float, float, dt, dt), adam, (2, 6)
        gelu = ((E.add_p, (), (("in", 0), ("in", 1)), dt), (E.gelu_p, (("approximate", True),), (("t", 0),), dt),
                (E.gt_p, (), (("t", 1), ("in", 2)), np.dtype(np.bool_)))
        yield f"fused bias+gelu[{dt.name}]", (dt, dt, int), gelu, (1, 2)
        # horizontal fusion: the AdamW chain beside a chain whose value is summed over rows (a bias
        # gradient) and one summed over every element, compensated (a loss)
        square = ((E.mul_p, (), (("in", 0), ("in", 0)), dt),)
        yield f"fused adamw + row sum + whole sum[{dt.name}]", (
            ((dt, float, dt, float, float, dt, dt), adam, (2, 6), (), False),
            ((dt, dt, int), gelu, (1,), (1,), False), ((dt,), square, (), (0,), True))


def _fused_case(name: str, kinds, steps=None, outputs=None):
    """A fused case as (name, kernel, signature): one chain, or horizontally fused segments."""
    if steps is None:
        return name, elementwise.fused_kernel(kinds), elementwise.fused_signature(kinds, 2)
    return name, elementwise.chain_kernel(kinds, steps, outputs), elementwise.chain_signature(kinds, outputs, steps, 2)


def cases():
    """(name, numba kernel, argument types) for every kernel and dtype."""
    for op, kinds, out, params in _elementwise_cases():
        name = getattr(op, "name", getattr(op, "__name__", "?"))
        label = f"{name}[{', '.join(getattr(k, 'name', getattr(k, '__name__', 'None')) for k in kinds)} -> {out.name}]"
        yield label, elementwise.kernel_for(op, tuple(sorted(params.items())), kinds, out), \
            elementwise.ptx_signature(kinds, out, 2)
    for case in _fused_cases():
        yield _fused_case(*case)
    for module in (reduce, attention, matmul, indexing, scan, sort, random, decompositions, pool):
        yield from module.ptx_cases()


TARGET = (9, 0)  # compute capability: H100


def compile_case(kernel, sig, cc: tuple[int, int] = TARGET) -> str:
    """The PTX of one kernel for these argument types."""
    from numba import cuda
    import numba.cuda.dispatcher as dispatcher
    import types as pytypes

    # numba-cuda 0.30 asks the driver for the current device's compute capability when it compiles
    # a device function called from a kernel; with no GPU there is no driver: name the target instead.
    dispatcher.get_current_device = lambda: pytypes.SimpleNamespace(compute_capability=cc)
    return cuda.compile_ptx(kernel.py_func, sig, cc=cc)[0]


SM_REGISTERS, SM_SHARED, SM_THREADS, SM_BLOCKS = 65536, 228 << 10, 2048, 32  # per multiprocessor, cc 9.0


class Resources(NamedTuple):
    """What ptxas allots one kernel: registers per thread, static shared memory, stack and spills
    (bytes per thread)."""
    registers: int
    shared: int
    stack: int
    spill_stores: int
    spill_loads: int

    def occupancy(self, threads: int = GPU_BLOCK) -> float:
        """The fraction of a multiprocessor's 2,048 thread slots that blocks of `threads` can fill
        at once, bounded by registers (allotted per warp in units of 256), shared memory and the
        block count (CUDA's occupancy calculator, without dynamic shared memory)."""
        per_warp = -(-self.registers * 32 // 256) * 256
        warps = -(-threads // 32)
        blocks = min(SM_REGISTERS // (per_warp * warps), SM_SHARED // max(self.shared, 1), SM_THREADS // threads,
                     SM_BLOCKS)
        return blocks * threads / SM_THREADS


def resources(code: str, cc: tuple[int, int] = TARGET) -> Resources:
    """ptxas's account of a kernel's PTX, assembled for cc by nvJitLink (no GPU needed)."""
    from cuda.bindings import nvjitlink
    handle = nvjitlink.create(2, [f"-arch=sm_{cc[0]}{cc[1]}", "-verbose"])
    try:
        data = code.encode()
        nvjitlink.add_data(handle, nvjitlink.InputType.PTX, data, len(data), "kernel")
        nvjitlink.complete(handle)
        log = bytearray(nvjitlink.get_info_log_size(handle))
        nvjitlink.get_info_log(handle, log)
    finally:
        nvjitlink.destroy(handle)
    text = log.decode()

    def number(pattern: str) -> int:
        found = re.search(pattern, text)
        if found is None:  # a field read as 0 would pass every check: fail loudly instead
            raise ValueError(f"ptxas's log has no {pattern!r}:\n{text}")
        return int(found.group(1))
    return Resources(number(r"[Uu]sed (\d+) registers"), number(r"(\d+) bytes smem"),
                     number(r"(\d+) bytes stack frame"), number(r"(\d+) bytes spill stores"),
                     number(r"(\d+) bytes spill loads"))


def compile_all(cc: tuple[int, int] = TARGET, verbose: bool = False) -> list[tuple[str, str]]:
    """Compile every case to PTX; returns the failures as (name, error)."""
    failures = []
    for name, kernel, sig in cases():
        start = time.perf_counter()
        try:
            compile_case(kernel, sig, cc)
        except Exception as e:  # report every failing kernel, not just the first
            failures.append((name, f"{type(e).__name__}: {str(e).splitlines()[0] if str(e) else ''}"))
        if verbose:
            print(f"{name:60s} {time.perf_counter() - start:6.2f}s")
    return failures


def report(pattern: str = "") -> None:
    """Registers, shared memory, spills and occupancy (of 256-thread blocks; the linear algebra
    kernels launch 64) of every kernel whose name starts with pattern."""
    print(f"{'kernel':64s} {'regs':>4s} {'smem':>6s} {'spill':>5s} {'occupancy':>9s}")
    for name, kernel, sig in cases():
        if name.startswith(pattern):
            r = resources(compile_case(kernel, sig))
            print(f"{name[:64]:64s} {r.registers:4d} {r.shared:6d} {r.spill_stores:5d} {r.occupancy():9.0%}")


def main() -> int:
    from .runtime import SIMULATOR
    if SIMULATOR:
        print("unset NUMBA_ENABLE_CUDASIM: the simulator cannot compile to PTX", file=sys.stderr)
        return 2
    if "--resources" in sys.argv:
        report(next((a for a in sys.argv[1:] if not a.startswith("-")), ""))
        return 0
    failures = compile_all(verbose="-v" in sys.argv)
    for name, error in failures:
        print(f"FAILED {name}: {error}", file=sys.stderr)
    return 1 if failures else 0


if __name__ == "__main__":
    sys.exit(main())
