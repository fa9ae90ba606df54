"""specexp.record and the job that writes it: result.json as docs/vocabulary.md section 3 shows
it, typed by its schema; results.jsonl, atomic writes, a record of another version refused, and a
complete result never replaced by a failure."""

from __future__ import annotations

import json
import os
from collections.abc import Callable
from datetime import datetime
from pathlib import Path
from typing import Any

import pytest

from specexp.measure.conditions import run_conditions
from specexp.record import (
    SCHEMA,
    ErrorInfo,
    Provenance,
    RecordError,
    RunRecord,
    atomic_write,
    complete_result,
    read_record,
    results_lines,
    store,
    write_record,
    write_results_jsonl,
)
from specexp.run.job import run_job
from specexp.run.plan import make_cell
from specexp.spec.metric_defs import COMPARED
from specexp.spec.vocabulary import CONDITIONS

PROVENANCE_KEYS = {
    "specexp_version",
    "git_sha",
    "python",
    "host",
    "started_at",
    "finished_at",
    "overrides",
    "config",
    "server_argv",
    "engine_info",
}

JOB = (
    "drafter=mtp",
    "k=3",
    "workload.output_tokens=24",
    "workload.concurrency=[1,2]",
    "workload.repeats=2",
)


@pytest.fixture(scope="module")
def sim_result(
    tmp_path_factory: pytest.TempPathFactory, make_spec: Callable[..., Any]
) -> tuple[Path, dict[str, Any]]:
    """A real job on the simulator: MTP k=3, two concurrency levels, two repeats."""
    cell = make_cell(make_spec(*JOB))
    job_dir = tmp_path_factory.mktemp("job")
    record = run_job(cell, job_dir, job_dir, list(JOB), cell.spec.model_dump(mode="json"))
    assert record is not None
    return job_dir, json.loads(record.to_json())


def test_condition_vocabulary_is_complete(condition_keys: tuple[str, ...]) -> None:
    assert tuple(CONDITIONS) == condition_keys


def test_result_json_matches_the_record_contract(
    sim_result: tuple[Path, dict[str, Any]], condition_keys: tuple[str, ...]
) -> None:
    job_dir, returned = sim_result
    result = json.loads((job_dir / "result.json").read_text(encoding="utf-8"))
    assert result == returned
    assert result["schema"] == "specexp.result/2" == SCHEMA
    assert result["schema_version"] == 2
    assert isinstance(result["run_id"], str) and result["run_id"]
    assert result["status"] == "ok"
    assert result["error"] is None
    assert set(result["conditions"]) == set(condition_keys)
    assert result["conditions"]["source"] == "simulated"
    assert result["conditions"]["runtime"] == "sim"
    assert result["conditions"]["runtime_version"]
    assert PROVENANCE_KEYS <= set(result["provenance"])
    prov = result["provenance"]
    for stamp in (prov["started_at"], prov["finished_at"]):
        assert datetime.fromisoformat(stamp).tzinfo is not None
    assert prov["overrides"] == list(JOB)
    assert prov["config"]["drafter"]["name"] == "mtp"
    assert prov["engine_info"]["kv_cache_tokens"] > 0


def test_every_measurement_carries_every_condition(
    sim_result: tuple[Path, dict[str, Any]], condition_keys: tuple[str, ...]
) -> None:
    _, result = sim_result
    assert len(result["measurements"]) == 2
    for m in result["measurements"]:
        assert {"conditions", "metrics", "token_source", "samples"} <= set(m)
        assert set(m["conditions"]) == set(condition_keys)
        c = m["conditions"]
        assert c["source"] == "simulated"
        assert (c["drafter"], c["k"], c["output_tokens"], c["repeats"]) == ("mtp", 3, 24, 2)
        assert c["prompt_tokens"] is not None and c["cache"] == "cold"
        assert m["token_source"] in ("server", "client")
        assert len(m["samples"]["decode_tps"]) == 2
        assert m["metrics"]["acceptance_rate"] is not None
        assert len(m["metrics"]["acceptance_by_position"]) == 3
    assert [m["conditions"]["concurrency"] for m in result["measurements"]] == [1, 2]


def test_results_jsonl_has_one_line_per_measurement(
    sim_result: tuple[Path, dict[str, Any]], jsonl: Callable[[Path], list[dict[str, Any]]]
) -> None:
    job_dir, result = sim_result
    path = write_results_jsonl(job_dir)
    lines = jsonl(path)
    assert len(lines) == len(result["measurements"]) == 2
    for line, m in zip(lines, result["measurements"], strict=True):
        interval = line.pop("interval")
        assert line == json.loads(
            json.dumps(
                {
                    "run_id": result["run_id"],
                    "status": "ok",
                    "conditions": m["conditions"],
                    "metrics": m["metrics"],
                    "spread": m["spread"],
                    # the headline figures' windows: what --compare resamples
                    "samples": {k: v for k, v in m["samples"].items() if k in COMPARED},
                }
            )
        )
        # two windows: each headline figure's interval is theirs, around its median
        assert set(interval) == {k for k, v in m["samples"].items() if k in COMPARED}
        for name, (low, high) in interval.items():
            assert min(m["samples"][name]) <= low <= m["metrics"][name] <= high
            assert high <= max(m["samples"][name])


def test_results_lines_keep_a_result_without_measurements(make_spec: Callable[..., Any]) -> None:
    skipped = _result("abc", "skipped", make_spec)
    [line] = results_lines([skipped])
    assert (line.run_id, line.status, line.metrics, line.measured) == (
        "abc",
        "skipped",
        None,
        False,
    )
    assert line.conditions.drafter == "mtp"
    assert json.loads(line.to_json())["metrics"] == {}  # written as an empty mapping


def _leftovers(folder: Path) -> list[str]:
    return sorted(p.name for p in folder.iterdir() if p.name.startswith("."))


def test_atomic_write_leaves_no_temp_files(tmp_path: Path) -> None:
    target = tmp_path / "deep" / "result.json"
    atomic_write(target, "one\n")
    atomic_write(target, "two\n")
    assert target.read_text() == "two\n"
    assert _leftovers(target.parent) == []


def test_failed_atomic_write_keeps_the_old_file(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    target = tmp_path / "result.json"
    atomic_write(target, "old\n")

    def broken_replace(src: Any, dst: Any) -> None:
        raise OSError("disk full")

    monkeypatch.setattr(store.os, "replace", broken_replace)
    with pytest.raises(OSError, match="disk full"):
        atomic_write(target, "new\n")
    monkeypatch.undo()
    assert target.read_text() == "old\n"
    assert _leftovers(tmp_path) == []
    assert sorted(os.listdir(tmp_path)) == ["result.json"]


def _result(run_id: str, status: str, make_spec: Callable[..., Any]) -> RunRecord:
    error = None if status == "ok" else ErrorInfo(kind="crash", message="boom")
    return RunRecord(
        run_id=run_id,
        status=status,
        error=error,  # type: ignore[arg-type]
        conditions=run_conditions(make_spec("drafter=mtp"), "simulated"),
        provenance=Provenance(),
    )


def test_a_failure_never_overwrites_an_ok_result_of_the_same_run(
    tmp_path: Path, make_spec: Callable[..., Any]
) -> None:
    assert write_record(tmp_path, _result("run1", "ok", make_spec))
    for status in ("failed", "refused", "skipped"):
        assert write_record(tmp_path, _result("run1", status, make_spec)) is False
        assert read_record(tmp_path / "result.json").status == "ok"
    assert _leftovers(tmp_path) == []


def test_results_can_replace_incomplete_ones(tmp_path: Path, make_spec: Callable[..., Any]) -> None:
    assert write_record(tmp_path, _result("run1", "failed", make_spec))
    assert write_record(tmp_path, _result("run1", "refused", make_spec))
    assert write_record(tmp_path, _result("run1", "ok", make_spec))
    assert read_record(tmp_path / "result.json").status == "ok"


@pytest.mark.parametrize(
    ("text", "says"),
    [
        ("{not json", "not JSON"),
        (
            json.dumps({"schema": "specexp.result/1", "status": "ok"}),
            "schema 'specexp.result/1'; expected",
        ),
        (json.dumps({"schema": "other/1", "status": "ok"}), "schema 'other/1'; expected"),
        (json.dumps({"status": "ok"}), "no schema key; expected"),
    ],
)
def test_a_file_that_is_not_a_record_of_this_version_is_refused_in_one_line(
    tmp_path: Path, text: str, says: str
) -> None:
    path = tmp_path / "result.json"
    path.write_text(text)
    with pytest.raises(RecordError) as err:
        read_record(path)
    line = err.value.line()
    assert "\n" not in line and line.startswith(str(path)) and says in line
    assert SCHEMA in line or says == "not JSON"


def test_a_record_with_a_key_the_schema_does_not_know_is_refused(
    tmp_path: Path, make_spec: Callable[..., Any]
) -> None:
    data = json.loads(_result("run1", "ok", make_spec).to_json())
    data["conditions"]["colour"] = "blue"
    (tmp_path / "result.json").write_text(json.dumps(data))
    with pytest.raises(RecordError, match=r"conditions\.colour: extra inputs are not permitted"):
        read_record(tmp_path / "result.json")


def test_complete_result_finds_only_ok_results_of_that_run(
    tmp_path: Path, make_spec: Callable[..., Any]
) -> None:
    write_record(tmp_path / "x__run1", _result("run1", "failed", make_spec))
    assert complete_result(tmp_path, "run1") is None
    write_record(tmp_path / "y__run1", _result("run1", "ok", make_spec))
    assert complete_result(tmp_path, "run1") == tmp_path / "y__run1" / "result.json"
    assert complete_result(tmp_path, "run2") is None


def test_job_skips_a_run_already_complete_under_the_sweep(
    sim_result: tuple[Path, dict[str, Any]], tmp_path: Path, make_spec: Callable[..., Any]
) -> None:
    job_dir, first = sim_result
    cell = make_cell(make_spec(*JOB))
    assert cell.run_id == first["run_id"]
    before = (job_dir / "result.json").read_bytes()
    again = run_job(cell, tmp_path / "elsewhere", job_dir, list(JOB), {})
    assert again is None  # already complete: nothing ran, nothing was written
    assert not (tmp_path / "elsewhere").exists()
    assert (job_dir / "result.json").read_bytes() == before


def test_a_configuration_that_does_not_fit_is_recorded_as_refused(
    tmp_path: Path, make_spec: Callable[..., Any]
) -> None:
    cell = make_cell(
        make_spec(
            "hardware=cpu", "model=qwen3-32b", "quantization=bf16", "workload.output_tokens=8"
        )
    )
    result = run_job(cell, tmp_path, tmp_path, [], {})
    assert result is not None and result.status == "refused"
    assert result.error is not None and result.error.kind == "out_of_memory"
    assert "GiB" in result.error.message
    assert result.measurements == []
    assert read_record(tmp_path / "result.json").status == "refused"
