"""The files a sweep (or a single run) leaves beside its job directories."""

from __future__ import annotations

from pathlib import Path

from specexp.record import atomic_write, find_results, write_results_jsonl
from specexp.report.build import build_report
from specexp.report.markdown import render_markdown
from specexp.report.render import write_charts, write_html


def write_sweep_outputs(root: Path) -> list[Path]:
    """Rebuild results.jsonl, measurements.md (with charts/) and report.html of `root`."""
    found = find_results([root])
    if not found:
        return []
    report = build_report(found, root)
    write_charts(report, root / "charts")
    atomic_write(root / "measurements.md", render_markdown(report))
    return [write_results_jsonl(root), root / "measurements.md", write_html(report, root / "report.html")]
