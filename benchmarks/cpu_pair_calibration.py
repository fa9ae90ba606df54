"""The simulator's `cpu` device and its `llamacpp` profile against llama-server measured on this 2-core
CPU with trained weights: fitted on part of the study's cells, judged on the cells it was not fitted on.

    .venv/bin/python benchmarks/cpu_pair_calibration.py [--fit] [--iterations N]

Data: the committed study reports/cpu_real_pair/ (Qwen2.5-Coder-1.5B-Instruct Q4_K_M, drafted by
Qwen2.5-Coder-0.5B-Instruct Q4_K_M or by n-gram lookup; llama-server on 2 cores; experiments/cpu_real_pair.yaml).
Every job is simulated whole from its own record (specexp/fit/records.py): `runtime=sim
runtime.engine=llamacpp hardware=cpu` with the job's overrides, and for a drafter what the engine's
own counters measured over the job: acceptance by position, the share of steps that drafted at all
(draft_rate) and how far drafts went (draft_continue). The simulator is then judged on what a pass
costs on this CPU, not on a guess of what the drafter accepts.

Fitted (`--fit`, Levenberg-Marquardt on log(simulated / measured) of decode, aggregate and TTFT):
the hardware's achieved bandwidth and Q4_K compute, its per-pass overhead, and the profile's
sampling cost per token, on the jobs without a drafter (concurrency 1, 2, 4) and the drafter jobs
at k = 1 and k = 16 (one stream). Held out: every drafter job at k = 2, 8, 12 (one stream) and at
k = 4 (concurrency 1, 2, 4). Reported: each held-out cell's speedup over no drafter, simulated
against measured (the issue's target: within 15 %), by k and by concurrency. Writes
benchmarks/results/cpu_pair_calibration.md.
"""

from __future__ import annotations

import argparse
import math
import statistics
from collections import defaultdict
from collections.abc import Sequence
from pathlib import Path

import numpy as np

from specexp.fit import records as fr
from specexp.fit.engine_cells import simulate
from specexp.fit.hardware import _lm
from specexp.sim.profile import EngineProfile, load_profile
from specexp.spec.experiment import ExperimentSpec

REPO = Path(__file__).resolve().parents[1]
DATA = REPO / "reports"
STUDY = "cpu_real_pair"
ENGINE, DEVICE = "llamacpp", "cpu"
FIT_K = (1, 16)
"""k of the one-stream drafter jobs fitted on (with every job without a drafter)."""
TARGET = 0.15
HARDWARE = ("achieved.bandwidth", "achieved.compute_by_dtype.int4", "step_overhead_ms")
PROFILE = ("seq_overhead_ms", "layer_overhead_us")
UPPER = (1.0, 1.0, 50.0, 20.0, 2000.0)
ANSWERS = ("lossless_sampling", "task_scores")
"""Workloads whose figures are about answers, not speed: not simulated here."""


SLOWED: tuple[str, ...] = ()
"""Jobs left out because the machine ran them slower than the rest (`prompt_speeds` prints each
baseline's own prefill and decode ms a token as evidence). None since the study was measured again
whole, in one sitting, on 2026-12-03; the first recording's five first baselines were left out
here for that reason (reports/cpu_real_pair/README.md)."""


def load() -> list[fr.Job]:
    jobs = [j for j in fr.load_jobs(DATA) if j.group == STUDY and j.record.status == "ok"]
    return [j for j in jobs if str(j.record.conditions.workload).split("@")[0] not in ANSWERS]  # type: ignore[attr-defined]


def prompt_speeds(jobs: Sequence[fr.Job]) -> list[str]:
    """Per job without a drafter: llama-server's own prefill ms a token and decode ms a token at
    one stream (medians over its requests), and whether it is left out (SLOWED)."""
    lines = [
        "| job without a drafter | started | prefill ms a token | decode ms a token | used |",
        "|---|---|---:|---:|---|",
    ]
    for job in (j for j in jobs if j.drafter == "none"):
        m = next(m for m in job.record.measurements if m.conditions.concurrency == 1)  # type: ignore[attr-defined]
        timings = m.engine_timings or []
        prefill = statistics.median(float(t["prompt_per_token_ms"]) for t in timings)
        decode = statistics.median(float(t["predicted_per_token_ms"]) for t in timings)
        started = (job.record.provenance.started_at or "")[11:19]
        used = "**left out**" if job.record.run_id in SLOWED else "yes"
        lines.append(
            f"| {job.label} (`{job.record.run_id}`) | {started} | {prefill:.1f} | {decode:.1f} | {used} |"
        )
    return lines


def is_fitted(job: fr.Job) -> bool:
    c = job.record.conditions
    concurrency = {m.conditions.concurrency for m in job.record.measurements}  # type: ignore[attr-defined]
    return job.drafter == "none" or (c.k in FIT_K and concurrency == {1})  # type: ignore[attr-defined]


def concurrency_table(rs: Sequence[fr.Row]) -> list[str]:
    """sim ÷ measured of the drafter jobs' own figures under concurrency, by drafter and level."""
    groups: dict[str, list[float]] = defaultdict(list)
    for r in rs:
        c = r.measurement.conditions
        if r.job.drafter != "none" and (c.concurrency or 1) > 1 and math.isfinite(r.error):  # type: ignore[attr-defined]
            groups[f"`{r.job.drafter}` k={c.k}, concurrency {c.concurrency}, `{r.metric}`"].append(  # type: ignore[attr-defined]
                r.simulated / r.measured
            )
    lines = [
        "| drafter, k, concurrency, figure | cells | sim ÷ measured: median | worst | within 15 % |",
        "|---|---:|---:|---:|---:|",
    ]
    for key in sorted(groups):
        v = groups[key]
        worst = max(v, key=lambda x: abs(x - 1))
        within = sum(abs(x - 1) <= TARGET for x in v)
        lines.append(
            f"| {key} | {len(v)} | {statistics.median(v):.2f} | {worst:.2f} | {within} of {len(v)} |"
        )
    return lines


_SPECS: dict[str, ExperimentSpec] = {}


def _spec(job: fr.Job) -> ExperimentSpec:
    """The job on the simulator (composed once: Hydra takes a second a job)."""
    from specexp.run.compose import build_spec

    key = job.record.run_id
    if key not in _SPECS:
        _SPECS[key] = build_spec(fr.sim_overrides(job.record, ENGINE))
    return _SPECS[key]


def with_hardware(spec: ExperimentSpec, values: dict[str, float]) -> ExperimentSpec:
    """`spec` with the hardware figures `values` (dotted names under hardware)."""
    data = spec.hardware.model_dump()
    for name, value in values.items():
        *parents, leaf = name.split(".")
        node = data
        for part in parents:
            node = node.setdefault(part, {})
        node[leaf] = value
    return spec.model_copy(update={"hardware": type(spec.hardware).model_validate(data)})


def rows(
    jobs: Sequence[fr.Job], profile: EngineProfile, hardware: dict[str, float]
) -> list[fr.Row]:
    """Every measured figure of `jobs` beside the simulated one."""
    out = []
    for job in jobs:
        sim = simulate(with_hardware(_spec(job), hardware), profile)
        for m in job.record.measurements:  # type: ignore[attr-defined]
            s = fr.pair(m, sim)
            for metric in fr.metrics_of(job):
                value = getattr(m.metrics, metric)
                if value:
                    out.append(fr.Row(job, m, metric, float(value), float(s.get(metric, math.nan))))
    return out


def current(profile: EngineProfile) -> dict[str, float]:
    """The hardware file's figures of HARDWARE, as `cpu` has them now."""
    from specexp.spec.hardware import HardwareSpec
    from specexp.spec.options import load_option

    hw = load_option(HardwareSpec, "hardware", DEVICE, "hardware").model_dump()
    out = {}
    for name in HARDWARE:
        node = hw
        for part in name.split("."):
            node = node.get(part, 0.5) if isinstance(node, dict) else 0.5
        out[name] = float(node)
    return out


def fit(jobs: Sequence[fr.Job], profile: EngineProfile, iterations: int) -> dict[str, float]:
    start = current(profile)
    p0 = np.array([*start.values(), *(getattr(profile, n) for n in PROFILE)], dtype=float)
    top = np.array(UPPER)

    def split(p: np.ndarray) -> tuple[EngineProfile, dict[str, float]]:
        p = np.clip(np.nan_to_num(p, nan=0.0), 1e-4, top)
        hw = dict(zip(HARDWARE, (float(x) for x in p[: len(HARDWARE)]), strict=True))
        return fr.with_figures(profile, PROFILE, p[len(HARDWARE) :]), hw

    def residual(p: np.ndarray) -> np.ndarray:
        r = np.array([math.log(x.simulated / x.measured) for x in rows(jobs, *split(p))])
        return np.nan_to_num(r, nan=5.0, posinf=5.0, neginf=-5.0)

    p = _lm(residual, np.maximum(p0, 0.05), top, iterations=iterations)
    profile_fit, hw = split(p)
    return {**hw, **{n: float(getattr(profile_fit, n)) for n in PROFILE}}


def speed(row: fr.Row) -> bool:
    """The figure a speedup is read from: decode at one stream, aggregate under concurrency."""
    c = row.measurement.conditions.concurrency or 1  # type: ignore[attr-defined]
    return row.metric == ("decode_tps" if c == 1 else "aggregate_tps")


def baselines(rs: Sequence[fr.Row]) -> dict[tuple[str, int], tuple[float, float]]:
    """(workload, concurrency) -> medians of the drafter-free (measured, simulated) speed figure."""
    found: dict[tuple[str, int], list[tuple[float, float]]] = defaultdict(list)
    for r in rs:
        if r.job.drafter == "none" and speed(r):
            c = r.measurement.conditions
            found[(str(c.workload), c.concurrency or 1)].append((r.measured, r.simulated))  # type: ignore[attr-defined]
    return {
        key: (statistics.median(m for m, _ in v), statistics.median(s for _, s in v))
        for key, v in found.items()
    }


Speedup = tuple[fr.Row, float, float, tuple[float, float]]
"""(row, measured speedup, simulated speedup, the measured speedup's range over the repeats)."""


def speedups(rs: Sequence[fr.Row], base: dict) -> list[Speedup]:
    """Each drafter row's speedup, measured and simulated, over no drafter's median; the measured
    one's range: each repeat's figure over that median."""
    out = []
    for r in rs:
        c = r.measurement.conditions
        key = (str(c.workload), c.concurrency or 1)  # type: ignore[attr-defined]
        if r.job.drafter != "none" and speed(r) and key in base:
            m, s = base[key]
            repeats = [x / m for x in r.measurement.samples.get(r.metric, []) if x] or [
                r.measured / m
            ]
            out.append((r, r.measured / m, r.simulated / s, (min(repeats), max(repeats))))
    return out


def verdict(m: float, s: float, spread: tuple[float, float]) -> str:
    if abs(s / m - 1) <= TARGET:
        return "yes"
    return "no, inside the repeats' range" if spread[0] <= s <= spread[1] else "**no**"


def speedup_table(found: list[Speedup]) -> list[str]:
    lines = [
        "| cell | measured speedup (repeats' range) | simulated speedup | sim ÷ measured | within 15 % |",
        "|---|---:|---:|---:|---|",
    ]
    for r, m, s, spread in found:
        lines.append(
            f"| {r.label} | {m:.2f}× ({spread[0]:.2f}–{spread[1]:.2f}) | {s:.2f}× | {s / m:.2f} | "
            f"{verdict(m, s, spread)} |"
        )
    return lines


def summary(found: list[Speedup]) -> list[str]:
    """sim ÷ measured speedup by drafter and k, and by concurrency."""
    groups: dict[str, list[float]] = defaultdict(list)
    for r, m, s, _ in found:
        c = r.measurement.conditions
        groups[f"`{r.job.drafter}` k={c.k}, concurrency {c.concurrency}"].append(s / m)  # type: ignore[attr-defined]
    lines = [
        "| drafter, k, concurrency | cells | sim ÷ measured: median | worst | within 15 % |",
        "|---|---:|---:|---:|---:|",
    ]
    for key in sorted(groups, key=lambda g: (g.split()[0], int(g.split("k=")[1].split(",")[0]), g)):
        v = groups[key]
        worst = max(v, key=lambda x: abs(x - 1))
        within = sum(abs(x - 1) <= TARGET for x in v)
        lines.append(
            f"| {key} | {len(v)} | {statistics.median(v):.2f} | {worst:.2f} | {within} of {len(v)} |"
        )
    return lines


def figure_table(rs: Sequence[fr.Row]) -> list[str]:
    lines = [
        "| cell | metric | measured | simulated | error |",
        "|---|---|---:|---:|---:|",
    ]
    for r in rs:
        lines.append(
            f"| {r.label} | `{r.metric}` | {r.measured:.4g} | {r.simulated:.4g} | {r.error:+.1%} |"
        )
    errors = [r.error for r in rs if math.isfinite(r.error)]
    rms = math.sqrt(sum(e * e for e in errors) / len(errors)) if errors else math.nan
    return [*lines, "", f"{len(rs)} figures, rms error {rms:.1%}.", ""]


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--fit", action="store_true")
    parser.add_argument("--iterations", type=int, default=12)
    parser.add_argument(
        "--out", type=Path, default=REPO / "benchmarks/results/cpu_pair_calibration.md"
    )
    args = parser.parse_args()
    every = load()
    jobs = [j for j in every if j.record.run_id not in SLOWED]
    fitted, held = [j for j in jobs if is_fitted(j)], [j for j in jobs if not is_fitted(j)]
    profile = load_profile(ENGINE, DEVICE)
    hardware = current(profile)
    if args.fit:
        figures = fit(fitted, profile, args.iterations)
        print("fit:", figures, flush=True)
        hardware = {n: figures[n] for n in HARDWARE}
        profile = fr.with_figures(profile, PROFILE, [figures[n] for n in PROFILE])
    fit_rows, held_rows = rows(fitted, profile, hardware), rows(held, profile, hardware)
    base = baselines(fit_rows)
    held_speedups = speedups(held_rows, base)
    within = sum(abs(s / m - 1) <= TARGET for _, m, s, _ in held_speedups)
    spread = sum(verdict(m, s, r).startswith("no, inside") for _, m, s, r in held_speedups)
    figures = ", ".join(
        [f"`hardware.{n}` {v:.4g}" for n, v in hardware.items()]
        + [f"`{n}` {getattr(profile, n):.4g}" for n in PROFILE]
    )
    lines = [
        "# The simulator against llama-server on this CPU, trained weights",
        "",
        "Data: `reports/cpu_real_pair/` (specexp's records of llama-server, llama.cpp 0c1e570, on a 2-core "
        "x86-64 VM: Qwen2.5-Coder-1.5B-Instruct Q4_K_M drafted by Qwen2.5-Coder-0.5B-Instruct Q4_K_M or by "
        "n-gram lookup). Simulated: each job from its own record, `runtime=sim runtime.engine=llamacpp "
        "hardware=cpu`, given what the engine counted over the job: acceptance by position, the share of "
        "steps that drafted, and how far drafts went (specexp/fit/records.py). "
        "`.venv/bin/python benchmarks/cpu_pair_calibration.py [--fit]` writes this page.",
        "",
        f"Figures: {figures} (conf/hardware/cpu.yaml, conf/sim_engine/llamacpp.yaml `devices.cpu`).",
        "",
        f"Fitted on: the jobs without a drafter and the one-stream drafter jobs at k = "
        f"{', '.join(map(str, FIT_K))} ({len(fitted)} jobs). Held out: the other {len(held)} drafter jobs. "
        + (
            f"Left out: the {len(SLOWED)} jobs without a drafter at concurrency 1, 2, 4 that ran first and "
            "slower than the rest (below); so a speedup is judged at one stream, and under concurrency the "
            "held-out drafter jobs' own figures are."
            if SLOWED
            else "Left out: none (the study ran whole in one sitting; each baseline's own speeds are below). "
            "Under concurrency the held-out drafter jobs' own figures are judged."
        ),
        "",
        f"**Held out, one stream: {within} of {len(held_speedups)} speedups within 15 % of the measured "
        f"one**; {spread} more inside the measured repeats' own range.",
        "",
        "## Held out: speedup over no drafter at one stream, simulated ÷ measured, by drafter and k",
        "",
        "Speedup: `decode_tps` over no drafter's, the simulated one over the simulated no-drafter figure.",
        "",
        *summary(held_speedups),
        "",
        "## Held out: under concurrency, the drafter jobs' own figures, simulated ÷ measured",
        "",
        "Aggregate and per-stream decode throughput and TTFT of the k = 4 jobs at concurrency 2 and 4 "
        "(whether requests sent together reach llama-server's main loop in one step or in several "
        "differs from window to window: its own `prompt_ms` in the records shows both).",
        "",
        *concurrency_table(held_rows),
        "",
        "## The jobs without a drafter: llama-server's own speeds at one stream",
        "",
        *prompt_speeds(every),
        "",
        "## Held out: every cell",
        "",
        *speedup_table(held_speedups),
        "",
        "### Held out: the figures",
        "",
        *figure_table(held_rows),
        "## Fitted: the figures",
        "",
        *figure_table(fit_rows),
        "### Fitted: speedups",
        "",
        *speedup_table(speedups(fit_rows, base)),
        "",
    ]
    text = "\n".join(lines)
    print(text)
    args.out.write_text(text)


if __name__ == "__main__":
    main()
