"""Runtimes: the life of a server (start, ready, info, windows of requests, counters, stop)."""

from specexp.measure.events import RuntimeFailure
from specexp.runtimes.base import RUNTIMES, Runtime, runtime_for

__all__ = ["RUNTIMES", "Runtime", "RuntimeFailure", "runtime_for"]
