"""The second test run, without the simulator: every CUDA kernel, for every dtype it supports,
compiles to PTX for compute capability 9.0 (the simulator does no type checking).
tests/test_cuda_ptx.py starts it: NUMBA_ENABLE_CUDASIM=0 pytest tests/ptx_check.py, split over the
cores: FUNCGRAD_PTX_SHARD=i/n takes every n-th kernel case from the i-th (compiling is
single-threaded: the shards run side by side; the other tests run with shard 0)."""
from __future__ import annotations

import os

import pytest

if os.environ.get("NUMBA_ENABLE_CUDASIM", "0") == "1":
    pytest.skip("the simulator cannot compile to PTX", allow_module_level=True)

import re  # noqa: E402

from numba import types  # noqa: E402

from funcgrad.cuda import ptx, runtime  # noqa: E402
from funcgrad.ops.scalar import LOOPS  # noqa: E402

SHARD, SHARDS = (int(part) for part in os.environ.get("FUNCGRAD_PTX_SHARD", "0/1").split("/"))
CASES = list(ptx.cases())
MINE = CASES[SHARD::SHARDS]
HOT = ("matmul", "fused", "sum[", "logsumexp", "softmax", "layer_norm", "rms_norm", "attention", "cumsum", "argsort",
       "take along", "put along")
NARROW = (types.float32, types.float16, types.uint16, types.int64, types.int32, types.uint32, types.uint8,
          types.int8, types.int16, types.boolean)  # uint16: bfloat16's storage


# libdevice's sinf, cosf and tanf reduce huge arguments (|x| > 105615) by Payne-Hanek: a 64-bit
# integer product scaled to radians by one f64 multiply by pi/2 * 2^-64, converted back. That slow
# path is NVIDIA's, not a widening of ours; every other f64 instruction is one.
_PAYNE_HANEK = re.compile(r"mul\.f64\s+%fd\d+, %fd\d+, 0d3BF921FB54442D19;")
_ITS_CONVERSIONS = re.compile(r"cvt\.rn\.f64\.s64|cvt\.rn\.f32\.f64|\.reg \.f64")


def float64_instructions(code: str) -> list[str]:
    """The PTX lines that compute in float64, less libdevice's own argument reduction."""
    lines = [line for line in code.splitlines() if re.search(r"\.f64\b", line)]
    if any(_PAYNE_HANEK.search(line) for line in lines):
        lines = [line for line in lines if not (_PAYNE_HANEK.search(line) or _ITS_CONVERSIONS.search(line))]
    return lines


# The loop functions (the incomplete gamma and beta functions) compute in float64 by design (their
# series and the gamma family's derivatives subtract nearly equal terms); only their kernels are spared.
IN_FLOAT64 = tuple(f"{name}[" for name in LOOPS)


def computes_in_float32(sig) -> bool:
    """A kernel of float32 (or narrower) arrays, and no float64 scalar arguments: nothing in it
    should widen to float64 (an untyped literal like `2 * x` would, and the simulator cannot tell)."""
    arrays = [a for a in sig if isinstance(a, types.Array)]
    return (any(a.dtype == types.float32 for a in arrays) and all(a.dtype in NARROW for a in arrays)
            and types.float64 not in sig)


@pytest.mark.parametrize("name,kernel,sig", MINE, ids=[c[0] for c in MINE])
def test_compiles_to_ptx(name, kernel, sig):
    code = ptx.compile_case(kernel, sig)
    assert ".target sm_90" in code and ".entry" in code
    shared = sum(int(size) for size in re.findall(r"\.shared \.align \d+ \.b8 \S+\[(\d+)\]", code))
    assert shared <= runtime.MAX_STATIC_SHARED, f"{name}: {shared} bytes of static shared memory"
    if computes_in_float32(sig) and not name.startswith(IN_FLOAT64):
        assert not float64_instructions(code), f"{name} computes in float64: {float64_instructions(code)[:3]}"
    if name.startswith(HOT):  # assembled by ptxas (nvJitLink): registers and shared memory fit, nothing spills
        used = ptx.resources(code)
        assert used.spill_stores == 0 and used.occupancy() > 0, f"{name}: {used}"


def test_a_contiguous_elementwise_kernel_indexes_without_remainders():
    """Operands collapsed to one dimension (every contiguous one) index as offset + i * stride:
    no 64-bit remainder per operand per element (a 2-d launch keeps one per inner dimension)."""
    import numpy as np

    from funcgrad.cuda.kernels import elementwise
    from funcgrad.ops import elementwise as E
    kinds = (np.dtype(np.float32), np.dtype(np.float32))
    kernel = elementwise.kernel_for(E.add_p, (), kinds, np.dtype(np.float32))
    for ndim, remainders in ((1, 0), (2, 3)):  # two operands and the output
        code = ptx.compile_case(kernel, elementwise.ptx_signature(kinds, np.float32, ndim))
        assert len(re.findall(r"\brem\.[su]64\b", code)) == remainders, ndim


def test_every_lane_of_a_warp_reaches_its_shuffles():
    """A shuffle with the full mask must run in all 32 lanes. Inside a conditional expression (max's
    `a if a >= b else b`, with the shuffle as b) it ran in some lanes only, and a GPU hung."""
    import numpy as np

    from funcgrad.cuda.kernels import attention, reduce
    f32, i64 = np.dtype(np.float32), np.dtype(np.int64)
    sources = [reduce._reduce_source(m, dt, np.dtype(np.bool_) if m.logical else dt, "rows")
               for m in reduce.MONOIDS for dt in (f32, i64)]
    sources += [reduce._softmax_source(mode, f32) for mode in ("softmax", "log_softmax", "logsumexp")]
    sources += [reduce._norm_source(f32, center, g) for center in (True, False) for g in (None, f32)]
    sources += [make(f32, bias) for make in (attention._forward_source, attention._query_grads_source)
                for bias in (False, True)]
    for source in sources:  # every kernel whose block sums end in warp shuffles
        lines = [line for line in source.splitlines() if "shfl" in line]
        assert lines, source
        for line in lines:
            assert re.fullmatch(r"\s*\w+ = [\w.]+\(cuda\.shfl_down_sync\([\w, ]*\)\)", line), line


def test_floats_convert_to_narrow_integers_by_truncating_then_wrapping():
    """A GPU's float -> uint8 conversion saturates (-1.5 gave 0); NumPy's and PyTorch's CPU paths
    truncate and wrap (255). Kernels convert through int64, so they agree."""
    import numpy as np

    from funcgrad.cuda.kernels import elementwise
    from funcgrad.ops import elementwise as E
    for source in (np.float32, np.float64):
        kinds = (np.dtype(source),)
        for target in (np.uint8, np.int8, np.int16, np.uint16, np.int32, np.uint32):
            kernel = elementwise.kernel_for(E.convert_p, (("dtype", np.dtype(target)),), kinds, np.dtype(target))
            code = ptx.compile_case(kernel, elementwise.ptx_signature(kinds, np.dtype(target), 1))
            assert re.search(r"cvt\.rzi\.s64\.f(32|64)", code), (source, target)
            assert not re.search(r"cvt\.rzi\.[su](8|16|32)\.f(32|64)", code), (source, target)


def test_resolved_launches_lay_parameters_out_as_numba_does():
    """runtime.launch skips numba's dispatch once a kernel's overload is resolved: its parameters
    must be exactly what numba's _Kernel._prepare_args gives, for every argument type it takes."""
    import ctypes
    from types import SimpleNamespace

    import numpy as np
    from numba.cuda import types
    from numba.cuda.cudadrv.devicearray import DeviceNDArray
    from numba.cuda.dispatcher import _Kernel

    memory = SimpleNamespace(device_ctypes_pointer=ctypes.c_size_t(0x7F0000001000))  # no GPU needed
    flat = DeviceNDArray((7,), (4,), np.float32, gpu_data=memory)
    strided = DeviceNDArray((5, 3), (48, 8), np.float64, gpu_data=memory)
    single = DeviceNDArray((1,), (2,), np.uint16, gpu_data=memory)
    cases = [(flat, flat._numba_type_), (strided, strided._numba_type_), (single, single._numba_type_),
             (-3, types.int64), (7, types.int32), (2**40, types.uint64), (1.5, types.float64),
             (np.float32(0.25), types.float32), (True, types.boolean), ((4, 5, 6), types.UniTuple(types.int64, 3)),
             ((1, (2.5, flat)), types.Tuple([types.int64, types.Tuple([types.float64, flat._numba_type_])]))]

    def plain(params):  # as cuda.core passes them: a Python int as a 64-bit integer, ctypes by their type
        return [(ctypes.sizeof(p), p._type_, p.value) if isinstance(p, ctypes._SimpleCData) else
                (p,) if type(p) is bool else (8, ctypes.c_int64._type_, p) for p in params]
    numba_kernel = SimpleNamespace(extensions=[])  # what _prepare_args reads of its kernel
    numba_kernel._prepare_args = lambda *args: _Kernel._prepare_args(numba_kernel, *args)
    for value, ty in cases:
        expected, got = [], []
        numba_kernel._prepare_args(ty, value, 0, [], expected)
        runtime._flattener(ty)(value, got)
        assert plain(got) == plain(expected), ty
    assert runtime._argument_key(flat) == np.dtype(np.float32)
    assert runtime._argument_key(DeviceNDArray((4,), (8,), np.float32, gpu_data=memory)).layout == "A"


def test_every_kernel_takes_the_resolved_launch():
    """Every argument type of every kernel funcgrad compiles has a flattener, so no launch falls
    back to numba's slower dispatch."""
    slow = [name for name, _, sig in CASES if any(runtime._flattener(t) is None for t in sig)]
    assert not slow, slow


def test_the_matmul_inner_loop_runs_multiply_adds_without_index_arithmetic():
    """A float32 tile's step along K, in PTX: its 8 x 8 multiply-adds and 16 shared loads with a few
    integer instructions, not numba's 64-bit index arithmetic (and negative-index checks) per read."""
    name, kernel, sig = next(c for c in CASES if c[0].startswith("matmul[float32->float32, precision=None"))
    lines = ptx.compile_case(kernel, sig).splitlines()
    fmas = [i for i, line in enumerate(lines) if "fma.rn.f32" in line]
    start = max(i for i in range(fmas[0]) if re.match(r"\s*\$L\w+:", lines[i]))  # the loop's label
    stop = next(i for i in range(fmas[-1], len(lines)) if re.search(r"\bbra", lines[i]))  # its branch back
    loop = lines[start:stop + 1]
    count = lambda pattern: sum(bool(re.search(pattern, line)) for line in loop)  # noqa: E731
    assert count(r"fma\.rn\.f32") == 64 and count(r"ld\.shared\.f32") == 16, name
    assert count(r"\b(add|sub|mul|mad|setp|selp)\.\S*[sub](32|64)\b|\bshl\.b64") <= 12, name


def test_float64_detection_spares_only_libdevices_reduction():
    reduction = ["\t.reg .f64 \t%fd<3>;", "\tcvt.rn.f64.s64 \t%fd1, %rd95;",
                 "\tmul.f64 \t%fd2, %fd1, 0d3BF921FB54442D19;", "\tcvt.rn.f32.f64 \t%f21, %fd2;"]
    assert float64_instructions("\n".join(reduction)) == []
    widened = reduction + ["\tcvt.f64.f32 \t%fd3, %f1;", "\tmul.f64 \t%fd4, %fd3, 0d4000000000000000;"]
    assert len(float64_instructions("\n".join(widened))) == 2
    assert float64_instructions("\tadd.f64 \t%fd1, %fd2, %fd3;") == ["\tadd.f64 \t%fd1, %fd2, %fd3;"]
