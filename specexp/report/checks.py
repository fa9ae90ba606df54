"""The report's "Published figures" and "Comparability" sections, from specexp.check.

Every table and chart of the report is handed to the checker with the conditions it varies,
so the Comparability section speaks about exactly what the reader sees side by side.
"""

from __future__ import annotations

import os
from collections.abc import Sequence
from pathlib import Path
from typing import Any

from specexp import paths
from specexp.check import comparability_md, figures_of_experiment, published_figures_md, report_findings, side_by_side
from specexp.check.figures import FigureSet, merge
from specexp.errors import SpecError
from specexp.report.blocks import Block, Heading, Paragraph
from specexp.report.format import cell
from specexp.report.sections import SPEC_KEYS
from specexp.report.tables import DRAFTER_KEYS, Row, group

CHART_KEYS = (*SPEC_KEYS, "workload", "output_tokens", "ignore_eos", "thinking")
VARIED = {
    "decode": SPEC_KEYS,
    "concurrency": (*SPEC_KEYS, "concurrency"),
    "prefill": ("prompt_tokens", *DRAFTER_KEYS),
    "prefix_cache": ("prompt_tokens", "cache", *DRAFTER_KEYS),
}
"""What each section's tables vary; everything else is equal within one table."""


def experiment_figures(results: Sequence[dict[str, Any]]) -> tuple[list[FigureSet], list[str]]:
    """Figures cited by the experiments the records came from (`citations:` or inline `figures:`),
    and a line for each citation that could not be read (the report says so; it never fails on it)."""
    names = {((r.get("provenance") or {}).get("config") or {}).get("experiment") for r in results}
    sets, problems = [], []
    for name in sorted(n for n in names if n):
        path = paths.experiments_dir() / f"{name}.yaml"
        if not path.is_file():
            continue
        try:
            found = figures_of_experiment(path)
        except SpecError as err:
            problems.append(err.line())
            continue
        if found is not None:
            sets.append(found)
    return sets, problems


def check_sections(
    found: Sequence[tuple[Path, dict[str, Any]]], sections: dict[str, list[Row]], report_dir: Path,
    cited: Sequence[FigureSet] = (),
) -> list[Block]:
    tables = []
    for name, rows in sections.items():
        for conditions, members in group(rows, VARIED[name]):
            tables.append(side_by_side(f"{name}: {conditions.get('workload')}", members, vary=VARIED[name]))
        if name == "decode":
            for _, members in group(rows, CHART_KEYS):
                tables.append(side_by_side("decode charts", members, vary=CHART_KEYS))
    from_experiments, problems = experiment_figures([r for _, r in found])
    sets = [*cited, *from_experiments]
    figures = merge(sets) if sets else None
    linked = [(Path(os.path.relpath(path, report_dir)), record) for path, record in found]
    report = report_findings(linked, figures, tables=tables)
    blocks: list[Block] = []
    if problems:
        blocks += [Heading("Published figures"),
                   Paragraph("Cited figures that could not be read:\n\n" + "\n".join(f"- {cell(p)}" for p in problems))]
    published = published_figures_md(report, heading="")
    if published.strip():
        blocks += [Heading("Published figures"), Paragraph(published.strip())]
    blocks += [Heading("Comparability"), Paragraph(comparability_md(report, heading="").strip())]
    return blocks
