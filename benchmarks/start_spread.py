"""How far a fresh server start moves a figure, against the windows of one server: the figure the
simulator's engine profiles carry as `start_spread` (conf/sim_engine/*.yaml), from specexp's own
records of the same job started again.

For each point (one measurement's conditions) with windows on two starts or more, on the log of
`decode_tps`: a one-way random-effects split of the variance (the starts the groups) gives the
start-to-start variance, sigma_start^2 = (MS_between - MS_within) / n, n the windows a start; the
points' estimates are pooled (their mean, a negative one counting as 0), and sigma_start is the
profile's `start_spread`.

Two sources:

- `--h200`: benchmarks/data/h200-llamacpp-repeats.jsonl, the same two llama-server jobs (pure decode
  and the trace's decode, concurrency 1-32) run twice, each on a fresh server of one H200 machine;
  the first 13 lines are the first run, the next 13 the second. Only one and two slots are pooled:
  from four slots up, which slot a request lands in moves a window by more than a start does.
- `--records DIR`: a sweep of `workload.server_starts` > 1 (reports/cpu_server_starts: the real
  llama-server on two CPU cores, five starts of three windows each).

    .venv/bin/python benchmarks/start_spread.py --write   # rewrites benchmarks/results/start_spread.md
"""

from __future__ import annotations

import argparse
import json
import math
import statistics
import sys
from pathlib import Path

REPO = Path(__file__).resolve().parents[1]
sys.path.insert(0, str(REPO))

from specexp.record import find_records  # noqa: E402

H200 = REPO / "benchmarks/data/h200-llamacpp-repeats.jsonl"
CPU = REPO / "reports/cpu_server_starts"
OUT = REPO / "benchmarks/results/start_spread.md"
METRIC = "decode_tps"
MOST_SLOTS = 2


def split(starts: list[list[float]]) -> tuple[float, float, int]:
    """(start-to-start variance, within-start variance, windows a start) of the logs of one point's
    windows, grouped by start (equal group sizes: the smallest)."""
    n = min(len(s) for s in starts)
    logs = [[math.log(v) for v in s[:n]] for s in starts]
    means = [statistics.fmean(s) for s in logs]
    within = statistics.fmean([statistics.variance(s) for s in logs]) if n > 1 else 0.0
    between = n * statistics.variance(means)
    return max((between - within) / n, 0.0), within, n


def h200_points() -> list[tuple[str, list[list[float]]]]:
    lines = [json.loads(x) for x in H200.read_text().splitlines() if x.strip()]
    first, second = lines[:13], lines[13:]
    out = []
    for a, b in zip(first, second, strict=True):
        ca, cb = a["measured"]["conditions"], b["measured"]["conditions"]
        assert (ca["concurrency"], ca["output_tokens"]) == (cb["concurrency"], cb["output_tokens"])
        if ca["concurrency"] > MOST_SLOTS:
            continue
        label = f"c={ca['concurrency']}, {ca['output_tokens']} tokens out"
        out.append((label, [a["measured"]["samples"][METRIC], b["measured"]["samples"][METRIC]]))
    return out


def record_points(root: Path) -> list[tuple[str, list[list[float]]]]:
    out = []
    for _, record in sorted(find_records([root]), key=lambda x: str(x[0])):
        for m in record.measurements:
            values, starts = m.samples.get(METRIC) or [], m.server_start or []
            by_start: dict[int, list[float]] = {}
            for v, s in zip(values, starts, strict=True):
                if isinstance(v, (int, float)):
                    by_start.setdefault(s, []).append(float(v))
            if len(by_start) > 1:
                c = m.conditions
                label = f"{c.workload}, {c.drafter}" + (f" k={c.k}" if c.k else "")
                out.append((label, list(by_start.values())))
    return out


def table(points: list[tuple[str, list[list[float]]]]) -> tuple[list[str], float, float]:
    rows = [
        "| point | starts × windows | starts' medians (tok/s) | σ start | σ within |",
        "|---|---|---|---|---|",
    ]
    starts_var, within_var = [], []
    for label, groups in points:
        s2, w2, n = split(groups)
        starts_var.append(s2)
        within_var.append(w2)
        medians = ", ".join(f"{statistics.median(g):.2f}" for g in groups)
        rows.append(
            f"| {label} | {len(groups)} × {n} | {medians} | {math.sqrt(s2):.4f} | {math.sqrt(w2):.4f} |"
        )
    sigma = math.sqrt(statistics.fmean(starts_var))
    within = math.sqrt(statistics.fmean(within_var))
    return rows, sigma, within


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--write", action="store_true", help=f"rewrite {OUT.relative_to(REPO)}")
    args = parser.parse_args()
    text = [
        "# How far a fresh server start moves a figure",
        "",
        "Written by `benchmarks/start_spread.py` (its docstring says how): the log standard",
        f"deviation of `{METRIC}` between fresh starts of the same server (σ start) and between the",
        "windows of one server (σ within), per point, and pooled. σ start is the engine profile's",
        "`start_spread`.",
        "",
    ]
    for title, points in (
        ("llama-server on an H200 (CUDA), one and two slots", h200_points()),
        ("llama-server on two CPU cores, Qwen2.5-Coder-1.5B Q4_K_M", record_points(CPU)),
    ):
        if not points:
            continue
        rows, sigma, within = table(points)
        text += [
            f"## {title}",
            "",
            *rows,
            "",
            f"Pooled: σ start {sigma:.4f}, σ within {within:.4f}.",
            "",
        ]
    out = "\n".join(text)
    print(out)
    if args.write:
        OUT.write_text(out, encoding="utf-8")


if __name__ == "__main__":
    main()
