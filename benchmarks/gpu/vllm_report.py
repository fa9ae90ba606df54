"""vLLM measured on an H200 against `runtime=sim runtime.engine=vllm` on the same jobs.

Every measured job is simulated whole, from its own record: the overrides it ran with, the runtime
swapped for the simulator imitating vLLM, and for a drafter the acceptance by position the engine's
counters measured over the job (dummy weights accept whatever two copies of a tiny uniform model agree
on, so the simulator is handed the measured acceptance and judged on the engine's costs alone). Points
pair on concurrency, cache state and the nearest prompt length (a server counts the chat template too).

Writes `benchmarks/results/gpu-h200-vllm.md` (measured, simulated, ratio, energy, whether the window was
clean, the paths vLLM chose) and `benchmarks/data/h200-vllm.jsonl` (one measured measurement a line, with
the job's overrides and engine info, for fitting the profile: specexp/sim/calibrate_engine.py).
"""

from __future__ import annotations

import json
import statistics
import tarfile
from collections.abc import Iterable, Sequence
from dataclasses import dataclass
from pathlib import Path
from typing import Any

from specexp.record import Measurement, RunRecord, find_records

NAME = "gpu-h200-vllm"
DATA = "h200-vllm.jsonl"
DECODE = ("decode_tps", "aggregate_tps", "ttft_s", "tokens_per_pass")
PREFILL = ("prefill_tps", "ttft_s")
PREFIX = ("ttft_s", "cached_prompt_tokens")
ENGINE_RUNTIME = ("runtime=", "runtime.load_format=", "runtime.executable=", "runtime.extra_args=",
                  "runtime.start_timeout_s=")
"""Overrides of a measured job that name the engine, not the cell: replaced by the simulator's."""
PATHS = ("attention_backend", "gdn_prefill_backend", "model_runner", "async_scheduling", "cudagraph_mode",
         "compilation_mode", "max_num_batched_tokens", "attention_block_size", "mamba_cache_mode", "jit_monitor",
         "init_engine_s", "torch_compile_s", "graph_capture_s")


def unpack(records: Sequence[Path], work: Path) -> Path:
    """Extract the device calls' records.tar.gz under `work`/measured (later calls over earlier ones)."""
    root = work / "measured"
    for tarball in records:
        with tarfile.open(tarball) as tar:
            tar.extractall(root, filter="data")
    return root / "sweeps"


@dataclass(frozen=True)
class Job:
    experiment: str
    path: Path
    record: RunRecord

    @property
    def part(self) -> str:
        c = self.record.conditions
        k = f" k={c.k}" if c.k is not None else ""  # type: ignore[attr-defined]
        return f"{c.model} {c.workload} {c.drafter}{k}"  # type: ignore[attr-defined]


def jobs(measured_root: Path) -> list[Job]:
    out = []
    for path, record in find_records([measured_root]):
        experiment = path.relative_to(measured_root).parts[0]
        out.append(Job(experiment, path, record))
    return sorted(out, key=lambda j: (j.experiment, j.record.provenance.started_at or ""))


def acceptance(record: RunRecord) -> list[float] | None:
    """The job's acceptance by position: each position's median over the job's measurements."""
    rows = [m.metrics.acceptance_by_position for m in record.measurements  # type: ignore[attr-defined]
            if m.metrics.acceptance_by_position]  # type: ignore[attr-defined]
    if not rows:
        return None
    width = min(len(r) for r in rows)
    return [round(statistics.median(r[i] for r in rows), 4) for i in range(width)]


def sim_overrides(record: RunRecord) -> list[str]:
    """The measured job's overrides with the simulator imitating vLLM in place of the engine."""
    kept = [o for o in record.provenance.overrides if not o.lstrip("+").startswith(ENGINE_RUNTIME)]
    out = ["runtime=sim", "runtime.engine=vllm", *kept]
    accepted = acceptance(record)
    if accepted:
        workload_class = record.provenance.config.get("workload", {}).get("acceptance_class", "fresh")
        out.append(f"drafter.acceptance.{workload_class}=[{','.join(str(a) for a in accepted)}]")
    return out


Key = tuple[int, int, str]


def simulate(record: RunRecord) -> dict[Key, dict[str, float]]:
    """Per point (concurrency, prompt tokens, cache), the simulated job's median of each metric."""
    from specexp.sim.calibrate_engine import simulate as simulate_job
    from specexp.sim.cli import build_spec

    return simulate_job(build_spec(sim_overrides(record)))


def pair(m: Measurement, sim: dict[Key, dict[str, float]]) -> dict[str, float]:
    c = m.conditions
    points = [k for k in sim if k[0] == (c.concurrency or 0) and k[2] == c.cache]  # type: ignore[attr-defined]
    if not points:
        return {}
    return sim[min(points, key=lambda k: abs(k[1] - (c.prompt_tokens or 0)))]  # type: ignore[attr-defined]


def metrics_of(job: Job) -> tuple[str, ...]:
    workload = job.record.conditions.workload  # type: ignore[attr-defined]
    return PREFILL if "prefill" in workload else PREFIX if "prefix" in workload else DECODE


def _fmt(v: Any) -> str:
    if v is None:
        return "–"
    if isinstance(v, bool):
        return "yes" if v else "no"
    if isinstance(v, float):
        return f"{v:.4g}" if abs(v) < 1000 else f"{v:,.0f}"
    return str(v)


def job_table(job: Job, sim: dict[Key, dict[str, float]]) -> list[str]:
    names = metrics_of(job)
    head = ["c", "prompt tok", "cache"] + [h for n in names for h in (f"`{n}` meas", "sim", "sim/meas")]
    head += ["J/tok", "W", "clean"]
    lines = ["| " + " | ".join(head) + " |", "|" + "---|" * len(head)]
    for m in job.record.measurements:
        c, got = m.conditions, m.metrics
        s = pair(m, sim)
        cols = [_fmt(c.concurrency), _fmt(c.prompt_tokens), str(c.cache)]  # type: ignore[attr-defined]
        for n in names:
            v, w = getattr(got, n), s.get(n)
            ratio = w / v if isinstance(v, (int, float)) and v and w is not None else None
            cols += [_fmt(v), _fmt(w), _fmt(ratio)]
        clean = {True: "**contaminated**", False: "yes", None: "not checked"}[m.contaminated]
        cols += [_fmt(got.energy_j_per_token), _fmt(got.mean_power_w), clean]  # type: ignore[attr-defined]
        lines.append("| " + " | ".join(cols) + " |")
    return lines


def data_lines(job: Job, sim: dict[Key, dict[str, float]]) -> Iterable[dict[str, Any]]:
    info = job.record.provenance.engine_info or {}
    for m in job.record.measurements:
        yield {"experiment": job.experiment, "run_id": job.record.run_id, "status": job.record.status,
               "overrides": job.record.provenance.overrides, "sim_overrides": sim_overrides(job.record),
               "engine_info": info, "measured": json.loads(m.model_dump_json()), "simulated": pair(m, sim)}


def markdown(all_jobs: list[Job], sims: dict[str, dict[Key, dict[str, float]]], stamp: str) -> str:
    lines = ["# vLLM with CUDA on an H200: measured by specexp, beside the simulator", "",
             f"Written {stamp} by `benchmarks/gpu/vllm_h200.py` (`install start wait` on the device for the measured "
             "jobs, `report` here for the simulated ones). Every model is served without weights "
             "(`runtime.load_format=dummy`, from the config-only folders specexp writes). Simulated: "
             "`runtime=sim runtime.engine=vllm` with each job's own overrides, and for a drafter the acceptance by "
             "position the job measured. `clean`: whether vLLM's kernel JIT monitor logged a compile during the "
             f"point's windows. One measured measurement a line, with its samples: `benchmarks/data/{DATA}`.", ""]
    servers: dict[str, dict[str, Any]] = {}
    for job in all_jobs:
        info = job.record.provenance.engine_info or {}
        if not job.record.provenance.server_argv:
            continue
        servers.setdefault(" ".join(a for a in job.record.provenance.server_argv or [] if not a.isdigit()), info)
    lines += ["## The servers and the paths vLLM chose", "",
              "| server (argv) | version | KV tokens | block | " + " | ".join(PATHS) + " |",
              "|---|---|---:|---:|" + "---|" * len(PATHS)]
    for argv, info in servers.items():
        block = (info.get("cache_config") or {}).get("block_size")
        lines.append(f"| `{argv[-160:]}` | {_fmt(info.get('version'))} | {_fmt(info.get('kv_cache_tokens'))} | "
                     f"{_fmt(block)} | " + " | ".join(_fmt(info.get(p)) for p in PATHS) + " |")
    lines.append("")
    for job in all_jobs:
        lines += [f"## {job.experiment}: {job.part}", "", f"run `{job.record.run_id}`, status {job.record.status}"
                  + (f" ({job.record.error.kind}: {job.record.error.message})" if job.record.error else ""), ""]
        if job.record.measurements:
            lines += job_table(job, sims[job.record.run_id]) + [""]
    return "\n".join(lines) + "\n"


def write(measured_root: Path, results_dir: Path, stamp: str) -> list[Path]:
    all_jobs = jobs(measured_root)
    sims = {j.record.run_id: simulate(j.record) if j.record.measurements else {} for j in all_jobs}
    results_dir.mkdir(parents=True, exist_ok=True)
    md = results_dir / f"{NAME}.md"
    md.write_text(markdown(all_jobs, sims, stamp))
    data = results_dir.parent / "data" / DATA
    data.parent.mkdir(parents=True, exist_ok=True)
    data.write_text("".join(json.dumps(line, sort_keys=True) + "\n" for j in all_jobs for line in data_lines(j, sims[j.record.run_id])))
    return [md, data]
