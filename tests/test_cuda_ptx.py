"""Runs tests/ptx_check.py in further pytest processes without the simulator (numba reads
NUMBA_ENABLE_CUDASIM once, at import): every kernel compiled to PTX for a real GPU, the kernel
cases split into one shard per core, compiled side by side."""
from __future__ import annotations

import os
import subprocess
import sys
from pathlib import Path

import pytest


def _nvvm_available() -> bool:
    probe = "from numba.cuda.cudadrv import nvvm; nvvm.NVVM()"
    env = {**os.environ, "NUMBA_ENABLE_CUDASIM": "0"}
    return subprocess.run([sys.executable, "-c", probe], env=env, capture_output=True).returncode == 0


@pytest.mark.skipif(not _nvvm_available(), reason="NVVM is missing: pip install 'funcgrad[cuda]'")
def test_every_kernel_compiles_to_ptx_without_the_simulator():
    check = Path(__file__).with_name("ptx_check.py")
    shards = max(1, min(os.cpu_count() or 1, 4))
    runs = []
    for shard in range(shards):
        env = {**os.environ, "NUMBA_ENABLE_CUDASIM": "0", "FUNCGRAD_PTX_SHARD": f"{shard}/{shards}"}
        only_cases = ["-k", "test_compiles_to_ptx"] if shard else []  # shard 0 also runs the other checks
        runs.append(subprocess.Popen([sys.executable, "-m", "pytest", "-q", "-p", "no:cacheprovider", "-x",
                                      str(check), *only_cases], env=env, stdout=subprocess.PIPE,
                                     stderr=subprocess.PIPE, text=True))
    try:
        results = [(run, *run.communicate(timeout=1200)) for run in runs]
    finally:
        for run in runs:
            run.kill()
    for run, out, err in results:
        assert run.returncode == 0, out[-4000:] + err[-2000:]
        assert " passed" in out and "skipped" not in out.splitlines()[-1]
