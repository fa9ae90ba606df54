"""specexp.fit.records on the committed H200 records of vLLM (benchmarks/data/h200-vllm/): what a
job hands the simulator, and the TTFT parts it reads from records written before the parts were
metrics."""

from __future__ import annotations

from dataclasses import replace
from pathlib import Path

import pytest

from specexp.fit import records as fr
from specexp.fit import replay

REPO = Path(__file__).resolve().parents[2]
H200 = REPO / "benchmarks/data/h200-vllm/sweeps"


@pytest.fixture(scope="module")
def jobs() -> dict[str, fr.Job]:
    return {j.record.run_id: j for j in fr.load_jobs(H200)}


def test_a_vllm_job_leaves_the_draft_rate_unknown(jobs: dict[str, fr.Job]) -> None:
    """vLLM's per-request metrics count no emitted tokens (llama-server's `predicted_n`), so how often
    a step drafted is not known: the simulator drafts every step, as n-gram did on these repeating
    outputs (4.85 tokens a pass), and is not told that the server never drafted."""
    ngram = jobs["086deb3dc112"]
    assert replay.draft_shape(ngram.record) == (None, None)
    assert not any("draft_rate" in o for o in fr.sim_overrides(ngram.record, "vllm"))


def test_a_server_given_larger_cuda_graphs_is_replayed_with_them() -> None:
    """The second 2026-12-04 sitting served the dense shape with vLLM's default graphs and with graphs
    up to 1,024 tokens (`--compilation-config.max_cudagraph_capture_size 1024` in extra_args): the
    simulator is told which, and nothing for the default."""
    graphs = fr.load_jobs(REPO / "benchmarks/data/h200-vllm-2026-12-04-2/sweeps")
    given = {replay.cuda_graph_max_tokens(j.record) for j in graphs}
    assert given == {None, 1024}
    for job in graphs:
        overrides = fr.sim_overrides(job.record, "vllm")
        wanted = replay.cuda_graph_max_tokens(job.record)
        assert ("runtime.cuda_graph_max_tokens=1024" in overrides) == (wanted == 1024)


def test_ttft_parts_come_from_the_engines_timings(jobs: dict[str, fr.Job]) -> None:
    prefill = jobs["bfd826147255"]  # prefill 1k-16k, one request at a time
    for m in prefill.record.measurements:
        queue, engine = fr.measured(m, "ttft_queue_s"), fr.measured(m, "ttft_engine_s")
        front, core = fr.measured(m, "ttft_frontend_s"), fr.measured(m, "ttft_core_s")
        assert queue is not None and queue < 0.001  # nothing waits for a lone request
        assert engine is not None and 0 < engine < m.metrics.ttft_s
        assert front == pytest.approx(m.metrics.ttft_s - queue - engine)
        assert core == pytest.approx(queue + engine)


def test_each_send_of_a_prefix_pairs_with_its_own_simulated_send() -> None:
    """SGLang's hybrid with MTP, its prefix sent three times (benchmarks/data/h200-sglang-2026-12-04b):
    the second send found nothing and the third nearly all, so a warm figure paired with the wrong
    send (or a mean of both) is no comparison. A record from before sends were recorded pairs with
    the first send of its cache state."""
    sglang = REPO / "benchmarks/data"
    sends = {j.record.run_id: j for j in fr.load_jobs(sglang / "h200-sglang-2026-12-04b/sweeps")}
    job = sends["946b260b0bb7"]
    sim = fr.simulate(job, "sglang")
    for m in job.record.measurements:
        c = m.conditions
        measured = m.metrics.cached_prompt_tokens
        paired = fr.pair(m, sim)["cached_prompt_tokens"]
        if c.send in (1, 2):  # cold, and a second send that finds no kept state
            assert measured == paired == 0 or c.prompt_tokens > 8192
        else:
            assert c.send == 3 and measured > 0.95 * c.prompt_tokens
            assert paired == pytest.approx(measured, rel=0.05)
    before = {j.record.run_id: j for j in fr.load_jobs(sglang / "h200-sglang-2026-12-04/sweeps")}
    old = before["3f5c5acd3ea7"]  # the dense shape's prefix, cold then warm, no send recorded
    old_sim = fr.simulate(old, "sglang")
    assert any(k[3] == 2 for k in old_sim)
    for m in old.record.measurements:
        assert m.conditions.send is None
        assert fr.pair(m, old_sim)["cached_prompt_tokens"] == pytest.approx(
            m.metrics.cached_prompt_tokens or 0, abs=64
        )


def test_a_job_is_replayed_at_the_prompt_lengths_its_server_counted(
    jobs: dict[str, fr.Job],
) -> None:
    """The first sitting's servers counted 20 tokens more than each target (the chat template's): the
    simulator is sent 532 where the job asked for 512, so its step runs past vLLM's 512-token CUDA
    graph as the server's did, and each of a prefill sweep's lengths likewise; a 32-token target whose
    instruction alone came to 130 tokens is sent as 130. A later sitting's prompts, fitted to the
    server's count, are replayed as they were asked, and a prefix shared between sends is left as it
    is."""
    burst = fr.sim_overrides(jobs["7415d7cd2ddb"].record, "vllm")  # concurrency, 512 asked
    assert "workload.prompt_tokens=532" in burst and "workload.prompt_tokens=512" not in burst
    sweep = fr.sim_overrides(jobs["bfd826147255"].record, "vllm")
    assert "workload.prompt_lengths=[1044,2068,4116,8212,16404]" in sweep
    # 32 asked, the instruction's 130 sent
    short = fr.sim_overrides(jobs["9e7377fe67ce"].record, "vllm")
    assert "workload.prompt_tokens=130" in short
    assert replay.served_prompt_lengths(jobs["e9a52967da54"].record) is None  # prefix_cache
    fitted = fr.load_jobs(REPO / "benchmarks/data/h200-vllm-2026-12-04/sweeps")
    assert all(replay.served_prompt_lengths(j.record) is None for j in fitted)


H100_SGLANG = REPO / "benchmarks/data/h100-sglang-2026-12-06/sweeps"


def h100_job(workload: str) -> fr.Job:
    (job,) = [
        j
        for j in fr.load_jobs(H100_SGLANG)
        if str(getattr(j.record.conditions, "workload", "")).startswith(workload)
        and getattr(j.record.conditions, "model", None) == "qwen3.8-27b"
    ]
    return job


def test_a_session_is_replayed_at_the_turn_lengths_its_server_counted() -> None:
    """SGLang's hybrid on an H100: the server counted 8,368, 8,672 and 8,976 tokens for turns asked as
    8,064 tokens and 64 more a turn (its byte-level tokenizer). Simulated at the asked lengths, the
    first turn fitted one 8,192-token prefill step where the server's took two; replayed, each turn
    is sent at the server's count."""
    job = h100_job("agentic_sessions")
    overrides = fr.sim_overrides(job.record, "sglang")
    assert {"workload.prompt_tokens=8080", "workload.session.turn_tokens=288"} <= set(overrides)
    simulated = sorted(prompt for _, prompt, _, _ in fr.simulate(job, "sglang"))
    assert simulated == [m.conditions.prompt_tokens for m in job.record.measurements]


def test_a_hybrid_window_that_prefilled_a_new_number_of_tokens_is_not_compared() -> None:
    """SGLang's hybrid compiles a kernel for each new number of prefill tokens, without a line in its
    log (docs/engines.md 2.5). Of its records written before specexp read the server's Triton cache:
    the session's warm turns (352 and 336 new tokens) and the first hit of each prefix length (116,
    then 128 new tokens) are left out; the hits after them, and the 128-token hit at 16,000 that
    followed one at 8,000, are compared."""
    session = replace(h100_job("agentic_sessions"), compiles_per_length=8192)
    warmed = {m.conditions.turn: session.warmed(m) for m in session.record.measurements}
    assert warmed == {1: True, 2: False, 3: False}
    assert all(h100_job("agentic_sessions").warmed(m) for m in session.record.measurements)
    prefix = replace(h100_job("prefix_cache"), compiles_per_length=8192)
    assert sorted(prefix.new_lengths) == [
        ("wf6de2d0fd7-p3700-c1-r0-warm-send3-0", 3),
        ("wf6de2d0fd7-p8000-c1-r0-warm-send3-0", 3),
    ]
    hits = [m for m in prefix.record.measurements if m.conditions.send == 3]
    assert [prefix.warmed(m) for m in hits] == [False, False, True]


def test_a_server_started_with_an_environment_of_its_own_is_replayed_with_the_engines_defaults() -> (
    None
):
    """An H100 sitting turned SGLang's overlap of consecutive prefill batches off for two of its servers
    (`runtime.env`, benchmarks/gpu/sglang_h200.py --plan hold). The simulator has no such environment: it
    is replayed as the engine's defaults, and the job still composes."""
    sitting = REPO / "benchmarks/data/h100-sglang-2026-12-06c/sweeps"
    changed = [
        j
        for j in fr.load_jobs(sitting)
        if any("runtime.env=" in o for o in j.record.provenance.overrides)
    ]
    assert len(changed) == 2
    for job in changed:
        overrides = fr.sim_overrides(job.record, "sglang")
        assert not any("runtime.env" in o for o in overrides)
        assert fr.simulate(job, "sglang")


def test_a_job_names_the_sitting_its_records_came_from(jobs: dict[str, fr.Job]) -> None:
    """Calibration tables name each row's sitting: the folder that holds the job's `sweeps/`, so that
    one cell measured in several sittings reads as several rows, not as one repeated."""
    assert {j.sitting for j in jobs.values()} == {"h200-vllm"}
    job = next(iter(jobs.values()))
    assert replace(job, folder=None).sitting is None
    assert replace(job, folder=Path("elsewhere/job")).sitting is None
    assert replace(job, folder=Path("sweeps/a/job")).sitting is None
