"""One line of a sweep's `results.jsonl`: a measurement flat enough for pandas, polars or duckdb.

Written from the records (`specexp.record.store.results_lines`) and read back by `--compare` and
`specexp.results` as the same model, so a reader never indexes a line by strings it guesses. A line
is a measurement's run id, status, conditions and metrics, each metric's [min, max] over the repeats
(`spread`) and the judgments made when the records were read (output identity, the baseline and the
speedup over it); a record without measurements (skipped, refused) is one line with empty metrics.
"""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any

from pydantic import ValidationError, field_validator

from specexp.record.fields import Conditions, Metrics
from specexp.record.named import Record
from specexp.stats.bootstrap import Runs, metric_runs


class LineError(ValueError):
    """A results.jsonl line that is not one: its file, line number and what is wrong."""

    def __init__(self, where: Path, number: int, problem: str) -> None:
        super().__init__(f"{where}: line {number}: {problem}")
        self.where, self.number, self.problem = where, number, problem


class Judgments(Record):
    """What is judged of a measurement when its records are read (specexp.check.judgments says how
    each is made); null where there is no such judgment. Every line written with judgments carries
    every one of them."""

    output_identical: bool | None = None
    baseline_run_id: str | None = None
    speedup_metric: str | None = None
    speedup_vs_baseline: float | None = None
    speedup_within_noise: bool | None = None
    """The speedup's interval (`speedup_interval`) holds 1: not beyond what reruns move it."""
    speedup_interval: list[float] | None = None
    """The speedup's 95 % bootstrap interval over both sides' runs (server starts where there were
    several, else windows; specexp.stats.bootstrap); null with fewer than two runs on a side."""
    pass_cost_steps: float | None = None
    sampled_verdict: str | None = None
    sampled_p_value: float | None = None
    sampled_detectable_shift: float | None = None
    score_difference: float | None = None
    score_interval: list[float] | None = None
    mcnemar_p: float | None = None
    score_verdict: str | None = None


class ResultLine(Record):
    """One measurement of a sweep, as results.jsonl holds it."""

    run_id: str
    status: str
    conditions: Conditions
    metrics: Metrics | None
    """None: a record without measurements (written as `{}`)."""
    spread: dict[str, list[float]] | None = None
    samples: dict[str, list[float | None]] | None = None
    """The headline metrics' (those `--compare` judges) value in each timed window: what their
    intervals, and a comparison's, resample. None: a line written before lines held them."""
    server_start: list[int] | None = None
    """The server start of each of those windows (None: one server)."""
    interval: dict[str, list[float]] | None = None
    """Each headline metric's 95 % bootstrap interval over its runs (specexp.stats.bootstrap)."""
    judgments: Judgments | None = None
    """The read-time judgments (specexp.check.judgments), where the lines were written with them."""

    @field_validator("metrics", mode="before")
    @classmethod
    def _none_for_empty(cls, value: Any) -> Any:
        return None if value == {} else value

    def runs(self, metric: str) -> Runs | None:
        """`metric`'s value in each window with its server start (None: the line holds none)."""
        return metric_runs(self.samples, self.server_start, metric)

    @property
    def measured(self) -> bool:
        """Finished, with figures: what a comparison pairs."""
        return self.status == "ok" and self.metrics is not None

    def to_json(self) -> str:
        """The line as results.jsonl writes it (the keys in this order; spread and judgments only
        where the line has them)."""
        out: dict[str, Any] = {
            "run_id": self.run_id,
            "status": self.status,
            "conditions": self.conditions.model_dump(),
            "metrics": self.metrics.model_dump() if self.metrics is not None else {},
        }
        if self.spread is not None:
            out["spread"] = self.spread
        for key in ("samples", "server_start", "interval"):
            if getattr(self, key) is not None:
                out[key] = getattr(self, key)
        if self.judgments is not None:
            out["judgments"] = self.judgments.model_dump()
        return json.dumps(out)


def read_result_lines(path: Path) -> list[ResultLine]:
    """Every line of a results.jsonl file; a line that is not JSON or not a result line raises
    `LineError` naming the file and the line."""
    lines = []
    text = path.read_text(encoding="utf-8")
    for number, raw in enumerate(text.splitlines(), 1):
        if not raw.strip():
            continue
        try:
            lines.append(ResultLine.model_validate_json(raw))
        except ValidationError as err:
            first = err.errors()[0]
            at = ".".join(str(p) for p in first["loc"])
            raise LineError(path, number, f"{at}: {first['msg']}" if at else first["msg"]) from None
    return lines
