"""Device memory at start: weights, drafter and activations first, the rest is KV cache.

An engine takes gpu_memory_utilization x the device memory it sees, loads the weights (the
target's and the drafter's), profiles the activations of one full batch and the sampler, and
gives what is left to the KV cache. It reports that capacity in tokens, and refuses to start
when the KV cache cannot hold one request of max_model_len (vLLM: "... KV cache is needed,
which is larger than the available KV cache memory"). On a hybrid model each running sequence
also holds its recurrent state, one copy per verify position with a drafter (for rollback),
and with prefix caching the state snapshots of its prefix. An engine may instead keep the states in
a pool of their own, beside the KV cache, which bounds how many requests run at once, and hold only
weights and caches in its share of memory (SGLang: EngineProfile.static_memory_only,
state_pool_ratio).
"""

from __future__ import annotations

from dataclasses import dataclass

from specexp.roofline.costmodel import CostModel
from specexp.sim.drafting import drafter_kv_layers, drafter_weight_bytes
from specexp.sim.kvcache import CacheLayout
from specexp.sim.profile import EngineProfile
from specexp.spec.experiment import ExperimentSpec

GIB = 1024**3
ENGINE_RESERVED_GIB = 2.81
"""Memory an engine holds besides weights, activations and KV: CUDA context, cuBLAS/NCCL
workspaces, CUDA graphs, allocator slack, GiB. Fitted (specexp.fit.spark.fit_reserved, least squares) to
the KV capacities docs/studies.md reports for Qwen3.8-27B FP8 + MTP on the DGX Spark: 348,497 / 271,315
tokens at gpu_memory_utilization 0.44 without / with prefix caching (simulated +1.0 % / +1.7 %) and
959,920 at 0.85 (simulated -9.5 %); benchmarks/results/calibration.md records them."""
ACTIVATION_BYTES = 2.0
"""Activations are bf16."""
SAMPLER_COPIES = 2
"""The sampler's profile run holds fp32 logits and probabilities for max_num_seqs requests (vLLM
profiles the rejection sampler with one draft token per request, so k does not enlarge it)."""


@dataclass(frozen=True)
class MemoryPlan:
    budget_bytes: float
    weight_bytes: float
    kv_bytes: float
    """The KV pool: what is left of the budget."""
    kv_cache_tokens: int
    """The pool in tokens, as the engine reports it."""
    activation_bytes: float = 0.0
    token_bytes: float = 0.0
    """Pool bytes one cached token takes: K and V of every attention layer (target and
    drafter), plus its share of state snapshots."""
    sequence_bytes: float = 0.0
    """Pool bytes a running sequence holds besides its tokens (recurrent state copies)."""
    max_model_len: int = 0
    request_bytes: float = 0.0
    """Pool bytes one request of max_model_len needs."""
    max_running: int | None = None
    """Requests that can run at once where a pool of recurrent states of its own bounds them
    (EngineProfile.state_pool_ratio); None: only the KV pool does."""
    state_slots: int | None = None
    """That pool's states (SGLang's max_mamba_cache_size)."""

    def need(self, tokens: int) -> float:
        """Pool bytes a running sequence of `tokens` tokens holds."""
        return tokens * self.token_bytes + self.sequence_bytes


def activation_bytes(
    spec: ExperimentSpec, target: CostModel, k: int, reserved_gib: float = ENGINE_RESERVED_GIB
) -> float:
    """What the profile run finds besides weights: activations of one full token budget, the
    sampler's logits, and the engine's fixed reserve."""
    m, rt = spec.model, spec.runtime
    q_dim, kv_dim = m.num_attention_heads * m.head_dim, m.num_key_value_heads * m.head_dim
    per_token = (
        2 * m.intermediate_size + 4 * m.hidden_size + q_dim + 2 * kv_dim
    ) * ACTIVATION_BYTES
    sampler = rt.max_num_seqs * (2 if k > 0 else 1) * m.vocab_size * 4.0 * SAMPLER_COPIES
    return rt.max_num_batched_tokens * per_token + sampler + reserved_gib * GIB


def memory_plan(
    spec: ExperimentSpec,
    target: CostModel,
    draft_model: CostModel | None,
    *,
    k: int = 0,
    layout: CacheLayout | None = None,
    max_model_len: int | None = None,
    reserved_gib: float = ENGINE_RESERVED_GIB,
    profile: EngineProfile | None = None,
) -> MemoryPlan:
    """Split the engine's share of one device's memory into weights, activations and KV cache.
    Split over `tensor_parallel` GPUs, each holds its share of the target's weights (a drafter head
    whole: engines replicate it), of every token's KV (as far as there are KV heads to split) and
    of the recurrent state; the KV capacity is in tokens, each of which every GPU holds its share of."""
    hw, tp = spec.hardware, target.tensor_parallel
    device = (hw.engine_memory_gib or hw.memory_gib) * GIB
    budget = device * utilization(spec)
    weights = target.resident_weight_bytes / tp
    if k > 0:
        head = drafter_weight_bytes(spec.drafter, target, spec.quantization, draft_model)
        weights += head / tp if draft_model is not None else head
    # an engine whose share holds only weights and caches keeps its activations outside it
    static = profile is not None and profile.static_memory_only
    activations = 0.0 if static else activation_bytes(spec, target, k, reserved_gib)
    pool = budget - weights - activations
    kv_layers = drafter_kv_layers(spec.drafter) if k > 0 else 0.0
    per_token = (
        target.kv_bytes_per_token + kv_layers * target.kv_bytes_per_token_per_layer
    ) / target.kv_split
    if draft_model is not None and k > 0:
        per_token += draft_model.kv_bytes_per_token / draft_model.kv_split
    snapshot = layout.snapshot_bytes_per_token if layout is not None else 0.0
    per_seq = target.state_bytes * (1 + k) / tp
    length = max_model_len or spec.model.max_position_embeddings
    request = (
        length * per_token
        + per_seq
        + (layout.snapshots(length) * target.state_bytes / tp if layout else 0.0)
    )
    slots = running = None
    if profile is not None and profile.state_pool_ratio is not None and target.state_bytes > 0:
        # the states a prefix keeps come out of their own pool too (SGLang's radix cache)
        pool, slots, running = _state_pool(pool, target.state_bytes / tp, k, profile)
        request = length * per_token
        per_seq = snapshot = 0.0
    tokens = int(max(pool, 0.0) // max(per_token + snapshot, 1.0))
    return MemoryPlan(
        budget_bytes=budget,
        weight_bytes=weights,
        kv_bytes=pool,
        kv_cache_tokens=tokens,
        activation_bytes=activations,
        token_bytes=per_token + snapshot,
        sequence_bytes=per_seq,
        max_model_len=length,
        request_bytes=request,
        max_running=running,
        state_slots=slots,
    )


def _state_pool(
    pool: float, state: float, k: int, profile: EngineProfile
) -> tuple[float, int, int]:
    """(the KV pool, the states' pool in states, the requests that can run at once) where the
    recurrent states have a pool of their own, as SGLang 0.5.12 splits it (model_runner_kv_cache_mixin
    handle_max_mamba_cache, _resolve_max_num_reqs; docs/engines.md 2.5): with a drafter, one state a
    draft position of `state_reserve_requests` requests first, then the states' ratio of the rest."""
    ratio = float(profile.state_pool_ratio or 0.0)
    reserve = profile.state_reserve_requests * (1 + k) * state if k > 0 else 0.0
    rest = max(pool - reserve, 0.0)
    slots = int(rest * ratio / (1 + ratio) // state)
    return rest - slots * state, slots, slots // profile.states_per_request


def utilization(spec: ExperimentSpec) -> float:
    """The simulated engine's share of device memory: it must be stated to simulate memory."""
    value = spec.runtime.gpu_memory_utilization
    if value is None:
        from specexp.measure.events import RuntimeFailure

        raise RuntimeFailure(
            "refused",
            "invalid_config",
            "runtime=sim needs runtime.gpu_memory_utilization (a share of device memory, e.g. 0.9)",
        )
    return value


def refusal(spec: ExperimentSpec, plan: MemoryPlan) -> tuple[str, str] | None:
    """(kind, message) when the engine would refuse to start with this plan, else None."""
    util = utilization(spec)
    hw = spec.hardware
    seen = hw.engine_memory_gib or hw.memory_gib
    if plan.max_running == 0 and plan.weight_bytes < plan.budget_bytes:
        return "kv_cache_too_small", (
            f"the recurrent states' pool holds {plan.state_slots} states, fewer than one running request "
            f"needs, at gpu_memory_utilization {util:g} (weights {plan.weight_bytes / GIB:.1f} GiB): "
            "raise gpu_memory_utilization or lower k"
        )
    if plan.kv_bytes <= 0:
        return "out_of_memory", (
            f"weights need {plan.weight_bytes / GIB:.1f} GiB and activations {plan.activation_bytes / GIB:.1f} GiB "
            f"but only {plan.budget_bytes / GIB:.1f} GiB of {seen:g} GiB is available at gpu_memory_utilization "
            f"{util:g}: no memory is left for the KV cache"
        )
    if plan.request_bytes > plan.kv_bytes:
        return "kv_cache_too_small", (
            f"one request of max_model_len {plan.max_model_len:,} needs {plan.request_bytes / GIB:.2f} GiB "
            f"of KV cache, "
            f"which is larger than the available KV cache memory ({plan.kv_bytes / GIB:.2f} GiB) at "
            f"gpu_memory_utilization {util:g} (weights {plan.weight_bytes / GIB:.1f} GiB, activations "
            f"{plan.activation_bytes / GIB:.1f} GiB); raise gpu_memory_utilization or lower max_model_len"
        )
    return None
