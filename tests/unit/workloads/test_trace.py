"""Trace replay: each request leaves at its trace time; shared hash_ids are shared prefixes."""

from __future__ import annotations

import json
from collections.abc import Callable
from pathlib import Path
from typing import Any

import pytest

from specexp.measure.request_log import read_requests
from specexp.run.job import run_job
from specexp.run.plan import make_cell
from specexp.runtimes.sim.driver import SimRuntime
from specexp.spec.errors import SpecError
from specexp.spec.input_files import load_trace
from specexp.workloads.driver import drive
from specexp.workloads.trace import offsets

SMALL = (
    "workload=trace",
    "model=qwen3-8b",
    "quantization=bf16",
    "hardware=h200",
    "drafter=eagle3",
    "workload.warmup=0",
)


def _trace(tmp_path: Path, rows: list[dict[str, Any]]) -> Path:
    path = tmp_path / "trace.jsonl"
    path.write_text("".join(json.dumps(r) + "\n" for r in rows), encoding="utf-8")
    return path


def _windows(make_spec: Callable[..., Any], tmp_path: Path, *overrides: str) -> list[Any]:
    spec = make_spec("runtime=sim", *SMALL, *overrides)
    runtime = SimRuntime(spec, tmp_path)
    runtime.start()
    return list(drive(runtime, spec.workload, marker="m"))


def test_the_shipped_trace_is_replayed_at_its_times_on_the_virtual_clock(
    make_spec: Callable[..., Any], tmp_path: Path
) -> None:
    (window,) = _windows(make_spec, tmp_path, "workload.trace_speed=2")
    rows = load_trace("conf/workload/data/synthetic_trace.jsonl")
    due = offsets(rows, 2.0, "ms")
    start = min(t.sent_at for t in window.traces)
    assert len(window.traces) == len(rows)
    for trace, at, row in zip(window.traces, due, rows):
        assert trace.sent_at - start == pytest.approx(
            at, abs=1e-9
        )  # the virtual clock keeps time exactly
        assert (
            trace.completion_tokens == row.output_length and trace.prompt_tokens == row.input_length
        )
    span = max(due)
    assert span == pytest.approx((rows[-1].timestamp - rows[0].timestamp) / 1000 / 2)


def test_requests_sharing_hash_ids_share_their_prefix(
    make_spec: Callable[..., Any], tmp_path: Path
) -> None:
    rows = [
        {"timestamp": 0, "input_length": 1100, "output_length": 8, "hash_ids": [1, 2, 3]},
        {
            "timestamp": 5000,
            "input_length": 1100,
            "output_length": 8,
            "hash_ids": [1, 2, 9],
        },  # shares 2 blocks
        {
            "timestamp": 10000,
            "input_length": 1100,
            "output_length": 8,
            "hash_ids": [7, 8],
        },  # shares none
        {"timestamp": 15000, "input_length": 1100, "output_length": 8},  # no hashes: unique
    ]
    (window,) = _windows(
        make_spec,
        tmp_path,
        f"workload.trace_file={_trace(tmp_path, rows)}",
        "workload.trace_block_tokens=256",
    )
    cached = [t.cached_prompt_tokens for t in window.traces]
    assert cached[0] == 0 and cached[2] == 0 and cached[3] == 0
    # the two shared blocks, no more, less the engine's last 16-token block, which EAGLE-3 needs
    # recomputed for its hidden states (vLLM gives it up from every hit)
    assert cached[1] == 2 * 256 - 16


def test_arrival_times_are_honoured_within_the_clients_measured_lag(
    make_spec: Callable[..., Any], sim_url: str, tmp_path: Path
) -> None:
    rows = [
        {"timestamp": t, "input_length": 200, "output_length": 4}
        for t in (0, 150, 300, 310, 700, 1000)
    ]
    spec = make_spec(
        "runtime=openai",
        f"runtime.url={sim_url}",
        *SMALL,
        f"workload.trace_file={_trace(tmp_path, rows)}",
    )
    record = run_job(make_cell(spec), tmp_path / "job", None, [], {})
    assert record is not None and record.status == "ok", record.error
    lines = [line for line in read_requests(tmp_path / "job") if not line["warmup"]]
    assert len(lines) == len(rows)
    due = [r["timestamp"] / 1000 for r in rows]
    lags = [line["send_lag_s"] for line in lines]
    assert all(lag is not None and lag >= 0 for lag in lags)
    # sends keep the trace's spacing: each left at its due time plus its own measured lag
    first = lines[0]["sent_at"] - lags[0]
    for line, at, lag in zip(lines, due, lags):
        assert line["sent_at"] - first == pytest.approx(at + lag, abs=2e-3)
    assert max(line["sent_at"] for line in lines) - min(line["sent_at"] for line in lines) >= due[
        -1
    ] - max(lags)
    (m,) = record.measurements
    assert m.client is not None and m.client.send_lag_max_s == pytest.approx(max(lags), abs=1e-6)


@pytest.mark.parametrize(
    ("content", "expected"),
    [
        ('{"timestamp": 1, "input_length": 10}\n', "trace.jsonl:1: output_length: missing"),
        (
            '{"timestamp": 1, "input_length": 10, "output_length": 4}\nnot json\n',
            "trace.jsonl:2: line: not JSON",
        ),
        (
            '{"timestamp": 1, "input_length": 0, "output_length": 4}\n',
            "trace.jsonl:1: input_length: got 0",
        ),
        (
            '{"timestamp": 1, "input_length": 5, "output_length": 4, "hash_ids": ["a"]}\n',
            "trace.jsonl:1: hash_ids: got ['a']; expected a list of integers",
        ),
    ],
)
def test_a_malformed_trace_is_a_one_line_error_naming_file_and_line(
    make_spec: Callable[..., Any], tmp_path: Path, content: str, expected: str
) -> None:
    path = tmp_path / "trace.jsonl"
    path.write_text(content, encoding="utf-8")
    with pytest.raises(SpecError) as err:
        make_spec("runtime=sim", *SMALL, f"workload.trace_file={path}")
    message = str(err.value)
    assert expected in message and str(path) in message and "\n" not in message


def test_a_missing_trace_file_is_named(make_spec: Callable[..., Any], tmp_path: Path) -> None:
    with pytest.raises(SpecError, match=r"nope\.jsonl: workload\.trace_file: no such file"):
        make_spec("runtime=sim", *SMALL, f"workload.trace_file={tmp_path / 'nope.jsonl'}")


@pytest.mark.parametrize("workload", ["trace", "agentic_sessions"])
def test_warm_up_requests_of_a_workloads_own_prompt_differ_and_keep_one_length(
    make_spec: Callable[..., Any], workload: str
) -> None:
    from specexp.workloads.window import own_prompt_warm_up

    spec = make_spec(f"workload={workload}")
    short = own_prompt_warm_up(spec.workload, "m", chat=True)
    long = own_prompt_warm_up(spec.workload, "a-much-longer-marker-of-a-sweep", chat=True)
    prompts = [short(0).prompt, short(1).prompt, long(0).prompt]
    assert len(set(prompts)) == 3  # no two warm-ups share a cached prefix
    assert len({len(p) for p in prompts}) == 1  # whatever the marker, one prompt length
    assert all(p.endswith(spec.workload.prompt) for p in prompts)
    assert short(0).warmup and short(0).max_tokens <= spec.workload.output_tokens
