"""Runs from typed records: one per measurement, ids, links, origin; unfinished runs left out."""

from __future__ import annotations

from pathlib import Path

from checkhelp import make_record, make_run

from specexp.check.runs import runs_of
from specexp.record import RunRecord

COND = {
    "hardware": "dgx_spark",
    "model": "qwen3.8-27b",
    "quantization": "fp8",
    "drafter": "none",
    "k": None,
    "concurrency": 1,
    "source": "simulated",
}


def test_runs_of_records_keep_their_link_and_origin(
    sim_results: list[tuple[Path, RunRecord]],
) -> None:
    path, record = sim_results[0]
    runs = runs_of(sim_results[:1])
    assert len(runs) == len(record.measurements)
    assert runs[0].link == str(path) and runs[0].origin == "simulated"
    assert runs_of(sim_results[:1], path.parent.parent)[0].link == f"{path.parent.name}/result.json"


def test_several_measurements_of_one_run_get_distinct_ids() -> None:
    assert [r.id for r in make_run("r", COND, {}, measurements=3)] == ["r#0", "r#1", "r#2"]


def test_unfinished_runs_are_left_out_unless_partial_ones_are_asked_for() -> None:
    assert make_run("r", COND, {}, status="refused") == []
    path, record = make_record("r", COND, {}, status="failed")
    partial = record.model_copy(
        update={
            "measurements": [m.model_copy(update={"partial": True}) for m in record.measurements]
        }
    )
    assert runs_of([(path, partial)]) == []
    assert len(runs_of([(path, partial)], partial=True)) == 1


def test_a_null_condition_is_unknown_but_k_of_no_drafter_is_known() -> None:
    (run,) = make_run("r", {**COND, "runtime_version": None}, {"decode_tps": 5})
    fig = run.figure("decode_tps")
    assert (
        fig is not None and "runtime_version" not in fig.conditions and fig.conditions["k"] is None
    )
    assert run.figure("e2e_tps") is None
