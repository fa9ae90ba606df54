"""The renderer made ready while a sweep runs (specexp.run.report_ahead) ends with the sweep: a sweep
killed outright (SIGKILL, an out-of-memory kill) leaves no process behind."""

from __future__ import annotations

import os
import signal
import subprocess
import sys
import time
from pathlib import Path

import pytest

REPO = Path(__file__).resolve().parents[2]
SWEEP = """
import os, signal, sys
from specexp.run.report_ahead import ReportAhead
ahead = ReportAhead()
print(ahead._proc.pid if ahead._proc is not None else -1, flush=True)
sys.stdin.readline()  # the test has seen the renderer start
os.kill(os.getpid(), signal.SIGKILL)
"""


def _alive(pid: int) -> bool:
    try:
        os.kill(pid, 0)
    except ProcessLookupError:
        return False
    try:  # a zombie (exited, not yet reaped by init) is gone for what matters here
        return Path(f"/proc/{pid}/stat").read_text().split()[2] != "Z"
    except OSError:
        return False


@pytest.mark.skipif(sys.platform != "linux", reason="fork and /proc: Linux")
def test_a_killed_sweep_leaves_no_renderer_behind() -> None:
    with subprocess.Popen(
        [sys.executable, "-c", SWEEP],
        cwd=REPO,
        stdin=subprocess.PIPE,
        stdout=subprocess.PIPE,
        text=True,
    ) as sweep:
        assert sweep.stdout is not None and sweep.stdin is not None
        pid = int(sweep.stdout.readline())
        if pid < 0:
            sweep.kill()
            pytest.skip("one core: no renderer is made ready")
        assert _alive(pid)
        started = time.monotonic()
        sweep.stdin.write("\n")
        sweep.stdin.flush()
        assert sweep.wait(timeout=60) == -signal.SIGKILL
        killed_after = time.monotonic() - started
    # the renderer notices at once (its pipe closes); it may still be importing the report
    # libraries, so it is given what a start of specexp takes here, measured, many times over
    deadline = time.monotonic() + max(60.0, 50 * killed_after)
    while _alive(pid) and time.monotonic() < deadline:
        time.sleep(0.05)
    try:
        assert not _alive(pid), "the renderer outlived the sweep that made it"
    finally:
        if _alive(pid):
            os.kill(pid, signal.SIGKILL)
