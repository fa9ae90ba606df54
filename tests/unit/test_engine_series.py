"""What the engine was doing during a window: its state read at a fixed interval (the simulator reads
its own scheduler on its clock), kept in the record beside the window's requests, consistent with
the engine's own counters over the window, and drawn in the report on one time axis."""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any

import pytest

from specexp.measure.engine_series import MAX_READINGS, EngineState, Readings, thin
from specexp.measure.events import Counters
from specexp.record import find_records
from specexp.report.blocks import Chart
from specexp.report.engine_timeline import TITLE, chosen, engine_section
from tests.conftest import run_specexp


def _records(sweep: Path) -> list[dict[str, Any]]:
    return [json.loads(p.read_text()) for p in sorted(sweep.glob("*/result.json"))]


@pytest.fixture(scope="module")
def sweep(tmp_path_factory: pytest.TempPathFactory) -> Path:
    out = tmp_path_factory.mktemp("series")
    done = run_specexp(
        "-m",
        "workload=concurrency",
        "workload.concurrency=[1,4]",
        "workload.output_tokens=200",
        "workload.repeats=2",
        "drafter=none,mtp",
        "k=3",
        f"hydra.sweep.dir={out}",
    )
    assert done.returncode == 0, done.stderr
    return out


def test_every_window_has_its_readings_and_its_requests(sweep: Path) -> None:
    for record in _records(sweep):
        for m in record["measurements"]:
            c = m["conditions"]
            # the simulator reads a point's first window only (its repeats differ in acceptance)
            assert c["repeats"] == 2 and m["engine_series"][1] is None
            for s in m["engine_series"][:1]:
                assert s["clock"] == "simulated" and s["interval_s"] == 0.5
                assert s["t"] == sorted(s["t"]) and s["t"][0] == 0.0
                assert len(s["requests"]) == c["concurrency"]
                # every request ran between the window's first and last reading
                for sent, first, last in s["requests"]:
                    assert 0.0 <= sent <= first <= last <= s["t"][-1]
                # the engine ran as many requests at once as the window sent, never more
                assert max(v for v in s["running"] if v is not None) == c["concurrency"]
                assert all(v == 0 for v in s["waiting"])  # the KV cache holds them all


def test_the_readings_counters_add_up_to_the_windows_acceptance(sweep: Path) -> None:
    """The drafted and accepted tokens between the first reading and the last are the window's own:
    their ratio is that window's acceptance rate, as the measurement's samples have it."""
    drafted = [
        m for r in _records(sweep) for m in r["measurements"] if m["conditions"]["drafter"] == "mtp"
    ]
    assert drafted
    for m in drafted:
        s, repeats = m["engine_series"][0], m["samples"]["acceptance_rate"]
        accepted = s["accepted"][-1] - s["accepted"][0]
        draft_tokens = s["draft_tokens"][-1] - s["draft_tokens"][0]
        assert accepted / draft_tokens == pytest.approx(repeats[0])  # the first window's own


def test_the_report_draws_one_window_per_arm_at_its_highest_load(sweep: Path) -> None:
    records = [r for _, r in find_records([sweep])]
    picked = chosen(records)
    assert [(m.conditions.drafter, m.conditions.concurrency) for _, m, _ in picked] == [
        ("none", 4),
        ("mtp", 4),
    ]
    charts = [b for b in engine_section(records) if isinstance(b, Chart)]
    assert len(charts) == 2
    panels = charts[1].spec["vconcat"]
    bars = panels[0]["data"]["values"]
    assert {b["phase"] for b in bars} == {"to first token", "decoding"}
    shares = panels[2]["data"]["values"]
    accepted = [x["share"] for x in shares if x["what"] == "accepted"]
    assert accepted and all(0 <= a <= 1 for a in accepted)
    report = (sweep / "measurements.md").read_text()
    assert f"## {TITLE}" in report and "of the simulator's clock" in report


def test_no_readings_where_the_workload_asks_for_none(tmp_path: Path) -> None:
    done = run_specexp(
        "-m",
        "workload.output_tokens=32",
        "workload.engine_series_interval_s=null",
        f"hydra.sweep.dir={tmp_path}",
    )
    assert done.returncode == 0, done.stderr
    (record,) = _records(tmp_path)
    assert record["measurements"][0]["engine_series"] is None
    assert TITLE not in (tmp_path / "measurements.md").read_text()


def test_a_long_windows_readings_are_thinned_evenly_keeping_both_ends() -> None:
    readings = Readings(0.1, 100.0)
    for i in range(1000):
        readings.add(100.0 + i * 0.1, EngineState(running=float(i), counters=Counters()))
    readings.add(250.0, None)  # a reading that got no answer
    kept = thin(readings.taken, MAX_READINGS)
    assert len(kept) == MAX_READINGS
    assert kept[0] == readings.taken[0] and kept[-1] == readings.taken[-1]
    series = readings.series([])
    assert series is not None and len(series.t) == MAX_READINGS and series.failed == 1
    assert series.running[-1] is None  # the unanswered reading is null, not 0


def test_a_reused_server_reads_at_the_interval_of_the_job_it_serves(
    make_spec: Any, tmp_path: Path
) -> None:
    """A server held for the next job of the same configuration serves that job's spec: its
    readings follow that job's interval, or stop where it asks for none."""
    from specexp.runtimes.base import runtime_for

    setup = ("runtime=llamacpp", "model=tiny", "quantization=f32", "hardware=cpu")
    runtime = runtime_for("llamacpp")(make_spec(*setup), tmp_path)
    first = runtime.engine_series()
    assert first is not None and first.interval_s == 0.5
    runtime.spec = make_spec(*setup, "workload.engine_series_interval_s=0.1")
    second = runtime.engine_series()
    assert second is not None and second.interval_s == 0.1
    runtime.spec = make_spec(*setup, "workload.engine_series_interval_s=null")
    assert runtime.engine_series() is None
