"""runtime=vllm on recorded-style vLLM 0.33.0 output (tests/fixtures/engines/vllm, numbers from its
README): the argv of each drafter, counters -> window metrics, streams -> traces, engine facts."""

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
from specexp.runtimes.http.client import to_trace
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
def vllm(
    make_spec: Callable[..., Any], tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> Callable[..., Any]:
    """`vllm("drafter=mtp", "k=3")` -> a VllmRuntime of that composed config (executable `vllm`)."""
    monkeypatch.setenv("SPECEXP_VLLM", "vllm")
    monkeypatch.setenv("SPECEXP_CACHE", str(tmp_path / "cache"))
    return lambda *overrides: runtime_for("vllm")(make_spec("runtime=vllm", *overrides), tmp_path)


# -- argv ------------------------------------------------------------------------------------------

BASE = [
    "vllm",
    "serve",
    "Qwen/Qwen3.8-27B",
    "--host",
    "127.0.0.1",
    "--port",
    "8123",
    "--gpu-memory-utilization",
    "0.9",
    "--quantization",
    "fp8",
    "--max-num-seqs",
    "256",
    "--max-num-batched-tokens",
    "8192",
]


def spec_config(argv: list[str]) -> dict[str, Any] | None:
    if "--speculative-config" not in argv:
        return None
    return json.loads(argv[argv.index("--speculative-config") + 1])


def test_argv_without_a_drafter_is_exactly_the_documented_command(vllm: Callable[..., Any]) -> None:
    argv = vllm().build_argv(8123)
    # every kernel JIT compile while serving is logged, so a contaminated window is known
    assert argv == BASE + [
        "--enable-prefix-caching",
        "--enable-prompt-tokens-details",
        "--jit-monitor-verbose",
    ]


@pytest.mark.parametrize(
    ("overrides", "expected"),
    [
        (["drafter=mtp"], {"method": "mtp", "num_speculative_tokens": 3}),
        (["drafter=mtp", "k=8"], {"method": "mtp", "num_speculative_tokens": 8}),
        (["drafter=dspark"], {"method": "dspark", "num_speculative_tokens": 7}),
        (
            ["drafter=dspark", "runtime.draft_model_path=deepseek-ai/dspark_qwen3_8b_block7"],
            {
                "method": "dspark",
                "num_speculative_tokens": 7,
                "model": "deepseek-ai/dspark_qwen3_8b_block7",
            },
        ),
        (
            ["drafter=dflash", "runtime.draft_model_path=z-lab/Qwen3.8-27B-DFlash2"],
            {
                "method": "dflash",
                "num_speculative_tokens": 15,
                "model": "z-lab/Qwen3.8-27B-DFlash2",
            },
        ),
        (
            ["drafter=eagle3", "runtime.draft_model_path=yuhuili/EAGLE3-LLaMA3.1-Instruct-8B"],
            {
                "method": "eagle3",
                "num_speculative_tokens": 3,
                "model": "yuhuili/EAGLE3-LLaMA3.1-Instruct-8B",
            },
        ),
        (
            ["drafter=ngram"],
            {
                "method": "ngram",
                "num_speculative_tokens": 4,
                "prompt_lookup_min": 2,
                "prompt_lookup_max": 5,
            },
        ),
        (
            ["drafter=draft_model"],
            {"method": "draft_model", "num_speculative_tokens": 5, "model": "Qwen/Qwen3-0.6B"},
        ),
        (
            ["drafter=draft_model", "runtime.draft_model_path=/models/draft"],
            {"method": "draft_model", "num_speculative_tokens": 5, "model": "/models/draft"},
        ),
    ],
)
def test_each_drafter_becomes_one_speculative_config(
    vllm: Callable[..., Any], overrides: list[str], expected: dict[str, Any]
) -> None:
    argv = vllm(*overrides).build_argv(8123)
    assert argv[: len(BASE)] == BASE
    assert spec_config(argv) == expected
    assert argv.count("--speculative-config") == 1
    assert argv[argv.index("--speculative-config") + 1] == json.dumps(expected)


@pytest.mark.parametrize(
    ("name", "expected"),
    [
        (
            "eagle",
            {
                "method": "eagle",
                "num_speculative_tokens": 3,
                "model": "yuhuili/EAGLE-LLaMA3.1-Instruct-8B",
            },
        ),
        ("suffix", {"method": "suffix", "num_speculative_tokens": 3}),
    ],
)
def test_eagle_and_suffix_map_too(
    vllm: Callable[..., Any], name: str, expected: dict[str, Any]
) -> None:
    runtime = vllm(f"drafter={name}", "runtime.draft_model_path=yuhuili/EAGLE-LLaMA3.1-Instruct-8B")
    assert spec_config(runtime.build_argv(8123)) == expected


def test_server_settings_become_their_flags(vllm: Callable[..., Any]) -> None:
    argv = vllm(
        "quantization=bf16",
        "runtime.max_model_len=32768",
        "runtime.kv_cache_dtype=fp8",
        "runtime.prefix_caching=false",
        "runtime.gpu_memory_utilization=0.85",
        "runtime.served_model_name=qwen",
        "runtime.model_path=/models/q",
        "runtime.executable=/opt/vllm/bin/vllm",
        "runtime.extra_args=[--tensor-parallel-size,2]",
    ).build_argv(9000)
    assert argv == [
        "/opt/vllm/bin/vllm",
        "serve",
        "/models/q",
        "--host",
        "127.0.0.1",
        "--port",
        "9000",
        "--gpu-memory-utilization",
        "0.85",
        "--max-model-len",
        "32768",
        "--kv-cache-dtype",
        "fp8",
        "--served-model-name",
        "qwen",
        "--max-num-seqs",
        "256",
        "--max-num-batched-tokens",
        "8192",
        "--disable-prefix-caching",
        "--enable-prompt-tokens-details",
        "--jit-monitor-verbose",
        "--tensor-parallel-size",
        "2",
    ]  # bf16's engine_names.vllm is null: no --quantization


def test_nvfp4_passes_vllms_own_scheme_name(vllm: Callable[..., Any]) -> None:
    argv = vllm("quantization=nvfp4").build_argv(8123)
    assert argv[argv.index("--quantization") + 1] == "modelopt_fp4"


@pytest.mark.parametrize("drafter", ["eagle3", "dflash"])
def test_a_drafter_without_its_weights_is_refused(vllm: Callable[..., Any], drafter: str) -> None:
    with pytest.raises(RuntimeFailure) as err:
        vllm(f"drafter={drafter}").build_argv(8123)
    assert (err.value.status, err.value.kind) == ("refused", "missing_model")


def test_a_model_without_hf_id_or_path_is_refused(vllm: Callable[..., Any]) -> None:
    with pytest.raises(RuntimeFailure) as err:
        vllm("model=tiny").build_argv(8123)
    assert err.value.kind == "missing_model"


def test_the_server_runs_in_dev_mode_for_the_cache_reset(vllm: Callable[..., Any]) -> None:
    env = vllm().server_env(8123)
    assert env["VLLM_SERVER_DEV_MODE"] == "1" and env["VLLM_NO_USAGE_STATS"] == "1"
    assert (
        "VLLM_CPU_OMP_THREADS_BIND" not in env and "HF_HUB_OFFLINE" not in env
    )  # a GPU box, a hub model


# -- counters --------------------------------------------------------------------------------------


def window(runtime: Any) -> Any:
    return counter_window(runtime, "vllm")


def test_counters_give_the_windows_acceptance(vllm: Callable[..., Any]) -> None:
    delta = window(vllm("drafter=mtp", "k=3"))
    assert (delta.drafts, delta.draft_tokens, delta.accepted) == (11, 33, 26)
    assert delta.accepted_per_position == (10, 9, 7)
    assert acceptance_rate(delta) == pytest.approx(0.787879, abs=1e-6)
    assert tokens_per_pass(delta) == pytest.approx(3.363636, abs=1e-6)
    assert acceptance_by_position(delta) == pytest.approx([0.909091, 0.818182, 0.636364], abs=1e-6)


def test_counters_give_the_windows_tokens(vllm: Callable[..., Any]) -> None:
    delta = window(vllm("drafter=mtp", "k=3"))
    assert delta.prompt_tokens == 2078
    assert delta.cached_prompt_tokens == 2064
    assert delta.generation_tokens == 38 == 1 + delta.drafts + delta.accepted


def test_cumulative_counters_are_not_the_window(vllm: Callable[..., Any]) -> None:
    after = vllm("drafter=mtp", "k=3").map_counters(
        promtext.parse(fixture("vllm", "metrics_after.txt"))
    )
    assert (after.drafts, after.draft_tokens, after.accepted) == (6275, 18825, 12284)
    assert acceptance_rate(after) == pytest.approx(0.652537, abs=1e-6)
    assert after.extra["prefix_cache_queries_total"] == 266058
    assert after.extra["prefix_cache_hits_total"] == after.cached_prompt_tokens == 148304


def test_without_spec_decode_series_acceptance_is_unknown(vllm: Callable[..., Any]) -> None:
    text = (
        "\n".join(
            line
            for line in fixture("vllm", "metrics_after.txt").splitlines()
            if "spec_decode" not in line
        )
        + "\n"
    )
    counters = vllm().map_counters(promtext.parse(text))
    assert (
        counters.drafts is None
        and counters.accepted is None
        and counters.accepted_per_position is None
    )
    assert acceptance_rate(counters.delta(counters)) is None
    assert counters.generation_tokens == 18554


def test_counters_sum_over_data_parallel_engines(vllm: Callable[..., Any]) -> None:
    text = (
        "# TYPE vllm:spec_decode_num_drafts_total counter\n"
        'vllm:spec_decode_num_drafts_total{engine="0",model_name="m"} 10.0\n'
        'vllm:spec_decode_num_drafts_total{engine="1",model_name="m"} 5.0\n'
        "# TYPE vllm:spec_decode_num_accepted_tokens_per_pos_total counter\n"
        'vllm:spec_decode_num_accepted_tokens_per_pos_total{engine="0",model_name="m",position="0"} 7.0\n'
        'vllm:spec_decode_num_accepted_tokens_per_pos_total{engine="1",model_name="m",position="0"} 3.0\n'
        'vllm:spec_decode_num_accepted_tokens_per_pos_total{engine="0",model_name="m",position="1"} 4.0\n'
        'vllm:spec_decode_num_accepted_tokens_per_pos_total{engine="1",model_name="m",position="1"} 1.0\n'
    )
    counters = vllm("drafter=mtp", "k=2").map_counters(promtext.parse(text))
    assert counters.drafts == 15
    assert counters.accepted_per_position == (10, 5)


def test_counters_read_over_http(vllm: Callable[..., Any], monkeypatch: pytest.MonkeyPatch) -> None:
    runtime = vllm("drafter=mtp", "k=3", "runtime.url=http://vllm.test")
    mock(runtime, monkeypatch, {"GET /metrics": (200, fixture("vllm", "metrics_after.txt"))})
    assert runtime.counters().drafts == 6275
    mock(runtime, monkeypatch, {})
    assert runtime.counters().drafts is None  # 404: nothing known, no exception


# -- streams ---------------------------------------------------------------------------------------


def test_completion_stream_becomes_a_trace(vllm: Callable[..., Any]) -> None:
    runtime = vllm("drafter=mtp", "k=3")
    trace = to_trace("r", sse_raw("vllm", "stream_completion.sse"), runtime.stream_details)
    assert trace.error is None
    assert trace.first_token_at == T0  # chunk 0, whose text is three spaces
    assert trace.completion_tokens == 38 and trace.token_source == "server"
    assert trace.prompt_tokens == 2078
    assert trace.cached_prompt_tokens == 2064
    assert trace.finish_reason == "length"
    assert trace.text == (
        '    """Return True if n is a prime number."""\n    if n < 2:\n        return False\n'
        "    i = 2\n    while i * i <= n:\n        if"
    )
    assert len(trace.events) == 12


def test_chat_stream_skips_the_role_chunk(vllm: Callable[..., Any]) -> None:
    runtime = vllm()
    trace = to_trace("r", sse_raw("vllm", "stream_chat.sse"), runtime.stream_details)
    assert trace.first_token_at == T0 + DT  # index 1: the role chunk carries no text
    assert (trace.completion_tokens, trace.prompt_tokens, trace.cached_prompt_tokens) == (
        35,
        1062,
        1056,
    )
    assert trace.finish_reason == "stop"
    assert trace.text is not None and trace.text.startswith("A prefix cache keeps")


def test_per_request_metrics_object_is_kept_as_engine_timings(vllm: Callable[..., Any]) -> None:
    raw = sse_raw("vllm", "stream_completion.sse")
    last = dict(raw.chunks[-1][1], metrics={"speculative_decoding": {"num_spec_steps": 11}})
    raw.chunks[-1] = (raw.chunks[-1][0], last)
    trace = to_trace("r", raw, vllm().stream_details)
    assert trace.engine_timings == {"speculative_decoding": {"num_spec_steps": 11}}


def test_request_body_asks_for_usage_on_every_chunk(vllm: Callable[..., Any]) -> None:
    runtime = vllm("runtime.served_model_name=qwen")
    body = runtime.body(
        Request(request_id="r", prompt="hi", prompt_tokens=1, max_tokens=8, thinking=False)
    )
    assert body["model"] == "qwen"
    assert body["stream_options"] == {"include_usage": True, "continuous_usage_stats": True}
    assert body["chat_template_kwargs"] == {"enable_thinking": False}
    assert body["ignore_eos"] is True and body["stream"] is True
    plain = runtime.body(
        Request(request_id="r", prompt="hi", prompt_tokens=1, max_tokens=8, chat=False)
    )
    assert "chat_template_kwargs" not in plain and plain["prompt"] == "hi"


# -- engine facts, tokenizer, cache ----------------------------------------------------------------

ENGINE_ROUTES = {
    "GET /health": (200, ""),
    "GET /version": (200, json.loads(fixture("vllm", "version.json"))),
    "GET /v1/models": (200, json.loads(fixture("vllm", "models.json"))),
    "GET /metrics": (200, fixture("vllm", "metrics_after.txt")),
}


def test_engine_info_from_version_models_and_cache_config(
    vllm: Callable[..., Any], monkeypatch: pytest.MonkeyPatch
) -> None:
    runtime = vllm("drafter=mtp", "runtime.url=http://vllm.test")
    mock(runtime, monkeypatch, ENGINE_ROUTES)
    info = runtime.start()
    assert info.runtime == "vllm" and info.version == "0.33.0"
    assert info.kv_cache_tokens == 45187 * 16 == 722992
    assert info.details["max_model_len"] == 131072
    assert info.details["cache_config"]["gpu_memory_utilization"] == "0.92"
    assert info.details["spec_decode_metrics"] is True
    assert (
        runtime.served_model() == "Qwen/Qwen3.8-27B-FP8"
    )  # the reached server's name, not model.hf_id


def test_engine_info_without_version_falls_back_to_the_config(
    vllm: Callable[..., Any], monkeypatch: pytest.MonkeyPatch
) -> None:
    runtime = vllm("runtime.url=http://vllm.test", "runtime.version=0.32.1")
    mock(runtime, monkeypatch, {"GET /health": (200, "")})
    info = runtime.start()
    assert info.version == "0.32.1" and info.kv_cache_tokens is None


def test_an_unreachable_url_is_refused(
    vllm: Callable[..., Any], monkeypatch: pytest.MonkeyPatch
) -> None:
    runtime = vllm("runtime.url=http://vllm.test")
    mock(runtime, monkeypatch, {"GET /health": (503, "")})
    with pytest.raises(RuntimeFailure) as err:
        runtime.start()
    assert (err.value.status, err.value.kind) == ("refused", "unreachable")


def test_tokenize_and_detokenize_use_vllms_bodies(
    vllm: Callable[..., Any], monkeypatch: pytest.MonkeyPatch
) -> None:
    runtime = vllm("runtime.served_model_name=qwen")
    seen: list[httpx.Request] = []
    mock(
        runtime,
        monkeypatch,
        {
            "POST /tokenize": (
                200,
                {"count": 3, "max_model_len": 131072, "tokens": [785, 3974, 13876]},
            ),
            "POST /detokenize": (200, {"prompt": "The quick brown"}),
        },
        seen,
    )
    assert runtime.tokenize("The quick brown") == [785, 3974, 13876]
    assert runtime.detokenize([785, 3974, 13876]) == "The quick brown"
    assert json.loads(seen[0].content) == {
        "model": "qwen",
        "prompt": "The quick brown",
        "add_special_tokens": False,
    }
    assert json.loads(seen[1].content) == {"model": "qwen", "tokens": [785, 3974, 13876]}


def test_tokenize_says_none_when_the_server_cannot(
    vllm: Callable[..., Any], monkeypatch: pytest.MonkeyPatch
) -> None:
    runtime = vllm()
    mock(runtime, monkeypatch, {"POST /tokenize": (400, {"error": "bad"})})
    assert runtime.tokenize("x") is None and runtime.detokenize([1]) is None


@pytest.mark.parametrize(("status", "confirmed"), [(200, True), (404, False)])
def test_prefix_cache_reset_is_confirmed_only_by_200(
    vllm: Callable[..., Any], monkeypatch: pytest.MonkeyPatch, status: int, confirmed: bool
) -> None:
    runtime = vllm()
    seen: list[httpx.Request] = []
    mock(runtime, monkeypatch, {"POST /reset_prefix_cache": (status, "")}, seen)
    assert runtime.reset_prefix_cache() is confirmed
    assert [(r.method, r.url.path) for r in seen] == [("POST", "/reset_prefix_cache")]


def test_conf_file_documents_every_runtime_key() -> None:
    assert_conf_documents_every_runtime_key("vllm")


def test_a_sampling_request_asks_for_token_ids_and_seeds(vllm: Callable[..., Any]) -> None:
    body = vllm().body(
        Request(
            request_id="r",
            prompt="hi",
            prompt_tokens=1,
            max_tokens=4,
            temperature=0.7,
            top_p=0.9,
            seed=17,
            token_ids=True,
        )
    )
    assert body["return_token_ids"] is True and body["seed"] == 17 and body["top_p"] == 0.9


def test_tokens_that_decode_to_no_text_yet_are_still_tokens(vllm: Callable[..., Any]) -> None:
    """Byte-level tokens of a partial UTF-8 character arrive with empty content: with
    `return_token_ids` each chunk's ids say what was generated."""
    raw = sse_raw("vllm", "stream_chat.sse")
    chunks = [(t, c) for t, c in raw.chunks if c.get("choices") and c["choices"][0].get("delta")]
    t0 = chunks[0][0]
    raw.chunks[:] = [
        (
            t0 + 0.01 * i,
            {
                "id": "x",
                "choices": [{"index": 0, "delta": {"content": ""}, "token_ids": [200 + i]}],
            },
        )
        for i in range(4)
    ]
    trace = to_trace("r", raw, vllm().stream_details)
    assert trace.error is None and trace.token_ids == (200, 201, 202, 203)
    assert sum(e.tokens for e in trace.events) == 4
