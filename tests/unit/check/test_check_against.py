"""Cited figures against runs: the runs that match, the closest ones with what differs, the
conditions no run has, and the reproduction ratio."""

from __future__ import annotations

from pathlib import Path
from typing import Any

import pytest
from checkhelp import make_figure, make_run

from specexp.check.against import cite, ratio
from specexp.check.runs import runs_of


@pytest.fixture(scope="module")
def runs(sim_results: list[tuple[Path, dict[str, Any]]]) -> list[Any]:
    return runs_of(sim_results)


def test_a_cited_figure_finds_its_simulated_run_and_the_ratio(runs: list[Any]) -> None:
    fig = make_figure("a", "e2e_tps", 47.1, drafter="dspark", k=7)
    c = cite(fig, runs)
    assert len(c.matches) == 1 and not c.closest and not c.missing and not c.findings
    (m,) = c.matches
    assert m.run.origin == "simulated" and m.run.conditions.drafter == "dspark"
    assert m.ratio == pytest.approx(m.value / 47.1)
    assert m.comparison.stands_in == ("runtime", "runtime_version")  # vllm vs the simulator
    assert m.comparison.verdict == "unverifiable"  # the figure does not state e.g. kv_cache_dtype
    assert "kv_cache_dtype" in {u.condition for u in m.comparison.unknown}


def test_no_match_gives_the_closest_runs_and_what_differs(runs: list[Any]) -> None:
    fig = make_figure("a", "e2e_tps", 30.0, quantization="nvfp4", drafter="dspark", k=7)
    c = cite(fig, runs)
    assert not c.matches and c.closest
    for m in c.closest:
        assert {d.condition for d in m.comparison.confounders} == {"quantization"}
    assert c.missing == ()  # some run has nvfp4, some run has dspark: just not together
    (f,) = c.findings
    assert f.rule == "no_matching_run" and f.severity == "info"


def test_the_conditions_no_run_has_are_named(runs: list[Any]) -> None:
    fig = make_figure("a", "e2e_tps", 30.0, hardware="h100", concurrency=3)
    c = cite(fig, runs)
    assert ("hardware", "h100") in c.missing and ("concurrency", 3) in c.missing
    assert "no run has hardware = h100" in c.findings[0].found


def test_unstated_conditions_on_which_matches_differ_are_named(runs: list[Any]) -> None:
    fig = make_figure(
        "a",
        "ttft_s",
        1.0,
        drop=("prompt_tokens", "cache", "concurrency", "drafter", "k"),
        quantization="fp8",
    )
    c = cite(fig, runs)
    assert len(c.matches) > 1
    assert "prompt_tokens" in dict(c.unsettled)


def test_a_measured_run_must_match_the_runtime(runs: list[Any]) -> None:
    run = next(r for r in runs if r.conditions.drafter == "dspark")
    measured = make_run(
        "m",
        {**run.conditions.model_dump(), "source": "measured", "runtime": "sglang"},
        run.metrics.model_dump(),
    )
    c = cite(make_figure("a", "e2e_tps", 47.1, drafter="dspark", k=7, runtime="vllm"), measured)
    assert not c.matches and [d.condition for d in c.closest[0].comparison.confounders] == [
        "runtime"
    ]


def test_runs_without_the_metric_are_not_candidates(runs: list[Any]) -> None:
    c = cite(make_figure("a", "kv_cache_tokens", 1.0, hardware="cpu"), [])
    assert not c.matches and not c.closest and "no run has" in c.findings[0].found


@pytest.mark.parametrize(
    ("measured", "cited", "expected"),
    [
        (40.0, 50.0, 0.8),
        (1.0, 0.0, None),
        ((0.8, 0.6), (0.8, 0.3), (1.0, 2.0)),
        ((0.8,), (0.8, 0.3), None),
        (True, True, None),
    ],
)
def test_ratio(measured: Any, cited: Any, expected: Any) -> None:
    assert ratio(measured, cited) == (pytest.approx(expected) if expected is not None else None)


def test_closest_runs_carry_no_reproduction_ratio(runs: list[Any]) -> None:
    c = cite(make_figure("a", "e2e_tps", 30.0, quantization="nvfp4", drafter="dspark", k=7), runs)
    assert c.closest and all(m.ratio is None for m in c.closest)
