"""The simulator's real-time OpenAI server (`python -m specexp.sim`), started for a test module."""

from __future__ import annotations

import sys
from collections.abc import Iterator
from contextlib import contextmanager
from pathlib import Path

import httpx

from specexp.runtimes.http.process import ServerProcess, free_port


@contextmanager
def sim_server(
    log_dir: Path, *overrides: str, speed: float = 2.0, timeout_s: float = 60.0
) -> Iterator[str]:
    """Serve `overrides` on a free port of 127.0.0.1 at `speed` times real time; yields its URL."""
    port = free_port()
    argv = [
        sys.executable,
        "-m",
        "specexp.sim",
        *overrides,
        "--port",
        str(port),
        "--speed",
        str(speed),
    ]
    server = ServerProcess(argv, log_dir / "server.log")
    url = f"http://127.0.0.1:{port}"

    def ready() -> bool:
        try:
            return httpx.get(f"{url}/health", timeout=1.0).status_code == 200
        except httpx.HTTPError:
            return False

    try:
        server.wait_ready(ready, timeout_s=timeout_s)
        yield url
    finally:
        server.stop()
