"""Whether a process is still running: what funcgrad asks of its peers (a dead rank) and of its own
earlier runs (a killed save's temporary file, a killed job's shared memory)."""
from __future__ import annotations

import contextlib
import os


def alive(pid: int) -> bool:
    """True while pid runs. A zombie (exited, not yet reaped by its parent) counts as dead: it will
    never arrive at a collective or finish a save."""
    try:
        with contextlib.suppress(PermissionError):  # someone else's process: it exists
            os.kill(pid, 0)
    except ProcessLookupError:
        return False
    try:
        with open(f"/proc/{pid}/stat", "rb") as f:
            stat = f.read()
    except OSError:
        return True  # no /proc (macOS): os.kill's answer stands
    end = stat.rfind(b")")  # the command name may itself hold ') '
    return stat[end + 2:end + 3] != b"Z"
