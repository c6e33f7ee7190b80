"""DataLoader worker processes (num_workers > 0): each builds whole batches, which come back in the
loader's order whatever order they finish in, so a run is the same with any number of workers.

Batch b goes to worker b % num_workers. A worker's exception is raised in the main process as the
same type, naming the worker and the batch, with the worker's traceback; a worker that dies (a
segfault, SIGKILL) is reported too, and timeout bounds the wait for any batch.
"""
from __future__ import annotations

import contextlib
import multiprocessing
import pickle
import queue
import signal
import traceback
from typing import Any, Callable

import numpy as np

_STOP = None  # what a worker's task queue gets to end it


class WorkerError(Exception):
    """Carries a worker's exception and traceback to the main process."""


def _worker_loop(worker_id: int, make: Callable, tasks, results, seed: int, init_fn) -> None:
    signal.signal(signal.SIGINT, signal.SIG_IGN)  # Ctrl-C is the main process's to handle
    np.random.seed(seed)  # datasets that draw with NumPy's global RNG: reproducible per worker
    try:
        if init_fn is not None:
            init_fn(worker_id)
    except Exception as e:  # noqa: BLE001  (reported to the main process)
        results.put((-1, worker_id, _wrapped(e)))
        return
    while True:
        task = tasks.get()
        if task is _STOP:
            return
        index, indices = task
        try:  # pickled here, so a batch that cannot travel is this worker's error, not a lost batch
            results.put((index, worker_id, pickle.dumps(make(indices), protocol=pickle.HIGHEST_PROTOCOL)))
        except Exception as e:  # noqa: BLE001  (reported to the main process)
            results.put((index, worker_id, _wrapped(e)))


def _wrapped(e: Exception) -> tuple:
    kind = type(e)
    try:
        pickle.dumps(kind)
    except Exception:  # noqa: BLE001  (a class the main process could not import)
        kind = RuntimeError
    return ("error", kind, f"{type(e).__name__}: {e}" if kind is not type(e) else str(e), traceback.format_exc())


def _is_error(item) -> bool:
    return isinstance(item, tuple) and len(item) == 4 and item[0] == "error"


def _reraise(item, worker_id: int, index: int):
    _, kind, message, tb = item
    where = f"DataLoader worker {worker_id}" + (f" (batch {index})" if index >= 0 else " (worker_init_fn)")
    text = f"{where}: {message}\n\nThe worker's traceback:\n{tb}"
    try:
        error = kind(text)
    except Exception:  # noqa: BLE001  (an exception type that takes other arguments)
        error = WorkerError(f"{kind.__name__}: {text}")
    raise error


def run(plan: list, make: Callable, num_workers: int, seed: int, prefetch: int, timeout: float,
        init_fn=None, context: str | None = None):
    """Yield make(indices) for each entry of plan, in order, built by num_workers processes."""
    ctx = multiprocessing.get_context(context or ("fork" if "fork" in multiprocessing.get_all_start_methods()
                                                  else "spawn"))
    results = ctx.Queue()
    tasks = [ctx.Queue() for _ in range(num_workers)]
    workers = [ctx.Process(target=_worker_loop, args=(w, make, tasks[w], results, seed + w, init_fn), daemon=True)
               for w in range(num_workers)]
    for w in workers:
        w.start()
    sent, done, waiting = 0, 0, {}
    try:
        while done < len(plan):
            while sent < len(plan) and sent - done < num_workers * max(prefetch, 1):
                tasks[sent % num_workers].put((sent, plan[sent]))
                sent += 1
            while done not in waiting:
                index, worker_id, item = _next_result(results, workers, timeout)
                if _is_error(item):
                    _reraise(item, worker_id, index)
                waiting[index] = pickle.loads(item)
            yield waiting.pop(done)
            done += 1
    finally:
        _shut_down(workers, tasks)


def _next_result(results, workers, timeout: float) -> Any:
    waited = 0.0
    while True:
        try:
            return results.get(timeout=0.5)
        except queue.Empty:
            waited += 0.5
        for w, p in enumerate(workers):
            if p.exitcode is not None and p.exitcode != 0:
                how = (f"killed by signal {signal.Signals(-p.exitcode).name}" if p.exitcode < 0
                       else f"exit code {p.exitcode}")
                raise RuntimeError(f"DataLoader worker {w} died ({how}) before returning its batch")
        if timeout and waited >= timeout:
            raise RuntimeError(f"DataLoader timed out after {timeout} s waiting for a batch from its workers")


def _shut_down(workers, tasks) -> None:
    for q in tasks:
        with contextlib.suppress(OSError, ValueError):  # a queue already closed: its worker is gone
            q.put(_STOP)
    for p in workers:
        p.join(timeout=1.0)
        if p.is_alive():
            p.terminate()
            p.join(timeout=1.0)
