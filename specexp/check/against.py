"""Cited figures against runs: which runs match each figure, and how close the others come.

A run matches a cited figure when it has a value for the figure's metric and no condition
that can move that metric differs (relevance.py). Conditions the figure does not state
cannot differ; they make the match unverifiable and are named. A simulated run stands in
for the engine (relevance.SIMULATED_STANDS_IN). With no match, the closest runs are those
with the fewest differing conditions, each with what differs. The reproduction ratio is
the run's value / the cited value.
"""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass, replace
from typing import Any

from specexp.check.fairness import Comparison, compare
from specexp.check.figures import Figure
from specexp.check.findings import Finding, finding
from specexp.check.relevance import DEPENDS_ON, SIMULATED_STANDS_IN, relevant
from specexp.check.runs import Run
from specexp.check.values import same, show

CLOSEST = 3
"""Runs shown when none matches: those with the fewest differences, at most this many."""


@dataclass(frozen=True)
class RunMatch:
    run: Run
    value: Any
    ratio: Any
    """Run value / cited value (a tuple for per-position metrics); None where undefined, and for
    closest runs that do not match (theirs would not be a reproduction ratio)."""
    comparison: Comparison
    """Cited figure vs this run: its verdict, confounders (what differs) and unknowns."""

    def to_json(self) -> dict[str, Any]:
        return {
            "run": self.run.id,
            "source": self.run.origin,
            "link": self.run.link,
            "value": _json(self.value),
            "ratio": _json(self.ratio),
            **{
                k: v
                for k, v in self.comparison.to_json().items()
                if k in ("verdict", "confounders", "unknown", "unknown_values", "stands_in")
            },
        }


@dataclass(frozen=True)
class Citation:
    figure: Figure
    matches: tuple[RunMatch, ...]
    closest: tuple[RunMatch, ...]
    """Empty when some run matches."""
    missing: tuple[tuple[str, Any], ...]
    """Conditions of the figure (with its value) that no run has."""
    unsettled: tuple[tuple[str, tuple[Any, ...]], ...]
    """Conditions the figure does not state on which its matching runs differ (the ratio depends on them)."""
    findings: tuple[Finding, ...] = ()

    def to_json(self) -> dict[str, Any]:
        return {
            "matches": [m.to_json() for m in self.matches],
            "closest": [m.to_json() for m in self.closest],
            "missing": [{"condition": c, "value": v} for c, v in self.missing],
            "unsettled": [{"condition": c, "values": list(v)} for c, v in self.unsettled],
        }


def ratio(measured: Any, cited: Any) -> Any:
    """measured / cited; element-wise for per-position lists; None where undefined."""
    if isinstance(measured, tuple) and isinstance(cited, tuple):
        if len(measured) != len(cited) or any(c == 0 for c in cited):
            return None
        return tuple(m / c for m, c in zip(measured, cited, strict=True))
    if isinstance(measured, bool) or isinstance(cited, bool):
        return None
    if isinstance(measured, (int, float)) and isinstance(cited, (int, float)) and cited != 0:
        return measured / cited
    return None


def cite(fig: Figure, runs: Sequence[Run]) -> Citation:
    """Match one cited figure to `runs`."""
    candidates = []
    for run in runs:
        other = run.figure(fig.metric)
        if other is not None:
            c = compare(fig, other)
            candidates.append(RunMatch(run, other.value, ratio(other.value, fig.value), c))
    matches = tuple(m for m in candidates if not m.comparison.confounders)
    closest: tuple[RunMatch, ...] = ()
    if not matches and candidates:
        ranked = sorted(candidates, key=lambda m: _distance(m, fig.id))
        fewest = len(ranked[0].comparison.confounders)
        closest = tuple(
            replace(m, ratio=None) for m in ranked if len(m.comparison.confounders) == fewest
        )[:CLOSEST]
    missing = _missing(fig, runs)
    findings: tuple[Finding, ...] = ()
    if not matches:
        found = (
            ("no run has " + ", ".join(f"{c} = {show(v)}" for c, v in missing))
            if missing
            else (
                f"no run has {fig.metric}"
                if not candidates
                else "every run differs in some condition"
            )
        )
        findings = (
            finding(
                "no_matching_run",
                (fig.id,),
                f"a run with the conditions of {fig.id} that can move {fig.metric}",
                found,
            ),
        )
    return Citation(fig, matches, closest, missing, _unsettled(fig, matches), findings)


def _distance(m: RunMatch, fid: str) -> tuple[int, int]:
    """Differing conditions first, then conditions the figure states and the run does not."""
    c = m.comparison
    return len(c.confounders), sum(u.stated_by == fid for u in c.unknown)


def _missing(fig: Figure, runs: Sequence[Run]) -> tuple[tuple[str, Any], ...]:
    """Relevant conditions stated by `fig` whose value no run with the metric has."""
    have = [r for r in runs if r.figure(fig.metric) is not None]
    out = []
    for c in relevant(fig.metric):
        if c not in fig.conditions or (c in DEPENDS_ON and DEPENDS_ON[c] not in fig.conditions):
            continue
        value = fig.conditions[c]
        if not any(_has(r, c, value) for r in have):
            out.append((c, value))
    return tuple(out)


def _has(run: Run, c: str, value: Any) -> bool:
    if c in SIMULATED_STANDS_IN and run.origin == "simulated":
        return True
    if run.conditions.get(c) is None and not (
        c in DEPENDS_ON and run.conditions.get(DEPENDS_ON[c]) == "none"
    ):
        return False
    return same(c, run.conditions.get(c), value)


def _unsettled(fig: Figure, matches: Sequence[RunMatch]) -> tuple[tuple[str, tuple[Any, ...]], ...]:
    out = []
    for c in relevant(fig.metric):
        if c in fig.conditions:
            continue
        values: list[Any] = []
        for m in matches:
            v = m.run.conditions.get(c)
            if not any(same(c, v, w) for w in values):
                values.append(v)
        if len(values) > 1:
            out.append((c, tuple(values)))
    return tuple(out)


def _json(value: Any) -> Any:
    return list(value) if isinstance(value, tuple) else value
