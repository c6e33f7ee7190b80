"""The second test run, without the simulator: every CUDA kernel, for every dtype it supports,
compiles to PTX for compute capability 9.0 (the simulator does no type checking).
tests/test_cuda_ptx.py starts it: NUMBA_ENABLE_CUDASIM=0 pytest tests/ptx_check.py"""
from __future__ import annotations

import os

import pytest

if os.environ.get("NUMBA_ENABLE_CUDASIM", "0") == "1":
    pytest.skip("the simulator cannot compile to PTX", allow_module_level=True)

from funcgrad.cuda import ptx  # noqa: E402

CASES = list(ptx.cases())


@pytest.mark.parametrize("name,kernel,sig", CASES, ids=[c[0] for c in CASES])
def test_compiles_to_ptx(name, kernel, sig):
    code = ptx.compile_case(kernel, sig)
    assert ".target sm_90" in code and ".entry" in code
