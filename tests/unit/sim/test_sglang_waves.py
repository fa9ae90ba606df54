"""SGLang's overlap scheduler forms a burst's next prefill batch once it has launched the one before
(docs/engines.md 2.9, benchmarks/results/sglang_waves.md). A burst of 16 prompts of 512 tokens reaches
its first tokens in waves of 1, then the requests that reached the scheduler within `prefill_launch_ms`
of the first, then the rest, and the first request's token leaves only once the second batch is launched.
Measured on the H200 without a drafter: waves of 1/6/9, 1/7/8, 1/10/5."""

from __future__ import annotations

import math
from collections.abc import Callable
from pathlib import Path
from typing import Any

import pytest
from pydantic import ValidationError

from specexp.runtimes.sim.driver import SimRuntime
from specexp.sim.profile import EngineProfile, load_profile
from specexp.sim.startup import start_engine
from specexp.workloads.driver import drive

Spec = Callable[..., Any]
BURST = (
    "hardware=h200",
    "quantization=bf16",
    "model=qwen3-8b",
    "runtime.engine=sglang",
    "workload=concurrency",
    "workload.concurrency=[1,16,32]",
    "workload.prompt_tokens=512",
    "workload.output_tokens=16",
    "workload.repeats=1",
)
WAVE_GAP_S = 0.004
"""First tokens this close came from one prefill batch (benchmarks/sglang_waves.py WAVE_GAP_MS)."""


def first_tokens(make_spec: Spec, tmp_path: Path, **update: Any) -> dict[int, list[float]]:
    """By concurrency, each request's first token, seconds after its window was sent, in order."""
    spec = make_spec(*BURST)
    profile = load_profile("sglang", "h200").model_copy(update=update)
    runtime = SimRuntime(spec, tmp_path)
    _, runtime.engine = start_engine(spec, profile)
    found = {}
    for window in drive(runtime, spec.workload, marker="waves"):
        sent = min(t.sent_at for t in window.traces)
        found[window.point.concurrency] = sorted(t.token_events[0].t - sent for t in window.traces)
    return found


def waves(times: list[float]) -> list[int]:
    sizes: list[int] = []
    for i, t in enumerate(times):
        if i and t - times[i - 1] <= WAVE_GAP_S:
            sizes[-1] += 1
        else:
            sizes.append(1)
    return sizes


def test_a_burst_splits_where_the_scheduler_formed_each_batch(
    make_spec: Spec, tmp_path: Path
) -> None:
    profile = load_profile("sglang", "h200")
    assert profile.overlap_schedule and profile.prefill_launch_ms > 0
    launch, serial = profile.prefill_launch_ms, profile.request_serial_ms
    overlap = first_tokens(make_spec, tmp_path / "overlap")
    # the front end hands the requests over request_serial_ms apart; the second batch takes those
    # handed over by the end of the first batch's launch ...
    second = math.floor(launch / serial)
    assert waves(overlap[16]) == [1, second, 15 - second]
    assert 6 <= second <= 10  # as measured (benchmarks/results/sglang_waves.md)
    # ... and the third those handed over by the end of the second's launch, long before its pass ends
    third = math.floor(2 * launch / serial) - second
    assert waves(overlap[32])[:3] == [1, second, third]
    # formed only when each prefill ends, the third batch would take every request left that fits
    late = waves(first_tokens(make_spec, tmp_path / "late", overlap_schedule=False)[32])
    assert late[0] == 1 and late[2] > third


def test_the_first_requests_token_waits_for_the_second_batchs_launch(
    make_spec: Spec, tmp_path: Path
) -> None:
    profile = load_profile("sglang", "h200")
    launched = first_tokens(make_spec, tmp_path / "launched")
    at_once = first_tokens(make_spec, tmp_path / "at-once", prefill_launch_ms=0.0)
    # with nothing to launch the burst's first token leaves as a lone request's does
    assert math.isclose(at_once[16][0], at_once[1][0], abs_tol=1e-4)
    # launched in prefill_launch_ms, it leaves once the second batch is launched too, after its own
    # pass (about as long) has ended
    assert launched[16][0] - launched[1][0] > profile.prefill_launch_ms / 1e3 / 2


def test_a_profile_that_builds_prefills_without_overlapping_its_scheduling_is_refused() -> None:
    """`prefill_launch_ms` times the overlap scheduler's launches: without it nothing would read it."""
    figures = load_profile("sglang", "h200").model_dump()
    with pytest.raises(
        ValidationError, match="prefill_launch_ms is used only with overlap_schedule"
    ):
        EngineProfile.model_validate({**figures, "overlap_schedule": False})
    EngineProfile.model_validate({**figures, "overlap_schedule": False, "prefill_launch_ms": 0.0})
