"""The studies' facts about Qwen3.8-27B FP8 on the DGX Spark, and the simulator's figures fitted
to them: the KV capacities the study's servers reported (the engine's reserved memory), the base
decode rate (the Spark's achieved bandwidth), the drafters' costs per drafted token, and the
NVFP4-over-FP8 decay under concurrency. benchmarks/calibration.py prints them beside the studies'.
"""

from __future__ import annotations

from collections.abc import Sequence
from typing import Any

import numpy as np

from specexp.roofline.costmodel import CostModel, Slice
from specexp.spec.experiment import (
    DrafterSpec,
    ExperimentSpec,
    ModelSpec,
    QuantizationSpec,
    RuntimeSpec,
    WorkloadSpec,
)
from specexp.spec.hardware import HardwareSpec

# --- memory: the KV capacities the study reports -----------------------------------------

SPARK_CAPACITY = (
    (0.44, False, 348_497),
    (0.44, True, 271_315),
    (0.85, True, 959_920),
)
"""(gpu_memory_utilization, prefix caching, KV tokens reported): docs/studies.md, Qwen3.8-27B FP8 on the
DGX Spark. The study's servers ran MTP (k = 3) on vLLM; whether prefix caching was on at 0.85 is
not said, so vLLM's default (on) is assumed."""


def spark_spec(
    utilization: float, prefix_caching: bool, drafter: str = "mtp", k: int | None = 3
) -> ExperimentSpec:
    """The study's server: Qwen3.8-27B FP8 on the DGX Spark, runtime=sim defaults otherwise."""
    from specexp.run.compose import load_option

    def opt(cls: type, group: str, name: str) -> Any:
        return load_option(cls, group, name, group)

    runtime = opt(RuntimeSpec, "runtime", "sim").model_copy(
        update={"gpu_memory_utilization": utilization, "prefix_caching": prefix_caching}
    )
    return ExperimentSpec(
        hardware=opt(HardwareSpec, "hardware", "dgx_spark"),
        model=opt(ModelSpec, "model", "qwen3.8-27b"),
        quantization=opt(QuantizationSpec, "quantization", "fp8"),
        runtime=runtime,
        drafter=opt(DrafterSpec, "drafter", drafter),
        workload=opt(WorkloadSpec, "workload", "fresh_generation"),
        k=k if drafter != "none" else None,
    )


def kv_tokens(spec: ExperimentSpec, reserved_gib: float) -> int:
    """KV tokens the simulated server reports, with `reserved_gib` held by the engine."""
    from specexp.sim.context import context_limit
    from specexp.sim.kvcache import CacheLayout, block_tokens
    from specexp.sim.memory_plan import memory_plan

    rt, k = spec.runtime, spec.draft_tokens
    target = CostModel.build(spec.hardware, spec.model, spec.quantization, rt.kv_cache_dtype)
    context = context_limit(spec, k)
    assert not isinstance(context, Exception)
    block = block_tokens(
        rt.cache_block_tokens,
        spec.model.cache_block_tokens,
        spec.model.cache_block_tokens_speculative,
        k > 0,
    )
    layout = CacheLayout.build(
        enabled=rt.prefix_caching,
        hits=True,
        block=block,
        max_num_batched_tokens=rt.max_num_batched_tokens,
        state_bytes=target.state_bytes,
    )
    plan = memory_plan(
        spec, target, None, k=k, layout=layout, max_model_len=context[0], reserved_gib=reserved_gib
    )
    return plan.kv_cache_tokens


def fit_reserved() -> tuple[float, float]:
    """(engine-reserved GiB, rms relative error) that best reproduce SPARK_CAPACITY.

    Reported tokens fall linearly with the reserve, so the least squares has a closed form."""
    specs = [(spark_spec(u, pc), tokens) for u, pc, tokens in SPARK_CAPACITY]
    at0 = np.array([kv_tokens(s, 0.0) / t for s, t in specs])
    at1 = np.array([kv_tokens(s, 1.0) / t for s, t in specs])
    slope = at0 - at1
    reserved = float((at0 - 1) @ slope / (slope @ slope))
    err = at0 - slope * reserved - 1
    return reserved, float(np.sqrt(np.mean(err**2)))


# --- the studies' Spark facts: base decode, drafting costs ---------------------------------

SPARK_BASE_PASSES_PER_S = 7.88
"""docs/studies.md: base decode of Qwen3.8-27B FP8 on the DGX Spark without drafting."""
DRAFT_COST_PER_TOKEN = {"mtp": (3, 1 / 6.5), "dspark": (7, 0.046)}
"""docs/studies.md, worked back from measured pass rates on the Spark (FP8): drafter -> (k measured,
cost per drafted token in target passes): DSpark about 0.046 (a ceiling of ~21x base); MTP's
sequential head with a full lm_head per draft token implies a ceiling of about 6.5x."""
SPARK_CONTEXT = 232
"""Mean context of a fresh_generation request (32-token prompt, 400 tokens out)."""


def _spark(drafter: str = "none", k: int | None = None) -> tuple[ExperimentSpec, CostModel]:
    spec = spark_spec(0.9, True, drafter, k)
    return spec, CostModel.build(
        spec.hardware, spec.model, spec.quantization, spec.runtime.kv_cache_dtype
    )


def spark_pass_seconds(hw: HardwareSpec | None = None) -> float:
    """One single-sequence decode pass of the FP8 model on the Spark (at `hw`'s figures)."""
    spec, target = _spark()
    if hw is not None:
        target = CostModel.build(hw, spec.model, spec.quantization, spec.runtime.kv_cache_dtype)
    return target.pass_seconds([Slice(tokens=1, context=SPARK_CONTEXT, logits=1)])


def spark_bandwidth() -> float:
    """The Spark's achieved bandwidth fraction that gives SPARK_BASE_PASSES_PER_S (bisection)."""
    spec, _ = _spark()
    lo, hi = 0.05, 1.0
    for _ in range(60):
        mid = (lo + hi) / 2
        hw = spec.hardware.model_copy(
            update={"achieved": spec.hardware.achieved.model_copy(update={"bandwidth": mid})}
        )
        lo, hi = (mid, hi) if 1 / spark_pass_seconds(hw) < SPARK_BASE_PASSES_PER_S else (lo, mid)
    return (lo + hi) / 2


def draft_cost_per_token(drafter: str, k: int) -> float:
    """Simulated drafting cost per drafted token on the Spark (FP8, one sequence), in target passes
    (the fixed cost of a round, `round_overhead_passes`, apart)."""
    from specexp.sim.drafting import DraftCost

    spec, target = _spark(drafter, k)
    verify = [Slice(tokens=k + 1, context=SPARK_CONTEXT, logits=k + 1, state_writes=k + 1)]
    seconds = DraftCost(spec.drafter, target, None, spec.quantization).draft_seconds(k, verify)
    return seconds / k / spark_pass_seconds()


def drafter_efficiency(drafter: str) -> float:
    """The drafter's kernel_efficiency that reproduces DRAFT_COST_PER_TOKEN (cost is 1 / efficiency)."""
    k, per_token = DRAFT_COST_PER_TOKEN[drafter]
    spec, _ = _spark(drafter, k)
    return spec.drafter.cost.kernel_efficiency * draft_cost_per_token(drafter, k) / per_token


def nvfp4_advantage(batches: Sequence[int] = (1, 2, 4, 8, 16, 32)) -> dict[int, float]:
    """NVFP4-over-FP8 decode step speed on the Spark, without a drafter, by sequences per step
    (the studies: it decays to about zero by 16 as the steps turn compute-bound)."""
    from specexp.run.compose import load_option
    from specexp.spec.experiment import QuantizationSpec

    spec, fp8 = _spark()
    q = load_option(QuantizationSpec, "quantization", "nvfp4", "quantization")
    nvfp4 = CostModel.build(spec.hardware, spec.model, q, spec.runtime.kv_cache_dtype)
    out = {}
    for batch in batches:
        step = [Slice(tokens=1, context=400, logits=1)] * batch
        out[batch] = fp8.pass_seconds(step) / nvfp4.pass_seconds(step)
    return out
