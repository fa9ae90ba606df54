"""The start of a window spread over several client processes: one instant for all of them.

Each client process warms its connections, then meets the others (and the parent) at a barrier;
the parent stamps one start on the host's monotonic clock (time.perf_counter is CLOCK_MONOTONIC, one
clock for every process of the host) and every process sends its requests at their offsets from it.
"""

from __future__ import annotations

import time
from typing import Any

BARRIER_S = 120.0
"""Longest the client processes of one window wait for each other to be ready."""


class SharedStart:
    """The one instant a window spread over processes starts at: every process's requests are due
    at offsets from it, so a process that wakes late from the barrier sends late (and records the
    lag) instead of shifting its part of the schedule."""

    def __init__(self, ctx: Any, processes: int) -> None:
        self.barrier = ctx.Barrier(processes + 1)  # the client processes and the parent
        self.at = ctx.Value("d", 0.0)
        self.set = ctx.Event()

    def release(self) -> None:
        """In the parent: once every process is ready, start now."""
        self.barrier.wait(BARRIER_S)
        self.at.value = (
            time.perf_counter()
        )  # CLOCK_MONOTONIC: one clock for every process of the host
        self.set.set()

    def wait(self) -> float:
        """In a client process: wait for the others, then the start."""
        self.barrier.wait(BARRIER_S)
        if not self.set.wait(BARRIER_S):
            raise TimeoutError("the window's start was never given")
        return float(self.at.value)
