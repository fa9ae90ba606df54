"""reports/ holds the committed output of every study on the simulator; it must be current."""

from __future__ import annotations

import json
import os
import subprocess
import sys
from pathlib import Path

import pytest

REPO = Path(__file__).resolve().parents[1]


@pytest.mark.slow
def test_committed_study_reports_are_up_to_date() -> None:
    done = subprocess.run(
        ["bash", str(REPO / "scripts" / "regenerate-reports"), "--check"],
        cwd=REPO,
        env={**os.environ, "PYTHON": sys.executable},
        capture_output=True,
        text=True,
        timeout=600,
        check=False,
    )
    assert done.returncode == 0, done.stderr


def test_every_experiment_has_a_committed_report_that_says_where_its_figures_come_from() -> None:
    """A study on the simulator opens with the simulated banner; a study measured on a real engine
    (its records say `source: measured`, cpu_real_pair) must not carry it."""
    for experiment in sorted((REPO / "experiments").glob("*.yaml")):
        report = REPO / "reports" / experiment.stem / "measurements.md"
        assert report.is_file(), f"no {report}: run scripts/regenerate-reports"
        sources = {
            json.loads(p.read_text())["conditions"]["source"]
            for p in report.parent.glob("*/result.json")
        }
        simulated = report.read_text().startswith("> **Simulated.**")
        assert simulated == (sources == {"simulated"}), (experiment.stem, sources)
        assert (report.parent / "report.html").is_file()


def test_a_study_that_cites_figures_shows_them_beside_its_runs() -> None:
    text = (REPO / "reports" / "spark_fp8_mtp_dspark" / "measurements.md").read_text()
    section = text.split("## Published figures", 1)[1].split("\n## ", 1)[0]
    assert "ratio (run / cited)" in section and "unfair" in section and "No run has" in section
