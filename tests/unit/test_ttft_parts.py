"""TTFT split into the engine's queue, the engine's own time to the first token and the front end
(specexp.measure.ttft_parts; docs/vocabulary.md section 2): from vLLM's per-request metrics, from
llama-server's timings, and from the simulator, which reports the same keys as vLLM."""

from __future__ import annotations

from pathlib import Path

import pytest

from specexp.measure.events import Counters, RequestTrace, TokenEvent
from specexp.measure.metrics import window_metrics
from specexp.measure.ttft_parts import ttft_parts
from tests.unit.sim.test_physics_serving import metrics, run, spec


def trace(ttft: float, timings: dict | None) -> RequestTrace:
    return RequestTrace(
        request_id="r",
        sent_at=10.0,
        events=(TokenEvent(10.0 + ttft, 1), TokenEvent(10.0 + ttft + 0.01, 1)),
        prompt_tokens=100,
        completion_tokens=2,
        engine_timings=timings,
    )


def test_vllms_per_request_metrics_split_the_clients_ttft() -> None:
    vllm = {"queue_time_ms": 4.0, "time_to_first_token_ms": 30.0, "mean_itl_ms": 5.0}
    out = window_metrics([trace(0.050, vllm), trace(0.070, vllm)], Counters(), prefill_only=False)
    assert out["ttft_queue_s"] == pytest.approx(0.004)
    assert out["ttft_engine_s"] == pytest.approx(0.030)
    assert out["ttft_frontend_s"] == pytest.approx(0.060 - 0.034)  # the mean of 0.016 and 0.036


def test_llama_server_gives_the_engine_part_only() -> None:
    parts = ttft_parts(0.2, {"prompt_n": 90, "prompt_ms": 150.0, "cache_n": 10})
    assert parts == {"ttft_queue_s": None, "ttft_engine_s": 0.15, "ttft_frontend_s": None}


@pytest.mark.parametrize(
    "timings",
    [None, {}, {"queue_time_ms": "4"}, {"queue_time_ms": float("nan"), "prompt_ms": -1.0}],
)
def test_what_an_engine_did_not_say_stays_unknown(timings: dict | None) -> None:
    assert set(ttft_parts(0.1, timings).values()) == {None}


def test_the_simulators_parts_are_its_front_end_queue_and_prefill(tmp_path: Path) -> None:
    """One request alone: no queue, the front end is the profile's per-request cost, and the parts
    add up to the TTFT the client saw."""
    s = spec(
        hardware="h200",
        model="qwen3-8b",
        quantization="bf16",
        workload="concurrency",
        work={"concurrency": [1, 8], "prompt_tokens": 512, "output_tokens": 8, "repeats": 1},
        engine="vllm",
    )
    windows = run(s, tmp_path)
    one, burst = (metrics(w) for w in windows[-2:])
    assert one["ttft_queue_s"] == pytest.approx(0.0, abs=1e-9)
    assert one["ttft_frontend_s"] > 0 and one["ttft_engine_s"] > 0
    for m in (one, burst):
        total = m["ttft_queue_s"] + m["ttft_engine_s"] + m["ttft_frontend_s"]
        assert total == pytest.approx(m["ttft_s"], rel=1e-6)
    assert burst["ttft_queue_s"] + burst["ttft_engine_s"] > one["ttft_engine_s"]
