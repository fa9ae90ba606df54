"""runtime.env: the environment a started server gets besides specexp's own, which wins where both
set a variable, so that no setting moves a server off 127.0.0.1."""

from __future__ import annotations

from collections.abc import Callable
from pathlib import Path
from typing import Any

import pytest

from specexp.runtimes.base import runtime_for


def test_runtime_env_cannot_move_a_server_off_its_address(
    make_spec: Callable[..., Any], tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    from specexp.measure.events import RuntimeFailure

    script = tmp_path / "ollama"
    script.write_text('#!/bin/sh\necho "HOST=$OLLAMA_HOST EXTRA=$OLLAMA_DEBUG"\nexit 1\n')
    script.chmod(0o755)
    monkeypatch.setenv("SPECEXP_CACHE", str(tmp_path / "cache"))
    spec = make_spec(
        "runtime=ollama",
        f"runtime.executable={script}",
        "runtime.env={OLLAMA_HOST: 0.0.0.0:80, OLLAMA_DEBUG: 1}",
        "runtime.start_timeout_s=30",
        "model=tiny-hf",
    )
    runtime = runtime_for("ollama")(spec, tmp_path)
    with pytest.raises(RuntimeFailure):
        try:
            runtime.start()
        finally:
            runtime.stop()
    log = (tmp_path / "server.log").read_text()
    assert "HOST=127.0.0.1:" in log and "EXTRA=1" in log
