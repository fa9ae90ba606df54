"""Verdicts: is a comparison of two figures fair, unfair or unverifiable, and why.

Fair: the same metric definition, and every condition that can move it (relevance.py)
equal except those the comparison varies. A relevant condition that differs outside `vary`
is a confounder; one stated for one figure only is unknown; one stated for neither is
unstated (listed; it does not change the verdict). The verdict depends only on the pair,
never on its order.
"""

from __future__ import annotations

import itertools
import math
from collections.abc import Iterable, Mapping, Sequence
from dataclasses import dataclass
from types import MappingProxyType
from typing import Any

from specexp.check.figures import Figure
from specexp.check.findings import Finding, finding
from specexp.check.relevance import (
    DEPENDS_ON,
    NEVER_RELEVANT,
    SIMULATED_STANDS_IN,
    expand_vary,
    relevant_to,
)
from specexp.check.values import same, show
from specexp.spec.vocabulary import CONDITIONS, METRICS, C
from specexp.stats.paired import WITHIN
from specexp.stats.proportions import ScorePair, compare_proportions

DEFINITION_NOTES: Mapping[frozenset[str], str] = MappingProxyType(
    {
        frozenset(
            {"e2e_tps", "decode_tps"}
        ): "e2e_tps includes the time to first token (prefill); decode_tps starts at the first token",
        frozenset(
            {"aggregate_tps", "per_stream_tps"}
        ): "aggregate_tps sums every concurrent stream; per_stream_tps is one stream's mean",
        frozenset(
            {"aggregate_tps", "e2e_tps"}
        ): "aggregate_tps sums every concurrent stream; e2e_tps is one request",
        frozenset(
            {"aggregate_tps", "decode_tps"}
        ): "aggregate_tps sums every concurrent stream; decode_tps is one request after its first token",
        frozenset(
            {"per_stream_tps", "decode_tps"}
        ): "per_stream_tps includes the time to first token; decode_tps starts at the first token",
        frozenset(
            {"per_stream_tps", "e2e_tps"}
        ): "per_stream_tps is a mean over concurrent requests; e2e_tps is one request",
        frozenset(
            {"decode_tps", "tpot_s"}
        ): "tpot_s is seconds per output token, decode_tps tokens per second: not the same number",
        frozenset(
            {"acceptance_rate", "tokens_per_pass"}
        ): "acceptance_rate is accepted / proposed; tokens_per_pass is 1 + accepted / drafts (acceptance length)",
        frozenset(
            {"ttft_s", "prefill_tps"}
        ): "ttft_s is a time including queueing and the first pass; prefill_tps is uncached prompt tokens / ttft_s",
    }
)
"""Why two metric definitions differ, where a reader commonly confuses them."""


@dataclass(frozen=True)
class Difference:
    condition: str
    values: tuple[Any, Any]
    """The value on each side, in the order of the comparison's figures."""


@dataclass(frozen=True)
class Unknown:
    condition: str
    stated_by: str
    value: Any


@dataclass(frozen=True)
class Comparison:
    figures: tuple[str, str]
    metrics: tuple[str, str]
    vary: tuple[str, ...]
    verdict: str
    confounders: tuple[Difference, ...]
    unknown: tuple[Unknown, ...]
    unstated: tuple[str, ...]
    metric_mismatch: str | None
    varied: tuple[Difference, ...] = ()
    """Relevant differences inside `vary` (what the comparison studies)."""
    not_relevant: tuple[Difference, ...] = ()
    """Differences in conditions that cannot move the metric."""
    stands_in: tuple[str, ...] = ()
    """Conditions a simulated side stands in for (not compared)."""
    findings: tuple[Finding, ...] = ()
    score_noise: ScorePair | None = None
    """Two task scores with both item counts: their unpaired interval (docs/answers.md section 3)."""

    def to_json(self) -> dict[str, Any]:
        return {
            "figures": list(self.figures),
            "metrics": list(self.metrics),
            "vary": list(self.vary),
            "verdict": self.verdict,
            "confounders": [
                {"condition": d.condition, "values": list(d.values)} for d in self.confounders
            ],
            "unknown": [u.condition for u in self.unknown],
            "unstated": list(self.unstated),
            "metric_mismatch": self.metric_mismatch,
            "unknown_values": [
                {"condition": u.condition, "stated_by": u.stated_by, "value": u.value}
                for u in self.unknown
            ],
            "varied": [{"condition": d.condition, "values": list(d.values)} for d in self.varied],
            "not_relevant": [
                {"condition": d.condition, "values": list(d.values)} for d in self.not_relevant
            ],
            "stands_in": list(self.stands_in),
            "findings": [f.to_json() for f in self.findings],
            "score_noise": None
            if self.score_noise is None
            else {
                "difference": self.score_noise.difference,
                "interval": [self.score_noise.low, self.score_noise.high],
                "level": self.score_noise.level,
                "verdict": self.score_noise.verdict,
            },
        }


def definition_mismatch(a: str, b: str) -> str | None:
    """Why metrics `a` and `b` are not the same number, or None when they are the same metric."""
    if a == b:
        return None
    note = DEFINITION_NOTES.get(frozenset({a, b}))
    if note:
        return f"{a} vs {b}: {note}"
    return f"{a} vs {b}: {a} = {METRICS[a].definition}; {b} = {METRICS[b].definition}"


def compare(a: Figure, b: Figure, vary: Iterable[str] = ()) -> Comparison:
    """The verdict on comparing `a` with `b`, with every confounder and unknown named."""
    vary = tuple(dict.fromkeys(vary))
    varied_names = expand_vary(vary)
    simulated = "simulated" in (a.origin, b.origin) and "cited" in (a.origin, b.origin)
    confounders: list[Difference] = []
    varied: list[Difference] = []
    unknown: list[Unknown] = []
    unstated: list[str] = []
    stands_in: list[str] = []
    for c in relevant_to({a.metric, b.metric}):
        if not _parent_equal(c, a, b):
            continue
        if simulated and c in SIMULATED_STANDS_IN:
            stands_in.append(c)
            continue
        ina, inb = c in a.conditions, c in b.conditions
        if ina and inb:
            if not same(c, a.conditions[c], b.conditions[c]):
                d = Difference(c, (a.conditions[c], b.conditions[c]))
                (varied if c in varied_names else confounders).append(d)
        elif ina or inb:
            owner = a if ina else b
            unknown.append(Unknown(c, owner.id, owner.conditions[c]))
        else:
            unstated.append(c)
    mismatch = definition_mismatch(a.metric, b.metric)
    verdict = "unfair" if confounders or mismatch else "unverifiable" if unknown else "fair"
    result = Comparison(
        (a.id, b.id),
        (a.metric, b.metric),
        vary,
        verdict,
        tuple(confounders),
        tuple(unknown),
        tuple(unstated),
        mismatch,
        tuple(varied),
        _not_relevant(a, b),
        tuple(stands_in),
        score_noise=score_noise(a, b),
    )
    return _with_findings(result)


def score_noise(a: Figure, b: Figure) -> ScorePair | None:
    """Two task scores, each with its item count: the unpaired interval of their difference."""
    if a.metric != "task_score" or b.metric != "task_score":
        return None
    n_a, n_b = a.conditions.get(C.eval_items), b.conditions.get(C.eval_items)
    if not isinstance(n_a, int) or not isinstance(n_b, int):
        return None
    return compare_proportions(float(a.value), n_a, float(b.value), n_b)


def _parent_equal(c: str, a: Figure, b: Figure) -> bool:
    parent = DEPENDS_ON.get(c)
    if parent is None:
        return True
    if parent not in a.conditions or parent not in b.conditions:
        return False
    return same(parent, a.conditions[parent], b.conditions[parent])


def _not_relevant(a: Figure, b: Figure) -> tuple[Difference, ...]:
    relevant = set(relevant_to({a.metric, b.metric}))
    return tuple(
        Difference(c, (a.conditions[c], b.conditions[c]))
        for c in CONDITIONS
        if c not in relevant
        and c not in NEVER_RELEVANT
        and c in a.conditions
        and c in b.conditions
        and not same(c, a.conditions[c], b.conditions[c])
    )


def _with_findings(c: Comparison) -> Comparison:
    ids = c.figures
    out: list[Finding] = []
    if c.metric_mismatch:
        out.append(finding("metric_mismatch", ids, "the same metric definition", c.metric_mismatch))
    for d in c.confounders:
        out.append(
            finding(
                "confounder",
                ids,
                f"{d.condition} equal on both sides (it is not in vary)",
                f"{d.condition}: {show(d.values[0])} vs {show(d.values[1])}",
                d.condition,
            )
        )
    for u in c.unknown:
        other = ids[1] if u.stated_by == ids[0] else ids[0]
        out.append(
            finding(
                "unknown_condition",
                ids,
                f"{u.condition} stated for both",
                f"{u.stated_by}: {show(u.value)}; {other}: not stated",
                u.condition,
            )
        )
    if c.metrics == ("task_score", "task_score"):
        out.append(_noise_finding(c))
    if c.unstated:
        out.append(
            finding(
                "unstated_condition",
                ids,
                "every condition that can move the metric stated",
                "stated for neither: " + ", ".join(c.unstated),
            )
        )
    return Comparison(**{**c.__dict__, "findings": tuple(out)})


def _noise_finding(c: Comparison) -> Finding:
    p = c.score_noise
    if p is None:
        return finding(
            "score_noise_unknown",
            c.figures,
            "eval_items stated for both scores",
            "an item count is not stated: the noise of a score depends on it",
            "eval_items",
        )
    text = (
        f"{100 * p.first:.1f} vs {100 * p.second:.1f} over {p.first_items:,} and "
        f"{p.second_items:,} items: {100 * p.difference:+.1f} points, 95 % interval "
        f"[{100 * p.low:+.1f}, {100 * p.high:+.1f}] (unpaired)"
    )
    if p.verdict == WITHIN:
        return finding("score_within_noise", c.figures, "a difference beyond noise", text)
    return finding("score_beyond_noise", c.figures, "scores within noise", text)


def run_comparisons(figures: Mapping[str, Figure], specs: Sequence[Any]) -> list[Comparison]:
    """Every declared comparison of a FigureSet (`specs` are its ComparisonSpecs)."""
    return [compare(figures[s.figures[0]], figures[s.figures[1]], s.vary) for s in specs]


def source_conflicts(figures: Iterable[Figure]) -> list[Finding]:
    """Entries that name the same source for the same metric and contradict each other.

    Two entries with the same source, metric and value (within 1 %: transcriptions round)
    describe one published figure: any condition both state differently is a conflict. The
    same source giving two values with no stated condition that tells them apart is a
    warning: a condition that differs is not written down.
    """
    groups: dict[tuple[str, str], list[Figure]] = {}
    for f in figures:
        if f.source and f.origin == "cited":
            groups.setdefault((" ".join(f.source.casefold().split()), f.metric), []).append(f)
    out: list[Finding] = []
    for members in groups.values():
        for a, b in itertools.combinations(sorted(members, key=lambda f: f.id), 2):
            out.extend(_conflicts(a, b))
    return out


def _conflicts(a: Figure, b: Figure) -> list[Finding]:
    ids = (a.id, b.id)
    disagree = [
        c
        for c in CONDITIONS
        if c in a.conditions
        and c in b.conditions
        and c not in NEVER_RELEVANT
        and not same(c, a.conditions[c], b.conditions[c])
    ]
    if close_values(a.value, b.value):
        return [
            finding(
                "source_conflict",
                ids,
                f"one {c} for the figure {a.as_written or a.value} of {a.source!r}",
                f"{a.id}: {show(a.conditions[c])}; {b.id}: {show(b.conditions[c])}",
                c,
            )
            for c in disagree
        ]
    if not disagree:
        return [
            finding(
                "source_value_conflict",
                ids,
                f"a stated condition that tells two {a.metric} figures of {a.source!r} apart",
                f"{a.id}: {a.as_written or a.value}; {b.id}: {b.as_written or b.value}; no stated condition differs",
            )
        ]
    return []


def close_values(a: Any, b: Any, rel: float = 0.01) -> bool:
    """Equal within `rel` (numbers, element-wise for lists), or equal."""
    if isinstance(a, tuple) and isinstance(b, tuple):
        return len(a) == len(b) and all(close_values(x, y, rel) for x, y in zip(a, b, strict=True))
    if isinstance(a, bool) or isinstance(b, bool):
        return a is b
    if isinstance(a, (int, float)) and isinstance(b, (int, float)):
        return math.isclose(a, b, rel_tol=rel, abs_tol=1e-12)
    return bool(a == b)
