#!/usr/bin/env bash
# On a machine with an NVIDIA GPU: every test that touches the device, run on the GPU rather than in
# numba's simulator, then benchmarks/gpu_kernels.py. Run from the repository root:
#
#     bash benchmarks/gpu_check.sh            # tests, then the benchmark
#     bash benchmarks/gpu_check.sh tests      # tests only
#
# Each test is given 60 s when pytest-timeout is installed: a kernel that hangs (a barrier or a
# full-mask warp shuffle that not every thread reaches) then fails its test instead of the run.
# pytest-xdist, when installed, spreads the tests over the cores (numba compiles each kernel once
# per process).
set -u
export NUMBA_ENABLE_CUDASIM=0 PYTHONUNBUFFERED=1
python3 -c "from numba import cuda; assert cuda.is_available(), 'no CUDA device'" || exit 1
options=(-q -p no:cacheprovider -rfE)
python3 -c "import xdist" 2>/dev/null && options+=(-n "$(( $(nproc) < 16 ? $(nproc) : 16 ))")
python3 -c "import pytest_timeout" 2>/dev/null && options+=(--timeout 60 --timeout-method thread)
python3 -m pytest "${options[@]}" tests/test_cuda.py tests/test_cuda_kernels.py tests/test_complex.py \
    tests/test_fft.py tests/test_linalg.py tests/test_svd.py tests/test_label_losses.py \
    tests/test_numpy_composed.py tests/test_primitives.py "tests/test_cli.py::test_train_on_the_cuda_device"
status=$?
if [ "${1:-}" != "tests" ]; then
    python3 -W ignore benchmarks/gpu_kernels.py || status=1
fi
exit $status
