"""A short Poisson run against a real llama-server: requests leave on their schedule, the load is
delivered, and SLO scores are recorded."""

from __future__ import annotations

from pathlib import Path

import pytest

from specexp.measure.arrivals import schedule
from specexp.measure.request_log import read_requests
from tests.integration.conftest import results, run_specexp

pytestmark = pytest.mark.slow

TINY = (
    "runtime=llamacpp",
    "model=tiny",
    "quantization=f32",
    "hardware=cpu",
    "workload.output_tokens=8",
    "runtime.extra_args=[-t,2]",
    "drafter=none",
    "baseline=false",
)


def test_a_poisson_run_sends_on_schedule_and_records_rates_and_slo(
    llama_server: Path, tmp_path: Path
) -> None:
    done = run_specexp(
        tmp_path,
        *TINY,
        "workload.request_rate=[4]",
        "workload.num_requests=8",
        "workload.concurrency=[4]",
        "slo.e2e_s=30",
    )
    assert done.returncode == 0, done.stderr
    [record] = results(tmp_path)
    assert record["status"] == "ok", record["error"]
    [m] = record["measurements"]
    assert m["conditions"]["request_rate"] == 4
    assert len(m["requests"]) == 8
    metrics = m["metrics"]
    assert metrics["scheduled_rate_rps"] > 0 and metrics["achieved_rate_rps"] > 0
    assert m["load_delivered"] is True
    assert 0.0 <= metrics["slo_attainment"] <= 1.0
    assert metrics["goodput_rps"] <= metrics["achieved_rate_rps"] * (1 + 1e-9)
    # the requests were due at the seed's Poisson schedule, and each left no earlier than due
    job = next(p.parent for p in tmp_path.rglob("result.json"))
    lines = [line for line in read_requests(job) if not line["warmup"]]
    due = [line["sent_at"] - line["behind_schedule_s"] for line in lines]
    planned = schedule(8, 4.0, "poisson", 1.0, 0)
    assert [d - due[0] for d in due] == pytest.approx(planned, abs=1e-3)
    assert all(line["behind_schedule_s"] >= 0 and line["send_lag_s"] >= 0 for line in lines)
