"""Golden reports from frozen records: the rendered Markdown must not change by accident.

Regenerate after an intended change with `SPECEXP_UPDATE_GOLDEN=1 scripts/test tests/unit/report`,
and read the diff.
"""

from __future__ import annotations

import os
import shutil
from pathlib import Path

import pytest

from specexp.record import find_records
from specexp.report.build import build_report
from specexp.report.markdown import render_markdown

FIXTURES = Path(__file__).resolve().parents[2] / "fixtures" / "records"
GOLDEN = Path(__file__).resolve().parents[2] / "golden"

CASES = {
    "simulated-v1.md": ["simulated"],
    "mixed-with-failure-v1.md": ["simulated", "measured", "refused"],
}


@pytest.mark.parametrize("golden", sorted(CASES))
def test_report_matches_golden(golden: str, tmp_path: Path) -> None:
    for folder in CASES[golden]:
        shutil.copytree(FIXTURES / folder, tmp_path / folder)
    report = build_report(find_records([tmp_path / f for f in CASES[golden]]), tmp_path)
    text = render_markdown(report)
    path = GOLDEN / golden
    if os.environ.get("SPECEXP_UPDATE_GOLDEN"):
        path.write_text(text)
    assert text == path.read_text()
