"""runtime=sglang on output recorded from a real SGLang 0.5.12 on an H200, serving specexp's config-only
Qwen3-8B shape with dummy weights and an EAGLE-3 head at 3/1/4 (tests/fixtures/engines/sglang/h200-0.5.12,
captured by benchmarks/gpu/sglang_capture.py): the native stream and its speculative counts, a
window's acceptance summed from its requests, the counters /metrics has and has not, the server
info, the tokenizer, the cache flush and SGLang's own refusal of a start."""

from __future__ import annotations

import json
from collections.abc import Callable
from pathlib import Path
from typing import Any

import pytest

from specexp.measure.events import Counters, Request
from specexp.measure.metrics import acceptance_by_position, acceptance_rate, tokens_per_pass
from specexp.runtimes.base import runtime_for
from specexp.runtimes.http import process, promtext
from specexp.runtimes.http.client import to_trace
from specexp.runtimes.sglang import native
from specexp.runtimes.sglang.driver import start_error
from tests.support.engines import fixture, mock, sse_raw

REAL = "h200-0.5.12"


@pytest.fixture
def sglang(
    make_spec: Callable[..., Any], tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> Callable[..., Any]:
    monkeypatch.setenv("SPECEXP_CACHE", str(tmp_path / "cache"))
    return lambda *overrides: runtime_for("sglang")(
        make_spec("runtime=sglang", *overrides), tmp_path
    )


def native_trace(runtime: Any, name: str = "generate_stream.txt") -> Any:
    raw = runtime.stream_chunks(sse_raw("sglang", f"{REAL}/{name}"), native.PATH)
    return to_trace("r", raw, runtime.stream_details)


def test_the_native_stream_gives_every_token_once_and_the_requests_own_counts(
    sglang: Callable[..., Any],
) -> None:
    trace = native_trace(sglang("drafter=eagle3", "k=3"))
    assert trace.error is None and trace.finish_reason == "length"
    assert (trace.prompt_tokens, trace.completion_tokens, trace.token_source) == (70, 64, "server")
    # each event brings its own token, though every event repeats the whole text so far
    assert sum(e.tokens for e in trace.token_events) == 64 == len(trace.token_events)
    assert trace.text == "<w37102><w112784>" * 32
    timings = trace.engine_timings
    assert (timings["spec_verify_ct"], timings["spec_num_correct_drafts"]) == (63, 0)
    assert timings["spec_num_proposed_drafts"] == 189 == 63 * 3
    assert timings["spec_correct_drafts_histogram"] == [63]
    # the server's text, ids and nested objects stay out of the record; its figures are kept
    assert "id" not in timings and "finish_reason" not in timings
    assert timings["queue_time"] == 0.0


def test_a_windows_acceptance_is_the_sum_of_its_requests_counts(
    sglang: Callable[..., Any],
) -> None:
    runtime = sglang("drafter=eagle3", "k=3")
    trace = native_trace(runtime)
    # 0.5.12's /metrics has no speculative counter: the delta around the window says nothing
    before = runtime.map_counters(promtext.parse(fixture("sglang", f"{REAL}/metrics_before.txt")))
    after = runtime.map_counters(promtext.parse(fixture("sglang", f"{REAL}/metrics_after.txt")))
    delta = after.delta(before)
    assert delta.drafts is None and delta.accepted is None
    window = runtime.window_counters(delta, [trace, trace])
    assert (window.drafts, window.draft_tokens, window.accepted) == (126, 378, 0)
    assert acceptance_rate(window) == 0.0 and tokens_per_pass(window) == 1.0
    assert acceptance_by_position(window) == [0.0, 0.0, 0.0]
    # the prefill's token and one per verify pass: SGLang's own completion = 1 + passes + accepted
    assert trace.completion_tokens == 1 + 63 + 0


def test_the_histogram_gives_acceptance_by_position() -> None:
    from dataclasses import replace

    from specexp.runtimes.sglang.acceptance import window_counts

    base = to_trace("r", sse_raw("sglang", f"{REAL}/completions_stream.txt"))
    # 10 passes: 4 accepted none, 3 one, 2 two, 1 all three (a chain: position i accepted only
    # after every earlier one)
    timings = {
        "spec_verify_ct": 10,
        "spec_num_correct_drafts": 3 + 4 + 3,
        "spec_num_proposed_drafts": 30,
        "spec_correct_drafts_histogram": [4, 3, 2, 1],
    }
    window = window_counts(Counters(), [replace(base, engine_timings=timings)], 3)
    assert acceptance_by_position(window) == [0.6, 0.3, 0.1]
    assert acceptance_rate(window) == pytest.approx(10 / 30)


def test_a_finished_request_without_counts_made_no_counted_pass(sglang: Callable[..., Any]) -> None:
    from specexp.runtimes.sglang.acceptance import FIELDS

    runtime = sglang("drafter=eagle3", "k=3")
    raw = sse_raw("sglang", f"{REAL}/generate_stream.txt")
    # SGLang leaves the spec fields off when no verify pass was counted (a request that ended within
    # its first pass); its finished meta_info is still there
    for _, chunk in raw.chunks:
        for key in (*FIELDS, "spec_correct_drafts_histogram"):
            chunk["meta_info"].pop(key, None)
    trace = to_trace("r", runtime.stream_chunks(raw, native.PATH), runtime.stream_details)
    assert trace.completion_tokens == 64 and "e2e_latency" in (trace.engine_timings or {})
    window = runtime.window_counters(Counters(), [trace, native_trace(runtime)])
    assert (window.drafts, window.draft_tokens, window.accepted) == (63, 189, 0)


def test_a_request_without_its_counts_leaves_the_window_unknown(
    sglang: Callable[..., Any],
) -> None:
    runtime = sglang("drafter=eagle3", "k=3")
    # 0.5.12's OpenAI chat stream carries no speculative counts, though it was asked for them
    chat = to_trace("c", sse_raw("sglang", f"{REAL}/chat_stream.txt"), runtime.stream_details)
    assert chat.completion_tokens == 64 and "spec_verify_ct" not in (chat.engine_timings or {})
    window = runtime.window_counters(Counters(), [native_trace(runtime), chat])
    assert window.drafts is None and acceptance_rate(window) is None
    assert any("workload.endpoint=completions" in note for note in runtime.notes())
    # without a drafter nothing is summed
    plain = sglang()
    assert plain.window_counters(Counters(), [native_trace(plain)]).drafts is None


def test_real_metrics_give_tokens_and_cache_hits_not_speculation(
    sglang: Callable[..., Any],
) -> None:
    runtime = sglang("drafter=eagle3", "k=3")
    samples = promtext.parse(fixture("sglang", f"{REAL}/metrics_after.txt"))
    assert not [s for s in samples if s.name == "sglang:spec_verify_calls_total"]
    counters = runtime.map_counters(samples)
    before = runtime.map_counters(promtext.parse(fixture("sglang", f"{REAL}/metrics_before.txt")))
    delta = counters.delta(before)
    # the native stream and the chat and completion streams: 64 tokens each
    assert delta.generation_tokens == 3 * 64
    assert delta.prompt_tokens == 70 + 89 + 70
    assert counters.cached_prompt_tokens is not None
    assert "spec_accept_length" in counters.extra


def test_engine_info_from_the_real_server_info(
    sglang: Callable[..., Any], monkeypatch: pytest.MonkeyPatch
) -> None:
    runtime = sglang("drafter=eagle3", "k=3")
    info = json.loads(fixture("sglang", f"{REAL}/server_info.json"))
    mock(runtime, monkeypatch, {"GET /server_info": (200, info)})
    with runtime.sync_client() as client:
        engine = runtime.engine_info(client)
    assert engine.version == "0.5.12"
    assert engine.kv_cache_tokens == 749782
    assert runtime.drafter_config() == "3/1/4"
    assert runtime._incremental is False
    assert engine.details["speculative_algorithm"] == "EAGLE3"


def test_prompts_are_counted_and_cut_with_the_real_tokenizer(
    sglang: Callable[..., Any], monkeypatch: pytest.MonkeyPatch
) -> None:
    runtime = sglang()
    tokens = json.loads(fixture("sglang", f"{REAL}/tokenize.json"))
    text = json.loads(fixture("sglang", f"{REAL}/detokenize.json"))
    seen: list[Any] = []
    routes = {"POST /tokenize": (200, tokens), "POST /detokenize": (200, text)}
    mock(runtime, monkeypatch, routes, seen)
    prompt = "Count from one to one hundred in words, separated by commas: one, two,"
    assert runtime.tokenize(prompt) == [ord(c) for c in prompt]
    assert runtime.count_prompt(Request("r", prompt, 70, 8)) == 70
    assert runtime.detokenize(tokens["tokens"][:8]) == "Count fr"
    assert json.loads(seen[0].content)["add_special_tokens"] is False


def test_flush_cache_answered_200(
    sglang: Callable[..., Any], monkeypatch: pytest.MonkeyPatch
) -> None:
    runtime = sglang()
    status, body = fixture("sglang", f"{REAL}/flush_cache.txt").split("\n", 1)
    assert status == "HTTP 200"
    mock(runtime, monkeypatch, {"POST /flush_cache": (200, body)})
    assert runtime.reset_prefix_cache() is True


def test_a_refused_start_names_sglangs_own_error() -> None:
    cause = start_error(fixture("sglang", f"{REAL}/refused_start.log"))
    assert cause is not None and cause.startswith("ValueError: Speculative decoding for ")
    assert "--mamba-scheduler-strategy extra_buffer" in cause
    assert start_error("all went well\n") is None


def test_a_port_sglang_refuses_is_never_chosen(
    sglang: Callable[..., Any], monkeypatch: pytest.MonkeyPatch
) -> None:
    """SGLang refused --port 58131 on the H200 (its gRPC port, port + 10000, passed 65535): the
    refusal is named, and specexp chooses a lower port when the system offers one that high."""
    cause = start_error(fixture("sglang", f"{REAL}/refused_port.log"))
    assert cause == "ValueError: SGLANG_GRPC_PORT (68131) must be between 1 and 65535"
    real_bindable = process._bindable
    monkeypatch.setattr(
        process, "_bindable", lambda port: 58131 if port == 0 else real_bindable(port)
    )
    port = sglang().choose_port()
    assert port + 10000 <= 65535
    assert real_bindable(port) == port
    assert process.free_port() == 58131  # without a ceiling, the system's pick stands


def test_completions_go_to_generate_and_chat_to_the_openai_endpoint(
    sglang: Callable[..., Any],
) -> None:
    runtime = sglang()
    completion = runtime.body(Request("r", "Hi", 2, 5, ignore_eos=True, seed=7, chat=False))
    assert completion == {
        "text": "Hi",
        "sampling_params": {
            "max_new_tokens": 5,
            "temperature": 0.0,
            "ignore_eos": True,
            "sampling_seed": 7,
        },
        "stream": True,
    }
    chat = runtime.body(Request("r", "Hi", 2, 5, chat=True))
    assert chat["messages"] and chat["max_tokens"] == 5
    assert runtime.completion_path == native.PATH


def test_an_error_event_fails_the_request(sglang: Callable[..., Any]) -> None:
    from specexp.runtimes.http.client import RawStream

    raw = RawStream(sent_at=0.0, status=200, done=True)
    raw.chunks.append((1.0, {"error": {"message": "bad \x1b[31mthing"}}))
    trace = to_trace("r", native.as_completion_chunks(raw, False))
    assert trace.error_kind == "server_error" and "bad" in (trace.error or "")


def test_the_started_server_gets_runtime_env_and_a_refusal_keeps_its_log(
    sglang: Callable[..., Any], tmp_path: Path
) -> None:
    from specexp.measure.events import RuntimeFailure

    script = tmp_path / "python"
    script.write_text(
        '#!/bin/sh\necho "SPEC_V2=$SGLANG_ENABLE_SPEC_V2"\n'
        'echo "ValueError: Speculative decoding is not compatible with radix cache"\nexit 1\n'
    )
    script.chmod(0o755)
    runtime = sglang(
        f"runtime.executable={script}",
        "runtime.env={SGLANG_ENABLE_SPEC_V2: 1}",
        "runtime.start_timeout_s=30",
    )
    with pytest.raises(RuntimeFailure) as failure:
        try:
            runtime.start()
        finally:
            runtime.stop()
    log = (tmp_path / "server.log").read_text()
    assert "SPEC_V2=1" in log
    assert failure.value.status == "refused"
    assert failure.value.message.endswith(
        "ValueError: Speculative decoding is not compatible with radix cache"
    )


def test_sglangs_timestamps_are_kept_but_claim_no_ttft_part(sglang: Callable[..., Any]) -> None:
    from specexp.measure.ttft_parts import ttft_parts

    trace = native_trace(sglang("drafter=eagle3", "k=3"))
    # SGLang's received -> first response sent holds its own tokenization, so it is neither the
    # vocabulary's engine part (from first scheduling) nor leaves the front end it defines: the
    # timestamps stay in the record's engine timings, and no part is claimed from them
    timings = trace.engine_timings or {}
    assert timings["response_sent_to_client_ts"] - timings["request_received_ts"] == pytest.approx(
        0.3714883 - 0.3420858, abs=1e-6
    )
    assert ttft_parts(0.040, timings) == dict.fromkeys(
        ("ttft_queue_s", "ttft_engine_s", "ttft_frontend_s")
    )
