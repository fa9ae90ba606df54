"""The answer checks against a real llama-server on the CPU (docs/answers.md): sampled outputs at
temperatures 0.7 and 1.0 with and without a noisy draft model (partial acceptance, so the verify
path runs), and lm-evaluation-harness's scores of the local task, paired per item."""

from __future__ import annotations

import json
import os
import subprocess
from pathlib import Path

import pytest

from specexp.stats.sampled import DIFFERS
from tests.integration.conftest import results, run_specexp

pytestmark = pytest.mark.slow

TINY = (
    "runtime=llamacpp",
    "model=tiny",
    "quantization=f32",
    "hardware=cpu",
    "runtime.extra_args=[-t,2]",
    "drafter=draft_model",
    "draft_model=tiny-draft-noisy",
    "k=3",
)


def lines_of(done: subprocess.CompletedProcess[str]) -> list[str]:
    return [x for x in done.stdout.splitlines() if x.startswith("answers: ")]


@pytest.fixture(scope="module")
def sampled(llama_server: Path, tmp_path_factory: pytest.TempPathFactory):
    out = tmp_path_factory.mktemp("sampled")
    done = run_specexp(
        out,
        *TINY,
        "workload=lossless_sampling",
        "workload.samples=250",
        "workload.temperature=0.7,1.0",
    )
    assert done.returncode == 0, done.stderr
    return out, done


def test_an_honest_engine_is_not_called_lossy_at_either_temperature(sampled) -> None:
    out, done = sampled
    lines = lines_of(done)
    assert len(lines) == 2 and all("draft_model k=3" in x for x in lines), done.stdout
    rows = [json.loads(x) for x in (out / "results.jsonl").read_text().splitlines()]
    drafted = [r for r in rows if r["conditions"]["drafter"] == "draft_model"]
    assert sorted(r["conditions"]["temperature"] for r in drafted) == [0.7, 1.0]
    for r in drafted:
        j = r["judgments"]
        assert j["sampled_verdict"] != DIFFERS and j["sampled_p_value"] >= 0.01, j
        assert j["sampled_detectable_shift"] is not None
        assert 0.0 < r["metrics"]["acceptance_rate"] < 1.0  # rejection sampling really ran


def test_each_completion_keeps_its_seed_and_the_servers_token_ids(sampled) -> None:
    out, _ = sampled
    seeds: dict[str, set[int]] = {}
    for record in results(out):
        (m,) = record["measurements"]
        assert len(m["sampled"]) == 4 * 250
        for s in m["sampled"].values():
            # 4 generated tokens read back by llama-server's tokenizer: ids, at most 4 (a read-back
            # may merge pieces: a fixed function of the text, as the test needs)
            assert 1 <= len(s["tokens"]) <= 4 and all(t.isdigit() for t in s["tokens"])
        seeds.setdefault(record["conditions"]["drafter"], set()).update(
            s["seed"] for s in m["sampled"].values()
        )
    assert not seeds["none"] & seeds["draft_model"]  # independent draws: no seed shared


@pytest.mark.skipif(
    not (
        os.environ.get("SPECEXP_LM_EVAL")
        or Path("~/.cache/specexp/lm-eval/0.4.13/venv/bin/lm_eval").expanduser().is_file()
    ),
    reason="lm-eval is not installed (scripts/install-lm-eval.sh)",
)
def test_lm_eval_scores_pair_per_item_with_mcnemar_and_a_bootstrap_interval(
    llama_server: Path, tmp_path: Path
) -> None:
    done = run_specexp(tmp_path, *TINY, "workload=task_scores", "workload.task.items=40")
    assert done.returncode == 0, done.stderr
    (line,) = lines_of(done)
    assert "McNemar p" in line and "40 items" in line
    records = {r["conditions"]["drafter"]: r for r in results(tmp_path)}
    assert sorted(records) == ["draft_model", "none"]
    for r in records.values():
        assert r["status"] == "ok", r["error"]
        (m,) = r["measurements"]
        assert len(m["task_items"]) == 40 and m["conditions"]["eval_items"] == 40
        assert m["conditions"]["task"] == "specexp_arithmetic"
        assert m["task"]["filter"] == "strict-match" and "--log_samples" in m["task"]["argv"]
        first = m["task_items"]["specexp_arithmetic/0"]
        assert first["target"].split("#### ")[1].lstrip("-").isdigit()
    assert records["draft_model"]["measurements"][0]["metrics"]["acceptance_rate"] > 0
    rows = [json.loads(x) for x in (tmp_path / "results.jsonl").read_text().splitlines()]
    (judged,) = [r["judgments"] for r in rows if r["conditions"]["drafter"] == "draft_model"]
    low, high = judged["score_interval"]
    assert low <= judged["score_difference"] <= high and 0 <= judged["mcnemar_p"] <= 1
    assert judged["score_verdict"] in ("within noise", "differs")
