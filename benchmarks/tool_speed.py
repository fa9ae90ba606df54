"""How long specexp itself takes: the figures a user waits for, against their targets.

    .venv/bin/python benchmarks/tool_speed.py [--runs N] [--out benchmarks/results/tool_speed.md]

- `python -m specexp --help`, and a misspelled option refused at plan time (`drafter=mtpp`);
- a one-cell run's start-up: from the command to its first request reaching the server (an HTTP
  server of this script's, reached with runtime=openai, that stamps the arrival on the host's
  monotonic clock);
- the design card's sweep (`python -m specexp -m drafter=mtp,dspark k=3,8,15`) and the whole
  `python -m specexp +experiment=spark_fp8_mtp_dspark` (composing every cell, simulating, records,
  report);
- `python -m specexp.report` of 10,000 records or more, made first by a simulator sweep (5 drafters
  x k 1-10 x 10 output lengths x 25 seeds).

Each is run `--runs` times, as a fresh process, and the median is held against the target (the
best and worst are shown). Python writes no bytecode cache on this machine
(PYTHONDONTWRITEBYTECODE=1 in its environment), so every run compiles specexp's modules as a
fresh clone does.
"""

from __future__ import annotations

import argparse
import http.server
import os
import statistics
import subprocess
import sys
import tempfile
import threading
import time
from collections.abc import Callable, Sequence
from pathlib import Path

REPO = Path(__file__).resolve().parents[1]
PY = sys.executable
STUDY = "spark_fp8_mtp_dspark"
REPORT_SWEEP = [
    "-m",
    "drafter=mtp,dspark,ngram,eagle3,none",
    "k=1,2,3,4,5,6,7,8,9,10",
    "workload=short_chat",
    "workload.output_tokens=8,16,24,32,40,48,56,64,72,80",
    "seed=" + ",".join(str(s) for s in range(25)),
]
CARD = ["-m", "drafter=mtp,dspark", "k=3,8,15"]
TARGETS = {"help": 0.5, "refusal": 0.5, "startup": 1.0, "card": 3.0, "study": 5.0, "report": 15.0}


def timed(argv: Sequence[str], status: int = 0) -> float:
    start = time.perf_counter()
    done = subprocess.run(
        list(argv),
        cwd=REPO,
        check=False,
        stdout=subprocess.DEVNULL,
        stderr=subprocess.DEVNULL,
        timeout=900,
    )
    if done.returncode != status:
        raise RuntimeError(f"{' '.join(argv)}: exit status {done.returncode}, not {status}")
    return time.perf_counter() - start


def startup_once() -> float:
    """Seconds from the command to the first request at a server of its own (runtime=openai)."""
    arrived: list[float] = []

    class Stamp(http.server.BaseHTTPRequestHandler):
        def do_GET(self) -> None:
            arrived.append(time.monotonic())
            self.send_response(503)
            self.end_headers()

        def log_message(self, *args: object) -> None:
            pass

    server = http.server.ThreadingHTTPServer(("127.0.0.1", 0), Stamp)
    threading.Thread(target=server.serve_forever, daemon=True).start()
    with tempfile.TemporaryDirectory() as tmp:
        start = time.monotonic()
        proc = subprocess.Popen(
            [
                PY,
                "-m",
                "specexp",
                "runtime=openai",
                f"runtime.url=http://127.0.0.1:{server.server_address[1]}",
                f"hydra.run.dir={tmp}/run",
            ],
            cwd=REPO,
            stdout=subprocess.DEVNULL,
            stderr=subprocess.DEVNULL,
        )
        try:
            while not arrived and proc.poll() is None and time.monotonic() - start < 60:
                time.sleep(0.001)
        finally:
            proc.kill()
            proc.wait()
            server.shutdown()
    if not arrived:
        raise RuntimeError("the run never reached the server")
    return arrived[0] - start


REFERENCE = "import time; t = time.perf_counter(); sum(i * i for i in range(3_000_000)); print(time.perf_counter() - t)"
"""A fixed piece of pure-Python work: how fast this machine's cores are while the figures are taken
(a lent machine's speed moves with its host's load)."""


def reference() -> float:
    """Seconds of REFERENCE in a fresh interpreter (the best of three)."""
    return min(
        float(
            subprocess.run([PY, "-c", REFERENCE], capture_output=True, text=True, check=True).stdout
        )
        for _ in range(3)
    )


def measure(name: str, once: Callable[[], float], runs: int) -> list[float]:
    times = [once() for _ in range(runs)]
    print(
        f"{name}: median {statistics.median(times):.2f} s ({', '.join(f'{t:.2f}' for t in times)})",
        flush=True,
    )
    return times


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--runs", type=int, default=5)
    parser.add_argument("--out", type=Path, default=REPO / "benchmarks/results/tool_speed.md")
    args = parser.parse_args()
    results: dict[str, list[float]] = {}
    before = reference()
    results["help"] = measure("help", lambda: timed([PY, "-m", "specexp", "--help"]), args.runs)
    results["refusal"] = measure(
        "refusal", lambda: timed([PY, "-m", "specexp", "drafter=mtpp"], status=2), args.runs
    )
    results["startup"] = measure("startup", startup_once, args.runs)
    with tempfile.TemporaryDirectory() as tmp:
        results["card"] = measure(
            "card",
            lambda: timed(
                [PY, "-m", "specexp", *CARD, f"hydra.sweep.dir={tmp}/card-{time.time_ns()}"]
            ),
            args.runs,
        )
        study = Path(tmp) / "study"
        results["study"] = measure(
            "study",
            lambda: timed(
                [
                    PY,
                    "-m",
                    "specexp",
                    f"+experiment={STUDY}",
                    f"hydra.sweep.dir={study}-{time.time_ns()}",
                ]
            ),
            args.runs,
        )
        sweep = Path(tmp) / "records"
        made = timed([PY, "-m", "specexp", *REPORT_SWEEP, f"hydra.sweep.dir={sweep}"])
        records = len(list(sweep.glob("*/result.json")))
        out = Path(tmp) / "report"
        results["report"] = measure(
            "report",
            lambda: timed(
                [
                    PY,
                    "-m",
                    "specexp.report",
                    str(sweep),
                    "-o",
                    str(out / "measurements.md"),
                    "--html",
                    str(out / "report.html"),
                ]
            ),
            max(args.runs // 2, 1),
        )
    load, after = os.getloadavg()[0], reference()
    what = {
        "help": "`python -m specexp --help`",
        "refusal": "a misspelled option refused at plan time (`python -m specexp drafter=mtpp`)",
        "card": f"the design card's sweep (`python -m specexp {' '.join(CARD)}`: 7 cells)",
        "startup": "one-cell run, command to first request (`python -m specexp runtime=openai runtime.url=...`)",
        "study": f"whole study (`python -m specexp +experiment={STUDY}`: compose, simulate, records, report)",
        "report": f"report of {records:,} records (`python -m specexp.report DIR -o ... --html ...`)",
    }
    lines = [
        "# specexp's own speed",
        "",
        f"Recorded with `.venv/bin/python benchmarks/tool_speed.py --runs {args.runs}` on "
        f"{os.cpu_count()} cores (load average {load:.1f} at the end). Each figure is the median of "
        "fresh processes. The machine is shared, and its speed moves with its host's load: a fixed "
        f"piece of Python work (`REFERENCE`) took {before:.3f} s before the figures and {after:.3f} s "
        "after them.",
        "",
        "| what | median (s) | best | worst | target (s) | met |",
        "|---|---:|---:|---:|---:|---|",
    ]
    for key, times in results.items():
        median = statistics.median(times)
        lines.append(
            f"| {what[key]} | {median:.2f} | {min(times):.2f} | {max(times):.2f} | "
            f"{TARGETS[key]:g} | {'yes' if median < TARGETS[key] else '**no**'} |"
        )
    lines += [
        "",
        f"The {records:,} records were made by one simulator sweep in {made:.0f} s "
        f"(`python -m specexp {' '.join(REPORT_SWEEP)}`).",
        "",
    ]
    text = "\n".join(lines)
    print(text)
    args.out.write_text(text, encoding="utf-8")


if __name__ == "__main__":
    main()
