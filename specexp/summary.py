"""The files a sweep (or a single run) leaves beside its job directories."""

from __future__ import annotations

from pathlib import Path

from specexp.record import find_results, write_results_jsonl
from specexp.report.markdown import write_measurements


def write_sweep_outputs(root: Path) -> list[Path]:
    """Rebuild results.jsonl and measurements.md of `root` from its result.json files."""
    if not find_results([root]):
        return []
    return [write_results_jsonl(root), write_measurements([root], root / "measurements.md")]
