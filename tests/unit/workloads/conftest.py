"""A simulated server on the wall clock (specexp.sim's HTTP server), for the workloads' client paths."""

from __future__ import annotations

import sys
from collections.abc import Iterator

import httpx
import pytest

from specexp.runtimes.process import ServerProcess, free_port


@pytest.fixture(scope="module")
def sim_url(tmp_path_factory: pytest.TempPathFactory) -> Iterator[str]:
    port = free_port()
    argv = [sys.executable, "-m", "specexp.sim", "hardware=h200", "model=qwen3-8b", "quantization=bf16",
            "drafter=mtp", "k=3", "--port", str(port), "--speed", "4"]
    server = ServerProcess(argv, tmp_path_factory.mktemp("sim_serve") / "server.log")
    url = f"http://127.0.0.1:{port}"

    def ready() -> bool:
        try:
            return httpx.get(f"{url}/health", timeout=1.0).status_code == 200
        except httpx.HTTPError:
            return False

    try:
        server.wait_ready(ready, timeout_s=60)
        yield url
    finally:
        server.stop()
