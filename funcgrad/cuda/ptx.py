"""Every CUDA kernel funcgrad can launch, for every dtype it supports, as (name, kernel, numba
argument types): the list the PTX check compiles for a real GPU on machines without one.

    python -m funcgrad.cuda.ptx        # compile them all for compute capability 9.0 (no simulator)

The simulator does no type checking, so a kernel that runs there may still fail to compile;
compiling each case ahead of time catches that. Compiling needs NVVM (`pip install
funcgrad[cuda]`), not a GPU.
"""
from __future__ import annotations

import sys
import time

import numpy as np

from .. import dtypes
from .kernels import decompositions, elementwise, indexing, matmul, random, reduce, scan, sort
from .impls import _dtype_rule

CANDIDATES = [dtypes.float32, dtypes.float64, dtypes.float16, dtypes.bfloat16, dtypes.int32, dtypes.int64,
              dtypes.uint32, dtypes.uint8, dtypes.bool_]
_ARITY = {"select": 3, "clip": 3, "iota": 0}


def _arity(name: str) -> int:
    from ..ops import core
    if name in _ARITY:
        return _ARITY[name]
    if name in ("copy", "convert"):
        return 1
    prim = core.registry[name]
    for n in (1, 2):
        for probe in (np.ones((1,), np.float32), np.ones((1,), np.int64)):
            try:
                with np.errstate(all="ignore"):
                    prim.impl(*[probe] * n, **_PARAMS.get(name, {}))
                return n
            except TypeError:
                continue
    raise ValueError(f"cannot tell the arity of {name}")


_PARAMS = {"gelu": {"approximate": False}}


def _elementwise_cases():
    for name in elementwise.TEMPLATES:
        n = _arity(name)
        for dt in CANDIDATES:
            dt = np.dtype(dt)
            if name in ("copy", "iota"):
                yield name, (dt,) * n, dt, {}
                continue
            if name == "convert":
                for target in CANDIDATES:
                    yield name, (dt,), np.dtype(target), {"dtype": np.dtype(target)}
                continue
            if name == "select":
                yield name, (np.dtype(np.bool_), dt, dt), dt, {}
                continue
            if name == "clip":
                yield name, (dt, dt, dt), dt, {}
                yield name, (dt, None, float), dt, {}
                continue
            for params in ([{"approximate": False}, {"approximate": True}] if name == "gelu" else [{}]):
                try:
                    out = _dtype_rule(name, tuple((1, d) for d in (dt,) * n), tuple(sorted(params.items())))
                except (TypeError, ValueError):
                    continue  # the CPU implementation does not take this dtype: neither does the GPU
                yield name, (dt,) * n, out, params
                if n == 2:
                    yield name, (dt, int), out, params


def _fused_cases():
    """Chains like those jit fuses: an AdamW update (two outputs) and a bias + GELU epilogue."""
    for dt in (np.dtype(np.float32), np.dtype(np.float64)):
        adam = (("mul", (), (("in", 0), ("in", 1)), dt), ("mul", (), (("in", 2), ("in", 3)), dt),
                ("add", (), (("t", 0), ("t", 1)), dt), ("sqrt", (), (("t", 2),), dt),
                ("add", (), (("t", 3), ("in", 4)), dt), ("div", (), (("in", 5), ("t", 4)), dt),
                ("sub", (), (("in", 6), ("t", 5)), dt))
        yield f"fused adamw[{dt.name}]", (dt, float, dt, float, float, dt, dt), adam, (2, 6)
        gelu = (("add", (), (("in", 0), ("in", 1)), dt), ("gelu", (("approximate", True),), (("t", 0),), dt),
                ("gt", (), (("t", 1), ("in", 2)), np.dtype(np.bool_)))
        yield f"fused bias+gelu[{dt.name}]", (dt, dt, int), gelu, (1, 2)


def cases():
    """(name, numba kernel, argument types) for every kernel and dtype."""
    for name, kinds, out, params in _elementwise_cases():
        label = f"{name}[{', '.join(getattr(k, 'name', getattr(k, '__name__', 'None')) for k in kinds)} -> {out.name}]"
        yield label, elementwise.kernel_for(name, tuple(sorted(params.items())), kinds, out), \
            elementwise.ptx_signature(kinds, out, 2)
    for name, kinds, steps, outputs in _fused_cases():
        yield name, elementwise.chain_kernel(kinds, steps, outputs), elementwise.chain_signature(kinds, outputs, steps, 2)
    for module in (reduce, matmul, indexing, scan, sort, random, decompositions):
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


def main() -> int:
    from .runtime import SIMULATOR
    if SIMULATOR:
        print("unset NUMBA_ENABLE_CUDASIM: the simulator cannot compile to PTX", file=sys.stderr)
        return 2
    failures = compile_all(verbose="-v" in sys.argv)
    for name, error in failures:
        print(f"FAILED {name}: {error}", file=sys.stderr)
    return 1 if failures else 0


if __name__ == "__main__":
    sys.exit(main())
