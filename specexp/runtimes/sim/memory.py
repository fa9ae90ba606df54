"""Device memory: weights and drafter first, then what is left at gpu_memory_utilization is KV."""

from __future__ import annotations

from dataclasses import dataclass

from specexp.runtimes.sim.costmodel import CostModel
from specexp.spec import ExperimentSpec

ACTIVATION_RESERVE = 0.04
"""Share of the engine's budget kept for activations and CUDA graphs (assumed)."""


@dataclass(frozen=True)
class MemoryPlan:
    budget_bytes: float
    weight_bytes: float
    kv_bytes: float
    kv_cache_tokens: int


def memory_plan(spec: ExperimentSpec, target: CostModel, draft_model: CostModel | None) -> MemoryPlan:
    """Split the engine's share of device memory into weights, reserve and KV cache."""
    budget = spec.hardware.memory_gib * 1024**3 * spec.runtime.gpu_memory_utilization
    weights = target.weight_bytes + target.shape.lm_head_params * target.quant.bytes_per_weight["embeddings"]
    if not spec.model.tie_word_embeddings:
        weights += 0.0  # input embeddings counted above with the lm_head copy
    if draft_model is not None:
        weights += draft_model.weight_bytes
    kv = budget * (1 - ACTIVATION_RESERVE) - weights
    per_token = max(target.kv_bytes_per_token, 1.0)
    return MemoryPlan(budget, weights, kv, max(0, int(kv // per_token)))
