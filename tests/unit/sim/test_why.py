"""The simulator explains itself: every step's time is split by what bounds it (the weights' read,
the matmuls' compute, the KV cache's read, attention's compute, the drafter, fixed costs), a
window's split is the engine's time over it, and the report names the largest as the figure's why."""

from __future__ import annotations

from pathlib import Path

import pytest

from specexp.record import find_records
from specexp.report.build import build_report
from specexp.report.markdown import render_markdown
from specexp.run.compose import build_spec
from specexp.runtimes.sim.driver import SimRuntime
from specexp.workloads.driver import drive
from tests.conftest import run_specexp

SPARK = ["hardware=dgx_spark", "model=qwen3.8-27b", "quantization=fp8", "workload.warmup=0"]


def shares(tmp_path: Path, *overrides: str, phase: str = "decode") -> dict[int, dict[str, float]]:
    """By concurrency, each cost's share of the engine's time over the window's `phase` steps."""
    spec = build_spec([*SPARK, "workload.repeats=1", *overrides])
    runtime = SimRuntime(spec, tmp_path)
    runtime.start()
    out = {}
    for window in drive(runtime, spec.workload, marker="t"):
        assert window.costs is not None
        costs = window.costs[phase]
        total = sum(costs.values())
        out[window.point.concurrency] = {k: v / total for k, v in costs.items()}
    return out


def test_one_stream_reads_weights_and_many_streams_compute(tmp_path: Path) -> None:
    by_load = shares(
        tmp_path, "drafter=none", "workload=concurrency", "workload.concurrency=[1,64]"
    )
    assert max(by_load[1], key=by_load[1].__getitem__) == "weights_read"
    assert by_load[1]["weights_read"] > 0.8  # decode of one stream: the weights, every token
    # 64 streams share each read of the weights: their matmuls and KV reads take over
    assert by_load[64]["weights_read"] < 0.05
    assert by_load[64]["matmul_compute"] + by_load[64]["kv_read"] > 0.8


def test_a_deeper_mtp_draft_spends_more_of_the_time_drafting(tmp_path: Path) -> None:
    k3 = shares(tmp_path, "drafter=mtp", "k=3")[1]["drafter"]
    k15 = shares(tmp_path, "drafter=mtp", "k=15")[1]["drafter"]
    assert 0.2 < k3 < k15 < 0.9  # each draft token re-runs a layer and the full lm_head
    assert shares(tmp_path, "drafter=none")[1]["drafter"] == 0


def test_a_long_prompt_prefills_on_compute(tmp_path: Path) -> None:
    spec = build_spec(
        [
            *SPARK,
            "drafter=none",
            "workload=prefill_sweep",
            "workload.prompt_lengths=[16384]",
            "workload.repeats=1",
            "runtime.max_model_len=65536",
        ]
    )
    runtime = SimRuntime(spec, tmp_path)
    runtime.start()
    (window,) = drive(runtime, spec.workload, marker="t")
    assert window.costs is not None
    costs, decode = window.costs["prefill"], window.costs["decode"]
    compute = costs["matmul_compute"] + costs["attention_compute"]
    assert compute / sum(costs.values()) > 0.8
    assert sum(decode.values()) == 0  # max_tokens = 1: the prompt's last step gives the token
    # the engine's time over the window is its steps' time: the split adds up to it
    trace = window.traces[0]
    assert sum(costs.values()) == pytest.approx(trace.events[-1].t - trace.sent_at, rel=0.05)


@pytest.fixture(scope="module")
def report(tmp_path_factory: pytest.TempPathFactory) -> str:
    root = tmp_path_factory.mktemp("why") / "sweep"
    done = run_specexp("-m", "drafter=mtp", "k=3", f"hydra.sweep.dir={root}")
    assert done.returncode == 0, done.stderr
    return render_markdown(build_report(find_records([root]), root))


def test_every_simulated_figure_has_its_why_in_the_report(report: str) -> None:
    assert "- Why, as simulated: of the figures, 2 by reading the weights" in report
    section = report.split("## Why, as the simulator has it", 1)[1].split("\n## ", 1)[0]
    rows = [x for x in section.splitlines() if x.startswith("| no drafter") or "mtp" in x[:12]]
    assert len(rows) == 2 and all("reading the weights (" in x for x in rows)


def test_a_measured_report_claims_no_why() -> None:
    fixtures = Path(__file__).resolve().parents[2] / "fixtures" / "records" / "measured"
    text = render_markdown(build_report(find_records([fixtures]), fixtures))
    assert "Why, as" not in text
