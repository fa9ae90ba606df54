"""Runtimes: the life of a server (start, ready, info, windows of requests, counters, stop)."""

from specexp.runtimes.base import RUNTIMES, Runtime, runtime_for
from specexp.measure.events import RuntimeFailure

__all__ = ["RUNTIMES", "Runtime", "RuntimeFailure", "runtime_for"]
