"""How long the simulator takes to answer a whole study.

    .venv/bin/python benchmarks/sim_speed.py [EXPERIMENT] [--runs N] [--out benchmarks/results/sim_speed.md]

Runs `python -m specexp +experiment=EXPERIMENT` once into a temporary folder (the whole command:
Hydra composing every cell, the simulation, records and the report), then simulates every cell
of that sweep again from its record's spec, N times, timing the simulation alone (the runtime
starting, every measurement window of the workload driven through it). Prints both and writes
them, with the machine's load, to the results file.
"""

from __future__ import annotations

import argparse
import json
import os
import subprocess
import sys
import tempfile
import time
from pathlib import Path

from specexp.spec.experiment import ExperimentSpec

REPO = Path(__file__).resolve().parents[1]


def simulate(spec: ExperimentSpec, job_dir: Path) -> int:
    """Every window of the spec's workload on a fresh simulated server; the windows' count."""
    from specexp.measure.events import RuntimeFailure
    from specexp.runtimes.sim import SimRuntime
    from specexp.workloads.driver import drive

    runtime = SimRuntime(spec, job_dir)
    try:
        runtime.start()
    except RuntimeFailure:
        return 0
    return sum(1 for _ in drive(runtime, spec.workload, marker="bench"))


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("experiment", nargs="?", default="spark_fp8_mtp_dspark")
    parser.add_argument("--runs", type=int, default=3)
    parser.add_argument("--out", type=Path, default=REPO / "benchmarks/results/sim_speed.md")
    args = parser.parse_args()
    with tempfile.TemporaryDirectory() as tmp:
        sweep = Path(tmp) / "sweep"
        start = time.perf_counter()
        subprocess.run([sys.executable, "-m", "specexp", f"+experiment={args.experiment}", f"hydra.sweep.dir={sweep}"],
                       cwd=REPO, check=True, stdout=subprocess.DEVNULL, timeout=900)
        whole = time.perf_counter() - start
        records = [json.loads(p.read_text()) for p in sorted(sweep.glob("*/result.json"))]
        fields = set(ExperimentSpec.model_fields)
        specs = [ExperimentSpec.model_validate({k: v for k, v in r["provenance"]["config"].items() if k in fields})
                 for r in records if r["status"] == "ok"]
        times, windows = [], 0
        for _ in range(args.runs):
            start = time.perf_counter()
            windows = sum(simulate(spec, Path(tmp)) for spec in specs)
            times.append(time.perf_counter() - start)
    load = os.getloadavg()[0]
    best, median = min(times), sorted(times)[len(times) // 2]
    lines = [
        f"# Simulator speed: `+experiment={args.experiment}`", "",
        f"- whole command (`python -m specexp +experiment={args.experiment}`: composing, simulating, "
        f"records, report): {whole:.1f} s",
        f"- simulation alone, {len(specs)} cells, {windows} measurement windows: best {best:.2f} s, "
        f"median {median:.2f} s of {args.runs} runs",
        f"- machine: {os.cpu_count()} cores, load average {load:.1f} at the end (shared; the figures are wall time)",
        "", "Target (issue 14): a whole study simulates in under 5 s.", "",
    ]
    text = "\n".join(lines)
    print(text)
    args.out.write_text(text)


if __name__ == "__main__":
    main()
