"""Speculation by context depth: each drafter's single-stream speedup as the prompt before the same
request grows, and where it stops paying.

A series is the decode rows of one setup (every condition but the drafter, k, prompt_tokens and
repeats equal) measured at two depths or more, `workload=context_depth` or any decode sweep of
`workload.prompt_lengths`. Each drafter arm's speedup at a depth is its `decode_tps` over no
drafter's at that depth. Where an arm pays at one depth and not at the next, the crossing is
estimated log-linearly in depth between the two (specexp.stats.crossing) and bounded by the repeats'
spread: the bracket is what was measured, the crossing an estimate inside it.
"""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass
from typing import Any

import altair as alt

from specexp.record.escape import Markdown, code_span
from specexp.report.blocks import Block, Chart, Heading, Paragraph
from specexp.report.chart_parts import HEIGHT, WIDTH, file_name, legend_toggles, vega_spec, who
from specexp.report.format import arm, number
from specexp.report.links import anchor
from specexp.report.tables import DRAFTER_KEYS, Row, baselines, group
from specexp.report.tables import group_label as label_of
from specexp.report.versus import crossing_spread, speedup_bounds
from specexp.spec.arms import arm_label
from specexp.stats.crossing import crossing

TITLE = "Speculation by context depth"
METRIC = "decode_tps"


@dataclass(frozen=True)
class Point:
    depth: int
    speedup: float
    low: float
    """The lowest speedup over the repeats' spreads (the arm's lowest over the baseline's highest)."""
    high: float
    row: Row


@dataclass(frozen=True)
class Series:
    """One drafter arm of one setup, by depth."""

    drafter: str
    k: int | None
    points: tuple[Point, ...]

    @property
    def named(self) -> str:
        return arm(self.drafter, self.k)


def _point(row: Row, base: Row | None) -> Point | None:
    ours = row.metrics.get(METRIC)
    theirs = base.metrics.get(METRIC) if base is not None else None
    depth = row.conditions.prompt_tokens
    if not ours or not theirs or depth is None or base is None:
        return None
    speedup = ours / theirs
    low, high = speedup_bounds(row, base, METRIC) or (speedup, speedup)
    return Point(int(depth), speedup, low, high, row)


def _setups(rows: Sequence[Row]) -> list[tuple[dict[str, Any], list[Row], list[Series]]]:
    """Per setup whose baselines were measured at two depths or more: its conditions, rows and
    each arm's series."""
    out = []
    for conditions, members in group(rows, (*DRAFTER_KEYS, "prompt_tokens", "repeats")):
        depths = {r.conditions.prompt_tokens for r in members if r.conditions.drafter == "none"}
        if len(depths) < 2:
            continue
        bases = baselines(members)
        arms: dict[tuple[str, Any], list[Point]] = {}
        for r in members:
            if r.conditions.drafter == "none":
                continue
            p = _point(r, bases.of(r.conditions))
            if p is not None:
                arms.setdefault((str(r.conditions.drafter), r.conditions.k), []).append(p)
        found = [
            Series(d, k, tuple(sorted(ps, key=lambda p: p.depth)))
            for (d, k), ps in sorted(arms.items(), key=lambda kv: (kv[0][0], kv[0][1] or 0))
            if len({p.depth for p in ps}) >= 2
        ]
        if found:
            out.append((conditions, members, found))
    return out


def series(rows: Sequence[Row]) -> list[tuple[dict[str, Any], list[Series]]]:
    """The decode rows as depth series: per setup, each arm's points by depth."""
    return [(conditions, found) for conditions, _, found in _setups(rows)]


def covered(rows: Sequence[Row]) -> set[int]:
    """The rows the depth lines speak for (by id), baselines included: the findings' other lines
    leave them out."""
    return {id(r) for _, members, _ in _setups(rows) for r in members}


def said(s: Series) -> str:
    """What one arm does as the context grows, in a sentence: where it stops paying (the bracket,
    the crossing and how far the repeats' spread moves it), or that it pays or loses throughout."""
    first, last = s.points[0], s.points[-1]
    span = f"{first.speedup:.2f}× at {number(first.depth)} to {last.speedup:.2f}× at {number(last.depth)} tokens"
    if first.speedup < 1:
        return f"{s.named} does not pay even at {number(first.depth)} tokens ({span})"
    at = next((i for i, p in enumerate(s.points) if p.speedup < 1), None)
    if at is None:
        return f"{s.named} pays at every depth measured ({span})"
    before, after = s.points[at - 1], s.points[at]
    near = crossing(before.depth, before.speedup, after.depth, after.speedup)
    return (
        f"{s.named} stops paying between {number(before.depth)} ({before.speedup:.2f}×) and "
        f"{number(after.depth)} tokens ({after.speedup:.2f}×), crossing near {near:,.0f} "
        "(log-linear in depth)"
        + crossing_spread(
            before.depth,
            (before.low, before.high),
            after.depth,
            (after.low, after.high),
            lambda d: f"{d:,.0f}",
        )
    )


def depth_lines(rows: Sequence[Row]) -> list[str]:
    """The findings' lines: per setup measured at several depths, each arm's sentence."""
    lines = []
    link = f"[table](#{anchor(TITLE)})"
    for conditions, found in series(rows):
        workload = code_span(number(conditions.get("workload")))
        lines.append(
            f"- {workload}, by context depth: " + "; ".join(said(s) for s in found) + f" {link}"
        )
    return lines


def depth_section(rows: Sequence[Row], fixed: dict[str, Any]) -> list[Block]:
    """Per setup measured at several depths: each arm's sentence and a chart of speedup by depth."""
    found = series(rows)
    if not found:
        return []
    blocks: list[Block] = [
        Heading(TITLE),
        Paragraph(
            Markdown(
                "The same request behind prompts of growing depth, one stream. Speedup is `decode_tps` ÷ "
                "the `drafter=none` row at the same depth; each pass reads the KV cache of the whole "
                "context, in the target's verify passes and in a head or block drafter's own layers. "
                "Where an arm stops paying, the crossing is estimated log-linearly between the two depths "
                "that bracket it, and moved over the repeats' (min–max) spread."
            )
        ),
    ]
    for conditions, arms in found:
        label = label_of(conditions, fixed)
        blocks.append(Heading(label or "All runs", 3))
        blocks.append(Paragraph(Markdown("\n".join(f"- {said(s)}" for s in arms))))
        name = "-".join(str(v) for v in conditions.values() if v not in (None, False, True))
        blocks.append(_chart(arms, f"depth-{name}", label))
    return blocks


def _chart(arms: Sequence[Series], name: str, label: str) -> Chart:
    data = [
        {
            "arm": arm_label(s.drafter, s.k),
            "prompt_tokens": p.depth,
            "speedup": round(p.speedup, 4),
            **who(p.row),
        }
        for s in arms
        for p in s.points
    ]
    x = alt.X("prompt_tokens:Q", title="context depth (prompt tokens)", scale=alt.Scale(type="log"))
    y = alt.Y("speedup:Q", title="speedup vs no drafter (decode_tps)")
    lines = (
        alt.Chart(alt.Data(values=data))
        .mark_line(point=True)
        .encode(x=x, y=y, color=alt.Color("arm:N", title="drafter"))
    )
    lines = legend_toggles(
        lines, "arm", ["arm:N", "prompt_tokens:Q", "speedup:Q", "run:N", "conditions:N"]
    )
    even = (
        alt.Chart(alt.Data(values=[{"speedup": 1.0}]))
        .mark_rule(strokeDash=[4, 4])
        .encode(y="speedup:Q")
    )
    title = f"Speedup by context depth{' · ' + label if label else ''}"
    chart = alt.layer(lines, even).properties(width=WIDTH, height=HEIGHT, title=title)
    return Chart(file_name(name), title, vega_spec(chart))
