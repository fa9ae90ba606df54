"""results.jsonl and the flat table carry every figure the report shows, the read-time judgments
included, and load in duckdb and pandas with the vocabulary's types."""

from __future__ import annotations

import json
import shutil
import subprocess
import sys
from pathlib import Path

import duckdb
import pytest

import specexp.results
from specexp.record import find_records
from specexp.report.build import build_report
from specexp.report.markdown import render_markdown
from specexp.run.summary import write_sweep_outputs

FIXTURES = Path(__file__).resolve().parents[1] / "fixtures" / "records"


@pytest.fixture()
def sweep(tmp_path: Path) -> Path:
    """The measured fixtures (llama-server, a noisy draft model and its baseline at c = 1 and 4),
    with their results.jsonl written as a sweep writes it."""
    root = tmp_path / "sweep"
    shutil.copytree(FIXTURES / "measured", root)
    write_sweep_outputs(root)
    return root


def test_results_jsonl_carries_the_judgments_the_report_shows(sweep: Path) -> None:
    lines = [json.loads(x) for x in (sweep / "results.jsonl").read_text().splitlines()]
    drafted = {
        line["conditions"]["concurrency"]: line
        for line in lines
        if line["conditions"]["drafter"] != "none"
    }
    assert drafted[1]["judgments"]["output_identical"] is True  # judged from the completion digests
    assert drafted[4]["judgments"]["output_identical"] is False
    baseline = next(line["run_id"] for line in lines if line["conditions"]["drafter"] == "none")
    report = render_markdown(build_report(find_records([sweep]), sweep))
    # the run measured 1 and 4 streams: both rows are in the concurrency table, over aggregate_tps
    for c, noise in ((1, True), (4, False)):
        j = drafted[c]["judgments"]
        assert j["baseline_run_id"] == baseline and j["speedup_metric"] == "aggregate_tps"
        low, high = j["speedup_interval"]
        assert low <= j["speedup_vs_baseline"] <= high and (low <= 1 <= high) is noise
        shown = f"{j['speedup_vs_baseline']:.2f}× \\[{low:.2f}–{high:.2f}\\]" + (
            " (within noise)" if noise else " |"
        )
        assert j["speedup_within_noise"] is noise and shown in report, (
            shown
        )  # the figure the report prints, with its interval


def test_results_jsonl_loads_in_duckdb_with_the_judgments(sweep: Path) -> None:
    rows = duckdb.sql(
        "select conditions.drafter as drafter, conditions.concurrency as c, metrics.aggregate_tps as tps, "
        "judgments.output_identical as identical, judgments.speedup_vs_baseline as speedup "
        f"from read_json_auto('{sweep / 'results.jsonl'}') order by drafter, c"
    ).fetchall()
    assert [(d, c, identical) for d, c, _, identical, _ in rows] == [
        ("draft_model", 1, True),
        ("draft_model", 4, False),
        ("none", 1, None),
        ("none", 4, None),
    ]
    assert rows[0][4] == pytest.approx(rows[0][2] / rows[2][2])


def test_the_typed_table_from_a_folder_equals_the_one_from_its_results_jsonl(sweep: Path) -> None:
    folder, committed = specexp.results.load(sweep), specexp.results.load(sweep / "results.jsonl")
    assert folder.equals(committed) and len(folder) == 4
    assert (
        str(folder["concurrency"].dtype) == "Int64" and str(folder["decode_tps"].dtype) == "Float64"
    )
    assert (
        str(folder["output_identical"].dtype) == "boolean"
        and str(folder["drafter"].dtype) == "string"
    )
    none = folder[folder["drafter"] == "none"]
    assert none["k"].isna().all() and none["speedup_vs_baseline"].isna().all()  # unknown, not 0
    drafted = folder[(folder["drafter"] == "draft_model") & (folder["concurrency"] == 4)]
    assert drafted["speedup_metric"].item() == "aggregate_tps"


def test_the_report_command_writes_the_table_as_csv_and_jsonl(sweep: Path, tmp_path: Path) -> None:
    for fmt in ("csv", "jsonl"):
        out = tmp_path / f"table.{fmt}"
        done = subprocess.run(
            [sys.executable, "-m", "specexp.report", str(sweep), "--format", fmt, "-o", str(out)],
            capture_output=True,
            text=True,
            check=False,
        )
        assert done.returncode == 0, done.stderr
        reader = "read_csv_auto" if fmt == "csv" else "read_json_auto"
        got = duckdb.sql(
            f"select drafter, concurrency, speedup_vs_baseline from {reader}('{out}') "
            "where drafter <> 'none' order by concurrency"
        ).fetchall()
        table = specexp.results.load(sweep)
        want = (
            table[table["drafter"] != "none"]
            .sort_values("concurrency")["speedup_vs_baseline"]
            .tolist()
        )
        assert [row[2] for row in got] == pytest.approx(want)
