"""Numbers side by side: tables whose rows differ in more than the varied axis are named; tables
that vary only their axis say nothing; the report's one call returns plain data."""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any

from checkhelp import make_run

from specexp.check import (
    comparability_md,
    load_figures,
    published_figures_md,
    report_findings,
    side_by_side,
)
from specexp.check.runs import runs_of

REPO = Path(__file__).resolve().parents[3]

COND: dict[str, Any] = {
    "hardware": "dgx_spark",
    "gpu_count": 1,
    "gpu_shared": False,
    "gpu_memory_utilization": 0.9,
    "model": "qwen3.8-27b",
    "quantization": "fp8",
    "kv_cache_dtype": "auto",
    "runtime": "sim",
    "runtime_version": "specexp-sim 0.1.0",
    "drafter": "none",
    "k": None,
    "drafter_config": None,
    "workload": "fresh_generation@1",
    "prompt_tokens": 32,
    "output_tokens": 400,
    "ignore_eos": True,
    "concurrency": 1,
    "cache": "cold",
    "prefix_caching": True,
    "thinking": False,
    "temperature": 0.0,
    "repeats": 1,
    "source": "simulated",
}


def line(run_id: str, decode: float = 7.0, **over: Any) -> Any:
    """One run's measurement."""
    (run,) = make_run(run_id, {**COND, **over}, {"decode_tps": decode, "e2e_tps": decode * 0.98})
    return run


def test_a_table_varying_only_its_axis_says_nothing() -> None:
    rows = [line("a"), line("b", drafter="mtp", k=3), line("c", drafter="dspark", k=7)]
    report = report_findings(rows, tables=[side_by_side("fresh", rows, vary=("drafter",))])
    assert report.comparability == () and report.implausible == () and report.findings == ()


def test_a_second_varying_condition_is_named_with_its_values() -> None:
    rows = [line("a"), line("b", drafter="mtp", k=3, quantization="nvfp4")]
    report = report_findings(rows, tables=[side_by_side("fresh", rows, vary=("drafter",))])
    (f,) = report.comparability
    assert (
        f.rule == "table_confounder" and f.condition == "quantization" and f.severity == "warning"
    )
    assert "fp8 (1 row)" in f.found and "nvfp4 (1 row)" in f.found and f.figures == ("a", "b")
    assert "fresh" in f.expected


def test_a_condition_that_cannot_move_the_metrics_shown_is_not_named() -> None:
    rows = [line("a", gpu_memory_utilization=0.44), line("b", gpu_memory_utilization=0.9)]
    assert (
        report_findings(
            rows, tables=[side_by_side("t", rows, metrics=("decode_tps",))]
        ).comparability
        == ()
    )


def test_unknown_conditions_and_mixed_sources_are_named() -> None:
    rows = [
        line("a"),
        line("b", runtime_version=None),
        line("c", source="measured", runtime_version="x"),
    ]
    found = {
        f.rule: f for f in report_findings(rows, tables=[side_by_side("t", rows)]).comparability
    }
    assert found["table_unknown"].figures == ("b",)
    assert found["table_mixed_source"].found == "measured, simulated"
    assert found["table_confounder"].condition == "runtime_version"


def test_default_tables_are_one_per_workload_varying_the_drafter_and_workload_axes() -> None:
    rows = [
        line("a"),
        line("b", drafter="mtp", k=3),
        line("c", workload="edit_heavy@1", prompt_tokens=6387),
        line("d", workload="edit_heavy@1", prompt_tokens=6387, concurrency=8),
    ]
    assert report_findings(rows).comparability == ()
    rows.append(line("e", workload="edit_heavy@1", prompt_tokens=6387, hardware="rtx_a6000"))
    assert [f.condition for f in report_findings(rows).comparability] == ["hardware"]


def test_report_findings_with_cited_figures_is_plain_data(
    sim_results: list[tuple[Path, dict[str, Any]]],
) -> None:
    figures = load_figures(REPO / "experiments" / "figures" / "blog_posts.yaml")
    report = report_findings(runs_of(sim_results), figures)
    assert report.runs and report.runs >= len(sim_results)
    data = report.to_json()
    json.dumps(data)
    assert {"comparisons", "figures", "findings"} <= set(data)
    by_id = {f["id"]: f for f in data["figures"]}
    assert by_id["a-fp8-dspark-k7"]["against"]["matches"][0]["ratio"] > 0
    assert {f.rule for f in report.implausible} == {"implausible"}  # the forum figure, not a run
    md = published_figures_md(report)
    assert md.startswith("## Published figures") and "a-fp8-dspark-k7" in md and "ratio" in md
    assert "No run has" in md
    assert comparability_md(report).startswith("## Comparability")
    assert "implausible" in comparability_md(report)


def test_an_experiment_names_its_cited_figures(tmp_path: Path) -> None:
    from specexp.check import figures_of_experiment

    (tmp_path / "cited.yaml").write_text(
        (REPO / "experiments" / "figures" / "blog_posts.yaml").read_text(encoding="utf-8"),
        encoding="utf-8",
    )
    exp = tmp_path / "x.yaml"
    exp.write_text(
        "# @package _global_\nexperiment: x\ncitations: [cited.yaml]\nfigures:\n"
        "  own:\n    value: 5\n    unit: tok/s\n    metric: decode_tps\n    source: us\n",
        encoding="utf-8",
    )
    figures = figures_of_experiment(exp)
    assert figures is not None and {"own", "a-fp8-dspark-k7"} <= set(figures.figures)
    (tmp_path / "plain.yaml").write_text("experiment: y\n", encoding="utf-8")
    assert figures_of_experiment(tmp_path / "plain.yaml") is None
