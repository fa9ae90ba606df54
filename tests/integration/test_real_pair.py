"""Speculative decoding on trained weights, on a real llama-server on the CPU (docs/models.md):
Qwen2.5-Coder-1.5B-Instruct drafted by Qwen2.5-Coder-0.5B-Instruct, and n-gram lookup, on a
copy-edit of a real source file and on prose, with short outputs.

What a user relies on: acceptance is recorded per position and equals the server's own counts
(its /metrics deltas and each response's `timings.draft_n` / `draft_n_accepted`); copy-edits
accept more than prose; every speedup, of either sign, comes with what a pass cost; greedy outputs
are identical with and without drafting; the sampled-output test does not call the drafter lossy.
"""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any

import pytest

from specexp.models.gguf_config import hf_fields
from specexp.models.packaged import cached_file, is_fetched, packaged
from specexp.report import format as fmt
from specexp.spec.experiment import ModelSpec
from specexp.spec.options import load_option
from specexp.stats.sampled import DIFFERS
from tests.integration.conftest import results, run_specexp

pytestmark = pytest.mark.slow

PAIR = (
    "runtime=llamacpp",
    "hardware=cpu",
    "model=qwen2.5-coder-1.5b",
    "quantization=q4_k_m",
    "runtime.extra_args=[-t,2]",
)


@pytest.fixture(scope="module")
def weights() -> dict[str, Path]:
    """The fetched files (scripts/test fetches them: python -m specexp.models fetch --all)."""
    found = {}
    for name in ("qwen2.5-coder-1.5b", "qwen2.5-coder-0.5b", "smollm2-135m"):
        w = packaged(name)
        assert w is not None
        if not is_fetched(w):
            pytest.skip(f"{name} is not fetched: python -m specexp.models fetch --all")
        found[name] = cached_file(w)
    return found


@pytest.mark.parametrize("name", ["qwen2.5-coder-1.5b", "qwen2.5-coder-0.5b", "smollm2-135m"])
def test_each_model_file_says_what_its_weights_hold(weights: dict[str, Path], name: str) -> None:
    model = load_option(ModelSpec, "model", name, "model")
    read = hf_fields(weights[name])
    for field in (
        "num_hidden_layers",
        "hidden_size",
        "intermediate_size",
        "num_attention_heads",
        "num_key_value_heads",
        "head_dim",
        "vocab_size",
        "max_position_embeddings",
        "tie_word_embeddings",
    ):
        assert getattr(model, field) == read[field], (name, field, read[field])


def test_the_pair_shares_one_vocabulary(weights: dict[str, Path]) -> None:
    target = hf_fields(weights["qwen2.5-coder-1.5b"])["vocabulary"]
    draft = hf_fields(weights["qwen2.5-coder-0.5b"])["vocabulary"]
    assert target == draft and target["tokens"] == 151936


def _measured(out: Path) -> dict[tuple[str, str], dict[str, Any]]:
    """(workload name, drafter) -> the one measurement of that job."""
    found = {}
    for r in results(out):
        assert r["status"] == "ok", r.get("error")
        (m,) = r["measurements"]
        found[(m["conditions"]["workload"].split("@")[0], m["conditions"]["drafter"])] = m
    return found


@pytest.fixture(scope="module")
def greedy(llama_server: Path, weights: dict[str, Path], tmp_path_factory: pytest.TempPathFactory):
    out = tmp_path_factory.mktemp("real-pair")
    common = (*PAIR, "drafter=none,draft_model,ngram", "k=4", "workload.output_tokens=32")
    done = run_specexp(out, *common, "workload=edit_heavy", "workload.prompt_tokens=192")
    assert done.returncode == 0, done.stderr
    done = run_specexp(out, *common, "workload=long_essay")
    assert done.returncode == 0, done.stderr
    rows = [json.loads(x) for x in (out / "results.jsonl").read_text().splitlines()]
    return out, _measured(out), rows


def test_records_name_the_trained_models(greedy) -> None:
    _, measured, _ = greedy
    for (_, drafter), m in measured.items():
        c = m["conditions"]
        assert c["model"] == "qwen2.5-coder-1.5b" and c["weights"] == "trained"
        assert c["prompt_text"] == "real"
        assert c["draft_model"] == ("qwen2.5-coder-0.5b" if drafter == "draft_model" else None)


def test_acceptance_is_per_position_and_equals_the_servers_own_counts(greedy) -> None:
    _, measured, _ = greedy
    for (workload, drafter), m in measured.items():
        if drafter == "none":
            assert m["engine_counters"] is None
            continue
        metrics, counters = m["metrics"], m["engine_counters"]
        by_position = metrics["acceptance_by_position"]
        assert len(by_position) == 4, (workload, drafter)
        # the figures are the /metrics deltas, as recorded
        assert metrics["acceptance_rate"] == pytest.approx(
            counters["accepted"] / counters["draft_tokens"]
        )
        drafts = counters["drafts"]
        assert by_position == pytest.approx([a / drafts for a in counters["accepted_per_position"]])
        assert metrics["tokens_per_pass"] == pytest.approx(1 + counters["accepted"] / drafts)
        # ... and the server's per-response counts of the same window say the same
        timings = m["engine_timings"]
        assert sum(t.get("draft_n", 0) for t in timings) == counters["draft_tokens"]
        assert sum(t.get("draft_n_accepted", 0) for t in timings) == counters["accepted"]
        # a position accepts only where every earlier one did
        assert all(a >= b for a, b in zip(by_position, by_position[1:])), by_position


def test_copy_edits_accept_more_than_prose(greedy) -> None:
    _, measured, _ = greedy
    for drafter in ("draft_model", "ngram"):
        copy = measured[("edit_heavy", drafter)]["metrics"]["acceptance_rate"]
        prose = measured[("long_essay", drafter)]["metrics"]["acceptance_rate"]
        assert copy is not None and copy > (prose or 0.0), (drafter, copy, prose)


def test_every_speedup_is_reported_with_the_cost_of_a_pass(greedy) -> None:
    out, _, rows = greedy
    drafted = [r for r in rows if r["conditions"]["drafter"] != "none"]
    assert len(drafted) == 4
    for r in drafted:
        j, metrics = r["judgments"], r["metrics"]
        assert j["speedup_vs_baseline"] is not None and j["speedup_metric"] == "decode_tps"
        if metrics["tokens_per_pass"] is None:  # n-gram found nothing to copy in the prose
            continue
        cost = j["pass_cost_steps"]
        # the definition: a pass costs tokens_per_pass / speedup plain decode steps
        assert cost == pytest.approx(metrics["tokens_per_pass"] / j["speedup_vs_baseline"])
    findings = (out / "measurements.md").read_text().split("## Findings", 1)[1].split("\n## ", 1)[0]
    lines = [x for x in findings.splitlines() if "`decode_tps`" in x]
    assert len(lines) == 2, findings
    for line in lines:  # a slowdown is said as one, never as "fastest X, 0.9x"
        assert (
            "faster than no drafter" in line
            or ("slower" in line and "no drafter is fastest" in line)
            or "no drafter is faster" in line
        ), line
    # the copy-edit's best arm drafted: its cost of a pass is given
    assert "plain decode steps a pass" in next(x for x in lines if "edit_heavy" in x)


def test_greedy_outputs_are_identical_or_the_difference_is_explained(greedy) -> None:
    """The copy-edit's greedy text is the same with and without drafting. On prose, near-ties can
    flip when llama.cpp verifies a batch of k + 1 tokens: where a text differs, the findings say
    so and why (docs/engines.md 7.4)."""
    out, _, rows = greedy
    drafted = [r for r in rows if r["conditions"]["drafter"] != "none"]
    edits = [r for r in drafted if r["conditions"]["workload"].startswith("edit_heavy")]
    assert [r["judgments"]["output_identical"] for r in edits] == [True, True]
    findings = (out / "measurements.md").read_text().split("## Findings", 1)[1].split("\n## ", 1)[0]
    for r in drafted:
        assert r["judgments"]["output_identical"] is not None
        if r["judgments"]["output_identical"] is False:
            said = [
                x
                for x in findings.splitlines()
                if fmt.number(r["conditions"]["workload"]) in x and "differs" in x
            ]
            assert said and "verifies a draft as one batch of k + 1 tokens" in said[0], findings


def test_the_sampled_test_does_not_call_the_draft_model_lossy(
    llama_server: Path, weights: dict[str, Path], tmp_path_factory: pytest.TempPathFactory
) -> None:
    out = tmp_path_factory.mktemp("real-pair-sampled")
    done = run_specexp(
        out,
        *PAIR,
        "drafter=none,draft_model",
        "k=4",
        "workload=lossless_sampling",
        "workload.samples=60",
        "workload.concurrency=[4]",
    )
    assert done.returncode == 0, done.stderr
    rows = [json.loads(x) for x in (out / "results.jsonl").read_text().splitlines()]
    (drafted,) = [r for r in rows if r["conditions"]["drafter"] == "draft_model"]
    j = drafted["judgments"]
    assert j["sampled_verdict"] is not None and j["sampled_verdict"] != DIFFERS, j
    assert 0.0 < drafted["metrics"]["acceptance_rate"] < 1.0  # rejection sampling really ran
    assert drafted["conditions"]["weights"] == "trained"
