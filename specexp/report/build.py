"""Records -> the report's blocks. Reads result records only; never an engine."""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass, replace
from pathlib import Path

from specexp.check.figures import FigureSet
from specexp.record import RunRecord
from specexp.report.blocks import Block, Chart
from specexp.report.chart_parts import schema_checks
from specexp.report.contents import CONTENTS, read_for_report
from specexp.report.format import Markdown
from specexp.report.tables import Row


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
    read = read_for_report(found, report_dir, cited)
    blocks = [block for section in CONTENTS for block in section.build(read)]
    return Report(
        banner=banner(read.rows),
        title=title or default_title(read.results),
        blocks=_number_charts(blocks),
    )


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
