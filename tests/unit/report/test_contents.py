"""The report is its registered sections in order (specexp/report/contents.py): a new section is
one module and one entry, and the page follows the entries."""

from __future__ import annotations

import shutil
from pathlib import Path

import pytest

from specexp.record import find_records
from specexp.report import build, contents
from specexp.report.blocks import Heading, Paragraph
from specexp.report.markdown import render_markdown

FIXTURES = Path(__file__).resolve().parents[2] / "fixtures" / "records"


def _report(tmp_path: Path) -> str:
    if not (tmp_path / "simulated").exists():
        shutil.copytree(FIXTURES / "simulated", tmp_path / "simulated")
    return render_markdown(build.build_report(find_records([tmp_path / "simulated"]), tmp_path))


def _headings(text: str) -> list[str]:
    return [line for line in text.splitlines() if line.startswith("## ")]


def test_a_registered_section_appears_where_its_entry_stands(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    before = _headings(_report(tmp_path))
    extra = contents.Section(
        "notes", lambda r: [Heading("Notes"), Paragraph(f"{len(r.rows)} rows read.")]
    )
    at = [s.name for s in contents.CONTENTS].index("definitions")
    entries = (*contents.CONTENTS[:at], extra, *contents.CONTENTS[at:])
    monkeypatch.setattr(build, "CONTENTS", entries)
    after = _headings(_report(tmp_path))
    assert after == [
        *before[: before.index("## Metric definitions")],
        "## Notes",
        *before[before.index("## Metric definitions") :],
    ]


def test_the_page_follows_the_order_of_the_entries(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    names = [s.name for s in contents.CONTENTS]
    swapped = list(contents.CONTENTS)
    i, j = names.index("definitions"), names.index("runs")
    swapped[i], swapped[j] = swapped[j], swapped[i]
    monkeypatch.setattr(build, "CONTENTS", tuple(swapped))
    headings = _headings(_report(tmp_path))
    assert headings.index("## Runs") < headings.index("## Metric definitions")
