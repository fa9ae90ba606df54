"""runtime=vllm on output recorded from a real vLLM 0.26.0 with CUDA on an H200 (tests/fixtures/engines/vllm/
h200-0.26.0, see the README there): the paths vLLM says it chose, the compile lines that make a window
unclean, and the argv of a model served without weights."""

from __future__ import annotations

import json
from collections.abc import Callable
from pathlib import Path
from typing import Any

import pytest

from specexp.runtimes.base import runtime_for
from specexp.runtimes.vllm.facts import COMPILE_DURING_WINDOW, engine_paths
from tests.support.engines import fixture

REAL = "h200-0.26.0"


def log(name: str) -> str:
    return fixture("vllm", f"{REAL}/{name}")


def test_the_dense_servers_paths_are_read_from_its_log() -> None:
    paths = engine_paths(log("server_dense.log"))
    assert paths["attention_backend"] == "FLASH_ATTN" and paths["model_runner"] == "V2"
    assert (
        paths["async_scheduling"] == "enabled" and paths["cudagraph_mode"] == "FULL_AND_PIECEWISE"
    )
    assert paths["max_num_batched_tokens"] == 8192 and paths["load_format"] == "dummy"
    assert paths["jit_monitor"] == "warn" and paths["init_engine_s"] > 0
    assert (
        "attention_block_size" not in paths and "mamba_cache_mode" not in paths
    )  # dense: nothing to say


def test_ngram_turns_vllm_to_its_v1_runner_without_async_scheduling() -> None:
    paths = engine_paths(log("server_ngram.log"))
    assert paths["model_runner"] == "V1" and paths["async_scheduling"] == "disabled"


def test_the_hybrid_servers_block_mamba_mode_and_gdn_kernel_are_read() -> None:
    paths = engine_paths(log("server_hybrid_mtp.log"))
    assert (
        paths["attention_block_size"] == 800 and paths["mamba_cache_mode"] == "align"
    )  # 784 without MTP
    assert paths["gdn_prefill_backend"] == "Triton/FLA" and paths["model_runner"] == "V1"
    assert paths["async_scheduling"] == "enabled"  # MTP keeps it


@pytest.mark.parametrize("name", ["server_ngram.log", "server_hybrid_mtp.log"])
def test_every_compile_the_monitor_logged_is_recognised(name: str) -> None:
    lines = log(name).splitlines()
    compiles = [line for line in lines if "compilation during inference:" in line]
    assert compiles  # the monitor logged compiles while serving (in warm-up windows)
    assert [line for line in lines if COMPILE_DURING_WINDOW.search(line)] == compiles
    # its start-up line names the same words, and is not a compile
    assert any("Kernel JIT monitor activated" in line for line in lines)


@pytest.fixture
def vllm(
    make_spec: Callable[..., Any], tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> Callable[..., Any]:
    monkeypatch.setenv("SPECEXP_VLLM", "vllm")
    monkeypatch.setenv("SPECEXP_CACHE", str(tmp_path / "cache"))
    return lambda *overrides: runtime_for("vllm")(
        make_spec("runtime=vllm", "hardware=h200", "quantization=bf16", *overrides), tmp_path
    )


def flag(argv: list[str], name: str) -> str:
    return argv[argv.index(name) + 1]


def test_a_model_served_without_weights_is_its_config_only_folder(
    vllm: Callable[..., Any], tmp_path: Path
) -> None:
    runtime = vllm("model=qwen3-8b", "runtime.load_format=dummy")
    argv = runtime.build_argv(8000)
    folder = Path(argv[2])
    assert (
        folder.is_relative_to(tmp_path / "cache" / "models") and (folder / "config.json").is_file()
    )
    assert (
        flag(argv, "--load-format") == "dummy" and flag(argv, "--served-model-name") == "qwen3-8b"
    )
    assert "--language-model-only" not in argv
    assert runtime.served_model() == "qwen3-8b"
    assert runtime.server_env(8000)["HF_HUB_OFFLINE"] == "1"


def test_the_hybrid_is_served_as_its_language_model_with_vllms_own_mtp(
    vllm: Callable[..., Any],
) -> None:
    argv = vllm("model=qwen3.8-27b", "runtime.load_format=dummy", "drafter=mtp", "k=3").build_argv(
        8000
    )
    assert "--language-model-only" in argv  # the written vision config is a stub
    assert json.loads(flag(argv, "--speculative-config")) == {
        "method": "mtp",
        "num_speculative_tokens": 3,
    }


def test_the_draft_model_and_the_eagle3_head_are_written_too(vllm: Callable[..., Any]) -> None:
    draft = json.loads(
        flag(
            vllm(
                "model=qwen3-8b",
                "runtime.load_format=dummy",
                "drafter=draft_model",
                "draft_model=qwen3-8b-2layer",
                "k=4",
            ).build_argv(8000),
            "--speculative-config",
        )
    )
    assert Path(draft["model"]).name.startswith("qwen3-8b-2layer-config-")
    head = json.loads(
        flag(
            vllm("model=qwen3-8b", "runtime.load_format=dummy", "drafter=eagle3").build_argv(8000),
            "--speculative-config",
        )
    )
    assert head["method"] == "eagle3" and Path(head["model"]).name.startswith(
        "qwen3-8b-eagle3-config-"
    )
    assert json.loads((Path(head["model"]) / "config.json").read_text())["architectures"] == [
        "LlamaForCausalLMEagle3"
    ]


def test_weights_named_by_path_are_served_as_they_are(vllm: Callable[..., Any]) -> None:
    argv = vllm(
        "model=qwen3-8b", "runtime.load_format=dummy", "runtime.model_path=/models/q"
    ).build_argv(8000)
    assert argv[2] == "/models/q" and flag(argv, "--load-format") == "dummy"
    assert "--served-model-name" not in argv
