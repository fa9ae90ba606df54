"""How far do specexp's client timings sit from the truth? Measured against the sim server.

    .venv/bin/python benchmarks/client_timing.py                      # concurrency 1, 8, 64; prints Markdown
    .venv/bin/python benchmarks/client_timing.py --out benchmarks/results/client_timing.md
    .venv/bin/python benchmarks/client_timing.py --concurrency 1 4 --windows 3 drafter=dspark

It starts `python -m specexp.sim` (default hardware=h200 drafter=mtp k=3, --speed 1, i.e.
real time) and sends windows of concurrent streamed chat requests through specexp's own client
(`stream_all` + `to_trace`, as HttpRuntime does). The server records, for every chunk, when it was
due on the simulated schedule (`scheduled`) and when it was written to the socket (`sent`), on the
same time.perf_counter clock the client stamps arrivals with (CLOCK_MONOTONIC, one host). Errors:

- TTFT: the client's TTFT (first token-bearing chunk - request sent) minus the server's
  (first chunk sent - request read, "actual") or minus the simulated TTFT (first chunk due -
  request read, "schedule"). Signed: positive means the client saw a longer TTFT.
- inter-chunk: |client gap between consecutive chunks - server gap (sent, or scheduled)|.
- decode_tps: |client decode_tps / server decode_tps - 1|, both by specexp.metrics' definition
  ((tokens - 1) / (last - first)), the server's from sent or scheduled times.

Results are recorded (benchmarks/results/), not asserted: they depend on the machine and its load.
"""

from __future__ import annotations

import argparse
import asyncio
import datetime as dt
import inspect
import os
import platform
import shlex
import subprocess
import sys
import tempfile
import time
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

import httpx
import numpy as np

REPO = Path(__file__).resolve().parents[1]
sys.path.insert(0, str(REPO))

from specexp import metrics  # noqa: E402
from specexp.runtimes.client import stream_all, to_trace  # noqa: E402
from specexp.runtimes.process import ServerProcess, free_port  # noqa: E402

DEFAULT_OVERRIDES = ["hardware=h200", "drafter=mtp", "k=3"]
PROMPT = "Write a Python module implementing an LRU cache with TTL expiry, thread safety, and a decorator API."
STALL_S = 120.0
"""The client's stall timeout, as HttpRuntime passes runtime.stall_timeout_s (where the client has one)."""


@dataclass
class Samples:
    """Errors of one concurrency level, in seconds (decode_tps: relative)."""

    requests: int = 0
    chunks: int = 0
    mismatched: int = 0
    failed: int = 0
    ttft_actual: list[float] = field(default_factory=list)
    ttft_schedule: list[float] = field(default_factory=list)
    gap_actual: list[float] = field(default_factory=list)
    gap_schedule: list[float] = field(default_factory=list)
    tps_actual: list[float] = field(default_factory=list)
    tps_schedule: list[float] = field(default_factory=list)
    upload: list[float] = field(default_factory=list)
    lateness: list[float] = field(default_factory=list)
    delivery: list[float] = field(default_factory=list)
    step: list[float] = field(default_factory=list)


def body(rid: str, max_tokens: int, model: str) -> dict[str, Any]:
    return {
        "model": model, "messages": [{"role": "user", "content": f"[{rid}] {PROMPT}"}],
        "max_tokens": max_tokens, "temperature": 0.0, "ignore_eos": True, "stream": True, "request_id": rid,
        "stream_options": {"include_usage": True, "continuous_usage_stats": True},
    }


async def window(url: str, bodies: list[dict[str, Any]]) -> list[Any]:
    paths = [("/v1/chat/completions", b["request_id"], b) for b in bodies]
    if "stall_s" in inspect.signature(stream_all).parameters:
        return await stream_all(url, paths, 600.0, None, STALL_S)  # type: ignore[call-arg]
    return await stream_all(url, paths, 600.0)


def measure(url: str, concurrency: int, windows: int, max_tokens: int, model: str, tag: str) -> Samples:
    out = Samples()
    for w in range(windows):
        bodies = [body(f"{tag}c{concurrency}-w{w}-r{i}", max_tokens, model) for i in range(concurrency)]
        raws = asyncio.run(window(url, bodies))
        records = {r["request_id"]: r for r in httpx.get(f"{url}/debug/requests", timeout=30).json()["requests"]}
        for b, raw in zip(bodies, raws):
            out.requests += 1
            trace = to_trace(b["request_id"], raw)
            rec = records.get(b["request_id"])
            if trace.error is not None or rec is None:
                out.failed += 1
                continue
            chunks = rec["chunks"]
            if len(chunks) != len(trace.events) or [c["tokens"] for c in chunks] != [e.tokens for e in trace.events]:
                out.mismatched += 1
                continue
            add(out, trace, rec, chunks, rec["speed"])
    return out


def add(out: Samples, trace: Any, rec: dict[str, Any], chunks: list[dict[str, Any]], speed: float) -> None:
    arrivals = [e.t for e in trace.events]
    sent = [c["sent"] for c in chunks]
    due = [c["scheduled"] for c in chunks]
    out.chunks += len(chunks)
    ttft = metrics.ttft_s(trace)
    assert ttft is not None
    out.ttft_actual.append(ttft - (sent[0] - rec["arrived"]))
    out.ttft_schedule.append(ttft - (chunks[0]["sim_t"] - rec["sim_arrived"]) / speed)
    out.upload.append(rec["arrived"] - trace.sent_at)
    out.lateness += [s - d for s, d in zip(sent, due)]
    out.delivery += [a - s for a, s in zip(arrivals, sent)]
    for i in range(1, len(chunks)):
        client_gap = arrivals[i] - arrivals[i - 1]
        out.gap_actual.append(abs(client_gap - (sent[i] - sent[i - 1])))
        out.gap_schedule.append(abs(client_gap - (due[i] - due[i - 1])))
        out.step.append(due[i] - due[i - 1])
    n = trace.completion_tokens
    client_tps = metrics.decode_tps(trace)
    if client_tps is not None and n and n > 1 and sent[-1] > sent[0] and due[-1] > due[0]:
        out.tps_actual.append(abs(client_tps / ((n - 1) / (sent[-1] - sent[0])) - 1))
        out.tps_schedule.append(abs(client_tps / ((n - 1) / (due[-1] - due[0])) - 1))


def pct(values: list[float], scale: float, digits: int = 2) -> str:
    if not values:
        return "n/a"
    a = np.asarray(values) * scale
    return " / ".join(f"{v:.{digits}f}" for v in (np.percentile(a, 50), np.percentile(a, 95), a.max()))


def tables(results: dict[int, Samples]) -> str:
    lines = []
    for title, ttft, gap, tps in (
        ("vs the server's actual send times", "ttft_actual", "gap_actual", "tps_actual"),
        ("vs the simulated schedule", "ttft_schedule", "gap_schedule", "tps_schedule"),
    ):
        lines += [f"#### Client error {title}", "",
                  "| concurrency | requests | chunks | TTFT error ms (p50 / p95 / max) | "
                  "inter-chunk \\|error\\| ms (p50 / p95 / max) | decode_tps \\|rel. error\\| % (p50 / p95 / max) |",
                  "|---:|---:|---:|---|---|---|"]
        for c, s in results.items():
            lines.append(f"| {c} | {s.requests} | {s.chunks} | {pct(getattr(s, ttft), 1e3)} | "
                         f"{pct(getattr(s, gap), 1e3)} | {pct(getattr(s, tps), 1e2, 3)} |")
        lines.append("")
    lines += ["#### Where the time goes (ms, p50 / p95 / max)", "",
              "| concurrency | request upload (server read - client sent) | server lateness (sent - scheduled) | "
              "chunk delivery (client arrival - sent) | scheduled step | failed / mismatched |",
              "|---:|---|---|---|---|---:|"]
    for c, s in results.items():
        lines.append(f"| {c} | {pct(s.upload, 1e3)} | {pct(s.lateness, 1e3)} | {pct(s.delivery, 1e3)} | "
                     f"{pct(s.step, 1e3)} | {s.failed} / {s.mismatched} |")
    return "\n".join(lines) + "\n"


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0], allow_abbrev=False)
    parser.add_argument("--concurrency", type=int, nargs="+", default=[1, 8, 64])
    parser.add_argument("--windows", type=int, default=5, help="windows (rounds of concurrent requests) per level")
    parser.add_argument("--max-tokens", type=int, default=256)
    parser.add_argument("--speed", type=float, default=1.0, help="sim server --speed (1: real time)")
    parser.add_argument("--out", type=Path, help="also write the report here")
    args, overrides = parser.parse_known_args()
    overrides = overrides or DEFAULT_OVERRIDES
    port = free_port()
    argv = [sys.executable, "-m", "specexp.sim", *overrides, "--port", str(port), "--speed", str(args.speed)]
    url = f"http://127.0.0.1:{port}"
    load = [os.getloadavg()[0]]
    started = dt.datetime.now().astimezone().isoformat(timespec="seconds")
    with tempfile.TemporaryDirectory() as tmp:
        server = ServerProcess(argv, Path(tmp) / "server.log")
        try:
            server.wait_ready(lambda: _healthy(url), 60)
            check_same_clock(url)
            model = httpx.get(f"{url}/v1/models", timeout=5).json()["data"][0]["id"]
            measure(url, 1, 1, 16, model, "warmup-")
            results = {c: measure(url, c, args.windows, args.max_tokens, model, "") for c in args.concurrency}
            clock = httpx.get(f"{url}/debug/clock", timeout=5).json()
            load.append(os.getloadavg()[0])
        finally:
            server.stop()
    report = header(args, overrides, clock, load, started) + tables(results)
    print(report)
    if args.out:
        args.out.parent.mkdir(parents=True, exist_ok=True)
        args.out.write_text(report, encoding="utf-8")


def check_same_clock(url: str) -> None:
    """The comparison needs the server's perf_counter to be the client's (one host, CLOCK_MONOTONIC)."""
    with httpx.Client(timeout=5) as client:
        for _ in range(5):
            before = time.perf_counter()
            server = client.get(f"{url}/debug/clock").json()["perf_counter"]
            after = time.perf_counter()
            if before <= server <= after:
                return
    raise SystemExit(f"the server's clock ({server:.6f}) is not the client's ([{before:.6f}, {after:.6f}]): "
                     "run the benchmark on the server's host")


def _healthy(url: str) -> bool:
    try:
        return httpx.get(f"{url}/health", timeout=1).status_code == 200
    except httpx.HTTPError:
        return False


def header(args: argparse.Namespace, overrides: list[str], clock: dict[str, Any], load: list[float],
           started: str) -> str:
    command = "python benchmarks/client_timing.py " + " ".join(shlex.quote(a) for a in sys.argv[1:])
    sha = subprocess.run(["git", "rev-parse", "--short", "HEAD"], cwd=REPO, capture_output=True, text=True,
                         check=False).stdout.strip() or "unknown"
    stall = "stall_s=120 (as HttpRuntime)" if "stall_s" in inspect.signature(stream_all).parameters else "no stall_s"
    return "\n".join([
        "### specexp client timing error against the sim server", "",
        f"- date: {started} (start of the run)",
        f"- command: `{command.strip()}`",
        f"- machine: {os.cpu_count()} CPUs, {platform.system()} {platform.release()}, Python {platform.python_version()}; "
        f"client and server on the same host; 1-min load average {load[0]:.2f} before, {load[-1]:.2f} after; "
        f"git {sha} (+ working tree)",
        f"- server: `python -m specexp.sim {' '.join(overrides)} --speed {args.speed:g}`; "
        f"{clock['steps']} engine steps, {clock['resyncs']} clock resyncs (max lag {clock['max_lag_s'] * 1e3:g} ms)",
        f"- client: specexp.runtimes.client.stream_all + to_trace ({stall}); {args.windows} windows per level, "
        f"max_tokens {args.max_tokens}, streamed chat with include_usage + continuous_usage_stats",
        "- TTFT error is signed (client minus reference); inter-chunk and decode_tps errors are absolute.", "",
    ]) + "\n"


if __name__ == "__main__":
    main()
