"""Numbers side by side in one table or chart: do they differ in more than the varied axis?

A table means to vary some conditions (its axis: drafter and k, prompt length, concurrency,
...). Any other condition that can move the metrics shown (relevance.py) and takes more than
one value among its rows is a confounder of the table; one that is unknown for some rows
leaves the table unverified; measured and simulated rows side by side are named too.
"""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass
from typing import Any

from specexp.check.findings import Finding, finding
from specexp.check.relevance import DEPENDS_ON, expand_vary, relevant_to
from specexp.check.runs import Run
from specexp.check.values import same, show
from specexp.spec.vocabulary import METRICS

DEFAULT_VARY = ("drafter", "k", "drafter_config", "prompt_tokens", "concurrency", "cache")
"""What a table of one workload varies unless told: the drafter arms and the workload's own
sweep axes (prompt lengths, concurrency levels, cold/warm)."""


@dataclass(frozen=True)
class SideBySide:
    """Numbers a report shows side by side: one table or one chart."""

    title: str
    runs: tuple[Run, ...]
    vary: tuple[str, ...] = DEFAULT_VARY
    """The conditions it means to vary (its columns or series)."""
    metrics: tuple[str, ...] | None = None
    """The metrics it shows; None means every metric the runs have."""


def check_side_by_side(table: SideBySide) -> list[Finding]:
    """Every condition outside the varied axis that differs (or is unknown) among the table's runs."""
    runs = table.runs
    if len(runs) < 2:
        return []
    metrics = table.metrics or tuple(
        m for m in METRICS if any(r.metrics.get(m) is not None for r in runs)
    )
    varied = expand_vary(table.vary)
    ids = tuple(r.id for r in runs)
    where = f"{table.title}: " if table.title else ""
    out: list[Finding] = []
    for c in relevant_to(metrics):
        if c in varied or (c in DEPENDS_ON and len(_groups(DEPENDS_ON[c], runs)) > 1):
            continue  # a dependent of a differing parent: the parent is named
        groups = _groups(c, runs)
        known = [(v, members) for v, members in groups if v is not None or _known_none(c, members)]
        if len(known) > 1:
            found = "; ".join(f"{show(v)} ({_count(m)})" for v, m in known)
            out.append(
                finding(
                    "table_confounder",
                    ids,
                    f"{where}one value of {c} (it is not a varied axis)",
                    found,
                    c,
                )
            )
        unknown = [m for v, m in groups if v is None and not _known_none(c, m)]
        if unknown and known:
            out.append(
                finding(
                    "table_unknown",
                    tuple(r.id for r in unknown[0]),
                    f"{where}{c} known for every row",
                    f"unknown for {_count(unknown[0])}",
                    c,
                )
            )
    sources = {r.origin for r in runs}
    if len(sources) > 1 and "source" not in varied:
        out.append(
            finding(
                "table_mixed_source",
                ids,
                f"{where}one source",
                ", ".join(sorted(sources)),
                "source",
            )
        )
    return out


def _groups(c: str, runs: Sequence[Run]) -> list[tuple[Any, list[Run]]]:
    groups: list[tuple[Any, list[Run]]] = []
    for r in runs:
        v = r.conditions.get(c)
        for value, members in groups:
            if same(c, value, v):
                members.append(r)
                break
        else:
            groups.append((v, [r]))
    return groups


def _known_none(c: str, runs: Sequence[Run]) -> bool:
    """k and drafter_config are known to be none for drafter=none runs."""
    return c in DEPENDS_ON and all(r.conditions.get(DEPENDS_ON[c]) == "none" for r in runs)


def _count(runs: Sequence[Run]) -> str:
    return f"{len(runs)} row{'s' if len(runs) != 1 else ''}"
