"""A profiler in the shape of torch.profiler.

    with fg.profiler.profile(record_shapes=True, profile_memory=True) as prof:
        with fg.profiler.record_function("forward"):
            ...
    print(prof.key_averages().table(sort_by="cpu_time_total", row_limit=10))
    prof.export_chrome_trace("trace.json")      # open in chrome://tracing or ui.perfetto.dev

Every primitive that runs (eagerly) is an event with its CPU time, input shapes and the bytes
its output allocated; record_function ranges, the forward and backward passes of grad and each
jitted call are ranges that nest them. A collective of funcgrad.dist (eager or jitted) is also an
event of its own, named by operation and mesh axes, with the bytes this process sent. Arrays live on the CPU here, so device time is zero.
When no profiler records, the cost is one attribute check per primitive.
"""
from __future__ import annotations

import contextlib
import enum
import functools
import json
import os
import threading
from time import perf_counter_ns
from typing import Callable

import numpy as np

from .array import ExternalValue
from .trace import hooks

__all__ = ["profile", "record_function", "schedule", "ProfilerAction"]


class _Event:
    __slots__ = ("name", "kind", "start", "end", "tid", "shapes", "bytes", "sent", "child_ns", "parent", "step",
                 "device_ns")

    def __init__(self, name, kind, start, tid, parent, step):
        self.name, self.kind, self.start, self.end, self.tid = name, kind, start, start, tid
        self.shapes, self.bytes, self.sent, self.child_ns, self.parent, self.step = (), 0, 0, 0, parent, step
        self.device_ns = 0  # for an op on a GPU: launch to completion (the device synchronised)

    @property
    def duration(self) -> int:
        return self.end - self.start

    @property
    def self_ns(self) -> int:
        """A collective's time is already inside the op or jitted call that ran it."""
        return 0 if self.kind == "comm" else self.duration - self.child_ns


class ProfilerAction(enum.Enum):
    NONE = 0
    WARMUP = 1
    RECORD = 2
    RECORD_AND_SAVE = 3


def schedule(*, wait: int, warmup: int, active: int, repeat: int = 0, skip_first: int = 0) -> Callable:
    """step -> ProfilerAction: skip_first steps, then cycles of wait, warmup and active steps
    (repeat cycles, or forever when repeat is 0), as torch.profiler.schedule."""
    if wait < 0 or warmup < 0 or active <= 0 or repeat < 0 or skip_first < 0:
        raise ValueError("schedule needs wait, warmup, repeat, skip_first >= 0 and active > 0")
    cycle = wait + warmup + active

    def action(step: int) -> ProfilerAction:
        if step < skip_first:
            return ProfilerAction.NONE
        step -= skip_first
        if repeat and step >= repeat * cycle:
            return ProfilerAction.NONE
        position = step % cycle
        if position < wait:
            return ProfilerAction.NONE
        if position < wait + warmup:
            return ProfilerAction.WARMUP
        return ProfilerAction.RECORD_AND_SAVE if position == cycle - 1 else ProfilerAction.RECORD
    return action


class profile:
    """Records what runs inside `with`; see the module docstring."""

    def __init__(self, record_shapes: bool = False, profile_memory: bool = False,
                 schedule: Callable[[int], ProfilerAction] | None = None,
                 on_trace_ready: Callable[["profile"], None] | None = None):
        self.record_shapes, self.profile_memory = record_shapes, profile_memory
        self.schedule, self.on_trace_ready = schedule, on_trace_ready
        self.events: list[_Event] = []
        self.step_num = 0
        self._open = threading.local()
        self._origin = perf_counter_ns()
        self._previous = None

    # ---- lifecycle ------------------------------------------------------------------------------
    def __enter__(self) -> "profile":
        self._previous = hooks.profiler
        self._apply(self._action())
        return self

    def __exit__(self, *exc):
        if self.schedule is not None and self._action() is ProfilerAction.RECORD and self.on_trace_ready:
            self.on_trace_ready(self)
        hooks.profiler = self._previous

    def _action(self) -> ProfilerAction:
        return ProfilerAction.RECORD if self.schedule is None else self.schedule(self.step_num)

    def _apply(self, action: ProfilerAction) -> None:
        hooks.profiler = self if action in (ProfilerAction.RECORD, ProfilerAction.RECORD_AND_SAVE) else self._previous

    def step(self) -> None:
        """Mark the end of a training step (for schedule)."""
        finished = self._action()
        self.step_num += 1
        if finished is ProfilerAction.RECORD_AND_SAVE and self.on_trace_ready is not None:
            self.on_trace_ready(self)
        self._apply(self._action())

    # ---- recording (called by bind and by ranges) -----------------------------------------------
    def _stack(self) -> list:
        stack = getattr(self._open, "stack", None)
        if stack is None:
            stack = self._open.stack = []
        return stack

    def record_op(self, name: str, start: int, end: int, inputs, out) -> None:
        stack = self._stack()
        event = _Event(name, "op", start, threading.get_ident(), stack[-1] if stack else None, self.step_num)
        event.end = end
        if self.record_shapes:
            event.shapes = tuple(tuple(np.shape(x)) for x in inputs if x is not None)
        if isinstance(out, ExternalValue):  # kernels run asynchronously: wait for this one to finish
            out.synchronize()
            event.device_ns = perf_counter_ns() - start
        if self.profile_memory and (type(out) is np.ndarray and out.base is None or isinstance(out, ExternalValue)):
            event.bytes = out.nbytes
        if event.parent is not None:
            event.parent.child_ns += end - start
        self.events.append(event)
        if self._previous is not None:  # a profile inside another: the outer one records it too
            self._previous.record_op(name, start, end, inputs, out)

    def record_comm(self, name: str, start: int, end: int, sent: int) -> None:
        """A collective (funcgrad.dist.collectives) and the bytes this process sent in it."""
        stack = self._stack()
        event = _Event(name, "comm", start, threading.get_ident(), stack[-1] if stack else None, self.step_num)
        event.end, event.sent = end, sent
        self.events.append(event)
        if self._previous is not None:
            self._previous.record_comm(name, start, end, sent)

    @contextlib.contextmanager
    def range(self, name: str):
        with self._previous.range(name) if self._previous is not None else contextlib.nullcontext():
            with self._own_range(name) as event:
                yield event

    @contextlib.contextmanager
    def _own_range(self, name: str):
        stack = self._stack()
        event = _Event(name, "range", perf_counter_ns(), threading.get_ident(), stack[-1] if stack else None,
                       self.step_num)
        stack.append(event)
        try:
            yield event
        finally:
            event.end = perf_counter_ns()
            stack.pop()
            if event.parent is not None:
                event.parent.child_ns += event.duration
            self.events.append(event)

    # ---- reports ----------------------------------------------------------------------------------
    def key_averages(self, group_by_input_shape: bool = False) -> "EventTable":
        groups: dict = {}
        for e in self.events:
            key = (e.name, e.shapes) if group_by_input_shape else e.name
            row = groups.setdefault(key, {"name": e.name, "shapes": e.shapes if group_by_input_shape else None,
                                          "count": 0, "cpu_time_total": 0, "self_cpu_time_total": 0,
                                          "self_cpu_memory_usage": 0, "cuda_time_total": 0, "sent_bytes": 0,
                                          "communication": e.kind == "comm"})
            row["count"] += 1
            row["cpu_time_total"] += e.duration
            row["self_cpu_time_total"] += e.self_ns
            row["self_cpu_memory_usage"] += e.bytes
            row["cuda_time_total"] += e.device_ns
            row["sent_bytes"] += e.sent
        return EventTable(list(groups.values()), group_by_input_shape)

    def export_chrome_trace(self, path: "str | os.PathLike") -> None:
        """Write the events in the Trace Event Format (complete events, microseconds)."""
        pid = os.getpid()
        trace = []
        for e in sorted(self.events, key=lambda ev: (ev.start, -ev.duration)):
            args = {"step": e.step}
            if e.shapes:
                args["input shapes"] = [list(s) for s in e.shapes]
            if e.bytes:
                args["bytes"] = e.bytes
            if e.device_ns:
                args["device time (us)"] = e.device_ns / 1000.0
            if e.kind == "comm":
                args["bytes sent"] = e.sent
            category = {"op": "cpu_op", "comm": "communication"}.get(e.kind, "user_annotation")
            trace.append({"name": e.name, "cat": category, "ph": "X",
                          "ts": (e.start - self._origin) / 1000.0, "dur": e.duration / 1000.0,
                          "pid": pid, "tid": e.tid, "args": args})
        with open(path, "w") as f:
            json.dump({"traceEvents": trace, "displayTimeUnit": "ms"}, f)


class EventTable(list):
    """Rows of key_averages(); table() renders them like torch.profiler's."""

    SORT_KEYS = ("cpu_time_total", "self_cpu_time_total", "cuda_time_total", "self_cpu_memory_usage", "sent_bytes",
                 "count")

    def __init__(self, rows, by_shape: bool):
        super().__init__(rows)
        self.by_shape = by_shape

    def table(self, sort_by: str = "cpu_time_total", row_limit: int = 100) -> str:
        if sort_by not in self.SORT_KEYS:
            raise ValueError(f"sort_by must be one of {self.SORT_KEYS}, got {sort_by!r}")
        rows = sorted(self, key=lambda r: r[sort_by], reverse=True)[:row_limit] if row_limit >= 0 else list(self)
        total_self = sum(r["self_cpu_time_total"] for r in self) or 1
        sent = any(r["communication"] for r in self)  # a column only where collectives ran
        header = ["Name", "Self CPU %", "Self CPU", "CPU total", "CPU time avg", "Device total", "Self CPU Mem",
                  "# of Calls"] + (["Sent"] if sent else []) + (["Input Shapes"] if self.by_shape else [])
        lines = []
        for r in rows:
            cells = [r["name"], f"{100 * r['self_cpu_time_total'] / total_self:.2f}%",
                     _time(r["self_cpu_time_total"]), _time(r["cpu_time_total"]),
                     _time(r["cpu_time_total"] / r["count"]), _time(r["cuda_time_total"]),
                     _bytes(r["self_cpu_memory_usage"]), str(r["count"])]
            if sent:
                cells.append(_bytes(r["sent_bytes"]))
            if self.by_shape:
                cells.append(str([list(s) for s in (r["shapes"] or ())]))
            lines.append(cells)
        widths = [max(len(str(c)) for c in col) for col in zip(header, *lines)]
        rule = "-" * (sum(widths) + 2 * (len(widths) - 1))
        fmt = lambda cells: "  ".join(str(c).rjust(w) if i else str(c).ljust(w)  # noqa: E731
                                      for i, (c, w) in enumerate(zip(cells, widths)))
        body = "\n".join(fmt(c) for c in lines)
        return f"{rule}\n{fmt(header)}\n{rule}\n{body}\n{rule}\nSelf CPU time total: {_time(total_self)}\n"


def _time(ns: float) -> str:
    if ns >= 1e9:
        return f"{ns / 1e9:.3f}s"
    if ns >= 1e6:
        return f"{ns / 1e6:.3f}ms"
    return f"{ns / 1e3:.3f}us"


def _bytes(n: int) -> str:
    for unit, size in (("Gb", 2 ** 30), ("Mb", 2 ** 20), ("Kb", 2 ** 10)):
        if abs(n) >= size:
            return f"{n / size:.2f} {unit}"
    return f"{n} b"


class record_function:
    """A named range in the profile: `with record_function("name"):` or `@record_function("name")`."""

    def __init__(self, name: str):
        self.name = name
        self._range = None

    def __enter__(self):
        prof = hooks.profiler
        self._range = prof.range(self.name) if prof is not None else contextlib.nullcontext()
        return self._range.__enter__()

    def __exit__(self, *exc):
        return self._range.__exit__(*exc)

    def __call__(self, fn: Callable) -> Callable:
        @functools.wraps(fn)
        def wrapped(*args, **kwargs):
            with record_function(self.name):
                return fn(*args, **kwargs)
        return wrapped
