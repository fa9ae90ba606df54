"""SGLang runs a prefill batch alone (docs/engines.md 2.8): while a burst's later prompts prefill, the
sequences already decoding wait, so every request of a burst ends at about the same time; vLLM's steps
carry the decode tokens beside the prompt chunks, and its first requests end first."""

from __future__ import annotations

from collections.abc import Callable
from pathlib import Path
from typing import Any

from specexp.runtimes.sim.driver import SimRuntime
from specexp.sim.profile import load_profile
from specexp.sim.startup import start_engine
from specexp.workloads.driver import drive

Spec = Callable[..., Any]
BURST = (
    "hardware=h200",
    "model=qwen3-8b",
    "quantization=bf16",
    "runtime.engine=sglang",
    "workload=concurrency",
    "workload.concurrency=[32]",
    "workload.prompt_tokens=512",
    "workload.output_tokens=128",
    "workload.repeats=1",
)


def token_times(make_spec: Spec, tmp_path: Path, prefill_first: bool) -> list[list[float]]:
    """Each request of a burst of 32: when each of its tokens came, seconds after the burst was sent."""
    spec = make_spec(*BURST)
    profile = load_profile("sglang", "h200").model_copy(update={"prefill_first": prefill_first})
    runtime = SimRuntime(spec, tmp_path)
    _, runtime.engine = start_engine(spec, profile)
    (window,) = [w for w in drive(runtime, spec.workload, marker="pf") if w.point.concurrency == 32]
    sent = min(t.sent_at for t in window.traces)
    return [[e.t - sent for e in t.token_events] for t in window.traces]


def test_sglangs_profile_runs_a_prefill_batch_alone() -> None:
    assert load_profile("sglang").prefill_first
    assert not load_profile("vllm").prefill_first
    assert not load_profile("llamacpp").prefill_first


def tokens_before_the_last_first_token(requests: list[list[float]]) -> int:
    """How many tokens the burst's requests had received when its last request got its first."""
    last_first = max(times[0] for times in requests)
    return sum(t < last_first for times in requests for t in times)


def test_a_bursts_early_requests_decode_nothing_while_its_later_prompts_prefill(
    make_spec: Spec, tmp_path: Path
) -> None:
    alone = token_times(make_spec, tmp_path / "alone", prefill_first=True)
    mixed = token_times(make_spec, tmp_path / "mixed", prefill_first=False)
    firsts = sorted(times[0] for times in alone)
    early = sum(f < firsts[-1] for f in firsts)
    # the burst reaches its first tokens in waves of the prefill budget (measured on the H200: one at
    # 57 ms, 14 at 203, 17 at 414 ms) ...
    assert 0 < early < len(firsts)
    # ... and the early waves get nothing more until the last has prefilled: their first tokens only
    assert tokens_before_the_last_first_token(alone) == early
    # with decode tokens beside the prompt chunks (vLLM's steps) the early requests decode meanwhile
    assert tokens_before_the_last_first_token(mixed) > early
    # so the burst ends as one (measured: every request within 5 ms of the others)
    ends = [times[-1] for times in alone]
    assert max(ends) - min(ends) < (firsts[-1] - firsts[0]) / 10
