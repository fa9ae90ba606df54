"""The report's findings are written from the records by rules: the fastest configuration and its
speedup, where a larger k gives speed back, and what is refused, partial or contaminated."""

from __future__ import annotations

import json
import shutil
from pathlib import Path

from specexp.record import find_records
from specexp.report.build import build_report
from specexp.report.markdown import render_markdown

FIXTURES = Path(__file__).resolve().parents[2] / "fixtures" / "records"


def _findings(root: Path) -> str:
    text = render_markdown(build_report(find_records([root]), root))
    return text.split("## Findings\n", 1)[1].split("\n## ", 1)[0]


def test_the_fastest_drafter_and_its_speedup_come_first(tmp_path: Path) -> None:
    shutil.copytree(FIXTURES / "simulated", tmp_path / "simulated")
    found = find_records([tmp_path])
    by = {
        (r.conditions.drafter, r.conditions.k): r.measurements[0].metrics.decode_tps
        for _, r in found
    }
    best = max((key for key in by if key[0] != "none"), key=lambda key: by[key])
    ratio = by[best] / by[("none", None)]
    findings = _findings(tmp_path)
    assert f"fastest `{best[0]}` k={best[1]}, **{ratio:.2f}×** faster than no drafter" in findings
    assert "[table](#decode-speed-by-drafter)" in findings and "**simulated**" in findings


def test_refused_partial_and_contaminated_figures_are_said(tmp_path: Path) -> None:
    for folder in ("measured", "refused"):
        shutil.copytree(FIXTURES / folder, tmp_path / folder)
    path = next((tmp_path / "measured").rglob("result.json"))
    record = json.loads(path.read_text())
    record["measurements"][0]["contaminated"] = True
    path.write_text(json.dumps(record))
    findings = _findings(tmp_path)
    assert "1 run(s) refused [list](#runs-that-did-not-complete)" in findings
    assert "1 figure(s) **contaminated**" in findings
    assert "partial" not in findings  # no run stopped part-way here
