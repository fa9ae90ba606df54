"""specexp's measuring client and requests.jsonl, against a real local server (the sim HTTP server).

runtime=openai measures `python -m specexp.sim` (--speed 2) as it would any endpoint; what
specexp recorded is held against what the server says it served (GET /debug/requests/{id}).
"""

from __future__ import annotations

import json
from collections.abc import Callable, Iterator
from pathlib import Path
from typing import Any

import httpx
import pytest

from specexp.measure.request_log import read_requests
from specexp.run.job import run_job
from specexp.run.plan import make_cell
from specexp.runtimes.http.client import stream_window, to_trace
from tests.support.sim_server import sim_server

SMALL = (
    "workload=fresh_generation",
    "workload.output_tokens=24",
    "workload.concurrency=[3]",
    "workload.repeats=2",
    "workload.warmup=1",
    "model=qwen3-8b",
    "quantization=bf16",
)


@pytest.fixture(scope="module")
def sim_url(tmp_path_factory: pytest.TempPathFactory) -> Iterator[str]:
    with sim_server(
        tmp_path_factory.mktemp("sim_serve"),
        "hardware=h200",
        "model=qwen3-8b",
        "quantization=bf16",
        "drafter=mtp",
        "k=3",
        speed=2,
    ) as url:
        yield url


def _job(
    make_spec: Callable[..., Any],
    url: str,
    tmp_path: Path,
    *overrides: str,
    runtime: str = "openai",
) -> tuple[dict[str, Any], Path]:
    spec = make_spec(f"runtime={runtime}", f"runtime.url={url}", *SMALL, *overrides)
    job_dir = tmp_path / "job"
    record = run_job(make_cell(spec), job_dir, None, [], {})
    assert record is not None
    return json.loads(record.to_json()), job_dir


@pytest.mark.parametrize(("endpoint", "prefix"), [("chat", "chatcmpl-"), ("completions", "cmpl-")])
def test_every_request_is_recorded_with_the_servers_response_id(
    make_spec: Callable[..., Any], sim_url: str, tmp_path: Path, endpoint: str, prefix: str
) -> None:
    result, job_dir = _job(make_spec, sim_url, tmp_path, f"workload.endpoint={endpoint}")
    assert result["status"] == "ok", result["error"]
    lines = read_requests(job_dir)
    assert (
        len(lines) == 1 + 3 + 2 * 3
    )  # the warm-up, the point's warm-up window of three, then two windows of three
    warm, measured = lines[:4], lines[4:]
    assert all(
        line["warmup"] is True and line["output_tokens"] == 16 for line in warm
    )  # short warm-ups by default
    assert [line["concurrency"] for line in warm[1:]] == [3, 3, 3]  # the point's own shape
    assert all(not line["warmup"] for line in measured)
    assert sorted(line["repeat"] for line in measured) == [0, 0, 0, 1, 1, 1]
    for line in lines:
        assert line["id"].startswith(prefix)  # the endpoint asked for answered
        served = httpx.get(f"{sim_url}/debug/requests/{line['id']}", timeout=5).json()
        assert (
            served["response_id"] == line["id"]
            and served["endpoint"] == {"chat": "chat", "completions": "completion"}[endpoint]
        )
        assert line["chunks"] == len(served["chunks"])
        assert 1 <= line["reads"] <= line["chunks"]
        # a TPOT is missing only where the client read the stream's ends in bulk
        assert line["tpot_s"] is not None or line["reads"] < line["chunks"]
        assert line["output_tokens"] == sum(c["tokens"] for c in served["chunks"])
        assert line["status"] == 200 and line["error"] is None and line["finish_reason"] == "length"
        assert (
            0 < line["ttft_s"] <= line["e2e_s"]
            and (line["tpot_s"] is None or line["tpot_s"] >= 0)
            and line["max_chunk_gap_s"] >= 0
        )
        assert line["sent_at"] > 1.7e9  # Unix seconds
    assert any(line["tpot_s"] > 0 for line in lines)
    # the measurement counts the measured requests only
    (m,) = result["measurements"]
    assert sorted(m["requests"]) == sorted(line["request_id"] for line in measured)


def test_latency_distributions_and_client_costs_are_recorded(
    make_spec: Callable[..., Any], sim_url: str, tmp_path: Path
) -> None:
    result, job_dir = _job(make_spec, sim_url, tmp_path)
    (m,) = result["measurements"]
    metrics = m["metrics"]
    measured = [line for line in read_requests(job_dir) if not line["warmup"]]
    ttfts = sorted(line["ttft_s"] for line in measured)
    assert metrics["ttft_p50_s"] == pytest.approx(
        ttfts[len(ttfts) // 2 - 1] / 2 + ttfts[len(ttfts) // 2] / 2, rel=1e-5
    )
    for key in ("ttft", "tpot", "chunk_gap", "e2e"):
        p50, p90, p99 = (metrics[f"{key}_{q}_s"] for q in ("p50", "p90", "p99"))
        assert 0 < p50 <= p90 <= p99 and metrics[f"{key}_mean_s"] > 0
    assert metrics["ttft_p99_s"] <= max(ttfts) and metrics["e2e_p50_s"] > metrics["ttft_p50_s"]
    client = m["client"]
    assert client["processes"] == 1 and client["cpu_s"] > 0 and 0 <= client["busy"]
    assert client["send_lag_max_s"] >= 0 and isinstance(client["bound"], bool)
    bulk = [line for line in measured if line["output_tokens"] > 1 and line["tpot_s"] is None]
    assert client["bulk_reads"] == len(bulk) and (client["bound"] or not bulk)


def test_chunk_arrivals_are_kept_when_asked(
    make_spec: Callable[..., Any], sim_url: str, tmp_path: Path
) -> None:
    # runtime=vllm asks for per-chunk usage, so each chunk's tokens are the server's count
    _, job_dir = _job(
        make_spec,
        sim_url,
        tmp_path,
        "workload.record_chunk_times=true",
        "drafter=mtp",
        "k=3",
        runtime="vllm",
    )
    for line in read_requests(job_dir):
        times = line["chunk_times_s"]
        assert len(times) == line["chunks"] == len(line["chunk_tokens"])
        assert times == sorted(times) and times[0] == pytest.approx(line["ttft_s"], abs=1e-6)
        assert sum(line["chunk_tokens"]) == line["output_tokens"]


def test_a_window_spread_over_client_processes_keeps_every_request_in_place(sim_url: str) -> None:
    bodies = [
        (
            "/v1/chat/completions" if i % 2 else "/v1/completions",
            {
                "model": "Qwen/Qwen3-8B",
                "request_id": f"spread-{i}",
                "max_tokens": 6 + i,
                "stream": True,
                **(
                    {"messages": [{"role": "user", "content": f"q{i}"}]}
                    if i % 2
                    else {"prompt": f"q{i}"}
                ),
                "stream_options": {"include_usage": True, "continuous_usage_stats": True},
            },
        )
        for i in range(5)
    ]
    window = stream_window(sim_url, bodies, 60.0, None, 30.0, warm_path="/health", processes=2)
    assert window.processes == 2 and window.cpu_s > 0
    for i, raw in enumerate(window.raws):
        trace = to_trace(f"spread-{i}", raw, None, window.started_at, window.wall_offset)
        assert trace.error is None
        assert trace.response_id == f"{'chatcmpl' if i % 2 else 'cmpl'}-spread-{i}"
        assert (
            trace.completion_tokens == 6 + i
            and trace.send_lag_s is not None
            and trace.send_lag_s >= 0
        )


def _bodies(prefix: str, n: int, max_tokens: int = 8) -> list[tuple[str, dict[str, Any]]]:
    return [
        (
            "/v1/chat/completions",
            {
                "model": "Qwen/Qwen3-8B",
                "request_id": f"{prefix}-{i}",
                "max_tokens": max_tokens,
                "stream": True,
                "messages": [{"role": "user", "content": f"q{i}"}],
                "stream_options": {"include_usage": True, "continuous_usage_stats": True},
            },
        )
        for i in range(n)
    ]


@pytest.mark.parametrize("processes", [1, 2])
def test_open_loop_requests_leave_when_due_never_before(sim_url: str, processes: int) -> None:
    offsets = [0.0, 0.05, 0.1, 0.3, 0.31, 0.6]
    window = stream_window(
        sim_url,
        _bodies(f"due{processes}", len(offsets)),
        60.0,
        None,
        30.0,
        processes=processes,
        offsets=offsets,
    )
    for raw, offset in zip(window.raws, offsets):
        assert raw.error is None
        assert raw.due_at is not None and raw.sent_at >= raw.due_at
    lags = [raw.sent_at - raw.due_at for raw in window.raws]  # type: ignore[operator]
    # each left when due, as late as the client's own measured lag: the spacing is the schedule's
    sent = [raw.sent_at - window.raws[0].sent_at for raw in window.raws]
    assert sent == pytest.approx(offsets, abs=max(lags) + 1e-3)


def test_a_concurrency_cap_keeps_requests_in_flight_under_it(sim_url: str) -> None:
    window = stream_window(
        sim_url, _bodies("cap", 6, 24), 60.0, None, 30.0, offsets=[0.0] * 6, max_concurrency=2
    )
    spans = [(raw.sent_at, raw.chunks[-1][0]) for raw in window.raws]
    for t, _ in spans:
        assert sum(1 for s, e in spans if s <= t < e) <= 2
    waited = [raw for raw in window.raws if raw.free_at is not None]
    assert len(waited) == 4  # all six were due at once: four waited for a slot
    traces = [
        to_trace(f"cap-{i}", raw, None, window.started_at, window.wall_offset)
        for i, raw in enumerate(window.raws)
    ]
    # a wait for a slot is the cap's, not the client's lag
    assert all(
        t.send_lag_s is not None and t.send_lag_s < raw.sent_at - raw.due_at + 1e-9
        for t, raw in zip(traces, window.raws)
        if raw.free_at is not None
    )
