"""runtime=ollama on what Ollama 0.24.0 answered (tests/fixtures/engines/ollama, recorded by
scripts/record-ollama-fixtures): `ollama serve` with its environment, the native streams and their
timings, Ollama's refusals, no counters; the version rule for drafting."""

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
from specexp.runtimes.http.client import to_trace
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


def _final(name: str) -> dict[str, Any]:
    """The last object (`done: true`) of a recorded native stream."""
    return json.loads(fixture("ollama", name).splitlines()[-1])


@pytest.mark.parametrize("name", ["generate_stream.ndjson", "chat_stream.ndjson"])
def test_a_native_stream_becomes_a_trace_with_the_engines_own_timings(
    ollama: Callable[..., Any], name: str
) -> None:
    """Recorded from Ollama 0.24.0 (scripts/record-ollama-fixtures): every line but the last
    carries text; the last carries Ollama's counts and nanosecond durations."""
    final = _final(name)
    trace = to_trace("r", ndjson_raw("ollama", name), ollama().stream_details)
    assert trace.error is None and trace.first_token_at == T0
    assert (trace.completion_tokens, trace.prompt_tokens) == (
        final["eval_count"],
        final["prompt_eval_count"],
    )
    assert trace.token_source == "server" and trace.cached_prompt_tokens is None
    assert trace.finish_reason == "stop"
    assert len(trace.events) == len(fixture("ollama", name).splitlines()) - 1
    timings = trace.engine_timings or {}
    assert {k: timings[k] for k in ("eval_count", "eval_duration", "total_duration")} == {
        k: final[k] for k in ("eval_count", "eval_duration", "total_duration")
    }
    assert timings["eval_tps"] == pytest.approx(
        final["eval_count"] / final["eval_duration"] * 1e9
    )  # the figure `ollama run --verbose` prints


def test_the_chat_template_specexp_imports_with_reaches_the_model() -> None:
    """The chat prompt carries the system message Qwen's own template adds: 5 tokens without
    the template, 30 and more with it (recorded)."""
    assert _final("chat_stream.ndjson")["prompt_eval_count"] > 20
    assert "You are Qwen" in json.loads(fixture("ollama", "show.json"))["template"]


def test_ollamas_own_refusals_are_what_specexp_shows() -> None:
    missing = json.loads(fixture("ollama", "error_missing_model.json"))
    assert missing["status"] == 404 and "not found" in missing["body"]["error"]
    think = json.loads(fixture("ollama", "error_think.json"))
    assert think["status"] == 400 and "does not support thinking" in think["body"]["error"]


def test_a_stream_without_a_final_object_keeps_no_timings(ollama: Callable[..., Any]) -> None:
    raw = ndjson_raw("ollama", "generate_stream.ndjson")
    raw.chunks.pop()  # the final object
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
    assert info.runtime == "ollama" and info.version == "0.24.0" and info.kv_cache_tokens is None
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


@pytest.mark.parametrize(
    ("version", "refused"),
    [("0.24.0", True), ("0.29.9", True), ("0.30.0", False), ("0.33.0-rc2", False), (None, False)],
)
def test_an_ollama_before_030_drafts_nothing_and_says_its_version(
    version: str | None, refused: bool
) -> None:
    from specexp.spec.runtime import OllamaRuntimeSpec

    def drafting_refusal(version: str | None, drafter: str) -> str | None:
        return OllamaRuntimeSpec.version_refusal(drafter, version)

    said = drafting_refusal(version, "draft_model")
    assert (said is not None) == refused
    if said is not None:
        assert f"Ollama {version}" in said and "drafter=draft_model" in said
    assert drafting_refusal(version, "none") is None


def _fake_ollama(tmp_path: Path, version: str) -> Path:
    """An executable that answers `--version` as an `ollama` binary without a server does."""
    exe = tmp_path / "ollama"
    exe.write_text(
        "#!/bin/sh\necho 'Warning: could not connect to a running Ollama instance'\n"
        f"echo 'Warning: client version is {version}'\n"
    )
    exe.chmod(0o755)
    return exe


def test_a_drafter_is_refused_at_plan_time_by_the_binarys_version(
    make_spec: Callable[..., Any], tmp_path: Path
) -> None:
    from specexp.run.plan import make_cell

    exe = _fake_ollama(tmp_path, "0.24.0")
    old = make_cell(make_spec("runtime=ollama", f"runtime.executable={exe}", "drafter=mtp", "k=3"))
    assert old.refuse_kind == "unsupported_drafter"
    assert old.refuse_reason is not None and "Ollama 0.24.0" in old.refuse_reason
    plain = make_cell(make_spec("runtime=ollama", f"runtime.executable={exe}"))
    assert plain.refuse_reason is None
    (tmp_path / "new").mkdir()
    newer = _fake_ollama(tmp_path / "new", "0.33.0")
    ok = make_cell(make_spec("runtime=ollama", f"runtime.executable={newer}", "drafter=mtp", "k=3"))
    assert ok.refuse_reason is None
    stated = make_cell(
        make_spec("runtime=ollama", "runtime.version=0.24.0", "drafter=draft_model", "k=4")
    )
    assert stated.refuse_reason is not None and "Ollama 0.24.0" in stated.refuse_reason


def test_a_gguf_specexp_knows_is_served_under_its_digest(ollama: Callable[..., Any]) -> None:
    runtime = ollama("model=tiny", "quantization=f16")
    tag = runtime.served_model()
    assert tag.startswith("specexp/tiny-f16:") and len(tag.split(":")[1]) == 12
    assert ollama("model=tiny", "runtime.model_path=qwen3.8:27b").served_model() == "qwen3.8:27b"
    assert ollama("model=tiny", "runtime.served_model_name=mine").served_model() == "mine"


def test_the_context_length_asked_for_is_sent_as_num_ctx(ollama: Callable[..., Any]) -> None:
    request = Request(request_id="r", prompt="x", prompt_tokens=1, max_tokens=8)
    assert ollama("runtime.max_model_len=4096").body(request)["options"]["num_ctx"] == 4096
    assert "num_ctx" not in ollama().body(request)["options"]


def test_a_model_that_cannot_think_gets_no_think_and_a_note(ollama: Callable[..., Any]) -> None:
    runtime = ollama()
    runtime._thinks = False  # /api/show's capabilities had no "thinking" (error_think.json)
    request = Request(request_id="r", prompt="x", prompt_tokens=1, max_tokens=8, thinking=True)
    assert "think" not in runtime.body(request)
    assert any("no thinking mode" in note for note in runtime.notes())
    quiet = Request(request_id="r", prompt="x", prompt_tokens=1, max_tokens=8, thinking=False)
    assert runtime.body(quiet)["think"] is False


def test_a_chatml_gguf_is_imported_with_its_own_default_system_message(tmp_path: Path) -> None:
    import gguf

    from specexp.runtimes.ollama.models import ollama_template

    def written(template: str | None) -> Path:
        path = tmp_path / f"m{len(list(tmp_path.iterdir()))}.gguf"
        writer = gguf.GGUFWriter(str(path), "llama")
        if template is not None:
            writer.add_chat_template(template)
        writer.write_header_to_file()
        writer.write_kv_data_to_file()
        writer.close()
        return path

    qwen = "{{- '<|im_start|>system\\nYou are Qwen, a helper.<|im_end|>\\n' }}<|im_start|>"
    made = ollama_template(written(qwen))
    assert made is not None and "You are Qwen, a helper.<|im_end|>" in made
    assert made.endswith("<|im_start|>assistant\n")
    plain = ollama_template(written("{{ '<|im_start|>' }}{% for m in messages %}{% endfor %}"))
    assert plain is not None and plain.startswith("{{- range .Messages }}")  # no default system
    assert ollama_template(written("[INST] {{ messages }} [/INST]")) is None
    assert ollama_template(written(None)) is None
