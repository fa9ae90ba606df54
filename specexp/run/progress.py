"""Progress of a sweep: jobs done / total, the current configuration, elapsed and estimated time.

A live rich bar on a terminal; one plain line per job otherwise, so CI logs carry no
carriage-return spam. A job's status may quote its server (an error body): it is shown as plain
text, its control characters dropped, so a server can neither forge a line nor retitle the
terminal, and rich reads no markup in it.
"""

from __future__ import annotations

import sys
import time
from typing import TYPE_CHECKING, Any

from specexp.record.escape import printable

if TYPE_CHECKING:
    from rich.progress import Progress


class SweepProgress:
    def __init__(self, total: int, stream: Any = None) -> None:
        self.total = total
        self.done = 0
        self.started = time.monotonic()
        self.stream = stream or sys.stdout
        self.live = bool(getattr(self.stream, "isatty", lambda: False)())
        self._progress: Progress | None = None
        self._task: Any = None
        if self.live and total:
            from rich.console import Console  # a terminal's bar only: CI logs need none of rich
            from rich.progress import (
                BarColumn,
                MofNCompleteColumn,
                Progress,
                TextColumn,
                TimeElapsedColumn,
                TimeRemainingColumn,
            )

            self._progress = Progress(
                TextColumn("[bold]sweep"),
                BarColumn(),
                MofNCompleteColumn(),
                TextColumn("{task.description}", markup=False),  # a server's words, as said
                TimeElapsedColumn(),
                TextColumn("eta"),
                TimeRemainingColumn(),
                console=Console(file=self.stream),
                transient=False,
            )
            self._progress.start()
            self._task = self._progress.add_task("", total=total)

    def started_job(self, description: str) -> None:
        if self._progress is not None:
            self._progress.update(self._task, description=printable(description))

    def finished_job(self, description: str, status: str) -> None:
        self.done += 1
        description, status = printable(description), printable(status)
        if self._progress is not None:
            self._progress.update(self._task, advance=1, description=f"{description}: {status}")
            return
        elapsed = time.monotonic() - self.started
        eta = elapsed / self.done * (self.total - self.done) if self.done else 0.0
        print(
            f"[{self.done}/{self.total}] {description}: {status} (elapsed {elapsed:.1f} s, eta {eta:.1f} s)",
            file=self.stream,
            flush=True,
        )

    def close(self) -> None:
        if self._progress is not None:
            self._progress.stop()
            self._progress = None


_current: SweepProgress | None = None


def start(total: int) -> SweepProgress:
    global _current
    _current = SweepProgress(total)
    return _current


def forward_to(target: Any) -> None:
    """In a worker process of the sweep: send its jobs' progress to `target` (specexp.run.local)."""
    global _current
    _current = target


def current() -> SweepProgress | None:
    """The sweep's progress, when the job runs in the sweep's own process (basic launcher)."""
    return _current


def stop() -> None:
    global _current
    if _current is not None:
        _current.close()
    _current = None
