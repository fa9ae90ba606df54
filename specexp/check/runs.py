"""Run records as figures: one measurement's conditions and metrics, read from a `RunRecord`.

The checker and the report read records the same way: `runs_of` turns `(path, RunRecord)`
pairs (from `specexp.record.find_records`) into one `Run` per measurement, with output identity
judged across the records (`specexp.check.identity`). A null condition is unknown.
"""

from __future__ import annotations

import os
from collections import Counter
from collections.abc import Iterable, Mapping
from dataclasses import dataclass, field
from functools import cached_property
from pathlib import Path
from types import MappingProxyType
from typing import Any

from specexp.check.figures import Figure, normalise
from specexp.check.identity import output_identity
from specexp.record import RunRecord
from specexp.record.schema import Conditions, Metrics
from specexp.spec.vocabulary import METRICS
from specexp.stats.bootstrap import Runs, metric_runs


@dataclass(frozen=True)
class Run:
    """One measurement of one run."""

    id: str
    """The run id, with `#i` (the measurement's order) where a run has several."""
    run_id: str
    conditions: Conditions
    metrics: Metrics
    link: str = ""
    """The record's path (relative to the report, when one is written)."""
    origin: str = field(default="measured")
    spread: Mapping[str, list[float]] = field(default_factory=dict)
    """[min, max] of each metric over the repeats."""
    client: Mapping[str, Any] = field(default_factory=dict)
    """What the measuring client spent (`ClientLoad`), where the measurement has it."""
    load: Mapping[str, Any] = field(default_factory=dict)
    """Open-loop and SLO verdicts of the measurement: `load_delivered`, `slo_met` (where set)."""
    beyond_stream: Mapping[str, int] = field(default_factory=dict)
    """By request id, tokens the server's usage counted beyond what the client was streamed."""
    samples: Mapping[str, list[Any]] = field(default_factory=dict)
    """Each metric's value in each timed window behind the median (null where a window had none)."""
    server_start: tuple[int, ...] | None = None
    """The server start of each window (None: one server)."""
    step_costs: Mapping[str, Mapping[str, float]] | None = None
    """The simulator: what the engine's time went to, seconds by phase and cost (None: a real
    engine)."""
    _runs: dict[str, Runs | None] = field(default_factory=dict, compare=False, repr=False)
    """`runs(metric)` as made (a cache: the row itself never changes)."""

    def runs(self, metric: str) -> Runs | None:
        """`metric`'s value in each window with its server start: what its interval resamples
        (made once a metric: a report asks for it in every table the row is in)."""
        if metric not in self._runs:
            self._runs[metric] = metric_runs(self.samples, self.server_start, metric)
        return self._runs[metric]

    def get(self, condition: str) -> Any:
        """A condition named by a variable (a table's column); literal names read as attributes."""
        try:
            return self.conditions.__dict__[condition]  # a field's value, read many times a table
        except KeyError:
            return self.conditions.get(condition)  # not a condition: says so

    @cached_property
    def normalised_conditions(self) -> Mapping[str, Any]:
        """The conditions as a figure states them (`specexp.check.figures.normalise`), made once."""
        return MappingProxyType(normalise(self.conditions.model_dump()))

    def figure(self, metric: str) -> Figure | None:
        """This measurement's `metric` as a figure, or None when the run has no value for it."""
        value = _value(self.metrics.get(metric), METRICS[metric].unit)
        if value is None:
            return None
        return Figure(
            self.id,
            metric,
            value,
            METRICS[metric].unit,
            None,
            self.normalised_conditions,
            self.origin,
            link=self.link,
        )


def runs_of(
    found: Iterable[tuple[Path, RunRecord]],
    relative_to: Path | None = None,
    *,
    partial: bool = False,
) -> list[Run]:
    """Every measurement of the records of finished runs (and, with `partial`, the measurements
    kept from runs that failed part-way); links relative to `relative_to` when given."""
    found = list(found)
    identical = output_identity([r for _, r in found])
    raw: list[tuple[str, int, Any, str]] = []
    for path, record in found:
        link = os.path.relpath(path, relative_to) if relative_to is not None else str(path)
        for i, m in enumerate(record.measurements):
            if record.status == "ok" or (partial and m.partial):
                raw.append((record.run_id, i, m, link))
    counts = Counter(run_id for run_id, *_ in raw)
    runs = []
    for run_id, i, m, link in raw:
        metrics = m.metrics.model_copy(
            update=dict(output_identical=identical.get((run_id, i), m.metrics.output_identical))
        )
        origin = m.conditions.source
        runs.append(
            Run(
                run_id if counts[run_id] == 1 else f"{run_id}#{i}",
                run_id,
                m.conditions,
                metrics,
                link,
                origin if origin in ("measured", "simulated") else "measured",
                MappingProxyType(dict(m.spread)),
                MappingProxyType(m.client.model_dump() if m.client is not None else {}),
                MappingProxyType(
                    {
                        k: v
                        for k, v in (("load_delivered", m.load_delivered), ("slo_met", m.slo_met))
                        if v is not None
                    }
                ),
                MappingProxyType(dict(m.tokens_beyond_stream)),
                MappingProxyType(dict(m.samples)),
                tuple(m.server_start) if m.server_start else None,
                MappingProxyType(dict(m.step_costs)) if m.step_costs else None,
            )
        )
    return runs


def _value(value: Any, unit: str) -> Any:
    if value is None:
        return None
    if unit == "bool":
        return value if isinstance(value, bool) else None
    if isinstance(value, list):
        numbers = [v for v in value if isinstance(v, (int, float)) and not isinstance(v, bool)]
        return tuple(float(v) for v in numbers) if numbers and len(numbers) == len(value) else None
    if isinstance(value, (int, float)) and not isinstance(value, bool):
        return float(value)
    return None
