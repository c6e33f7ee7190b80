import os

# CUDA kernels run in numba's simulator unless a run asks otherwise; set before numba loads.
os.environ.setdefault("NUMBA_ENABLE_CUDASIM", "1")

import pytest  # noqa: E402
from hypothesis import HealthCheck, settings  # noqa: E402

settings.register_profile("ci", max_examples=12, deadline=None,
                          suppress_health_check=[HealthCheck.too_slow, HealthCheck.data_too_large])
settings.register_profile("thorough", max_examples=200, deadline=None,
                          suppress_health_check=[HealthCheck.too_slow])
settings.load_profile(os.environ.get("HYPOTHESIS_PROFILE", "ci"))


def _check_shape_rules() -> None:
    """FUNCGRAD_CHECK_SHAPE_RULES=1: every primitive's implementation also asserts that its shape
    rule predicts the shape and dtype it returned (a slower run that validates the rules jit uses)."""
    import numpy as np
    from funcgrad.ops import registry
    from funcgrad.ops.core import aval

    def checked(prim, impl):
        def run(*args, **params):
            out = impl(*args, **params)
            avals = [aval(a) for a in args]
            try:
                rule = prim.shape_rule(*avals, **params)
            except Exception as e:  # noqa: BLE001  (any complaint where the implementation ran is a bug)
                raise AssertionError(f"{prim.name}{avals} {params}: the shape rule raised {e!r}") from None
            got = aval(np.asarray(out) if not hasattr(out, "dtype") else out)
            assert (rule.shape, rule.dtype) == (got.shape, got.dtype), \
                f"{prim.name}{avals} {params}: rule {rule}, implementation {got}"
            return out
        return run

    for prim in registry.values():
        prim.impl = checked(prim, prim.impl)


if os.environ.get("FUNCGRAD_CHECK_SHAPE_RULES"):
    _check_shape_rules()


def _cooperative_simulator() -> None:
    """numba's simulator runs a block's GPU threads as Python threads and waits for them in a loop
    that polls each one's is_alive() without ever releasing the GIL, so the threads it waits for run
    only when the interpreter preempts the loop. A yield at each poll (time.sleep(0) releases the
    GIL) runs the simulated kernels 3-4 times faster: test_cuda_kernels and test_cuda took 116 s of
    CPU instead of about 220 (the bfloat16 attention case 10 s instead of 35)."""
    import time

    from numba.cuda.simulator import kernel

    polled = kernel.BlockThread.is_alive

    def is_alive(thread) -> bool:
        time.sleep(0)
        return polled(thread)
    kernel.BlockThread.is_alive = is_alive


if os.environ["NUMBA_ENABLE_CUDASIM"] == "1":
    _cooperative_simulator()


def _is_ptx_check(item) -> bool:
    return item.path.name == "test_cuda_ptx.py"


@pytest.hookimpl(trylast=True)  # after -k and -m have deselected
def pytest_collection_modifyitems(session, config, items):
    """The PTX check last, its shards started now, to compile beside the rest (tests/ptx_shards.py)."""
    from . import ptx_shards
    ptx = [item for item in items if _is_ptx_check(item)]
    if ptx and ptx_shards.nvvm_available():
        items[:] = [item for item in items if not _is_ptx_check(item)] + ptx
        ptx_shards.start()


def pytest_sessionfinish(session, exitstatus):
    from . import ptx_shards
    ptx_shards.stop()
