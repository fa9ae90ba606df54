"""runtime=llamacpp on recorded-style llama-server output (tests/fixtures/engines/llamacpp, numbers
from its README): %g-formatted counters, per-position padding to k, timings, props and slots."""

from __future__ import annotations

import json
from collections.abc import Callable
from pathlib import Path
from typing import Any

import pytest

from specexp.measure.events import RuntimeFailure
from specexp.measure.metrics import acceptance_by_position, acceptance_rate, tokens_per_pass
from specexp.runtimes.base import runtime_for
from specexp.runtimes.http import promtext
from specexp.runtimes.http.client import RawStream, to_trace
from tests.support.engines import DT, T0, fixture, mock

PER_POS = "llamacpp:spec_decode_num_accepted_tokens_per_pos_total"


def without_per_position(text: str) -> str:
    """The exposition of a server that has not drafted yet: no per-position family at all."""
    return "\n".join(line for line in text.splitlines() if "per_pos" not in line) + "\n"


@pytest.fixture
def llamacpp(make_spec: Callable[..., Any], tmp_path: Path) -> Callable[..., Any]:
    return lambda *overrides: runtime_for("llamacpp")(
        make_spec(
            "runtime=llamacpp", "runtime.model_path=/models/Qwen3.8-27B-Q8_0.gguf", *overrides
        ),
        tmp_path,
    )


def window(runtime: Any, before: str | None = None) -> Any:
    """after - before, `before` defaulting to the fixture's metrics_before.txt."""
    first = runtime.map_counters(
        promtext.parse(before if before is not None else fixture("llamacpp", "metrics_before.txt"))
    )
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


def test_per_position_counters_before_drafting_are_unknown_not_zero(
    llamacpp: Callable[..., Any],
) -> None:
    runtime = llamacpp("drafter=mtp", "k=3")
    fresh = runtime.map_counters(
        promtext.parse(without_per_position(fixture("llamacpp", "metrics_before.txt")))
    )
    assert fresh.accepted_per_position is None
    delta = window(runtime, without_per_position(fixture("llamacpp", "metrics_before.txt")))
    assert delta.accepted_per_position == (26526, 20795, 15657)


def test_positions_the_engine_did_not_report_are_not_counted_as_rejected(
    llamacpp: Callable[..., Any],
) -> None:
    runtime = llamacpp(
        "drafter=mtp", "k=5"
    )  # the server drafted 3 positions (its n_max): 4 and 5 are unknown
    counters = runtime.map_counters(promtext.parse(fixture("llamacpp", "metrics_after.txt")))
    assert counters.accepted_per_position == (26526, 20795, 15657)
    assert acceptance_by_position(window(runtime)) == pytest.approx([0.9, 0.7, 0.5])


def test_without_a_drafter_acceptance_is_unknown(llamacpp: Callable[..., Any]) -> None:
    delta = window(llamacpp())
    assert (
        delta.drafts is None
        and delta.accepted_per_position is None
        and acceptance_rate(delta) is None
    )
    assert delta.generation_tokens == 32


def test_completion_stream_becomes_a_trace(llamacpp: Callable[..., Any]) -> None:
    raw = RawStream(sent_at=T0 - 1, status=200)
    for line in fixture("llamacpp", "stream_completion.sse").splitlines():
        if line.startswith("data:") and line[5:].strip() != "[DONE]":
            raw.chunks.append((T0 + DT * len(raw.chunks), json.loads(line[5:].strip())))
    trace = to_trace("r", raw, llamacpp("drafter=mtp", "k=3").stream_details)
    assert trace.error is None
    assert trace.first_token_at == T0  # index 0
    assert (trace.completion_tokens, trace.prompt_tokens, trace.cached_prompt_tokens) == (
        32,
        1290,
        1283,
    )
    assert trace.finish_reason == "length" and len(trace.events) == 32
    timings = trace.engine_timings or {}
    assert (timings["draft_n"], timings["draft_n_accepted"]) == (28, 21)
    assert timings["cache_n"] + timings["prompt_n"] == trace.prompt_tokens


def test_engine_info_from_props_and_slots(
    llamacpp: Callable[..., Any], monkeypatch: pytest.MonkeyPatch
) -> None:
    runtime = llamacpp("drafter=mtp", "k=3", "quantization=q8_0")  # the fixture's GGUF is Q8_0
    mock(
        runtime,
        monkeypatch,
        {
            "GET /props": (200, json.loads(fixture("llamacpp", "props.json"))),
            "GET /slots": (200, json.loads(fixture("llamacpp", "slots.json"))),
        },
    )
    with runtime.sync_client() as client:
        info = runtime.engine_info(client)
    assert info.version == "b1-0c1e570"
    assert info.kv_cache_tokens == 32768
    details = info.details
    assert {k: details[k] for k in ("total_slots", "model_ftype", "speculative")} == {
        "total_slots": 1,
        "model_ftype": "Q8_0",
        "speculative": True,
    }
    assert (details["llama_cpp_commit"], details["llama_cpp_commit_source"]) == (
        "0c1e570",
        "build_info",
    )


def test_tokenize_counts_the_servers_tokens(
    llamacpp: Callable[..., Any], monkeypatch: pytest.MonkeyPatch
) -> None:
    runtime = llamacpp()
    mock(
        runtime,
        monkeypatch,
        {"POST /tokenize": (200, json.loads(fixture("llamacpp", "tokenize.json")))},
    )
    tokens = runtime.tokenize("The quick brown fox jumps over the lazy dog")
    assert tokens is not None and len(tokens) == 9


def test_argv_names_the_spec_type_and_k(llamacpp: Callable[..., Any]) -> None:
    argv = llamacpp("drafter=mtp", "k=3", "runtime.executable=/bin/llama-server").build_argv(8080)
    assert argv[:3] == ["/bin/llama-server", "-m", "/models/Qwen3.8-27B-Q8_0.gguf"]
    assert argv[argv.index("--spec-type") + 1] == "draft-mtp"
    assert argv[argv.index("--spec-draft-n-max") + 1] == "3"
    assert "--spec-draft-model" not in argv


@pytest.mark.parametrize(
    ("ftype", "name"),
    [
        ("all F32", "F32"),
        ("Q4_K - Medium", "Q4_K_M"),
        ("Q8_0", "Q8_0"),
        ("BF16", "BF16"),
        ("Q5_K - Small", "Q5_K_S"),
    ],
)
def test_llama_server_file_types_read_as_gguf_names(ftype: str, name: str) -> None:
    from specexp.runtimes.llamacpp.driver import gguf_file_type

    assert gguf_file_type(ftype) == name


GPU_8B = ("model=qwen3-8b", "quantization=bf16", "hardware=h200")


def test_context_is_max_model_len_times_slots_with_the_host_cache_off(
    llamacpp: Callable[..., Any],
) -> None:
    runtime = llamacpp(*GPU_8B, "runtime.max_model_len=4096", "workload.concurrency=[1,8,32]")
    argv = runtime.build_argv(8080)
    assert (argv[argv.index("-np") + 1], argv[argv.index("-c") + 1]) == ("32", str(4096 * 32))
    assert (
        argv[argv.index("--cache-ram") + 1] == "0"
    )  # cold TTFT without the host prompt cache's copies
    assert (
        argv[argv.index("-ngl") + 1] == "all"
    )  # GPU hardware: offload said, not left to the build
    assert runtime._launch == {
        "ctx_size": 4096 * 32,
        "ctx_per_slot": 4096,
        "host_prompt_cache_mib": 0,
        "gpu_layers": "all",
    }


def test_a_kv_cache_larger_than_the_device_is_refused_with_its_numbers(
    llamacpp: Callable[..., Any],
) -> None:
    # the 8B's native 40,960 tokens x 32 slots: 1.3 M tokens of f16 KV, about 193 GB on a 141 GB card
    runtime = llamacpp(*GPU_8B, "workload.concurrency=[32]")
    with pytest.raises(RuntimeFailure) as refused:
        runtime.build_argv(8080)
    failure = refused.value
    assert (failure.status, failure.kind) == ("refused", "kv_cache_does_not_fit")
    for number in (
        "-c 1,310,720",
        "max_model_len 40,960 x 32 slots",
        "193.3 GB of KV",
        "144 KiB per token",
        "140.4 GiB of hardware=h200",
    ):
        assert number in failure.message
    fits = int(
        failure.message.split("runtime.max_model_len to at most ")[1].split()[0].replace(",", "")
    )
    assert 20_000 < fits < 40_960
    llamacpp(*GPU_8B, "workload.concurrency=[32]", f"runtime.max_model_len={fits}").build_argv(8080)
    with pytest.raises(RuntimeFailure):
        llamacpp(
            *GPU_8B, "workload.concurrency=[32]", f"runtime.max_model_len={fits + 64}"
        ).build_argv(8080)


def test_extra_args_keep_their_own_host_cache_and_offload_and_the_record_says_so(
    llamacpp: Callable[..., Any],
) -> None:
    runtime = llamacpp(
        *GPU_8B, "runtime.max_model_len=4096", "runtime.extra_args=[--cache-ram,8192,-ngl,20]"
    )
    argv = runtime.build_argv(8080)
    assert argv.count("--cache-ram") == 1 and argv.count("-ngl") == 1
    assert (runtime._launch["host_prompt_cache_mib"], runtime._launch["gpu_layers"]) == (8192, "20")


def test_cpu_hardware_leaves_offload_alone(llamacpp: Callable[..., Any]) -> None:
    runtime = llamacpp("model=tiny", "quantization=f32", "hardware=cpu")
    argv = runtime.build_argv(8080)
    assert "-ngl" not in argv and argv[argv.index("--cache-ram") + 1] == "0"
    assert argv[argv.index("-c") + 1] == "2048"


def test_a_draft_model_on_the_gpu_is_offloaded_and_counted_in_the_kv(
    llamacpp: Callable[..., Any],
) -> None:
    draft = (
        "drafter=draft_model",
        "draft_model=qwen3-0.6b",
        "k=4",
        "runtime.draft_model_path=/m/draft.gguf",
    )
    argv = llamacpp(*GPU_8B, *draft, "runtime.max_model_len=4096").build_argv(8080)
    assert argv[argv.index("--spec-draft-model") + 1] == "/m/draft.gguf"
    assert argv[argv.index("-ngld") + 1] == "all"
    alone = llamacpp(*GPU_8B, "workload.concurrency=[32]")
    with pytest.raises(RuntimeFailure) as without_draft:
        alone.build_argv(8080)
    with pytest.raises(RuntimeFailure) as with_draft:
        llamacpp(*GPU_8B, *draft, "workload.concurrency=[32]").build_argv(8080)

    def gb(f):
        return float(f.value.message.split(" GB of KV")[0].rsplit(" ", 1)[1])

    assert gb(with_draft) > gb(without_draft)  # the draft keeps a KV cache of the same context


@pytest.mark.parametrize(
    ("build_info", "commit"), [("b1-0c1e570", "0c1e570"), ("b0-unknown", None)]
)
def test_the_llama_cpp_commit_comes_from_build_info_or_a_file_beside_the_binary(
    tmp_path: Path, build_info: str, commit: str | None
) -> None:
    from specexp.runtimes.llamacpp.driver import COMMIT_FILE, commit_of

    exe = tmp_path / "bin" / "llama-server"
    assert commit_of(build_info, str(exe)) == ((commit, "build_info") if commit else (None, None))
    (tmp_path / COMMIT_FILE).write_text("0c1e57098\n")
    found = commit_of(build_info, str(exe))
    assert found == (
        (commit, "build_info") if commit else ("0c1e57098", str(tmp_path / COMMIT_FILE))
    )


def test_the_default_build_from_the_sdist_is_named_by_the_sdists_commit(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    from specexp.runtimes.llamacpp.driver import commit_of, default_executable

    monkeypatch.setenv("SPECEXP_CACHE", str(tmp_path))
    monkeypatch.delenv("SPECEXP_LLAMA_SERVER", raising=False)
    assert commit_of("b0-unknown", str(default_executable())) == (
        "0c1e57098",
        "llama-cpp-python 0.3.36 sdist CHANGELOG.md",
    )
