"""Repeats across fresh server starts (`workload.server_starts`) on the simulator: each start a server
of its own with its own pace, every window marked with its start, both spreads and the intervals
over the starts in results.jsonl, the report and `--compare`; refused at plan time where specexp
cannot restart the server."""

from __future__ import annotations

import json
import re
import statistics
from pathlib import Path
from typing import Any

import pytest

from specexp.record import ResultLine, find_records, read_result_lines
from specexp.report.build import build_report
from specexp.report.markdown import render_markdown
from specexp.report.sweep_diff import deltas as compare_lines
from specexp.stats.bootstrap import metric_runs, spreads
from tests.conftest import run_specexp

SETUP = (
    "runtime.engine=llamacpp",  # the profile with a measured start_spread (H200)
    "hardware=h200",
    "model=qwen3-8b",
    "quantization=bf16",
    "workload.output_tokens=64",
)
STARTS = ("workload.server_starts=3", "workload.repeats=2")


def _sweep(root: Path, *args: str) -> list[dict[str, Any]]:
    done = run_specexp("-m", *SETUP, *args, f"hydra.sweep.dir={root}")
    assert done.returncode == 0, done.stdout + done.stderr
    return [json.loads(p.read_text()) for p in sorted(root.glob("*/result.json"))]


@pytest.fixture(scope="module")
def restarted(tmp_path_factory: pytest.TempPathFactory) -> Path:
    root = tmp_path_factory.mktemp("starts") / "sweep"
    _sweep(root, "drafter=none,ngram", "k=4", *STARTS)
    return root


def test_every_start_is_a_server_of_its_own_and_every_window_says_which(restarted: Path) -> None:
    for path in restarted.glob("*/result.json"):
        record = json.loads(path.read_text())
        [m] = record["measurements"]
        assert m["server_start"] == [0, 0, 1, 1, 2, 2]
        assert (m["conditions"]["repeats"], m["conditions"]["server_starts"]) == (6, 3)
        assert len(set(m["requests"])) == len(m["requests"]) == 6  # a start's requests its own
        assert record["provenance"]["engine_info"]["reused_server"] is False
        lines = (path.parent / "requests.jsonl").read_text().splitlines()
        assert {json.loads(x).get("server_start", 0) for x in lines} == {0, 1, 2}


def test_a_restart_moves_a_figure_more_than_one_server_s_windows_do(restarted: Path) -> None:
    # no drafter: a start's windows are the same steps at the same pace; each start its own pace
    [base] = [
        r
        for _, r in find_records([restarted])
        if r.conditions.drafter == "none"  # type: ignore[union-attr]
    ]
    m = base.measurements[0]
    decode = m.samples["decode_tps"]
    by_start = [decode[i : i + 2] for i in (0, 2, 4)]
    assert all(a == pytest.approx(b, rel=1e-9) for a, b in by_start)  # one server's windows agree
    firsts = sorted(a for a, _ in by_start)
    assert firsts[1] > firsts[0] * 1.001 and firsts[2] > firsts[1] * 1.001  # fresh starts do not
    s = spreads(metric_runs(m.samples, m.server_start, "decode_tps"))
    assert (
        s.within_server == pytest.approx(0, abs=1e-9)
        and s.across_starts is not None
        and s.across_starts > 0.005
    )


def test_one_start_runs_at_the_profile_s_figures(tmp_path: Path) -> None:
    [record] = _sweep(tmp_path / "one", "drafter=none", "workload.repeats=2")
    [m] = record["measurements"]
    assert m["server_start"] is None and m["conditions"]["server_starts"] == 1
    assert "start_pace" not in record["provenance"]["engine_info"]
    first, second = m["samples"]["decode_tps"]
    assert first == pytest.approx(second, rel=1e-9)  # one pace, no acceptance to draw


def test_results_lines_carry_the_windows_their_starts_and_intervals(restarted: Path) -> None:
    lines = read_result_lines(restarted / "results.jsonl")
    drafted = next(x for x in lines if x.conditions.drafter == "ngram")
    assert drafted.server_start == [0, 0, 1, 1, 2, 2]
    values = drafted.samples["decode_tps"]  # type: ignore[index]
    low, high = drafted.interval["decode_tps"]  # type: ignore[index]
    assert min(values) <= low <= drafted.metrics.decode_tps <= high <= max(values)  # type: ignore[union-attr]
    j = drafted.judgments
    assert j is not None and j.speedup_interval is not None
    assert j.speedup_interval[0] <= j.speedup_vs_baseline <= j.speedup_interval[1]  # type: ignore[operator]
    assert j.speedup_within_noise == (j.speedup_interval[0] <= 1 <= j.speedup_interval[1])


def test_the_report_says_which_spread_each_figure_carries(restarted: Path) -> None:
    text = render_markdown(build_report(find_records([restarted]), restarted))
    assert "## How sure the figures are" in text
    assert "- Across fresh server starts, figures moved by a median" in text
    assert "6 on 3 start(s)" in text
    assert "repeats 6 per figure, on 3 fresh server starts" in text
    assert "a bootstrap over its server starts" in text
    # the decode table's speedup and the findings' carry its interval
    decode = text.split("## Decode speed by drafter", 1)[1].split("\n## ", 1)[0]
    [row] = [line for line in decode.splitlines() if line.startswith("| ngram |")]
    assert re.search(r"\| \d\.\d\d× \\\[\d\.\d\d–\d\.\d\d\\\]", row), row
    assert re.search(r"\(\d\.\d\d× \[\d\.\d\d–\d\.\d\d\]\)|\*\* \[\d", text)


def test_one_server_s_figures_say_their_interval_does_not_cover_a_restart(tmp_path: Path) -> None:
    root = tmp_path / "one"
    _sweep(root, "drafter=none,ngram", "k=4", "workload.repeats=3")
    text = render_markdown(build_report(find_records([root]), root))
    assert "Every figure here ran on one server" in text
    assert "does not cover what restarting the server moves" in text
    assert "Across fresh server starts" not in text


def _line(template: ResultLine, values: list[float], starts: list[int] | None) -> ResultLine:
    metrics = template.metrics.model_copy(update={"decode_tps": statistics.median(values)})  # type: ignore[union-attr]
    return template.model_copy(
        update={
            "metrics": metrics,
            "samples": {"decode_tps": values},
            "server_start": starts,
            "spread": {"decode_tps": [min(values), max(values)]},
        }
    )


def test_compare_judges_a_pair_by_its_interval_not_by_overlapping_ranges(restarted: Path) -> None:
    template = read_result_lines(restarted / "results.jsonl")[0]
    before = _line(template, [100.0, 100.5, 99.5, 100.2, 99.8, 100.1, 99.9], None)
    # one fast window: the ranges overlap, yet the median is 4 % lower beyond what reruns move
    after = _line(template, [96.0, 95.5, 96.2, 95.8, 96.1, 95.9, 100.1], None)
    [delta] = [d for d in compare_lines(before, after) if d.metric == "decode_tps"]
    assert delta.verdict == "slower" and delta.noise_known
    # the same figures over five starts of one window each, one start 4 % off: within noise
    starts = [0, 1, 2, 3, 4]
    spread_out = _line(template, [100.0, 104.0, 99.5, 96.0, 100.2], starts)
    level = _line(template, [100.3, 99.0, 101.0, 100.0, 103.5], starts)
    [d2] = [d for d in compare_lines(spread_out, level) if d.metric == "decode_tps"]
    assert d2.verdict == "within noise"


def test_compare_reads_an_older_results_jsonl_by_its_spreads(restarted: Path) -> None:
    template = read_result_lines(restarted / "results.jsonl")[0]
    before = _line(template, [100.0, 100.5, 99.5, 100.2, 99.8, 100.1, 99.9], None).model_copy(
        update={"samples": None}
    )
    after = _line(template, [96.0, 95.5, 96.2, 95.8, 96.1, 95.9, 100.1], None).model_copy(
        update={"samples": None}
    )
    [delta] = [d for d in compare_lines(before, after) if d.metric == "decode_tps"]
    assert delta.verdict == "within noise"  # the (min-max) overlap it was written under


def test_a_server_specexp_did_not_start_cannot_be_restarted(tmp_path: Path) -> None:
    done = run_specexp(
        "runtime=openai",
        "runtime.url=http://127.0.0.1:9",
        "workload.server_starts=2",
        f"hydra.run.dir={tmp_path}",
    )
    assert done.returncode != 0
    [line] = [x for x in done.stderr.splitlines() if "workload.server_starts" in x]
    assert "cannot restart it" in line and "accepted: 1 with runtime.url" in line
