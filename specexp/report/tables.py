"""Records -> rows, and rows -> groups whose unshown conditions are all equal.

A row is one measurement (`specexp.check.runs.Run`, the checker's own view of a record, so the
report and its Comparability section speak about the same things). A table holds rows that
agree on every condition it does not show as a column; a speedup compares a row with its
drafter=none baseline (the vocabulary's one baseline rule).
"""

from __future__ import annotations

import os
from collections.abc import Iterable, Sequence
from dataclasses import dataclass
from pathlib import Path
from typing import Any

from specexp.check.runs import Run, runs_of
from specexp.record import ErrorInfo, RunRecord
from specexp.record.schema import Conditions
from specexp.spec.vocabulary import (
    CONDITIONS,
    DRAFTER,
    NAMES,
    SETUP,
    Baselines,
    value_key,
)

Row = Run
"""One measurement, as the report shows it."""

DRAFTER_KEYS = DRAFTER
"""Conditions a speedup varies: everything else must match the baseline row."""
SPEC_KEYS = (*SETUP, *DRAFTER, "prompt_tokens")
"""Shown as columns in the decode, concurrency, prefill and prefix-cache tables: the server (what
a study comparing machines or weights reads side by side, never hidden), the drafter, the prompt
length the server counted; the workload's other conditions split tables instead."""
TITLES = {
    "decode": "Decode speed by drafter",
    "concurrency": "Throughput under concurrency",
    "rate": "Open-loop load",
    "failures": "Runs that did not complete",
}
"""The sections' headings, written once: the sections write them, the findings link to them."""
CHART_KEYS = (*SPEC_KEYS, "workload", "output_tokens", "ignore_eos", "thinking")
"""What a decode chart spans: one workload's runs across servers and drafters."""


@dataclass(frozen=True)
class Failure:
    run_id: str
    status: str
    conditions: Conditions
    error: ErrorInfo
    link: str = ""


def rows_of(
    found: Sequence[tuple[Path, RunRecord]], report_dir: Path
) -> tuple[list[Row], list[Failure]]:
    """Measurements of every record as rows (partial ones of failed runs too); refused, failed
    and skipped runs as failures."""
    failures = [
        Failure(
            r.run_id,
            r.status,
            r.conditions,
            r.error or ErrorInfo(kind="", message=""),
            os.path.relpath(path, report_dir),
        )
        for path, r in found
        if r.status != "ok"
    ]
    return runs_of(found, report_dir, partial=True), failures


def fixed_conditions(rows: Sequence[Row]) -> dict[str, Any]:
    """Conditions with one value across all rows (a later-added condition null in every row, such
    as request_rate in closed-loop sweeps, is left out: it says nothing)."""
    if not rows:
        return {}
    first, counted = _values(rows[0]), _distinct(rows)
    return {
        c: first[c]
        for c in NAMES
        if counted[c] == 1 and not (CONDITIONS[c].absent_is_null and first[c] is None)
    }


def varying(rows: Sequence[Row], exclude: Iterable[str] = ()) -> list[str]:
    """Conditions that take more than one value among `rows`, in vocabulary order."""
    skip, counted = set(exclude), _distinct(rows)
    return [c for c in NAMES if c not in skip and counted[c] > 1]


def beside_arm(rows: Sequence[Row]) -> list[str]:
    """The conditions a table of measurements shows beside each one's arm (drafter and k): those
    that vary among `rows`, but how many runs a figure is over and the engine's build."""
    return [
        c
        for c in varying(rows, exclude=("repeats", "runtime_version", "server_starts"))
        if c not in ("drafter", "k")
    ]


def _values(row: Row) -> dict[str, Any]:
    """A row's conditions by name (the record's own fields: read many times a report)."""
    return vars(row.conditions)


def _distinct(rows: Sequence[Row]) -> dict[str, int]:
    """How many values each condition takes among `rows`."""
    columns = [_values(r) for r in rows]
    out = {}
    for c in NAMES:
        try:
            out[c] = len({v[c] for v in columns})
        except TypeError:  # a list among them: as its tuple
            out[c] = len({value_key(v[c]) for v in columns})
    return out


def group(rows: Sequence[Row], shown: Iterable[str]) -> list[tuple[dict[str, Any], list[Row]]]:
    """Split rows so that, within a group, every condition not in `shown` is equal.

    Returns (the conditions that define the group, its rows), in first-seen order.
    """
    shown = set(shown)
    hidden = [c for c in NAMES if c not in shown]
    groups: dict[tuple[Any, ...], list[Row]] = {}
    for row in rows:
        values = _values(row)
        groups.setdefault(tuple([value_key(values[c]) for c in hidden]), []).append(row)
    return [({c: members[0].get(c) for c in hidden}, members) for members in groups.values()]


def baselines(candidates: Sequence[Row]) -> Baselines[Row]:
    """The drafter=none rows of `candidates`, each row's found in one lookup (`.of(conditions)`)."""
    return Baselines(candidates, lambda r: r.conditions)


def group_label(
    conditions: dict[str, Any], report_fixed: dict[str, Any], skip: Sequence[str] = ()
) -> str:
    """The conditions that set a group apart from the rest of the report."""
    from specexp.report.format import number

    parts = [
        f"{k} {number(v)}"
        for k, v in conditions.items()
        if k not in report_fixed
        and k not in skip
        and k != "repeats"  # repeats: in the method section
        and not (v is None and CONDITIONS[k].absent_is_null)
    ]
    return " · ".join(parts)


def sort_rows(rows: Sequence[Row], columns: Sequence[str]) -> list[Row]:
    """Baseline first, then by the shown columns."""

    def order(value: Any) -> tuple[int, Any]:
        if value is None or value == "none":
            return (0, "")
        if isinstance(value, (int, float)):
            return (1, value)
        return (2, str(value))

    return sorted(rows, key=lambda r: tuple(order(r.get(c)) for c in columns))
