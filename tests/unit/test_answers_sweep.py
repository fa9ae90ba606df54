"""The answer checks end to end on the simulator's toy sampler (docs/answers.md): a sweep of a
planted fault and of an honest engine, each against its baseline, judged when the records are
read, in results.jsonl, the report's section and the lines the sweep prints; and the simulator
without the toy sampler refuses the check at plan time, in one line."""

from __future__ import annotations

import json
from collections.abc import Callable
from pathlib import Path
from typing import Any

import pytest

from specexp.stats.sampled import DIFFERS


@pytest.fixture(scope="module")
def toy_sweep(tmp_path_factory: pytest.TempPathFactory, specexp_cli: Callable[..., Any]):
    sweep = tmp_path_factory.mktemp("answers") / "sweep"
    proc = specexp_cli(
        "-m",
        "runtime.toy_sampler=accept_greedy,lossless",
        "drafter=ngram",
        "k=3",
        "workload=lossless_sampling",
        "workload.samples=300",
        f"hydra.sweep.dir={sweep}",
    )
    assert proc.returncode == 0, proc.stderr
    return sweep, proc


def _judged(sweep: Path) -> dict[str, dict[str, Any]]:
    rows = [json.loads(x) for x in (sweep / "results.jsonl").read_text().splitlines()]
    by_id = {r["run_id"]: r for r in rows}
    out = {}
    for record in (json.loads(p.read_text()) for p in sweep.rglob("result.json")):
        fault = record["provenance"]["config"]["runtime"]["toy_sampler"]
        if record["conditions"]["drafter"] == "ngram":
            out[fault] = by_id[record["run_id"]]["judgments"]
    return out


def test_the_planted_fault_differs_and_the_honest_engine_does_not(toy_sweep) -> None:
    sweep, proc = toy_sweep
    judged = _judged(sweep)
    assert judged["accept_greedy"]["sampled_verdict"] == DIFFERS
    assert judged["accept_greedy"]["sampled_p_value"] < 0.01
    assert judged["lossless"]["sampled_verdict"] != DIFFERS
    lines = [x for x in proc.stdout.splitlines() if x.startswith("answers: ")]
    assert len(lines) == 2 and sum(": differs (" in x for x in lines) == 1, proc.stdout


def test_the_report_has_the_answers_section_and_a_finding(toy_sweep) -> None:
    sweep, _ = toy_sweep
    text = (sweep / "measurements.md").read_text()
    assert "## Answers with and without the drafter" in text
    findings = text.split("## Findings", 1)[1].split("\n## ", 1)[0]
    assert "sampled outputs against the baseline's: **differs**" in findings


def test_the_simulator_without_its_toy_sampler_refuses(
    tmp_path: Path, specexp_cli: Callable[..., Any]
) -> None:
    proc = specexp_cli("workload=lossless_sampling", f"hydra.run.dir={tmp_path}")
    assert proc.returncode == 1, proc.stderr  # a single run that did not complete
    (record,) = [json.loads(p.read_text()) for p in tmp_path.rglob("result.json")]
    assert record["status"] == "refused" and record["error"]["kind"] == "no_text"
    assert "run it on a real engine" in record["error"]["message"]
