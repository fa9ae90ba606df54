"""The conditions of vocabulary.md section 1: facts about how a number was obtained.

Every measurement carries every one of them (None when unknown, never omitted).
"""

from __future__ import annotations

from typing import Any

from specexp.plan import effective_k
from specexp.spec import ExperimentSpec

CONDITIONS: dict[str, str] = {
    "hardware": "device id from conf/hardware/",
    "gpu_count": "accelerators used by the server",
    "gpu_shared": "other engines resident on the same device while measuring",
    "gpu_memory_utilization": "fraction of device memory the engine may take",
    "model": "target model id from conf/model/",
    "quantization": "weight scheme from conf/quantization/",
    "kv_cache_dtype": "KV cache element type",
    "max_model_len": "longest request the server accepts (runtime.max_model_len, else the model's native context)",
    "runtime": "sim, vllm, sglang, llamacpp, ollama, openai",
    "runtime_version": "version string reported by the engine itself",
    "drafter": "none, mtp, dspark, dflash, eagle3, eagle, ngram, draft_model, suffix",
    "k": "draft tokens proposed per step; null when drafter is none",
    "drafter_config": "engine-specific drafter shape where k alone does not say it",
    "draft_model": "the separate draft model or drafter weights (a conf/model id, or runtime.draft_model_path); null when the drafter has none of its own",
    "workload": "workload id with its version (edit_heavy@1)",
    "prompt_tokens": "prompt length in the target model's own tokens, as counted by the server",
    "output_tokens": "requested max_tokens",
    "ignore_eos": "generation forced to output_tokens",
    "concurrency": "requests in flight at once",
    "cache": "cold or warm",
    "prefix_caching": "engine's prefix cache enabled",
    "thinking": "reasoning mode of the chat template on",
    "temperature": "sampling temperature",
    "repeats": "independent repetitions behind the figure",
    "source": "measured, simulated or cited",
}


def draft_model_of(spec: ExperimentSpec) -> str | None:
    """Which drafter weights a job used, where the drafter has its own: the draft model's id, or
    the path / id given in runtime.draft_model_path (DFlash, DSpark, EAGLE-3 checkpoints)."""
    if spec.drafter.kind == "none":
        return None
    if spec.runtime.draft_model_path:
        return spec.runtime.draft_model_path
    if spec.drafter.cost.uses_draft_model and spec.draft_model is not None:
        return spec.draft_model.name
    return None


def run_conditions(spec: ExperimentSpec, runtime_version: str | None, source: str) -> dict[str, Any]:
    """The conditions fixed for a whole job; measurement-level ones are None here."""
    w = spec.workload
    values: dict[str, Any] = {
        "hardware": spec.hardware.name,
        "gpu_count": spec.hardware.gpu_count,
        "gpu_shared": spec.gpu_shared,
        "gpu_memory_utilization": spec.runtime.gpu_memory_utilization,
        "model": spec.model.name,
        "quantization": spec.quantization.name,
        "kv_cache_dtype": spec.runtime.kv_cache_dtype,
        "max_model_len": spec.runtime.max_model_len or spec.model.max_position_embeddings,
        "runtime": spec.runtime.name,
        "runtime_version": runtime_version,
        "drafter": spec.drafter.name,
        "k": effective_k(spec),
        "drafter_config": None,
        "draft_model": draft_model_of(spec),
        "workload": f"{w.name}@{w.version}",
        "prompt_tokens": None,
        "output_tokens": w.output_tokens,
        "ignore_eos": w.ignore_eos,
        "concurrency": None,
        "cache": None,
        "prefix_caching": spec.runtime.prefix_caching,
        "thinking": w.thinking,
        "temperature": w.temperature,
        "repeats": w.repeats,
        "source": source,
    }
    assert list(values) == list(CONDITIONS)
    return values
