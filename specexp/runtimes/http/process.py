"""The life of a server process specexp starts: argv list, log file, readiness, stop.

Every process started here is registered so that it is stopped at exit, on Ctrl-C and on
errors. Servers bind to 127.0.0.1.
"""

from __future__ import annotations

import atexit
import os
import random
import signal
import socket
import subprocess
import time
from collections.abc import Callable, Sequence
from pathlib import Path

from specexp.measure.events import RuntimeFailure

_RUNNING: set[subprocess.Popen[bytes]] = set()
LOG_TAIL_LINES = 40


HIGHEST_PORT = 65535
LOWEST_CHOSEN_PORT = 20000
"""Where a port is chosen when the system's pick lies above an engine's ceiling (below the usual
ephemeral range, above the well-known and registered services most hosts run)."""


def _bindable(port: int) -> int | None:
    with socket.socket(socket.AF_INET, socket.SOCK_STREAM) as s:
        try:
            s.bind(("127.0.0.1", port))
        except OSError:
            return None
        return int(s.getsockname()[1])


def free_port(highest: int = HIGHEST_PORT) -> int:
    """A TCP port on 127.0.0.1, at most `highest`, that nothing listens on right now.

    The system picks one from its ephemeral range; an engine that derives further ports from its
    own (SGLang: port + 10000, docs/engines.md section 2) sets a ceiling, and a pick above it is
    replaced by a free port from LOWEST_CHOSEN_PORT..highest."""
    picked = _bindable(0)
    if picked is not None and picked <= highest:
        return picked
    candidates = list(range(LOWEST_CHOSEN_PORT, highest + 1))
    random.shuffle(candidates)
    for port in candidates[:256]:
        if (found := _bindable(port)) is not None:
            return found
    raise RuntimeFailure(
        "refused", "no_port", f"no free TCP port on 127.0.0.1 at or below {highest}"
    )


def log_tail(path: Path, lines: int = LOG_TAIL_LINES) -> str:
    try:
        text = path.read_text(encoding="utf-8", errors="replace")
    except OSError:
        return ""
    return "\n".join(text.splitlines()[-lines:])


class ServerProcess:
    """A started server: its argv, its log, and a way to stop it."""

    def __init__(
        self, argv: Sequence[str], log_path: Path, env: dict[str, str] | None = None
    ) -> None:
        self.argv = [str(a) for a in argv]
        self.log_path = log_path
        log_path.parent.mkdir(parents=True, exist_ok=True)
        self._log = open(log_path, "ab")
        try:
            self.proc: subprocess.Popen[bytes] = subprocess.Popen(
                self.argv,
                stdout=self._log,
                stderr=subprocess.STDOUT,
                stdin=subprocess.DEVNULL,
                env={**os.environ, **(env or {})},
                start_new_session=True,
            )
        except OSError as err:
            self._log.close()
            raise RuntimeFailure(
                "refused", "start_failed", f"cannot start {self.argv[0]}: {err}"
            ) from None
        _RUNNING.add(self.proc)

    @property
    def alive(self) -> bool:
        return self.proc.poll() is None

    def tail(self) -> str:
        self._log.flush()
        return log_tail(self.log_path)

    def log_size(self) -> int:
        """Bytes the server has written to its log so far (a mark for `log_since`)."""
        try:
            return self.log_path.stat().st_size
        except OSError:
            return 0

    def log_since(self, mark: int) -> str:
        """What the server wrote to its log after `mark` (a `log_size`)."""
        try:
            with self.log_path.open("rb") as f:
                f.seek(mark)
                return f.read().decode("utf-8", errors="replace")
        except OSError:
            return ""

    def wait_ready(
        self, ready: Callable[[], bool], timeout_s: float, poll_s: float = 0.05
    ) -> float:
        """Poll `ready` until it is True; return seconds waited. Raise RuntimeFailure (refused)
        when the process exits first or the timeout passes."""
        start = time.monotonic()
        while True:
            if not self.alive:
                raise RuntimeFailure(
                    "refused",
                    "server_exited",
                    f"{Path(self.argv[0]).name} exited with status {self.proc.returncode} before it was ready",
                    self.tail(),
                )
            if ready():
                return time.monotonic() - start
            if time.monotonic() - start > timeout_s:
                self.stop()
                raise RuntimeFailure(
                    "refused", "start_timeout", f"not ready after {timeout_s:g} s", self.tail()
                )
            time.sleep(poll_s)

    def stop(self, grace_s: float = 10.0) -> None:
        """SIGTERM, then SIGKILL after `grace_s`. Safe to call twice."""
        if self.alive:
            try:
                os.killpg(self.proc.pid, signal.SIGTERM)
                os.killpg(
                    self.proc.pid, signal.SIGCONT
                )  # a stopped (hung) server must wake to exit
                self.proc.wait(grace_s)
            except (ProcessLookupError, subprocess.TimeoutExpired):
                try:
                    os.killpg(self.proc.pid, signal.SIGKILL)
                except ProcessLookupError:
                    pass
                self.proc.wait()
        _RUNNING.discard(self.proc)
        if not self._log.closed:
            self._log.close()


def stop_all() -> None:
    """Stop every server this process started (at exit, on Ctrl-C)."""
    for proc in list(_RUNNING):
        try:
            os.killpg(proc.pid, signal.SIGTERM)
            proc.wait(10)
        except (ProcessLookupError, subprocess.TimeoutExpired, OSError):
            try:
                os.killpg(proc.pid, signal.SIGKILL)
            except (ProcessLookupError, OSError):
                pass
        _RUNNING.discard(proc)


atexit.register(stop_all)
