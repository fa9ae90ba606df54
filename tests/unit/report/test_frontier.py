"""The frontier of a concurrency sweep: aggregate tok/s per GPU against each user's tok/s, across every
drafter, k and concurrency of one setup, computed on the committed records of the real llama-server
serving the trained Qwen2.5-Coder pair (reports/cpu_real_pair)."""

from __future__ import annotations

from pathlib import Path

from specexp.record import find_records
from specexp.report.blocks import Chart, Paragraph
from specexp.report.frontier import _points, frontier_blocks, on_frontier
from specexp.report.tables import rows_of

REPO = Path(__file__).resolve().parents[3]
REAL = REPO / "reports/cpu_real_pair"


def test_a_point_beaten_on_both_counts_is_off_the_frontier() -> None:
    points = [(1.0, 10.0), (2.0, 8.0), (1.5, 5.0), (3.0, 1.0), (2.0, 8.0)]
    # (1.5, 5) is beaten by (2, 8) on both; equal points stay on it together
    assert on_frontier(points) == [True, True, False, True, True]
    assert on_frontier([(1.0, 1.0)]) == [True]


def test_the_real_servers_frontier_is_every_point_nothing_beats() -> None:
    found = find_records([REAL])
    rows, _ = rows_of(found, REAL)
    members = [
        r
        for r in rows
        if r.conditions.workload == "code_with_tests@1"
        and r.metrics.per_stream_tps
        and r.metrics.aggregate_tps
        and r.conditions.concurrency in (1, 2, 4)
        and not r.conditions.thinking
    ]
    assert {str(r.conditions.drafter) for r in members} >= {"none", "ngram"}
    points = _points(members, ())
    front = [p for p in points if p["frontier"]]
    off = [p for p in points if not p["frontier"]]
    assert front and off
    for p in off:  # beaten on both counts by some point of the frontier
        assert any(q["per_user"] >= p["per_user"] and q["per_gpu"] >= p["per_gpu"] for q in front)
    for p in front:  # nothing beats it on both
        assert not any(
            q["per_user"] > p["per_user"] and q["per_gpu"] > p["per_gpu"] for q in points
        )
    # the report says who holds it, and draws it
    said, chart = frontier_blocks(members, "frontier-test")
    assert isinstance(said, Paragraph) and isinstance(chart, Chart)
    for arm in {p["arm"] for p in front}:
        assert arm in said.text
    for arm in {p["arm"] for p in off} - {p["arm"] for p in front}:
        assert arm not in said.text
    layers = chart.spec["layer"]
    assert len(layers) == 2 and layers[1]["transform"] == [{"filter": "datum.frontier"}]


def test_a_single_point_draws_no_frontier() -> None:
    found = find_records([REAL])
    rows, _ = rows_of(found, REAL)
    one = [r for r in rows if r.metrics.per_stream_tps and r.metrics.aggregate_tps][:1]
    assert frontier_blocks(one, "one") == []
