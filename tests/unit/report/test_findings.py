"""The report's findings are written from the records by rules: the fastest configuration and its
speedup, where a larger k gives speed back, and what is refused, partial or contaminated."""

from __future__ import annotations

import json
import re
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


def test_a_slowdown_is_said_as_one_with_the_cost_of_a_pass(tmp_path: Path) -> None:
    """When every drafter is slower, the finding says no drafter is fastest and by how much the
    best is slower, and gives the cost of its pass: tokens_per_pass / speedup decode steps."""
    shutil.copytree(FIXTURES / "simulated", tmp_path / "simulated")
    paths = sorted(tmp_path.rglob("result.json"))
    records = {p: json.loads(p.read_text()) for p in paths}
    base = next(
        r["measurements"][0]["metrics"]["decode_tps"]
        for r in records.values()
        if r["conditions"]["drafter"] == "none"
    )
    per_pass = {}
    for p, r in records.items():
        if r["conditions"]["drafter"] == "none":
            continue
        m = r["measurements"][0]
        m["metrics"]["decode_tps"] = base * 0.8
        m["samples"].pop("decode_tps", None)
        m["spread"].pop("decode_tps", None)
        per_pass[(r["conditions"]["drafter"], r["conditions"]["k"])] = m["metrics"][
            "tokens_per_pass"
        ]
        p.write_text(json.dumps(r))
    findings = _findings(tmp_path)
    assert "**no drafter is fastest**: the best, " in findings
    assert "is **1.25× slower** (0.80×)" in findings
    costs = {
        f"{tpp:.2f} tokens per pass at {tpp / 0.8:.2f} plain decode steps a pass"
        for tpp in per_pass.values()
    }
    assert any(c in findings for c in costs), findings
    assert "faster than no drafter" not in findings


def test_the_simulated_sources_short_window_is_computed_from_the_records(tmp_path: Path) -> None:
    """The sentence on how many drafts a short window holds names this sweep's shortest window:
    its requested output times its concurrency, over its tokens per pass."""
    shutil.copytree(FIXTURES / "simulated", tmp_path / "simulated")
    paths = sorted(tmp_path.rglob("result.json"))
    for path in paths:  # a 200-token workload: the sentence must not say 400
        record = json.loads(path.read_text())
        record["conditions"]["output_tokens"] = 200
        for m in record["measurements"]:
            m["conditions"]["output_tokens"] = 200
        path.write_text(json.dumps(record))
    windows = []
    for _, r in find_records([tmp_path]):
        for m in r.measurements:
            if r.conditions.drafter != "none" and m.metrics.tokens_per_pass:
                tokens = 200 * (m.conditions.concurrency or 1)
                windows.append((tokens, tokens / m.metrics.tokens_per_pass))
    tokens, drafts = min(windows)
    text = render_markdown(build_report(find_records([tmp_path]), tmp_path))
    assert f"(the shortest here: {tokens:,} tokens, ~{drafts:,.0f} drafts)" in text
    assert "400 tokens" not in text


SPARK = Path(__file__).resolve().parents[3] / "reports" / "spark_fp8_mtp_dspark"


def test_a_studys_findings_are_grouped_by_what_differs(tmp_path: Path) -> None:
    """The Spark study: each workload's concurrencies in one line, each setup said once with one
    headline metric, and the condition all groups but one share said once, above them."""
    shutil.copytree(SPARK, tmp_path / "spark", ignore=shutil.ignore_patterns("*.md", "*.html"))
    findings = _findings(tmp_path / "spark")
    top = [x for x in findings.splitlines() if x.startswith("- ")]
    assert top[0] == "- Unless a line says otherwise: gpu_memory_utilization 0.9"
    assert sum("gpu_memory_utilization" in x for x in top) == 2  # the rule, and the 0.44 setup
    series = [x for x in top if "fastest by concurrency" in x]
    assert len(series) == 2 and all(x.count("fastest by concurrency") == 1 for x in series)
    fresh = next(x for x in series if x.startswith("- `fresh_generation v1`,"))
    # concurrency 1 is said once, by its single-stream table's decode_tps, not also by aggregate_tps
    assert fresh.count(" at 1 (") == 1 and "at 1 (**2.35×** in `decode_tps`)" in fresh
    assert "4 (**1.97×** in `aggregate_tps`); `mtp` k=3 at 16 (**1.80×**), 64 (**1.43×**)" in fresh
    # the group's sub-lines: the best k of each drafter, and where an arm stops paying
    subs = findings.split(fresh, 1)[1].split("\n- ", 1)[0]
    assert "`mtp` pays most at k=8 at concurrency 1 (1.91×; k=15: 1.35×)" in subs
    assert "stops paying: `dspark` k=7 at concurrency 64 (0.79×)" in subs
    # and where between the two concurrencies that bracket it: log-linear from 1.71x at 16 to 0.79x
    near = re.search(
        r"`dspark` k=7 at concurrency 64 \(0\.79×\), crossing near ([\d.]+) \(log-linear from 16, (1\.\d\d)×\)",
        subs,
    )
    assert near is not None and 16 < float(near.group(1)) < 64
    setups = [x.split(":", 1)[0] for x in top if " at concurrency " in x.split(":", 1)[0]]
    assert len(setups) == len(set(setups)) == 2  # edit_heavy, and fresh_generation at 0.44
    assert len(top) <= 8


def test_a_drafter_that_never_pays_is_not_said_to_pay_most(tmp_path: Path) -> None:
    """Across k, a drafter slower than none at every k 'loses least' at its best k."""
    shutil.copytree(
        Path(__file__).resolve().parents[3] / "reports" / "cpu_real_pair",
        tmp_path / "pair",
        ignore=shutil.ignore_patterns("*.md", "*.html", "charts"),
    )
    findings = _findings(tmp_path / "pair")
    assert "`draft_model` loses least at k=1 at concurrency 1 (0.64×; k=16: 0.24×)" in findings
    assert "`draft_model` pays most at k=1" not in findings
