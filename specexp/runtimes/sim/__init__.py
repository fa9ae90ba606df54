"""runtime=sim: the built-in simulator, answering a sweep from first principles in seconds."""

from __future__ import annotations

from collections.abc import Sequence

from specexp import __version__
from specexp.events import Counters, EngineInfo, Request, RequestTrace
from specexp.runtimes.base import RUNTIMES, Runtime
from specexp.runtimes.sim.drafting import AcceptanceModel, DraftCost
from specexp.runtimes.sim.engine import SimEngine
from specexp.runtimes.sim.server import plan_server

GIB = 1024**3


@RUNTIMES.register("sim")
class SimRuntime(Runtime):
    """The simulator behind the engine seam; every number it gives is `source: simulated`."""

    name = "sim"
    source = "simulated"
    engine: SimEngine

    def start(self) -> EngineInfo:
        """Plan memory and context as a real engine does (RuntimeFailure where it refuses)."""
        spec, rt = self.spec, self.spec.runtime
        plan = plan_server(spec)
        target, memory, layout, k = plan.target, plan.memory, plan.layout, plan.k
        draft = acceptance = None
        if k > 0:
            draft = DraftCost(spec.drafter, target, plan.draft_model, spec.quantization)
            acceptance = AcceptanceModel(spec.drafter, spec.workload.acceptance_class, spec.quantization.name,
                                         spec.seed)
        self.engine = SimEngine(
            target, draft, acceptance, k,
            max_num_batched_tokens=rt.max_num_batched_tokens,
            max_num_seqs=rt.max_num_seqs,
            prefix_caching=rt.prefix_caching,
            cache_block_tokens=layout.block_tokens,
            layout=layout,
            memory=memory,
        )
        details = {
            "weight_gib": round(memory.weight_bytes / GIB, 2),
            "activation_gib": round(memory.activation_bytes / GIB, 2),
            "kv_pool_gib": round(memory.kv_bytes / GIB, 2),
            "kv_bytes_per_token": round(memory.token_bytes),
            "params_b": round(target.shape.total_params / 1e9, 2),
            "max_model_len": plan.max_model_len,
            "cache_block_tokens": layout.block_tokens,
            "prefix_cache_hits": layout.enabled and layout.hits,
        }
        if target.state_bytes:
            details["linear_state_mib_per_seq"] = round(target.state_bytes / 1024**2, 1)
        if plan.context_note:
            details["context_note"] = plan.context_note
        return EngineInfo(runtime="sim", version=rt.version or f"specexp-sim {__version__}",
                          kv_cache_tokens=memory.kv_cache_tokens, details=details)

    def run_window(self, requests: Sequence[Request]) -> list[RequestTrace]:
        return self.engine.run(requests)

    def counters(self) -> Counters:
        return self.engine.counters()

    def reset_prefix_cache(self) -> bool:
        self.engine.reset_prefix_cache()
        return True

    def stop(self) -> None:
        pass
