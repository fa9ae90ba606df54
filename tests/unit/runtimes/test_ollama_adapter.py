"""runtime=ollama on recorded-style Ollama v0.33 output (tests/fixtures/engines/ollama, numbers from
its README): `ollama serve` with its environment, the OpenAI-compatible stream, no counters."""

from __future__ import annotations

import json
from collections.abc import Callable
from pathlib import Path
from typing import Any

import httpx
import pytest

from specexp.events import Counters, Request
from specexp.metrics import acceptance_rate, tokens_per_pass
from specexp.runtimes.base import RuntimeFailure, runtime_for
from specexp.runtimes.client import to_trace
from tests.support.engines import T0, assert_conf_documents_every_runtime_key, fixture, mock, sse_raw


@pytest.fixture
def ollama(make_spec: Callable[..., Any], tmp_path: Path) -> Callable[..., Any]:
    return lambda *overrides: runtime_for("ollama")(make_spec("runtime=ollama", *overrides), tmp_path)



def test_ollama_serve_takes_its_address_from_the_environment(ollama: Callable[..., Any]) -> None:
    runtime = ollama("workload.concurrency=[1,8]")
    assert runtime.build_argv(8123) == ["ollama", "serve"]
    assert runtime.server_env(8123) == {"OLLAMA_HOST": "127.0.0.1:8123", "OLLAMA_NUM_PARALLEL": "8"}
    assert ollama("runtime.executable=/usr/local/bin/ollama").build_argv(1)[0] == "/usr/local/bin/ollama"


@pytest.mark.parametrize("drafter", ["none", "mtp", "dflash", "draft_model"])
def test_drafters_ollama_wires_up_are_accepted(ollama: Callable[..., Any], drafter: str) -> None:
    assert ollama(f"drafter={drafter}").build_argv(8123) == ["ollama", "serve"]


@pytest.mark.parametrize("drafter", ["dspark", "eagle3", "ngram"])
def test_other_drafters_are_refused(ollama: Callable[..., Any], drafter: str) -> None:
    with pytest.raises(RuntimeFailure) as err:
        ollama(f"drafter={drafter}").build_argv(8123)
    assert (err.value.status, err.value.kind) == ("refused", "unsupported_drafter")


def test_requests_go_to_the_openai_endpoint_not_the_ndjson_one(ollama: Callable[..., Any]) -> None:
    runtime = ollama()
    assert runtime.chat_path == "/v1/chat/completions" and runtime.completion_path == "/v1/completions"
    # /api/chat and /api/generate stream NDJSON: no `data:` line a Server-Sent-Events reader would take.
    lines = fixture("ollama", "generate_stream.ndjson").splitlines()
    assert len(lines) == 22 and not any(line.startswith("data:") for line in lines)


def test_chat_stream_becomes_a_trace(ollama: Callable[..., Any]) -> None:
    trace = to_trace("r", sse_raw("ollama", "chat_stream_openai.sse"), ollama().stream_details)
    assert trace.error is None
    assert trace.first_token_at == T0  # index 0: "2"
    assert (trace.completion_tokens, trace.prompt_tokens) == (10, 25)
    assert trace.token_source == "server"
    assert trace.cached_prompt_tokens is None  # Ollama's usage has no prompt_tokens_details
    assert trace.text == "2, 3, and 5." and trace.finish_reason == "stop"
    assert len(trace.events) == 9


def test_request_body_is_what_ollamas_openai_endpoint_reads(ollama: Callable[..., Any]) -> None:
    runtime = ollama("runtime.model_path=qwen3.8:27b")
    body = runtime.body(Request(request_id="r", prompt="Name three prime numbers.", prompt_tokens=6, max_tokens=16))
    assert body["model"] == "qwen3.8:27b"
    assert body["stream_options"] == {"include_usage": True}
    assert body["reasoning_effort"] == "none"  # think=false (openai.go FromChatRequest)
    assert "options" not in body and "chat_template_kwargs" not in body
    thinking = runtime.body(Request(request_id="r", prompt="x", prompt_tokens=1, max_tokens=16, thinking=True))
    assert "reasoning_effort" not in thinking


def test_there_are_no_counters_and_no_metrics_request(ollama: Callable[..., Any], monkeypatch: pytest.MonkeyPatch) -> None:
    runtime = ollama("drafter=mtp")
    monkeypatch.setattr(runtime, "sync_client", lambda: pytest.fail("no HTTP request expected"))
    assert runtime.metrics_path is None
    counters = runtime.counters()
    assert counters == Counters()
    delta = counters.delta(counters)
    assert acceptance_rate(delta) is None and tokens_per_pass(delta) is None
    assert runtime.tokenize("x") is None and runtime.reset_prefix_cache() is False


def test_engine_info_reads_the_version_and_the_models_draft_setting(ollama: Callable[..., Any],
                                                                    monkeypatch: pytest.MonkeyPatch) -> None:
    runtime = ollama("drafter=mtp", "k=3", "runtime.url=http://ollama.test", "runtime.model_path=qwen3.8:27b")
    seen: list[httpx.Request] = []
    show = {  # illustrative /api/show body (not a fixture): only the keys engine_info reads
        "parameters": 'draft_num_predict              3\nstop                           "<|im_end|>"',
        "details": {"format": "gguf", "family": "qwen35", "parameter_size": "27B", "quantization_level": "Q8_0"},
    }
    mock(runtime, monkeypatch, {
        "GET /api/version": (200, json.loads(fixture("ollama", "version.json"))),
        "POST /api/show": (200, show),
    }, seen)
    info = runtime.start()
    assert info.runtime == "ollama" and info.version == "0.33.0" and info.kv_cache_tokens is None
    assert info.details["draft_num_predict"] == "3" and info.details["k_requested"] == 3
    assert info.details["quantization_level"] == "Q8_0"
    assert json.loads(seen[-1].content) == {"model": "qwen3.8:27b"}


def test_engine_info_without_show(ollama: Callable[..., Any], monkeypatch: pytest.MonkeyPatch) -> None:
    runtime = ollama("runtime.url=http://ollama.test")
    mock(runtime, monkeypatch, {"GET /api/version": (200, {"version": "0.33.0"})})
    info = runtime.start()
    assert info.version == "0.33.0" and "draft_num_predict" not in info.details


def test_conf_file_documents_every_runtime_key() -> None:
    assert_conf_documents_every_runtime_key("ollama")
