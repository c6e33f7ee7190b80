"""Runs tests/ptx_check.py in a second pytest process without the simulator (numba reads
NUMBA_ENABLE_CUDASIM once, at import): every kernel compiled to PTX for a real GPU."""
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
    env = {**os.environ, "NUMBA_ENABLE_CUDASIM": "0"}
    check = Path(__file__).with_name("ptx_check.py")
    result = subprocess.run([sys.executable, "-m", "pytest", "-q", "-p", "no:cacheprovider", "-x", str(check)],
                            env=env, capture_output=True, text=True, timeout=1200)
    assert result.returncode == 0, result.stdout[-4000:] + result.stderr[-2000:]
    assert " passed" in result.stdout and "skipped" not in result.stdout.splitlines()[-1]
