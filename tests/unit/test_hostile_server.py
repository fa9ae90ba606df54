"""What a hostile server sends cannot crash a sweep, lose a record or publish a wrong figure.

The fault server (tests/support/fault_server.py) sends, on purpose, what real engines and proxies
send by accident: lone surrogates, an emoji split over two chunks, NaN counters, counters that go
back after a restart, usage that counts tokens never streamed. Each test asserts what a user sees:
the record, that it reads back, the note, the report's finding, the exit code.
"""

from __future__ import annotations

import hashlib
import json
import logging
from collections.abc import Callable, Iterator
from pathlib import Path
from typing import Any

import pytest

from specexp.check import report_findings, runs_of
from specexp.record import RunRecord, find_records, read_record, write_record
from specexp.run import job as job_module
from specexp.run.job import run_job
from specexp.run.plan import make_cell
from tests.conftest import run_specexp
from tests.support.fault_server import SMALL_JOB, fault_server

SMALL = SMALL_JOB
DRAFTING = ("drafter=ngram", "k=3")


@pytest.fixture(scope="module")
def server() -> Iterator[str]:
    with fault_server() as url:
        yield url


def _job(
    make_spec: Callable[..., Any], url: str, fault: str, tmp_path: Path, *more: str
) -> tuple[RunRecord, RunRecord]:
    """The job's returned record, and the one read back from its result.json."""
    spec = make_spec(f"runtime.url={url}/{fault}", *SMALL, *more)
    record = run_job(make_cell(spec), tmp_path / fault, tmp_path, [], {})
    assert record is not None
    return record, read_record(tmp_path / fault / "result.json")


@pytest.mark.parametrize("fault", ["surrogate", "split_emoji"])
def test_broken_utf16_in_the_text_is_recorded_and_reads_back(
    make_spec: Callable[..., Any], server: str, tmp_path: Path, fault: str
) -> None:
    record, back = _job(make_spec, server, fault, tmp_path, "runtime=openai")
    assert record.status == back.status == "ok", record.error
    assert back.measurements[0].completions


def test_an_emoji_split_over_two_chunks_is_one_character_again(
    make_spec: Callable[..., Any], server: str, tmp_path: Path
) -> None:
    _, back = _job(make_spec, server, "split_emoji", tmp_path, "runtime=openai")
    text = "t0 \U0001f600 t3 t4 t5 t6 t7 "
    digest = hashlib.sha256(text.encode()).hexdigest()[:16]
    assert set(back.measurements[0].completions.values()) == {digest}


def test_an_error_while_recording_fails_that_job_only(
    make_spec: Callable[..., Any], server: str, tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    def broken(*_: object, **__: object) -> None:
        raise ValueError("a bug in a metric")

    with monkeypatch.context() as patch:
        patch.setattr(job_module, "measurements", broken)
        failed, back = _job(make_spec, server, "ok", tmp_path, "runtime=openai")
    assert failed.status == back.status == "failed"
    assert back.error is not None and back.error.kind == "unexpected_error"
    assert "a bug in a metric" in back.error.message
    ok, _ = _job(make_spec, server, "ok", tmp_path / "next", "runtime=openai")
    assert ok.status == "ok"


def test_nan_counters_are_left_out_with_a_note(
    make_spec: Callable[..., Any], server: str, tmp_path: Path
) -> None:
    record, back = _job(make_spec, server, "metrics_nan", tmp_path, "runtime=vllm", *DRAFTING)
    assert back.status == "ok"
    assert back.measurements[0].metrics.acceptance_rate is None
    assert any("NaN" in note for note in back.notes)


def test_a_non_finite_number_anywhere_is_written_unknown_with_a_note(
    make_spec: Callable[..., Any], server: str, tmp_path: Path
) -> None:
    record, _ = _job(make_spec, server, "spec_ok", tmp_path, "runtime=vllm", *DRAFTING)
    m = record.measurements[0]
    bad = m.model_copy(
        update={
            "metrics": m.metrics.model_copy(update={"acceptance_rate": float("nan")}),
            "spread": {"acceptance_rate": [float("inf"), 1.0]},
        }
    )
    write_record(tmp_path / "nan", record.model_copy(update={"measurements": [bad]}))
    back = read_record(tmp_path / "nan" / "result.json")
    assert back.measurements[0].metrics.acceptance_rate is None
    assert any("acceptance_rate" in note and "NaN" in note for note in back.notes)


def test_one_unreadable_record_is_left_out_with_a_warning(
    make_spec: Callable[..., Any],
    server: str,
    tmp_path: Path,
    caplog: pytest.LogCaptureFixture,
) -> None:
    _job(make_spec, server, "ok", tmp_path, "runtime=openai")
    bad = tmp_path / "broken" / "result.json"
    bad.parent.mkdir()
    bad.write_text('{"schema": "specexp.result/2", "run_id": 3}')
    with caplog.at_level(logging.WARNING):
        found = find_records([tmp_path])
    assert [p.parent.name for p, _ in found] == ["ok"]
    assert str(bad) in caplog.text


@pytest.mark.parametrize("fault", ["counters_reset", "accepted_drops"])
def test_counters_that_go_back_give_no_acceptance_and_say_so(
    make_spec: Callable[..., Any], server: str, tmp_path: Path, fault: str
) -> None:
    _, back = _job(make_spec, server, fault, tmp_path, "runtime=vllm", *DRAFTING)
    m = back.measurements[0]
    assert m.metrics.acceptance_rate is None and m.metrics.tokens_per_pass is None
    assert "accepted" in m.counters_went_back
    assert any("went backwards" in note for note in back.notes)


def test_rising_counters_still_give_acceptance(
    make_spec: Callable[..., Any], server: str, tmp_path: Path
) -> None:
    _, back = _job(make_spec, server, "spec_ok", tmp_path, "runtime=vllm", *DRAFTING)
    assert back.measurements[0].metrics.acceptance_rate == pytest.approx(20 / 30)
    assert back.measurements[0].counters_went_back == []


def test_usage_beyond_the_stream_is_a_finding_whatever_the_hardware(
    make_spec: Callable[..., Any], server: str, tmp_path: Path
) -> None:
    _, back = _job(make_spec, server, "usage_inflated", tmp_path, "runtime=openai")
    assert back.measurements[0].tokens_beyond_stream
    assert any("more than the client was streamed" in note for note in back.notes)
    runs = runs_of(find_records([tmp_path]))
    found = report_findings(runs).implausible
    assert [f.rule for f in found] == ["implausible"]
    assert "token(s) more" in found[0].found
    clean_dir = tmp_path / "clean"
    _job(make_spec, server, "ok", clean_dir, "runtime=openai")
    assert not report_findings(runs_of(find_records([clean_dir]))).implausible


def _sweep(tmp_path: Path, urls: str, *more: str) -> tuple[int, str, Path]:
    out = tmp_path / "sweep"
    done = run_specexp(
        "-m",
        f"hydra.sweep.dir={out}",
        "runtime=openai",
        f"runtime.url={urls}",
        *SMALL,
        *more,
    )
    return done.returncode, done.stdout + done.stderr, out


def test_a_sweep_goes_on_past_a_hostile_job_and_writes_its_report(
    server: str, tmp_path: Path
) -> None:
    code, output, out = _sweep(tmp_path, f"{server}/surrogate,{server}/control_text,{server}/ok")
    assert code == 0, output
    lines = (out / "results.jsonl").read_text(encoding="utf-8").splitlines()
    assert {json.loads(line)["status"] for line in lines} == {"ok"} and len(lines) == 3
    assert (out / "measurements.md").is_file() and (out / "report.html").is_file()
    for path, record in find_records([out]):
        assert read_record(path) == record


def test_a_sweep_whose_every_job_failed_exits_non_zero_with_its_report(
    server: str, tmp_path: Path
) -> None:
    code, output, out = _sweep(tmp_path, f"{server}/http_500,{server}/die")
    assert code == 1, output
    assert "none of its 2 job(s) finished" in output
    assert (out / "measurements.md").is_file()


def test_an_unwritable_sweep_folder_is_one_line(tmp_path: Path) -> None:
    blocker = tmp_path / "a-file"
    blocker.write_text("not a folder")
    done = run_specexp("-m", f"hydra.sweep.dir={blocker}/sweep", "k=2,3")
    assert done.returncode == 2, done.stdout + done.stderr
    assert "Traceback" not in done.stderr
    assert [line for line in done.stderr.splitlines() if line.startswith("specexp:")] == [
        f"specexp: {blocker}/sweep: hydra.sweep.dir: cannot write: Not a directory"
    ]


def test_a_job_folder_that_cannot_be_written_fails_that_job_in_one_line(
    tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    from specexp.run.compose import compose_run
    from specexp.run.launch import run_composed

    composed, _ = compose_run(["workload.output_tokens=8", "workload.repeats=1"])
    blocker = tmp_path / "a-file"
    blocker.write_text("not a folder")
    status = run_composed(composed, [], blocker / "job", tmp_path, True, save_config=True)
    assert status == "failed"
    said = capsys.readouterr().out
    assert f"could not write in {blocker}/job" in said and "Traceback" not in said
