"""The report's "Published figures" and "Comparability" sections, from specexp.check.

Every table and chart of the report is handed to the checker with the conditions it varies,
so the Comparability section speaks about exactly what the reader sees side by side.
"""

from __future__ import annotations

from collections.abc import Sequence

from specexp.check import (
    comparability_md,
    figures_of_experiment,
    published_figures_md,
    report_findings,
    side_by_side,
)
from specexp.check.figures import FigureSet, merge
from specexp.record import RunRecord
from specexp.report.blocks import Block, Heading, Paragraph
from specexp.report.format import Markdown, cell, number
from specexp.report.tables import CHART_KEYS, DRAFTER_KEYS, SPEC_KEYS, Row, group
from specexp.spec import paths
from specexp.spec.errors import SpecError

VARIED = {
    "decode": SPEC_KEYS,
    "concurrency": (*SPEC_KEYS, "concurrency"),
    "rate": (*SPEC_KEYS, "request_rate"),
    "prefill": ("prompt_tokens", *DRAFTER_KEYS),
    "prefix_cache": ("prompt_tokens", "cache", *DRAFTER_KEYS),
}
"""What each section's tables vary; everything else is equal within one table."""


def experiment_figures(records: Sequence[RunRecord]) -> tuple[list[FigureSet], list[str]]:
    """Figures cited by the experiments the records came from (`citations:` or inline `figures:`),
    and a line for each citation that could not be read (the report says so; it never fails on it)."""
    names = {r.experiment for r in records}
    sets, problems = [], []
    for name in sorted(n for n in names if n):
        path = paths.experiments_dir() / f"{name}.yaml"
        if not path.is_file():
            continue
        try:
            found = figures_of_experiment(path)
        except SpecError as err:
            problems.extend(err.lines())
            continue
        if found is not None:
            sets.append(found)
    return sets, problems


def check_sections(
    records: Sequence[RunRecord],
    runs: Sequence[Row],
    sections: dict[str, list[Row]],
    cited: Sequence[FigureSet] = (),
) -> list[Block]:
    """The checker's word on the report's own tables and charts, and on cited figures."""
    tables = []
    for name, rows in sections.items():
        for conditions, members in group(rows, VARIED[name]):
            tables.append(
                side_by_side(
                    f"{name}: {number(members[0].conditions.workload)}", members, vary=VARIED[name]
                )
            )
        if name == "decode":
            for _, members in group(rows, CHART_KEYS):
                tables.append(side_by_side("decode charts", members, vary=CHART_KEYS))
    from_experiments, problems = experiment_figures(records)
    sets = [*cited, *from_experiments]
    figures = merge(sets) if sets else None
    finished = _finished(records)
    report = report_findings([r for r in runs if r.run_id in finished], figures, tables=tables)
    blocks: list[Block] = []
    if problems:
        blocks += [
            Heading("Published figures"),
            Paragraph(
                Markdown(
                    "Cited figures that could not be read:\n\n"
                    + "\n".join(f"- {cell(p)}" for p in problems)
                )
            ),
        ]
    published = published_figures_md(report, heading="")
    if published.strip():
        blocks += [
            Heading("Published figures"),
            Paragraph(Markdown(published.strip())),
        ]  # escaped by check.render
    blocks += [
        Heading("Comparability"),
        Paragraph(Markdown(comparability_md(report, heading="").strip())),
    ]
    return blocks


def _finished(records: Sequence[RunRecord]) -> set[str]:
    """Runs that completed: the checker judges figures of those, not partial windows."""
    return {r.run_id for r in records if r.status == "ok"}
