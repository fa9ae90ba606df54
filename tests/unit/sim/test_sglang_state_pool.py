"""SGLang keeps a hybrid model's recurrent states in a pool of their own, and that pool bounds how many
requests run at once (conf/sim_engine/sglang.yaml, docs/engines.md 2.5): with MTP, each running request
also needs a state per draft token, set aside for 48 requests before the split, so the deeper the draft,
the fewer requests run. Measured on the H200 (benchmarks/data/h200-sglang-2026-12-05/): the Qwen3.8-27B
hybrid ran 45 requests at once without a drafter, 27 with MTP at k = 3 and 9 at k = 7, and MTP k = 7's
aggregate stopped growing past 8 streams (258.6, 256.6 and 262.8 tok/s at 8, 16 and 32)."""

from __future__ import annotations

import pytest

from tests.unit.sim.simulated import simulate

HYBRID = [
    "hardware=h200",
    "model=qwen3.8-27b",
    "quantization=bf16",
    "runtime.engine=sglang",
    "runtime.max_model_len=20480",
    "runtime.gpu_memory_utilization=0.85",
]
MEASURED_RUNNING = {0: 45, 3: 27, 7: 9}
"""max_running_requests in each server's log (benchmarks/data/h200-sglang-2026-12-05/)."""


def job(k: int, concurrency: str = "[1]") -> tuple[list[float], int]:
    drafter = ["drafter=mtp", f"k={k}"] if k else ["drafter=none"]
    found, info = simulate(
        [
            *HYBRID,
            *drafter,
            "workload=concurrency",
            f"workload.concurrency={concurrency}",
            "workload.prompt_tokens=512",
            "workload.output_tokens=128",
        ]
    )
    aggregate = [float(m.metrics.aggregate_tps or 0) for m in found]
    return aggregate, int(info.details["max_running_requests"])


@pytest.mark.parametrize("k", sorted(MEASURED_RUNNING))
def test_the_states_pool_bounds_the_running_requests_as_sglang_did(k: int) -> None:
    _, running = job(k)
    assert running == pytest.approx(MEASURED_RUNNING[k], rel=0.15, abs=1)


def test_a_deep_draft_stops_gaining_streams_where_its_states_run_out() -> None:
    deep, running = job(7, "[4,16,32]")
    plain, _ = job(0, "[4,16,32]")
    assert running < 16
    # past its running requests, MTP k = 7 adds streams that only wait ...
    assert deep[2] < 1.25 * deep[1]
    # ... while without a drafter the same streams still add throughput
    assert plain[2] > 1.5 * plain[1] and plain[1] > 2.5 * plain[0]


def test_a_draft_whose_states_leave_no_room_is_refused_at_start() -> None:
    from specexp.measure.events import RuntimeFailure

    # k = 15: 48 requests x 16 draft positions x 147 MiB of states are set aside first
    with pytest.raises(RuntimeFailure) as info:
        job(15)
    assert "recurrent states' pool" in str(info.value) and "lower k" in str(info.value)
