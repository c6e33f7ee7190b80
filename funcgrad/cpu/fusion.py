"""Fused elementwise kernels: a chain of elementwise equations becomes one numba loop.

Each step is its primitive's scalar expression (funcgrad.ops.scalar) rendered as numba source. A
kernel reads each input once per element, computes every step with the result rounded to that
step's dtype (so it agrees with the unfused NumPy program), and writes the values the rest of the
program needs. Kernel source goes to a file in the cache directory, so numba's on-disk cache
(cache=True) serves later processes too.
"""
from __future__ import annotations

import hashlib
import importlib.util
import math
import os
import re
import sys
import tempfile
import threading
from functools import cache
from pathlib import Path
from typing import NamedTuple

import numpy as np

from .. import dtypes
from ..ops import scalar
from . import threads

# LLVM may contract a * b + c into one fused multiply-add (as XLA does); nothing else is relaxed,
# so NaN and inf propagate as they do in NumPy. Kernels use numba's NumPy error model: x / 0 is
# inf or nan as in NumPy, and without Python's zero-division check the loops vectorise.
FASTMATH = {"contract"}
# A kernel over PARALLEL_ELEMENTS or more is split over the cores by cpu/threads.py, whose threads
# wait without spinning (numba's OpenMP pool spun and took the cores from the GEMMs that followed:
# the MNIST-size CNN step ran 118 ms with pooled kernels above 1M elements, 96 ms with none).
PARALLEL_ELEMENTS = 1 << 17
# One that also sums splits from PARALLEL_SUM_ELEMENTS: each range's sums are extra arrays, added
# at the end (a bias gradient over 4096 x 64 took 0.14 ms either way; over 4096 x 784, split, 0.65x).
PARALLEL_SUM_ELEMENTS = 1 << 19
# Arrays a kernel reads at most where its group's independent chains can be cut apart so
# (grouping.kernel_parts): LLVM vectorises a loop over many arrays only after testing at run time
# that none it writes overlaps another, and gives up past a budget of such tests. An AdamW update
# of two parameters (8 arrays in, 6 out) still vectorised; of three or more, which the scheduler
# puts in one group when they have one shape, its square roots and divisions ran scalar (the
# GPT-128 step's eight 128 x 128 weights: 0.25 ms, 1.9 ns an element; cut, the step took 0.96x).
KERNEL_INPUTS = 8
FUSABLE_DTYPES = frozenset({dtypes.float32, dtypes.float64, dtypes.int32, dtypes.int64, dtypes.uint32,
                            dtypes.uint64, dtypes.uint8, dtypes.bool_})


class _Numba(scalar.Dialect):
    """Scalar expressions as numba source: NumPy's functions, except vecmath's exp, tanh and erf, which
    compute float32 without a libm call, so the loops vectorise."""
    VECMATH = {"exp": "vm.exp", "tanh": "vm.tanh", "erf": "vm.erf", "lgamma": "math.lgamma", "erfc": "math.erfc"}

    def literal(self, value, dtype: np.dtype) -> str:
        return literal(value, dtype)

    def call(self, name: str, args: list[str], exprs: tuple) -> str:
        if name in scalar.LOOPS:
            return self.loop_call("sp", name, args)
        fast = self.VECMATH.get(name) if exprs[0].dtype is None or not dtypes.is_complex(exprs[0].dtype) else None
        return f"{fast or 'np.' + name}({', '.join(args)})"


NUMBA = _Numba()


class Step(NamedTuple):
    """One fused step's source: its value (over x0.., t0.. and its shared subexpressions), the dtype
    the kernel rounds it to, and the lines that compute its shared subexpressions first."""
    expr: str
    dtype: np.dtype
    shared: tuple[str, ...] = ()


def step_source(prim, refs: list, operand_dtypes: list, params: dict, out_dtype: np.dtype, name: str) -> Step:
    """One fused step: prim's scalar expression over operands named refs (None: an absent one), with
    its literals in the step's compute dtype (the kernel then rounds the value to out_dtype); its
    shared subexpressions are named `{name}_0`, `{name}_1`..."""
    ct = scalar.compute_dtype(operand_dtypes, out_dtype)
    operands = [None if r is None else scalar.operand(r, d if isinstance(d, np.dtype) else ct)
                for r, d in zip(refs, operand_dtypes)]
    shared, expr = NUMBA.render_lines(scalar.evaluate(prim.scalar, operands, params), ct, f"{name}_")
    return Step(expr, np.dtype(out_dtype), tuple(shared))


# Kernels call vecmath's exp, tanh and erf (float32 without libm calls) and the loop functions; a
# kernel's source names their files' digests, so kernels cached on disk are rebuilt when they change.
_VECMATH = hashlib.sha256(Path(__file__).with_name("vecmath.py").read_bytes()).hexdigest()[:16]
_NORM_KERNELS = hashlib.sha256(Path(__file__).with_name("norm_kernels.py").read_bytes()).hexdigest()[:16]
_LOOPS = hashlib.sha256(b"".join((Path(__file__).parent.parent / "ops" / f"{name}.py").read_bytes()  # each loop
                                 for name in sorted({f for f, _, _ in scalar.LOOPS.values()}))  # function's module
                        ).hexdigest()[:16]


def _cast(dtype: np.dtype) -> str:
    return "bool" if dtype == dtypes.bool_ else f"np.{dtype.name}"


def _float_text(v: float) -> str:
    return repr(v) if math.isfinite(v) else f"float({str(v)!r})"  # inf, nan


def literal(value, dtype: np.dtype) -> str:
    """A scalar constant as typed source text, so the kernel computes in the program's dtype."""
    v = np.asarray(value).astype(dtype).item()
    if isinstance(v, complex):
        text = f"complex({_float_text(v.real)}, {_float_text(v.imag)})"
    else:
        text = _float_text(v) if isinstance(v, float) else repr(v)
    return f"{_cast(dtype)}({text})"


def operand_layout(in_shape: tuple, out_shape: tuple, split: int | None) -> str | None:
    """How a kernel over out_shape reads an operand of in_shape: 'scalar' (its one element, read
    once), 'full' (element i, as flat as the output), or, when the loop is split into outer
    dimensions out_shape[:split] and inner ones out_shape[split:], 'inner' (constant along the outer
    ones: a bias row), 'outer' (constant along the inner ones: a per-row statistic) or 'cycle'
    (constant along the inner ones and along leading outer ones, element o % size of outer row o: a
    convolution's bias (C, 1, 1) over (N, C, H, W)). None: the operand does not broadcast to
    out_shape in a way this loop can read."""
    size = math.prod(in_shape)
    if size == 1:
        return "scalar"
    if len(in_shape) > len(out_shape):
        return None
    padded = (1,) * (len(out_shape) - len(in_shape)) + tuple(in_shape)
    if any(a not in (1, b) for a, b in zip(padded, out_shape)):
        return None
    if size == math.prod(out_shape):
        return "full"
    if split is None:
        return None
    if all(a == 1 for a in padded[:split]) and padded[split:] == tuple(out_shape[split:]):
        return "inner"
    if not all(a == 1 for a in padded[split:]):
        return None
    if padded[:split] == tuple(out_shape[:split]):
        return "outer"
    lead = next((k for k, a in enumerate(padded[:split]) if a != 1), split)
    return "cycle" if padded[lead:split] == tuple(out_shape[lead:split]) else None


def loop_splits(in_shapes: list[tuple], out_shape: tuple) -> frozenset[int] | None:
    """The splits of out_shape at which a kernel can read every operand (see operand_layout);
    None when every operand is full or scalar, so the loop needs no split."""
    if all(operand_layout(s, out_shape, None) is not None for s in in_shapes):
        return None
    return frozenset(k for k in range(1, len(out_shape))
                     if all(operand_layout(s, out_shape, k) is not None for s in in_shapes))


def kernel_source(kinds: list[str], steps: list[Step], outputs: list[int],
                  in_place: dict[int, int] | None = None,
                  sums: list[tuple[int, str]] = (), nested: bool = False, ranged: bool = False) -> str:
    """One loop over flat, contiguous arrays. kinds: each input's operand_layout; with an 'inner',
    'outer' or 'cycle' input the loop nests (outer rows, then n_inner elements: the kernel's last
    argument).
    steps: Steps (expressions over x0.. and t0..); outputs: the step indices to store;
    in_place: output k -> input i whose buffer it overwrites. Such an output is stored through the
    input's own parameter: LLVM then sees a load and a store at the same index and vectorises, where
    two parameters that turn out to overlap fail its runtime alias check and run the scalar loop.
    sums: (step, 'all', 'lead', 'cycle' or 'rows') for each step also summed, into sum{k}: over
    every element (in float64, then rounded), over the outer dimensions into n_inner zeroed sums
    (the kernel then nests, and adds row after row as NumPy's sum over leading axes does), cycling,
    outer row o into element o % size of sum{k} (through (size, n_inner) float64 accumulators, so
    the inner loop still vectorises; each then summed over its inner positions), or each outer row
    over its inner positions into sum{k}[o] (the row's values kept in float64, then summed). The
    loop's length is then the argument `size`.
    ranged: the kernel's last two arguments lo, hi bound its outer loop (elements, or outer rows
    where it nests), so parts of one call can run on different threads (split_kernel); its sums
    are then those of its range. The loop runs over range(hi - lo) (no `size` argument): bounded
    by a length computed from hi - lo, a cycling sum's loop stayed scalar (4x the time)."""
    in_place = in_place or {}
    nested = nested or any(kind in ("inner", "outer", "cycle") for kind in kinds)
    stores = [f"in{in_place[k]}" if k in in_place else f"out{k}" for k in range(len(outputs))]
    args = [f"in{i}" for i in range(len(kinds))] + [name for name in stores if name.startswith("out")]
    args += [f"sum{k}" for k in range(len(sums))] + (["size"] if sums and not ranged else [])
    size = "size" if sums else f"{stores[0]}.size"
    lines = ["import math", "import numpy as np", "from numba import njit", "",
             f"from funcgrad.cpu import vecmath as vm  # {_VECMATH}"]
    # the loop functions' module compiles ufuncs on import: imported only where a step calls one
    if any(re.search(r"\bsp\.", line) for step in steps for line in (step.expr, *step.shared)):
        lines.append(f"from funcgrad.cpu import loops as sp  # {_LOOPS}")
    if any(how in ("cycle", "rows") for _, how in sums):  # their totals are row_sum's
        lines.append(f"from funcgrad.cpu.norm_kernels import row_sum  # {_NORM_KERNELS}")
    lines += ["", f"FASTMATH = set({sorted(FASTMATH)!r})", "",
              "@njit(cache=True, nogil=True, fastmath=FASTMATH, error_model=\"numpy\")",
              f"def kernel({', '.join(args + (['n_inner'] if nested else []) + (['lo', 'hi'] if ranged else []))}):"]
    # Runtime scalars are read once, before the loop: read inside it, LLVM must assume a store to an
    # output could change them, and then it will not vectorise the loop.
    lines += [f"    x{i} = in{i}[0]" for i, kind in enumerate(kinds) if kind == "scalar"]
    if ranged:  # the loops below run over slices from 0, as unranged: a loop from a signed lo would
        # make numba test each index for wrap-around, which keeps LLVM from vectorising (1.8x slower)
        rows = "lo * n_inner:hi * n_inner" if nested else "lo:hi"
        lines += [f"    in{i} = in{i}[{rows}]" for i, kind in enumerate(kinds) if kind == "full"]
        lines += [f"    in{i} = in{i}[lo:hi]" for i, kind in enumerate(kinds) if kind == "outer"]
        lines += [f"    {name} = {name}[{rows}]" for name in stores if name.startswith("out")]
    lines += [f"    acc{k} = 0.0" for k, (_, how) in enumerate(sums) if how == "all"]
    cycles = [k for k, (_, how) in enumerate(sums) if how == "cycle"]
    lines += [f"    cyc{k} = np.zeros((sum{k}.size, n_inner))" for k in cycles]
    row_totals = [k for k, (_, how) in enumerate(sums) if how == "rows"]
    lines += [f"    buf{k} = np.empty(n_inner)" for k in row_totals]
    for k in row_totals:  # empty rows total 0; the loop below visits none of them
        lines += ["    if n_inner == 0:", f"        sum{k}[{'lo:hi' if ranged else ':'}] = 0"]
    indent = "        "
    if nested:
        lines.append(f"    for o in range({'hi - lo' if ranged else f'{size} // n_inner if n_inner else 0'}):")
        lines += [f"        x{i} = in{i}[o]" for i, kind in enumerate(kinds) if kind == "outer"]
        cycle = "(o + lo)" if ranged else "o"
        lines += [f"        x{i} = in{i}[{cycle} % in{i}.size]" for i, kind in enumerate(kinds) if kind == "cycle"]
        lines += [f"        row{k} = cyc{k}[{cycle} % sum{k}.size]" for k in cycles]
        lines.append("        for j in range(n_inner):")
        indent = "            "
        lines.append(f"{indent}i = o * n_inner + j")
        lines += [f"{indent}x{i} = in{i}[j]" for i, kind in enumerate(kinds) if kind == "inner"]
    else:
        lines.append(f"    for i in range({'hi - lo' if ranged else size}):")
    lines += [f"{indent}x{i} = in{i}[i]" for i, kind in enumerate(kinds) if kind == "full"]
    for j, step in enumerate(steps):
        lines += [indent + line for line in step.shared]
        lines.append(f"{indent}t{j} = {_cast(step.dtype)}({step.expr})")
    for store, j in zip(stores, outputs):
        lines.append(f"{indent}{store}[i] = t{j}")
    for k, (j, how) in enumerate(sums):
        lines.append(f"{indent}acc{k} += t{j}" if how == "all" else f"{indent}row{k}[j] += t{j}" if how == "cycle"
                     else f"{indent}buf{k}[j] = t{j}" if how == "rows" else f"{indent}sum{k}[j] += t{j}")
    lines += [f"        sum{k}[{'o + lo' if ranged else 'o'}] = row_sum(buf{k})" for k in row_totals]  # after the row
    lines += [f"    sum{k}[0] = acc{k}" for k, (_, how) in enumerate(sums) if how == "all"]
    for k in cycles:
        lines += [f"    for c in range(sum{k}.size):", f"        sum{k}[c] = row_sum(cyc{k}[c])"]
    return "\n".join(lines) + "\n"


def split_kernel(kernel, tasks: int, work: int, *args) -> None:
    """kernel(*args, lo, hi), a ranged kernel, over [0, tasks) split over the cores."""
    threads.split(lambda lo, hi: kernel(*args, lo, hi), tasks, work, per_thread=2)


def split_summing_kernel(kernel, tasks: int, work: int, head: tuple, sums: tuple, tail: tuple,
                         rows: tuple = ()) -> None:
    """kernel(*head, *sums, *tail, lo, hi), a ranged kernel with sums (zeroed where they add over
    leading axes), over [0, tasks) split over the cores: each range but the whole sums into arrays
    of its own, added into `sums` in the ranges' order once all have run (whichever thread ran
    each: threads.split_parts). Unsplit, the kernel sums straight into `sums`. The sums at
    positions `rows` (each outer row's own) every range writes its rows of in place."""
    def run(lo: int, hi: int) -> list | None:
        whole = lo == 0 and hi == tasks
        mine = [s if whole or k in rows else np.zeros_like(s) for k, s in enumerate(sums)]
        kernel(*head, *mine, *tail, lo, hi)
        return None if whole else mine
    first, *rest = threads.split_parts(run, tasks, work, per_thread=2)
    if first is not None:
        for k, total in enumerate(sums):
            if k not in rows:
                np.copyto(total, first[k])
                for part in rest:
                    total += part[k]


def cache_dir() -> Path:
    """$FUNCGRAD_CACHE_DIR, else ~/.cache/funcgrad, else a temporary directory."""
    for candidate in (os.environ.get("FUNCGRAD_CACHE_DIR"), Path.home() / ".cache" / "funcgrad",
                      Path(tempfile.gettempdir()) / "funcgrad-cache"):
        if candidate is None:
            continue
        folder = Path(candidate) / "kernels"
        try:
            folder.mkdir(parents=True, exist_ok=True)
            if os.access(folder, os.W_OK):
                return folder
        except OSError:
            continue
    raise RuntimeError("no writable directory for compiled kernels; set FUNCGRAD_CACHE_DIR")


def compile_kernel(source: str):
    """The numba kernel for this source, from a file named by its hash (written once). Threads
    that ask for the same new kernel at once (the parts of a split kernel's first call) wait for
    one of them to compile it."""
    with _compiling:
        return _compile(source)


_compiling = threading.Lock()


@cache
def _compile(source: str):
    digest = hashlib.sha256(source.encode()).hexdigest()[:20]
    path = cache_dir() / f"fused_{digest}.py"
    if not path.exists() or path.read_text() != source:
        tmp = path.with_suffix(f".{os.getpid()}.tmp")
        tmp.write_text(source)
        os.replace(tmp, path)
    name = f"funcgrad_fused_{digest}"
    spec = importlib.util.spec_from_file_location(name, path)
    module = importlib.util.module_from_spec(spec)
    sys.modules[name] = module  # numba's on-disk cache finds the kernel's module by name
    spec.loader.exec_module(module)
    return module.kernel
