"""What a simulated server decides at start: cost models, context, cache layout, memory; and
the engine built from them (what the runtime adapter and the HTTP server both serve)."""

from __future__ import annotations

import hashlib
import math
from dataclasses import dataclass

import numpy as np

from specexp import __version__
from specexp.measure.events import EngineInfo, RuntimeFailure
from specexp.roofline.costmodel import CostModel
from specexp.sim.context import context_limit
from specexp.sim.drafting import AcceptanceModel, DraftCost
from specexp.sim.engine import SimEngine
from specexp.sim.kvcache import CacheLayout, block_tokens, cache_hits, page_aligned_block
from specexp.sim.memory_plan import ENGINE_RESERVED_GIB, MemoryPlan, memory_plan, refusal
from specexp.sim.profile import EngineProfile, calibration, load_profile
from specexp.spec.experiment import ExperimentSpec
from specexp.spec.hardware import HardwareSpec
from specexp.spec.runtime import SimRuntimeSpec

GIB = 1024**3
START_SEED_STEP = 1_000_003
"""A later server start's acceptance draws: the seed moved this far per start (a fresh sequence)."""


@dataclass(frozen=True)
class ServerPlan:
    target: CostModel
    """The target model's forward passes on this engine (its own per-layer overhead, where it has one)."""
    prefill: CostModel
    """The same passes with the engine's prefill kernels' share of compute (`target` when that is 1)."""
    draft_model: CostModel | None
    k: int
    max_model_len: int
    context_note: str | None
    layout: CacheLayout
    memory: MemoryPlan
    profile: EngineProfile


def plan_server(
    spec: ExperimentSpec,
    reserved_gib: float = ENGINE_RESERVED_GIB,
    profile: EngineProfile | None = None,
) -> ServerPlan:
    """The server's start-time decisions; RuntimeFailure where a real engine refuses to start.
    `profile` replaces runtime.engine's (a calibration trying figures)."""
    rt = spec.runtime
    if not isinstance(rt, SimRuntimeSpec):
        raise TypeError(f"the simulator plans runtime=sim's servers, not runtime={rt.name}")
    profile = profile or load_profile(rt.engine, spec.hardware.name)
    hardware = spec.hardware
    if profile.layer_overhead_us is not None:  # the engine's own kernels' fixed cost per layer
        hardware = hardware.model_copy(update={"layer_overhead_us": profile.layer_overhead_us})
    tp = rt.tensor_parallel
    target = CostModel.build(hardware, spec.model, spec.quantization, rt.kv_cache_dtype, tp)
    prefill = target
    if profile.prefill_compute != 1.0:
        prefill = CostModel.build(
            prefill_hardware(hardware, profile.prefill_compute),
            spec.model,
            spec.quantization,
            rt.kv_cache_dtype,
            tp,
        )
    draft_model = None
    if spec.drafter.cost.uses_draft_model and spec.draft_model is not None:
        # run by the same engine, split as the target is (vLLM's draft_tensor_parallel_size
        # defaults to the target's): its own per-layer cost too
        draft_model = CostModel.build(
            hardware, spec.draft_model, spec.quantization, rt.kv_cache_dtype, tp
        )
    k = spec.draft_tokens
    context = context_limit(spec, k)
    if isinstance(context, RuntimeFailure):
        raise context
    max_model_len, note = context
    hybrid_block = profile.hybrid_block_tokens if spec.model.architecture == "hybrid" else None
    if (
        spec.model.architecture == "hybrid"
        and hybrid_block is None
        and profile.hybrid_block_rule == "page_aligned"
    ):
        hybrid_block = page_aligned_block(target.shape, target.kv_bytes, target.state_dtype, k)
    block = block_tokens(
        rt.cache_block_tokens or hybrid_block or profile.cache_block_tokens,
        spec.model.cache_block_tokens,
        spec.model.cache_block_tokens_speculative,
        k > 0,
    )
    layout = CacheLayout.build(
        enabled=rt.prefix_caching,
        hits=cache_hits(rt.version, rt.prefix_cache_broken_versions),
        block=block,
        max_num_batched_tokens=rt.max_num_batched_tokens,
        state_bytes=target.state_bytes / tp,  # each GPU's share of a sequence's state
        drop_last_block=profile.drafter_recomputes_last_block
        and k > 0
        and spec.drafter.reads_hidden_states,
        states=profile.hybrid_states,
        tail_tokens=profile.hybrid_tail_tokens,
    )
    memory = memory_plan(
        spec,
        target,
        draft_model,
        k=k,
        layout=layout,
        max_model_len=max_model_len,
        reserved_gib=reserved_gib,
        profile=profile,
    )
    refused = refusal(spec, memory)
    if refused is not None:
        raise RuntimeFailure("refused", *refused)
    return ServerPlan(target, prefill, draft_model, k, max_model_len, note, layout, memory, profile)


def prefill_hardware(hw: HardwareSpec, share: float) -> HardwareSpec:
    """`hw` with its achieved GEMM and attention compute scaled by `share` (an engine's prefill kernels)."""
    if share == 1.0:
        return hw
    a = hw.achieved
    achieved = a.model_copy(
        update={
            "compute": min(a.compute * share, 1.0),
            "compute_by_dtype": {d: min(f * share, 1.0) for d, f in a.compute_by_dtype.items()},
            "attention_compute": min(
                (a.attention_compute if a.attention_compute is not None else a.compute) * share,
                1.0,
            ),
        }
    )
    return hw.model_copy(update={"achieved": achieved})


def start_pace(spec: ExperimentSpec, profile: EngineProfile, server_start: int) -> float:
    """This start's factor on every step's time: 1 for a job of one start; with
    `workload.server_starts` > 1, exp(start_spread x z), z a standard normal drawn from the job's
    spec and the start's number (each start of each cell a draw of its own, the same on every run)."""
    if spec.workload.server_starts < 2 or not profile.start_spread:
        return 1.0
    blob = f"{spec.model_dump_json(exclude={'experiment', 'stated', 'requested_k'})}#{server_start}"
    seed = int.from_bytes(hashlib.sha256(blob.encode()).digest()[:8], "big")
    return math.exp(profile.start_spread * float(np.random.default_rng(seed).standard_normal()))


def start_engine(
    spec: ExperimentSpec, profile: EngineProfile | None = None, server_start: int = 0
) -> tuple[EngineInfo, SimEngine]:
    """Plan the server and build its engine (the job's `server_start`-th start: its own pace and
    acceptance draws); RuntimeFailure where a real engine refuses."""
    rt = spec.runtime
    plan = plan_server(spec, profile=profile)
    target, memory, layout, k = plan.target, plan.memory, plan.layout, plan.k
    profile = plan.profile
    draft = acceptance = None
    if k > 0:
        draft = DraftCost(
            spec.drafter,
            target,
            plan.draft_model,
            spec.quantization,
            catch_up=profile.draft_model_catch_up,
            round_overhead_passes=profile.drafter_round_overhead_passes.get(spec.drafter.name),
        )
        acceptance = AcceptanceModel(
            spec.drafter,
            spec.workload.acceptance_class,
            spec.quantization.name,
            spec.seed + START_SEED_STEP * server_start,
        )
    engine = SimEngine(
        target,
        draft,
        acceptance,
        k,
        max_num_batched_tokens=rt.max_num_batched_tokens,
        max_num_seqs=min(rt.max_num_seqs, memory.max_running or rt.max_num_seqs),
        layout=layout,
        memory=memory,
        profile=profile,
        prefill_target=plan.prefill,
        drafter=spec.drafter.name,
        cuda_graph_max_tokens=rt.cuda_graph_max_tokens if isinstance(rt, SimRuntimeSpec) else None,
    )
    engine.pace = start_pace(spec, profile, server_start)
    details = {
        "weight_gib": round(memory.weight_bytes / GIB, 2),
        "activation_gib": round(memory.activation_bytes / GIB, 2),
        "kv_pool_gib": round(memory.kv_bytes / GIB, 2),
        "kv_bytes_per_token": round(memory.token_bytes),
        "params_b": round(target.shape.total_params / 1e9, 2),
        "max_model_len": plan.max_model_len,
        "cache_block_tokens": layout.block_tokens,
        "prefix_cache_hits": layout.enabled and layout.hits,
        "engine_profile": profile.name,
        "engine_calibration": calibration(profile, spec),
    }
    if engine.pace != 1.0:
        details["start_pace"] = round(engine.pace, 4)
    if target.state_bytes:
        details["linear_state_mib_per_seq"] = round(target.state_bytes / 1024**2, 1)
    if plan.context_note:
        details["context_note"] = plan.context_note
    if memory.max_running is not None:  # a pool of states of its own bounds the batch (SGLang)
        details["state_slots"] = memory.state_slots
        details["max_running_requests"] = memory.max_running
    info = EngineInfo(
        runtime="sim",
        version=rt.version or f"specexp-sim {__version__} ({profile.name} profile)",
        kv_cache_tokens=memory.kv_cache_tokens,
        details=details,
    )
    return info, engine
