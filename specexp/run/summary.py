"""The files a sweep (or a single run) leaves beside its job directories.

Measuring needs none of the report libraries: they are imported only here, when the sweep is
over, and a machine without them (`pip install specexp` without the `report` extra, e.g. a GPU
box that only runs jobs) still writes every record and results.jsonl, and says how to render
the report elsewhere.
"""

from __future__ import annotations

import logging
from pathlib import Path

from specexp.check.answer_verdicts import checked_runs
from specexp.check.judgments import judgments
from specexp.record import find_records, write_results_jsonl
from specexp.run.report_ahead import ReportAhead
from specexp.spec.arms import arm_label

log = logging.getLogger(__name__)


REPORT_EXTRA = ("altair", "vl_convert")
"""The top-level modules of `specexp[report]`: a sweep without them still writes its records."""


def write_sweep_outputs(root: Path, ahead: ReportAhead | None = None) -> list[Path]:
    """Rebuild results.jsonl, measurements.md (with charts/) and report.html of `root` (by the
    renderer made ready `ahead`, where there is one)."""
    found = find_records([root])
    if not found:
        if ahead is not None:
            ahead.close()
        return []
    if ahead is not None:
        ahead.start(root)  # the report is written beside, while results.jsonl is written here
    written = [write_results_jsonl(root, found, judgments(found))]
    rendered = ahead.render(root) if ahead is not None else None
    if rendered is not None:
        return [*written, *rendered]
    try:
        from specexp.report.write import write_report
    except ModuleNotFoundError as err:
        if err.name is None or err.name.split(".")[0] not in REPORT_EXTRA:
            raise  # a broken specexp, not a missing extra
        print(
            f"report not rendered ({err.name} is not installed): records are complete; render them with "
            f"`pip install 'specexp[report]'` and `python -m specexp.report {root}`",
            flush=True,
        )
        return written
    return [*written, *write_report(found, root / "measurements.md", root / "report.html")]


def answer_lines(root: Path) -> list[str]:
    """One line per answer check of the sweep: the drafter run, its baseline and the verdict."""
    lines = []
    for record, check in checked_runs([r for _, r in find_records([root])]):
        c = record.conditions
        setup = arm_label(c.drafter, c.k)
        lines.append(
            f"answers: {record.run_id} {setup} vs {check.baseline_run_id}, temperature "
            f"{c.temperature:g}: {check.verdict} ({check.details})"
        )
    return lines
