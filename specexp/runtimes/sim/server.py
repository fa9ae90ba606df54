"""What a simulated server decides at start: cost models, context, cache layout, memory."""

from __future__ import annotations

from dataclasses import dataclass

from specexp.runtimes.base import RuntimeFailure
from specexp.runtimes.sim.context import context_limit
from specexp.roofline.costmodel import CostModel
from specexp.runtimes.sim.kvcache import CacheLayout, block_tokens, cache_hits
from specexp.runtimes.sim.memory import ENGINE_RESERVED_GIB, MemoryPlan, memory_plan, refusal
from specexp.spec import ExperimentSpec


@dataclass(frozen=True)
class ServerPlan:
    target: CostModel
    draft_model: CostModel | None
    k: int
    max_model_len: int
    context_note: str | None
    layout: CacheLayout
    memory: MemoryPlan


def plan_server(spec: ExperimentSpec, reserved_gib: float = ENGINE_RESERVED_GIB) -> ServerPlan:
    """The server's start-time decisions; RuntimeFailure where a real engine refuses to start."""
    rt = spec.runtime
    target = CostModel.build(spec.hardware, spec.model, spec.quantization, rt.kv_cache_dtype)
    draft_model = None
    if spec.drafter.cost.uses_draft_model and spec.draft_model is not None:
        draft_model = CostModel.build(spec.hardware, spec.draft_model, spec.quantization, rt.kv_cache_dtype)
    k = spec.k or 0
    context = context_limit(spec, k)
    if isinstance(context, RuntimeFailure):
        raise context
    max_model_len, note = context
    block = block_tokens(rt.cache_block_tokens, spec.model.cache_block_tokens,
                         spec.model.cache_block_tokens_speculative, k > 0)
    layout = CacheLayout.build(
        enabled=rt.prefix_caching, hits=cache_hits(rt.version, rt.prefix_cache_broken_versions), block=block,
        max_num_batched_tokens=rt.max_num_batched_tokens, state_bytes=target.state_bytes,
    )
    memory = memory_plan(spec, target, draft_model, k=k, layout=layout, max_model_len=max_model_len,
                         reserved_gib=reserved_gib)
    refused = refusal(spec, memory)
    if refused is not None:
        raise RuntimeFailure("refused", *refused)
    return ServerPlan(target, draft_model, k, max_model_len, note, layout, memory)
