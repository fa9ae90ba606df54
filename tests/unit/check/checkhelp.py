"""Helpers for the checker tests: figures built in code and figures-file entries."""

from __future__ import annotations

from typing import Any

from specexp.check.figures import Figure, normalise
from specexp.spec.vocabulary import METRICS

BASE: dict[str, Any] = {
    "hardware": "dgx_spark",
    "model": "qwen3.8-27b",
    "quantization": "fp8",
    "runtime": "vllm",
    "drafter": "mtp",
    "k": 3,
    "workload": "edit_heavy",
    "prompt_tokens": 6387,
    "output_tokens": 3000,
    "concurrency": 1,
    "cache": "cold",
    "thinking": False,
    "temperature": 0.0,
}
"""A fully stated single-stream figure (docs/studies.md's edit-heavy MTP setting)."""


def make_figure(
    fid: str = "a",
    metric: str = "e2e_tps",
    value: Any = 20.0,
    origin: str = "cited",
    source: str | None = "post",
    drop: tuple[str, ...] = (),
    **conditions: Any,
) -> Figure:
    c = {k: v for k, v in {**BASE, **conditions}.items() if k not in drop}
    return Figure(fid, metric, value, METRICS[metric].unit, source, normalise(c), origin)


def figure_entry(**over: Any) -> dict[str, Any]:
    entry: dict[str, Any] = {
        "value": 47.1,
        "unit": "tok/s",
        "metric": "e2e_tps",
        "source": "blog A",
        "conditions": dict(BASE),
    }
    entry.update(over)
    return entry


SIM_CASES: dict[str, tuple[str, ...]] = {
    # Simulated runs across hardware, quantization, drafters and workload axes (all must finish).
    "fp8-dspark7-edit": (
        "hardware=dgx_spark",
        "model=qwen3.8-27b",
        "quantization=fp8",
        "drafter=dspark",
        "k=7",
        "workload=edit_heavy",
    ),
    "fp8-mtp3-edit": (
        "hardware=dgx_spark",
        "model=qwen3.8-27b",
        "quantization=fp8",
        "drafter=mtp",
        "k=3",
        "workload=edit_heavy",
    ),
    "nvfp4-mtp3-fresh": (
        "hardware=dgx_spark",
        "model=qwen3.8-27b",
        "quantization=nvfp4",
        "drafter=mtp",
        "k=3",
        "workload=fresh_generation",
    ),
    "fp8-none-fresh": (
        "hardware=dgx_spark",
        "model=qwen3.8-27b",
        "quantization=fp8",
        "drafter=none",
        "workload=fresh_generation",
    ),
    "a6000-fp8-mtp3-fresh": (
        "hardware=rtx_a6000",
        "model=qwen3.8-27b",
        "quantization=fp8",
        "drafter=mtp",
        "k=3",
        "workload=fresh_generation",
        "runtime.max_model_len=32768",
    ),
    "h200-bf16-ngram-conc": (
        "hardware=h200",
        "model=qwen3-8b",
        "quantization=bf16",
        "drafter=ngram",
        "workload=concurrency",
        "workload.concurrency=[1,4]",
        "workload.output_tokens=200",
    ),
    "spark-prefill": (
        "hardware=dgx_spark",
        "model=qwen3.8-27b",
        "quantization=fp8",
        "drafter=none",
        "workload=prefill_sweep",
    ),
    "spark-prefix-cache": (
        "hardware=dgx_spark",
        "model=qwen3.8-27b",
        "quantization=nvfp4",
        "drafter=none",
        "workload=prefix_cache",
    ),
}


def make_run(
    run_id: str,
    conditions: dict[str, Any],
    metrics: dict[str, Any],
    status: str = "ok",
    measurements: int = 1,
) -> Any:
    """The runs of one record with `measurements` identical measurements, as `runs_of` reads
    them (unstated conditions are null: unknown)."""
    from specexp.check.runs import runs_of

    return runs_of([make_record(run_id, conditions, metrics, status, measurements)])


def make_record(
    run_id: str,
    conditions: dict[str, Any],
    metrics: dict[str, Any],
    status: str = "ok",
    measurements: int = 1,
) -> Any:
    """A `(path, RunRecord)` pair, as `find_records` returns them."""
    from pathlib import Path

    from specexp.record import Conditions, Measurement, Metrics, Provenance, RunRecord
    from specexp.spec.vocabulary import NAMES

    typed = Conditions(**{n: conditions.get(n) for n in NAMES})
    m = Measurement(conditions=typed, metrics=Metrics(**metrics))
    record = RunRecord(
        run_id=run_id,
        status=status,
        conditions=typed,
        provenance=Provenance(),  # type: ignore[arg-type]
        measurements=[m] * measurements,
    )
    return Path(f"{run_id}/result.json"), record
