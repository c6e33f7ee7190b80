"""Every kernel compiled to PTX for a real GPU: the verdicts of tests/ptx_check.py's shards, which
tests/ptx_shards.py started when the run was collected (conftest.py puts this test last)."""
from __future__ import annotations

import pytest

from . import ptx_shards


@pytest.mark.skipif(not ptx_shards.nvvm_available(), reason="NVVM is missing: pip install 'funcgrad[cuda]'")
def test_every_kernel_compiles_to_ptx_without_the_simulator():
    try:
        results = ptx_shards.results(timeout=1200)
    finally:
        ptx_shards.stop()
    for code, output in results:
        assert code == 0, output[-6000:]
        assert " passed" in output and "skipped" not in output.splitlines()[-1]
