"""A metric is described once (specexp/spec/metric_defs.py): its relevance family, the report tables
it is a column of and whether `--compare` judges it are read from its entry, not from lists kept
elsewhere."""

from __future__ import annotations

import dataclasses
import shutil
from pathlib import Path

import pytest

from specexp.check.relevance import FAMILIES, METRIC_FAMILY
from specexp.record import find_records
from specexp.report.build import build_report
from specexp.report.markdown import render_markdown
from specexp.report.sweep_diff import HEADLINE
from specexp.spec import metric_defs
from specexp.spec.metric_defs import METRICS

FIXTURES = Path(__file__).resolve().parents[1] / "fixtures" / "records"


def test_every_metric_belongs_to_one_family_that_says_what_moves_it() -> None:
    assert set(METRIC_FAMILY) == set(METRICS)
    for m in METRICS.values():
        assert m.family in FAMILIES, f"{m.name}: family {m.family!r} is not one of {list(FAMILIES)}"
    assert all(f.metrics for f in FAMILIES.values()), "a family without metrics"


def test_compare_judges_the_metrics_whose_entry_says_so_and_each_has_a_direction() -> None:
    assert HEADLINE == tuple(m.name for m in METRICS.values() if m.compared)
    assert all(METRICS[name].better in ("higher", "lower") for name in HEADLINE)


def _decode_table_header(tmp_path: Path) -> str:
    shutil.copytree(FIXTURES / "simulated", tmp_path / "simulated")
    text = render_markdown(build_report(find_records([tmp_path / "simulated"]), tmp_path))
    section = text.split("## Decode speed by drafter", 1)[1]
    return next(line for line in section.splitlines() if line.startswith("| drafter"))


def test_a_metric_entry_alone_puts_it_in_a_report_table(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    before = _decode_table_header(tmp_path / "before")
    assert "TPOT" not in before
    tpot = dataclasses.replace(METRICS["tpot_s"], shown_in=("decode",))
    monkeypatch.setitem(metric_defs.METRICS, "tpot_s", tpot)
    after = _decode_table_header(tmp_path / "after")
    assert "TPOT" in after and after.count("|") == before.count("|") + 1
