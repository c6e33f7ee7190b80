"""The PTX check's processes: tests/ptx_check.py without the simulator (numba reads
NUMBA_ENABLE_CUDASIM once, at import), its kernel cases split into one shard per core. conftest.py
starts them as soon as the run's tests are collected, so they compile beside the rest of the suite
(about half of its time when they ran alone at the end), at the lowest CPU priority: the suite's
multi-process tests, whose timeouts are real, keep their cores. test_cuda_ptx.py, which runs last,
waits for them and reads their verdicts."""
from __future__ import annotations

import functools
import os
import subprocess
import sys
import tempfile
from pathlib import Path

CHECK = Path(__file__).with_name("ptx_check.py")
_runs: list = []  # (process, its output file)


@functools.cache
def nvvm_available() -> bool:
    probe = "from numba.cuda.cudadrv import nvvm; nvvm.NVVM()"
    env = {**os.environ, "NUMBA_ENABLE_CUDASIM": "0"}
    return subprocess.run([sys.executable, "-c", probe], env=env, capture_output=True).returncode == 0


def _lowest_priority() -> None:
    os.nice(19)


def start() -> None:
    """Start the shards (once per run)."""
    if _runs:
        return
    shards = max(1, min(os.cpu_count() or 1, 4))
    for shard in range(shards):
        env = {**os.environ, "NUMBA_ENABLE_CUDASIM": "0", "FUNCGRAD_PTX_SHARD": f"{shard}/{shards}"}
        only_cases = ["-k", "test_compiles_to_ptx"] if shard else []  # shard 0 also runs the other checks
        output = tempfile.TemporaryFile("w+")
        process = subprocess.Popen([sys.executable, "-m", "pytest", "-q", "-p", "no:cacheprovider", "-x", str(CHECK),
                                    *only_cases], env=env, stdout=output, stderr=subprocess.STDOUT, text=True,
                                   preexec_fn=_lowest_priority if hasattr(os, "nice") else None)
        _runs.append((process, output))


def results(timeout: float) -> list[tuple[int, str]]:
    """(exit code, output) of every shard, waiting up to timeout seconds for each."""
    start()
    finished = []
    for process, output in _runs:
        process.wait(timeout=timeout)
        output.seek(0)
        finished.append((process.returncode, output.read()))
    return finished


def stop() -> None:
    """Kill the shards still running (an interrupted or failed run) and drop their output."""
    for process, output in _runs:
        if process.poll() is None:
            process.kill()
            process.wait()
        output.close()
    _runs.clear()
