"""runtime=vllm with quantization=q4_k_m_bf16: the model's packaged GGUF (and its draft model's),
dequantized into Hugging Face folders by specexp.models.hf_from_gguf, is what `vllm serve` loads;
a model with no packaged GGUF, or a GGUF of another file type, is refused in one line. (The
folders themselves: tests/unit/models/test_hf_from_gguf.py; served by a real vLLM:
reports/cpu_vllm_pair/.)"""

from __future__ import annotations

import json
from collections.abc import Callable
from pathlib import Path
from typing import Any

import pytest

from specexp.measure.conditions import weights_of
from specexp.measure.events import RuntimeFailure
from specexp.models.hf_from_gguf import STAMP
from specexp.runtimes import hf_folders
from specexp.runtimes.base import runtime_for
from specexp.spec.experiment import PackagedWeights

PAIR = ("model=qwen2.5-coder-1.5b", "quantization=q4_k_m_bf16", "hardware=cpu")


@pytest.fixture
def folders(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> dict[str, Path]:
    """Stand-in folders for the packaged files (nothing is fetched): file name -> folder."""
    made: dict[str, Path] = {}

    def folder_for(weights: PackagedWeights, root: Path | None = None) -> Path:
        folder = tmp_path / "hf" / weights.sha256[:16]
        folder.mkdir(parents=True, exist_ok=True)
        held = "Q4_1" if "smollm2" in weights.file.lower() else "Q4_K_M"
        (folder / STAMP).write_text(json.dumps({"format": 1, "file_type": held, "files": {}}))
        made[weights.file] = folder
        return folder

    monkeypatch.setattr(hf_folders, "folder_for", folder_for)
    monkeypatch.setenv("SPECEXP_CACHE", str(tmp_path / "cache"))
    monkeypatch.setenv("SPECEXP_VLLM", str(tmp_path / "venv" / "bin" / "vllm"))
    monkeypatch.delenv("LD_PRELOAD", raising=False)
    return made


@pytest.fixture
def vllm(make_spec: Callable[..., Any], tmp_path: Path) -> Callable[..., Any]:
    return lambda *overrides: runtime_for("vllm")(make_spec("runtime=vllm", *overrides), tmp_path)


def test_the_pair_is_served_from_its_dequantized_folders(
    vllm: Callable[..., Any], folders: dict[str, Path]
) -> None:
    runtime = vllm(*PAIR, "drafter=draft_model", "k=4")
    argv = runtime.build_argv(8123)
    target = folders["qwen2.5-coder-1.5b-instruct-q4_k_m.gguf"]
    draft = folders["qwen2.5-coder-0.5b-instruct-q4_k_m.gguf"]
    assert argv[2] == str(target) and target.name == "cc324af070c2ecbf"
    config = json.loads(argv[argv.index("--speculative-config") + 1])
    assert config == {"method": "draft_model", "num_speculative_tokens": 4, "model": str(draft)}
    assert "--quantization" not in argv  # plain BF16 safetensors: nothing for vLLM to dequantize
    assert argv[argv.index("--served-model-name") + 1] == "qwen2.5-coder-1.5b"
    assert runtime.served_model() == "qwen2.5-coder-1.5b"
    assert runtime.server_env(8123)["HF_HUB_OFFLINE"] == "1"
    assert weights_of(runtime.spec) == "trained"


def test_a_given_model_path_wins(vllm: Callable[..., Any], folders: dict[str, Path]) -> None:
    runtime = vllm(*PAIR, "runtime.model_path=/models/mine")
    assert runtime.build_argv(8123)[2] == "/models/mine" and not folders


def test_a_model_without_a_packaged_gguf_is_refused_in_one_line(
    vllm: Callable[..., Any], folders: dict[str, Path]
) -> None:
    with pytest.raises(RuntimeFailure) as info:
        vllm("model=qwen3-8b", "quantization=q4_k_m_bf16").build_argv(8123)
    assert info.value.kind == "missing_model" and "model=qwen3-8b" in str(info.value)
    assert "no packaged GGUF" in str(info.value) and "\n" not in str(info.value)


def test_a_gguf_of_another_file_type_is_refused(
    vllm: Callable[..., Any], folders: dict[str, Path]
) -> None:
    with pytest.raises(RuntimeFailure) as info:
        vllm("model=smollm2-135m", "quantization=q4_k_m_bf16", "hardware=cpu").build_argv(8123)
    assert info.value.kind == "quantization_mismatch"
    assert "holds Q4_1 weights, not Q4_K_M" in str(info.value)
    # ... and served under the quantization that names its file type
    argv = vllm("model=smollm2-135m", "quantization=q4_1_bf16", "hardware=cpu").build_argv(8123)
    assert argv[2] == str(folders["SmolLM2-135M-Instruct.Q4_1.gguf"])
    assert "--quantization" not in argv


def test_a_fetch_or_conversion_failure_is_refused_with_its_line(
    vllm: Callable[..., Any], folders: dict[str, Path], monkeypatch: pytest.MonkeyPatch
) -> None:
    from specexp.models.hf_from_gguf import GgufConversionError

    def broken(weights: PackagedWeights, root: Path | None = None) -> Path:
        raise GgufConversionError(f"{weights.file}: tensor 'x' has no qwen2 name")

    monkeypatch.setattr(hf_folders, "folder_for", broken)
    with pytest.raises(RuntimeFailure) as info:
        vllm(*PAIR).build_argv(8123)
    assert info.value.kind == "missing_model"
    assert str(info.value) == (
        "model=qwen2.5-coder-1.5b quantization=q4_k_m_bf16: "
        "qwen2.5-coder-1.5b-instruct-q4_k_m.gguf: tensor 'x' has no qwen2 name"
    )


def test_intel_openmp_is_preloaded_on_the_cpu_when_the_venv_has_it(
    vllm: Callable[..., Any], folders: dict[str, Path], tmp_path: Path
) -> None:
    runtime = vllm(*PAIR)
    assert "LD_PRELOAD" not in runtime.server_env(8123)  # no such venv
    binary = tmp_path / "venv" / "bin" / "vllm"
    binary.parent.mkdir(parents=True)
    binary.write_text("#!/bin/sh\n")
    binary.chmod(0o755)
    (tmp_path / "venv" / "lib").mkdir()
    (tmp_path / "venv" / "lib" / "libiomp5.so").write_bytes(b"")
    env = runtime.server_env(8123)
    assert env["LD_PRELOAD"] == str(tmp_path / "venv" / "lib" / "libiomp5.so")
    assert env["VLLM_CPU_OMP_THREADS_BIND"] == "nobind"
