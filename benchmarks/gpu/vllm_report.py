"""vLLM measured on an H200 (or an H100) against `runtime=sim runtime.engine=vllm` on the same jobs.

Every measured job is simulated whole from its own record (specexp.fit.records: the job's overrides with
the simulator in place of the server, a drafter's measured acceptance by position, the new suffix its prompts
had); points pair on concurrency, cache state and the nearest prompt length.

Writes one report a card, `benchmarks/results/gpu-h200-vllm.md` and
`benchmarks/results/gpu-h100-vllm.md` (the card of each
sitting: SITTINGS): what the run found, the paths vLLM chose per server, and per job the measured,
simulated and simulated/measured figures, energy per token, mean power and whether the windows were
clean. The records themselves are committed under `benchmarks/data/h200-vllm*/` and `h100-vllm*/`, and
`benchmarks/vllm_calibration.py` fits the profile to the H200's and holds the H100's out.
"""

from __future__ import annotations

import re
import tarfile
from collections.abc import Sequence
from pathlib import Path
from typing import Any

from benchmarks.gpu.sitting import CARDS, sitting_dirs_of, sittings_named_of
from specexp.fit import records as fr
from specexp.record import Measurement
from specexp.spec.vocabulary import M

NAME = "gpu-h200-vllm"
SITTINGS = (
    ("h200-vllm", "2026-12-02", "h200"),
    ("h200-vllm-2026-12-03", "2026-12-03", "h200"),
    ("h200-vllm-2026-12-03-2", "2026-12-03, the same day's second sitting", "h200"),
    ("h200-vllm-2026-12-04", "2026-12-04", "h200"),
    ("h200-vllm-2026-12-04-2", "2026-12-04, the same day's second sitting", "h200"),
    ("h100-vllm-2026-12-06", "2026-12-06", "h100"),
    ("h100-vllm-2026-12-06b", "2026-12-06, the same day's second sitting", "h100"),
)
"""Every sitting's records, committed under benchmarks/data/ (one lease each), when it ran, and the card
it was lent (its records' `hardware`): the report, the TTFT parts and the profile's fit read the H200's;
an H100's are held out."""


def sitting_dirs(card: str | None = "h200") -> list[Path]:
    """The committed sittings' folders of one card (None: every card), oldest first."""
    return sitting_dirs_of(SITTINGS, card)


def sittings_named(card: str = "h200") -> str:
    """One card's committed sittings as a sentence's list."""
    return sittings_named_of(SITTINGS, card)


DECODE = ("decode_tps", "aggregate_tps", "ttft_s", "tokens_per_pass")
PREFILL = ("prefill_tps", "ttft_s")
PREFIX = ("ttft_s", "cached_prompt_tokens")
PATHS = (
    "attention_backend",
    "gdn_prefill_backend",
    "model_runner",
    "async_scheduling",
    "cudagraph_mode",
    "compilation_mode",
    "max_num_batched_tokens",
    "attention_block_size",
    "mamba_cache_mode",
    "jit_monitor",
    "init_engine_s",
    "torch_compile_s",
    "graph_capture_s",
)
COMPILE = re.compile(r"JIT compilation during inference: (\w+)")


def unpack(records: Sequence[Path], work: Path) -> Path:
    """Extract the device calls' records.tar.gz under `work`/measured (later calls over earlier ones)."""
    root = work / "measured"
    for tarball in records:
        with tarfile.open(tarball) as tar:
            tar.extractall(root, filter="data")
    return root / "sweeps"


def metrics_of(job: fr.Job) -> tuple[str, ...]:
    workload = str(job.record.conditions.workload)  # type: ignore[attr-defined]
    return (
        PREFILL
        if workload.startswith("prefill")
        else PREFIX
        if workload.startswith("prefix")
        else DECODE
    )


def _fmt(v: Any) -> str:
    if v is None:
        return "–"
    if isinstance(v, bool):
        return "yes" if v else "no"
    if isinstance(v, float):
        return f"{v:.4g}" if abs(v) < 1000 else f"{v:,.0f}"
    return str(v)


def job_table(job: fr.Job, sim: dict[fr.Key, dict[str, float]]) -> list[str]:
    names = metrics_of(job)
    head = ["c", "prompt tok", "cache"] + [
        h for n in names for h in (f"`{n}` meas", "sim", "sim/meas")
    ]
    head += ["J/tok", "W", "clean"]
    lines = ["| " + " | ".join(head) + " |", "|" + "---|" * len(head)]
    for m in job.record.measurements:
        c, got = m.conditions, m.metrics
        s = fr.pair(m, sim)
        cols = [_fmt(c.concurrency), _fmt(c.prompt_tokens), str(c.cache)]  # type: ignore[attr-defined]
        for n in names:
            v, w = getattr(got, n), s.get(n)
            ratio = w / v if isinstance(v, (int, float)) and v and w is not None else None
            cols += [_fmt(v), _fmt(w), _fmt(ratio)]
        clean = {True: "**contaminated**", False: "yes", None: "not checked"}[m.contaminated]
        if not job.warmed(m):
            clean = "**not warmed at its shape**" + (", **contaminated**" if m.contaminated else "")
        cols += [_fmt(got.energy_j_per_token), _fmt(got.mean_power_w), clean]  # type: ignore[attr-defined]
        lines.append("| " + " | ".join(cols) + " |")
    return lines


def compiles_in(roots: Sequence[Path]) -> dict[str, int]:
    """Kernel compiles vLLM's monitor logged while serving, by kernel, over every kept server log."""
    found: dict[str, int] = {}
    for log in sorted(log for root in roots for log in root.rglob("server.log.short")):
        for kernel in COMPILE.findall(log.read_text(errors="replace")):
            found[kernel] = found.get(kernel, 0) + 1
    return found


def unwarmed(all_jobs: Sequence[fr.Job]) -> list[tuple[fr.Job, Measurement]]:
    """Every measurement whose warm-up did not reach its shape (fr.Job.warmed), with its job."""
    return [(j, m) for j in all_jobs for m in j.record.measurements if not j.warmed(m)]


def summary(all_jobs: list[fr.Job], roots: Sequence[Path]) -> list[str]:
    """What the run found, from the records: how many windows were clean, what compiled and where."""
    measured = [m for j in all_jobs for m in j.record.measurements]
    clean = sum(m.contaminated is False for m in measured)
    unfinished = [j for j in all_jobs if j.record.status != "ok"]
    compiles = compiles_in(roots)
    rerun = sum(
        1
        for root in roots
        for log in root.rglob("requests.jsonl")
        for line in log.read_text().splitlines()
        if '"discarded"' in line
    )
    where = (
        "every one in a warm-up window: no timed window was run again, so each point's warm-up at its own "
        "shape is what kept the timed windows clean"
        if rerun == 0 and clean == len(measured)
        else f"{rerun} requests of timed windows were run again (discarded: contaminated); a window "
        "still contaminated is marked **contaminated** in its table and no fit reads it"
    )
    lines = [
        "## What the run found",
        "",
        f"- {len(all_jobs)} jobs, {len(measured)} measurements; {clean} measured in windows the engine's log "
        f"shows clean, {sum(m.contaminated is True for m in measured)} contaminated, "
        f"{sum(m.contaminated is None for m in measured)} not checked.",
        f"- vLLM's kernel JIT monitor logged {sum(compiles.values())} compiles while serving "
        f"({', '.join(f'{k} x{n}' for k, n in sorted(compiles.items()))}): {where}.",
    ]
    cold = unwarmed(all_jobs)
    if cold:
        lines.append(
            f"- {len(cold)} measurement(s) **not warmed at their shape**, each a job's first prefill onto "
            "a cached prefix or a prompt far longer than any before it "
            "(specexp.measure.request_log.beyond_warmup): the warm-up specexp sent before `prefix_cache` "
            f"version 3 did not reach them. The JIT monitor logged a compile in "
            f"{sum(bool(m.contaminated) for _, m in cold)} of them; no fit reads their figures all the same."
        )
    return [*lines, *not_finished(unfinished), ""]


def not_finished(jobs: Sequence[fr.Job]) -> list[str]:
    """A line for each job that did not finish, with its status and error, and whether a later sitting
    measured the same job (the same run id)."""
    done = {j.record.run_id for j in jobs if j.record.status == "ok"}
    return [
        f"- not finished: {j.label} ({j.record.status}: "
        f"{j.record.error.message if j.record.error else ''})"
        + ("; measured in another sitting" if j.record.run_id in done else "")
        + "."
        for j in jobs
        if j.record.status != "ok"
    ]


def markdown(
    all_jobs: list[fr.Job],
    sims: dict[str, dict[fr.Key, dict[str, float]]],
    stamp: str,
    roots: Sequence[Path],
    card: str = "h200",
) -> str:
    lines = [
        f"# vLLM with CUDA on {CARDS[card]}: measured by specexp, beside the simulator",
        "",
        f"Written {stamp} by `benchmarks/gpu/vllm_report.py` from the records `benchmarks/gpu/vllm_h200.py` "
        f"brought back from the device, in {len(roots)} sittings (each job's heading names its sitting). A model is "
        "served without weights (`runtime.load_format=dummy`, from the config-only folders specexp writes) unless "
        "its heading says `trained weights`. Simulated: `runtime=sim runtime.engine=vllm` with each job's own "
        "overrides, and for a drafter the acceptance by position the job measured (specexp/fit/records.py). "
        "`clean`: whether vLLM's kernel JIT monitor logged a compile during the point's windows. The records, "
        f"with every sample and request: {sittings_named(card)}; the profile's fit to them: "
        "`benchmarks/results/vllm_calibration.md`.",
        "",
        *summary(all_jobs, roots),
    ]
    servers: dict[str, dict[str, Any]] = {}
    for job in all_jobs:
        argv = job.record.provenance.server_argv
        if argv:
            servers.setdefault(
                " ".join(a for a in argv if not a.isdigit()),
                job.record.provenance.engine_info.model_dump(exclude_unset=True)
                if job.record.provenance.engine_info is not None
                else {},
            )
    lines += [
        "## The servers and the paths vLLM chose",
        "",
        "| server (argv) | version | KV tokens | block | " + " | ".join(PATHS) + " |",
        "|---|---|---:|---:|" + "---|" * len(PATHS),
    ]
    for argv, info in servers.items():
        block = (info.get("cache_config") or {}).get("block_size")
        lines.append(
            f"| `{argv[-160:]}` | {_fmt(info.get('version'))} | {_fmt(info.get(M.kv_cache_tokens))} | "
            f"{_fmt(block)} | " + " | ".join(_fmt(info.get(p)) for p in PATHS) + " |"
        )
    lines.append("")
    return "\n".join([*lines, *job_sections(all_jobs, sims)]) + "\n"


def job_sections(
    all_jobs: Sequence[fr.Job], sims: dict[str, dict[fr.Key, dict[str, float]]]
) -> list[str]:
    """A heading, run id, status and measured-beside-simulated table for each job."""
    lines: list[str] = []
    for job in all_jobs:
        trained = job.record.conditions.weights == "trained"  # type: ignore[attr-defined]
        error = job.record.error
        env = job.record.provenance.config.get("runtime", {}).get("env") or {}
        lines += [
            f"## {job.group}: {job.label}" + (" (trained weights)" if trained else ""),
            "",
            f"run `{job.record.run_id}`, status {job.record.status}"
            + (f" ({error.kind}: {error.message})" if error else "")
            + (
                "; the server's environment "
                + ", ".join(f"`{k}={v}`" for k, v in sorted(env.items()))
                + " (simulated with the engine's defaults)"
                if env
                else ""
            ),
            "",
        ]
        if job.record.measurements:
            lines += job_table(job, sims[job.record.run_id]) + [""]
    return lines


def sitting(root_jobs: Sequence[fr.Job], days: Sequence[str]) -> str:
    """A sitting's name: the day its first job ran, and the hour (UTC) where another sitting ran that day."""
    first = min((j.record.provenance.started_at or "") for j in root_jobs) if root_jobs else ""
    return first[:10] if days.count(first[:10]) < 2 else f"{first[:10]} {first[11:16]} UTC"


def load(roots: Sequence[Path]) -> list[fr.Job]:
    """Every measured job under the roots (one root a sitting), each group named with its sitting, in
    time order."""
    by_root = [fr.load_jobs(root) for root in roots]
    days = [
        min((j.record.provenance.started_at or "") for j in jobs)[:10] for jobs in by_root if jobs
    ]
    jobs = [
        fr.Job(f"{j.group}, {sitting(root_jobs, days)}", j.record, j.folder)
        for root_jobs in by_root
        for j in root_jobs
    ]
    return sorted(jobs, key=lambda j: j.record.provenance.started_at or "")


def write(
    measured_roots: Sequence[Path],
    results_dir: Path,
    stamp: str,
    name: str = NAME,
    card: str = "h200",
) -> list[Path]:
    all_jobs = load(measured_roots)
    sims = {
        j.record.run_id: fr.simulate(j, "vllm") if j.record.measurements else {} for j in all_jobs
    }
    results_dir.mkdir(parents=True, exist_ok=True)
    md = results_dir / f"{name}.md"
    md.write_text(markdown(all_jobs, sims, stamp, measured_roots, card))
    return [md]
