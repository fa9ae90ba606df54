"""The report's closing sections: runs recorded more than once, the metric definitions the tables
used, and every run with its record."""

from __future__ import annotations

import os
from collections.abc import Sequence
from pathlib import Path

from specexp.record import RunRecord
from specexp.report.blocks import Block, Heading, Paragraph, TableBlock
from specexp.report.format import Markdown, cell, code_span, link, number
from specexp.report.tables import Row
from specexp.spec.vocabulary import DISTRIBUTED, METRICS, STATS


def duplicates_section(found: Sequence[tuple[Path, RunRecord]], report_dir: Path) -> list[Block]:
    """Run ids recorded in more than one folder (results copied together from several nodes):
    every copy is listed and shown in the tables, none is merged away silently."""
    copies: dict[str, list[tuple[Path, RunRecord]]] = {}
    for path, record in found:
        copies.setdefault(record.run_id, []).append((path, record))
    repeated = {run_id: items for run_id, items in copies.items() if len(items) > 1}
    if not repeated:
        return []
    body = []
    for run_id, items in repeated.items():
        for path, record in items:
            prov = record.provenance
            rel = os.path.relpath(path, report_dir)
            body.append(
                [
                    code_span(run_id),
                    cell(record.status),
                    cell(prov.host or "—"),
                    cell(prov.started_at or "—"),
                    link(rel, rel),
                ]
            )
    return [
        Heading("Runs recorded more than once"),
        Paragraph(
            f"{len(repeated)} run id(s) appear in more than one folder. The same configuration was run "
            "more than once (on several nodes, or copied twice); every copy is listed here and appears "
            "in the tables above as its own row. Keep one copy to silence this."
        ),
        TableBlock(["run", "status", "host", "started", "record"], body),
    ]


def definitions(rows: Sequence[Row]) -> list[Block]:
    used = [m for m in METRICS if any(r.metrics.get(m) is not None for r in rows)]
    if not used:
        return []
    spread = {f"{key}_{stat}_s": key for key in DISTRIBUTED for stat in STATS}
    lines, said = [], set()
    for m in used:
        if m not in spread:
            lines.append(
                f"- {code_span(m)} ({METRICS[m].unit}, {METRICS[m].better or 'no direction'}): {METRICS[m].definition}."
            )
        elif spread[m] not in said:  # one line for the four figures of a distribution
            said.add(spread[m])
            lines.append(
                f"- `{spread[m]}_{{{','.join(STATS)}}}_s` (s, lower): {'/'.join(STATS)} over the requests "
                f"of every repeat of a point: {DISTRIBUTED[spread[m]][1]}."
            )
    return [
        Heading("Metric definitions"),
        Paragraph(Markdown("\n".join(lines))),
    ]  # the vocabulary's own text


def runs_appendix(found: Sequence[tuple[Path, RunRecord]], report_dir: Path) -> list[Block]:
    """Every run id, its status and its record, so each cell traces back to its run."""
    body = []
    for path, r in found:
        c = r.conditions
        body.append(
            [
                code_span(r.run_id),
                cell(r.status),
                cell(number(c.workload)),
                cell(c.drafter),
                cell(c.k if c.k is not None else "—"),
                link(os.path.relpath(path, report_dir), os.path.relpath(path, report_dir)),
            ]
        )
    return [
        Heading("Runs"),
        Paragraph(
            Markdown(
                "Every `run` cell above links to the `result.json` behind it; "
                "`results.jsonl` beside it holds every figure with all its conditions."
            )
        ),
        TableBlock(["run", "status", "workload", "drafter", "k", "record"], body),
    ]
