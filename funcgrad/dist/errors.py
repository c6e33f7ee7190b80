"""Errors of distributed runs: each names the rank, the collective and its sequence number."""
from ..errors import FuncgradError


class DistError(FuncgradError, RuntimeError):
    """A collective failed; the process group is unusable until it is created again."""


class DistTimeoutError(DistError, TimeoutError):
    """A peer did not take part in a collective (or rendezvous) in time."""
