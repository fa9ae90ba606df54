"""The real-time server (specexp.simserve) hands a step's tokens on when the engine does: with an
engine profile's async_output, a step's tokens leave only once the next step is launched, and a step
launched kernel by kernel (a hybrid model's prefill) holds back the tokens of the step before it. The
chunks a client receives must carry the times the batch simulator's trace gives the same tokens."""

from __future__ import annotations

import asyncio
from collections.abc import Callable
from typing import Any

from specexp.simserve.realtime import Delivery, Job, RealTimeEngine

SPEED = 50.0
"""Simulated seconds per wall second: the test takes a fraction of a second."""


def _job(rid: str, prompt: int, out: int, seen: dict[str, list[Delivery]]) -> Job:
    def sink(job: Job, delivery: Delivery, final: bool) -> bool:
        seen.setdefault(job.request_id, []).append(delivery)
        return True

    return Job(rid, prompt, out, tuple(f"{rid}-{i}" for i in range(prompt)), sink)


def test_tokens_held_behind_a_kernel_by_kernel_prefill_leave_at_the_engines_times(
    make_spec: Callable[..., Any],
) -> None:
    spec = make_spec("hardware=h200", "model=qwen3.8-27b", "quantization=bf16")
    engine = RealTimeEngine(spec, speed=SPEED)
    assert engine.sim.held.enabled  # the vllm profile: async_output
    seen: dict[str, list[Delivery]] = {}

    jobs = [_job("decoding", 64, 24, seen), _job("prefilling", 6000, 2, seen)]

    # a few decode steps in (simulated time, whatever the machine's pace), a long prompt arrives
    jobs[1].arrived = engine.t0 + 0.2 / SPEED

    async def drive() -> None:
        task = asyncio.create_task(engine.run())
        first, second = engine.submit(jobs[0]), engine.submit(jobs[1])
        await asyncio.wait_for(asyncio.gather(first, second), timeout=30)
        task.cancel()

    asyncio.run(drive())
    decoding = seen["decoding"]
    assert sum(d.tokens for d in decoding) == 24
    assert jobs[0].seq is not None
    seq_events = jobs[0].seq.events
    # every chunk at the time the engine's trace gives its tokens, in order
    assert [d.sim_t for d in decoding] == [e.t for e in seq_events if e.tokens]
    assert all(d.scheduled == engine.wall(d.sim_t) for d in decoding)
    # and the step before the long prefill left only once that prefill had been launched: a gap
    # between two chunks of at least the prefill's launch, longer than any decode step's
    gaps = sorted(b.sim_t - a.sim_t for a, b in zip(decoding, decoding[1:]))
    assert gaps[-1] > 3 * gaps[len(gaps) // 2]
