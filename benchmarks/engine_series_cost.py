"""What reading the engine's state during a window costs the window, on the real llama-server.

    export SPECEXP_LLAMA_SERVER=$(scripts/build-llama-server.sh | tail -n1)
    .venv/bin/python benchmarks/engine_series_cost.py      # about 10 minutes on 2 cores, alone

For specexp's tiny model (fast steps: the most readings per token, the worst case) and the trained
Qwen2.5-Coder-1.5B (Q4_K_M), one llama-server each runs fresh_generation at concurrency 1 and 2 with
the engine read every 0.1 s, every 0.5 s (the default) and not at all (`workload.engine_series_interval_s`),
four repeats each, each a sweep (and a server) of its own, twice, the second time in the reverse order (so a drift of the machine over the
run falls on every interval alike). Each window's decode_tps and TTFT are pooled per interval; a
difference from no readings smaller than the run-to-run spread of no readings is no cost this
machine can see. Writes benchmarks/results/engine_series_cost.md.
"""

from __future__ import annotations

import statistics
import subprocess
import sys
import tempfile
from pathlib import Path
from typing import Any

REPO = Path(__file__).resolve().parents[1]
sys.path.insert(0, str(REPO))

from specexp.record import find_records  # noqa: E402
from specexp.spec.vocabulary import M  # noqa: E402

OUT = REPO / "benchmarks/results/engine_series_cost.md"
INTERVALS = ("null", "0.5", "0.1")
SETUPS = {
    "tiny (random weights, f32)": ("model=tiny", "quantization=f32", "workload.output_tokens=256"),
    "qwen2.5-coder-1.5b (trained, Q4_K_M)": (
        "model=qwen2.5-coder-1.5b",
        "quantization=q4_k_m",
        "workload.output_tokens=128",
    ),
}
COMMON = (
    "runtime=llamacpp",
    "hardware=cpu",
    "runtime.extra_args=[-t,2]",
    "workload=fresh_generation",
    "workload.concurrency=[1,2]",
    "workload.repeats=4",
)


def sweep(setup: tuple[str, ...], interval: str, where: Path) -> list[dict[str, Any]]:
    """One sweep at one interval (a server of its own: the interval is no part of a run id, so one
    sweep would run the cells once): its measurements' per-window figures and readings."""
    argv = [
        sys.executable,
        "-m",
        "specexp",
        "-m",
        *COMMON,
        *setup,
        f"workload.engine_series_interval_s={interval}",
        f"hydra.sweep.dir={where}",
    ]
    subprocess.run(argv, cwd=REPO, check=True, capture_output=True, text=True)
    out = []
    for _, record in find_records([where]):
        for m in record.measurements:
            out.append(
                {
                    "concurrency": m.conditions.concurrency,
                    "tps": m.samples.get(M.decode_tps, []),
                    "ttft": m.samples.get(M.ttft_s, []),
                    "series": [s for s in m.engine_series or () if s is not None],
                }
            )
    return out


def samples(measured: list[dict[str, Any]], name: str) -> list[float]:
    """Every window's value of `name` (the measurements' per-repeat samples)."""
    return [v for m in measured for v in m[name] if v is not None]


def main() -> None:
    rows = []
    for label, setup in SETUPS.items():
        pooled: dict[tuple[int, str], list[dict[str, Any]]] = {}
        with tempfile.TemporaryDirectory() as tmp:
            for i, order in enumerate((INTERVALS, tuple(reversed(INTERVALS)))):
                for interval in order:
                    for m in sweep(setup, interval, Path(tmp) / f"{i}-{interval}"):
                        pooled.setdefault((m["concurrency"], interval), []).append(m)
        for c in sorted({c for c, _ in pooled}):
            off = samples(pooled[(c, "null")], "tps")
            for interval in INTERVALS:
                members = pooled[(c, interval)]
                tps, ttft = samples(members, "tps"), samples(members, "ttft")
                series = [s for m in members for s in m["series"]]
                reads = [s.read_s for s in series if s.read_s is not None]
                change = statistics.median(tps) / statistics.median(off) - 1
                within = min(off) <= statistics.median(tps) <= max(off)
                rows.append(
                    f"| {label} | {c} | {'off' if interval == 'null' else interval + ' s'} | "
                    f"{len(tps)} | {statistics.median(tps):.1f} ({min(tps):.1f}-{max(tps):.1f}) | "
                    f"{'—' if interval == 'null' else f'{change * 100:+.1f} %'} | "
                    f"{'—' if interval == 'null' else ('yes' if within else '**no**')} | "
                    f"{statistics.median(ttft) * 1e3:.0f} | "
                    f"{statistics.fmean(len(s.t) for s in series):.0f} | "
                    f"{statistics.median(reads) * 1e3:.1f} |"
                    if series and reads
                    else f"| {label} | {c} | off | {len(tps)} | {statistics.median(tps):.1f} "
                    f"({min(tps):.1f}-{max(tps):.1f}) | — | — | {statistics.median(ttft) * 1e3:.0f} | 0 | — |"
                )
    lines = [
        "# What reading the engine costs a window (llama-server, 2-core CPU)",
        "",
        "Written by `benchmarks/engine_series_cost.py` (see its docstring). decode_tps: every window's, "
        "median (min-max); *within spread*: the median lies inside the min-max of the windows read not "
        "at all; TTFT median; readings per window and the median time a reading took (the answer of "
        "llama-server's `/metrics`, which its main loop gives between two decode steps).",
        "",
        "| model | concurrency | readings every | windows | decode_tps | vs off | within spread | TTFT (ms) | readings a window | a reading (ms) |",
        "|---|---:|---|---:|---:|---:|---|---:|---:|---:|",
        *rows,
        "",
    ]
    text = "\n".join(lines)
    print(text)
    OUT.write_text(text)


if __name__ == "__main__":
    main()
