"""How sure the figures are: each measurement's headline figure with its 95 % bootstrap interval
over its runs (specexp.stats.bootstrap), and both of its spreads, within one server and across
fresh server starts (`workload.server_starts`; docs/vocabulary.md, "How sure a figure is").

The headline figure of a measurement is the one its section leads with: `decode_tps` for a single
stream, `aggregate_tps` under concurrency, `prefill_tps` for prefill, `ttft_s` for a prefix cache,
`per_stream_tps` at a request rate. Absent where no measurement has two windows or more.
"""

from __future__ import annotations

import statistics
from collections.abc import Sequence

from specexp.record.escape import Markdown
from specexp.report.blocks import Block, Heading, Paragraph, TableBlock
from specexp.report.format import arm, header, number, run_cell
from specexp.report.links import anchor
from specexp.report.tables import Row, beside_arm, sort_rows
from specexp.spec.vocabulary import M
from specexp.stats.bootstrap import LEVEL, interval, spreads

TITLE = "How sure the figures are"
FIGURE = {
    "decode": M.decode_tps,
    "concurrency": M.aggregate_tps,
    "prefill": M.prefill_tps,
    "prefix_cache": M.ttft_s,
    "rate": M.per_stream_tps,
}
"""Each kind of measurement's headline figure."""
MOST = 60
"""Rows shown at most (the most uncertain first beyond it)."""


def _judged(rows: Sequence[Row], kinds: Sequence[str]) -> list[tuple[Row, str]]:
    """(row, its headline metric) for every row with two windows or more of it (`kinds`: each
    row's kind of measurement)."""
    out = []
    for row, kind in zip(rows, kinds, strict=True):
        metric = FIGURE.get(kind)
        runs = row.runs(metric) if metric else None
        if metric and runs is not None and len(runs.values) > 1:
            out.append((row, metric))
    return out


def _percent(share: float | None) -> str:
    return "—" if share is None else f"{100 * share:.1f} %"


def _moves(judged: Sequence[tuple[Row, str]]) -> tuple[list[float], list[float]]:
    """Every judged figure's spread within a server, and across its starts where it has several."""
    within, across = [], []
    for row, metric in judged:
        s = spreads(row.runs(metric))
        if s.within_server is not None:
            within.append(s.within_server)
        if s.across_starts is not None:
            across.append(s.across_starts)
    return within, across


def certainty_lines(rows: Sequence[Row], kinds: Sequence[str]) -> list[str]:
    """The findings' line: how far the figures moved between fresh server starts against within
    one server, where some ran on several starts."""
    judged = _judged(rows, kinds)
    within, across = _moves(judged)
    if not across:
        return []
    line = (
        f"- Across fresh server starts, figures moved by a median {_percent(statistics.median(across))} "
        f"(up to {_percent(max(across))})"
    )
    if within:
        line += (
            f", against {_percent(statistics.median(within))} (up to {_percent(max(within))}) "
            "between the windows of one server"
        )
    return [line + f"; their intervals are over the starts [table](#{anchor(TITLE)})"]


def certainty_section(rows: Sequence[Row], kinds: Sequence[str]) -> list[Block]:
    judged = _judged(rows, kinds)
    if not judged:
        return []
    within, across = _moves(judged)
    level = f"{100 * LEVEL:g} %"
    blocks: list[Block] = [
        Heading(TITLE),
        Paragraph(
            Markdown(
                "A figure is the median of its timed windows. Its "
                f"{level} interval is a bootstrap over its runs: over its server starts where it ran on "
                "several (`workload.server_starts`), each start bringing all its windows, else over its "
                "windows on one server. *Within a server* is the widest (max − min) ÷ median of one "
                "start's windows; *across starts* the (max − min) ÷ median of the starts' medians. With "
                "few runs an interval is no wider than their range: it understates, and five starts or "
                "more give it meaning."
            )
        ),
    ]
    if not across:
        blocks.append(
            Paragraph(
                Markdown(
                    "Every figure here ran on one server: its interval covers what that server's windows "
                    "moved, not what restarting the server moves. Set `workload.server_starts` to measure that."
                )
            )
        )
    else:
        said = f"Across fresh server starts, figures moved by a median {_percent(statistics.median(across))} (up to {_percent(max(across))})"
        if within:
            said += f"; within one server, by {_percent(statistics.median(within))} (up to {_percent(max(within))})"
        if any(r.conditions.source == "simulated" for r, _ in judged):
            said += (
                ". Simulated starts draw each start's pace from its engine profile's measured start-to-start "
                "spread (`start_spread`; `engine_info.start_pace` in the record); a profile without one "
                "varies its starts' acceptance draws alone"
            )
        blocks.append(Paragraph(Markdown(said + ".")))
    shown = [r for r, _ in judged]
    columns = beside_arm(shown)
    metric_of = {id(r): m for r, m in judged}
    body = []
    for row in sort_rows(shown, ["drafter", *columns])[:MOST]:
        metric = metric_of[id(row)]
        runs = row.runs(metric)
        assert runs is not None
        bounds = interval(runs)
        s = spreads(runs)
        value = row.metrics.get(metric)
        half = (
            (bounds[1] - bounds[0]) / 2 / abs(value)
            if bounds is not None and isinstance(value, (int, float)) and value
            else None
        )
        body.append(
            [
                Markdown(arm(row.conditions.drafter, row.conditions.k, none="no drafter")),
                *(number(row.get(c)) for c in columns),
                header(metric),
                number(value, metric),
                f"{number(bounds[0], metric)}–{number(bounds[1], metric)}" if bounds else "—",
                f"± {_percent(half)}" if half is not None else "—",
                f"{len(runs.values)} on {runs.server_starts} start(s)",
                _percent(s.within_server),
                _percent(s.across_starts),
                run_cell(row.run_id, row.link),
            ]
        )
    blocks.append(
        TableBlock(
            [
                "arm",
                *columns,
                "figure",
                "median",
                f"{level} interval",
                "±",
                "windows",
                "within a server",
                "across starts",
                "run",
            ],
            body,
        )
    )
    if len(shown) > MOST:
        blocks.append(Paragraph(f"{len(shown) - MOST} more measurement(s) with repeats not shown."))
    return blocks
