"""Write a report's files: measurements.md with its charts/, and optionally report.html."""

from __future__ import annotations

from collections.abc import Sequence
from pathlib import Path

from specexp.check.figures import FigureSet
from specexp.record import RunRecord, atomic_write
from specexp.report.build import build_report
from specexp.report.markdown import render_markdown, view_of
from specexp.report.render import write_charts, write_html


def write_report(
    found: Sequence[tuple[Path, RunRecord]],
    markdown: Path,
    html: Path | None = None,
    title: str | None = None,
    cited: Sequence[FigureSet] = (),
    vega_script: str | None = None,
) -> list[Path]:
    """Render the records in `found`; links in each file are relative to its own folder. The HTML
    loads its chart scripts from `vega_script` where given, else inlines them."""
    folder = markdown.resolve().parent
    report = build_report(found, folder, title=title, cited=cited)
    write_charts(report, folder / "charts")
    view = view_of(report)
    atomic_write(markdown, render_markdown(report, view))
    written = [markdown]
    if html is not None:
        if html.resolve().parent == folder:
            written.append(write_html(report, html, view, vega_script))
        else:  # its links are relative to its own folder
            elsewhere = build_report(found, html.resolve().parent, title=title, cited=cited)
            written.append(write_html(elsewhere, html, vega_script=vega_script))
    return written
