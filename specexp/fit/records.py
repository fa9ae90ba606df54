"""Hold an engine profile against that engine measured by specexp, job by job, and fit its figures.

The data are specexp's own records of a real server (`result.json`, read into `RunRecord`). Every
measured job is simulated whole from its record: the overrides it ran with, the engine swapped for
`runtime=sim runtime.engine=<profile>`, and for a drafter the acceptance by position the engine's
counters measured over the job (the simulator is then judged on the engine's costs, not on a guess of
what the drafter accepts). A prefix-cache job's new suffix is the one its prompts had under the
server's tokenizer (`suffix_tokens`). Points pair on concurrency, cache state and the nearest prompt
length (a server counts the chat template's tokens too).

`fit` is the Levenberg-Marquardt least squares of specexp.fit.hardware on log(simulated / measured) over
the figures `TARGETS` names, of the profile fields it is given.
"""

from __future__ import annotations

import statistics
from collections.abc import Callable, Iterable, Sequence
from dataclasses import dataclass
from pathlib import Path

import numpy as np

from specexp.record import Measurement, RunRecord, find_records
from specexp.sim.profile import EngineProfile, load_profile
from specexp.spec.arms import arm_label, draft_length

TARGETS = {
    "decode_tps": 0.15,
    "aggregate_tps": 0.15,
    "prefill_tps": 0.20,
    "ttft_s": 0.25,
    "ttft_frontend_s": 0.25,
    "ttft_queue_s": 0.25,
    "ttft_engine_s": 0.25,
    "ttft_core_s": 0.25,
}
"""Figures compared, and how close the simulator must come (TTFT and its parts: 25 % or 20 ms)."""
TTFT_PARTS = ("ttft_frontend_s", "ttft_queue_s", "ttft_engine_s")
"""TTFT split where the engine says where it went (specexp.measure.ttft_parts)."""
FIT_PARTS = ("ttft_frontend_s", "ttft_core_s")
"""The parts a fit matches: the front end, and the engine core's whole part (`ttft_core_s`, a figure
of the fit only: ttft_queue_s + ttft_engine_s). vLLM's split between its queue and its own time to
the first token turns on how many prompts one step's token budget admits, which the simulator does
not split the same way (it admits a burst whole and chunks the prefills), so the fit does not weigh
that split."""
PART_FLOOR_S = 0.001
"""A measured part shorter than this is not compared (a queue of 0.02 ms has no ratio worth fitting)."""
TTFT_SLACK_S = 0.020
WARM_GAIN_TARGET = 0.30
ENGINE_OVERRIDES = (
    "runtime=",
    "runtime.load_format=",
    "runtime.executable=",
    "runtime.extra_args=",
    "runtime.start_timeout_s=",
)
"""Overrides of a measured job that name the engine, not the cell: replaced by the simulator's."""
BYTE_CHAT_TAIL_TOKENS = 13
"""Tokens of the ChatML tail after a user message under specexp's byte-level tokenizer
(`<|im_end|>`, a newline, `<|im_start|>`, then `assistant` and a newline byte by byte)."""
MARKER_TOKENS = 14
"""The unique marker before a cache group's instruction, byte by byte: 12 hex digits, `]` and a space
(specexp.workloads.prompts.PromptBuilder: `{material}\\n\\n[{marker}] {instruction}`)."""

Key = tuple[int, int, str]
"""A simulated point: (concurrency, prompt tokens, cache)."""


@dataclass(frozen=True)
class Job:
    """One measured job: the folder it came from (its experiment) and its record."""

    group: str
    record: RunRecord

    @property
    def label(self) -> str:
        c = self.record.conditions
        return f"{c.model} {c.workload} {arm_label(c.drafter, c.k)}"

    @property
    def drafter(self) -> str:
        return str(self.record.conditions.drafter)


def load_jobs(root: Path) -> list[Job]:
    """Every measured job under `root` (one folder per experiment), in the order they ran."""
    jobs = [
        Job(path.relative_to(root).parts[0], record)
        for path, record in find_records([root])
        if record.conditions.source == "measured"
    ]
    return sorted(jobs, key=lambda j: j.record.provenance.started_at or "")


def acceptance(record: RunRecord) -> list[float] | None:
    """The job's acceptance by position: each position's median over the job's measurements."""
    rows = [
        m.metrics.acceptance_by_position
        for m in record.measurements
        if m.metrics.acceptance_by_position
    ]
    if not rows:
        return None
    width = min(len(r) for r in rows)
    return [round(statistics.median(r[i] for r in rows), 4) for i in range(width)]


def draft_shape(record: RunRecord) -> tuple[float | None, float | None]:
    """(draft_rate, draft_continue) of the job, from the engine's own counts over its measurements:
    drafts per decode step (a step emits its accepted drafts and one token of its own; a request's
    first token comes from its prompt), and the chance a draft goes on past each position that gives
    its mean length (draft tokens per draft). None where the engine counted neither, or for a figure
    that is 1 (every step drafts; every draft is k long)."""
    c = record.conditions
    k = draft_length(c.drafter, c.k)
    drafts = tokens = accepted = steps = 0.0
    for m in record.measurements:
        e, timings = m.engine_counters, _step_timings(m)
        if not e or not e.drafts or not timings:
            continue
        emitted = sum(float(t.get("predicted_n") or 0) for t in timings)
        drafts, tokens, accepted = (
            drafts + e.drafts,
            tokens + (e.draft_tokens or 0),
            accepted + (e.accepted or 0),
        )
        steps += emitted - len(timings) - (e.accepted or 0)
    if not k:
        return None, None
    if not drafts:  # counted, with timings, and no draft: the server drafted nothing over the job
        counted = any(
            m.engine_counters is not None and _step_timings(m) for m in record.measurements
        )
        return (0.0 if counted else None), None
    rate = min(drafts / steps, 1.0) if steps > 0 else None
    mean = tokens / drafts
    go_on = None
    if mean < k - 1e-6:  # sum of go_on**i, i < k, is the mean length: bisection
        lo, hi = 0.0, 1.0
        for _ in range(60):
            mid = (lo + hi) / 2
            lo, hi = (mid, hi) if sum(mid**i for i in range(k)) < mean else (lo, mid)
        go_on = round(lo, 4)
    return (round(rate, 4) if rate is not None and rate < 0.9999 else None), go_on


def _step_timings(m: Measurement) -> list[dict]:
    """The per-request timings that count the tokens a request emitted (llama-server's `predicted_n`),
    from which steps are counted; vLLM's per-request metrics count none, so a vLLM job's draft rate
    stays unknown (None), not 0."""
    return [t for t in m.engine_timings or [] if isinstance(t.get("predicted_n"), (int, float))]


def byte_suffix_tokens(record: RunRecord) -> int | None:
    """A cache-reuse job's new suffix in tokens where its server counted bytes (the byte-level tokenizer of
    the config-only folders specexp writes, runtime.load_format=dummy): the marker, the instruction and,
    for chat, the template's tail. None for any other job."""
    config = record.provenance.config
    workload = config.get("workload") or {}
    if (
        not workload.get("shared_prefix")
        or (config.get("runtime") or {}).get("load_format") != "dummy"
    ):
        return None
    tail = BYTE_CHAT_TAIL_TOKENS if workload.get("endpoint", "chat") == "chat" else 0
    return MARKER_TOKENS + len(str(workload.get("prompt", "")).encode()) + tail


def sim_overrides(record: RunRecord, engine: str) -> list[str]:
    """The measured job's overrides with the simulator imitating `engine` in place of the server."""
    kept = [
        o for o in record.provenance.overrides if not o.lstrip("+").startswith(ENGINE_OVERRIDES)
    ]
    out = ["runtime=sim", f"runtime.engine={engine}", *kept, *_engine_only_keys(kept)]
    accepted = acceptance(record)
    workload_class = (record.provenance.config.get("workload") or {}).get(
        "acceptance_class", "fresh"
    )
    if accepted:
        out.append(f"drafter.acceptance.{workload_class}=[{','.join(str(a) for a in accepted)}]")
    rate, go_on = draft_shape(record)
    if rate is not None:
        out.append(f"++drafter.draft_rate={{{workload_class}:{rate}}}")
    if go_on is not None:
        out.append(f"++drafter.draft_continue={{{workload_class}:{go_on}}}")
    suffix = byte_suffix_tokens(record)
    if suffix is not None:
        out.append(f"workload.suffix_tokens={suffix}")
    return out


def _engine_only_keys(overrides: Sequence[str]) -> list[str]:
    """Deletions (`~runtime.KEY`) of the runtime keys an experiment file sets that the simulator has
    not (a study's `runtime.extra_args` for its server): the study's cells, on the simulator."""
    from omegaconf import OmegaConf

    from specexp.spec.paths import experiments_dir
    from specexp.spec.runtime import SimRuntimeSpec

    out = []
    for o in overrides:
        if o.lstrip("+").startswith("experiment="):
            path = experiments_dir() / f"{o.split('=', 1)[1]}.yaml"
            runtime = OmegaConf.load(path).get("runtime") or {}
            out += [f"~runtime.{key}" for key in runtime if key not in SimRuntimeSpec.model_fields]
    return out


def simulate(
    job: Job, engine: str, profile: EngineProfile | None = None
) -> dict[Key, dict[str, float]]:
    """Per point, the simulated job's median of each window metric."""
    from specexp.fit.engine_cells import simulate as simulate_spec
    from specexp.run.compose import build_spec

    return simulate_spec(build_spec(sim_overrides(job.record, engine)), profile)


def pair(m: Measurement, sim: dict[Key, dict[str, float]]) -> dict[str, float]:
    """The simulated point of measurement `m`: its concurrency and cache, the nearest prompt length."""
    c = m.conditions
    points = [k for k in sim if k[0] == (c.concurrency or 0) and k[2] == c.cache]
    if not points:
        return {}
    return sim[min(points, key=lambda k: abs(k[1] - (c.prompt_tokens or 0)))]


@dataclass(frozen=True)
class Row:
    """One measured figure beside its simulated value."""

    job: Job
    measurement: Measurement
    metric: str
    measured: float
    simulated: float

    @property
    def error(self) -> float:
        return self.simulated / self.measured - 1

    @property
    def within(self) -> bool:
        if not np.isfinite(self.simulated):
            return False
        ok = abs(self.error) <= TARGETS[self.metric]
        return ok or (
            self.metric.startswith("ttft_") and abs(self.simulated - self.measured) <= TTFT_SLACK_S
        )

    @property
    def label(self) -> str:
        c = self.measurement.conditions
        return f"{self.job.label} c={c.concurrency} prompt={c.prompt_tokens:,} {c.cache}"


def metrics_of(job: Job, parts: bool = False) -> tuple[str, ...]:
    """The figures of a job compared; with `parts`, TTFT's parts in place of TTFT."""
    workload = str(job.record.conditions.workload)
    ttft = FIT_PARTS if parts else ("ttft_s",)
    if workload.startswith("prefill"):
        return ("prefill_tps", *ttft)
    if workload.startswith("prefix"):
        return ttft
    return ("decode_tps", "aggregate_tps", *ttft)


def measured(m: Measurement, metric: str) -> float | None:
    """A measured figure; a TTFT part of a record written before the parts were metrics is taken
    from the engine's per-request timings (their mean over the point's requests, as the metric)."""
    if metric == "ttft_core_s":
        queue, engine = measured(m, "ttft_queue_s"), measured(m, "ttft_engine_s")
        return None if queue is None or engine is None else queue + engine
    value = getattr(m.metrics, metric, None)
    if value is not None or metric not in TTFT_PARTS or not m.engine_timings:
        return value
    from specexp.measure.ttft_parts import ttft_parts

    parts = [ttft_parts(None, t) for t in m.engine_timings]
    queue = [p["ttft_queue_s"] for p in parts if p["ttft_queue_s"] is not None]
    engine = [p["ttft_engine_s"] for p in parts if p["ttft_engine_s"] is not None]
    if not queue or not engine:
        return None
    if metric == "ttft_frontend_s":
        ttft = getattr(m.metrics, "ttft_s", None)
        return None if ttft is None else ttft - statistics.fmean(queue) - statistics.fmean(engine)
    return statistics.fmean(queue if metric == "ttft_queue_s" else engine)


def simulated(point: dict[str, float], metric: str) -> float:
    """A simulated point's figure (`ttft_core_s`: its queue and engine parts together)."""
    if metric == "ttft_core_s":
        return point.get("ttft_queue_s", float("nan")) + point.get("ttft_engine_s", float("nan"))
    return float(point.get(metric, float("nan")))


def compare(
    jobs: Sequence[Job], engine: str, profile: EngineProfile | None = None, parts: bool = False
) -> list[Row]:
    """Every measured figure of `jobs` (metrics_of) beside the simulated one; windows the engine's log
    shows contaminated are left out, and so is a TTFT part under PART_FLOOR_S."""
    rows = []
    for job in jobs:
        sim = simulate(job, engine, profile)
        for m in job.record.measurements:
            if m.contaminated:
                continue
            s = pair(m, sim)
            for metric in metrics_of(job, parts):
                value = measured(m, metric)
                if not value or (metric in (*TTFT_PARTS, *FIT_PARTS) and value < PART_FLOOR_S):
                    continue
                rows.append(Row(job, m, metric, float(value), simulated(s, metric)))
    return rows


@dataclass(frozen=True)
class WarmGain:
    """A prefix-cache point's warm-over-cold TTFT gain, measured and simulated."""

    label: str
    measured: float
    simulated: float

    @property
    def within(self) -> bool:
        return abs(self.simulated / self.measured - 1) <= WARM_GAIN_TARGET


def warm_gains(rows: Iterable[Row]) -> list[WarmGain]:
    """cold ttft_s / warm ttft_s of each prefix-cache job's prompt lengths."""
    cold: dict[tuple[str, int], Row] = {}
    out = []
    for row in rows:
        c = row.measurement.conditions
        if row.metric != "ttft_s" or not str(c.workload).startswith("prefix"):
            continue
        key = (row.job.record.run_id, int(c.prompt_tokens or 0))
        if c.cache == "cold":
            cold[key] = row
        elif key in cold:
            base = cold[key]
            out.append(
                WarmGain(
                    f"{row.job.label} prompt={key[1]:,}",
                    base.measured / row.measured,
                    base.simulated / row.simulated,
                )
            )
    return out


def with_figures(
    profile: EngineProfile, names: Sequence[str], values: Sequence[float]
) -> EngineProfile:
    return profile.model_copy(update=dict(zip(names, (float(v) for v in values), strict=True)))


def fit(
    jobs: Sequence[Job],
    engine: str,
    names: Sequence[str],
    upper: Sequence[float],
    iterations: int = 30,
    weight: Callable[[Row], float] | None = None,
    unset: dict[str, float] | None = None,
    base: EngineProfile | None = None,
    parts: bool = False,
) -> dict[str, float]:
    """Least-squares figures `names` of `engine`'s profile (or of `base`) from `jobs`, with the fit's rms
    and max error; `unset` gives the starting value of a figure the profile leaves to the hardware file.
    With `parts` the TTFTs are fitted by their parts (front end, queue, engine), not their totals."""
    from specexp.fit.hardware import _lm

    start = base or load_profile(engine)
    top = np.array(upper, dtype=float)

    def residual(p: np.ndarray) -> np.ndarray:
        p = np.nan_to_num(p, nan=0.0)  # a singular step of the fit must not reach the simulator
        trial = with_figures(start, names, np.clip(p, 0.0, top))
        rows = compare(jobs, engine, trial, parts=parts)
        r = np.array(
            [np.log(r.simulated / r.measured) * (weight(r) if weight else 1.0) for r in rows]
        )
        return np.nan_to_num(
            r, nan=5.0, posinf=5.0, neginf=-5.0
        )  # a figure the simulator lost counts as far off

    values = [
        getattr(start, n) if getattr(start, n) is not None else (unset or {})[n] for n in names
    ]
    p0 = np.maximum(np.array(values, dtype=float), 0.05)
    p = _lm(residual, p0, top, iterations=iterations)
    err = np.expm1(residual(p))
    out = dict(zip(names, (float(x) for x in np.clip(p, 0.0, top)), strict=True))
    out.update(rms_error=float(np.sqrt(np.mean(err**2))), max_error=float(np.max(np.abs(err))))
    return out
