"""What a new decode pass shape costs llama-server, read from every token's arrival time.

    .venv/bin/python benchmarks/llamacpp_graph_costs.py

Data: benchmarks/data/h200-llamacpp-{chunks,host-chunks-1,host-chunks-2}-requests.jsonl (the
trace's decode job on an H200 in three runs, every token's arrival time; benchmarks/data/README.md). Tokens that arrive within 1.5 ms of each
other are one step. In every window, the first step in which all its requests decode (no first
token) is the first pass of a new shape, the step after it the second: against the median of the
window's later all-decoding steps,

- the first step's extra at concurrency 1 (one token, no other request's tokens in its gap) is the
  graph rebuild plus the one-token pass run without a CUDA graph (`ungraphed_pass_ms[1]`, measured
  with graphs off: benchmarks/data/h200-llamacpp-slots.jsonl), so it gives `graph_rebuild_ms`;
- the second step's extra is the CUDA graph's capture (`graph_capture_ms`), at every concurrency,
  where the two steps follow each other whole (no request's tokens split between them).

Prints both medians and writes benchmarks/results/llamacpp_graph_costs.md; conf/sim_engine/llamacpp.yaml
takes them. (At higher concurrency the first step's gap is cut short by the step before it, whose
tokens arrive split, so only concurrency 1 gives the rebuild.)
"""

from __future__ import annotations

import json
import statistics
import sys
from collections import defaultdict
from pathlib import Path

REPO = Path(__file__).resolve().parents[1]
sys.path.insert(0, str(REPO))
DATA = tuple(
    REPO / "benchmarks/data" / f"h200-llamacpp-{name}-requests.jsonl"
    for name in ("chunks", "host-chunks-1", "host-chunks-2")
)
"""The trace's decode job run again (the sixth device call), then twice more on one machine (the seventh)."""
OUT = REPO / "benchmarks/results/llamacpp_graph_costs.md"
STEP_S = 1.5e-3
"""Tokens arriving closer together than this came from one step."""


def steps(requests: list[dict]) -> list[tuple[float, int, int]]:
    """(gap since the previous step in ms, tokens, first tokens) of every step of one window."""
    t0 = min(r["sent_at"] for r in requests)
    events = sorted(
        (r["sent_at"] - t0 + t, i) for r in requests for i, t in enumerate(r["chunk_times_s"])
    )
    grouped: list[tuple[list[float], list[int]]] = []
    for t, i in events:
        if grouped and t - grouped[-1][0][-1] < STEP_S:
            grouped[-1][0].append(t)
            grouped[-1][1].append(i)
        else:
            grouped.append(([t], [i]))
    out, prev = [], 0.0
    for times, index in grouped:
        out.append(((times[0] - prev) * 1e3, len(times), index.count(0)))
        prev = times[0]
    return out


def main() -> None:
    from specexp.sim.profile import load_profile

    ungraphed_one = load_profile("llamacpp").ungraphed_pass_ms[
        1
    ]  # TPOT at one slot, graphs off less on
    windows: dict[tuple[int, int], list[dict]] = defaultdict(list)
    for run, path in enumerate(DATA):
        for line in path.read_text().splitlines():
            r = json.loads(line)
            if not r["warmup"]:
                windows[(run, r["window"])].append(r)
    rows, rebuild, capture = [], [], []
    for key, requests in sorted(windows.items()):
        c = requests[0]["concurrency"]
        s = steps(requests)
        full = [k for k, (_, n, first) in enumerate(s) if n == c and first == 0]
        if len(full) < 4 or full[1] != full[0] + 1:  # the two steps must follow each other whole
            continue
        steady = statistics.median(s[k][0] for k in full[2:])
        first, second = s[full[0]][0] - steady, s[full[0] + 1][0] - steady
        capture.append(second)
        if c == 1:
            rebuild.append(first - ungraphed_one)
        rows.append(
            f"| {DATA[key[0]].name.removeprefix('h200-llamacpp-').removesuffix('-requests.jsonl')} | {c} | {requests[0]['repeat']} | {steady:.1f} | {first:+.1f} | {second:+.1f} |"
        )
    lines = [
        "# llama-server: what a new decode pass shape costs",
        "",
        "Written by `benchmarks/llamacpp_graph_costs.py` from "
        + ", ".join(f"`{path.relative_to(REPO)}`" for path in DATA)
        + " (see its docstring).",
        "",
        "| run | c | repeat | steady step (ms) | first step's extra (ms) | second step's extra (ms) |",
        "|---|---:|---:|---:|---:|---:|",
        *rows,
        "",
        f"- `graph_rebuild_ms` = median first extra at c = 1 less the ungraphed one-token pass "
        f"({ungraphed_one} ms): **{statistics.median(rebuild):.2f} ms** ({len(rebuild)} windows)",
        f"- `graph_capture_ms` = median second extra: **{statistics.median(capture):.2f} ms** "
        f"({len(capture)} windows)",
        "",
    ]
    text = "\n".join(lines)
    print(text)
    OUT.write_text(text)


if __name__ == "__main__":
    main()
