"""Where a drafter stops paying under concurrency, the findings say how far the crossing moves over
the repeats' spread, as they do in context depth: the arm's lowest speedup over the baseline's
highest crosses soonest, its highest over the baseline's lowest latest."""

from __future__ import annotations

import re
from pathlib import Path

from specexp.record import find_records
from specexp.report.tables import rows_of
from specexp.report.versus import speedup_bounds
from specexp.spec.vocabulary import Baselines
from specexp.stats.crossing import crossing, crossing_range
from tests.conftest import run_specexp


def test_the_concurrency_crossing_is_given_with_its_range_over_the_repeats(tmp_path: Path) -> None:
    done = run_specexp(
        "-m",
        "workload=fresh_generation",
        "workload.concurrency=[16,64]",
        "workload.output_tokens=200",
        "workload.repeats=3",
        "drafter=mtp",
        "k=8",
        f"hydra.sweep.dir={tmp_path}",
    )
    assert done.returncode == 0, done.stderr
    rows, _ = rows_of(find_records([tmp_path]), tmp_path)
    bases = Baselines(rows, lambda r: r.conditions)
    drafted = {r.conditions.concurrency: r for r in rows if r.conditions.drafter == "mtp"}
    points = {}
    for c, r in drafted.items():
        base = bases.of(r.conditions)
        assert base is not None
        ratio = r.metrics.aggregate_tps / base.metrics.aggregate_tps
        points[c] = (ratio, speedup_bounds(r, base, "aggregate_tps"))
    (x0, b0), (x1, b1) = points[16], points[64]
    assert x0 >= 1 > x1  # the simulated MTP k=8 pays at 16 streams, not at 64
    assert b0 is not None and b1 is not None and b0[0] <= x0 <= b0[1] and b1[0] <= x1 <= b1[1]
    early, late = crossing_range(16, b0, 64, b1)
    near = crossing(16, x0, 64, x1)
    assert early is not None and late is not None and 16 < early <= near <= late < 64
    report = (tmp_path / "measurements.md").read_text()
    said = re.search(
        r"crossing near ([\d.]+) .*?over the repeats' spread, ([\d.]+) to ([\d.]+)\)", report
    )
    assert said is not None
    assert [float(g) for g in said.groups()] == [
        float(f"{near:.3g}"),
        float(f"{early:.3g}"),
        float(f"{late:.3g}"),
    ]
