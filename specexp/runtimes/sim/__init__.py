"""runtime=sim: the built-in simulator, answering a sweep from first principles in seconds."""

from __future__ import annotations

from collections.abc import Sequence

from specexp import __version__
from specexp.events import Counters, EngineInfo, Request, RequestTrace
from specexp.plan import effective_k
from specexp.runtimes.base import RUNTIMES, Runtime, RuntimeFailure
from specexp.runtimes.sim.costmodel import CostModel
from specexp.runtimes.sim.drafting import AcceptanceModel, DraftCost
from specexp.runtimes.sim.engine import SimEngine
from specexp.runtimes.sim.memory import memory_plan

GIB = 1024**3


@RUNTIMES.register("sim")
class SimRuntime(Runtime):
    """The simulator behind the engine seam; every number it gives is `source: simulated`."""

    name = "sim"
    source = "simulated"
    engine: SimEngine

    def start(self) -> EngineInfo:
        spec = self.spec
        target = CostModel.build(spec.hardware, spec.model, spec.quantization, spec.runtime.kv_cache_dtype)
        draft_model = None
        if spec.drafter.cost.uses_draft_model and spec.draft_model is not None:
            draft_model = CostModel.build(spec.hardware, spec.draft_model, spec.quantization, spec.runtime.kv_cache_dtype)
        memory = memory_plan(spec, target, draft_model)
        if memory.kv_bytes <= 0:
            raise RuntimeFailure(
                "refused", "out_of_memory",
                f"weights need {memory.weight_bytes / GIB:.1f} GiB but only {memory.budget_bytes / GIB:.1f} GiB "
                f"of {spec.hardware.memory_gib:g} GiB is available at gpu_memory_utilization "
                f"{spec.runtime.gpu_memory_utilization:g}",
            )
        k = effective_k(spec) or 0
        draft = acceptance = None
        if spec.drafter.kind != "none" and k > 0:
            draft = DraftCost(spec.drafter, target, draft_model, spec.quantization)
            acceptance = AcceptanceModel(
                spec.drafter, spec.workload.acceptance_class, spec.quantization.name, spec.seed
            )
        self.engine = SimEngine(
            target, draft, acceptance, k,
            max_num_batched_tokens=spec.runtime.max_num_batched_tokens,
            max_num_seqs=spec.runtime.max_num_seqs,
            prefix_caching=spec.runtime.prefix_caching,
            cache_block_tokens=16,
        )
        return EngineInfo(
            runtime="sim",
            version=spec.runtime.version or f"specexp-sim {__version__}",
            kv_cache_tokens=memory.kv_cache_tokens,
            details={
                "weight_gib": round(memory.weight_bytes / GIB, 2),
                "kv_bytes_per_token": target.kv_bytes_per_token,
                "params_b": round(target.shape.total_params / 1e9, 2),
            },
        )

    def run_window(self, requests: Sequence[Request]) -> list[RequestTrace]:
        return self.engine.run(requests)

    def counters(self) -> Counters:
        return self.engine.counters()

    def reset_prefix_cache(self) -> bool:
        self.engine.reset_prefix_cache()
        return True

    def stop(self) -> None:
        pass
