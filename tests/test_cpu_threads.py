"""funcgrad.cpu.threads: the parts of one kernel call shared across the cores."""
import os
import threading

import pytest

import funcgrad as fg
from funcgrad.cpu import threads


@pytest.mark.parametrize("n,parts", [(0, 2), (1, 4), (5, 2), (7, 3), (4, 4), (3, 8)])
def test_spans_cover_the_range_in_order_without_empty_parts(n, parts):
    ranges = threads.spans(n, parts)
    assert [i for a, b in ranges for i in range(a, b)] == list(range(n))
    assert len(ranges) == max(1, min(parts, n))
    assert all(b > a for a, b in ranges) or n == 0
    sizes = [b - a for a, b in ranges]
    assert max(sizes) - min(sizes) <= 1


def test_cores_follow_the_config_and_the_affinity(monkeypatch):
    monkeypatch.setattr(fg.config, "cpu_threads", None)
    usable = len(os.sched_getaffinity(0)) if hasattr(os, "sched_getaffinity") else os.cpu_count()
    assert threads.cores() == usable
    monkeypatch.setattr(fg.config, "cpu_threads", 3)
    assert threads.cores() == 3
    monkeypatch.setattr(fg.config, "cpu_threads", 0)
    assert threads.cores() == 1


def test_parts_run_on_several_threads_and_nested_calls_run_serially():
    seen, nested = {}, {}

    def part(i):
        seen[i] = threading.get_ident()
        threads.run_parts(lambda j: nested.setdefault((i, j), threading.get_ident()), [(0,), (1,)])
    threads.run_parts(part, [(0,), (1,), (2,)])
    assert sorted(seen) == [0, 1, 2]
    assert seen[0] == threading.get_ident()  # the caller takes the first part
    assert len(set(seen.values())) > 1
    assert all(nested[(i, j)] == seen[i] for i, j in nested) and len(nested) == 6


def test_an_error_in_any_part_is_raised_after_every_part_finished():
    done = []

    def part(i):
        if i == 2:
            raise ValueError("part 2 failed")
        done.append(i)
    with pytest.raises(ValueError, match="part 2 failed"):
        threads.run_parts(part, [(0,), (1,), (2,), (3,)])
    assert sorted(done) == [0, 1, 3]
    with pytest.raises(ZeroDivisionError):
        threads.run_parts(lambda i: 1 / i, [(0,), (1,)])  # the caller's own part


@pytest.mark.skipif(not hasattr(os, "fork"), reason="needs fork")
def test_a_forked_child_makes_its_own_pool():
    threads.run_parts(lambda i: None, [(0,), (1,)])  # the parent has a pool now
    read, write = os.pipe()
    pid = os.fork()
    if pid == 0:  # the child: the parent's worker threads do not exist here
        try:
            out = []
            threads.run_parts(lambda i: out.append(i), [(0,), (1,), (2,)])
            os.write(write, bytes(sorted(out)))
        finally:
            os._exit(0)
    os.close(write)
    _, status = os.waitpid(pid, 0)
    assert os.read(read, 16) == bytes([0, 1, 2]) and status == 0
