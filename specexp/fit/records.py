"""Hold an engine profile against that engine measured by specexp, job by job, and fit its figures.

The data are specexp's own records of a real server (`result.json`, read into `RunRecord`). Every
measured job is simulated whole from its record, replayed as specexp.fit.replay says: the overrides it
ran with, the engine swapped for `runtime=sim runtime.engine=<profile>`, and what the simulator must be
told besides (a drafter's measured acceptance, a suffix's tokens, the server's largest CUDA graph).
Points pair on concurrency, cache state and the nearest prompt length (a server counts the chat
template's tokens too).

`fit` is the Levenberg-Marquardt least squares of specexp.fit.hardware on log(simulated / measured) over
the figures `TARGETS` names, of the profile fields it is given.
"""

from __future__ import annotations

import statistics
from collections.abc import Callable, Iterable, Sequence
from dataclasses import dataclass
from functools import cached_property
from pathlib import Path

import numpy as np

from specexp.fit.replay import sim_overrides
from specexp.measure.request_log import beyond_warmup, new_prefill_lengths, read_requests
from specexp.record import Measurement, RunRecord, find_records
from specexp.sim.profile import EngineProfile, load_profile
from specexp.spec.arms import arm_label

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
Key = tuple[int, int, str, int]
"""A simulated point: (concurrency, prompt tokens, cache, send; 0: the workload sends each prompt once)."""


@dataclass(frozen=True)
class Job:
    """One measured job: the folder it came from (its experiment) and its record."""

    group: str
    record: RunRecord
    folder: Path | None = None
    """The job's folder (its requests.jsonl), where known."""
    compiles_per_length: int | None = None
    """Its engine compiles a kernel for each new number of prefill tokens, in steps of at most this
    many (request_log.new_prefill_lengths), without a line in its log: a window whose kernel cache was
    not read (`compiles_read`) and that prefilled a new number counts as not warmed."""

    @cached_property
    def beyond_warmup(self) -> frozenset[tuple[str, int | None]]:
        """Its timed requests, with their send, whose shape its warm-up did not reach
        (request_log.beyond_warmup)."""
        if self.folder is None:
            return frozenset()
        return frozenset(beyond_warmup(read_requests(self.folder)))

    @cached_property
    def new_lengths(self) -> frozenset[tuple[str, int | None]]:
        """Its timed one-request windows that prefilled a number of tokens new to the job, where its
        engine compiles a kernel for each (request_log.new_prefill_lengths)."""
        if self.folder is None or not self.compiles_per_length:
            return frozenset()
        return frozenset(new_prefill_lengths(read_requests(self.folder), self.compiles_per_length))

    def warmed(self, m: Measurement) -> bool:
        """Whether `m`'s windows were warmed at their shape (as far as the job's requests say), and,
        where the record cannot say whether they compiled, prefilled no number of tokens new to it."""
        sent = {(rid, m.conditions.send) for rid in m.requests}
        if self.beyond_warmup & sent:
            return False
        return "kernel_cache" in m.compiles_read or not self.new_lengths & sent

    @property
    def label(self) -> str:
        c = self.record.conditions
        return f"{c.model} {c.workload} {arm_label(c.drafter, c.k)}"

    @property
    def sitting(self) -> str | None:
        """The folder that holds the job's `sweeps/` (one device lease's records), where it has one."""
        parts = self.folder.parts if self.folder is not None else ()
        above = [parts[i - 1] for i in range(1, len(parts)) if parts[i] == "sweeps"]
        return above[-1] if above else None

    @property
    def drafter(self) -> str:
        return str(self.record.conditions.drafter)


def load_jobs(root: Path) -> list[Job]:
    """Every measured job under `root` (one folder per experiment), in the order they ran."""
    jobs = [
        Job(path.relative_to(root).parts[0], record, path.parent)
        for path, record in find_records([root])
        if record.conditions.source == "measured"
    ]
    return sorted(jobs, key=lambda j: j.record.provenance.started_at or "")


def simulate(
    job: Job, engine: str, profile: EngineProfile | None = None
) -> dict[Key, dict[str, float]]:
    """Per point, the simulated job's median of each window metric."""
    from specexp.fit.engine_cells import simulate as simulate_spec
    from specexp.run.compose import build_spec

    return simulate_spec(build_spec(sim_overrides(job.record, engine)), profile)


def pair(m: Measurement, sim: dict[Key, dict[str, float]]) -> dict[str, float]:
    """The simulated point of measurement `m`: its concurrency, cache and send (a record from before
    sends were recorded: the first send of its cache state), the nearest prompt length."""
    c = m.conditions
    points = [
        k
        for k in sim
        if k[0] == (c.concurrency or 0)
        and k[2] == c.cache
        and (c.send is None or k[3] == c.send)  # a record without sends: the first of its cache
    ]
    if not points:
        return {}
    return sim[min(points, key=lambda k: (abs(k[1] - (c.prompt_tokens or 0)), k[3]))]


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
    if workload.startswith("prefix") or job.record.conditions.output_tokens == 1:
        return ttft  # one token out: no decode, and the aggregate is the TTFT's inverse
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
    queues = [q for p in parts if (q := p["ttft_queue_s"]) is not None]
    engines = [e for p in parts if (e := p["ttft_engine_s"]) is not None]
    if not queues or not engines:
        return None
    if metric == "ttft_frontend_s":
        ttft = getattr(m.metrics, "ttft_s", None)
        return None if ttft is None else ttft - statistics.fmean(queues) - statistics.fmean(engines)
    return statistics.fmean(queues if metric == "ttft_queue_s" else engines)


def simulated(point: dict[str, float], metric: str) -> float:
    """A simulated point's figure (`ttft_core_s`: its queue and engine parts together)."""
    if metric == "ttft_core_s":
        return point.get("ttft_queue_s", float("nan")) + point.get("ttft_engine_s", float("nan"))
    return float(point.get(metric, float("nan")))


def compare(
    jobs: Sequence[Job], engine: str, profile: EngineProfile | None = None, parts: bool = False
) -> list[Row]:
    """Every measured figure of `jobs` (metrics_of) beside the simulated one; windows the engine's log
    shows contaminated, and those whose warm-up did not reach their shape (Job.warmed), are left out,
    and so is a TTFT part under PART_FLOOR_S."""
    rows = []
    for job in jobs:
        sim = simulate(job, engine, profile)
        for m in job.record.measurements:
            if m.contaminated or not job.warmed(m):
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
    job: Job | None = None
    """The job both sends came from."""

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
                    row.job,
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
