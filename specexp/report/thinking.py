"""A reasoning model's two streams: how long it reasoned, when its answer began, and how fast each
stream decoded, beside no drafter's, for the measurements whose requests reasoned
(docs/vocabulary.md, "Thinking"). Absent where none did."""

from __future__ import annotations

from collections.abc import Sequence
from typing import Any

from specexp.report.blocks import Block, Heading, Paragraph, TableBlock
from specexp.report.format import Markdown, header, number, run_cell, with_spread
from specexp.report.tables import SPEC_KEYS, Row, baselines, group, sort_rows, varying
from specexp.report.tables import group_label as label_of
from specexp.report.versus import speedup_cell
from specexp.spec.vocabulary import M

TITLE = "Reasoning and answer"
FIGURES = (M.ttft_s, M.time_to_answer_s, M.reasoning_tokens, M.reasoning_tps, M.answer_tps)
VERSUS = (M.reasoning_tps, M.answer_tps)
"""The rates each drafter's is divided by no drafter's of, stream by stream."""


def thinking_section(rows: Sequence[Row], fixed: dict[str, Any]) -> list[Block]:
    reasoned = [r for r in rows if r.metrics.reasoning_tokens is not None]
    if not reasoned:
        return []
    blocks: list[Block] = [
        Heading(TITLE),
        Paragraph(
            Markdown(
                "Requests that reasoned before they answered (a `reasoning_content` stream, or text inside "
                "`<think>` … `</think>`). `ttft_s` is the first token of either stream; the answer begins "
                "at `time_to_answer_s`. Each stream's decode rate is divided by no drafter's of the same "
                "stream: a drafter can pay on the answer and not on the reasoning, or the other way round."
            )
        ),
    ]
    for conditions, members in group(reasoned, (*SPEC_KEYS, "concurrency")):
        columns = varying(members, exclude=("repeats", "prompt_tokens", "runtime_version"))
        columns = ["drafter", *(c for c in columns if c != "drafter")]
        bases = baselines(members)
        body = []
        for r in sort_rows(members, columns):
            base = bases.of(r.conditions)
            body.append(
                [number(r.get(c)) for c in columns]
                + [with_spread(r.metrics.get(m), r.spread.get(m), m) for m in FIGURES]
                + [speedup_cell(r, base, m) for m in VERSUS]
                + [run_cell(r.run_id, r.link)]
            )
        blocks.append(Heading(label_of(conditions, fixed) or "All runs", 3))
        blocks.append(
            TableBlock(
                [
                    *columns,
                    *(header(m) for m in FIGURES),
                    "reasoning vs none",
                    "answer vs none",
                    "run",
                ],
                body,
                align=["l"] * len(columns) + ["r"] * (len(FIGURES) + 2) + ["l"],
            )
        )
    return blocks
