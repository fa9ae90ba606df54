"""benchmarks/gpu/compare.py and trace_report.py read typed records (`find_records`, `RunRecord`):
their tables and data lines from simulated records written by `python -m specexp runtime=sim`."""

from __future__ import annotations

import json
import shutil
import statistics
from pathlib import Path
from typing import Any

import pytest

from benchmarks.gpu import compare, trace_report
from specexp.record import RunRecord, read_record

OVERRIDES = [
    "runtime=sim",
    "hardware=h200",
    "model=qwen3-8b",
    "quantization=bf16",
    "drafter=none",
    "workload=concurrency",
    "workload.concurrency=[1,8]",
    "workload.prompt_tokens=512",
    "workload.output_tokens=32",
    "workload.repeats=1",
    "runtime.max_model_len=2048",
]


def _rewrite(path: Path, change: Any) -> None:
    data = json.loads(path.read_text(encoding="utf-8"))
    change(data)
    path.write_text(json.dumps(data, indent=2) + "\n", encoding="utf-8")
    read_record(path)  # still a record of the schema


def _as_measured(data: dict[str, Any]) -> None:
    """The simulator's record as a measured one: half the decode speed, engine timings, telemetry."""
    data["provenance"]["server_argv"] = ["llama-server", "-ngl", "all"]
    data["provenance"]["engine_info"] = {"version": "b1", "llama_cpp_commit": "0c1e57098"}
    for i, m in enumerate(data["measurements"]):
        m["metrics"]["decode_tps"] /= 2
        m["metrics"]["energy_j_per_token"] = 1.5 + i
        m["metrics"]["mean_power_w"] = 600.0 + i
        m["engine_timings"] = [
            {"predicted_per_second": 40.0 + i},
            {"predicted_per_second": 42.0 + i},
            {"prompt_ms": 1},
        ]
        m["telemetry"] = [
            {
                "devices": ["NVIDIA H200"],
                "driver": "580",
                "sm_clock_mhz_mean": 1980.0,
                "memory_used_mib_max": 81000.0 + i,
            }
        ]


def _as_failed(data: dict[str, Any]) -> None:
    data.update(
        run_id="failed-1",
        status="failed",
        measurements=[],
        error={"kind": "server_exited", "message": "llama-server exited with 1", "log_tail": ""},
    )


@pytest.fixture(scope="module")
def roots(tmp_path_factory: pytest.TempPathFactory) -> tuple[Path, Path]:
    from tests.conftest import run_specexp

    tmp = tmp_path_factory.mktemp("gpu")
    sim, measured = tmp / "sim", tmp / "measured"
    done = run_specexp("-m", *OVERRIDES, f"hydra.sweep.dir={sim / 'decode'}")
    assert done.returncode == 0, done.stderr[-2000:]
    shutil.copytree(sim / "decode", measured / "decode")
    (result,) = sorted((measured / "decode").rglob("result.json"))
    _rewrite(result, _as_measured)
    failed = measured / "decode" / "zz-failed" / "result.json"
    failed.parent.mkdir()
    shutil.copy(result, failed)
    _rewrite(failed, _as_failed)
    return measured, sim


def _table_rows(md: str, part: str) -> list[list[str]]:
    section = md.split(f"## {part}\n", 1)[1].split("\n## ", 1)[0]
    lines = [
        line
        for line in section.splitlines()
        if line.startswith("| ") and not line.startswith("| drafter")
    ]
    return [[cell.strip() for cell in line.strip("|").split("|")] for line in lines]


def test_compare_tables_and_records(roots: tuple[Path, Path], tmp_path: Path) -> None:
    measured, sim = roots
    md_path, jsonl_path = compare.write(measured, sim, tmp_path)
    md = md_path.read_text(encoding="utf-8")
    (record,) = [
        r
        for p, r in [(p, read_record(p)) for p in sorted(measured.rglob("result.json"))]
        if r.status == "ok"
    ]
    (sim_record,) = [read_record(p) for p in sorted(sim.rglob("result.json"))]

    assert "- run `failed-1`: **failed** (server_exited): llama-server exited with 1" in md
    assert (
        "llama-server -ngl all" in md
        and "build_info `b1`" in md
        and "GPU: NVIDIA H200, driver 580" in md
    )
    rows = _table_rows(md, "decode")
    assert len(rows) == 2
    head = ["drafter", "c", "prompt tok"] + [
        f"{n} {k}" for n in compare.DECODE_METRICS for k in ("meas", "sim", "ratio")
    ]
    head += ["engine", "J/tok", "W", "SM MHz", "GPU mem MiB"]
    for i, (row, m, s) in enumerate(
        zip(rows, record.measurements, sim_record.measurements, strict=True)
    ):
        cells = dict(zip(head, row, strict=True))
        assert (cells["drafter"], cells["c"], cells["prompt tok"]) == (
            "none",
            str(m.conditions.concurrency),
            str(m.conditions.prompt_tokens),
        )
        assert cells["decode_tps meas"] == compare._fmt(m.metrics.decode_tps)
        assert cells["decode_tps sim"] == compare._fmt(s.metrics.decode_tps)
        assert cells["decode_tps ratio"] == "2.00"
        assert cells["ttft_s ratio"] == "1.00"
        assert cells["tokens_per_pass meas"] == compare._fmt(m.metrics.tokens_per_pass)
        assert cells["engine"] == compare._fmt(statistics.median([40.0 + i, 42.0 + i]))
        assert (cells["J/tok"], cells["W"]) == (compare._fmt(1.5 + i), compare._fmt(600.0 + i))
        assert (cells["SM MHz"], cells["GPU mem MiB"]) == ("1,980", f"{81000 + i:,}")
    assert "| no drafter, concurrency 8 | decode_tps | 2.00-2.00 |" in md

    lines = [json.loads(line) for line in jsonl_path.read_text(encoding="utf-8").splitlines()]
    assert [line["status"] for line in lines] == ["ok", "ok", "failed"]
    assert lines[2]["error"] == {
        "kind": "server_exited",
        "message": "llama-server exited with 1",
        "log_tail": "",
    }
    assert lines[2]["measured"] is None and lines[2]["simulated"] is None
    raw = json.loads(
        next(
            p for p in sorted(measured.rglob("result.json")) if "zz-failed" not in str(p)
        ).read_text()
    )
    raw_sim = json.loads(next(sim.rglob("result.json")).read_text())
    for line, m, s in zip(lines, raw["measurements"], raw_sim["measurements"], strict=False):
        assert line["measured"] == m  # the record's own form, as result.json holds it
        assert line["simulated"] == s["metrics"] and line["simulated_conditions"] == s["conditions"]
        assert line["ratio"]["decode_tps"] == pytest.approx(2.0)


def test_trace_record_lines(roots: tuple[Path, Path]) -> None:
    measured, _ = roots
    path = next(p for p in sorted(measured.rglob("result.json")) if "zz-failed" not in str(p))
    raw = json.loads(path.read_text(encoding="utf-8"))
    lines = [
        json.loads(line)
        for line in trace_report.record_lines(
            RunRecord.model_validate_json(path.read_bytes()), "decode"
        )
    ]
    assert [line["measured"] for line in lines] == raw["measurements"]
    assert {(line["part"], line["status"]) for line in lines} == {("decode", "ok")}
    assert lines[0]["engine_info"] == raw["provenance"]["engine_info"]
    assert lines[0]["server_argv"] == ["llama-server", "-ngl", "all"]
