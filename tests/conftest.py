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
