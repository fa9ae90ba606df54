"""The open-loop section: latency against throughput per drafter, goodput against rate, the SLO
crossover in words, and the acceptance-by-position chart.

A row whose achieved rate fell short of its schedule (`load_delivered: false`) is marked, and the
section says that load was not delivered: its latencies are those of a lighter load than asked.
"""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from typing import Any

import altair as alt

from specexp.record.composed import SloNode
from specexp.report import chart_parts, charts
from specexp.report.blocks import Block, Chart, Heading, Paragraph, TableBlock
from specexp.report.format import (
    Markdown,
    arm,
    cell,
    header,
    number,
    run_cell,
    with_spread,
)
from specexp.report.frontier import frontier_blocks
from specexp.report.tables import (
    DRAFTER_KEYS,
    SPEC_KEYS,
    TITLES,
    Row,
    baselines,
    group,
    group_label,
    sort_rows,
    varying,
)

METRICS = (
    "achieved_rate_rps",
    "aggregate_tps",
    "ttft_p50_s",
    "ttft_p99_s",
    "tpot_p50_s",
    "tpot_p99_s",
    "slo_attainment",
    "goodput_rps",
    "acceptance_rate",
)


def slo_text(slo: SloNode | None) -> str | None:
    """The SLO as a phrase (`TTFT ≤ 0.5 s and TPOT ≤ 0.02 s for 99 % of requests`), or None."""
    if slo is None:
        return None
    parts = [
        f"{label} ≤ {number(value)} s"
        for value, label in ((slo.ttft_s, "TTFT"), (slo.tpot_s, "TPOT"), (slo.e2e_s, "e2e"))
        if value is not None
    ]
    percentile = 99 if slo.percentile is None else slo.percentile
    return f"{' and '.join(parts)} for {number(percentile)} % of requests" if parts else None


def rate_section(rows: Sequence[Row], fixed: dict[str, Any], slo: str | None) -> list[Block]:
    if not rows:
        return []
    blocks: list[Block] = [
        Heading(TITLES["rate"]),
        Paragraph(
            Markdown(
                "Requests sent on an arrival schedule at `request_rate` req/s, whatever the server's pace "
                "(`workload.arrival`), each at its own scheduled time; `achieved_rate_rps` is the rate they "
                "actually left at. "
                + (
                    f"SLO: {cell(slo)}; `slo_attainment` is the share of requests meeting it, "
                    "`goodput_rps` those requests per second."
                    if slo
                    else "No SLO was set."
                )
            )
        ),
    ]
    short = [r for r in rows if r.load.get("load_delivered") is False]
    if short:
        blocks.append(
            Paragraph(
                Markdown(
                    f"**Load not delivered** in {len(short)} row(s): the achieved rate fell more than "
                    "10 % short of the schedule (the client, or a `max_concurrency` cap, could not keep "
                    "up), so those rows describe a lighter load than their `request_rate`."
                )
            )
        )
    for conditions, members in group(rows, (*SPEC_KEYS, "request_rate")):
        columns = [
            c
            for c in varying(members, exclude=("repeats", "prompt_tokens"))
            if c not in ("drafter", "request_rate")
        ]
        columns = ["drafter", *columns, "request_rate"]
        label = _label(conditions, fixed)
        blocks.append(Heading(label or "All runs", 3))
        shown = [m for m in METRICS if any(r.metrics.get(m) is not None for r in members)]
        body = [
            [number(r.get(c)) for c in columns]
            + [with_spread(r.metrics.get(m), r.spread.get(m), m) for m in shown]
            + [_delivered(r), _met(r), _run(r)]
            for r in sort_rows(
                members, [c for c in columns if c != "request_rate"] + ["request_rate"]
            )
        ]
        blocks.append(
            TableBlock(
                [*columns, *(header(m) for m in shown), "delivered", "SLO met", "run"],
                body,
                align=["l"] * len(columns) + ["r"] * len(shown) + ["l"] * 3,
            )
        )
        blocks += crossover(members, "request_rate", "req/s", slo)
        name = "rate-" + "-".join(
            str(v) for v in conditions.values() if v not in (None, False, True)
        )
        setups = varying(
            members, exclude=(*DRAFTER_KEYS, "prompt_tokens", "request_rate", "repeats")
        )
        blocks += latency_vs_throughput(members, f"{name}-latency", label, setups)
        blocks += goodput_vs_rate(members, f"{name}-goodput", label, setups)
        blocks += frontier_blocks(members, f"{name}-frontier", label, setups, "request_rate")
        blocks += charts.acceptance_by_position(members, f"{name}-acceptance", label, setups)
    return blocks


def crossover(rows: Sequence[Row], key: str, unit: str, slo: str | None) -> list[Block]:
    """Per drafter arm and for no drafter: the highest load measured that meets the SLO (with every
    lighter load measured meeting it too), and where speculative decoding stops paying for it."""
    if not slo or not any("slo_met" in r.load for r in rows):
        return []
    arms: dict[tuple[str, Any], list[Row]] = {}
    for r in rows:
        if r.get(key) is not None and "slo_met" in r.load:
            arms.setdefault((str(r.conditions.drafter), r.conditions.k), []).append(r)
    best = {which: _highest(members, key) for which, members in arms.items()}
    lines = []
    base = next((v for (d, _), v in best.items() if d == "none"), "missing")
    for (drafter, k), value in sorted(
        best.items(), key=lambda kv: (kv[0][0] != "none", kv[0][0], kv[0][1] or 0)
    ):
        named = arm(drafter, k, none="no drafter")
        lines.append(
            f"- {named}: {_load(value, key, unit)}."
            + ("" if drafter == "none" else _verdict(value, base, key, unit))
        )
    lines += _goodput_lines(rows, arms, key, unit)
    return (
        [Paragraph(Markdown(f"Highest load meeting the SLO ({cell(slo)}):\n\n" + "\n".join(lines)))]
        if lines
        else []
    )


def _goodput_lines(
    rows: Sequence[Row], arms: Mapping[tuple[str, Any], list[Row]], key: str, unit: str
) -> list[str]:
    """Per drafter arm: the loads at which its goodput beats no drafter's, and the first where it does not."""
    where = (
        (lambda v: f"{number(v)} {unit}")
        if key == "request_rate"
        else (lambda v: f"concurrency {number(v)}")
    )
    bases = baselines(rows)
    lines = []
    for (drafter, k), members in sorted(arms.items(), key=lambda kv: (kv[0][0], kv[0][1] or 0)):
        if drafter == "none":
            continue
        verdicts = []
        for r in sorted(members, key=lambda r: r.get(key)):
            base = bases.of(r.conditions)
            if (
                base is not None
                and r.metrics.goodput_rps is not None
                and base.metrics.goodput_rps is not None
            ):
                verdicts.append(
                    (
                        r.get(key),
                        r.metrics.goodput_rps > base.metrics.goodput_rps,
                        r.metrics.goodput_rps == base.metrics.goodput_rps,
                    )
                )
        if not verdicts:
            continue
        named = arm(drafter, k)
        wins = [v for v, better, _ in verdicts if better]
        loss = next((v for v, better, same in verdicts if not better and not same), None)
        if not wins:
            lines.append(f"- Goodput: {named} never beats no drafter at the loads measured.")
        elif loss is None:
            lines.append(
                f"- Goodput: {named} beats or equals no drafter at every load measured (more at {', '.join(where(v) for v in wins)})."
            )
        else:
            lines.append(
                f"- Goodput: {named} beats no drafter at {', '.join(where(v) for v in wins)}; "
                f"from {where(loss)} it gives less."
            )
    return lines


def _highest(rows: Sequence[Row], key: str) -> float | None:
    """The highest load below the lowest failing one that met the SLO; None: even the lightest failed."""
    ordered = sorted(rows, key=lambda r: r.get(key))
    met = None
    for r in ordered:
        if not r.load.get("slo_met"):
            break
        met = r.get(key)
    return met


def _load(value: float | None, key: str, unit: str) -> str:
    if value is None:
        return "misses it at the lightest load measured"
    return (
        f"meets it up to {number(value)} {unit}"
        if key == "request_rate"
        else f"meets it up to concurrency {number(value)}"
    )


def _verdict(value: float | None, base: float | None | str, key: str, unit: str) -> str:
    if isinstance(base, str):  # "missing"
        return " (no drafter=none run to compare with)"
    where = (
        (lambda v: f"{number(v)} {unit}")
        if key == "request_rate"
        else (lambda v: f"concurrency {number(v)}")
    )
    if value is None and base is None:
        return " Neither it nor no drafter meets the SLO at the loads measured."
    if base is None or (value is not None and value > base):
        return f" Speculative decoding pays for this SLO: no drafter meets it only up to {where(base) if base else 'none of them'}."
    if value is None or value < base:
        return (
            f" **Speculative decoding stops paying above {where(value) if value is not None else 'the lightest load'}**"
            f" for this SLO: no drafter meets it up to {where(base)}."
        )
    return " The same as no drafter at the loads measured."


def latency_vs_throughput(
    rows: Sequence[Row], name: str, label: str, setups: Sequence[str]
) -> list[Chart]:
    """p50 and p99 TTFT and TPOT against achieved tok/s, one line per drafter arm (points in rate order)."""
    data = [
        {
            "arm": chart_parts.arm_of(r, setups),
            "tok/s": r.metrics.aggregate_tps,
            "rate": r.conditions.request_rate,
            "latency": f"{kind} {stat}",
            "seconds": r.metrics.get(f"{kind.lower()}_{stat}_s"),
        }
        for r in rows
        for kind in ("TTFT", "TPOT")
        for stat in ("p50", "p99")
        if r.metrics.aggregate_tps and r.metrics.get(f"{kind.lower()}_{stat}_s") is not None
    ]
    if not data:
        return []
    chart = (
        alt.Chart(alt.Data(values=data))
        .mark_line(point=True)
        .encode(
            x=alt.X("tok/s:Q", title="aggregate_tps (achieved tok/s)"),
            y=alt.Y("seconds:Q", title="seconds", scale=alt.Scale(type="log")),
            color=alt.Color("arm:N", title="drafter"),
            order=alt.Order("rate:Q"),
            tooltip=["arm:N", "rate:Q", "tok/s:Q", "seconds:Q"],
        )
        .properties(width=chart_parts.WIDTH, height=chart_parts.HEIGHT)
        .facet(facet=alt.Facet("latency:N"), columns=2)
    )
    title = f"Latency vs throughput: {label}" if label else "Latency vs throughput"
    return [Chart(chart_parts.file_name(name), title, chart.properties(title=label).to_dict())]


def goodput_vs_rate(
    rows: Sequence[Row], name: str, label: str, setups: Sequence[str]
) -> list[Chart]:
    data = [
        {
            "arm": chart_parts.arm_of(r, setups),
            "rate": r.conditions.request_rate,
            "goodput": r.metrics.goodput_rps,
        }
        for r in rows
        if r.metrics.goodput_rps is not None and r.conditions.request_rate is not None
    ]
    if not data:
        return []
    chart = (
        alt.Chart(alt.Data(values=data))
        .mark_line(point=True)
        .encode(
            x=alt.X("rate:Q", title="request_rate (req/s)", scale=alt.Scale(type="log")),
            y=alt.Y("goodput:Q", title="goodput_rps (req/s)"),
            color=alt.Color("arm:N", title="drafter"),
            order=alt.Order("rate:Q"),
        )
        .properties(width=chart_parts.WIDTH * 2, height=chart_parts.HEIGHT, title=label)
    )
    return [
        Chart(
            chart_parts.file_name(name),
            f"Goodput vs request rate: {label}" if label else "Goodput vs request rate",
            chart.to_dict(),
        )
    ]


def _delivered(r: Row) -> str:
    value = r.load.get("load_delivered")
    return "—" if value is None else "yes" if value else Markdown("**not delivered**")


def _met(r: Row) -> str:
    value = r.load.get("slo_met")
    return "—" if value is None else "yes" if value else "no"


def _run(row: Row) -> Markdown:
    return run_cell(row.run_id, row.link)


def _label(conditions: dict[str, Any], fixed: dict[str, Any]) -> str:
    return group_label(conditions, fixed, skip=("prompt_tokens",))
