"""The `vllm` engine profile held against vLLM measured by specexp on an H200, every cell.

    .venv/bin/python benchmarks/vllm_calibration.py [--fit] [--data DIR ...]

Every measured job of `benchmarks/data/h200-vllm/` and `benchmarks/data/h200-vllm-2026-12-03/` (vLLM
0.26.0 with CUDA on an H200, two sittings: the dense Qwen3-8B shape and the hybrid Qwen3.8-27B shape
without weights, SmolLM2-135M with its trained weights; see `benchmarks/gpu/vllm_h200.py`) is simulated whole
from its own record (`specexp.fit.records`): `runtime=sim runtime.engine=vllm` with the job's
overrides, a drafter's measured acceptance by position, and the new suffix its prompts had. Prints
simulated against measured with the error and whether each is within the targets (decode and aggregate
15 %, prefill 20 %, TTFT 25 % or 20 ms, warm-over-cold gain 30 %), the drafter-free jobs of the two
shapes (fitted) apart from the jobs held out (MTP, EAGLE-3, SmolLM2). `--fit` re-runs the least-squares
fit of FITTED on the drafter-free jobs first, matching each TTFT by its parts (the front end, vLLM's
queue, vLLM's own time to the first token: specexp.measure.ttft_parts), not by its total; then
FITTED_SYNC on the jobs vLLM schedules synchronously (n-gram, draft model). Writes
benchmarks/results/vllm_calibration.md.
"""

from __future__ import annotations

import argparse
import math
from pathlib import Path

from specexp.fit import records as fr
from specexp.sim.profile import load_profile
from specexp.spec.vocabulary import C

REPO = Path(__file__).resolve().parents[1]
DATA = [
    REPO / "benchmarks/data/h200-vllm/sweeps",
    REPO / "benchmarks/data/h200-vllm-2026-12-03/sweeps",
]
FITTED = (
    "request_overhead_ms",
    "request_overhead_us_per_token",
    "request_serial_ms",
    "linear_prefill_layer_ms",
    "layer_overhead_us",
)
UPPER = (50.0, 10.0, 20.0, 5.0, 200.0)
"""Fitted on the jobs without a drafter of the two shapes, TTFT by its parts."""
FITTED_SYNC = ("sync_step_overhead_ms",)
"""Fitted on the jobs vLLM schedules synchronously (n-gram, draft model), after the others."""
HELD_MODELS = ("smollm2-135m",)
"""Models whose jobs are held out whatever their drafter: the fit is of the two studied shapes."""


def table(rows: list[fr.Row]) -> list[str]:
    lines = [
        "| cell | metric | measured | simulated | error | within target |",
        "|---|---|---:|---:|---:|---|",
    ]
    for r in rows:
        lines.append(
            f"| {r.label} | `{r.metric}` | {r.measured:.4g} | {r.simulated:.4g} | {r.error:+.1%} | "
            f"{'yes' if r.within else '**no**'} |"
        )
    errors = [r.error for r in rows if math.isfinite(r.error)]
    rms = math.sqrt(sum(e * e for e in errors) / len(errors)) if errors else float("nan")
    misses = sum(not r.within for r in rows)
    return [
        *lines,
        "",
        f"{len(rows)} figures, rms error {rms:.1%}, {misses} outside the target.",
        "",
    ]


def gains(rows: list[fr.Row]) -> list[str]:
    found = fr.warm_gains(rows)
    lines = [
        "| cell | measured gain | simulated gain | error | within 30 % |",
        "|---|---:|---:|---:|---|",
    ]
    for g in found:
        lines.append(
            f"| {g.label} | {g.measured:.2f}x | {g.simulated:.2f}x | {g.simulated / g.measured - 1:+.0%} | "
            f"{'yes' if g.within else '**no**'} |"
        )
    return [
        *lines,
        "",
        f"{len(found)} gains, {sum(not g.within for g in found)} outside the target.",
        "",
    ]


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--fit", action="store_true")
    parser.add_argument("--data", type=Path, action="append", default=[])
    parser.add_argument("--iterations", type=int, default=15)
    parser.add_argument("--out", type=Path, default=REPO / "benchmarks/results/vllm_calibration.md")
    args = parser.parse_args()
    roots = args.data or DATA
    jobs = [
        fr.Job(f"{j.group}, {(j.record.provenance.started_at or '')[:10]}", j.record)
        for root in roots
        for j in fr.load_jobs(root)
        if j.record.status == "ok"
    ]
    studied = [j for j in jobs if j.record.conditions.model not in HELD_MODELS]  # type: ignore[attr-defined]
    fitted = [j for j in studied if j.drafter == "none"]
    sync = [j for j in studied if j.drafter in load_profile("vllm").sync_scheduling_drafters]
    held = [j for j in jobs if j not in fitted and j not in sync]
    profile = load_profile("vllm")
    lines = [
        "# Engine profile `vllm` against vLLM measured on an H200",
        "",
        "Data: "
        + ", ".join(f"`{r.relative_to(REPO) if r.is_relative_to(REPO) else r}`" for r in roots)
        + " (specexp's records of vLLM 0.26.0 with CUDA on an H200 in two sittings, the two shapes served "
        "without weights, SmolLM2-135M with its own; benchmarks/results/gpu-h200-vllm.md). "
        "Simulated: each job from its own record with `runtime=sim runtime.engine=vllm` (specexp/fit/records.py). "
        "Targets (issue 22): decode and aggregate within 15 %, prefill within 20 %, TTFT within 25 % or 20 ms, "
        "warm-over-cold gain within 30 %.",
        "",
    ]
    if args.fit:
        hardware = fitted[0].record.provenance.config[C.hardware]
        figures = fr.fit(
            fitted,
            "vllm",
            FITTED,
            UPPER,
            iterations=args.iterations,
            unset={"layer_overhead_us": float(hardware["layer_overhead_us"])},
            parts=True,
        )
        print("fit:", figures, flush=True)
        lines += [
            "Fit on the drafter-free jobs, each TTFT by its parts: "
            + ", ".join(f"`{k}` {v:.4g}" for k, v in figures.items()),
            "",
        ]
        profile = fr.with_figures(profile, FITTED, [figures[k] for k in FITTED])
        second = fr.fit(
            sync, "vllm", FITTED_SYNC, (20.0,), iterations=args.iterations, base=profile, parts=True
        )
        print("fit:", second, flush=True)
        lines += [
            "Then on the n-gram and draft-model jobs: "
            + ", ".join(f"`{k}` {v:.4g}" for k, v in second.items()),
            "",
        ]
        profile = fr.with_figures(profile, FITTED_SYNC, [second[k] for k in FITTED_SYNC])
    names = (*FITTED, *FITTED_SYNC)
    lines += ["Profile: " + ", ".join(f"`{k}` {getattr(profile, k):.4g}" for k in names), ""]
    fitted_rows, sync_rows = fr.compare(fitted, "vllm", profile), fr.compare(sync, "vllm", profile)
    held_rows = fr.compare(held, "vllm", profile)
    part_rows = fr.compare(fitted, "vllm", profile, parts=True)
    lines += [
        "## Fitted: the jobs without a drafter",
        "",
        *table(fitted_rows),
        "### Warm over cold",
        "",
        *gains(fitted_rows),
        "### The TTFT parts the fit matched",
        "",
        "Front end, vLLM's queue (from 1 ms up) and vLLM's own time to the first token "
        "(benchmarks/results/vllm_ttft_parts.md has every point).",
        "",
        *table([r for r in part_rows if r.metric in fr.TTFT_PARTS]),
        "## Fitted: n-gram k = 4 and the draft model k = 4 on the dense shape (`sync_step_overhead_ms`)",
        "",
        "The simulator is given the job's measured acceptance by position.",
        "",
        *table(sync_rows),
        "## Held out: MTP k = 3 and 8 on the hybrid shape, EAGLE-3 k = 3 on the dense one, SmolLM2-135M",
        "",
        "The simulator is given each job's measured acceptance by position; these jobs were not fitted.",
        "",
        *table(held_rows),
        "### Warm over cold",
        "",
        *gains(held_rows),
    ]
    text = "\n".join(lines)
    print(text)
    args.out.write_text(text)


if __name__ == "__main__":
    main()
