"""Helpers for the engine adapter tests: recorded fixtures, raw streams, a mocked sync client."""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any

import httpx
import pytest

from specexp.runtimes.http.client import RawStream

FIXTURES = Path(__file__).resolve().parents[1] / "fixtures" / "engines"
T0, DT = 100.0, 0.01
"""Chunk i of a fixture stream arrives at T0 + i * DT; requests are sent at T0 - 1."""


def fixture(engine: str, name: str) -> str:
    """A recorded response of `engine` (tests/fixtures/engines/<engine>/<name>)."""
    return (FIXTURES / engine / name).read_text(encoding="utf-8")


def sse_raw(engine: str, name: str) -> RawStream:
    """A RawStream as specexp.runtimes.http.client.stream_request builds it from the fixture's bytes."""
    raw = RawStream(sent_at=T0 - 1, status=200, done=True)
    for line in fixture(engine, name).splitlines():
        if line.startswith("data:") and line[5:].strip() != "[DONE]":
            raw.chunks.append((T0 + DT * len(raw.chunks), json.loads(line[5:].strip())))
    return raw


def mock(
    runtime: Any,
    monkeypatch: pytest.MonkeyPatch,
    routes: dict[str, Any],
    seen: list[httpx.Request] | None = None,
) -> None:
    """Serve `routes` ("METHOD /path" -> (status, body)) through the runtime's sync client."""

    def handler(request: httpx.Request) -> httpx.Response:
        if seen is not None:
            seen.append(request)
        status, body = routes.get(
            f"{request.method} {request.url.path}", (404, {"detail": "Not Found"})
        )
        if isinstance(body, str):
            return httpx.Response(status, text=body)
        return httpx.Response(status, json=body)

    transport = httpx.MockTransport(handler)
    base = runtime.base_url if runtime.spec.runtime.url else "http://engine.test"
    monkeypatch.setattr(
        runtime,
        "sync_client",
        lambda: httpx.Client(transport=transport, base_url=base, headers=runtime.headers()),
    )


def assert_conf_documents_every_runtime_key(runtime: str) -> None:
    """conf/runtime/<runtime>.yaml sets every key of that runtime's settings, each line with a
    comment, and validates."""
    from omegaconf import OmegaConf

    from specexp.spec.runtime import RUNTIMES

    settings = RUNTIMES[runtime]

    path = Path(__file__).resolve().parents[2] / "conf" / "runtime" / f"{runtime}.yaml"
    lines = [
        line for line in path.read_text(encoding="utf-8").splitlines() if line and line[0].isalpha()
    ]
    keys = [line.split(":", 1)[0] for line in lines]
    assert sorted(keys) == sorted(settings.model_fields)
    assert all("#" in line for line in lines), [line for line in lines if "#" not in line]
    assert settings.model_validate(OmegaConf.to_container(OmegaConf.load(path))).name == runtime


def ndjson_raw(engine: str, name: str) -> RawStream:
    """A RawStream as stream_request builds it from an NDJSON fixture (Ollama's native API)."""
    raw = RawStream(sent_at=T0 - 1, status=200, done=True)
    for line in fixture(engine, name).splitlines():
        if line.startswith("{"):
            raw.chunks.append((T0 + DT * len(raw.chunks), json.loads(line)))
    return raw


def counter_window(
    runtime: Any, engine: str, before: str = "metrics_before.txt", after: str = "metrics_after.txt"
) -> Any:
    """The runtime's counters over a recorded window: map(after) - map(before) of `engine`'s fixtures."""
    from specexp.runtimes.http import promtext

    first = runtime.map_counters(promtext.parse(fixture(engine, before)))
    return runtime.map_counters(promtext.parse(fixture(engine, after))).delta(first)
