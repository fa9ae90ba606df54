"""runtime=sim: the simulator behind the engine seam, answering a sweep in seconds."""

from __future__ import annotations

import math
from collections.abc import Callable, Sequence
from dataclasses import replace

from specexp.measure.engine_series import EngineState, SteppedSampler
from specexp.measure.events import Counters, EngineInfo, Request, RequestTrace
from specexp.runtimes.base import Runtime, register
from specexp.sim import toy_sampler
from specexp.sim.engine import SimEngine
from specexp.sim.startup import start_engine
from specexp.spec.runtime import SimRuntimeSpec

SIMULATED_READINGS = 40
"""Readings kept of a simulated window (thinned evenly): enough to draw it."""


@register(SimRuntimeSpec)
class SimRuntime(Runtime[SimRuntimeSpec]):
    """The simulator behind the engine seam; every number it gives is `source: simulated`."""

    source = "simulated"
    reads_prompts = False
    engine: SimEngine

    def start(self) -> EngineInfo:
        """Plan memory and context as a real engine does (RuntimeFailure where it refuses)."""
        info, self.engine = start_engine(self.spec, server_start=self.server_start)
        return info

    def run_window(self, requests: Sequence[Request]) -> list[RequestTrace]:
        traces = self.engine.run(requests, self.spec.workload.max_concurrency)
        thinks = self.spec.workload.thinking_tokens
        if thinks is not None:
            traces = [reasoned(t, thinks) if r.thinking else t for t, r in zip(traces, requests)]
        fault = self.rt.toy_sampler
        if fault is None:
            return traces
        k = self.spec.draft_tokens
        return [
            replace(
                t,
                text=toy_sampler.text_of(
                    toy_sampler.generate(
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

    def step_costs(self) -> dict[str, dict[str, float]]:
        return self.engine.costs.snapshot()

    def engine_series(self, repeat: int = 0) -> SteppedSampler | None:
        """The engine's own state after its steps, every interval of its virtual clock, in a
        point's first window only: its repeats differ in their acceptance draws alone, and a
        simulated sweep of thousands of windows keeps its records small."""
        interval = self.spec.workload.engine_series_interval_s
        if interval is None or repeat > 0:
            return None
        engine = self.engine

        def attach(hook: Callable[[], None] | None) -> None:
            engine.observe = None if hook is None else lambda _: hook()

        return SteppedSampler(
            lambda: (engine.clock, state_of(engine)), interval, attach, most=SIMULATED_READINGS
        )

    def reset_prefix_cache(self) -> bool:
        self.engine.reset_prefix_cache()
        return True

    def stop(self) -> None:
        pass


def reasoned(trace: RequestTrace, tokens: int) -> RequestTrace:
    """`trace` as a model that reasons for its first `tokens` tokens streams it: a chunk wholly
    within them is reasoning; the chunk that crosses into the answer is the answer's, as a real
    stream's chunk holding `</think>` and the answer's first words is."""
    events, seen = [], 0
    for e in trace.events:
        seen += e.tokens
        events.append(e._replace(reasoning=e.tokens > 0 and seen <= tokens))
    return replace(trace, events=tuple(events))


def state_of(engine: SimEngine) -> EngineState:
    """What a vLLM server would export of the engine now: requests running and waiting, the KV
    cache's share held by running requests (cached free blocks count as free), the counters. A
    request still in the front end, or one that reached the engine core during the step under way,
    is not the scheduler's yet, so not waiting (vLLM stamps it queued when that step ends)."""
    pool = engine.pool
    used = pool.running / pool.capacity if math.isfinite(pool.capacity) and pool.capacity else None
    waiting = sum(1 for s in engine.waiting if s.queued is not None)
    return EngineState(float(len(engine.running)), float(waiting), used, engine.counters())
