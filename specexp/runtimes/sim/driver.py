"""runtime=sim: the simulator behind the engine seam, answering a sweep in seconds."""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import replace

from specexp.measure.events import Counters, EngineInfo, Request, RequestTrace
from specexp.runtimes.base import Runtime, register
from specexp.sim import sampling
from specexp.sim.engine import SimEngine
from specexp.sim.startup import start_engine
from specexp.spec.runtime import SimRuntimeSpec


@register(SimRuntimeSpec)
class SimRuntime(Runtime[SimRuntimeSpec]):
    """The simulator behind the engine seam; every number it gives is `source: simulated`."""

    source = "simulated"
    reads_prompts = False
    engine: SimEngine

    def start(self) -> EngineInfo:
        """Plan memory and context as a real engine does (RuntimeFailure where it refuses)."""
        info, self.engine = start_engine(self.spec)
        return info

    def run_window(self, requests: Sequence[Request]) -> list[RequestTrace]:
        traces = self.engine.run(requests, self.spec.workload.max_concurrency)
        fault = self.rt.toy_sampler
        if fault is None:
            return traces
        k = self.spec.draft_tokens
        return [
            replace(
                t,
                text=sampling.text_of(
                    sampling.generate(
                        r.prompt, r.max_tokens, k, r.temperature, r.top_p, r.seed or 0, fault
                    )
                ),
            )
            for t, r in zip(traces, requests, strict=True)
        ]

    def counters(self) -> Counters:
        return self.engine.counters()

    def idle(self, seconds: float) -> None:
        self.engine.idle(seconds)

    def reset_prefix_cache(self) -> bool:
        self.engine.reset_prefix_cache()
        return True

    def stop(self) -> None:
        pass
