"""The report's sections, in the order the page shows them: one entry each, its name and how it builds
from what the report read. A new section is a module with its builder and one entry here."""

from __future__ import annotations

from collections.abc import Callable, Sequence
from dataclasses import dataclass
from pathlib import Path
from typing import Any

from specexp.check.figures import FigureSet
from specexp.record import RunRecord
from specexp.record.kinds import measurement_kinds
from specexp.report.answers import answers_section
from specexp.report.appendix import definitions, duplicates_section, runs_appendix
from specexp.report.blocks import Block, Paragraph
from specexp.report.by_turn import category_section, split, turn_section
from specexp.report.certainty import certainty_section
from specexp.report.checks import check_sections
from specexp.report.cost import cost_section
from specexp.report.depth import depth_section
from specexp.report.engine_timeline import engine_section
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
from specexp.report.tables import Failure, Row, fixed_conditions, rows_of
from specexp.report.thinking import thinking_section
from specexp.report.why import why_section


@dataclass(frozen=True)
class ReportInput:
    """What every section builds from: the records read once, their rows and failures, the rows by
    kind of measurement (specexp.record.kinds), and what the page shares."""

    found: Sequence[tuple[Path, RunRecord]]
    report_dir: Path
    results: list[RunRecord]
    rows: list[Row]
    failures: list[Failure]
    by_kind: dict[str, list[Row]]
    """Rows of neither a session nor a dataset file, by the kind of measurement."""
    turns: list[Row]
    """Rows of agentic sessions (one per turn)."""
    categories: list[Row]
    """Rows of dataset files (one per category)."""
    fixed: dict[str, Any]
    """Conditions every row shares (the tables show only what varies)."""
    slo: str | None
    """The SLO the runs were judged by, in words."""
    cited: Sequence[FigureSet]
    """Published figures to compare with (`--cite`)."""
    kinds: list[str]
    """Each row's kind of measurement (specexp.record.kinds), in the order of `rows`: made once."""


def read_for_report(
    found: Sequence[tuple[Path, RunRecord]], report_dir: Path, cited: Sequence[FigureSet] = ()
) -> ReportInput:
    results = [r for _, r in found]
    rows, failures = rows_of(found, report_dir)
    turns, categories, rest = split(rows)  # sessions and dataset files have sections of their own
    slo = next((r.provenance.slo for r in results if r.provenance.slo), None)
    return ReportInput(
        found=found,
        report_dir=report_dir,
        results=results,
        rows=rows,
        failures=failures,
        by_kind=classify(rest),
        turns=turns,
        categories=categories,
        fixed=fixed_conditions(rows),
        slo=slo_text(slo),
        cited=cited,
        kinds=measurement_kinds(rows),
    )


@dataclass(frozen=True)
class Section:
    name: str
    build: Callable[[ReportInput], list[Block]]


def _count(r: ReportInput) -> list[Block]:
    return [Paragraph(f"{len(r.rows)} measurement(s) from {len(r.results)} run(s).")]


CONTENTS: tuple[Section, ...] = (
    Section("findings", lambda r: findings_section(r.rows, r.failures, r.results, r.kinds)),
    Section("count", _count),
    Section("method", lambda r: method_section(r.rows, r.results)),
    Section("decode", lambda r: decode_section(r.by_kind["decode"], r.fixed)),
    Section("depth", lambda r: depth_section(r.by_kind["decode"], r.fixed)),
    Section("thinking", lambda r: thinking_section(r.rows, r.fixed)),
    Section("concurrency", lambda r: concurrency_section(r.by_kind["concurrency"], r.fixed, r.slo)),
    Section("rate", lambda r: rate_section(r.by_kind["rate"], r.fixed, r.slo)),
    Section("cost", lambda r: cost_section(r.rows, r.fixed)),
    Section("prefill", lambda r: prefill_section(r.by_kind["prefill"], r.fixed)),
    Section("prefix_cache", lambda r: prefix_cache_section(r.by_kind["prefix_cache"], r.fixed)),
    Section("turns", lambda r: turn_section(r.turns, r.fixed)),
    Section("categories", lambda r: category_section(r.categories, r.fixed)),
    Section("certainty", lambda r: certainty_section(r.rows, r.kinds)),
    Section("why", lambda r: why_section(r.rows, r.kinds)),
    Section("engine", lambda r: engine_section(r.results)),
    Section("answers", lambda r: answers_section(r.results)),
    Section("checks", lambda r: check_sections(r.results, r.rows, r.by_kind, r.cited)),
    Section("failures", lambda r: failures_section(r.failures)),
    Section("duplicates", lambda r: duplicates_section(r.found, r.report_dir)),
    Section("definitions", lambda r: definitions(r.rows)),
    Section("runs", lambda r: runs_appendix(r.found, r.report_dir)),
)
"""Every section of the report, in page order; the build iterates it."""
