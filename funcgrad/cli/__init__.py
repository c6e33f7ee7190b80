"""The `funcgrad` command line (click). `python cli.py ...` from a checkout does the same.

Errors are one line on stderr and a non-zero exit, never a traceback. base.py holds the group
and what the commands share; the commands live in
train.py (train), tools.py (eval, profile, bench, info, launch); progress.py writes what a run
reports, jobs.py starts and lays out multi-process runs.
"""
from .base import main
from . import tools, train  # noqa: E402,F401  (the commands register themselves on main)

__all__ = ["main"]
