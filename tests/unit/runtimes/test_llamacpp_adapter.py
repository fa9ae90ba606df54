"""runtime=llamacpp on recorded-style llama-server output (tests/fixtures/engines/llamacpp, numbers
from its README): %g-formatted counters, per-position padding to k, timings, props and slots."""

from __future__ import annotations

import json
from collections.abc import Callable
from pathlib import Path
from typing import Any

import pytest

from specexp.metrics import acceptance_by_position, acceptance_rate, tokens_per_pass
from specexp.runtimes import promtext
from specexp.runtimes.base import runtime_for
from specexp.runtimes.client import RawStream, to_trace
from tests.support.engines import DT, T0, fixture, mock

PER_POS = "llamacpp:spec_decode_num_accepted_tokens_per_pos_total"



def without_per_position(text: str) -> str:
    """The exposition of a server that has not drafted yet: no per-position family at all."""
    return "\n".join(line for line in text.splitlines() if "per_pos" not in line) + "\n"


@pytest.fixture
def llamacpp(make_spec: Callable[..., Any], tmp_path: Path) -> Callable[..., Any]:
    return lambda *overrides: runtime_for("llamacpp")(
        make_spec("runtime=llamacpp", "runtime.model_path=/models/Qwen3.8-27B-Q8_0.gguf", *overrides), tmp_path)



def window(runtime: Any, before: str | None = None) -> Any:
    """after - before, `before` defaulting to the fixture's metrics_before.txt."""
    first = runtime.map_counters(promtext.parse(before if before is not None else fixture("llamacpp", "metrics_before.txt")))
    after = runtime.map_counters(promtext.parse(fixture("llamacpp", "metrics_after.txt")))
    return after.delta(first)


def test_counters_give_the_windows_acceptance(llamacpp: Callable[..., Any]) -> None:
    delta = window(llamacpp("drafter=mtp", "k=3"))
    assert (delta.drafts, delta.draft_tokens, delta.accepted) == (10, 28, 21)
    assert delta.accepted_per_position == (9, 7, 5)
    assert acceptance_rate(delta) == pytest.approx(0.75)
    assert tokens_per_pass(delta) == pytest.approx(3.1)
    assert acceptance_by_position(delta) == pytest.approx([0.9, 0.7, 0.5])
    assert delta.prompt_tokens == 7  # llama.cpp's prompt counter excludes cached tokens
    assert delta.generation_tokens == 32 == 1 + delta.drafts + delta.accepted


def test_the_g_formatted_counter_parses_and_loses_precision(llamacpp: Callable[..., Any]) -> None:
    runtime = llamacpp("drafter=mtp", "k=3")
    before = runtime.map_counters(promtext.parse(fixture("llamacpp", "metrics_before.txt")))
    after = runtime.map_counters(promtext.parse(fixture("llamacpp", "metrics_after.txt")))
    assert (before.cached_prompt_tokens, after.cached_prompt_tokens) == (3314650.0, 3315930.0)
    assert after.delta(before).cached_prompt_tokens == 1280  # the true 1283 is in timings.cache_n


def test_per_position_counters_are_padded_to_k_before_drafting(llamacpp: Callable[..., Any]) -> None:
    runtime = llamacpp("drafter=mtp", "k=3")
    fresh = runtime.map_counters(promtext.parse(without_per_position(fixture("llamacpp", "metrics_before.txt"))))
    assert fresh.accepted_per_position == (0.0, 0.0, 0.0)
    delta = window(runtime, without_per_position(fixture("llamacpp", "metrics_before.txt")))
    assert delta.accepted_per_position == (26526, 20795, 15657)


def test_per_position_counters_are_padded_to_a_larger_k(llamacpp: Callable[..., Any]) -> None:
    runtime = llamacpp("drafter=mtp", "k=5")
    counters = runtime.map_counters(promtext.parse(fixture("llamacpp", "metrics_after.txt")))
    assert counters.accepted_per_position == (26526, 20795, 15657, 0.0, 0.0)
    assert acceptance_by_position(window(runtime)) == pytest.approx([0.9, 0.7, 0.5, 0.0, 0.0])


def test_without_a_drafter_acceptance_is_unknown(llamacpp: Callable[..., Any]) -> None:
    delta = window(llamacpp())
    assert delta.drafts is None and delta.accepted_per_position is None and acceptance_rate(delta) is None
    assert delta.generation_tokens == 32


def test_completion_stream_becomes_a_trace(llamacpp: Callable[..., Any]) -> None:
    raw = RawStream(sent_at=T0 - 1, status=200)
    for line in fixture("llamacpp", "stream_completion.sse").splitlines():
        if line.startswith("data:") and line[5:].strip() != "[DONE]":
            raw.chunks.append((T0 + DT * len(raw.chunks), json.loads(line[5:].strip())))
    trace = to_trace("r", raw, llamacpp("drafter=mtp", "k=3").stream_details)
    assert trace.error is None
    assert trace.first_token_at == T0  # index 0
    assert (trace.completion_tokens, trace.prompt_tokens, trace.cached_prompt_tokens) == (32, 1290, 1283)
    assert trace.finish_reason == "length" and len(trace.events) == 32
    timings = trace.engine_timings or {}
    assert (timings["draft_n"], timings["draft_n_accepted"]) == (28, 21)
    assert timings["cache_n"] + timings["prompt_n"] == trace.prompt_tokens


def test_engine_info_from_props_and_slots(llamacpp: Callable[..., Any], monkeypatch: pytest.MonkeyPatch) -> None:
    runtime = llamacpp("drafter=mtp", "k=3", "quantization=q8_0")  # the fixture's GGUF is Q8_0
    mock(runtime, monkeypatch, {
        "GET /props": (200, json.loads(fixture("llamacpp", "props.json"))),
        "GET /slots": (200, json.loads(fixture("llamacpp", "slots.json"))),
    })
    with runtime.sync_client() as client:
        info = runtime.engine_info(client)
    assert info.version == "b1-0c1e570"
    assert info.kv_cache_tokens == 32768
    assert info.details == {"total_slots": 1, "model_ftype": "Q8_0", "speculative": True}


def test_tokenize_counts_the_servers_tokens(llamacpp: Callable[..., Any], monkeypatch: pytest.MonkeyPatch) -> None:
    runtime = llamacpp()
    mock(runtime, monkeypatch, {"POST /tokenize": (200, json.loads(fixture("llamacpp", "tokenize.json")))})
    tokens = runtime.tokenize("The quick brown fox jumps over the lazy dog")
    assert tokens is not None and len(tokens) == 9


def test_argv_names_the_spec_type_and_k(llamacpp: Callable[..., Any]) -> None:
    argv = llamacpp("drafter=mtp", "k=3", "runtime.executable=/bin/llama-server").build_argv(8080)
    assert argv[:3] == ["/bin/llama-server", "-m", "/models/Qwen3.8-27B-Q8_0.gguf"]
    assert argv[argv.index("--spec-type") + 1] == "draft-mtp"
    assert argv[argv.index("--spec-draft-n-max") + 1] == "3"
    assert "--spec-draft-model" not in argv


@pytest.mark.parametrize(("ftype", "name"), [("all F32", "F32"), ("Q4_K - Medium", "Q4_K_M"), ("Q8_0", "Q8_0"),
                                             ("BF16", "BF16"), ("Q5_K - Small", "Q5_K_S")])
def test_llama_server_file_types_read_as_gguf_names(ftype: str, name: str) -> None:
    from specexp.runtimes.llamacpp import gguf_file_type

    assert gguf_file_type(ftype) == name
