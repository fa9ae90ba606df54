"""runtime=ollama on recorded-style Ollama v0.33 output (tests/fixtures/engines/ollama, numbers from
its README): `ollama serve` with its environment, the OpenAI-compatible stream, no counters."""

from __future__ import annotations

import json
from collections.abc import Callable
from pathlib import Path
from typing import Any

import httpx
import pytest

from specexp.measure.events import Counters, Request, RuntimeFailure
from specexp.measure.metrics import acceptance_rate, tokens_per_pass
from specexp.runtimes.base import runtime_for
from specexp.runtimes.client import to_trace
from tests.support.engines import (
    T0,
    assert_conf_documents_every_runtime_key,
    fixture,
    mock,
    ndjson_raw,
)


@pytest.fixture
def ollama(make_spec: Callable[..., Any], tmp_path: Path) -> Callable[..., Any]:
    return lambda *overrides: runtime_for("ollama")(
        make_spec("runtime=ollama", *overrides), tmp_path
    )


def test_ollama_serve_takes_its_address_from_the_environment(ollama: Callable[..., Any]) -> None:
    runtime = ollama("workload.concurrency=[1,8]")
    assert runtime.build_argv(8123) == ["ollama", "serve"]
    assert runtime.server_env(8123) == {"OLLAMA_HOST": "127.0.0.1:8123", "OLLAMA_NUM_PARALLEL": "8"}
    assert (
        ollama("runtime.executable=/usr/local/bin/ollama").build_argv(1)[0]
        == "/usr/local/bin/ollama"
    )


@pytest.mark.parametrize("drafter", ["none", "mtp", "dflash", "draft_model"])
def test_drafters_ollama_wires_up_are_accepted(ollama: Callable[..., Any], drafter: str) -> None:
    assert ollama(f"drafter={drafter}").build_argv(8123) == ["ollama", "serve"]


@pytest.mark.parametrize("drafter", ["dspark", "eagle3", "ngram"])
def test_other_drafters_are_refused(ollama: Callable[..., Any], drafter: str) -> None:
    with pytest.raises(RuntimeFailure) as err:
        ollama(f"drafter={drafter}").build_argv(8123)
    assert (err.value.status, err.value.kind) == ("refused", "unsupported_drafter")


def test_requests_go_to_the_native_endpoints(ollama: Callable[..., Any]) -> None:
    runtime = ollama()
    assert runtime.chat_path == "/api/chat" and runtime.completion_path == "/api/generate"


def test_a_native_stream_becomes_a_trace_with_the_engines_own_timings(
    ollama: Callable[..., Any],
) -> None:
    trace = to_trace("r", ndjson_raw("ollama", "generate_stream.ndjson"), ollama().stream_details)
    assert trace.error is None
    assert trace.first_token_at == T0  # line 0: " The"
    assert (trace.completion_tokens, trace.prompt_tokens) == (
        22,
        23,
    )  # eval_count counts <|im_end|>
    assert trace.token_source == "server" and trace.cached_prompt_tokens is None
    assert trace.finish_reason == "stop" and len(trace.events) == 21
    assert trace.text is not None and trace.text.startswith("The sky looks blue")
    timings = trace.engine_timings or {}
    assert {
        k: timings[k]
        for k in (
            "eval_count",
            "eval_duration",
            "prompt_eval_count",
            "prompt_eval_duration",
            "load_duration",
            "total_duration",
        )
    } == {
        "eval_count": 22,
        "eval_duration": 168421000,
        "prompt_eval_count": 23,
        "prompt_eval_duration": 41207000,
        "load_duration": 31874613,
        "total_duration": 250612043,
    }
    assert timings["eval_tps"] == pytest.approx(
        130.625, abs=1e-3
    )  # the figure `ollama run --verbose` prints


def test_a_stream_without_a_final_object_keeps_no_timings(ollama: Callable[..., Any]) -> None:
    raw = ndjson_raw("ollama", "generate_stream.ndjson")
    raw.chunks.pop()
    assert ollama().stream_details(raw) == {}


def test_request_body_is_what_ollamas_native_api_reads(ollama: Callable[..., Any]) -> None:
    runtime = ollama("runtime.model_path=qwen3.8:27b", "drafter=mtp", "k=3")
    body = runtime.body(
        Request(request_id="r", prompt="Name three prime numbers.", prompt_tokens=6, max_tokens=16)
    )
    assert body["model"] == "qwen3.8:27b" and body["stream"] is True
    assert body["messages"] == [{"role": "user", "content": "Name three prime numbers."}]
    assert body["options"] == {"num_predict": 16, "temperature": 0.0, "draft_num_predict": 3}
    assert body["think"] is False  # Request's default: thinking off
    plain = ollama().body(
        Request(
            request_id="r", prompt="x", prompt_tokens=1, max_tokens=8, chat=False, thinking=True
        )
    )
    assert plain["prompt"] == "x" and plain["raw"] is True and plain["think"] is True
    assert "draft_num_predict" not in plain["options"]


def test_there_are_no_counters_and_no_metrics_request(
    ollama: Callable[..., Any], monkeypatch: pytest.MonkeyPatch
) -> None:
    runtime = ollama("drafter=mtp")
    monkeypatch.setattr(runtime, "sync_client", lambda: pytest.fail("no HTTP request expected"))
    assert runtime.metrics_path is None
    counters = runtime.counters()
    assert counters == Counters()
    delta = counters.delta(counters)
    assert acceptance_rate(delta) is None and tokens_per_pass(delta) is None
    assert runtime.tokenize("x") is None and runtime.reset_prefix_cache() is False


def test_engine_info_reads_the_version_and_the_models_draft_setting(
    ollama: Callable[..., Any], monkeypatch: pytest.MonkeyPatch
) -> None:
    runtime = ollama(
        "drafter=mtp", "k=3", "runtime.url=http://ollama.test", "runtime.model_path=qwen3.8:27b"
    )
    seen: list[httpx.Request] = []
    show = {  # illustrative /api/show body (not a fixture): only the keys engine_info reads
        "parameters": 'draft_num_predict              3\nstop                           "<|im_end|>"',
        "details": {
            "format": "gguf",
            "family": "qwen35",
            "parameter_size": "27B",
            "quantization_level": "Q8_0",
        },
    }
    mock(
        runtime,
        monkeypatch,
        {
            "GET /api/version": (200, json.loads(fixture("ollama", "version.json"))),
            "POST /api/show": (200, show),
        },
        seen,
    )
    info = runtime.start()
    assert info.runtime == "ollama" and info.version == "0.33.0" and info.kv_cache_tokens is None
    assert info.details["draft_num_predict"] == "3" and info.details["k_requested"] == 3
    assert info.details["quantization_level"] == "Q8_0"
    assert json.loads(seen[-1].content) == {"model": "qwen3.8:27b"}


def test_engine_info_without_show(
    ollama: Callable[..., Any], monkeypatch: pytest.MonkeyPatch
) -> None:
    runtime = ollama("runtime.url=http://ollama.test")
    mock(runtime, monkeypatch, {"GET /api/version": (200, {"version": "0.33.0"})})
    info = runtime.start()
    assert info.version == "0.33.0" and "draft_num_predict" not in info.details


def test_conf_file_documents_every_runtime_key() -> None:
    assert_conf_documents_every_runtime_key("ollama")
