"""The `sglang` engine profile held against SGLang measured by specexp on an H200.

    .venv/bin/python benchmarks/sglang_calibration.py [--fit] [--iterations N]

Every measured job of the SGLang sittings (SITTINGS: SGLang 0.5.12 with CUDA on an H200,
benchmarks/data/h200-sglang*/, the dense Qwen3-8B shape and the hybrid Qwen3.8-27B shape without
weights; see `benchmarks/gpu/sglang_h200.py`) is simulated whole from its own record
(`specexp.fit.records`): `runtime=sim runtime.engine=sglang` with the job's overrides and a drafter's
measured acceptance by position. Part of the cells is fitted, the rest held out:

- fitted (FITTED): the dense shape without a drafter (decode by concurrency, short bursts, prefill
  1k-16k, the prefix cache cold and warm): SGLang's per-request front end (tokenizer manager, HTTP)
  and its prefill kernels' speed against the hardware file's. Its hand-offs under a burst
  (`request_serial_ms`) and a prefill batch's build and launch (`prefill_launch_ms`) are measured from
  the same jobs' SGLang timestamps instead (benchmarks/sglang_waves.py);
- set from these (SET): the fixed cost of a round (`drafter_round_overhead_passes`), MTP's fitted to the
  hybrid's MTP at k = 1 and 7 by concurrency, EAGLE-3's to the dense shape's EAGLE-3 at k = 1 and 7 of
  2026-12-05b (ROUND_SCAN: the rms of their decode and aggregate figures at each value); the
  launches of a prefill SGLang runs kernel by kernel with EAGLE-3 (`ungraphed_prefill_layer_us`), from EAGLE-3's warm hits of 2026-12-05b against the
  drafter-less ones; the hybrid's prefill launches (`linear_prefill_layer_ms`), fitted to its first
  token at one stream (its decode and prefill jobs without a drafter) (docs/engines.md 2.6, 2.7);
- held out: the rest: the dense shape with EAGLE-3 (decode at 3/1/4, and at k = 7 in a later sitting;
  its prefix of 2026-12-04) and with the 2-layer draft model at k = 1, 3/1/4 and 7; the hybrid shape
  without a drafter (its prefix sent three times, a session's turns) and with MTP at 3/1/4 (decode, its prefix sent three
  times).
- on another card (OTHER_CARDS): every job of a sitting on an H100, simulated with its own `hardware`
  and the profile as it stands for that card; the profile was fitted on the H200 alone.

Prints simulated against measured with the error and whether each is within the targets (decode and
aggregate 15 %, prefill 20 %, TTFT 25 % or 20 ms, warm-over-cold gain 30 %). `--fit` refits FITTED first
and shows every table under the refit figures. Writes benchmarks/results/sglang_calibration.md.
"""

from __future__ import annotations

import argparse
import math
import sys
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parents[1]))
from benchmarks.gpu.sglang_report import per_length, sitting_dirs  # noqa: E402
from benchmarks.gpu.vllm_report import load as sittings  # noqa: E402
from benchmarks.vllm_calibration import ACROSS_SITTINGS, across_sittings, gains, table  # noqa: E402
from specexp.fit import records as fr  # noqa: E402
from specexp.sim.profile import EngineProfile, load_profile  # noqa: E402

REPO = Path(__file__).resolve().parents[1]
ENGINE = "sglang"
FITTED = (
    "request_overhead_ms",
    "request_overhead_us_per_token",
    "prefill_compute",
)
UPPER = (50.0, 10.0, 1.6)
"""Fitted (to the totals) on the dense shape's jobs without a drafter: the figures in
conf/sim_engine/sglang.yaml."""
FITTED_MODELS = ("qwen3-8b",)
SET_FROM = {
    "mtp": ("h200-sglang-2026-12-04c", "h200-sglang-2026-12-05"),
    "eagle3": ("h200-sglang-2026-12-05b",),
    "none": ("h200-sglang-2026-12-04",),
}
"""The sittings, by drafter, whose cells set a figure (sets_a_figure); a later sitting's are held out."""


def sets_a_figure(job: fr.Job) -> bool:
    """Whether the profile took a figure from `job` (SET), of a sitting in SET_FROM: the hybrid's MTP
    decode at k = 1 or 7 and EAGLE-3's (`drafter_round_overhead_passes`), EAGLE-3's prefix sent three
    times (`ungraphed_prefill_layer_us`), or the hybrid's decode and prefill jobs without a drafter,
    whose first token at one stream set its prefill's launches (`linear_prefill_layer_ms`)."""
    c = job.record.conditions  # type: ignore[attr-defined]
    parts = job.folder.parts if job.folder is not None else ()
    if not any(sitting in parts for sitting in SET_FROM.get(str(c.drafter), ())):
        return False
    workload = str(c.workload)
    if c.drafter == "mtp":
        return c.k in (1, 7) and workload.startswith("concurrency")
    if c.drafter == "eagle3":
        return workload.startswith("prefix_cache") or (
            c.k in (1, 7) and workload.startswith("concurrency")
        )
    return c.model == "qwen3.8-27b" and workload.startswith(("concurrency", "prefill_sweep"))


def workload_of(job: fr.Job) -> str:
    """The job's workload, as its record's conditions name it."""
    return str(getattr(job.record.conditions, "workload", ""))


ROUND_SCAN = (0.0, 0.04, 0.06, 0.07, 0.08, 0.10, 0.12, 0.16, 0.20, 0.24, 0.30)
"""Values of a drafter's `drafter_round_overhead_passes` the report tries on the cells that set it."""
THROUGHPUT = ("decode_tps", "aggregate_tps")


def round_scan(jobs: list[fr.Job], profile: EngineProfile) -> list[str]:
    """For each drafter whose round's fixed cost the profile sets, the rms and largest error of its
    setting cells' decode and aggregate figures at each value of ROUND_SCAN (the others as they are)."""
    lines = ["| drafter | passes | rms error | largest error |", "|---|---:|---:|---:|"]
    least: list[str] = []
    for drafter, set_to in sorted(profile.drafter_round_overhead_passes.items()):
        own = [j for j in jobs if j.drafter == drafter and sets_a_figure(j)]
        own = [j for j in own if workload_of(j).startswith("concurrency")]
        scanned: dict[float, float] = {}
        for value in ROUND_SCAN:
            overheads = {**profile.drafter_round_overhead_passes, drafter: value}
            trial = profile.model_copy(update={"drafter_round_overhead_passes": overheads})
            errors = [
                r.simulated / r.measured - 1
                for r in fr.compare(own, ENGINE, trial)
                if r.metric in THROUGHPUT
            ]
            if errors:
                scanned[value] = math.sqrt(sum(e * e for e in errors) / len(errors))
                lines.append(
                    f"| {drafter} | {value:.2f} | {scanned[value]:.1%} | {max(map(abs, errors)):.1%} |"
                )
        if scanned:
            best = min(scanned, key=lambda v: scanned[v])
            least.append(
                f"{drafter}: least at {best:.2f} ({scanned[best]:.1%}); the profile's {set_to:.2f}"
                + (
                    ""
                    if abs(scanned.get(set_to, math.inf) - scanned[best]) < 0.0005
                    else ", **not the least**"
                )
            )
    return [*lines, "", "; ".join(least) + ".", ""]


OTHER_CARDS = ("h100",)
"""Cards with SGLang sittings of their own, whose every figure is held out."""


def measured(roots: list[Path]) -> list[fr.Job]:
    """The jobs with measurements under `roots`, the hybrid's marked as compiling a kernel for each new
    number of prefill tokens (sglang_report.per_length); not those whose server ran with an environment
    of its own (`runtime.env`: SGLang's scheduling changed, which the profile does not imitate)."""
    return per_length(
        [
            j
            for j in sittings(roots)
            if j.record.measurements
            and not j.record.provenance.config.get("runtime", {}).get("env")
        ]
    )


def other_cards() -> list[str]:
    """Each other card's jobs against the profile as the simulator loads it for that card."""
    lines: list[str] = []
    for card in OTHER_CARDS:
        jobs = measured([d / "sweeps" for d in sitting_dirs(card)])
        if not jobs:
            continue
        rows = fr.compare(jobs, ENGINE, load_profile(ENGINE, card))
        lines += [
            f"## Held out on another card: {card}",
            "",
            f"SGLang 0.5.12 on an {card.upper()} (`benchmarks/results/gpu-{card}-sglang.md`), as its sittings "
            f"brought it back, simulated with `hardware={card}`: conf/hardware/{card}.yaml and the profile's "
            f"figures for that card ({f'`devices.{card}` in conf/sim_engine/sglang.yaml' if card in load_profile(ENGINE).devices else 'none of its own: the defaults'}). "
            "Nothing here was fitted.",
            "",
            *table(rows),
            "### Warm over cold",
            "",
            *gains(rows),
        ]
    return lines


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--fit", action="store_true", help="refit FITTED to the fitted jobs first")
    parser.add_argument("--iterations", type=int, default=12)
    parser.add_argument(
        "--out", type=Path, default=REPO / "benchmarks/results/sglang_calibration.md"
    )
    args = parser.parse_args()
    roots = [d / "sweeps" for d in sitting_dirs("h200")]
    jobs = measured(roots)
    fitted = [
        j
        for j in jobs
        if j.drafter == "none" and j.record.conditions.model in FITTED_MODELS  # type: ignore[attr-defined]
    ]
    set_by = [j for j in jobs if j not in fitted and sets_a_figure(j)]
    held = [j for j in jobs if j not in fitted and j not in set_by]
    profile = load_profile(ENGINE, "h200")
    lines = [
        f"# Engine profile `{ENGINE}` against SGLang measured on an H200",
        "",
        "Data: "
        + ", ".join(f"`{r.relative_to(REPO)}`" for r in roots)
        + " (specexp's records of SGLang 0.5.12 with CUDA on an H200, both shapes served without weights; "
        "benchmarks/results/gpu-h200-sglang.md). Simulated: each job from its own record with "
        f"`runtime=sim runtime.engine={ENGINE}` (specexp/fit/records.py). Targets: decode and aggregate "
        "within 15 %, prefill within 20 %, TTFT within 25 % or 20 ms, warm-over-cold gain within 30 %.",
        "",
    ]
    if args.fit:
        figures = fr.fit(fitted, ENGINE, FITTED, UPPER, iterations=args.iterations, base=profile)
        profile = fr.with_figures(profile, FITTED, [figures[k] for k in FITTED])
        lines += [
            "Refit: " + ", ".join(f"`{k}` {v:.4g}" for k, v in figures.items()),
            "",
        ]
    lines += ["Profile: " + ", ".join(f"`{k}` {getattr(profile, k):.4g}" for k in FITTED), ""]
    fitted_rows = fr.compare(fitted, ENGINE, profile)
    held_rows = fr.compare(held, ENGINE, profile)
    lines += [
        "## Fitted: the dense shape without a drafter",
        "",
        *table(fitted_rows),
        "### Warm over cold",
        "",
        *gains(fitted_rows),
        "### Every figure measured in more than one sitting",
        "",
        ACROSS_SITTINGS,
        "",
        *across_sittings(fitted_rows),
        "## Set from these: MTP at k = 1 and 7 on the hybrid, EAGLE-3 at k = 1 and 7 and its warm hits of "
        "2026-12-05b, the hybrid's decode and prefill without a drafter",
        "",
        "The fixed cost of a round (`drafter_round_overhead_passes`: "
        + ", ".join(
            f"{d} {v:.2f}" for d, v in sorted(profile.drafter_round_overhead_passes.items())
        )
        + ") is fitted to the first two, each drafter's value the one of ROUND_SCAN with the least rms "
        "error over its cells' decode and aggregate figures (the table after this one); the "
        "launches of an ungraphed prefill (`ungraphed_prefill_layer_us`) come from the second against the "
        "drafter-less warm hits above; the hybrid's prefill launches (`linear_prefill_layer_ms`) are "
        "fitted to the third's first token at one stream, 512 and 1,024 prompt tokens "
        "(docs/engines.md 2.6, 2.7).",
        "",
        *table(fr.compare(set_by, ENGINE, profile)),
        "### The round's fixed cost, scanned",
        "",
        *round_scan(set_by, profile),
        "## Held out: EAGLE-3 and the draft model on the dense shape, the hybrid shape with and without MTP",
        "",
        "The simulator is given each drafter job's measured acceptance by position (with dummy weights, "
        "a drafting cost at that acceptance: benchmarks/results/gpu-h200-sglang.md gives each job's "
        "tokens per pass); these jobs were not fitted.",
        "",
        *table(held_rows),
        "### Warm over cold",
        "",
        *gains(held_rows),
        "### Every figure measured in more than one sitting",
        "",
        ACROSS_SITTINGS,
        "",
        *across_sittings(held_rows),
    ]
    lines += other_cards()
    text = "\n".join(lines)
    print(text)
    args.out.write_text(text)


if __name__ == "__main__":
    main()
