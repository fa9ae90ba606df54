"""The frontier of a concurrency sweep: what a server gives all its users together against what it gives
each one, across every drafter, k and concurrency measured on one setup.

A measurement is on the (Pareto) frontier of its setup when no other measurement of that setup has
both more `per_stream_tps` (each user's speed) and more `aggregate_tps` per GPU (what the hardware
delivers), one of them strictly. A point off the frontier is beaten on both counts by another
drafter, k or concurrency. The chart draws every arm's line through its concurrency levels and the
frontier dashed over them; the paragraph says which arm holds which stretch of it. A setup is every
condition but the drafter, k, concurrency and repeats (the rows the caller groups).
"""

from __future__ import annotations

from collections.abc import Sequence
from typing import Any

import altair as alt

from specexp.record.escape import Markdown, cell
from specexp.report.blocks import Block, Chart, Paragraph
from specexp.report.chart_parts import (
    HEIGHT,
    WIDTH,
    arm_of,
    file_name,
    legend_toggles,
    setup_of,
    vega_spec,
    who,
)
from specexp.report.format import number
from specexp.report.tables import Row


def on_frontier(points: Sequence[tuple[float, float]]) -> list[bool]:
    """Whether each (x, y) point is on the frontier of all of them, both larger being better: no
    other point is at least as large in both and larger in one. Equal points are all on it."""
    return [
        not any(
            (ox >= x and oy >= y) and (ox > x or oy > y)
            for j, (ox, oy) in enumerate(points)
            if j != i
        )
        for i, (x, y) in enumerate(points)
    ]


def per_gpu(row: Row) -> float | None:
    """`aggregate_tps` per GPU (per server where it has none: a CPU server's whole throughput)."""
    total = row.metrics.aggregate_tps
    if total is None:
        return None
    return total / max(row.conditions.gpu_count or 1, 1)


def _points(
    rows: Sequence[Row], setups: Sequence[str], level: str = "concurrency"
) -> list[dict[str, Any]]:
    measured = [r for r in rows if r.metrics.per_stream_tps and per_gpu(r)]
    by_setup: dict[str, list[Row]] = {}
    for r in measured:
        by_setup.setdefault(setup_of(r, setups), []).append(r)
    out = []
    for setup, members in by_setup.items():
        xy = [(float(r.metrics.per_stream_tps or 0), float(per_gpu(r) or 0)) for r in members]
        for r, (x, y), front in zip(members, xy, on_frontier(xy), strict=True):
            out.append(
                {
                    "arm": arm_of(r, setups),
                    "setup": setup,
                    level: r.get(level),
                    "per_user": x,
                    "per_gpu": y,
                    "frontier": front,
                    **who(r),
                }
            )
    return out


def frontier_blocks(
    rows: Sequence[Row],
    name: str,
    label: str = "",
    setups: Sequence[str] = (),
    level: str = "concurrency",
) -> list[Block]:
    """The frontier chart and who holds the frontier, for a sweep of more than one point over
    `level` (concurrency, or an open-loop sweep's request_rate); nothing otherwise."""
    data = _points(rows, setups, level)
    if len({(p["setup"], p["arm"], p[level]) for p in data}) < 2:
        return []
    gpus = {r.conditions.gpu_count or 0 for r in rows}
    y_title = "aggregate_tps per GPU" if min(gpus) >= 1 else "aggregate_tps (the whole server)"
    title = f"Frontier: {label}" if label else "Frontier: all users against each user"
    x = alt.X("per_user:Q", title="per_stream_tps (each user, tok/s)")
    y = alt.Y("per_gpu:Q", title=y_title)
    base = alt.Chart()
    lines = (
        base.mark_line(point=True)
        .encode(x=x, y=y, color=alt.Color("arm:N", title="drafter"), order=f"{level}:Q")
        .properties(width=WIDTH, height=HEIGHT)
    )
    lines = legend_toggles(
        lines,
        "arm",
        ["arm:N", f"{level}:Q", "per_user:Q", "per_gpu:Q", "frontier:N", "run:N", "conditions:N"],
    )
    front = (
        base.transform_filter("datum.frontier")
        .mark_line(color="black", strokeDash=[5, 3])
        .encode(x=x, y=y, order="per_user:Q")
    )
    chart: Any = alt.layer(lines, front, data=alt.Data(values=data))
    if setups:
        chart = chart.facet(column=alt.Column("setup:N", title=" · ".join(setups)))
    chart = chart.properties(title=title)
    return [Paragraph(_holders(data, level)), Chart(file_name(name), title, vega_spec(chart))]


def _holders(data: Sequence[dict[str, Any]], level: str) -> Markdown:
    """Which arm holds the frontier at which concurrencies, from the fastest per user down."""
    parts = []
    for setup in dict.fromkeys(p["setup"] for p in data):
        front = sorted(
            (p for p in data if p["setup"] == setup and p["frontier"]),
            key=lambda p: -p["per_user"],
        )
        arms: dict[str, list[Any]] = {}
        for p in front:
            arms.setdefault(p["arm"], []).append(p[level])
        held = "; ".join(
            f"{cell(arm)} ({level} {', '.join(number(c) for c in levels)})"
            for arm, levels in arms.items()
        )
        parts.append(f"{cell(setup)}: {held}" if setup != "—" else held)
    return Markdown(
        f"**Frontier** (no other drafter, k or {level} gives each user and the GPU more at once; "
        "from the fastest per user down): " + " · ".join(parts) + "."
    )
