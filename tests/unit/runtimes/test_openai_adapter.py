"""runtime=openai: an already running OpenAI-compatible endpoint reached at runtime.url, served model
from /v1/models, an API key from the environment that is sent but never recorded."""

from __future__ import annotations

import json
from collections.abc import Callable
from pathlib import Path
from typing import Any

import httpx
import pytest

from specexp.measure.events import Counters, Request, RuntimeFailure
from specexp.runtimes.base import runtime_for
from specexp.runtimes.http.client import RawStream, to_trace
from tests.support.engines import assert_conf_documents_every_runtime_key, mock

ENGINES = Path(__file__).resolve().parents[2] / "fixtures" / "engines"
MODELS = json.loads((ENGINES / "vllm" / "models.json").read_text(encoding="utf-8"))
TWO_MODELS = {
    "object": "list",
    "data": [{"id": "first-model", "object": "model"}, {"id": "second-model", "object": "model"}],
}


@pytest.fixture
def openai(make_spec: Callable[..., Any], tmp_path: Path) -> Callable[..., Any]:
    return lambda *overrides: runtime_for("openai")(
        make_spec("runtime=openai", *overrides), tmp_path
    )


def test_nothing_is_started_without_a_url(openai: Callable[..., Any]) -> None:
    runtime = openai()
    assert runtime.build_argv(8123) is None and runtime.server_argv() is None
    with pytest.raises(RuntimeFailure) as err:
        runtime.start()
    assert (err.value.status, err.value.kind) == ("refused", "not_startable")
    assert "runtime.url" in err.value.message


def test_the_first_listed_model_is_served(
    openai: Callable[..., Any], monkeypatch: pytest.MonkeyPatch
) -> None:
    runtime = openai("runtime.url=http://endpoint.test:8000")
    seen: list[httpx.Request] = []
    mock(runtime, monkeypatch, {"GET /v1/models": (200, TWO_MODELS)}, seen)
    info = runtime.start()
    assert runtime.served_model() == "first-model"
    assert info.details["models"] == ["first-model", "second-model"]
    assert info.version is None and info.kv_cache_tokens is None
    # readiness, the model list, and where engines say what they are; nothing engine-specific
    assert {r.url.path for r in seen} == {
        "/v1/models",
        "/version",
        "/server_info",
        "/get_server_info",
        "/props",
    }


def test_served_model_name_wins(
    openai: Callable[..., Any], monkeypatch: pytest.MonkeyPatch
) -> None:
    runtime = openai(
        "runtime.url=http://endpoint.test",
        "runtime.served_model_name=second-model",
        "runtime.version=0.33.0",
    )
    mock(runtime, monkeypatch, {"GET /v1/models": (200, TWO_MODELS)})
    info = runtime.start()
    assert runtime.served_model() == "second-model" and info.version == "0.33.0"
    body = runtime.body(Request(request_id="r", prompt="hi", prompt_tokens=1, max_tokens=4))
    assert body["model"] == "second-model" and body["stream_options"] == {"include_usage": True}


def test_a_url_ending_in_v1_is_accepted(
    openai: Callable[..., Any], monkeypatch: pytest.MonkeyPatch
) -> None:
    runtime = openai("runtime.url=http://endpoint.test:8000/v1/")
    assert runtime.base_url == "http://endpoint.test:8000"
    seen: list[httpx.Request] = []
    mock(runtime, monkeypatch, {"GET /v1/models": (200, MODELS)}, seen)
    runtime.start()
    assert str(seen[0].url) == "http://endpoint.test:8000/v1/models"
    assert runtime.served_model() == "Qwen/Qwen3.8-27B-FP8"


def test_an_endpoint_without_models_is_refused(
    openai: Callable[..., Any], monkeypatch: pytest.MonkeyPatch
) -> None:
    runtime = openai("runtime.url=http://endpoint.test")
    mock(runtime, monkeypatch, {"GET /v1/models": (200, {"object": "list", "data": []})})
    with pytest.raises(RuntimeFailure) as err:
        runtime.start()
    assert (err.value.status, err.value.kind) == ("refused", "no_model")


def test_an_unreachable_endpoint_is_refused(
    openai: Callable[..., Any], monkeypatch: pytest.MonkeyPatch
) -> None:
    runtime = openai("runtime.url=http://endpoint.test")
    mock(runtime, monkeypatch, {})
    with pytest.raises(RuntimeFailure) as err:
        runtime.start()
    assert err.value.kind == "unreachable"


def test_the_api_key_is_sent_and_never_recorded(
    openai: Callable[..., Any], monkeypatch: pytest.MonkeyPatch
) -> None:
    secret = "sk-test-4f2a9c1e7b3f48a6"
    monkeypatch.setenv("SPECEXP_TEST_KEY", secret)
    runtime = openai("runtime.url=http://endpoint.test", "runtime.api_key_env=SPECEXP_TEST_KEY")
    seen: list[httpx.Request] = []
    mock(runtime, monkeypatch, {"GET /v1/models": (200, TWO_MODELS)}, seen)
    info = runtime.start()
    assert seen and all(r.headers["authorization"] == f"Bearer {secret}" for r in seen)
    recorded = json.dumps({"details": info.details, "spec": runtime.spec.model_dump(mode="json")})
    assert secret not in recorded and "SPECEXP_TEST_KEY" in recorded


def test_no_counters_and_no_engine_endpoints(
    openai: Callable[..., Any], monkeypatch: pytest.MonkeyPatch
) -> None:
    runtime = openai("runtime.url=http://endpoint.test", "drafter=mtp")
    monkeypatch.setattr(runtime, "sync_client", lambda: pytest.fail("no HTTP request expected"))
    assert runtime.metrics_path is None and runtime.counters() == Counters()
    assert runtime.tokenize("x") is None and runtime.detokenize([1]) is None
    assert runtime.reset_prefix_cache() is False


def test_any_openai_stream_becomes_a_trace_from_its_usage(openai: Callable[..., Any]) -> None:
    raw = RawStream(sent_at=9.0, status=200)
    for line in (ENGINES / "vllm" / "stream_chat.sse").read_text(encoding="utf-8").splitlines():
        if line.startswith("data:") and line[5:].strip() != "[DONE]":
            raw.chunks.append((10.0 + len(raw.chunks), json.loads(line[5:].strip())))
    trace = to_trace("r", raw, openai("runtime.url=http://endpoint.test").stream_details)
    assert trace.first_token_at == 11.0
    assert (trace.completion_tokens, trace.prompt_tokens, trace.cached_prompt_tokens) == (
        35,
        1062,
        1056,
    )
    assert trace.token_source == "server" and trace.engine_timings is None


def test_conf_file_documents_every_runtime_key() -> None:
    assert_conf_documents_every_runtime_key("openai")


@pytest.mark.parametrize(
    ("engine", "routes", "version", "max_model_len"),
    [
        (
            "vllm",
            {"GET /v1/models": "vllm/models.json", "GET /version": "vllm/version.json"},
            "0.33.0",
            131072,
        ),
        (
            "sglang",
            {"GET /v1/models": "vllm/models.json", "GET /server_info": "sglang/server_info.json"},
            "sglang ",
            131072,
        ),
        (
            "llamacpp",
            {"GET /v1/models": "vllm/models.json", "GET /props": "llamacpp/props.json"},
            "llama.cpp ",
            None,
        ),
    ],
)
def test_what_the_endpoint_says_about_itself_is_recorded(
    openai: Callable[..., Any],
    monkeypatch: pytest.MonkeyPatch,
    engine: str,
    routes: dict[str, str],
    version: str,
    max_model_len: int | None,
) -> None:
    from specexp.measure.conditions import run_conditions

    runtime = openai("runtime.url=http://endpoint.test")
    mock(
        runtime,
        monkeypatch,
        {
            route: (200, json.loads((ENGINES / path).read_text(encoding="utf-8")))
            for route, path in routes.items()
        },
        [],
    )
    info = runtime.start()
    assert info.version is not None and info.version.startswith(version)
    props = json.loads((ENGINES / "llamacpp" / "props.json").read_text(encoding="utf-8"))
    expected = max_model_len or props["default_generation_settings"]["n_ctx"]
    c = run_conditions(
        runtime.spec, "measured", knows_setup=False, reported=info.details.get("conditions")
    )
    assert c.max_model_len == expected and c.hardware is None and c.quantization is None
