"""How a simulated server's front end hands a burst to the scheduler (specexp.sim.frontend): one by
one, all together, or the first alone and the rest together (vLLM: the first request of a burst wakes
an idle engine core, which starts a step with it alone)."""

from __future__ import annotations

from dataclasses import dataclass

import pytest

from specexp.sim.frontend import Frontend
from specexp.sim.profile import load_profile


@dataclass
class Request:
    ready: float = 0.0


@pytest.mark.parametrize(
    ("release", "ready_ms"),
    [("each", [11, 12, 13]), ("together", [13, 13, 13]), ("first", [11, 13, 13])],
)
def test_a_burst_leaves_the_serial_stage_as_the_release_says(
    release: str, ready_ms: list[float]
) -> None:
    profile = load_profile("vllm").model_copy(
        update={
            "request_overhead_ms": 10.0,
            "request_overhead_us_per_token": 0.0,
            "request_serial_ms": 1.0,
            "request_serial_release": release,
        }
    )
    front = Frontend(profile)
    burst = [Request() for _ in range(3)]
    for r in burst:
        front.admit(r, 0.0, 512)
    assert [r.ready * 1e3 for r in burst] == pytest.approx(ready_ms)
    late = Request()  # after the serial stage went idle: a spell of its own, handed over at once
    front.admit(late, 1.0, 512)
    assert late.ready == pytest.approx(1.011)
