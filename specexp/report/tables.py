"""Records -> comparable tables: rows whose unshown conditions are all equal.

A table holds the measurements of one group (by default one workload). Conditions equal in
every row of the whole report are stated once in the method section; conditions that vary
inside a table become its columns; speedups compare a row with the drafter=none row that
shares every other condition.
"""

from __future__ import annotations

from collections.abc import Iterable, Sequence
from dataclasses import dataclass, field
from typing import Any

from specexp.conditions import CONDITIONS

DRAFTER_KEYS = ("drafter", "k", "drafter_config")
"""Conditions a speedup varies: everything else must match the baseline row."""
SAMPLE_KEYS = ("repeats",)


@dataclass(frozen=True)
class Row:
    run_id: str
    conditions: dict[str, Any]
    metrics: dict[str, Any]
    spread: dict[str, list[float]] = field(default_factory=dict)


@dataclass(frozen=True)
class Table:
    title: str
    columns: list[str]
    """Conditions that vary within this table, in vocabulary order."""
    rows: list[Row]
    baselines: dict[int, Row | None]
    """Row index -> the drafter=none row with every other condition equal."""


@dataclass(frozen=True)
class Failure:
    run_id: str
    status: str
    conditions: dict[str, Any]
    error: dict[str, Any]


def rows_of(results: Iterable[dict[str, Any]]) -> tuple[list[Row], list[Failure]]:
    """Measurements of every result as rows; refused, failed and skipped runs as failures."""
    rows: list[Row] = []
    failures: list[Failure] = []
    for result in results:
        status = result.get("status")
        if status != "ok":
            failures.append(Failure(result.get("run_id", "?"), str(status), result.get("conditions") or {},
                                    result.get("error") or {}))
        for m in result.get("measurements") or []:
            if status == "ok" or m.get("partial"):
                rows.append(Row(result.get("run_id", "?"), m.get("conditions") or {}, m.get("metrics") or {},
                                m.get("spread") or {}))
    return rows, failures


def fixed_conditions(rows: Sequence[Row]) -> dict[str, Any]:
    """Conditions with one value across all rows."""
    fixed = {}
    for key in CONDITIONS:
        values = {_key(r.conditions.get(key)) for r in rows}
        if len(values) == 1:
            fixed[key] = rows[0].conditions.get(key)
    return fixed


def tables(rows: Sequence[Row], group_by: str = "workload") -> list[Table]:
    """One table per value of `group_by`, rows sorted by their varying conditions."""
    groups: dict[Any, list[Row]] = {}
    for row in rows:
        groups.setdefault(_key(row.conditions.get(group_by)), []).append(row)
    out = []
    for key, members in groups.items():
        columns = [c for c in CONDITIONS if c != group_by and len({_key(r.conditions.get(c)) for r in members}) > 1]
        columns = [c for c in columns if c not in ("prompt_tokens",)] + (
            ["prompt_tokens"] if "prompt_tokens" in columns else []
        )
        ordered = sorted(members, key=lambda r: tuple(_sortable(r.conditions.get(c)) for c in columns))
        baselines = {i: baseline(r, members) for i, r in enumerate(ordered)}
        out.append(Table(title=str(key), columns=columns, rows=ordered, baselines=baselines))
    return out


def baseline(row: Row, candidates: Sequence[Row]) -> Row | None:
    """The drafter=none row whose other conditions all equal `row`'s."""
    if row.conditions.get("drafter") == "none":
        return None
    for other in candidates:
        if other.conditions.get("drafter") != "none":
            continue
        if all(
            _key(other.conditions.get(c)) == _key(row.conditions.get(c))
            for c in CONDITIONS
            if c not in DRAFTER_KEYS and c != "runtime_version"
        ):
            return other
    return None


def _key(value: Any) -> Any:
    return tuple(value) if isinstance(value, list) else value


def _sortable(value: Any) -> tuple[int, Any]:
    if value is None:
        return (0, "")
    if isinstance(value, (int, float)):
        return (1, value)
    return (2, str(value))
