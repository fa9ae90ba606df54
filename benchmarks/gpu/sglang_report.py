"""SGLang measured on an H200 (and an H100) against `runtime=sim runtime.engine=sglang` on the same jobs.

Every measured job is simulated whole from its own record (specexp.fit.records), as vllm_report.py does
for vLLM; points pair on concurrency, cache state and the nearest prompt length.

Writes one report for each card a sitting ran on (`benchmarks/results/gpu-h200-sglang.md`,
`benchmarks/results/gpu-h100-sglang.md`): the servers (argv, version, KV tokens, what SGLang chose), what
the windows held (per-request speculative counts, cache hits), and per job the measured,
simulated and simulated/measured figures. The records are committed under
`benchmarks/data/h200-sglang*/` and `h100-sglang*/`; `benchmarks/sglang_calibration.py` fits the profile to part of them.
"""

from __future__ import annotations

import datetime
import re
from collections.abc import Sequence
from dataclasses import replace
from pathlib import Path
from typing import Any

from benchmarks.gpu.sitting import CARDS, sitting_dirs_of, sittings_named_of
from benchmarks.gpu.vllm_report import _fmt, job_sections, load, not_finished, unwarmed
from specexp.fit import records as fr
from specexp.measure.request_log import WARM_REACH

RESULTS = Path(__file__).resolve().parents[1] / "results"
SITTINGS = (
    ("h200-sglang-2026-12-04", "2026-12-04", "h200"),
    ("h200-sglang-2026-12-04b", "2026-12-04, second", "h200"),
    ("h200-sglang-2026-12-04c", "2026-12-04, third", "h200"),
    ("h200-sglang-2026-12-05", "2026-12-05", "h200"),
    ("h200-sglang-2026-12-05b", "2026-12-05, second", "h200"),
    ("h100-sglang-2026-12-06", "2026-12-06", "h100"),
    ("h100-sglang-2026-12-06b", "2026-12-06, second", "h100"),
    ("h200-sglang-2026-12-06", "2026-12-06, third", "h200"),
    ("h100-sglang-2026-12-06c", "2026-12-06, fourth", "h100"),
    ("h100-sglang-2026-12-06d", "2026-12-06, fifth", "h100"),
    ("h100-sglang-2026-12-06e", "2026-12-06, sixth", "h100"),
)
"""Every SGLang sitting's records, committed under benchmarks/data/ (one lease each), when it ran, and
the card it was lent (its records' `hardware`)."""
CHUNKED_PREFILL = 8192
"""SGLang's largest prefill step (`chunked_prefill_size` in /server_info and every hybrid server's log,
on both cards: the reports' server tables)."""


def per_length(jobs: Sequence[fr.Job]) -> list[fr.Job]:
    """`jobs`, the hybrid's marked as compiling a kernel for each new number of prefill tokens
    (docs/engines.md 2.5): where a record cannot say whether a window compiled (written before specexp
    read SGLang's Triton cache), a one-request window that prefilled a number of tokens new to its job
    counts as not warmed at its shape (fr.Job.compiles_per_length)."""
    return [
        replace(j, compiles_per_length=CHUNKED_PREFILL)
        if getattr(j.record.provenance.composed.model, "architecture", None) == "hybrid"
        else j
        for j in jobs
    ]


CHOSEN = (
    "attention_backend",
    "sampling_backend",
    "max_running_requests",
    "chunked_prefill_size",
    "page_size",
    "mamba_scheduler_strategy",
    "disable_overlap_schedule",
)
"""What SGLang resolved for each server, read from the server log's `server_args=` line."""


def sitting_dirs(card: str | None = None) -> list[Path]:
    """The committed sittings' folders of one card (None: every card), oldest first."""
    return sitting_dirs_of(SITTINGS, card)


def sittings_named(card: str = "h200") -> str:
    """One card's committed sittings as a sentence's list."""
    return sittings_named_of(SITTINGS, card)


RESOLVED = {
    "running at once": re.compile(r"max_total_num_tokens=\d+, .*?max_running_requests=(\d+)"),
    "states": re.compile(r"max_mamba_cache_size: (\d+)"),
}
"""What a server settled on once its memory was laid out, from its log: the requests it runs at once
(below server_args' max_running_requests where a hybrid's states bound it) and its pool of states."""


def chosen(job: fr.Job, roots: Sequence[Path]) -> dict[str, str]:
    """SGLang's resolved settings from the job's kept server log (`server_args=ServerArgs(...)`), and
    what it settled on once its memory was laid out (RESOLVED)."""
    for root in roots:
        for log in root.rglob(f"*{job.record.run_id}*/server.log.short"):
            text = log.read_text(errors="replace")
            start = text.find("server_args=ServerArgs(")
            if start < 0:
                continue
            args = text[start : text.find("\n", start)]
            found = {}
            for key in CHOSEN:
                at = args.find(f" {key}=")
                if at >= 0:
                    found[key] = args[at + len(key) + 2 :].split(",", 1)[0].strip("'\"")
            for key, pattern in RESOLVED.items():
                match = pattern.search(text)
                if match is not None:
                    found[key] = match.group(1)
            return found
    return {}


SKIPPED = ("--host", "--port", "--model-path")
"""Flags of every server's argv that say nothing about it (the address; the folder is the model's)."""


def shown_argv(argv: Sequence[str]) -> str:
    """A server's argv without the interpreter, the address and the model folder, paths cut to their
    last part."""
    out: list[str] = []
    skip = False
    for arg in argv[3:]:
        if skip:
            skip = False
            continue
        if arg in SKIPPED:
            skip = True
            continue
        out.append(Path(arg).name if "/" in arg else arg)
    return " ".join(out)


def summary(all_jobs: list[fr.Job]) -> list[str]:
    measured = [m for j in all_jobs for m in j.record.measurements]
    passes: dict[str, list[float]] = {}
    for j in all_jobs:
        for m in j.record.measurements:
            if j.drafter != "none" and m.metrics.tokens_per_pass is not None:
                passes.setdefault(j.label.split(" ", 2)[-1], []).append(m.metrics.tokens_per_pass)
    per_arm = "; ".join(
        f"{arm}: {min(v):.2f}-{max(v):.2f} tokens a pass over {len(v)} windows"
        for arm, v in sorted(passes.items())
    )
    lines = [
        "## What the run found",
        "",
        f"- {len(all_jobs)} jobs, {len(measured)} measurements; "
        f"{sum(m.contaminated is False for m in measured)} measured in windows whose server log shows no "
        f"compile or graph capture, {sum(m.contaminated is True for m in measured)} contaminated, "
        f"{sum(m.contaminated is None for m in measured)} not checked. SGLang 0.5.12 states a compile "
        "only for its CUDA graphs (`Compiling a graph for ...`, `Capture ... cuda graph`), and its Triton "
        "kernels compile at first use without a line, so every point is warmed up at its own shape first"
        + (
            f"; {sum('kernel_cache' in m.compiles_read for m in measured)} windows were also "
            "checked against the server's Triton cache, where a compile leaves a folder (docs/engines.md "
            f"2.5), and {sum(any('Triton compiled' in c for c in m.contamination) for m in measured)} "
            "of them had compiled a kernel."
        )
        + (
            " The windows not checked are the 2026-12-04 sitting's, which ran before specexp read "
            "SGLang's log for those lines; the start and end of each server's log kept with its records "
            "show them all during the start, before any window."
            if any(m.contaminated is None for m in measured)
            else ""
        ),
        *unwarmed_line(all_jobs),
        *(
            [
                "- Acceptance in each drafter window is the sum of its requests' own counts "
                "(`meta_info.spec_verify_ct`, `spec_num_correct_drafts`, `spec_num_proposed_drafts` from the "
                "native `/generate`): SGLang 0.5.12's `/metrics` has no speculative counter. With dummy weights "
                f"a figure of acceptance is a drafting cost at that acceptance, not a drafter's quality ({per_arm})."
            ]
            if passes
            else []
        ),
    ]
    return [*lines, *not_finished(all_jobs), ""]


def unwarmed_line(all_jobs: Sequence[fr.Job]) -> list[str]:
    """A line on the measurements whose warm-up did not reach their shape, if any."""
    cold = unwarmed(all_jobs)
    if not cold:
        return []
    named = "; ".join(
        f"{j.label} at {m.conditions.prompt_tokens:,} tokens"  # type: ignore[attr-defined]
        for j, m in cold
    )
    return [
        f"- {len(cold)} measurement(s) **not warmed at their shape** ({named}): the job had sent no "
        f"prompt within {WARM_REACH}x of theirs before them, or they were its first prefill onto a cached "
        "prefix, or (the hybrid, in a record written before specexp read the server's Triton cache) one of "
        "their windows prefilled a number of tokens new to the job, so a Triton kernel SGLang compiles at a "
        "shape's first use, without a log line, may have compiled inside the window "
        "(specexp.measure.request_log.beyond_warmup and new_prefill_lengths; the hybrid compiles its "
        "`l2norm_fwd_kernel` for each new number of prefill tokens, docs/engines.md 2.5). The records are "
        "kept as they are; no calibration reads these figures."
    ]


def markdown(
    all_jobs: list[fr.Job],
    sims: dict[str, dict[fr.Key, dict[str, float]]],
    stamp: str,
    roots: Sequence[Path],
    card: str = "h200",
) -> str:
    held_out = (
        []
        if card == "h200"
        else [
            f"The `sglang` profile was fitted on the H200 alone: every figure here is held out, simulated with "
            f"`hardware={card}` and the profile's figures for that card (conf/sim_engine/sglang.yaml `devices`).",
            "",
        ]
    )
    lines = [
        f"# SGLang with CUDA on {CARDS[card]}: measured by specexp, beside the simulator",
        "",
        f"Written {stamp} by `benchmarks/gpu/sglang_report.py` from the records `benchmarks/gpu/sglang_h200.py` "
        f"brought back from the device, in {len(roots)} sitting(s). Every model is served without weights "
        "(`runtime.load_format=dummy`, from the config-only folders specexp writes); completions go to "
        "SGLang's native `/generate` (`workload.endpoint=completions`), whose `meta_info` carries each "
        "request's speculative counts. Simulated: `runtime=sim runtime.engine=sglang` with each job's own "
        "overrides, and for a drafter the acceptance by position the job measured (specexp/fit/records.py); "
        "which cells the profile was fitted on: `benchmarks/results/sglang_calibration.md`. The records, with "
        f"every sample and request: {sittings_named(card)}.",
        "",
        *held_out,
        *summary(all_jobs),
        "## The servers and what SGLang chose",
        "",
        "| server (argv) | version | KV tokens | " + " | ".join([*CHOSEN, *RESOLVED]) + " |",
        "|---|---|---:|" + "---|" * (len(CHOSEN) + len(RESOLVED)),
    ]
    seen: set[str] = set()
    started = [j for j in all_jobs if j.record.provenance.engine_info is not None]
    for job in [
        *started,
        *(j for j in all_jobs if j not in started),
    ]:  # a server that started first
        argv = job.record.provenance.server_argv
        if not argv:
            continue
        key = shown_argv(argv)
        if key in seen:
            continue
        seen.add(key)
        info: dict[str, Any] = (
            job.record.provenance.engine_info.model_dump(exclude_unset=True)
            if job.record.provenance.engine_info is not None
            else {}
        )
        picked = chosen(job, roots)
        lines.append(
            f"| `{key}` | {_fmt(info.get('version'))} | {_fmt(info.get('kv_cache_tokens'))} | "
            + " | ".join(picked.get(k, "–") for k in [*CHOSEN, *RESOLVED])
            + " |"
        )
    lines.append("")
    return "\n".join([*lines, *job_sections(all_jobs, sims)]) + "\n"


def write(roots: Sequence[Path] | None = None, stamp: str | None = None) -> list[Path]:
    """One report per card from the committed sittings (or, with `roots`, one from those, as an H200's)."""
    by_card = (
        {"h200": list(roots)}
        if roots
        else {
            card: [d / "sweeps" for d in sitting_dirs(card)]
            for card in dict.fromkeys(lent for _, _, lent in SITTINGS)
        }
    )
    RESULTS.mkdir(parents=True, exist_ok=True)
    written = []
    for card, folders in by_card.items():
        all_jobs = per_length(load(folders))
        sims = {
            j.record.run_id: fr.simulate(j, "sglang") if j.record.measurements else {}
            for j in all_jobs
        }
        md = RESULTS / f"gpu-{card}-sglang.md"
        md.write_text(
            markdown(all_jobs, sims, stamp or datetime.date.today().isoformat(), folders, card)
        )
        written.append(md)
    return written
