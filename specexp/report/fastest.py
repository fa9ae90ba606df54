"""The findings' fastest drafter per setup, grouped so that a study reads at a glance.

A setup is a workload at one concurrency under the conditions that set it apart (those that vary
among the baselines). Each setup has one headline metric: `decode_tps` for one stream, else
`aggregate_tps` (a setup in both tables is said once, by its single-stream table at concurrency 1).
Setups of one workload and conditions form a group:

- a group of one setup is a line: the fastest arm, its speedup, both figures and the cost of a
  pass, and where a larger k gives speed back;
- a group of several concurrencies is a line of the fastest arm at each, with sub-lines for the
  best k of each drafter and the concurrency at which an arm stops paying.

A condition that every group but one shares, among three or more, is said once, above them
("Unless a line says otherwise: ...").
"""

from __future__ import annotations

from collections import Counter
from collections.abc import Sequence
from dataclasses import dataclass
from typing import Any

from specexp.check.judgments import SPEEDUP_METRIC, pass_cost_steps, within_noise
from specexp.record.escape import cell, code_span
from specexp.report import tables
from specexp.report.format import arm, number
from specexp.report.links import table_link
from specexp.report.tables import DRAFTER_KEYS, Row
from specexp.report.versus import crossing_spread, speedup_bounds
from specexp.spec.vocabulary import METRICS, baseline_key, value_key
from specexp.stats.bootstrap import ratio_interval
from specexp.stats.crossing import crossing

MAX_GROUPS = 12
"""Group lines at most; the rest are in the tables."""

_NOT_A_SETUP = {
    *DRAFTER_KEYS,
    "runtime_version",
    "repeats",
    "workload",
    "concurrency",
    "prompt_tokens",
    "output_tokens",
}
"""Conditions that never set a setup apart: the arm itself, what a workload's prompts measure,
and the workload and concurrency, which every setup names anyway."""


@dataclass(frozen=True)
class Setup:
    """One baseline's section and its drafter arms, each with its speedup and noise verdict."""

    base: Row
    section: str
    arms: tuple[tuple[Row, float, bool | None], ...]

    @property
    def metric(self) -> str:
        return SPEEDUP_METRIC[self.section]

    @property
    def concurrency(self) -> int:
        return int(self.base.conditions.concurrency or 1)

    @property
    def best(self) -> tuple[Row, float, bool | None]:
        return max(self.arms, key=lambda a: a[1])


def arm_of(row: Row) -> str:
    """A row's drafter arm, as a report writes it (`mtp` k=3)."""
    return arm(row.conditions.drafter, row.conditions.k)


def speedup(row: Row, base: Row, metric: str) -> tuple[float, bool | None] | None:
    """`row`'s metric over its baseline's, and whether it is within noise."""
    ours, theirs = row.metrics.get(metric), base.metrics.get(metric)
    if not ours or not theirs:
        return None
    return ours / theirs, within_noise(row.runs(metric), base.runs(metric))


def setups(rows: Sequence[Row], by_row: dict[int, str]) -> list[Setup]:
    """Every baseline with a drafter arm to compare, one per setup and headline metric."""
    out: dict[tuple[Any, ...], Setup] = {}
    varying = _setting_apart([r for r in rows if r.conditions.drafter == "none"])
    drafted: dict[tuple[Any, ...], list[Row]] = {}  # each section's drafter rows by their baseline
    for r in rows:
        if r.conditions.drafter not in (None, "none"):
            drafted.setdefault((by_row[id(r)], baseline_key(r.conditions)), []).append(r)
    seen = set()
    for base in rows:
        section = by_row[id(base)]
        if base.conditions.drafter != "none" or section not in SPEEDUP_METRIC:
            continue
        key = (section, baseline_key(base.conditions))
        if key in seen:  # the same conditions again: the first is the baseline (`Baselines`)
            continue
        seen.add(key)
        metric = SPEEDUP_METRIC[section]
        arms = tuple(
            (r, *s) for r in drafted.get(key, []) if (s := speedup(r, base, metric)) is not None
        )
        if not arms:
            continue
        setup = Setup(base, section, arms)
        group = (_group_key(base, varying), setup.concurrency)
        single_stream = setup.concurrency == 1 and section == "decode"
        if group not in out or single_stream:
            out[group] = setup
    return list(out.values())


def _group_key(base: Row, varying: Sequence[str]) -> tuple[Any, ...]:
    return (
        value_key(base.conditions.workload),
        *(value_key(base.conditions.get(c)) for c in varying),
    )


def _said_once(groups: Sequence[Sequence[Setup]], varying: Sequence[str]) -> dict[str, Any]:
    """The varying conditions whose one value every group but one shares, among three or more
    groups: said once. What a study sets side by side (two values each in several groups) is said
    in every line."""
    out: dict[str, Any] = {}
    if len(groups) < 3:
        return out
    for c in varying:
        counts = Counter(value_key(g[0].base.conditions.get(c)) for g in groups)
        key, n = counts.most_common(1)[0]
        if n >= len(groups) - 1:
            out[c] = next(
                g[0].base.conditions.get(c)
                for g in groups
                if value_key(g[0].base.conditions.get(c)) == key
            )
    return out


def ranking(found: Sequence[Setup]) -> list[str]:
    """Workloads ordered by their best single-stream speedup, when more than one workload ran and
    each workload has one setup (several setups per workload are said in their own lines)."""
    ranked = [
        (s.best[1], str(s.base.conditions.workload), arm_of(s.best[0]))
        for s in found
        if s.section == "decode" and s.concurrency == 1
    ]
    workloads = [w for _, w, _ in ranked]
    if len(set(workloads)) < 2 or len(set(workloads)) != len(workloads):
        return []
    order = sorted(ranked, key=lambda item: -item[0])
    said = " > ".join(f"{code_span(number(w))} {ratio:.2f}× ({named})" for ratio, w, named in order)
    return [f"- Workloads by their best single-stream speedup: {said}"]


def _setting_apart(bases: Sequence[Row]) -> list[str]:
    """The conditions that set setups apart: those that vary among the baselines."""
    return tables.varying(bases, exclude=_NOT_A_SETUP)


def fastest_lines(found: Sequence[Setup]) -> list[str]:
    """The grouped findings on the fastest drafter of each of `found` (`setups`), a Markdown
    list's lines."""
    varying = _setting_apart([s.base for s in found])
    groups: dict[tuple[Any, ...], list[Setup]] = {}
    for s in found:
        groups.setdefault(_group_key(s.base, varying), []).append(s)
    ordered = [sorted(g, key=lambda s: s.concurrency) for g in groups.values()]
    ordered.sort(key=lambda g: (len(g) == 1, str(_group_key(g[0].base, varying))))
    once = _said_once(ordered, varying)
    lines = []
    if once and len(ordered) > 1:
        said = ", ".join(f"{c} {cell(number(v))}" for c, v in once.items())
        lines.append(f"- Unless a line says otherwise: {said}")
    for group in ordered[:MAX_GROUPS]:
        base = group[0].base
        own = [
            f"{c} {cell(number(base.conditions.get(c)))}"
            for c in varying
            if c not in once or value_key(base.conditions.get(c)) != value_key(once[c])
        ]
        workload = code_span(number(base.conditions.workload))
        if len(group) == 1:
            lines += _one(group[0], workload, own)
        else:
            lines += _series(group, ", ".join([workload, *own]))
    if len(ordered) > MAX_GROUPS:
        lines.append(f"- … {len(ordered) - MAX_GROUPS} more setups in the tables below")
    return lines


def _one(setup: Setup, workload: str, own: Sequence[str]) -> list[str]:
    """A setup alone: its fastest arm, the speedup, both figures and the cost of a pass."""
    best, ratio, noise = setup.best
    metric, base = setup.metric, setup.base
    spread = best.spread.get(metric)
    shown = number(best.metrics.get(metric), metric)
    if spread and spread[0] != spread[1]:
        shown += f" ({number(spread[0], metric)}–{number(spread[1], metric)})"
    versus = f"({shown} vs {number(base.metrics.get(metric), metric)} {METRICS[metric].unit})"
    bounds = ratio_interval(best.runs(metric), base.runs(metric))
    sure = f" [{bounds[0]:.2f}–{bounds[1]:.2f}]" if bounds else ""
    if noise:
        said = f"fastest {arm_of(best)}, **{ratio:.2f}×**{sure}, within noise of no drafter"
    elif ratio > 1:
        said = f"fastest {arm_of(best)}, **{ratio:.2f}×**{sure} faster than no drafter"
    elif round(ratio, 2) >= 1.0:
        said = f"**no drafter is faster**: the best, {arm_of(best)}, is level with none ({ratio:.2f}×{sure})"
    else:  # no drafter pays: say so, and by how much the best of them is slower
        said = (
            f"**no drafter is fastest**: the best, {arm_of(best)}, is **{1 / ratio:.2f}× slower** "
            f"({ratio:.2f}×{sure})"
        )
    steps, per_pass = pass_cost_steps(best, base), best.metrics.tokens_per_pass
    cost = (
        f", {per_pass:.2f} tokens per pass at {steps:.2f} plain decode steps a pass"
        if steps is not None and per_pass is not None
        else ""
    )
    falls = "".join(f"; {x}" for x in _k_falls_back(setup))
    where = ", ".join([f"{workload} at concurrency {setup.concurrency}", *own])
    return [f"- {where}: {said} in `{metric}` {versus}{cost}{falls} {table_link(setup.section)}"]


def _series(group: Sequence[Setup], name: str) -> list[str]:
    """Several concurrencies of one setup: the fastest arm at each, in one line."""
    parts: list[str] = []
    last_arm, last_metric = None, None
    for s in group:
        best, ratio, noise = s.best
        if noise:
            label, figure = "no clear winner", f"{arm_of(best)} {ratio:.2f}×, within noise"
        elif ratio > 1:
            label, figure = arm_of(best), f"**{ratio:.2f}×**"
        else:
            label, figure = "no drafter", f"the best, {arm_of(best)}, {ratio:.2f}×"
        if s.metric != last_metric:
            figure += f" in `{s.metric}`"
        at = f"{s.concurrency} ({figure})"
        parts.append(f"; {label} at {at}" if label != last_arm else f", {at}")
        last_arm, last_metric = label, s.metric
    sections = list(dict.fromkeys(s.section for s in group))
    links = (
        table_link(sections[0])
        if len(sections) == 1
        else "tables: " + ", ".join(table_link(x).replace("[table]", f"[{x}]") for x in sections)
    )
    lines = [f"- {name}, fastest by concurrency: {''.join(parts)[2:]} {links}"]
    lines += _best_k_by_concurrency(group)
    stops = _stops_paying(group)
    if stops:
        lines.append(f"  - stops paying: {', '.join(stops)}")
    return lines


def _best_k_by_concurrency(group: Sequence[Setup]) -> list[str]:
    """Per drafter with several k: its best k at each concurrency where a larger k gives speed
    back, in one line."""
    said: dict[str, list[tuple[str, str]]] = {}
    for s in group:
        for drafter, best_k, best, last_k, last in _falls_back(s):
            said.setdefault(drafter, []).append(
                (
                    _does_best(best),
                    f"k={best_k} at concurrency {s.concurrency} ({best:.2f}×; k={last_k}: "
                    f"{last:.2f}×)",
                )
            )
    lines = []
    for drafter, items in said.items():
        verbs = [
            verb if i == 0 or items[i - 1][0] != verb else "" for i, (verb, _) in enumerate(items)
        ]
        text = ", ".join(
            f"{verb} {what}".strip() for verb, (_, what) in zip(verbs, items, strict=True)
        )
        lines.append(f"  - {code_span(drafter)} {text}")
    return lines


def _does_best(speedup: float) -> str:
    """How a drafter's best k is said: it pays, or it only loses least."""
    return "pays most at" if speedup > 1 else "loses least at"


def _k_falls_back(setup: Setup) -> list[str]:
    """Per drafter with several k: its best k, and the largest k when that gives back speed."""
    return [
        f"{code_span(drafter)} {_does_best(best)} k={best_k} ({best:.2f}×); k={last_k} falls "
        f"back to {last:.2f}×"
        for drafter, best_k, best, last_k, last in _falls_back(setup)
    ]


def _falls_back(setup: Setup) -> list[tuple[str, int, float, int, float]]:
    """Per drafter with several k where the largest gives speed back: the drafter, its best k and
    speedup, and the largest k and its speedup."""
    out = []
    for drafter in sorted({str(r.conditions.drafter) for r, _, _ in setup.arms}):
        ks = sorted(
            (r.conditions.k, ratio)
            for r, ratio, _ in setup.arms
            if r.conditions.drafter == drafter and r.conditions.k
        )
        if len(ks) < 2:
            continue
        best_k, best = max(ks, key=lambda x: x[1])
        last_k, last = ks[-1]
        if last_k != best_k and last < best * 0.95:
            out.append((drafter, best_k, best, last_k, last))
    return out


def _stops_paying(group: Sequence[Setup]) -> list[str]:
    """Per arm: the first concurrency at which it is slower than no drafter, when it paid before,
    and how far the crossing moves over the repeats' spread."""
    levels: dict[tuple[Any, Any], list[tuple[int, float, tuple[float, float] | None]]] = {}
    for s in group:
        for r, ratio, _ in s.arms:
            levels.setdefault((r.conditions.drafter, r.conditions.k), []).append(
                (s.concurrency, ratio, speedup_bounds(r, s.base, s.metric))
            )
    out = []
    for (drafter, k), points in sorted(levels.items(), key=str):
        points.sort(key=lambda p: p[0])
        at = next((i for i, (_, x, _) in enumerate(points) if x < 1), None)
        if at is not None and at > 0 and points[0][1] >= 1:
            (c0, x0, b0), (c1, x1, b1) = points[at - 1], points[at]
            near = crossing(c0, x0, c1, x1)
            spread = crossing_spread(c0, b0, c1, b1, lambda c: f"{c:.3g}")
            out.append(
                f"{arm(drafter, k)} at concurrency {c1} ({x1:.2f}×), crossing near {near:.3g} "
                f"(log-linear from {c0}, {x0:.2f}×{spread})"
            )
    return out
