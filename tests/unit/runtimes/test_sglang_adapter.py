"""runtime=sglang on recorded-style SGLang 0.5.23 output (tests/fixtures/engines/sglang, numbers from
its README): argv per drafter, inferred acceptance from /metrics, sglext stream details, server info."""

from __future__ import annotations

import json
from collections.abc import Callable
from pathlib import Path
from typing import Any

import httpx
import pytest

from specexp.measure.events import Request, RuntimeFailure
from specexp.measure.metrics import acceptance_by_position, acceptance_rate, tokens_per_pass
from specexp.runtimes.base import runtime_for
from specexp.runtimes.http import promtext
from specexp.runtimes.http.client import RawStream, to_trace
from tests.support.engines import (
    DT,
    T0,
    assert_conf_documents_every_runtime_key,
    counter_window,
    fixture,
    mock,
    sse_raw,
)


@pytest.fixture
def sglang(make_spec: Callable[..., Any], tmp_path: Path) -> Callable[..., Any]:
    return lambda *overrides: runtime_for("sglang")(
        make_spec("runtime=sglang", *overrides), tmp_path
    )


# -- argv ------------------------------------------------------------------------------------------

BASE = [
    "python",
    "-m",
    "sglang.launch_server",
    "--model-path",
    "Qwen/Qwen3.8-27B",
    "--host",
    "127.0.0.1",
    "--port",
    "8123",
    "--mem-fraction-static",
    "0.9",
    "--quantization",
    "fp8",
    "--enable-metrics",
    "--enable-cache-report",
]


def test_argv_without_a_drafter(sglang: Callable[..., Any]) -> None:
    runtime = sglang()
    assert runtime.build_argv(8123) == BASE
    assert runtime.drafter_config() is None


@pytest.mark.parametrize(
    ("overrides", "flags", "config"),
    [
        (
            ["drafter=mtp", "k=3"],
            [
                "--speculative-algorithm",
                "NEXTN",
                "--speculative-num-steps",
                "3",
                "--speculative-eagle-topk",
                "1",
                "--speculative-num-draft-tokens",
                "4",
            ],
            "3/1/4",
        ),
        (
            ["drafter=eagle3", "k=5", "runtime.draft_model_path=lmsys/sglang-EAGLE3-Qwen3-8B"],
            [
                "--speculative-algorithm",
                "EAGLE3",
                "--speculative-draft-model-path",
                "lmsys/sglang-EAGLE3-Qwen3-8B",
                "--speculative-num-steps",
                "5",
                "--speculative-eagle-topk",
                "1",
                "--speculative-num-draft-tokens",
                "6",
            ],
            "5/1/6",
        ),
        (
            ["drafter=draft_model"],
            [
                "--speculative-algorithm",
                "STANDALONE",
                "--speculative-draft-model-path",
                "Qwen/Qwen3-0.6B",
                "--speculative-num-steps",
                "5",
                "--speculative-eagle-topk",
                "1",
                "--speculative-num-draft-tokens",
                "6",
            ],
            "5/1/6",
        ),
        (
            ["drafter=dflash", "runtime.draft_model_path=z-lab/Qwen3.8-27B-DFlash2"],
            [
                "--speculative-algorithm",
                "DFLASH",
                "--speculative-draft-model-path",
                "z-lab/Qwen3.8-27B-DFlash2",
                "--speculative-num-draft-tokens",
                "16",
            ],
            "1/1/16",
        ),
        (
            ["drafter=dspark"],
            ["--speculative-algorithm", "DSPARK", "--speculative-dspark-block-size", "7"],
            "1/1/8",
        ),
        (
            ["drafter=dspark", "runtime.draft_model_path=deepseek-ai/dspark_qwen3_8b_block7"],
            [
                "--speculative-algorithm",
                "DSPARK",
                "--speculative-draft-model-path",
                "deepseek-ai/dspark_qwen3_8b_block7",
                "--speculative-dspark-block-size",
                "7",
            ],
            "1/1/8",
        ),
        (
            ["drafter=ngram"],
            [
                "--speculative-algorithm",
                "NGRAM",
                "--speculative-num-draft-tokens",
                "5",
                "--speculative-ngram-max-bfs-breadth",
                "1",
            ],
            "5/1/5",
        ),
    ],
)
def test_each_drafter_becomes_its_speculative_flags(
    sglang: Callable[..., Any], overrides: list[str], flags: list[str], config: str
) -> None:
    runtime = sglang(*overrides)
    assert runtime.build_argv(8123) == BASE + flags
    assert runtime.drafter_config() == config


def test_eagle_maps_to_eagle(sglang: Callable[..., Any]) -> None:
    runtime = sglang("drafter=eagle", "runtime.draft_model_path=yuhuili/EAGLE-LLaMA3.1-Instruct-8B")
    argv = runtime.build_argv(8123)
    assert argv[len(BASE) : len(BASE) + 2] == ["--speculative-algorithm", "EAGLE"]
    assert runtime.drafter_config() == "3/1/4"


def test_suffix_decoding_is_refused(sglang: Callable[..., Any]) -> None:
    runtime = sglang("drafter=suffix")
    with pytest.raises(RuntimeFailure) as err:
        runtime.build_argv(8123)
    assert (err.value.status, err.value.kind) == ("refused", "unsupported_drafter")


@pytest.mark.parametrize("drafter", ["eagle3", "dflash"])
def test_a_drafter_without_its_weights_is_refused(sglang: Callable[..., Any], drafter: str) -> None:
    with pytest.raises(RuntimeFailure) as err:
        sglang(f"drafter={drafter}").build_argv(8123)
    assert err.value.kind == "missing_model"


def test_server_settings_become_their_flags(sglang: Callable[..., Any]) -> None:
    argv = sglang(
        "quantization=bf16",
        "runtime.max_model_len=131072",
        "runtime.kv_cache_dtype=fp8_e4m3",
        "runtime.prefix_caching=false",
        "runtime.gpu_memory_utilization=0.85",
        "runtime.executable=/venv/bin/python",
        "runtime.served_model_name=qwen",
        "runtime.extra_args=[--tp,2]",
    ).build_argv(30000)
    assert argv == [
        "/venv/bin/python",
        "-m",
        "sglang.launch_server",
        "--model-path",
        "Qwen/Qwen3.8-27B",
        "--host",
        "127.0.0.1",
        "--port",
        "30000",
        "--mem-fraction-static",
        "0.85",
        "--context-length",
        "131072",
        "--kv-cache-dtype",
        "fp8_e4m3",
        "--served-model-name",
        "qwen",
        "--enable-metrics",
        "--enable-cache-report",
        "--disable-radix-cache",
        "--tp",
        "2",
    ]


# -- counters: acceptance inferred from verify calls ------------------------------------------------


def window(runtime: Any) -> Any:
    return counter_window(runtime, "sglang")


def test_inferred_acceptance_matches_the_requests_own_spec_details(
    sglang: Callable[..., Any],
) -> None:
    delta = window(sglang("drafter=mtp", "k=3"))
    assert (delta.drafts, delta.draft_tokens, delta.accepted) == (11, 33, 25)
    assert acceptance_rate(delta) == pytest.approx(0.757576, abs=1e-6)
    assert tokens_per_pass(delta) == pytest.approx(3.272727, abs=1e-6)
    assert acceptance_by_position(delta) is None  # no per-position counters in SGLang
    details = next(
        c["sglext"]["spec_tokens_details"]
        for _, c in sse_raw("sglang", "stream_chat_meta.sse").chunks
        if "sglext" in c
    )
    assert delta.accepted == details["spec_num_correct_drafts"]
    assert delta.draft_tokens == details["spec_num_proposed_drafts"]
    assert acceptance_rate(delta) == pytest.approx(details["spec_accept_rate"])
    # SGLang's own figure: spec_accept_length = completion / verify passes (tokenizer_manager
    # _calculate_spec_decoding_metrics), so completion = verify passes + accepted drafts
    assert tokens_per_pass(delta) == pytest.approx(details["spec_accept_length"])
    assert delta.generation_tokens == delta.drafts + delta.accepted


def test_the_identity_holds_for_every_request_not_once_per_window(
    sglang: Callable[..., Any],
) -> None:
    """Two requests of 36 and 128 tokens (the fixtures' stream and /generate response): accepted
    is completion - verify for each, so the window's figure is their sum, not one less per request."""
    stream = next(
        c["sglext"]["spec_tokens_details"]
        for _, c in sse_raw("sglang", "stream_chat_meta.sse").chunks
        if "sglext" in c
    )
    generate = json.loads(fixture("sglang", "generate_response.json"))["meta_info"]

    def text(gen, verify, n):
        return (
            "# TYPE sglang:generation_tokens_total counter\n"
            f'sglang:generation_tokens_total{{model_name="m",is_streaming="true"}} {gen}\n'
            "# TYPE sglang:spec_verify_calls_total counter\n"
            f'sglang:spec_verify_calls_total{{model_name="m"}} {verify}\n'
            "# TYPE sglang:num_requests_total counter\n"
            f'sglang:num_requests_total{{model_name="m",is_streaming="true"}} {n}\n'
        )

    runtime = sglang("drafter=mtp", "k=3")
    delta = runtime.map_counters(promtext.parse(text(36 + 128, 11 + 40, 2))).delta(
        runtime.map_counters(promtext.parse(text(0, 0, 0)))
    )
    assert (
        delta.accepted
        == stream["spec_num_correct_drafts"] + generate["spec_num_correct_drafts"]
        == 25 + 88
    )
    assert tokens_per_pass(delta) == pytest.approx((36 + 128) / (11 + 40))


def test_data_parallel_ranks_are_summed_and_replicas_counted_once(
    sglang: Callable[..., Any],
) -> None:
    """Two DP ranks of two TP workers each: each rank's count is exported by both of its workers."""

    def series(name, per_rank):
        return "".join(
            f'{name}{{dp_rank="{dp}",engine_type="unified",model_name="m",moe_ep_rank="0",pp_rank="0",tp_rank="{tp}"}} {v}\n'
            for dp, v in enumerate(per_rank)
            for tp in (2 * dp, 2 * dp + 1)
        )

    text = (
        "# TYPE sglang:spec_verify_calls_total counter\n"
        + series("sglang:spec_verify_calls_total", [30.0, 20.0])
        + "# TYPE sglang:generation_tokens_total counter\n"
        + series("sglang:generation_tokens_total", [100.0, 70.0])
        + "# TYPE sglang:cached_tokens_total counter\n"
        + series("sglang:cached_tokens_total", [64.0, 0.0]).replace(
            "{dp_rank", '{cache_source="device",dp_rank'
        )
    )
    counters = sglang("drafter=mtp", "k=3").map_counters(promtext.parse(text))
    assert (counters.drafts, counters.generation_tokens, counters.accepted) == (50, 170, 120)
    assert counters.cached_prompt_tokens == 64


def test_window_tokens_come_from_the_token_counters(sglang: Callable[..., Any]) -> None:
    delta = window(sglang("drafter=mtp", "k=3"))
    assert delta.generation_tokens == 36
    assert delta.prompt_tokens == 1187
    assert (
        delta.cached_prompt_tokens == 1152
    )  # cache_source="device": the only source exported here


def test_stale_spec_gauges_are_kept_only_for_the_record(sglang: Callable[..., Any]) -> None:
    runtime = sglang("drafter=mtp", "k=3")
    before = runtime.map_counters(promtext.parse(fixture("sglang", "metrics_before.txt")))
    after = runtime.map_counters(promtext.parse(fixture("sglang", "metrics_after.txt")))
    assert before.extra["spec_accept_length"] == after.extra["spec_accept_length"] == 3.21
    assert after.extra["spec_accept_rate"] == 0.7367
    assert after.extra["cache_hit_rate"] == 0.9705
    assert tokens_per_pass(after.delta(before)) != pytest.approx(3.21)


def test_without_a_drafter_nothing_is_inferred(sglang: Callable[..., Any]) -> None:
    delta = window(sglang())
    assert delta.drafts is None and delta.accepted is None and delta.draft_tokens is None
    assert delta.generation_tokens == 36


def test_cached_tokens_prefer_the_total_source(sglang: Callable[..., Any]) -> None:
    text = (
        "# TYPE sglang:cached_tokens_total counter\n"
        'sglang:cached_tokens_total{cache_source="device",model_name="m"} 100.0\n'
        'sglang:cached_tokens_total{cache_source="host",model_name="m"} 20.0\n'
    )
    assert sglang().map_counters(promtext.parse(text)).cached_prompt_tokens == 120
    total = text + 'sglang:cached_tokens_total{cache_source="total",model_name="m"} 125.0\n'
    assert sglang().map_counters(promtext.parse(total)).cached_prompt_tokens == 125


# -- streams ---------------------------------------------------------------------------------------


def test_chat_stream_becomes_a_trace_with_spec_details(sglang: Callable[..., Any]) -> None:
    runtime = sglang("drafter=mtp", "k=3")
    trace = to_trace("r", sse_raw("sglang", "stream_chat_meta.sse"), runtime.stream_details)
    assert trace.error is None
    assert trace.first_token_at == T0 + DT  # index 1: the role chunk has content ""
    assert (trace.completion_tokens, trace.prompt_tokens, trace.cached_prompt_tokens) == (
        36,
        1187,
        1152,
    )
    assert trace.token_source == "server"
    assert trace.finish_reason == "stop"
    assert len(trace.events) == 12
    timings = trace.engine_timings or {}
    assert timings["spec_verify_ct"] == 11
    assert timings["spec_accept_rate"] == pytest.approx(25 / 33)
    assert timings["spec_correct_drafts_histogram"] == [1, 1, 3, 6]


def test_non_streaming_meta_info_gives_counts_and_timings(sglang: Callable[..., Any]) -> None:
    response = json.loads(fixture("sglang", "generate_response.json"))
    details = sglang("drafter=mtp").stream_details(
        RawStream(sent_at=0.0, chunks=[(1.0, response)], status=200)
    )
    assert (details["completion_tokens"], details["prompt_tokens"], details["cached_tokens"]) == (
        128,
        1533,
        1472,
    )
    timings = details["engine_timings"]
    assert (
        timings["spec_accept_rate"] == pytest.approx(88 / 120) and timings["spec_verify_ct"] == 40
    )
    assert timings["e2e_latency"] == pytest.approx(0.6418652534484863)


def test_requests_ask_for_spec_details_never_for_meta_info(sglang: Callable[..., Any]) -> None:
    refusal = json.loads(fixture("sglang", "stream_return_meta_info_error.json"))
    assert "return_meta_info is not supported with streaming" in refusal["message"]
    request = Request(request_id="r", prompt="hi", prompt_tokens=1, max_tokens=8, thinking=True)
    body = sglang("drafter=mtp").body(request)
    assert body["stream"] is True and "return_meta_info" not in body
    assert body["return_spec_tokens_details"] is True
    assert body["stream_options"] == {"include_usage": True, "continuous_usage_stats": True}
    assert body["chat_template_kwargs"] == {"enable_thinking": True}
    assert "return_spec_tokens_details" not in sglang().body(request)


# -- server info, cache ----------------------------------------------------------------------------


def test_engine_info_from_server_info(
    sglang: Callable[..., Any], monkeypatch: pytest.MonkeyPatch
) -> None:
    runtime = sglang("drafter=mtp", "k=5", "runtime.url=http://sglang.test")
    assert runtime.drafter_config() == "5/1/6"  # as planned ...
    mock(
        runtime,
        monkeypatch,
        {
            "GET /health": (200, ""),
            "GET /server_info": (200, json.loads(fixture("sglang", "server_info.json"))),
        },
    )
    info = runtime.start()
    assert info.version == "0.5.23"
    assert info.kv_cache_tokens == 1142784
    assert info.details["speculative_algorithm"] == "EAGLE"
    assert info.details["avg_spec_accept_length"] == pytest.approx(3.0233949700814327)
    assert (
        runtime.drafter_config() == info.details["drafter_config"] == "3/1/4"
    )  # ... as the server resolved it


def test_engine_info_falls_back_to_the_deprecated_route(
    sglang: Callable[..., Any], monkeypatch: pytest.MonkeyPatch
) -> None:
    runtime = sglang("runtime.url=http://sglang.test")
    mock(
        runtime,
        monkeypatch,
        {"GET /health": (200, ""), "GET /get_server_info": (200, {"version": "0.5.23"})},
    )
    assert runtime.start().version == "0.5.23"


@pytest.mark.parametrize(("status", "confirmed"), [(200, True), (400, False)])
def test_flush_cache_is_the_prefix_cache_reset(
    sglang: Callable[..., Any], monkeypatch: pytest.MonkeyPatch, status: int, confirmed: bool
) -> None:
    runtime = sglang()
    seen: list[httpx.Request] = []
    mock(runtime, monkeypatch, {"POST /flush_cache": (status, "")}, seen)
    assert runtime.reset_prefix_cache() is confirmed
    assert [r.url.path for r in seen] == ["/flush_cache"]


def test_conf_file_documents_every_runtime_key() -> None:
    assert_conf_documents_every_runtime_key("sglang")
