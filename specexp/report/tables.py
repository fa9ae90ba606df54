"""Records -> rows, and rows -> groups whose unshown conditions are all equal.

A table holds rows that agree on every condition it does not show as a column; a speedup
compares a row with the drafter=none row that shares every other condition.
"""

from __future__ import annotations

import os
from collections.abc import Callable, Iterable, Sequence
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

from specexp.conditions import CONDITIONS

DRAFTER_KEYS = ("drafter", "k", "drafter_config", "draft_model")
"""Conditions a speedup varies: everything else must match the baseline row."""
SETUP_KEYS = ("hardware", "gpu_count", "gpu_shared", "gpu_memory_utilization", "model", "quantization",
              "kv_cache_dtype", "max_model_len", "runtime", "runtime_version", "prefix_caching")
"""What a server is: shown as columns of one table (a study comparing machines or weights reads
them side by side), never hidden; the workload's conditions split tables instead."""
NOT_COMPARED = ("runtime_version", "repeats", "prompt_tokens")
"""Conditions that may differ between a row and its baseline without making them incomparable:
the engine build of one server, the repeat count, and the server's own count of the same prompt."""


@dataclass(frozen=True)
class Row:
    run_id: str
    conditions: dict[str, Any]
    metrics: dict[str, Any]
    spread: dict[str, list[float]] = field(default_factory=dict)
    link: str = ""
    """Relative path from the report to the run's result.json."""
    client: dict[str, Any] = field(default_factory=dict)
    """The measurement's `client` record (what the measuring client spent), where it has one."""

    def get(self, key: str) -> Any:
        return self.conditions.get(key)


@dataclass(frozen=True)
class Failure:
    run_id: str
    status: str
    conditions: dict[str, Any]
    error: dict[str, Any]
    link: str = ""


def rows_of(found: Iterable[tuple[Path, dict[str, Any]]], report_dir: Path) -> tuple[list[Row], list[Failure]]:
    """Measurements of every record as rows; refused, failed and skipped runs as failures."""
    rows: list[Row] = []
    failures: list[Failure] = []
    for path, result in found:
        link = os.path.relpath(path, report_dir)
        status = str(result.get("status"))
        run_id = str(result.get("run_id", "?"))
        if status != "ok":
            failures.append(Failure(run_id, status, result.get("conditions") or {}, result.get("error") or {}, link))
        for m in result.get("measurements") or []:
            if status == "ok" or m.get("partial"):
                rows.append(Row(run_id, m.get("conditions") or {}, m.get("metrics") or {}, m.get("spread") or {}, link,
                                m.get("client") or {}))
    return rows, failures


def key(value: Any) -> Any:
    return tuple(value) if isinstance(value, list) else value


def fixed_conditions(rows: Sequence[Row]) -> dict[str, Any]:
    """Conditions with one value across all rows."""
    if not rows:
        return {}
    return {c: rows[0].get(c) for c in CONDITIONS if len({key(r.get(c)) for r in rows}) == 1}


def varying(rows: Sequence[Row], exclude: Iterable[str] = ()) -> list[str]:
    """Conditions that take more than one value among `rows`, in vocabulary order."""
    skip = set(exclude)
    return [c for c in CONDITIONS if c not in skip and len({key(r.get(c)) for r in rows}) > 1]


def group(rows: Sequence[Row], shown: Iterable[str]) -> list[tuple[dict[str, Any], list[Row]]]:
    """Split rows so that, within a group, every condition not in `shown` is equal.

    Returns (the conditions that define the group, its rows), in first-seen order.
    """
    shown = set(shown)
    hidden = [c for c in CONDITIONS if c not in shown]
    groups: dict[tuple[Any, ...], list[Row]] = {}
    for row in rows:
        groups.setdefault(tuple(key(row.get(c)) for c in hidden), []).append(row)
    return [({c: members[0].get(c) for c in hidden}, members) for members in groups.values()]


def baseline(row: Row, candidates: Sequence[Row]) -> Row | None:
    """The drafter=none row whose other conditions all equal `row`'s."""
    if row.get("drafter") == "none":
        return None
    for other in candidates:
        if other.get("drafter") == "none" and all(
            key(other.get(c)) == key(row.get(c)) for c in CONDITIONS if c not in DRAFTER_KEYS + NOT_COMPARED
        ):
            return other
    return None


def sort_rows(rows: Sequence[Row], columns: Sequence[str]) -> list[Row]:
    """Baseline first, then by the shown columns."""
    def order(value: Any) -> tuple[int, Any]:
        if value is None or value == "none":
            return (0, "")
        if isinstance(value, (int, float)):
            return (1, value)
        return (2, str(value))

    return sorted(rows, key=lambda r: tuple(order(r.get(c)) for c in columns))


def select(rows: Sequence[Row], predicate: Callable[[Row], bool]) -> list[Row]:
    return [r for r in rows if predicate(r)]
