"""What a misbehaving server does to a job: recorded, never a crash, partial data kept.

The fault server (tests/support/fault_server.py) speaks the OpenAI streaming protocol and breaks
it on purpose; runtime=openai (and runtime=vllm for /metrics faults) measure it at runtime.url.
"""

from __future__ import annotations

import json
import os
from collections.abc import Callable, Iterator
from pathlib import Path
from typing import Any

import pytest

from specexp.measure.conditions import run_conditions
from specexp.record import Provenance, RunRecord, write_record
from specexp.run.job import run_job
from specexp.run.plan import make_cell
from tests.support.fault_server import SMALL_JOB, fault_server

SMALL = SMALL_JOB


@pytest.fixture(scope="module")
def server() -> Iterator[str]:
    with fault_server() as url:
        yield url


def _job(
    make_spec: Callable[..., Any],
    url: str,
    fault: str,
    tmp_path: Path,
    runtime: str = "openai",
    *stated: str,
) -> dict[str, Any]:
    spec = make_spec(f"runtime={runtime}", f"runtime.url={url}/{fault}", *SMALL, *stated)
    record = run_job(make_cell(spec), tmp_path / fault, tmp_path, [], {})
    assert record is not None
    return json.loads(record.to_json())


def test_a_clean_stream_is_ok(make_spec: Callable[..., Any], server: str, tmp_path: Path) -> None:
    result = _job(make_spec, server, "ok", tmp_path)
    assert result["status"] == "ok", result["error"]
    metrics = result["measurements"][0]["metrics"]
    assert metrics["ttft_s"] > 0 and result["measurements"][0]["token_source"] == "server"


def test_an_endpoint_records_the_setup_nobody_stated_as_unknown(
    make_spec: Callable[..., Any], server: str, tmp_path: Path
) -> None:
    def conditions(*stated: str) -> dict[str, Any]:
        spec = make_spec(
            "runtime=openai",
            f"runtime.url={server}/ok",
            "workload.output_tokens=8",
            "workload.warmup=0",
            "runtime.served_model_name=fault",
            *stated,
        )
        record = run_job(make_cell(spec), tmp_path / str(len(stated)), tmp_path, [], {})
        assert record is not None and record.status == "ok"
        return record.measurements[0].conditions.model_dump()

    c = conditions()
    assert (c["hardware"], c["gpu_count"], c["model"], c["quantization"], c["max_model_len"]) == (
        None,
    ) * 5
    assert (c["runtime"], c["source"], c["output_tokens"]) == (
        "openai",
        "measured",
        8,
    )  # what was asked is known
    c = conditions("hardware=h200", "quantization=bf16")
    assert (c["hardware"], c["gpu_count"], c["quantization"], c["model"]) == (
        "h200",
        1,
        "bf16",
        None,
    )


@pytest.mark.parametrize(
    ("fault", "kind"),
    [
        ("http_500", "http_5xx"),
        ("http_429", "http_429"),
        ("malformed", "malformed_stream"),
        ("truncated", "truncated_stream"),
        ("hang", "stalled"),
        ("die", "truncated_stream"),
    ],  # a connection closed mid-stream reads as a stream that just ends,
)
def test_a_broken_stream_fails_the_job_with_its_kind(
    make_spec: Callable[..., Any], server: str, tmp_path: Path, fault: str, kind: str
) -> None:
    result = _job(make_spec, server, fault, tmp_path)
    assert result["status"] == "failed"
    assert result["error"]["kind"] == kind, result["error"]
    assert "request(s) failed" in result["error"]["message"]
    record = json.loads((tmp_path / fault / "result.json").read_text())
    assert record["status"] == "failed" and record["error"]["kind"] == kind
    assert all(m["partial"] for m in record["measurements"])  # the failed window is kept, marked


def test_a_stream_without_usage_counts_tokens_itself_and_says_so(
    make_spec: Callable[..., Any], server: str, tmp_path: Path
) -> None:
    result = _job(make_spec, server, "no_usage", tmp_path)
    assert result["status"] == "ok"
    assert result["measurements"][0]["token_source"] == "client"


@pytest.mark.parametrize("fault", ["metrics_missing", "metrics_garbage"])
def test_unreadable_metrics_leave_acceptance_unknown_and_a_note(
    make_spec: Callable[..., Any], server: str, tmp_path: Path, fault: str
) -> None:
    result = _job(make_spec, server, fault, tmp_path, runtime="vllm")
    assert result["status"] == "ok", result["error"]
    assert result["measurements"][0]["metrics"]["acceptance_rate"] is None
    assert any("/metrics" in note for note in result["notes"])


def test_an_unwritable_job_directory_loses_nothing_else(
    make_spec: Callable[..., Any], server: str, tmp_path: Path
) -> None:
    if os.geteuid() == 0:
        blocked = tmp_path / "blocked"
        blocked.write_text("a file where the job directory should be")  # not writable even for root
    else:
        blocked = tmp_path / "blocked"
        blocked.mkdir(mode=0o500)
    spec = make_spec("runtime=openai", f"runtime.url={server}/ok", *SMALL)
    with pytest.raises(OSError):
        run_job(make_cell(spec), blocked / "job", None, [], {})
    ok = _job(make_spec, server, "ok", tmp_path)
    assert ok["status"] == "ok"


def test_a_full_disk_keeps_the_previous_complete_result(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch, make_spec: Callable[..., Any]
) -> None:
    job = tmp_path / "job"
    complete = RunRecord(
        run_id="r1",
        status="ok",
        provenance=Provenance(),
        conditions=run_conditions(make_spec(), "measured"),
    )
    write_record(job, complete)
    before = (job / "result.json").read_bytes()

    def full(*_: object, **__: object) -> None:
        raise OSError(28, "No space left on device")

    monkeypatch.setattr(os, "fsync", full)
    with pytest.raises(OSError):
        write_record(job, complete.model_copy(update={"notes": ["a second write"]}))
    assert (job / "result.json").read_bytes() == before
    assert [p.name for p in job.iterdir()] == ["result.json"]  # no half-written temp file left
