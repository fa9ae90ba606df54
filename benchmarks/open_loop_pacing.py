"""Open-loop pacing: how closely specexp's client keeps an arrival schedule, at 10-500 req/s.

    .venv/bin/python benchmarks/open_loop_pacing.py                       # ~1 min, prints the report
    .venv/bin/python benchmarks/open_loop_pacing.py --out benchmarks/results/open_loop_pacing.md
    .venv/bin/python benchmarks/open_loop_pacing.py --rates 10 100 500 --seconds 4 --arrival constant

It starts benchmarks/pacing_server.py (a fast local server: the first chunk `--ttft-ms` after the
request was read, then one every `--gap-ms`) and, per rate, sends one open-loop window through
specexp.runtimes.http.client.stream_window: `--seconds` x rate requests at the offsets
specexp.measure.arrivals.schedule draws. For each rate it records the scheduled rate, the
achieved rate (the same formula as the `achieved_rate_rps` metric), whether specexp would mark the
load as delivered (within measure.RATE_MARGIN), and the client's send lag (actual send minus due)
at p50 / p99 / max, with the client's CPU share of the window. Recorded, not asserted.
"""

from __future__ import annotations

import argparse
import datetime as dt
import os
import platform
import shlex
import subprocess
import sys
from pathlib import Path

REPO = Path(__file__).resolve().parents[1]
sys.path.insert(0, str(REPO))

from specexp.measure.arrivals import rate_of, schedule
from specexp.measure.measurements import RATE_MARGIN
from specexp.measure.metrics import percentile
from specexp.runtimes.http.client import stream_window


def start_server(args: argparse.Namespace) -> tuple[subprocess.Popen[str], str]:
    argv = [
        sys.executable,
        str(REPO / "benchmarks" / "pacing_server.py"),
        "--port",
        "0",
        "--ttft-ms",
        str(args.ttft_ms),
        "--gap-ms",
        str(args.gap_ms),
    ]
    server = subprocess.Popen(argv, stdout=subprocess.PIPE, text=True)
    assert server.stdout is not None
    return server, server.stdout.readline().split()[-1]


def one_rate(url: str, rate: float, args: argparse.Namespace) -> dict[str, float | int | bool]:
    n = max(2, int(round(rate * args.seconds)))
    offsets = schedule(n, rate, args.arrival, 1.0, args.seed)
    body = {
        "model": "pacer",
        "messages": [{"role": "user", "content": "x"}],
        "max_tokens": args.max_tokens,
        "stream": True,
        "stream_options": {"include_usage": True, "continuous_usage_stats": True},
    }
    window = stream_window(url, [("/v1/chat/completions", body)] * n, 60.0, offsets=offsets)
    sent = [raw.sent_at for raw in window.raws]
    lags = sorted(max(raw.sent_at - (raw.due_at or raw.sent_at), 0.0) for raw in window.raws)
    scheduled, achieved = (
        rate_of([window.started_at + o for o in offsets]) or 0.0,
        rate_of(sent) or 0.0,
    )
    return {
        "rate": rate,
        "requests": n,
        "scheduled": scheduled,
        "achieved": achieved,
        "delivered": achieved >= (1 - RATE_MARGIN) * scheduled,
        "lag_p50": percentile(lags, 50),
        "lag_p99": percentile(lags, 99),
        "lag_max": lags[-1],
        "busy": window.cpu_s / window.wall_s,
        "errors": sum(1 for raw in window.raws if raw.error),
    }


def report(
    args: argparse.Namespace,
    rows: list[dict[str, float | int | bool]],
    started: str,
    load: list[tuple[float, float, float]],
) -> str:
    command = "python benchmarks/open_loop_pacing.py " + " ".join(
        shlex.quote(a) for a in sys.argv[1:]
    )
    sha = (
        subprocess.run(
            ["git", "rev-parse", "--short", "HEAD"],
            cwd=REPO,
            capture_output=True,
            text=True,
            check=False,
        ).stdout.strip()
        or "unknown"
    )
    loads = " -> ".join("/".join(f"{x:.2f}" for x in one) for one in load)
    lines = [
        "### specexp's client keeping an open-loop schedule against a pacing server",
        "",
        f"- date: {started}; git {sha} (+ working tree)",
        f"- command: `{command.strip()}`",
        f"- machine: {os.cpu_count()} CPUs, {platform.system()} {platform.release()}, Python "
        f"{platform.python_version()}; client and server on the same host; load average (1/5/15 min) {loads}",
        f"- server: benchmarks/pacing_server.py, TTFT {args.ttft_ms:g} ms, a chunk every {args.gap_ms:g} ms, "
        f"{args.max_tokens} tokens per request; {args.arrival} arrivals, seed {args.seed}, {args.seconds:g} s per rate",
        "- achieved: (requests - 1) / (last send - first send); delivered: within "
        f"{RATE_MARGIN:.0%} of the scheduled rate; lag: actual send - due",
        "",
        "| requested (req/s) | requests | scheduled (req/s) | achieved (req/s) | achieved / scheduled | delivered "
        "| lag p50 (ms) | lag p99 (ms) | lag max (ms) | client CPU | errors |",
        "|---:|---:|---:|---:|---:|---|---:|---:|---:|---:|---:|",
    ]
    for r in rows:
        lines.append(
            f"| {r['rate']:g} | {r['requests']} | {r['scheduled']:.1f} | {r['achieved']:.1f} | "
            f"{r['achieved'] / r['scheduled']:.3f} | {'yes' if r['delivered'] else '**no**'} | "
            f"{r['lag_p50'] * 1e3:.2f} | {r['lag_p99'] * 1e3:.2f} | {r['lag_max'] * 1e3:.2f} | "
            f"{r['busy']:.0%} | {r['errors']} |"
        )
    return "\n".join(lines) + "\n"


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0], allow_abbrev=False)
    parser.add_argument("--rates", type=float, nargs="+", default=[10, 50, 100, 200, 500])
    parser.add_argument("--seconds", type=float, default=4.0, help="schedule length per rate")
    parser.add_argument("--arrival", choices=["poisson", "constant", "gamma"], default="poisson")
    parser.add_argument("--seed", type=int, default=0)
    parser.add_argument("--max-tokens", type=int, default=16)
    parser.add_argument("--ttft-ms", type=float, default=20.0)
    parser.add_argument("--gap-ms", type=float, default=5.0)
    parser.add_argument("--out", type=Path, help="also write the report here")
    args = parser.parse_args()
    load = [os.getloadavg()]
    started = dt.datetime.now().astimezone().isoformat(timespec="seconds")
    server, url = start_server(args)
    try:
        stream_window(
            url,
            [
                (
                    "/v1/chat/completions",
                    {"model": "pacer", "messages": [], "max_tokens": 2, "stream": True},
                )
            ],
            30.0,
        )  # imports, first connection
        rows = [one_rate(url, rate, args) for rate in args.rates]
    finally:
        server.terminate()
        server.wait(10)
    load.append(os.getloadavg())
    text = report(args, rows, started, load)
    print(text)
    if args.out:
        args.out.parent.mkdir(parents=True, exist_ok=True)
        args.out.write_text(text, encoding="utf-8")


if __name__ == "__main__":
    main()
