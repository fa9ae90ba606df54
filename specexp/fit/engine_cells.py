"""Fit an engine profile's figures to that engine measured by specexp, and compare every cell.

The data are specexp's own records of a real server (benchmarks/data/, with their provenance):
for llama-server with CUDA on an H200, the Qwen3-8B shape in BF16 without a drafter, decode at
concurrency 1, 8 and 32 (512-token prompts, 256 tokens out, 32 slots) and prefill at 1k-32k
tokens (one slot), a trace's decode at concurrency 1-32 (32 tokens out), pure decode at
concurrency 1-32 (256 tokens out), the last two twice more in turn on another machine, and the
prefix_cache workload at 3.7k-32k tokens (cold, then warm). Every measured job is simulated whole
with `runtime=sim runtime.engine=<profile>` and the same conditions (its concurrency levels in the order they ran,
its repeats and warm-up), through the same runtime and workload driver a sweep uses: llama-server
reuses its slots window after window, so a window's slot ids depend on the windows before it.

The fit is the Levenberg-Marquardt least squares of fit/hardware.py on log(simulated / measured)
over decode_tps, aggregate_tps and ttft_s of the decode cells, prefill_tps and ttft_s of the
prefill cells and ttft_s of the prefix cells (cold and warm), of the profile's per-sequence CPU cost,
its prefill compute share, its per-request cost and its cost per prompt token (which cached tokens
pay too), its cost per prefill micro-batch, its kernels' cost per layer and its extra cost of a pass over
more than one token (FITTED). What a decode pass's compute graph costs when its shape is new
(rebuilt, run without a CUDA graph, then captured) is measured, not fitted: fitted, the capture
went to 30 ms a shape, against the 3.1 ms that every token's arrival time shows
(benchmarks/llamacpp_graph_costs.py). The per-step cost is not fitted: it trades one for one against the
per-layer cost. The micro-batch sizes are the engine's defaults and its scheduling is read from its
source, not fitted.
"""

from __future__ import annotations

import json
from collections.abc import Sequence
from dataclasses import dataclass, replace
from pathlib import Path
from typing import Any

import numpy as np

from specexp.sim.profile import DEFAULT, EngineProfile, load_profile
from specexp.spec.experiment import ExperimentSpec
from specexp.spec.runtime import SimRuntimeSpec

FITTED = (
    "seq_overhead_ms",
    "prefill_compute",
    "request_overhead_ms",
    "request_overhead_us_per_token",
    "prefill_pass_overhead_ms",
    "layer_overhead_us",
    "batched_pass_overhead_ms",
)
UPPER = (np.inf, 1.0, np.inf, np.inf, np.inf, np.inf, np.inf)
MEASURED = (
    "graph_rebuild_ms",
    "graph_capture_ms",
    "ungraphed_pass_ms",
    "checkpoint_save_gbps",
    "checkpoint_restore_gbps",
)
"""Figures of the profile set from measurements directly, which the fit leaves alone."""
METRICS = {
    "decode": ("decode_tps", "aggregate_tps", "ttft_s"),
    "prefill": ("prefill_tps", "ttft_s"),
    "prefix": ("ttft_s",),
}
"""The figures compared and fitted, by part: prefix is the prefix_cache workload (a prompt cold, then
its prefix again with a new suffix, warm, one token out), whose job sweeps the prompt length."""


@dataclass(frozen=True)
class Cell:
    """One measured figure set: a part (decode, prefill) at one concurrency and prompt length."""

    part: str
    concurrency: int
    prompt_tokens: int
    output_tokens: int
    max_model_len: int
    slots: int
    repeats: int
    measured: dict[str, float]
    cache: str = "cold"
    model: str = "qwen3-8b"
    job: int = 0
    """Which measured job (one server, its concurrency levels one after the other) it came from."""
    warmed: bool = True
    """Its job ran a warm-up window of each point's shape before the point (workload.warmup_per_point):
    what specexp has done since the records whose measurements carry `contaminated` (the change that
    brought both, 2026-12-02); the earlier records' jobs went from one point to the next unwarmed."""

    @property
    def settings(self) -> tuple[str, str, int, int, int, int, int, int]:
        # a prefix job sweeps its prompt at one concurrency; the others sweep the concurrency
        level = (0, self.concurrency) if self.part == "prefix" else (self.prompt_tokens, 0)
        return (
            self.part,
            self.model,
            *level,
            self.output_tokens,
            self.max_model_len,
            self.slots,
            self.repeats,
        )

    def follows(self, prev: Cell) -> bool:
        """Whether this cell was measured in `prev`'s job, right after it: a job's concurrency levels
        ascend, and a prefix job's prompt lengths ascend, each cold then warm."""
        if prev.settings != self.settings:
            return False
        if self.part == "prefix":
            return self.prompt_tokens > prev.prompt_tokens or (
                self.cache == "warm" and prev.cache == "cold"
            )
        return self.concurrency > prev.concurrency

    @property
    def label(self) -> str:
        out = f" out={self.output_tokens}" if self.part == "decode" else ""
        cache = f" {self.cache}" if self.part == "prefix" else ""
        model = f" {self.model}" if self.model != "qwen3-8b" else ""
        return f"{self.part}{model} c={self.concurrency} prompt={self.prompt_tokens:,}{out}{cache}"


def load_cells(paths: Path | Sequence[Path]) -> list[Cell]:
    """The drafter-free decode, prefill and prefix cells of records files (one JSON object a line), in
    order: a job ends where the settings change or a cell does not follow the one before (Cell.follows)."""
    cells: list[Cell] = []
    lines = [
        line
        for path in ([paths] if isinstance(paths, Path) else paths)
        for line in path.read_text().splitlines()
    ]
    for line in lines:
        r: dict[str, Any] = json.loads(line)
        part, m = r.get("part"), r.get("measured") or {}
        c = m.get("conditions") or {}
        if r.get("status") != "ok" or part not in METRICS or c.get("drafter") != "none":
            continue
        slots = int((r.get("engine_info") or {}).get("total_slots") or c["concurrency"])
        cell = Cell(
            part,
            int(c["concurrency"]),
            int(c["prompt_tokens"]),
            int(c["output_tokens"]),
            int(c["max_model_len"]),
            slots,
            int(c.get("repeats") or 1),
            {k: float(m["metrics"][k]) for k in METRICS[part] if m["metrics"].get(k)},
            str(c.get("cache") or "cold"),
            str(c.get("model") or "qwen3-8b"),
            warmed="contaminated" in m,
        )
        prev = cells[-1] if cells else None
        cells.append(
            replace(cell, job=(prev.job if cell.follows(prev) else prev.job + 1) if prev else 0)
        )
    return cells


def base_spec(engine: str, model: str = "qwen3-8b") -> ExperimentSpec:
    """runtime=sim imitating `engine` for the measured shape: hardware=h200, `model` in bf16."""
    from specexp.run.compose import build_spec

    return build_spec(
        [
            "runtime=sim",
            f"runtime.engine={engine}",
            "hardware=h200",
            f"model={model}",
            "quantization=bf16",
            "drafter=none",
            "workload=concurrency",
        ]
    )


def job_spec(base: ExperimentSpec, cells: Sequence[Cell]) -> ExperimentSpec:
    """The job that measured `cells` (one Cell.job), concurrency levels in the order they ran, with
    its repeats and the workload's warm-up: llama-server's slots are reused from window to window,
    least recently used first, so a window's slot ids (and its passes) depend on the windows before."""
    cell = cells[0]
    update: dict[str, Any] = {
        "concurrency": [c.concurrency for c in cells],
        "prompt_tokens": cell.prompt_tokens,
        "prompt_lengths": None,
        "output_tokens": cell.output_tokens,
        "repeats": cell.repeats,
        "cache": ["cold"],
        "shared_prefix": False,
        "warmup_per_point": cell.warmed,
    }
    if (
        cell.part == "prefix"
    ):  # as workload=prefix_cache: each prompt length cold, then warm, no warm-up
        lengths = [c.prompt_tokens for c in cells if c.cache == "cold"]
        update.update(
            concurrency=[cell.concurrency],
            prompt_tokens=lengths[0],
            prompt_lengths=lengths,
            cache=["cold", "warm"],
            shared_prefix=True,
            warmup=0,
        )
    workload = base.workload.model_copy(update=update)
    runtime = base.runtime.model_copy(
        update={"max_model_len": cell.max_model_len, "max_num_seqs": cell.slots}
    )
    return base.model_copy(update={"workload": workload, "runtime": runtime})


PROMPT_SLACK = 2
"""Tokens by which a server may count a prefix job's warm prompt off its cold one (its new suffix)."""
Key = tuple[int, int, str, int]
"""A simulated window's (concurrency, prompt tokens, cache, send): the send of a shared prefix that
is sent several times (condition `send`), 0 where the workload sends each prompt once."""


def simulate(
    spec: ExperimentSpec, profile: EngineProfile | None = None
) -> dict[Key, dict[str, float]]:
    """Per point (Key), the median over repeats of each window metric of the job on the simulator."""
    from specexp.measure.metrics import window_metrics
    from specexp.runtimes.sim.driver import SimRuntime
    from specexp.sim.startup import start_engine
    from specexp.workloads.driver import drive

    runtime = SimRuntime(spec, Path("."))
    _, runtime.engine = start_engine(spec, profile)
    prefill_only = spec.workload.output_tokens == 1
    samples: dict[Key, dict[str, list[float]]] = {}
    for window in drive(runtime, spec.workload, marker="calibration"):
        point = window.point
        key = (point.concurrency or 0, point.prompt_tokens, point.cache, point.send or 0)
        level = samples.setdefault(key, {})
        for k, v in window_metrics(window.traces, window.delta, prefill_only=prefill_only).items():
            if isinstance(v, (int, float)) and not isinstance(v, bool):
                level.setdefault(k, []).append(float(v))
    return {c: {k: float(np.median(v)) for k, v in m.items()} for c, m in samples.items()}


def with_figures(profile: EngineProfile, values: Sequence[float]) -> EngineProfile:
    return profile.model_copy(update=dict(zip(FITTED, (float(v) for v in values), strict=True)))


def compare(
    cells: Sequence[Cell], base: ExperimentSpec, profile: EngineProfile | None = None
) -> list[tuple[Cell, str, float, float]]:
    """(cell, metric, measured, simulated) for every measured figure."""
    jobs: dict[int, list[Cell]] = {}
    for cell in cells:
        jobs.setdefault(cell.job, []).append(cell)
    bases = {base.model.name: base}
    assert isinstance(base.runtime, SimRuntimeSpec), "cells are simulated with runtime=sim"
    engine = base.runtime.engine or DEFAULT  # the simulator's default profile
    for cell in cells:  # a job of another model: the same simulator with that model
        bases.setdefault(cell.model, base_spec(engine, cell.model))
    sims = {key: simulate(job_spec(bases[job[0].model], job), profile) for key, job in jobs.items()}
    rows: list[tuple[Cell, str, float, float]] = []
    for cell in cells:
        # the simulated point of the cell's job: its concurrency and cache, the prompt length nearest
        # (a server counts a prefix job's warm prompt a token off its cold one)
        points = [
            k
            for k in sims[cell.job]
            if k[0] == cell.concurrency
            and k[2] == cell.cache
            and abs(k[1] - cell.prompt_tokens) <= PROMPT_SLACK
        ]
        # a cell is a prompt cold, then warm once: of several sends, the first of its cache state
        key = min(points, key=lambda k: (abs(k[1] - cell.prompt_tokens), k[3]), default=None)
        sim = sims[cell.job][key] if key is not None else {}
        rows.extend(
            (cell, metric, value, sim.get(metric, float("nan")))
            for metric, value in cell.measured.items()
        )
    return rows


def fit(cells: Sequence[Cell], engine: str, iterations: int = 40) -> dict[str, float]:
    """Least-squares figures of the profile from `cells`, with the fit's rms and max error."""
    from specexp.fit.hardware import _lm

    base, start = base_spec(engine), load_profile(engine)

    def residual(p: np.ndarray) -> np.ndarray:
        trial = with_figures(start, np.clip(p, 1e-4, UPPER))
        return np.array([np.log(sim / meas) for _, _, meas, sim in compare(cells, base, trial)])

    p0 = np.maximum(np.array([getattr(start, name) for name in FITTED]), 0.05)
    p = _lm(residual, p0, np.array(UPPER), iterations=iterations)
    err = np.expm1(residual(p))
    out = dict(zip(FITTED, (float(x) for x in p), strict=True))
    out.update(rms_error=float(np.sqrt(np.mean(err**2))), max_error=float(np.max(np.abs(err))))
    return out
