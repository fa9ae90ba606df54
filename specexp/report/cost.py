"""The bill: what a million completion tokens cost at the prices the user set, beside the rate that
sets it, one table per server setup. Only measurements with a price have a bill; without one this
section is absent (specexp never assumes a price)."""

from __future__ import annotations

from collections.abc import Sequence
from typing import Any

from specexp.report.blocks import Block, Heading, Paragraph, TableBlock
from specexp.report.format import Markdown, arm, header, number, run_cell, with_spread
from specexp.report.tables import SPEC_KEYS, Row, baselines, group, sort_rows, varying
from specexp.report.tables import group_label as label_of
from specexp.report.versus import speedup_cell
from specexp.spec.vocabulary import M

TITLE = "The bill"
BILLS = (M.usd_per_mtok, M.usd_per_mtok_energy)
FIGURES = (M.aggregate_tps, M.usd_per_mtok, M.energy_j_per_token, M.usd_per_mtok_energy)
"""The columns a table may have; one with no figure in any of its rows is left out."""
LOAD = ("concurrency", "request_rate")


def priced(rows: Sequence[Row]) -> list[Row]:
    """The rows measured with a price set."""
    return [
        r
        for r in rows
        if r.conditions.usd_per_gpu_hour is not None or r.conditions.usd_per_kwh is not None
    ]


def _unbilled(rows: Sequence[Row]) -> list[Paragraph]:
    """Why a price set gave no bill: the figure it prices was not measured."""
    out = []
    no_energy = [
        r
        for r in rows
        if r.conditions.usd_per_kwh is not None and r.metrics.energy_j_per_token is None
    ]
    if no_energy:
        out.append(
            Paragraph(
                Markdown(
                    f"`usd_per_kwh` was set, but {len(no_energy)} of {len(rows)} measurement(s) have "
                    "no measured GPU energy (a simulated run, a CPU-only server, or no NVML): no bill "
                    "from energy for them."
                )
            )
        )
    return out


def cost_section(rows: Sequence[Row], fixed: dict[str, Any]) -> list[Block]:
    """Per server setup: aggregate tok/s, $ per million tokens from time and from energy, and each
    drafter's bill over no drafter's at the same load; the cheapest measured point named."""
    rows = priced(rows)
    if not rows:
        return []
    blocks: list[Block] = [
        Heading(TITLE),
        Paragraph(
            Markdown(
                "Dollars per million completion tokens at the prices set in the hardware config "
                "(`hardware.usd_per_gpu_hour`, `hardware.usd_per_kwh`): from time, the hourly price of "
                "the server's GPUs over `aggregate_tps`; from energy, the GPUs' measured joules per token "
                "at the price of a kWh. A price is the user's, never assumed; a bill is of the window "
                "measured, so an idle or queueing server is billed as it ran. *vs none* is the bill "
                "over the `drafter=none` row's at the same load: below 1, the drafter saves money."
            )
        ),
        *_unbilled(rows),
    ]
    for conditions, members in group(rows, (*SPEC_KEYS, *LOAD, "workload")):
        blocks += _table(conditions, members, fixed)
    return blocks


def _table(conditions: dict[str, Any], members: list[Row], fixed: dict[str, Any]) -> list[Block]:
    columns = varying(members, exclude=("repeats", "prompt_tokens", "runtime_version"))
    columns = ["drafter", *(c for c in columns if c != "drafter")]
    figures = [m for m in FIGURES if any(r.metrics.get(m) is not None for r in members)]
    bases = baselines(members)
    body = []
    for r in sort_rows(members, columns):
        body.append(
            [number(r.get(c)) for c in columns]
            + [with_spread(r.metrics.get(m), r.spread.get(m), m) for m in figures]
            + [_versus(r, bases.of(r.conditions)), run_cell(r.run_id, r.link)]
        )
    out: list[Block] = [Heading(label_of(conditions, fixed) or "All runs", 3)]
    out.append(
        TableBlock(
            [*columns, *(header(m) for m in figures), "vs none", "run"],
            body,
            align=["l"] * len(columns) + ["r"] * (len(figures) + 1) + ["l"],
        )
    )
    cheapest = _cheapest(members)
    if cheapest is not None:
        out.append(Paragraph(cheapest))
    return out


def _bill(row: Row) -> tuple[str, float] | None:
    """The row's bill from time where it has one, else from energy."""
    for metric in BILLS:
        value = row.metrics.get(metric)
        if value is not None:
            return metric, value
    return None


def _versus(row: Row, base: Row | None) -> str:
    """The row's bill over its baseline's, of the bill the row has."""
    mine = _bill(row)
    return speedup_cell(row, base, mine[0] if mine is not None else BILLS[0])


def _cheapest(members: Sequence[Row]) -> Markdown | None:
    """One sentence: the measured point with the lowest bill from time (from energy where no row
    has a time bill), and what it costs."""
    for metric in BILLS:
        priced = [r for r in members if r.metrics.get(metric) is not None]
        if len(priced) < 2:
            continue
        best = min(priced, key=lambda r: r.metrics.get(metric))
        where = ", ".join(
            f"{name} {number(best.get(name))}" for name in LOAD if best.get(name) is not None
        )
        return Markdown(
            f"Cheapest measured point by `{metric}`: {arm(best.conditions.drafter, best.conditions.k, 'no drafter')}"
            f"{' at ' + where if where else ''}, ${number(best.metrics.get(metric), metric)} per million "
            "completion tokens."
        )
    return None
