"""Progress: a line per job with done / total, elapsed and remaining time when not on a terminal."""

from __future__ import annotations

import io
import re

from specexp.run.progress import SweepProgress


def test_without_a_terminal_each_job_is_one_plain_line() -> None:
    out = io.StringIO()
    progress = SweepProgress(total=3, stream=out)
    for i in range(3):
        progress.started_job(f"drafter=mtp k={i}")
        progress.finished_job(f"drafter=mtp k={i}", "ok")
    progress.close()
    text = out.getvalue()
    assert "\r" not in text and "\x1b[" not in text  # no carriage-return or cursor spam in CI logs
    lines = text.splitlines()
    assert len(lines) == 3
    assert re.fullmatch(
        r"\[1/3\] drafter=mtp k=0: ok \(elapsed \d+\.\d s, eta \d+\.\d s\)", lines[0]
    )
    assert lines[-1].startswith("[3/3]") and lines[-1].endswith("eta 0.0 s)")


def test_on_a_terminal_a_live_bar_is_used() -> None:
    class Tty(io.StringIO):
        def isatty(self) -> bool:
            return True

    out = Tty()
    progress = SweepProgress(total=2, stream=out)
    progress.started_job("drafter=none")
    progress.finished_job("drafter=none", "ok")
    progress.close()
    assert progress.live and "1/2" in out.getvalue()
