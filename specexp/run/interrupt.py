"""Ctrl-C, seen by the sweep however deep in an event loop it lands.

asyncio's runner turns a SIGINT into the cancellation of its main task, and a cancellation that a
library absorbs is an interrupt lost: the window finishes, the job is recorded as complete and the
sweep goes on. specexp installs its own handler instead: it counts the interrupt and raises
KeyboardInterrupt where the main thread is, and a job asks `check()` after every window, so an
interrupt ends the job at the latest when its current window does.
"""

from __future__ import annotations

import signal
import threading
from collections.abc import Iterator
from contextlib import contextmanager
from types import FrameType

_seen = 0


def _on_sigint(signum: int, frame: FrameType | None) -> None:
    global _seen
    _seen += 1
    raise KeyboardInterrupt


@contextmanager
def handled() -> Iterator[None]:
    """Within: SIGINT is counted, then raised as KeyboardInterrupt (asyncio leaves a handler that is
    not Python's default alone)."""
    global _seen
    if threading.current_thread() is not threading.main_thread():
        yield
        return
    previous = signal.signal(signal.SIGINT, _on_sigint)
    _seen = 0
    try:
        yield
    finally:
        signal.signal(signal.SIGINT, previous)


def check() -> None:
    """Raise KeyboardInterrupt if a Ctrl-C came since `handled()` began, even one absorbed."""
    if _seen:
        raise KeyboardInterrupt
