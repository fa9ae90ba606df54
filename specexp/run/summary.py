"""The files a sweep (or a single run) leaves beside its job directories.

Measuring needs none of the report libraries: they are imported only here, when the sweep is
over, and a machine without them (`pip install specexp` without the `report` extra, e.g. a GPU
box that only runs jobs) still writes every record and results.jsonl, and says how to render
the report elsewhere.
"""

from __future__ import annotations

import logging
from pathlib import Path

from specexp.record import find_records, write_results_jsonl

log = logging.getLogger(__name__)


def write_sweep_outputs(root: Path) -> list[Path]:
    """Rebuild results.jsonl, measurements.md (with charts/) and report.html of `root`."""
    found = find_records([root])
    if not found:
        return []
    written = [write_results_jsonl(root)]
    try:
        from specexp.report.write import write_report
    except ImportError as err:  # the report extra is not installed
        print(f"report not rendered ({err.name} is not installed): records are complete; render them with "
              f"`pip install 'specexp[report]'` and `python -m specexp.report {root}`", flush=True)
        return written
    return [*written, *write_report(found, root / "measurements.md", root / "report.html")]
