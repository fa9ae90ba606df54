"""A two-turn agentic session against a real llama-server: the second turn resends the first
turn's conversation, the reply included, and llama-server serves it from its prompt cache."""

from __future__ import annotations

from pathlib import Path

import pytest

from specexp.measure.request_log import read_requests
from tests.integration.conftest import results, run_specexp

pytestmark = pytest.mark.slow


def test_a_two_turn_session_hits_the_prompt_cache_and_drafts_in_both_turns(
    llama_server: Path, tmp_path: Path
) -> None:
    done = run_specexp(
        tmp_path,
        "runtime=llamacpp",
        "model=tiny",
        "quantization=f32",
        "hardware=cpu",
        "runtime.extra_args=[-t,2]",
        "workload=agentic_sessions",
        "workload.concurrency=[1]",
        "workload.prompt_tokens=300",
        "workload.output_tokens=16",
        "workload.session.turns=2",
        "workload.session.turn_tokens=120",
        "workload.session.think_time_s=0.2",
        "drafter=draft_model",
        "draft_model=tiny-draft-noisy",
        "k=3",
        "baseline=false",
    )
    assert done.returncode == 0, done.stderr
    (record,) = results(tmp_path)
    assert record["status"] == "ok", record["error"]
    by_turn = {m["conditions"]["turn"]: m for m in record["measurements"]}
    assert sorted(by_turn) == [1, 2]
    (job_dir,) = [p.parent for p in tmp_path.glob("*/result.json")]
    timed = [line for line in read_requests(job_dir) if not line["warmup"]]
    first, second = ([line for line in timed if line.get("turn") == t] for t in (1, 2))
    # the warm-up was a session of its own, both turns of it: the shapes the timed turns send
    warm = [line for line in read_requests(job_dir) if line["warmup"]]
    assert [line.get("turn") for line in warm] == [1, 2]
    assert len(first) == len(second) == 1
    # the server's own counts: turn 2 is turn 1's prompt, its reply and a new message
    assert second[0]["prompt_tokens"] > first[0]["prompt_tokens"] + first[0]["output_tokens"]
    # and all of turn 1's prompt comes back from the cache (llama-server's timings.cache_n)
    assert second[0]["cached_prompt_tokens"] >= first[0]["prompt_tokens"] - 1
    assert (
        first[0]["cached_prompt_tokens"] < first[0]["prompt_tokens"]
    )  # the cache was emptied before turn 1
    for turn in (1, 2):
        assert (
            0 < by_turn[turn]["metrics"]["acceptance_rate"] <= 1
        )  # the draft model drafted in each turn
