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
from specexp.report.blocks import Block, Heading, Paragraph
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


def experiment_figures(results: Sequence[dict[str, Any]]) -> list[FigureSet]:
    """Figures cited by the experiments the records came from (`citations:` or inline `figures:`)."""
    names = {((r.get("provenance") or {}).get("config") or {}).get("experiment") for r in results}
    sets = []
    for name in sorted(n for n in names if n):
        path = paths.experiments_dir() / f"{name}.yaml"
        if path.is_file():
            found = figures_of_experiment(path)
            if found is not None:
                sets.append(found)
    return sets


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
    sets = [*cited, *experiment_figures([r for _, r in found])]
    figures = merge(sets) if sets else None
    linked = [(Path(os.path.relpath(path, report_dir)), record) for path, record in found]
    report = report_findings(linked, figures, tables=tables)
    blocks: list[Block] = []
    published = published_figures_md(report, heading="")
    if published.strip():
        blocks += [Heading("Published figures"), Paragraph(published.strip())]
    blocks += [Heading("Comparability"), Paragraph(comparability_md(report, heading="").strip())]
    return blocks
