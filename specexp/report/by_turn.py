"""Report sections of agentic sessions (by turn) and dataset files (by category).

A session's turns and a dataset's categories are measurement points of their own (conditions
`turn` and `category`); these tables put them side by side per drafter, with the speedup over
the drafter=none row of the same turn or category: TTFT and cached prompt tokens say what the
prefix cache did, acceptance and tokens per pass what the drafter did.
"""

from __future__ import annotations

from collections.abc import Sequence
from typing import Any

from specexp.report import charts
from specexp.report.blocks import Block, Heading, Paragraph, TableBlock
from specexp.report.format import header, number, run_cell, with_spread
from specexp.report.tables import DRAFTER_KEYS, Row, baselines, group, sort_rows

TURN_METRICS = (
    "ttft_p50_s",
    "cached_prompt_tokens",
    "acceptance_rate",
    "tokens_per_pass",
    "decode_tps",
)
CATEGORY_METRICS = (
    "acceptance_rate",
    "acceptance_by_position",
    "tokens_per_pass",
    "decode_tps",
    "ttft_p50_s",
)


def split(rows: Sequence[Row]) -> tuple[list[Row], list[Row], list[Row]]:
    """(session rows, category rows, the rest)."""
    turns = [r for r in rows if r.conditions.turn is not None]
    categories = [
        r for r in rows if r.conditions.turn is None and r.conditions.category is not None
    ]
    rest = [r for r in rows if r.conditions.turn is None and r.conditions.category is None]
    return turns, categories, rest


def _label(conditions: dict[str, Any], fixed: dict[str, Any]) -> str:
    return " · ".join(
        f"{k} {number(v)}" for k, v in conditions.items() if k not in fixed and k != "repeats"
    )


def _table(
    rows: Sequence[Row], fixed: dict[str, Any], key: str, metrics: Sequence[str]
) -> list[Block]:
    blocks: list[Block] = []
    shown = (*DRAFTER_KEYS, key, "prompt_tokens", "cache")
    for conditions, members in group(rows, shown):
        label = _label(conditions, fixed)
        blocks.append(Heading(label or "All runs", 3))
        body = []
        bases = baselines(members)
        for r in sort_rows(members, ("drafter", "k", key)):
            base = bases.of(r.conditions)
            speedup = (
                "baseline"
                if r.conditions.drafter == "none"
                else f"{r.metrics.decode_tps / base.metrics.decode_tps:.2f}×"
                if base is not None and base.metrics.decode_tps and r.metrics.decode_tps
                else "no baseline"
            )
            body.append(
                [
                    number(r.conditions.drafter),
                    number(r.conditions.k),
                    number(r.get(key)),
                    number(r.conditions.prompt_tokens),
                    *(with_spread(r.metrics.get(m), r.spread.get(m), m) for m in metrics),
                    speedup,
                    run_cell(r.run_id, r.link),
                ]
            )
        blocks.append(
            TableBlock(
                [
                    "drafter",
                    "k",
                    key,
                    "prompt_tokens",
                    *(header(m) for m in metrics),
                    "decode speedup vs none",
                    "run",
                ],
                body,
                align=["l", "r", "l", "r", *["r"] * len(metrics), "r", "l"],
            )
        )
        # one line per drafter and turn (or category): how acceptance falls with the draft position
        blocks += charts.acceptance_by_position(members, f"acceptance-by-{key}", label, (key,))
    return blocks


def turn_section(rows: Sequence[Row], fixed: dict[str, Any]) -> list[Block]:
    if not rows:
        return []
    return [
        Heading("Agentic sessions: by turn"),
        Paragraph(
            "Every turn resends the whole conversation so far plus a new message; turn 1 follows an "
            "emptied prefix cache. Cached prompt tokens are the turn's total over its sessions; a "
            "working cache shows them rising with the turn while TTFT stays low."
        ),
        *_table(rows, fixed, "turn", TURN_METRICS),
    ]


def category_section(rows: Sequence[Row], fixed: dict[str, Any]) -> list[Block]:
    if not rows:
        return []
    return [
        Heading("Prompts by category"),
        Paragraph(
            "Each category of the dataset file is measured on its own: acceptance differs by task."
        ),
        *_table(rows, fixed, "category", CATEGORY_METRICS),
    ]
