"""Where speculation stops paying as the context grows: `workload=context_depth` on the simulator
(an H200 fitted to measured step times, whose verify passes re-read the KV cache), each depth's
speedup over no drafter's at that depth, the crossing between the depths that bracket it, the
findings' line and the chart."""

from __future__ import annotations

import math
from pathlib import Path

import pytest

from specexp.record import find_records
from specexp.report.blocks import Chart
from specexp.report.depth import TITLE, depth_section, said, series
from specexp.report.tables import rows_of
from specexp.spec.vocabulary import Baselines
from tests.conftest import run_specexp

DEPTHS = (1024, 4096, 16384, 32768)


@pytest.fixture(scope="module")
def sweep(tmp_path_factory: pytest.TempPathFactory) -> Path:
    out = tmp_path_factory.mktemp("depth")
    done = run_specexp(
        "-m",
        "workload=context_depth",
        "hardware=h200",
        "model=qwen3-8b",
        "quantization=bf16",
        "drafter=none,eagle3",
        "k=3",
        f"workload.prompt_lengths=[{','.join(map(str, DEPTHS))}]",
        "workload.output_tokens=128",
        f"hydra.sweep.dir={out}",
    )
    assert done.returncode == 0, done.stderr
    return out


def test_each_depth_is_compared_with_no_drafter_at_that_depth(sweep: Path) -> None:
    rows, _ = rows_of(find_records([sweep]), sweep)
    assert sorted({r.conditions.prompt_tokens for r in rows}) == list(DEPTHS)
    bases = Baselines(rows, lambda r: r.conditions)
    for r in rows:
        if r.conditions.drafter != "none":
            base = bases.of(r.conditions)
            assert base is not None and base.conditions.prompt_tokens == r.conditions.prompt_tokens
    ((_, (arm,)),) = series(rows)
    by_depth = {
        (str(r.conditions.drafter), r.conditions.prompt_tokens): r.metrics.decode_tps for r in rows
    }
    for p in arm.points:
        assert p.speedup == pytest.approx(
            by_depth[("eagle3", p.depth)] / by_depth[("none", p.depth)]
        )


def test_the_simulated_verify_pass_costs_more_as_the_context_grows(sweep: Path) -> None:
    rows, _ = rows_of(find_records([sweep]), sweep)
    ((_, (arm,)),) = series(rows)
    speedups = [p.speedup for p in arm.points]
    assert speedups == sorted(speedups, reverse=True)  # falls at every step deeper
    assert speedups[0] > 1.5 and speedups[-1] < 1  # pays at 1k, loses at 32k


def test_the_crossing_is_placed_between_the_depths_that_bracket_it(sweep: Path) -> None:
    rows, _ = rows_of(find_records([sweep]), sweep)
    ((_, (arm,)),) = series(rows)
    at = next(i for i, p in enumerate(arm.points) if p.speedup < 1)
    before, after = arm.points[at - 1], arm.points[at]
    text = said(arm)
    assert f"between {before.depth:,} ({before.speedup:.2f}×) and {after.depth:,} tokens" in text
    near = float(text.split("crossing near ")[1].split(" ")[0].replace(",", ""))
    assert before.depth < near < after.depth
    # log-linear: the share of the way in log(depth) is the share of the way from the speedup to 1
    share = math.log(near / before.depth) / math.log(after.depth / before.depth)
    assert share == pytest.approx((before.speedup - 1) / (before.speedup - after.speedup), abs=1e-3)


def test_the_findings_and_the_section_say_it_and_draw_it(sweep: Path) -> None:
    report = (sweep / "measurements.md").read_text()
    findings = report[
        report.index("## Findings") : report.index("\n## ", report.index("## Findings") + 3)
    ]
    assert "by context depth: `eagle3` k=3 stops paying between 16,384" in findings
    assert "fastest `eagle3`" not in findings  # no line picks one depth's fastest
    assert f"## {TITLE}" in report
    rows, _ = rows_of(find_records([sweep]), sweep)
    decode = [r for r in rows if r.conditions.output_tokens != 1]
    charts = [b for b in depth_section(decode, {}) if isinstance(b, Chart)]
    (chart,) = charts
    drawn = chart.spec["layer"][0]["data"]["values"]
    assert sorted({p["prompt_tokens"] for p in drawn}) == list(DEPTHS)
    assert chart.spec["layer"][0]["encoding"]["x"]["scale"]["type"] == "log"
