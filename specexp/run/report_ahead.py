"""The report renderer made ready while the jobs run.

Importing the report libraries (Altair, jinja2, markdown-it) and starting vl-convert's JavaScript
engine take about a second, and nothing of them depends on the results. `ReportAhead` does both in
a forked process on another core while the sweep runs, and that process writes the report from the
records on disk once the last job is over. Wherever that cannot be (no `fork`, one core, the report
extra missing, any error in it) `render` answers None and the caller renders in its own process, as
it would without it: the report is the same either way.
"""

from __future__ import annotations

import gc
import multiprocessing as mp
import os
import signal
from collections.abc import Callable
from pathlib import Path
from typing import Any

WARM_SPEC = {
    "$schema": "https://vega.github.io/schema/vega-lite/v6.json",
    "data": {"values": [{"x": 1}]},
    "mark": "point",
    "encoding": {"x": {"field": "x", "type": "quantitative"}},
}
"""A one-point chart: rendering it starts vl-convert's engine."""


class ReportAhead:
    def __init__(self) -> None:
        self._conn: Any = None
        self._proc: Any = None
        self._asked = False
        if "fork" not in mp.get_all_start_methods() or (os.cpu_count() or 1) < 2:
            return
        ctx = mp.get_context("fork")  # the child has every module the parent imported, at no cost
        parent, child = ctx.Pipe()
        self._proc = ctx.Process(
            target=_serve, args=(child, parent), daemon=True, name="specexp-report"
        )
        self._proc.start()
        child.close()
        self._conn = parent

    def start(self, root: Path) -> None:
        """Have the ready process write the report of the records under `root`, now: the caller
        goes on with its own work meanwhile, and `render` answers the files written."""
        if self._conn is None:
            return
        try:
            self._conn.send(str(root))
            self._asked = True
        except OSError:
            self.close()

    def render(self, root: Path) -> list[Path] | None:
        """The report of the records under `root`, written by the ready process (asked by `start`
        or now): its files; None when that process could not write it."""
        if self._conn is None:
            return None
        try:
            if not self._asked:
                self._conn.send(str(root))
            reply = self._conn.recv()
        except (EOFError, OSError):
            reply = None
        self.close()
        return [Path(p) for p in reply] if isinstance(reply, list) else None

    def close(self) -> None:
        if self._conn is not None:
            self._conn.close()
            self._conn = None
        if self._proc is not None:
            self._proc.join(5)
            if self._proc.is_alive():
                self._proc.kill()
            self._proc = None


_EARLY: ReportAhead | None = None


def start_early() -> None:
    """Make the renderer ready now, before Hydra composes the command line: a small sweep is over
    before the renderer's imports and engine start would be, had they begun with the sweep."""
    global _EARLY
    if _EARLY is None:
        _EARLY = ReportAhead()


def ready() -> ReportAhead:
    """The renderer started early (`start_early`), else one started now."""
    global _EARLY
    ahead, _EARLY = (_EARLY if _EARLY is not None else ReportAhead()), None
    return ahead


def _serve(conn: Any, parents_end: Any) -> None:
    parents_end.close()  # so that the sweep's end of the pipe closing (it exits, or is killed) ends this
    signal.signal(
        signal.SIGINT, signal.SIG_IGN
    )  # a Ctrl-C is the sweep's: its report is still wanted
    try:
        import vl_convert

        from specexp.record import find_records
        from specexp.report.write import write_report as writer

        vl_convert.vegalite_to_svg(WARM_SPEC)
        write_report: Callable[..., list[Path]] | None = writer
    except Exception:
        write_report = None
    try:
        root = conn.recv()
    except EOFError:
        return
    if write_report is None:
        conn.send(None)
        return
    try:
        found = find_records([Path(root)])
        gc.freeze()  # the records stay for the whole report: the cycle collector need not walk them
        conn.send(
            [
                str(p)
                for p in write_report(
                    found, Path(root) / "measurements.md", Path(root) / "report.html"
                )
            ]
        )
    except Exception:
        conn.send(None)
