"""The files a sweep (or a single run) leaves beside its job directories."""

from __future__ import annotations

from pathlib import Path

from specexp.record import find_results, write_results_jsonl
from specexp.report.write import write_report


def write_sweep_outputs(root: Path) -> list[Path]:
    """Rebuild results.jsonl, measurements.md (with charts/) and report.html of `root`."""
    found = find_results([root])
    if not found:
        return []
    return [write_results_jsonl(root), *write_report(found, root / "measurements.md", root / "report.html")]
