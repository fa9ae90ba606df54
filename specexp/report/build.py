"""Records -> the report's blocks. Reads result records only; never an engine."""

from __future__ import annotations

import os
from collections.abc import Sequence
from dataclasses import dataclass, replace
from pathlib import Path

from specexp.check.figures import FigureSet
from specexp.record import RunRecord
from specexp.report.answers import answers_section
from specexp.report.blocks import Block, Chart, Heading, Paragraph, TableBlock
from specexp.report.by_turn import category_section, split, turn_section
from specexp.report.charts import schema_checks
from specexp.report.checks import check_sections
from specexp.report.format import Markdown, cell, code_span, link, number
from specexp.report.headline import findings_section
from specexp.report.method import method_section
from specexp.report.open_loop import rate_section, slo_text
from specexp.report.sections import (
    classify,
    concurrency_section,
    decode_section,
    failures_section,
    prefill_section,
    prefix_cache_section,
)
from specexp.report.tables import Row, fixed_conditions, rows_of
from specexp.spec.vocabulary import DISTRIBUTED, METRICS, STATS


@dataclass(frozen=True)
class Report:
    banner: str | None
    """The first line: whether the figures are simulated."""
    title: str
    blocks: list[Block]

    @property
    def charts(self) -> list[Chart]:
        return [b for b in self.blocks if isinstance(b, Chart)]


def default_title(records: Sequence[RunRecord]) -> str:
    """The experiment's name when every record came from the same one."""
    names = {r.experiment for r in records}
    if len(names) == 1 and None not in names:
        return f"Measurements: {names.pop()}"
    return "Measurements"


def banner(rows: Sequence[Row]) -> str | None:
    sources = {r.conditions.source for r in rows}
    if sources == {"simulated"}:
        return Markdown(
            "**Simulated.** Every figure on this page comes from specexp's simulator (`runtime=sim`): "
            "a roofline model of the hardware and a calibrated acceptance model of each drafter, "
            "not a measurement on a GPU."
        )
    if "simulated" in sources:
        return Markdown(
            "**Partly simulated.** Rows whose `source` is `simulated` come from specexp's simulator; "
            "rows whose `source` is `measured` come from a real server."
        )
    return None


def build_report(
    found: Sequence[tuple[Path, RunRecord]],
    report_dir: Path,
    title: str | None = None,
    cited: Sequence[FigureSet] = (),
) -> Report:
    """The whole report; `cited` adds published figures to compare with (`--cite`)."""
    with schema_checks():
        return _build(found, report_dir, title, cited)


def _build(
    found: Sequence[tuple[Path, RunRecord]],
    report_dir: Path,
    title: str | None,
    cited: Sequence[FigureSet],
) -> Report:
    results = [r for _, r in found]
    title = title or default_title(results)
    rows, failures = rows_of(found, report_dir)
    turns, categories, rest = split(rows)  # sessions and dataset files have sections of their own
    sections = classify(rest)
    fixed = fixed_conditions(rows)
    blocks: list[Block] = findings_section(rows, failures, results)
    blocks.append(Paragraph(f"{len(rows)} measurement(s) from {len(results)} run(s)."))
    blocks += method_section(rows, results)
    blocks += decode_section(sections["decode"], fixed)
    slo = slo_text(next((r.provenance.slo for r in results if r.provenance.slo), None))
    blocks += concurrency_section(sections["concurrency"], fixed, slo)
    blocks += rate_section(sections["rate"], fixed, slo)
    blocks += prefill_section(sections["prefill"], fixed)
    blocks += prefix_cache_section(sections["prefix_cache"], fixed)
    blocks += turn_section(turns, fixed) + category_section(categories, fixed)
    blocks += answers_section(results)
    blocks += check_sections(results, rows, sections, cited)
    blocks += failures_section(failures)
    blocks += duplicates_section(found, report_dir)
    blocks += definitions(rows)
    blocks += runs_appendix(found, report_dir)
    return Report(banner=banner(rows), title=title, blocks=_number_charts(blocks))


def _number_charts(blocks: list[Block]) -> list[Block]:
    """Short, stable chart file names: their order in the report and their kind."""
    out: list[Block] = []
    n = 0
    for block in blocks:
        if isinstance(block, Chart):
            n += 1
            block = replace(block, name=f"{n:02d}-{block.name.split('-')[0]}")
        out.append(block)
    return out


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
