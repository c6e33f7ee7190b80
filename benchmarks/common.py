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


def interleaved_samples(fns: dict[str, Callable[[], object]], rounds: int = 7, block: float = 0.25,
                        settle: float = 0.25) -> dict[str, list[float]]:
    """Time per call of each fn in every round, measured in turns: every round times a block of
    calls (block seconds) of each fn, starting from a different one, so drift in a shared machine's
    speed during the run hits all of them alike and their ratios stay fair. Before each block the
    process idles for `settle` seconds (long enough for the previous library's spinning thread
    pool, OpenBLAS's or OpenMP's, to go to sleep) and makes one untimed call (caches refilled)."""
    names = list(fns)
    samples: dict[str, list[float]] = {name: [] for name in names}
    for r in range(rounds):
        for name in names[r % len(names):] + names[:r % len(names)]:
            time.sleep(settle)
            fns[name]()
            n, start = 0, time.perf_counter()
            while True:
                fns[name]()
                n += 1
                elapsed = time.perf_counter() - start
                if elapsed >= block:
                    break
            samples[name].append(elapsed / n)
    return samples


def interleaved_medians(fns: dict[str, Callable[[], object]], rounds: int = 7, block: float = 0.25,
                        settle: float = 0.25) -> dict[str, float]:
    """Median time per call of each fn over interleaved_samples' rounds."""
    return {name: statistics.median(times) for name, times in interleaved_samples(fns, rounds, block, settle).items()}


def paired_ratio(samples: dict[str, list[float]], name: str, base: str) -> float:
    """The median over rounds of name's time / base's time in the same round: a machine whose speed
    drifts between rounds moves both alike, so this is steadier than a ratio of medians."""
    return statistics.median(t / b for t, b in zip(samples[name], samples[base]))


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
