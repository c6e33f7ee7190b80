"""Timing helpers shared by the benchmarks: medians of repeated runs, peers when installed."""
from __future__ import annotations

import importlib.util
import statistics
import time
from typing import Callable


def have(module: str) -> bool:
    return importlib.util.find_spec(module) is not None


def median_seconds(fn: Callable[[], object], repeats: int = 30, warmup: int = 3,
                   min_time: float = 0.0) -> float:
    """Median wall time of fn(); each sample loops until it lasts min_time (for tiny ops)."""
    for _ in range(warmup):
        fn()
    samples = []
    for _ in range(repeats):
        n, start = 0, time.perf_counter()
        while True:
            fn()
            n += 1
            elapsed = time.perf_counter() - start
            if elapsed >= min_time:
                break
        samples.append(elapsed / n)
    return statistics.median(samples)


def print_table(title: str, rows: list[tuple[str, str, float | None]], baseline: str = "funcgrad") -> None:
    """rows: (case, implementation, seconds or None when unavailable); ratios are vs baseline."""
    print(f"\n{title}")
    print(f"{'case':<34}{'implementation':<22}{'median':>12}{'vs funcgrad':>14}")
    base = {case: t for case, impl, t in rows if impl == baseline and t is not None}
    for case, impl, t in rows:
        if t is None:
            print(f"{case:<34}{impl:<22}{'n/a':>12}{'':>14}")
            continue
        ratio = f"{t / base[case]:.2f}x" if case in base else ""
        print(f"{case:<34}{impl:<22}{t * 1e3:>10.3f}ms{ratio:>14}")
