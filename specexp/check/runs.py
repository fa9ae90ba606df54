"""Run records as figures: one measurement's conditions and metrics, whatever shape they came in.

Accepts result.json records (vocabulary.md section 3), `(path, record)` pairs from
`specexp.record.find_results`, the report's rows (anything with `run_id`, `conditions` and
`metrics` attributes) and results.jsonl lines. A null condition is unknown; records of runs
that did not finish are left out.
"""

from __future__ import annotations

from collections import Counter
from collections.abc import Iterable, Mapping
from dataclasses import dataclass, field
from pathlib import Path
from types import MappingProxyType
from typing import Any

from specexp.check.figures import Figure, normalise
from specexp.metrics import METRICS


@dataclass(frozen=True)
class Run:
    """One measurement of one run."""

    id: str
    """The run id, with `#i` (the measurement's order) where a run has several."""
    run_id: str
    conditions: Mapping[str, Any]
    metrics: Mapping[str, Any]
    link: str = ""
    origin: str = field(default="measured")

    def figure(self, metric: str) -> Figure | None:
        """This measurement's `metric` as a figure, or None when the run has no value for it."""
        value = _value(self.metrics.get(metric), METRICS[metric].unit)
        if value is None:
            return None
        return Figure(self.id, metric, value, METRICS[metric].unit, None,
                      MappingProxyType(normalise(self.conditions)), self.origin, link=self.link)


def runs_of(items: Iterable[Any]) -> list[Run]:
    """Every finished measurement in `items` (records, find_results pairs, rows or jsonl lines)."""
    raw: list[tuple[str, dict[str, Any], dict[str, Any], str]] = []
    for item in items:
        raw.extend(_measurements(item))
    counts = Counter(r[0] for r in raw)
    seen: Counter[str] = Counter()
    runs = []
    for run_id, conditions, metrics, link in raw:
        rid = run_id if counts[run_id] == 1 else f"{run_id}#{seen[run_id]}"
        seen[run_id] += 1
        origin = conditions.get("source")
        runs.append(Run(rid, run_id, MappingProxyType(conditions), MappingProxyType(metrics), link,
                        origin if origin in ("measured", "simulated") else "measured"))
    return runs


def _measurements(item: Any) -> list[tuple[str, dict[str, Any], dict[str, Any], str]]:
    link = ""
    if isinstance(item, tuple) and len(item) == 2 and isinstance(item[0], (str, Path)):
        link, item = str(item[0]), item[1]
    if isinstance(item, Mapping):
        run_id = str(item.get("run_id") or "?")
        if item.get("status", "ok") != "ok":
            return []
        if "measurements" in item:
            measurements = item.get("measurements")
            return [(run_id, _dict(m.get("conditions")), _dict(m.get("metrics")), link)
                    for m in (measurements if isinstance(measurements, list) else []) if isinstance(m, Mapping)]
        return [(run_id, _dict(item.get("conditions")), _dict(item.get("metrics")), link)]
    conditions = getattr(item, "conditions", None)
    metrics = getattr(item, "metrics", None)
    if isinstance(conditions, Mapping) and isinstance(metrics, Mapping):
        return [(str(getattr(item, "run_id", "?")), dict(conditions), dict(metrics),
                 str(getattr(item, "link", "") or link))]
    return []


def _dict(value: Any) -> dict[str, Any]:
    return dict(value) if isinstance(value, Mapping) else {}


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
